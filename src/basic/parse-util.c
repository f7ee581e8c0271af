/* SPDX-License-Identifier: Apache-2.0 */
#include "parse-util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

int safe_atoi64(const char *s, int64_t *ret) {
        char *end;
        if (isempty(s) || isspace((unsigned char)*s))
                return -EINVAL;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (errno == ERANGE)
                return -ERANGE;
        if (errno != 0 || *end)
                return -EINVAL;
        *ret = v;
        return 0;
}

int safe_atou64(const char *s, uint64_t *ret) {
        char *end;
        if (isempty(s) || !isdigit((unsigned char)*s))
                return -EINVAL;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno == ERANGE)
                return -ERANGE;
        if (errno != 0 || *end)
                return -EINVAL;
        *ret = v;
        return 0;
}

int safe_atoi(const char *s, int *ret) {
        int64_t v;
        int r = safe_atoi64(s, &v);
        if (r < 0)
                return r;
        if (v < INT_MIN || v > INT_MAX)
                return -ERANGE;
        *ret = (int)v;
        return 0;
}

int safe_atou(const char *s, unsigned *ret) {
        uint64_t v;
        int r = safe_atou64(s, &v);
        if (r < 0)
                return r;
        if (v > UINT_MAX)
                return -ERANGE;
        *ret = (unsigned)v;
        return 0;
}

int safe_atou16(const char *s, uint16_t *ret) {
        uint64_t v;
        int r = safe_atou64(s, &v);
        if (r < 0)
                return r;
        if (v > UINT16_MAX)
                return -ERANGE;
        *ret = (uint16_t)v;
        return 0;
}

int parse_size(const char *s, uint64_t *ret) {
        char num[32];
        size_t n = strspn(s, "0123456789");
        uint64_t v, mul = 1;

        if (n == 0 || n >= sizeof(num))
                return -EINVAL;
        memcpy(num, s, n);
        num[n] = 0;
        if (safe_atou64(num, &v) < 0)
                return -EINVAL;
        const char *suffix = s + n;
        if (streq(suffix, "") || streq(suffix, "B"))
                mul = 1;
        else if (streq(suffix, "K") || streq(suffix, "Ki"))
                mul = 1024ULL;
        else if (streq(suffix, "M") || streq(suffix, "Mi"))
                mul = 1024ULL * 1024;
        else if (streq(suffix, "G") || streq(suffix, "Gi"))
                mul = 1024ULL * 1024 * 1024;
        else if (streq(suffix, "T") || streq(suffix, "Ti"))
                mul = 1024ULL * 1024 * 1024 * 1024;
        else
                return -EINVAL;
        if (v > UINT64_MAX / mul)
                return -ERANGE;
        *ret = v * mul;
        return 0;
}

int parse_duration_usec(const char *s, uint64_t *ret) {
        static const struct {
                const char *unit;
                uint64_t usec;
        } units[] = {
                /* longest first so "ms" wins over "m" */
                { "ms", 1000ULL },    { "us", 1ULL },      { "h", 3600ULL * 1000000ULL },
                { "m", 60000000ULL }, { "s", 1000000ULL },
        };
        uint64_t total = 0;

        if (isempty(s))
                return -EINVAL;
        if (streq(s, "0")) {
                *ret = 0;
                return 0;
        }
        while (*s) {
                size_t n = strspn(s, "0123456789");
                char num[24];
                uint64_t v;
                size_t i;

                if (n == 0 || n >= sizeof(num))
                        return -EINVAL;
                memcpy(num, s, n);
                num[n] = 0;
                if (safe_atou64(num, &v) < 0)
                        return -EINVAL;
                s += n;
                for (i = 0; i < ELEMENTSOF(units); i++)
                        if (strneq(s, units[i].unit, strlen(units[i].unit)))
                                break;
                if (i == ELEMENTSOF(units))
                        return -EINVAL;
                if (v > (UINT64_MAX - total) / units[i].usec)
                        return -ERANGE;
                total += v * units[i].usec;
                s += strlen(units[i].unit);
        }
        *ret = total;
        return 0;
}
