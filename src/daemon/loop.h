/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The reconcile loop of `protokube run`: one thread, one epoll. Passes run on a timer (the interval), at
 * once on events (SIGHUP after a reload; a change in a watched directory: a volume released in the pool, a
 * device appearing in /dev), and with exponential backoff plus jitter after errors. SIGTERM/SIGINT end it.
 */

#include "basic/time-util.h"
#include "daemon/report.h"

typedef struct DaemonCallbacks {
        /* Runs one pass and fills the report. */
        void (*pass)(void *userdata, PassReport *report);
        /* SIGHUP: reload the spec. On failure (< 0) the callback has logged why; the old spec stays. */
        int (*reload)(void *userdata);
} DaemonCallbacks;

typedef struct DaemonConfig {
        usec_t interval;    /* between quiet passes */
        usec_t backoff_min; /* first retry after an error (default 1s) */
        usec_t backoff_max; /* cap (default: interval) */
        usec_t debounce;    /* events within this window coalesce into one pass (default 5ms) */
        const char *listen; /* health/metrics; NULL or "none" disables */
        char *const *watch; /* directories whose changes wake the loop; may be NULL */
} DaemonConfig;

int daemon_run(const DaemonConfig *cfg, const DaemonCallbacks *cb, void *userdata);

/* For long passes: true once SIGTERM/SIGINT is pending, so a pass can stop between actions. */
bool daemon_stop_requested(void);

/* Delay before retry number `failures` (1-based): min * 2^(failures-1), capped at max, then jittered to
 * between 80% and 100% so masters that failed together don't retry together. random is in [0, 1). */
usec_t backoff_delay(usec_t min, usec_t max, unsigned failures, double random);
