/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What the running pass is doing now, for /healthz, /metrics and STATUS=: the pass (on its own thread)
 * names each step as it starts it; the loop's thread reads a snapshot at any time. */

#include <stdbool.h>

#include "basic/macro.h"
#include "basic/time-util.h"

#define PASS_STEP_MAX 160

typedef struct PassProgress {
        bool running;
        usec_t pass_started; /* CLOCK_MONOTONIC */
        usec_t step_started;
        char step[PASS_STEP_MAX]; /* "e2fsck vol-x", "DNS: publishing" */
} PassProgress;

void pass_progress_begin(void);
_printf_(1, 2) void pass_progress_step(const char *fmt, ...);
void pass_progress_end(void);
void pass_progress_snapshot(PassProgress *ret);
/* "e2fsck vol-x (12 s)" into buf, or "" when no pass runs. */
const char *pass_progress_describe(const PassProgress *p, usec_t now_monotonic, char *buf, size_t size);
