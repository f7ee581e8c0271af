/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Checked number parsing (instead of atoi and friends, which STYLE.md bans). All return 0 or -EINVAL /
 * -ERANGE and write *ret only on success; the whole string must be consumed. */

#include <stdint.h>

int safe_atoi64(const char *s, int64_t *ret);
int safe_atou64(const char *s, uint64_t *ret);
int safe_atoi(const char *s, int *ret);
int safe_atou(const char *s, unsigned *ret);
int safe_atou16(const char *s, uint16_t *ret);
/* "512M", "1G", "4096", "64K": binary multiples. */
int parse_size(const char *s, uint64_t *ret);
/* Go-style duration: "10s", "1m30s", "250ms", "2h"; result in microseconds. */
int parse_duration_usec(const char *s, uint64_t *ret);
