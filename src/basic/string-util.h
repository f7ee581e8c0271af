/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"

/* Pointer just past prefix in s, or NULL. */
char *startswith(const char *s, const char *prefix) _pure_;
/* startswith() with ASCII letters compared without regard to case (header names). */
char *startswith_no_case(const char *s, const char *prefix) _pure_;
char *endswith(const char *s, const char *suffix) _pure_;

/* Newly allocated concatenation of the NULL-terminated arguments; caller frees. NULL on OOM. */
char *strjoin_real(const char *x, ...) __attribute__((sentinel));
#define strjoin(...) strjoin_real(__VA_ARGS__, NULL)

/* Newly allocated formatted string; caller frees. NULL on OOM. */
char *strprintf(const char *format, ...) _printf_(1, 2);

/* Failing with detail, the one way protokube carries an error's message (docs/ARCHITECTURE.md, "Errors"):
 * returns r and, when ret_error is not NULL, replaces *ret_error with the formatted message (caller frees;
 * NULL when out of memory, the code still says what failed). */
int error_setf(char **ret_error, int r, const char *format, ...) _printf_(3, 4);

/* Appends to *p (reallocating); returns -ENOMEM on failure, *p unchanged. */
int strextend_printf(char **p, const char *format, ...) _printf_(2, 3);

/* Replaces *p with a copy of s (or NULL); frees the old value. */
int free_and_strdup(char **p, const char *s);

/* True if s has control characters (except none allowed); for checking strings from outside. */
bool string_has_cc(const char *s) _pure_;
/* A string from outside (an API's, another tool's) shown as one bounded line: control characters and DEL
 * become '?', and past max bytes it is cut and "..." follows. NULL in: "". NULL: out of memory. */
char *string_one_line(const char *s, size_t max);
/* The value of a hex digit (either case), or -1. */
int unhexchar(char c) _pure_;

/* Appends s with JSON string escaping (no quotes) to dst, which holds *len bytes of size; dst stays
 * NUL-terminated and *len grows. An escape is never split, and neither is a UTF-8 character: when s does not
 * fit, what fits is there and the result is false. */
bool json_escape_append(char *dst, size_t size, size_t *len, const char *s);

/* Levenshtein distance, bounded: for did-you-mean suggestions. */
size_t string_edit_distance(const char *a, const char *b) _pure_;

/* Overwrites and frees a buffer that held a secret (n bytes from p); NULL is fine. */
void erase_and_free(void *p, size_t n);
/* Overwrites the characters of s in place (s stays a valid, empty string); NULL is fine. */
void string_erase(char *s);
/* string_erase() then free(); returns NULL. */
char *string_free_erase(char *s);
static inline void string_free_erasep(char **p) {
        string_free_erase(*p);
}
#define _cleanup_erase_free_ _cleanup_(string_free_erasep)

static inline const char *strnull(const char *s) {
        return s ? s : "(null)";
}
