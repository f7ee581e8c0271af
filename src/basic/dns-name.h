/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* DNS names as text, in one place (libc only): the host-name rules of RFC 1123 §2.1 that the spec and kops'
 * names follow, the wire form of RFC 1035 §3.1, and comparisons that ignore case and the final dot
 * (RFC 4343). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DNS_WIRE_NAME_MAX 255 /* RFC 1035 §2.3.4, in wire form */
#define DNS_LABEL_MAX     63
#define DNS_HOSTNAME_MAX  253  /* as text, without the final dot */
#define DNS_NAME_TEXT_MAX 1024 /* worst case: 255 octets each escaped as \DDD, plus dots */

/* An RFC 1123 label in lowercase: 1 to 63 of [a-z0-9-], not starting or ending with '-'. n is its length
 * (s need not be terminated there). */
bool dns_label_is_valid(const char *s, size_t n);
/* An RFC 1123 host name in lowercase: such labels separated by dots, at most 253 characters, no final dot.
 */
bool dns_hostname_is_valid(const char *s);

/* "<label>.<suffix>". The label must be valid (above) and the result a valid host name, else -EINVAL.
 * Caller frees. */
int dns_name_join(const char *label, const char *suffix, char **ret);

/* Text name ("api.k8s.test." or without the final dot; "\." and "\DDD" escapes) to wire form. Empty labels
 * (other than the root) and labels over 63 octets are PK_EMALFORMED. */
int dns_name_to_wire(const char *name, uint8_t ret[static DNS_WIRE_NAME_MAX], size_t *ret_len);
/* Canonical text form: lowercase ASCII, with the final dot. Caller frees. */
int dns_name_normalize(const char *name, char **ret);
/* Case-insensitive comparison of two text names, ignoring a final dot; invalid names are never equal. */
bool dns_name_equal(const char *a, const char *b);
/* True if name is at or below zone (case-insensitive, final dots ignored); the root holds every name. */
bool dns_name_in_zone(const char *name, const char *zone);
/* The text form (RFC 1035 §5.1 escapes, final dot) of a well-formed wire name, lowercased if lower. */
void dns_name_wire_to_text(const uint8_t *wire, bool lower, char out[static DNS_NAME_TEXT_MAX]);

static inline uint8_t dns_ascii_lower(uint8_t c) {
        return c >= 'A' && c <= 'Z' ? (uint8_t)(c - 'A' + 'a') : c;
}
