/* SPDX-License-Identifier: Apache-2.0 */
#include "pivot/pivot-record.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/parse-util.h"
#include "basic/string-util.h"

#define RECORD_MAX 4096

static const char *const keys[] = { "assets_applied_at", "removed_at",    "complete_at",
                                    "names_left_at",     "names_gone_at", "started_at" };

static usec_t *field(PivotRecord *r, size_t i) {
        usec_t *f[] = { &r->assets_applied_at, &r->removed_at,    &r->complete_at,
                        &r->names_left_at,     &r->names_gone_at, &r->started_at };
        return f[i];
}

static int parse_line(const char *path, unsigned line_no, char *line, PivotRecord *rec, char **ret_error) {
        char *eq = strchr(line, '=');
        if (!eq)
                return error_setf(ret_error, -EINVAL, "%s:%u: not key=value: '%s'", path, line_no, line);
        *eq = 0;
        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                if (!streq(line, keys[i]))
                        continue;
                uint64_t v;
                if (safe_atou64(eq + 1, &v) < 0)
                        return error_setf(ret_error, -EINVAL, "%s:%u: %s: not a time in microseconds: '%s'",
                                          path, line_no, line, eq + 1);
                *field(rec, i) = v;
                return 0;
        }
        /* A key of a later version is kept out of the way, not an error: a downgrade still reads the rest.
         */
        return 0;
}

int pivot_record_load(const char *state_dir, PivotRecord *ret, char **ret_error) {
        _cleanup_free_ char *path = strjoin(state_dir, "/" PIVOT_RECORD_FILE), *text = NULL;
        PivotRecord rec = {};
        int r;
        if (!path)
                return -ENOMEM;
        r = read_full_file(path, RECORD_MAX, &text, NULL);
        if (r == -ENOENT) {
                *ret = rec;
                return 0;
        }
        if (r < 0)
                return error_setf(ret_error, r, "cannot read the pivot record '%s': %s", path, strerror(-r));
        unsigned line_no = 0;
        for (char *p = text, *nl; p && *p; p = nl ? nl + 1 : NULL) {
                nl = strchr(p, '\n');
                if (nl)
                        *nl = 0;
                line_no++;
                if (*p == 0 || *p == '#')
                        continue;
                r = parse_line(path, line_no, p, &rec, ret_error);
                if (r < 0)
                        return r;
        }
        *ret = rec;
        return 0;
}

int pivot_record_save(const char *state_dir, const PivotRecord *rec, char **ret_error) {
        _cleanup_free_ char *path = strjoin(state_dir, "/" PIVOT_RECORD_FILE);
        _cleanup_free_ char *text =
            strprintf("# protokube's pivot record (docs/pivot.md)\n"
                      "assets_applied_at=%llu\nremoved_at=%llu\ncomplete_at=%llu\n"
                      "names_left_at=%llu\nnames_gone_at=%llu\nstarted_at=%llu\n",
                      (unsigned long long)rec->assets_applied_at, (unsigned long long)rec->removed_at,
                      (unsigned long long)rec->complete_at, (unsigned long long)rec->names_left_at,
                      (unsigned long long)rec->names_gone_at, (unsigned long long)rec->started_at);
        int r;
        if (!path || !text)
                return -ENOMEM;
        r = mkdir_p(state_dir, 0700);
        if (r < 0)
                return error_setf(ret_error, r, "cannot create the state directory '%s': %s", state_dir,
                                  strerror(-r));
        r = write_file_atomic(path, text, strlen(text), 0600, true);
        if (r < 0)
                return error_setf(ret_error, r, "cannot write the pivot record '%s': %s", path,
                                  strerror(-r));
        return 0;
}
