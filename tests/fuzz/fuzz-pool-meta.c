/* SPDX-License-Identifier: Apache-2.0 */
/* The local pool's metadata parser: every node's process reads files others wrote. Whatever parses must
 * format and re-parse to the same text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "volumes/pool-meta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        PoolVolume v = {}, w = {};
        char *err = NULL, *text = NULL, *text2 = NULL;

        if (pool_meta_parse((const char *)data, size, &v, &err) < 0) {
                free(err);
                return 0;
        }
        if (pool_meta_format(&v, &text) < 0)
                abort();
        if (pool_meta_parse(text, strlen(text), &w, &err) < 0)
                abort();
        if (pool_meta_format(&w, &text2) < 0 || strcmp(text, text2) != 0)
                abort();
        free(text);
        free(text2);
        pool_volume_done(&v);
        pool_volume_done(&w);
        return 0;
}
