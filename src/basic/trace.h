/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Stage times for the benchmarks (bench/converge.py): with PROTOKUBE_TRACE=1 in the environment, each
 * trace_mark() records its name and the CLOCK_MONOTONIC time, and the program prints them all at exit as one
 * JSON line on stderr ({"trace":[["main",USEC],...]}). Off (the default), trace_mark() is one predictable
 * branch on a static flag: no clock read, no formatting, no allocation. Marks past TRACE_MARKS_MAX are
 * dropped. Records only: printing is the program's (cli/), like logging. */

#include <stdbool.h>
#include <stdio.h>

#include "basic/macro.h"

#define TRACE_MARKS_MAX 256
#define TRACE_NAME_MAX  48

extern bool trace_enabled;

/* Reads PROTOKUBE_TRACE once, at the start of main. */
void trace_init(void);
_printf_(1, 2) void trace_mark_real(const char *fmt, ...);
#define trace_mark(...)                                 \
        do {                                            \
                if (__builtin_expect(trace_enabled, 0)) \
                        trace_mark_real(__VA_ARGS__);   \
        } while (0)
/* The JSON line, when enabled; nothing otherwise. */
void trace_dump(FILE *f);
