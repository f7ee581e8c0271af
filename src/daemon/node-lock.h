/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* One writer of a node's state at a time: its certificates, manifests, checkpoint and pivot record. Every
 * process that writes them holds this lock (a flock on "<state dir>/lock") for the time it writes: each
 * pass (`run`, `once`, `pki renew`), `checkpoint`, `pivot`, `etcd restore`. Another such process waits for
 * it, a bounded time, then fails with a message naming the holder. Readers (`plan`, `pki show`) do not
 * take it. */

#include "basic/time-util.h"

#define NODE_LOCK_FILE "lock"
/* How long a writer waits for another one: more than a pass takes, unless it waits on something itself. */
#define NODE_LOCK_WAIT (30 * USEC_PER_SEC)

/* Takes the lock of the node whose state lives in state_dir (NULL: STATE_DIR_DEFAULT; created 0700 when
 * missing). The fd in *ret_fd (closing it releases the lock). -EBUSY with *ret_error "another protokube
 * (pid N) holds the node's state ('PATH'); waited 30 s"; other errors name the path. */
int node_lock_take(const char *state_dir, usec_t wait, int *ret_fd, char **ret_error);
