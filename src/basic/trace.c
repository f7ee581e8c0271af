/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/trace.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "basic/time-util.h"

bool trace_enabled = false;

static struct {
        char name[TRACE_NAME_MAX];
        usec_t t;
} marks[TRACE_MARKS_MAX];
static unsigned n_marks;

void trace_init(void) {
        const char *e = getenv("PROTOKUBE_TRACE");
        trace_enabled = e && streq(e, "1");
}

void trace_mark_real(const char *fmt, ...) {
        usec_t t = now(CLOCK_MONOTONIC);
        if (n_marks >= TRACE_MARKS_MAX)
                return;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(marks[n_marks].name, TRACE_NAME_MAX, fmt, ap);
        va_end(ap);
        marks[n_marks++].t = t;
}

void trace_dump(FILE *f) {
        if (!trace_enabled)
                return;
        fputs("{\"trace\":[", f);
        for (unsigned i = 0; i < n_marks; i++) {
                fputs(i ? ",[\"" : "[\"", f);
                /* Step names are ours (fixed words, volume IDs, paths): escape what JSON needs anyway. */
                for (const char *c = marks[i].name; *c; c++)
                        if (*c == '"' || *c == '\\')
                                fprintf(f, "\\%c", *c);
                        else if ((unsigned char)*c < 0x20)
                                fprintf(f, "\\u%04x", (unsigned char)*c);
                        else
                                fputc(*c, f);
                fprintf(f, "\",%llu]", (unsigned long long)marks[i].t);
        }
        fputs("]}\n", f);
}
