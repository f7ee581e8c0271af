/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <time.h>

typedef uint64_t usec_t;
#define USEC_PER_SEC  1000000ULL
#define USEC_PER_MSEC 1000ULL
#define NSEC_PER_USEC 1000ULL
#define USEC_INFINITY UINT64_MAX

/* Microseconds on clock id. Tests may replace the clock (TSIG time, SigV4 date, backoff). */
usec_t now(clockid_t clock);
typedef usec_t (*ClockFunc)(clockid_t clock, void *userdata);
void clock_override(ClockFunc func, void *userdata); /* NULL restores the real clock */

/* Go's time.Duration.String(): "1m0s", "10s", "1h0m0s", "500ms", "0s". Needs a buffer of GO_DURATION_MAX
 * bytes. */
#define GO_DURATION_MAX 64
const char *format_go_duration(char buf[static GO_DURATION_MAX], usec_t usec);

void usec_to_timespec(usec_t u, struct timespec *ts);

/* RFC 3339 timestamps as Kubernetes writes and reads them (Go's time.RFC3339): "2021-02-03T04:05:06Z".
 * Formatting is in UTC, to the second; a buffer of RFC3339_MAX bytes. Returns buf, or NULL for a time
 * gmtime_r() cannot take. */
#define RFC3339_MAX 32
const char *format_rfc3339(char buf[static RFC3339_MAX], usec_t t);
/* Parses "YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)" (T and Z also lowercase, as Go accepts) into
 * microseconds since the epoch (CLOCK_REALTIME). -EINVAL for anything else, a field out of range (month 13,
 * February 30) or a time before 1970. */
int parse_rfc3339(const char *s, usec_t *ret);
