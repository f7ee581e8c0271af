/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Stopping and waiting. The daemon's loop thread asks a running pass to stop (SIGTERM); the pass, on its own
 * thread, notices between actions and in every wait. Every sleep in protokube goes through sleep_usec(), so
 * no wait outlives a stop request by more than STOP_POLL_INTERVAL. */

#include <stdbool.h>

#include "basic/time-util.h"

#define STOP_POLL_INTERVAL (50 * USEC_PER_MSEC)

/* Async-signal-safe and thread-safe. */
void stop_request(void);
bool stop_requested(void);
/* Tests, and `run` before its loop starts. */
void stop_reset(void);

/* Sleeps usec on CLOCK_MONOTONIC across EINTR. 0 after the full time, -ECANCELED as soon as a stop is
 * requested (checked at least every STOP_POLL_INTERVAL). */
int sleep_usec(usec_t usec);

/* The wait between two tries of a bounded poll ("until deadline, try every interval"): PK_ETIMEOUT once
 * deadline (now(CLOCK_MONOTONIC)) has passed, else sleeps interval, never past the deadline, so that one
 * last try falls on it. 0 to try again, -ECANCELED on a stop request. */
int deadline_sleep(usec_t deadline, usec_t interval);
