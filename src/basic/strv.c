/* SPDX-License-Identifier: Apache-2.0 */
#include "strv.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "string-util.h"

char **strv_free(char **l) {
        STRV_FOREACH (s, l)
                free(*s);
        free(l);
        return NULL;
}

void strv_erase(char **l) {
        STRV_FOREACH (s, l)
                string_erase(*s);
}

char **strv_free_erase(char **l) {
        strv_erase(l);
        return strv_free(l);
}

size_t strv_length(char *const *l) {
        size_t n = 0;
        while (l && l[n])
                n++;
        return n;
}

bool strv_contains(char *const *l, const char *s) {
        for (size_t i = 0; l && l[i]; i++)
                if (strcmp(l[i], s) == 0)
                        return true;
        return false;
}

int strv_push(char ***l, char *s) {
        size_t n = strv_length(*l);
        char **c = realloc(*l, sizeof(char *) * (n + 2));
        if (!c)
                return -ENOMEM;
        c[n] = s;
        c[n + 1] = NULL;
        *l = c;
        return 0;
}

int strv_extend(char ***l, const char *s) {
        char *d = strdup(s);
        if (!d)
                return -ENOMEM;
        int r = strv_push(l, d);
        if (r < 0)
                free(d);
        return r;
}

char **strv_copy(char *const *l) {
        size_t n = strv_length(l);
        char **c = calloc(n + 1, sizeof(char *));
        if (!c)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                c[i] = strdup(l[i]);
                if (!c[i])
                        return strv_free(c);
        }
        return c;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *)a, *(char *const *)b);
}

void strv_sort(char **l) {
        size_t n = strv_length(l);
        if (n > 1)
                qsort_safe(l, n, sizeof(char *), cmp_str);
}

char *strv_join(char *const *l, const char *sep) {
        size_t n = 0, sl = strlen(sep);
        for (size_t i = 0; l && l[i]; i++)
                n += strlen(l[i]) + (i > 0 ? sl : 0);
        char *r = malloc(n + 1), *p = r;
        if (!r)
                return NULL;
        for (size_t i = 0; l && l[i]; i++) {
                if (i > 0) {
                        memcpy(p, sep, sl);
                        p += sl;
                }
                size_t k = strlen(l[i]);
                memcpy(p, l[i], k);
                p += k;
        }
        *p = 0;
        return r;
}

int strv_split(const char *s, const char *seps, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        const char *p = s;

        while (*p) {
                size_t k = strcspn(p, seps);
                if (k > 0) {
                        char *w = strndup(p, k);
                        if (!w || strv_push(&l, w) < 0) {
                                free(w);
                                return -ENOMEM;
                        }
                }
                p += k;
                if (*p)
                        p++;
        }
        if (!l) {
                l = calloc(1, sizeof(char *));
                if (!l)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

bool strv_equal(char *const *a, char *const *b) {
        size_t i = 0;
        for (; a && a[i] && b && b[i]; i++)
                if (strcmp(a[i], b[i]) != 0)
                        return false;
        return !(a && a[i]) && !(b && b[i]);
}

char **strv_new_real(const char *x, ...) {
        va_list ap;
        char **l = calloc(1, sizeof(char *));
        va_start(ap, x);
        for (const char *t = x; l && t; t = va_arg(ap, const char *))
                if (strv_extend(&l, t) < 0)
                        l = strv_free(l);
        va_end(ap);
        return l;
}

int strv_new_or_enomem(const char *s, char ***ret) {
        *ret = strv_new(s);
        return *ret ? 0 : -ENOMEM;
}
