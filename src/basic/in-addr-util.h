/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* IP address literals as they enter from outside (options, environment, detection, pool records). */

#include <stdbool.h>
#include <stddef.h>

/* Longest literal accepted: INET6_ADDRSTRLEN - 1 (an IPv4-mapped IPv6 address in full). */
#define IN_ADDR_LITERAL_MAX 45

/* Parses s as exactly one IPv4 (dotted quad) or IPv6 literal: no surrounding or embedded whitespace, no
 * zone index, no prefix length. Returns the address family (AF_INET, AF_INET6) and, if ret_canonical is
 * not NULL, the canonical text (inet_ntop: lowercase, zeros compressed; caller frees). -EINVAL if s is
 * not one. */
int in_addr_literal_parse(const char *s, char **ret_canonical);
bool in_addr_literal_valid(const char *s);

/* Whether s is "ADDRESS/LENGTH": an address literal as above and a prefix length in decimal, at most 32
 * (IPv4) or 128 (IPv6), with no bit set past it (a network, not a host in one: "10.1.2.0/24", not
 * "10.1.2.3/24"). Returns the address family, else -EINVAL. */
int in_addr_prefix_parse(const char *s);

/* Whether host names this machine for certain: "localhost" (any case), an IPv4 address in 127.0.0.0/8, or
 * the IPv6 loopback address (any spelling, with or without brackets). Anything else, "127.0.0.1.example.com"
 * included, is a name some resolver could send elsewhere. len: host's length (it need not end there). Plain
 * http is allowed only to such a host: what travels in the clear never leaves the machine. */
bool in_addr_host_is_loopback(const char *host, size_t len);
