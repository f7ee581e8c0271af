/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The pivot's local record (docs/pivot.md): what this master did, which the API cannot tell after a crash
 * or a reboot: when it first saw the assets applied (the start of PIVOT_READY_DEADLINE), when it removed its
 * bootstrap manifests (the start of PIVOT_RESTORE_DEADLINE, and the pass's reason not to write them again),
 * the steps of its turn to start its self-hosted apiserver, and when it saw the pivot complete (the pass
 * never writes them again). A small text file <state dir>/pivot, "key=value" lines, written atomically
 * (0600). Times are CLOCK_REALTIME microseconds: they must mean the same after a reboot. */

#include "basic/time-util.h"

#define PIVOT_RECORD_FILE "pivot"
#define STATE_DIR_DEFAULT "/var/lib/protokube"

typedef struct PivotRecord {
        usec_t assets_applied_at; /* 0: never */
        usec_t removed_at;        /* 0: the bootstrap manifests are not removed (or were restored) */
        usec_t complete_at;       /* 0: this master has not seen the pivot complete */
        /* Its turn to start its self-hosted apiserver (docs/pivot.md, "One apiserver starting at a time"):
         * when it asked to be left out of the API's names, when it first saw them leave it out (the clients'
         * caches drain from then), when it labelled its Node for its self-hosted apiserver (the start of
         * PIVOT_READY_DEADLINE for that pod). 0: not (yet). */
        usec_t names_left_at;
        usec_t names_gone_at;
        usec_t started_at;
} PivotRecord;

/* The record of state_dir; all zeros when there is none. A malformed file fails with -EINVAL and a message
 * naming the file, the line and the value (caller frees). */
int pivot_record_load(const char *state_dir, PivotRecord *ret, char **ret_error);
/* Writes the record atomically, creating state_dir (0700) if needed. */
int pivot_record_save(const char *state_dir, const PivotRecord *rec, char **ret_error);
