/* SPDX-License-Identifier: Apache-2.0 */
/* The hosts-file parser. Beyond not crashing: what it parses renders to a block that parses back to the
 * same records, and the text outside the block is kept. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dns/dns-hosts.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(hosts_file_done) HostsFile h = {}, again = {};
        _cleanup_free_ char *error = NULL, *block = NULL, *text = NULL, *block2 = NULL;
        size_t block_len, len, block2_len;

        if (hosts_file_parse((const char *)data, size, &h, &error) < 0)
                return 0;
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
