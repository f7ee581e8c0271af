/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* cmocka needs these before it; the blank line keeps clang-format from reordering them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>

/* got (taken, freed) is want, or NULL when want is NULL: a value a test reads back out of a double. */
static inline void assert_string_or_null_free(char *got, const char *want) {
        if (!want)
                assert_null(got);
        else {
                assert_non_null(got);
                assert_string_equal(got, want);
        }
        free(got);
}
