/* SPDX-License-Identifier: Apache-2.0 */
#include "time-util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

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

const char *format_rfc3339(char buf[static RFC3339_MAX], usec_t t) {
        time_t secs = (time_t)(t / USEC_PER_SEC);
        struct tm tm;
        if (!gmtime_r(&secs, &tm) || strftime(buf, RFC3339_MAX, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
                return NULL;
        return buf;
}

/* n decimal digits at *p, moved past them. */
static bool take_digits(const char **p, unsigned n, int *ret) {
        int v = 0;
        for (unsigned i = 0; i < n; i++, (*p)++) {
                if (**p < '0' || **p > '9')
                        return false;
                v = v * 10 + (**p - '0');
        }
        *ret = v;
        return true;
}

static bool take_char(const char **p, const char *any) {
        if (**p == 0 || !strchr(any, **p))
                return false;
        (*p)++;
        return true;
}

static bool is_leap(int y) {
        return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

int parse_rfc3339(const char *s, usec_t *ret) {
        static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
        int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;
        const char *p = s;
        if (!s || !take_digits(&p, 4, &y) || !take_char(&p, "-") || !take_digits(&p, 2, &mo) ||
            !take_char(&p, "-") || !take_digits(&p, 2, &d) || !take_char(&p, "Tt") ||
            !take_digits(&p, 2, &h) || !take_char(&p, ":") || !take_digits(&p, 2, &mi) ||
            !take_char(&p, ":") || !take_digits(&p, 2, &sec))
                return -EINVAL;
        usec_t frac = 0, scale = USEC_PER_SEC;
        if (*p == '.') {
                if (p[1] < '0' || p[1] > '9')
                        return -EINVAL;
                for (p++; *p >= '0' && *p <= '9'; p++)
                        if (scale >= 10) {
                                scale /= 10;
                                frac += (usec_t)(*p - '0') * scale;
                        }
        }
        if (*p == 'Z' || *p == 'z')
                p++;
        else if (*p == '+' || *p == '-') {
                sign = *p++ == '+' ? 1 : -1;
                if (!take_digits(&p, 2, &oh) || !take_char(&p, ":") || !take_digits(&p, 2, &om) || oh > 23 ||
                    om > 59)
                        return -EINVAL;
        } else
                return -EINVAL;
        if (*p || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || sec > 59 ||
            d > mdays[mo - 1] + (mo == 2 && is_leap(y)))
                return -EINVAL;
        struct tm tm = { .tm_year = y - 1900,
                         .tm_mon = mo - 1,
                         .tm_mday = d,
                         .tm_hour = h,
                         .tm_min = mi,
                         .tm_sec = sec };
        long long t = (long long)timegm(&tm) - (long long)sign * (oh * 3600 + om * 60);
        if (t < 0)
                return -EINVAL;
        *ret = (usec_t)t * USEC_PER_SEC + frac;
        return 0;
}
