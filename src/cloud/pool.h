/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The local pool (ARCHITECTURE.md): a directory that plays the cloud's volume service on one machine.
 * Every mutation runs under a pool-wide lock (flock on <pool>/.lock, bounded wait) and is compare-and-set
 * on freshly read metadata; each metadata update is one atomic rename, so a crash at any point leaves
 * every <id>.json either old or new. Readers (list, resolve) take no lock. */

#include <stdint.h>

#include "basic/time-util.h"
#include "cloud/pool-meta.h"

#define POOL_LOCK_TIMEOUT_DEFAULT (10 * USEC_PER_SEC)

typedef struct Pool {
        char *dir;
        usec_t lock_timeout;
} Pool;

int pool_open(const char *dir, usec_t lock_timeout, Pool **ret);
Pool *pool_free(Pool *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(Pool *, pool_free)

/* Takes the pool lock (waits at most lock_timeout, then PK_ETIMEOUT). Returns the fd; closing it
 * releases the lock. */
int pool_lock(Pool *p);

/* Every volume of the pool, sorted by id. A record that does not parse is listed all the same, with
 * Volume.damaged set (and also in ret->warnings), so that no input makes a volume disappear; files whose
 * name is not "<valid id>.json" are only in ret->warnings. */
int pool_list(Pool *p, VolumeList *ret);
int pool_load(Pool *p, const char *id, PoolVolume *ret, char **ret_error);
/* Like pool_load(), but a record that does not parse comes back salvaged (pool_meta_salvage():
 * ret->volume.damaged says why) instead of as an error. -ENOENT if there is none. */
int pool_load_any(Pool *p, const char *id, PoolVolume *ret);

/* A new image-backed volume of size bytes (sparse). id NULL: "vol-" + 16 random hex digits. tags:
 * alternating key, value. -EEXIST if the id is taken. Returns the id (caller frees). */
int pool_create(Pool *p, const char *id, const char *zone, uint64_t size, char *const *tags, char **ret_id);
/* A plain block device as a volume (bare metal). id NULL: "dev-" + the device's name. */
int pool_add_device(Pool *p, const char *id, const char *device, const char *zone, char *const *tags,
                    char **ret_id);

/* Compare-and-set claim for node (PK_ECONFLICT if another node holds it, including a node of the same
 * name on another machine: node_identity_holds()), then its device: a loop device for an image (reused
 * if one is already bound to it). Idempotent for the holder. -EINVAL if node's name, machine id or
 * addresses could not be stored (bad literal, more than POOL_IPS_MAX): nothing is written then.
 * PK_EMALFORMED if the record is damaged. */
int pool_attach(Pool *p, const char *id, const NodeIdentity *node);
/* The device of volume id if it is attached to node: 1 + path + device number, 0 if none. */
int pool_resolve_device(Pool *p, const char *id, const NodeIdentity *node, char **ret_path,
                        dev_t *ret_devnum);

enum {
        POOL_DETACHED = 1,         /* detached, the record says the volume is free */
        POOL_DETACHED_DAMAGED = 2, /* a damaged record: its loop device is released, the record left
                                    * as it is (it cannot be rewritten without guessing) */
};
/* Detaches id (node NULL: whoever holds it; else PK_ECONFLICT when held by another node). 0 if it was
 * free, else POOL_DETACHED*; -EBUSY while its loop device is mounted (unmount first: a terminated
 * instance has no mounts left). A damaged record whose core is readable is rewritten free of its
 * attachment; with node given, a damaged record must name node as its holder (else PK_EMALFORMED). */
int pool_detach(Pool *p, const char *id, const NodeIdentity *node);
/* Detaches everything node holds ("instance terminated"). Returns how many. Damaged records that name
 * node are released too; damaged records whose holder cannot be read are left alone. Each damaged record
 * met gets a line in *ret_notes (caller frees; may be NULL). */
int pool_release_node(Pool *p, const char *node, char ***ret_notes);
