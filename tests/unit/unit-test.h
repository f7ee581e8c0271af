/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* cmocka needs these before it; the blank line keeps clang-format from reordering them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
