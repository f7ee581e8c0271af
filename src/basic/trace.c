/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/trace.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "basic/buf.h"
#include "basic/string-util.h"
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
        /* Built whole and written once: stderr is unbuffered, and a write per piece would cost the process's
         * end the time this measures. */
        _cleanup_buf_ Buf b;
        buf_init(&b, TRACE_MARKS_MAX * (TRACE_NAME_MAX * 6 + 32) + 16);
        int r = buf_add_str(&b, "{\"trace\":[");
        for (unsigned i = 0; i < n_marks && r >= 0; i++) {
                /* Step names are ours (fixed words, volume IDs, paths): escape what JSON needs anyway. */
                char name[TRACE_NAME_MAX * 6 + 1] = "";
                size_t n = 0;
                (void)json_escape_append(name, sizeof(name), &n, marks[i].name);
                r = buf_printf(&b, "%s[\"%s\",%llu]", i ? "," : "", name, (unsigned long long)marks[i].t);
        }
        if (r >= 0)
                r = buf_add_str(&b, "]}\n");
        if (r >= 0)
                fwrite(b.data, 1, b.len, f);
}
