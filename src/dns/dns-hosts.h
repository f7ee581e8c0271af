/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The hosts-file provider's parser and renderer, separate from the provider for tests and fuzzing. The
 * managed block sits between two marker lines; everything outside it belongs to someone else and is kept
 * byte for byte. */

#include <stdbool.h>
#include <stddef.h>

#include "dns/dns-records.h"

#define HOSTS_BEGIN_MARKER "# Begin protokube managed entries"
#define HOSTS_END_MARKER   "# End protokube managed entries"
#define HOSTS_FILE_MAX     (1024 * 1024)
/* On disk: the text plus, after an interrupted in-place rewrite, its journal (dns-hosts-journal.c). */
#define HOSTS_DISK_MAX (2 * HOSTS_FILE_MAX + 4096)

typedef struct HostsFile {
        char *before; /* text before the block (the whole file when there is none) */
        size_t before_len;
        char *after; /* text after the block's end marker line */
        size_t after_len;
        char *block; /* the block as it is, both marker lines included ("" when none) */
        size_t block_len;
        DnsRRsetList entries; /* the block's records, TTL 0 */
        unsigned n_invalid;   /* block lines that did not parse (dropped on the next rewrite) */
        /* The file on disk is not before + block + after: an interrupted rewrite (a journal, or an old
         * version's stale tail). The next write repairs it, even when the block is unchanged: keep the
         * first repair_keep bytes, write repair_data there, truncate after it. */
        bool repair;
        size_t repair_keep;
        char *repair_data; /* NULL when there is nothing to write, only to truncate */
        size_t repair_len;
} HostsFile;

void hosts_file_done(HostsFile *h);
/* PK_EMALFORMED (with a message, caller frees) when the markers are unbalanced or repeated: then we do not
 * know what is ours and touch nothing. Every state an interrupted rewrite can leave (the journal of ours,
 * and the stale tail an old version's write-then-truncate left) parses as the file before or after that
 * rewrite, with repair set. */
int hosts_file_parse(const char *text, size_t len, HostsFile *ret, char **ret_error);
/* The block for entries: marker lines around one sorted line per address ("ADDRESS\tNAME NAME..."; names
 * without the final dot, sorted). Caller frees. */
int hosts_block_render(const DnsRRsetList *entries, char **ret, size_t *ret_len);
/* before + block + after, as the file should be. Caller frees. */
int hosts_file_render(const HostsFile *h, const char *block, size_t block_len, char **ret, size_t *ret_len);

/* The in-place rewrite, as steps: write data at offset, or with data NULL truncate the file to offset. The
 * writer fsyncs after each; the unit test cuts them short at every byte. */
typedef struct HostsWrite {
        size_t offset;
        char *data;
        size_t len;
} HostsWrite;
typedef struct HostsWritePlan {
        HostsWrite steps[5];
        size_t n;
} HostsWritePlan;
void hosts_write_plan_done(HostsWritePlan *p);
/* The steps that turn the file h was parsed from into text (repairing it first if needed). */
int hosts_write_plan(const HostsFile *h, const char *text, size_t len, HostsWritePlan *ret);
/* The journal that replays text at offset (NUL-framed, with size and CRC-32). Caller frees. */
int hosts_journal_render(size_t offset, const char *text, size_t len, char **ret, size_t *ret_len);
/* 0: no journal (no NUL byte). 1: the file holds one, complete or torn: the text it stands for is its first
 * *ret_keep bytes followed by *ret_redo (caller frees; NULL, 0 when nothing is to be replayed).
 * PK_EMALFORMED with a message when a NUL byte is there that is not ours. */
int hosts_journal_recover(const char *text, size_t len, size_t *ret_keep, char **ret_redo,
                          size_t *ret_redo_len, char **ret_error);
