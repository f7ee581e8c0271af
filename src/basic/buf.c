/* SPDX-License-Identifier: Apache-2.0 */
#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "string-util.h"

void buf_init(Buf *b, size_t max) {
        *b = (Buf){ .max = max };
}

void buf_init_secret(Buf *b, size_t max) {
        *b = (Buf){ .max = max, .secret = true };
}

void buf_free(Buf *b) {
        if (b->secret && b->data)
                explicit_bzero(b->data, b->alloc);
        free(b->data);
        b->data = NULL;
        b->len = b->alloc = 0;
}

void buf_reset(Buf *b) {
        if (b->secret && b->data)
                explicit_bzero(b->data, b->len);
        b->len = 0;
        if (b->data)
                b->data[0] = 0;
}

/* realloc may move the data and leave the old copy in freed memory: a secret buffer moves by hand. */
static uint8_t *buf_grow(Buf *b, size_t n) {
        if (!b->secret)
                return realloc(b->data, n);
        uint8_t *d = malloc(n);
        if (!d)
                return NULL;
        if (b->data) {
                memcpy(d, b->data, b->alloc);
                explicit_bzero(b->data, b->alloc);
                free(b->data);
        }
        return d;
}

static int buf_reserve(Buf *b, size_t add) {
        if (add > b->max || b->len > b->max - add)
                return PK_ETOOBIG;
        size_t need = b->len + add + 1; /* room for a NUL */
        if (need <= b->alloc)
                return 0;
        size_t n = b->alloc ? b->alloc : 256;
        while (n < need)
                n *= 2;
        uint8_t *d = buf_grow(b, n);
        if (!d)
                return -ENOMEM;
        b->data = d;
        b->alloc = n;
        return 0;
}

int buf_add(Buf *b, const void *data, size_t len) {
        int r = buf_reserve(b, len);
        if (r < 0)
                return r;
        if (len > 0)
                memcpy(b->data + b->len, data, len);
        b->len += len;
        b->data[b->len] = 0;
        return 0;
}

int buf_add_str(Buf *b, const char *s) {
        return buf_add(b, s, strlen(s));
}

int buf_printf(Buf *b, const char *format, ...) {
        va_list ap;
        char *s;
        int n;

        va_start(ap, format);
        n = vasprintf(&s, format, ap);
        va_end(ap);
        if (n < 0)
                return -ENOMEM;
        int r = buf_add(b, s, (size_t)n);
        if (b->secret)
                explicit_bzero(s, (size_t)n);
        free(s);
        return r;
}

char *buf_steal_str(Buf *b) {
        if (!b->data && buf_reserve(b, 0) < 0)
                return NULL;
        char *s = (char *)b->data;
        s[b->len] = 0;
        *b = (Buf){ .max = b->max, .secret = b->secret };
        return s;
}

static bool is_unreserved(unsigned char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
               c == '.' || c == '_' || c == '~';
}

int buf_add_uri_encoded(Buf *b, const char *s, size_t len, bool keep_slash) {
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)s[i];
                char e[3] = { '%', "0123456789ABCDEF"[c >> 4], "0123456789ABCDEF"[c & 15] };
                int r =
                    is_unreserved(c) || (keep_slash && c == '/') ? buf_add(b, s + i, 1) : buf_add(b, e, 3);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Encoded text is at most three times the input: the cap only stops a runaway. */
#define URI_TEXT_MAX (16U * 1024 * 1024)

int uri_encode_append(char **p, const char *s, size_t len, bool keep_slash) {
        _cleanup_buf_ Buf b;
        buf_init(&b, URI_TEXT_MAX);
        if (*p && buf_add_str(&b, *p) < 0)
                return -ENOMEM;
        int r = buf_add_uri_encoded(&b, s, len, keep_slash);
        if (r < 0)
                return r;
        char *n = buf_steal_str(&b);
        if (!n)
                return -ENOMEM;
        free(*p);
        *p = n;
        return 0;
}

char *uri_encode(const char *s, bool keep_slash) {
        char *p = NULL;
        if (uri_encode_append(&p, s, strlen(s), keep_slash) < 0)
                return NULL;
        return p ?: strdup("");
}

char *uri_decode(const char *s, size_t n) {
        char *out = malloc(n + 1), *o = out;
        if (!out)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                int hi = s[i] == '%' && i + 2 < n ? unhexchar(s[i + 1]) : -1,
                    lo = hi >= 0 ? unhexchar(s[i + 2]) : -1;
                if (lo >= 0 && (hi | lo) != 0) {
                        *o++ = (char)(hi * 16 + lo);
                        i += 2;
                } else
                        *o++ = s[i];
        }
        *o = 0;
        return out;
}
