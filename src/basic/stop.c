/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/stop.h"

#include <errno.h>
#include <stdatomic.h>

#include "basic/errors.h"
#include "basic/macro.h"

static atomic_bool stop_flag;

void stop_request(void) {
        atomic_store(&stop_flag, true);
}

bool stop_requested(void) {
        return atomic_load(&stop_flag);
}

void stop_reset(void) {
        atomic_store(&stop_flag, false);
}

/* The real clock, not now(): a test's frozen clock must not turn a sleep into a spin. */
static usec_t monotonic_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (usec_t)ts.tv_sec * USEC_PER_SEC + (usec_t)ts.tv_nsec / NSEC_PER_USEC;
}

int deadline_sleep(usec_t deadline, usec_t interval) {
        usec_t t = now(CLOCK_MONOTONIC);
        if (t >= deadline)
                return PK_ETIMEOUT;
        return sleep_usec(MIN(interval, deadline - t));
}

int sleep_usec(usec_t usec) {
        usec_t start = monotonic_usec();
        for (;;) {
                if (stop_requested())
                        return -ECANCELED;
                usec_t elapsed = monotonic_usec() - start;
                if (elapsed >= usec)
                        return 0;
                struct timespec ts;
                usec_to_timespec(MIN(usec - elapsed, STOP_POLL_INTERVAL), &ts);
                while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
                        ;
        }
}
