/* SPDX-License-Identifier: Apache-2.0 */
#include "time-util.h"

#include <stdio.h>

static ClockFunc clock_func;
static void *clock_userdata;

usec_t now(clockid_t clock) {
        struct timespec ts;
        if (clock_func)
                return clock_func(clock, clock_userdata);
        clock_gettime(clock, &ts);
        return (usec_t)ts.tv_sec * USEC_PER_SEC + (usec_t)ts.tv_nsec / NSEC_PER_USEC;
}

void clock_override(ClockFunc func, void *userdata) {
        clock_func = func;
        clock_userdata = userdata;
}

const char *format_go_duration(char buf[static GO_DURATION_MAX], usec_t usec) {
        if (usec == 0) {
                snprintf(buf, GO_DURATION_MAX, "0s");
                return buf;
        }
        if (usec < USEC_PER_SEC) {
                /* Go prints sub-second durations in the largest unit that keeps an integer part. */
                if (usec % USEC_PER_MSEC == 0)
                        snprintf(buf, GO_DURATION_MAX, "%llums", (unsigned long long)(usec / USEC_PER_MSEC));
                else if (usec >= USEC_PER_MSEC)
                        snprintf(buf, GO_DURATION_MAX, "%llu.%03llums", (unsigned long long)(usec / 1000),
                                 (unsigned long long)(usec % 1000));
                else
                        snprintf(buf, GO_DURATION_MAX, "%lluµs", (unsigned long long)usec);
                return buf;
        }
        unsigned long long h = usec / (3600 * USEC_PER_SEC);
        unsigned long long m = usec / (60 * USEC_PER_SEC) % 60;
        unsigned long long s = usec / USEC_PER_SEC % 60;
        unsigned long long frac = usec % USEC_PER_SEC;
        char secs[24];
        if (frac == 0)
                snprintf(secs, sizeof(secs), "%llus", s);
        else {
                /* Go trims trailing zeros of the fraction. */
                char f[8];
                snprintf(f, sizeof(f), "%06llu", frac);
                for (int i = 5; i > 0 && f[i] == '0'; i--)
                        f[i] = 0;
                snprintf(secs, sizeof(secs), "%llu.%ss", s, f);
        }
        if (h > 0)
                snprintf(buf, GO_DURATION_MAX, "%lluh%llum%s", h, m, secs);
        else if (m > 0)
                snprintf(buf, GO_DURATION_MAX, "%llum%s", m, secs);
        else
                snprintf(buf, GO_DURATION_MAX, "%s", secs);
        return buf;
}

void usec_to_timespec(usec_t u, struct timespec *ts) {
        ts->tv_sec = (time_t)(u / USEC_PER_SEC);
        ts->tv_nsec = (long)(u % USEC_PER_SEC * NSEC_PER_USEC);
}
