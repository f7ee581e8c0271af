/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* NULL-terminated string vectors (char **), after systemd's strv.h. */

#include <stdbool.h>
#include <stddef.h>

#include "macro.h"

char **strv_free(char **l);
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, strv_free)
#define _cleanup_strv_free_ _cleanup_(strv_freep)
/* For vectors that held secrets (request headers with a signature or a token): strv_erase() overwrites
 * every string in place, strv_free_erase() does that and frees. */
void strv_erase(char **l);
char **strv_free_erase(char **l);
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, strv_free_erase)
#define _cleanup_strv_free_erase_ _cleanup_(strv_free_erasep)

size_t strv_length(char *const *l) _pure_;
bool strv_contains(char *const *l, const char *s) _pure_;
/* Appends a copy of s. */
int strv_extend(char ***l, const char *s);
/* Appends s itself (takes ownership on success only). */
int strv_push(char ***l, char *s);
char **strv_copy(char *const *l);
/* *ret = a vector of s alone, or an empty one for NULL (the address lists of an identity): -ENOMEM only. */
int strv_new_or_enomem(const char *s, char ***ret);
/* A new vector of copies of the arguments up to the first NULL (strv_new(NULL): an empty vector). NULL on
 * OOM. */
char **strv_new_real(const char *x, ...) __attribute__((sentinel));
#define strv_new(...) strv_new_real(__VA_ARGS__, NULL)
void strv_sort(char **l);
/* Joins with sep; caller frees. NULL on OOM. */
char *strv_join(char *const *l, const char *sep);
/* Splits s at every character of seps, dropping empty fields. */
int strv_split(const char *s, const char *seps, char ***ret);
bool strv_equal(char *const *a, char *const *b) _pure_;

#define STRV_FOREACH(s, l) for (char **s = (l); s && *s; s++)
