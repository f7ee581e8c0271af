/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/semver.h"

#include <errno.h>
#include <string.h>

/* One decimal component: 1 to 6 digits, no sign, no leading zero. */
static int parse_component(const char **p, unsigned *ret) {
        size_t n = strspn(*p, "0123456789");
        unsigned v = 0;

        if (n == 0 || n > 6 || (n > 1 && (*p)[0] == '0'))
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                v = v * 10 + (unsigned)((*p)[i] - '0');
        *p += n;
        *ret = v;
        return 0;
}

int semver_parse(const char *s, SemverFlags flags, Semver *ret) {
        static const char prerelease_chars[] =
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-";
        unsigned part[3];
        const char *p = s;

        if (!s)
                return -EINVAL;
        if ((flags & SEMVER_ALLOW_V) && *p == 'v')
                p++;
        for (int i = 0; i < 3; i++) {
                if (parse_component(&p, &part[i]) < 0)
                        return -EINVAL;
                if (i < 2 && *p++ != '.')
                        return -EINVAL;
        }
        if (*p == '-' && (flags & SEMVER_ALLOW_PRERELEASE)) {
                if (!p[1] || strspn(p + 1, prerelease_chars) != strlen(p + 1))
                        return -EINVAL;
        } else if (*p != 0)
                return -EINVAL;
        *ret = (Semver){ part[0], part[1], part[2] };
        return 0;
}

int semver_compare(const Semver *a, const Semver *b) {
        if (a->major != b->major)
                return a->major < b->major ? -1 : 1;
        if (a->minor != b->minor)
                return a->minor < b->minor ? -1 : 1;
        if (a->patch != b->patch)
                return a->patch < b->patch ? -1 : 1;
        return 0;
}
