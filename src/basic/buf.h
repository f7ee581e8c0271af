/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A growable byte buffer with a hard cap (after curl's lib/dynbuf.c): every buffer that holds input from
 * outside has one, and going past it is an error (-PK_ETOOBIG), never an unbounded allocation. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

typedef struct Buf {
        uint8_t *data;
        size_t len;
        size_t alloc;
        size_t max;
        bool secret; /* overwrite every byte before the memory goes back to the allocator */
} Buf;

void buf_init(Buf *b, size_t max);
/* For contents that hold a secret (a session token, credentials): growing copies and erases instead of
 * realloc, and buf_free()/buf_reset() overwrite. buf_steal_str() hands the secret on: erase it when done. */
void buf_init_secret(Buf *b, size_t max);
void buf_free(Buf *b);
void buf_reset(Buf *b);
int buf_add(Buf *b, const void *data, size_t len);
int buf_add_str(Buf *b, const char *s);
int buf_printf(Buf *b, const char *format, ...) _printf_(2, 3);
/* Hands the NUL-terminated contents to the caller (caller frees); the buffer is empty afterwards. */
char *buf_steal_str(Buf *b);

/* RFC 3986 §2.3: every byte of s[0..len) but unreserved (A-Z a-z 0-9 - . _ ~) becomes %XX (uppercase hex);
 * with keep_slash, '/' stays. The one percent-encoder of protokube (SigV4's canonical form, Google's paths
 * and queries). */
int buf_add_uri_encoded(Buf *b, const char *s, size_t len, bool keep_slash);
/* The same, appended to the string *p (NULL: empty). */
int uri_encode_append(char **p, const char *s, size_t len, bool keep_slash);
/* Newly allocated encoding of s; NULL on OOM. */
char *uri_encode(const char *s, bool keep_slash);
/* The other way: %XX (two hex digits, not %00, so the result is a C string) decoded within s[0..n);
 * anything else is kept as it is (a proxy's user information, gRPC's grpc-message). Newly allocated; NULL on
 * OOM. */
char *uri_decode(const char *s, size_t n);

static inline void buf_freep(Buf *b) {
        buf_free(b);
}
#define _cleanup_buf_ _cleanup_(buf_freep)
