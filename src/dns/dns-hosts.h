/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The hosts-file provider's parser and renderer, separate from the provider for tests and fuzzing. The
 * managed block sits between two marker lines; everything outside it belongs to someone else and is kept
 * byte for byte. */

#include <stddef.h>

#include "dns/dns-records.h"

#define HOSTS_BEGIN_MARKER "# Begin protokube managed entries"
#define HOSTS_END_MARKER   "# End protokube managed entries"
#define HOSTS_FILE_MAX     (1024 * 1024)

typedef struct HostsFile {
        char *before; /* text before the block (the whole file when there is none) */
        size_t before_len;
        char *after; /* text after the block's end marker line */
        size_t after_len;
        char *block; /* the block as it is, both marker lines included ("" when none) */
        size_t block_len;
        DnsRRsetList entries; /* the block's records, TTL 0 */
        unsigned n_invalid;   /* block lines that did not parse (dropped on the next rewrite) */
} HostsFile;

void hosts_file_done(HostsFile *h);
/* PK_EMALFORMED (with a message, caller frees) when the markers are unbalanced or repeated: then we do not
 * know what is ours and touch nothing. */
int hosts_file_parse(const char *text, size_t len, HostsFile *ret, char **ret_error);
/* The block for entries: marker lines around one sorted line per address ("ADDRESS\tNAME NAME..."; names
 * without the final dot, sorted). Caller frees. */
int hosts_block_render(const DnsRRsetList *entries, char **ret, size_t *ret_len);
/* before + block + after, as the file should be. Caller frees. */
int hosts_file_render(const HostsFile *h, const char *block, size_t block_len, char **ret, size_t *ret_len);
