/* SPDX-License-Identifier: Apache-2.0 */
#include "daemon/progress.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "basic/trace.h"

static pthread_mutex_t progress_lock = PTHREAD_MUTEX_INITIALIZER;
static PassProgress progress;

void pass_progress_begin(void) {
        usec_t t = now(CLOCK_MONOTONIC);
        pthread_mutex_lock(&progress_lock);
        progress = (PassProgress){ .running = true, .pass_started = t, .step_started = t };
        snprintf(progress.step, sizeof(progress.step), "starting the pass");
        pthread_mutex_unlock(&progress_lock);
}

void pass_progress_step(const char *fmt, ...) {
        char step[PASS_STEP_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(step, sizeof(step), fmt, ap);
        va_end(ap);
        usec_t t = now(CLOCK_MONOTONIC);
        trace_mark("%s", step);
        pthread_mutex_lock(&progress_lock);
        memcpy(progress.step, step, sizeof(step));
        progress.step_started = t;
        pthread_mutex_unlock(&progress_lock);
}

void pass_progress_end(void) {
        pthread_mutex_lock(&progress_lock);
        progress.running = false;
        progress.step[0] = 0;
        pthread_mutex_unlock(&progress_lock);
}

void pass_progress_snapshot(PassProgress *ret) {
        pthread_mutex_lock(&progress_lock);
        *ret = progress;
        pthread_mutex_unlock(&progress_lock);
}

const char *pass_progress_describe(const PassProgress *p, usec_t now_monotonic, char *buf, size_t size) {
        if (!p->running) {
                buf[0] = 0;
                return buf;
        }
        usec_t d = now_monotonic > p->step_started ? now_monotonic - p->step_started : 0;
        snprintf(buf, size, "%s (%llu s)", p->step, (unsigned long long)(d / USEC_PER_SEC));
        return buf;
}
