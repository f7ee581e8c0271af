/* SPDX-License-Identifier: Apache-2.0 */
#include "string-util.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <strings.h>

char *startswith(const char *s, const char *prefix) {
        size_t l = strlen(prefix);
        return strncmp(s, prefix, l) == 0 ? (char *)s + l : NULL;
}

char *startswith_no_case(const char *s, const char *prefix) {
        size_t l = strlen(prefix);
        return strncasecmp(s, prefix, l) == 0 ? (char *)s + l : NULL;
}

char *endswith(const char *s, const char *suffix) {
        size_t sl = strlen(s), xl = strlen(suffix);
        if (xl > sl)
                return NULL;
        return memcmp(s + sl - xl, suffix, xl) == 0 ? (char *)s + sl - xl : NULL;
}

char *strjoin_real(const char *x, ...) {
        va_list ap;
        size_t len = 0;
        char *r, *p;

        va_start(ap, x);
        for (const char *t = x; t; t = va_arg(ap, const char *))
                len += strlen(t);
        va_end(ap);
        r = malloc(len + 1);
        if (!r)
                return NULL;
        p = r;
        va_start(ap, x);
        for (const char *t = x; t; t = va_arg(ap, const char *)) {
                size_t l = strlen(t);
                memcpy(p, t, l);
                p += l;
        }
        va_end(ap);
        *p = 0;
        return r;
}

char *strprintf(const char *format, ...) {
        va_list ap;
        char *r;
        int n;

        va_start(ap, format);
        n = vasprintf(&r, format, ap);
        va_end(ap);
        return n < 0 ? NULL : r;
}

int error_setf(char **ret_error, int r, const char *format, ...) {
        va_list ap;
        char *m;

        if (!ret_error)
                return r;
        va_start(ap, format);
        if (vasprintf(&m, format, ap) < 0)
                m = NULL;
        va_end(ap);
        free(*ret_error);
        *ret_error = m;
        return r;
}

int strextend_printf(char **p, const char *format, ...) {
        va_list ap;
        char *add, *n;
        size_t old;

        va_start(ap, format);
        int k = vasprintf(&add, format, ap);
        va_end(ap);
        if (k < 0)
                return -ENOMEM;
        old = *p ? strlen(*p) : 0;
        n = realloc(*p, old + (size_t)k + 1);
        if (!n) {
                free(add);
                return -ENOMEM;
        }
        memcpy(n + old, add, (size_t)k + 1);
        free(add);
        *p = n;
        return 0;
}

int free_and_strdup(char **p, const char *s) {
        char *t = NULL;
        if (s) {
                t = strdup(s);
                if (!t)
                        return -ENOMEM;
        }
        free(*p);
        *p = t;
        return 0;
}

bool string_has_cc(const char *s) {
        for (; *s; s++)
                if ((unsigned char)*s < ' ' || *s == 0x7f)
                        return true;
        return false;
}

char *string_one_line(const char *s, size_t max) {
        size_t n = strnlen(strempty(s), max + 1);
        char *c = strndup(strempty(s), MIN(n, max));
        if (!c)
                return NULL;
        for (char *p = c; *p; p++)
                if ((unsigned char)*p < 0x20 || *p == 0x7f)
                        *p = '?';
        if (n <= max)
                return c;
        char *t = strjoin(c, "...");
        free(c);
        return t;
}

/* The escaped form of c: JSON needs quotes, backslashes and control characters escaped. */
static size_t json_escape_char(unsigned char c, char out[static 7]) {
        if (c == '"' || c == '\\') {
                out[0] = '\\';
                out[1] = (char)c;
                return 2;
        }
        if (c == '\n' || c == '\t') {
                out[0] = '\\';
                out[1] = c == '\n' ? 'n' : 't';
                return 2;
        }
        if (c < 0x20 || c == 0x7f)
                return (size_t)snprintf(out, 7, "\\u%04x", c);
        out[0] = (char)c;
        return 1;
}

bool json_escape_append(char *dst, size_t size, size_t *len, const char *s) {
        size_t start = *len;
        for (; *s; s++) {
                char piece[7];
                size_t n = json_escape_char((unsigned char)*s, piece);
                if (*len + n >= size) {
                        /* Stopping at a continuation byte would cut a UTF-8 character: back off the
                         * part of it already written (its continuation bytes, then its lead). */
                        if (((unsigned char)*s & 0xc0) == 0x80) {
                                while (*len > start && ((unsigned char)dst[*len - 1] & 0xc0) == 0x80)
                                        (*len)--;
                                if (*len > start)
                                        (*len)--;
                        }
                        dst[*len] = 0;
                        return false;
                }
                memcpy(dst + *len, piece, n);
                *len += n;
        }
        dst[*len] = 0;
        return true;
}

size_t string_edit_distance(const char *a, const char *b) {
        size_t la = strlen(a), lb = strlen(b);
        size_t row[65];

        if (la > 64 || lb > 64)
                return SIZE_MAX;
        for (size_t j = 0; j <= lb; j++)
                row[j] = j;
        for (size_t i = 1; i <= la; i++) {
                size_t diag = row[0];
                row[0] = i;
                for (size_t j = 1; j <= lb; j++) {
                        size_t up = row[j];
                        size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
                        row[j] = MIN(MIN(row[j] + 1, row[j - 1] + 1), diag + cost);
                        diag = up;
                }
        }
        return row[lb];
}

void erase_and_free(void *p, size_t n) {
        if (!p)
                return;
        explicit_bzero(p, n);
        free(p);
}

void string_erase(char *s) {
        if (s)
                explicit_bzero(s, strlen(s));
}

char *string_free_erase(char *s) {
        string_erase(s);
        free(s);
        return NULL;
}

int unhexchar(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}
