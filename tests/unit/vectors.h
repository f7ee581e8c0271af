/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The known-answer files in tests/vectors (VECTORS_DIR is set by tests/unit/meson.build). cmocka leaves a
 * failed test by longjmp, so cleanup attributes never run: these helpers free what they allocated before
 * failing, and a test reads its vectors before it allocates anything else. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/fileio.h"
#include "unit-test.h"

#define VECTOR_MAX (1U << 16)

/* Reads VECTORS_DIR/names[i] into ret[i] (NUL-terminated, caller frees each) and its size into ret_len[i].
 * A missing or unreadable file fails the test, naming the file, with nothing left allocated. */
static inline void vectors_read(const char *const *names, size_t n, char **ret, size_t *ret_len) {
        char path[4096];
        size_t i;
        int r = 0;

        for (i = 0; i < n; i++) {
                ret[i] = NULL;
                if ((size_t)snprintf(path, sizeof(path), "%s/%s", VECTORS_DIR, names[i]) >= sizeof(path)) {
                        r = -ENAMETOOLONG;
                        break;
                }
                r = read_full_file(path, VECTOR_MAX, &ret[i], &ret_len[i]);
                if (r < 0)
                        break;
        }
        if (r >= 0)
                return;
        for (size_t j = 0; j < i; j++) {
                free(ret[j]);
                ret[j] = NULL;
        }
        fail_msg("cannot read test vector '%s': %s", path, strerror(-r));
}

static inline char *vector_read(const char *name, size_t *ret_len) {
        char *text;
        vectors_read(&name, 1, &text, ret_len);
        return text;
}
