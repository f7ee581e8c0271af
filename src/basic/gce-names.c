/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/gce-names.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"

#define LOWER_DIGITS "abcdefghijklmnopqrstuvwxyz0123456789"

int gce_label_encode(const char *s, char **ret) {
        static const char hex[] = "0123456789abcdef";
        size_t n = strlen(s);
        char *d = malloc(n * 3 + 1), *p = d;
        if (!d)
                return -ENOMEM;
        for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
                if ((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9')) {
                        *p++ = (char)*c;
                        continue;
                }
                *p++ = '-';
                *p++ = hex[*c >> 4];
                *p++ = hex[*c & 15];
        }
        *p = 0;
        *ret = d;
        return 0;
}

int gce_label_decode(const char *s, char **ret) {
        _cleanup_free_ char *d = malloc(strlen(s) + 1);
        char *p = d;
        if (!d)
                return -ENOMEM;
        for (const char *c = s; *c; c++) {
                if (*c == '+')
                        return PK_EMALFORMED;
                if (*c != '-') {
                        *p++ = *c;
                        continue;
                }
                int hi = unhexchar(c[1]), lo = hi < 0 ? -1 : unhexchar(c[2]);
                if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
                        return PK_EMALFORMED;
                *p++ = (char)(hi << 4 | lo);
                c += 2;
        }
        *p = 0;
        *ret = TAKE_PTR(d);
        return 0;
}

int gce_safe_cluster_name(const char *cluster, char **ret) {
        char *d = strdup(cluster);
        if (!d)
                return -ENOMEM;
        for (char *p = d; *p; p++)
                if (*p == '.')
                        *p = '-';
        *ret = d;
        return 0;
}

bool gce_name_valid(const char *s) {
        size_t n = s ? strlen(s) : 0;
        return n >= 1 && n <= 63 && s[0] >= 'a' && s[0] <= 'z' && s[n - 1] != '-' &&
               strspn(s, LOWER_DIGITS "-") == n;
}

bool gce_project_valid(const char *s) {
        size_t n = s ? strlen(s) : 0;
        return n >= 6 && n <= 30 && gce_name_valid(s);
}

bool gce_zone_valid(const char *s) {
        const char *dash = s ? strrchr(s, '-') : NULL;
        return gce_name_valid(s) && dash && dash != s && dash[1] && !dash[2];
}

bool gce_label_key_valid(const char *s) {
        size_t n = s ? strlen(s) : 0;
        return n >= 1 && n <= GCE_LABEL_MAX && s[0] >= 'a' && s[0] <= 'z' &&
               strspn(s, LOWER_DIGITS "_-") == n;
}

bool gce_label_value_valid(const char *s) {
        size_t n = s ? strlen(s) : 0;
        return s && n <= GCE_LABEL_MAX && strspn(s, LOWER_DIGITS "_-") == n;
}

static bool alnum(char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool gce_bucket_name_valid(const char *b, size_t len) {
        char name[256];
        struct in_addr a;
        size_t max = memchr(b, '.', len) ? 222 : 63;
        if (len < 3 || len > max || !alnum(b[0]) || !alnum(b[len - 1]))
                return false;
        for (size_t i = 0, part = 0; i < len; i++) {
                if (!alnum(b[i]) && !strchr("_.-", b[i]))
                        return false;
                part = b[i] == '.' ? 0 : part + 1;
                if (part > 63)
                        return false;
        }
        memcpy(name, b, len);
        name[len] = 0;
        return !startswith(name, "goog") && inet_pton(AF_INET, name, &a) != 1;
}
