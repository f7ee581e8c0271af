/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* IP address literals as they enter from outside (options, environment, detection, pool records). */

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest literal accepted: INET6_ADDRSTRLEN - 1 (an IPv4-mapped IPv6 address in full). */
#define IN_ADDR_LITERAL_MAX 45

/* Parses s as exactly one IPv4 (dotted quad) or IPv6 literal: no surrounding or embedded whitespace, no
 * zone index, no prefix length. Returns the address family (AF_INET, AF_INET6) and, if ret_canonical is
 * not NULL, the canonical text (inet_ntop: lowercase, zeros compressed; caller frees). -EINVAL if s is
 * not one. */
int in_addr_literal_parse(const char *s, char **ret_canonical);
bool in_addr_literal_valid(const char *s);

/* Whether host names this machine for certain: "localhost" (any case), an IPv4 address in 127.0.0.0/8, or
 * the IPv6 loopback address (any spelling, with or without brackets). Anything else, "127.0.0.1.example.com"
 * included, is a name some resolver could send elsewhere. len: host's length (it need not end there). Plain
 * http is allowed only to such a host: what travels in the clear never leaves the machine. */
bool in_addr_host_is_loopback(const char *host, size_t len);

/* An address in binary, IPv4 or IPv6 (network byte order); its family travels beside it. */
typedef union InAddrUnion {
        struct in_addr in;
        struct in6_addr in6;
        uint8_t bytes[16];
} InAddrUnion;

/* The size of an address of family: 4 (AF_INET), 16 (AF_INET6), 0 for any other. */
size_t in_addr_family_size(int family);

/* Like in_addr_literal_parse(), into binary: returns the family and sets *ret; -EINVAL if s is not one. */
int in_addr_parse(const char *s, InAddrUnion *ret);

/* Parses a prefix "10.1.2.0/24", "fd00::/64": one address literal, '/', a length of 1 to 3 decimal digits
 * within the family's bits. Returns the family. -EINVAL if s is not one; -EDOM if a bit beyond the length
 * is set ("10.1.2.5/24" names no network: which one was meant is not ours to guess). */
int in_addr_prefix_parse(const char *s, InAddrUnion *ret_addr, unsigned char *ret_prefixlen);

/* Whether no bit of a beyond prefixlen is set. */
bool in_addr_prefix_is_network(int family, const InAddrUnion *a, unsigned prefixlen);

/* The canonical text of an address (inet_ntop) into buf; "?" for an unknown family. */
#define IN_ADDR_TEXT_MAX 46 /* INET6_ADDRSTRLEN */
const char *in_addr_to_text(int family, const InAddrUnion *a, char buf[static IN_ADDR_TEXT_MAX]);
