/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Child processes (mkfs, fsck) through posix_spawn with an argv, never a shell (STYLE.md). stdout and
 * stderr are captured through one pipe with a size cap (the rest is read and dropped, so the child never
 * blocks on a full pipe); the child gets /dev/null as stdin and a deadline, after which it is killed. */

#include <stddef.h>

#include "basic/time-util.h"

typedef struct SpawnResult {
        int exit_status; /* 0..255 when the child exited; -1 when it did not */
        int term_signal; /* the signal that ended it, or 0 */
        char *output;    /* captured stdout+stderr, NUL-terminated, at most the cap; caller frees */
        size_t output_len;
        int truncated; /* output was longer than the cap */
} SpawnResult;

void spawn_result_done(SpawnResult *r);

/* "exited 4", "was killed by signal SIGSEGV (Segmentation fault)": for error messages. */
const char *spawn_result_describe(const SpawnResult *r, char *buf, size_t size);

/* Runs argv[0] (an absolute path, or a name looked up in PATH) with argv, waits at most timeout.
 * Returns 0 when the child exited by itself (whatever its exit status; see ret), PK_ECHILD when a signal
 * ended it (a crash, the OOM killer: never a result to interpret; ret->term_signal says which),
 * PK_ETIMEOUT after killing it at the deadline, -errno if it could not be started. ret is filled on 0,
 * PK_ECHILD and PK_ETIMEOUT. */
int spawn_run(char *const argv[], usec_t timeout, size_t output_max, SpawnResult *ret);
