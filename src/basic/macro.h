/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Cleanup attributes and small macros, after systemd's src/basic/macro.h. */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f)    __attribute__((cleanup(f)))
#define _unused_        __attribute__((unused))
#define _pure_          __attribute__((pure))
#define _printf_(a, b)  __attribute__((format(printf, a, b)))
#define _noreturn_      __attribute__((noreturn))
#define _warn_unused_   __attribute__((warn_unused_result))
#define _likely_(x)     (__builtin_expect(!!(x), 1))
#define _unlikely_(x)   (__builtin_expect(!!(x), 0))
#define ELEMENTSOF(x)   (sizeof(x) / sizeof((x)[0]))
#define STRINGIFY(x)    #x
#define XSTRINGIFY(x)   STRINGIFY(x)
#define STRLEN(x)       (sizeof(x) - 1)
#define MIN(a, b)       ((a) < (b) ? (a) : (b))
#define MAX(a, b)       ((a) > (b) ? (a) : (b))
#define streq(a, b)     (strcmp((a), (b)) == 0)
#define strneq(a, b, n) (strncmp((a), (b), (n)) == 0)
/* both strings present and equal (a value read from outside may be absent) */
#define streq_ptr(a, b) ((a) && (b) && streq((a), (b)))
#define isempty(s)      (!(s) || !*(s))
#define strna(s)        ((s) ? (s) : "n/a")
#define strempty(s)     ((s) ? (s) : "")
#define yes_no(b)       ((b) ? "yes" : "no")
#define new0(t, n)      ((t *)calloc((n) ?: 1, sizeof(t)))
#define ERRNO_VALUE(r)  ((r) < 0 ? -(r) : (r))

/* Hand a resource on: return the value and reset the variable so cleanup does nothing. */
#define TAKE_GENERIC(var, type, nullvalue)    \
        ({                                    \
                type *_pvar_ = &(var);        \
                type _var_ = *_pvar_;         \
                type _nullvalue_ = nullvalue; \
                *_pvar_ = _nullvalue_;        \
                _var_;                        \
        })
#define TAKE_PTR(ptr) TAKE_GENERIC(ptr, typeof(ptr), NULL)
/* Frees a and moves b into it (b becomes NULL): handing a message on to a ret_error. */
#define free_and_replace(a, b)     \
        ({                         \
                free(a);           \
                (a) = TAKE_PTR(b); \
                0;                 \
        })
#define TAKE_FD(fd) TAKE_GENERIC(fd, int, -1)

static inline void freep(void *p) {
        free(*(void **)p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline void closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}
#define _cleanup_close_ _cleanup_(closep)

/* Close and return -1, so "fd = safe_close(fd);" leaves it invalid. */
static inline int safe_close(int fd) {
        if (fd >= 0) {
                int saved = errno;
                close(fd);
                errno = saved;
        }
        return -1;
}

/* A compile-time check (a table that must have one entry per value of an enum). */
#define assert_cc(expr) _Static_assert(expr, #expr)

#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func) \
        static inline void func##p(type *p) {   \
                if (*p)                         \
                        func(*p);               \
        }

#include <stdio.h>
DEFINE_TRIVIAL_CLEANUP_FUNC(FILE *, fclose)
#define _cleanup_fclose_ _cleanup_(fclosep)

#include <dirent.h>
DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir)

/* Return the negative errno of the last failed libc call, never 0. */
static inline int negative_errno(void) {
        return errno > 0 ? -errno : -EIO;
}

/* Sorting an empty array: passing qsort a NULL base is undefined behaviour even with 0 elements (its pointer
 * is declared nonnull), and an empty list's array is often NULL. Every sort in the tree goes through this
 * (scripts/check-banned.sh). */
static inline void qsort_safe(void *base, size_t n, size_t size,
                              int (*compare)(const void *, const void *)) {
        if (n <= 1)
                return;
        qsort(base, n, size, compare); /* banned-ok: the one call */
}
