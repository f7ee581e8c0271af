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
