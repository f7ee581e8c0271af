/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Child processes (mkfs, fsck) through posix_spawn with an argv, never a shell (STYLE.md). stdout and
 * stderr are captured through one pipe with a size cap (the rest is read and dropped, so the child never
 * blocks on a full pipe); the child gets /dev/null as stdin and a deadline, after which it is killed. */

#include <stddef.h>

#include "basic/time-util.h"

typedef struct SpawnResult {
        int exit_status; /* 0..255 when the child exited; -1 when it was killed by a signal */
        int term_signal; /* the signal that ended it, or 0 */
        char *output;    /* captured stdout+stderr, NUL-terminated, at most the cap; caller frees */
        size_t output_len;
        int truncated; /* output was longer than the cap */
} SpawnResult;

void spawn_result_done(SpawnResult *r);

/* Runs argv[0] (an absolute path, or a name looked up in PATH) with argv, waits at most timeout.
 * Returns 0 when the child ran to its end (whatever its exit status; see ret), PK_ETIMEOUT after killing
 * it at the deadline (ret still filled with what it printed), -errno if it could not be started.
 * ret is filled on 0 and PK_ETIMEOUT. */
int spawn_run(char *const argv[], usec_t timeout, size_t output_max, SpawnResult *ret);
