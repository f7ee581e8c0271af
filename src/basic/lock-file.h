/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* One writer at a time between processes: an advisory lock (flock) on a file. The holder writes its pid
 * into the file, so that a process that cannot take the lock can name who holds it. The kernel drops the
 * lock when the holder's fd is closed or the holder dies, so a crash never leaves it taken. */

#include <sys/types.h>

#include "basic/time-util.h"

/* Takes the lock on path (created 0600 if absent, never through a symlink), waiting at most wait (0: not
 * at all; the wait ends early on a stop request: -ECANCELED). The fd (caller closes, which releases it) in
 * *ret_fd. -EBUSY when another process held it all along: *ret_holder gets that process's pid (0 when the
 * file does not say). */
int lock_file_take(const char *path, usec_t wait, int *ret_fd, pid_t *ret_holder);
