/* SPDX-License-Identifier: Apache-2.0 */
/* The local pool's metadata parser: every node's process reads files others wrote. Whatever parses must
 * format and re-parse to the same text. Whatever does not parse is salvaged without a crash, and a
 * salvaged record whose core was readable, freed of its attachment, is one the parser accepts (that is
 * what `pool detach` writes back). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cloud/pool-meta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_salvage(const uint8_t *data, size_t size, const char *reason) {
        PoolVolume s = {}, back = {};
        char *text = NULL;

        if (pool_meta_salvage((const char *)data, size, "v1", reason, &s) < 0 || !s.volume.damaged)
                abort();
        if (s.core_valid) {
                free(s.volume.attachment.node);
                free(s.volume.attachment.machine_id);
                s.volume.attachment = (VolumeAttachment){};
                free(s.volume.damaged);
                s.volume.damaged = NULL;
                if (pool_meta_format(&s, &text) < 0 || pool_meta_parse(text, strlen(text), &back, NULL) < 0)
                        abort();
                free(text);
                pool_volume_done(&back);
        }
        pool_volume_done(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        PoolVolume v = {}, w = {};
        char *err = NULL, *text = NULL, *text2 = NULL;

        if (pool_meta_parse((const char *)data, size, &v, &err) < 0) {
                check_salvage(data, size, err);
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
