/* SPDX-License-Identifier: Apache-2.0 */
/* The hosts-file parser. Beyond not crashing: what it parses renders to a block that parses back to the
 * same records, and the text outside the block is kept. A file that needs a repair (an interrupted
 * rewrite) is, after the repair steps, exactly the text it was read as. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dns/dns-hosts.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_repair(const char *data, size_t size, const HostsFile *h) {
        _cleanup_(hosts_write_plan_done) HostsWritePlan p = {};
        size_t len = h->before_len + h->block_len + h->after_len;
        _cleanup_free_ char *want = malloc(len + 1), *disk = malloc(size + 1);

        if (!want || !disk)
                return;
        memcpy(want, h->before, h->before_len);
        memcpy(want + h->before_len, h->block, h->block_len);
        memcpy(want + h->before_len + h->block_len, h->after, h->after_len);
        if (hosts_write_plan(h, want, len, &p) < 0)
                return;
        memcpy(disk, data, size);
        for (size_t i = 0; i < p.n; i++) {
                const HostsWrite *w = &p.steps[i];
                size_t end = w->data ? w->offset + w->len : w->offset;
                /* The repair only writes inside the file and truncates it: it never grows it. */
                if (end > size)
                        abort();
                if (w->data)
                        memcpy(disk + w->offset, w->data, w->len);
                else
                        size = w->offset;
        }
        if (size != len || memcmp(disk, want, len) != 0)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(hosts_file_done) HostsFile h = {}, again = {};
        _cleanup_free_ char *error = NULL, *block = NULL, *text = NULL, *block2 = NULL;
        size_t block_len, len, block2_len;

        if (hosts_file_parse((const char *)data, size, &h, &error) < 0)
                return 0;
        if (h.repair)
                check_repair((const char *)data, size, &h);
        if (hosts_block_render(&h.entries, &block, &block_len) < 0)
                return 0;
        if (hosts_file_render(&h, block, block_len, &text, &len) < 0)
                return 0;
        if (len < h.before_len || memcmp(text, h.before, h.before_len) != 0)
                abort();
        free(error);
        error = NULL;
        if (hosts_file_parse(text, len, &again, &error) < 0)
                abort();
        if (hosts_block_render(&again.entries, &block2, &block2_len) < 0)
                return 0;
        if (block2_len != block_len || memcmp(block, block2, block_len) != 0)
                abort();
        return 0;
}
