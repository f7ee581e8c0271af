/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Volumes as a cloud's volume service shows them, and the provider interface (ARCHITECTURE.md, layers):
 * a static const vtable per provider (local pool here, AWS EBS later), found by name. Everything a
 * provider returns is plain data owned by the caller. */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "basic/macro.h"
#include "basic/time-util.h"

typedef struct NodeIdentity {
        char *name;          /* node name (instance id on a cloud) */
        char *machine_id;    /* machine-id(5) of this machine, NULL if unknown (docs/volumes.md) */
        char *zone;          /* availability zone */
        char **internal_ips; /* NULL-terminated, may be empty */
        char **external_ips;
} NodeIdentity;

void node_identity_done(NodeIdentity *n);
int node_identity_copy(const NodeIdentity *src, NodeIdentity *ret);

typedef struct VolumeAttachment {
        char *node;       /* NULL: not attached */
        char *machine_id; /* the holder's machine-id; NULL in records written before it was kept */
        char **internal_ips;
        char **external_ips;
        char *device; /* as the provider recorded it; informational, resolution goes by identity */
        usec_t since; /* CLOCK_REALTIME of the claim as the provider recorded it; 0 = unknown. Orders two
                       * claims of one member: the first claim wins (volume-tags.h) */
} VolumeAttachment;

/* What a provider can tell of a volume's contents without attaching it. It decides only which of two
 * volumes naming the same member is used and whether a blank one may be formatted: never "it is blank,
 * format it" (that is proven on the device itself). */
typedef enum VolumeContent {
        VOLUME_CONTENT_UNKNOWN, /* nothing known: may hold data */
        VOLUME_CONTENT_BLANK,   /* provably never written (a sparse image with no block allocated) */
        VOLUME_CONTENT_DATA,    /* holds something (a signature; a volume made from a snapshot) */
        _VOLUME_CONTENT_MAX,
        _VOLUME_CONTENT_INVALID = -EINVAL,
} VolumeContent;

const char *volume_content_to_string(VolumeContent c);

typedef struct Volume {
        char *id;
        char *zone;
        uint64_t size;
        char **tags; /* alternating key, value; sorted by key, keys unique */
        VolumeAttachment attachment;
        VolumeContent content;
        /* Non-NULL: the provider's record of this volume is unreadable, and why. Such a volume is
         * listed (it must never silently vanish) but never used; id is known, zone, tags and
         * attachment only as far as they could be read (zone may be NULL). */
        char *damaged;
} Volume;

typedef struct VolumeList {
        Volume *items;
        size_t n;
        char **warnings; /* volumes the provider could not read ("id: why"), NULL if none */
} VolumeList;

void volume_done(Volume *v);
void volume_list_done(VolumeList *l);
int volume_copy(const Volume *src, Volume *ret);
/* Value of tag key, or NULL. */
const char *volume_tag(const Volume *v, const char *key);
/* Sets tag key (replacing a previous value), keeping the tags sorted. */
int volume_set_tag(Volume *v, const char *key, const char *value);
/* Appends a copy of v to l. */
int volume_list_append(VolumeList *l, const Volume *v);
/* Sorts by id. */
void volume_list_sort(VolumeList *l);

/* Whether node is the holder recorded in a: the names match and, when both sides know their machine,
 * the machine ids match too. A record without a machine id (written before it was kept) is matched by
 * name alone; a node that does not know its machine id never matches a record that names one. */
bool node_identity_holds(const NodeIdentity *node, const VolumeAttachment *a);
/* a names node's name but another machine: a second machine with the same name. */
bool node_identity_name_clash(const NodeIdentity *node, const VolumeAttachment *a);

/* A machine of the cluster as its cloud lists it: its id (an instance id) and the node name it registers
 * as (on aws its private DNS name, as kops' nodes do). */
typedef struct CloudMachine {
        char *id;
        char *node_name;
} CloudMachine;

void cloud_machines_free(CloudMachine *l, size_t n);

/* Node-local settings handed to a provider (the CLI's --pool, --node-name, ...). NULL = detect. */
typedef struct VolumeProviderConfig {
        const char *pool_dir; /* local */
        const char *node_name;
        const char *zone;
        const char *internal_ip;
        const char *external_ip;
        const char *machine_id_file; /* NULL: /etc/machine-id */
        usec_t lock_timeout;         /* how long to wait for the pool lock; 0 = default (10s) */
} VolumeProviderConfig;

/* The fields of a cloud node's identity, each from the provider's configuration when given, else asked of
 * the instance (its metadata service). */
typedef enum IdentityField {
        IDENTITY_NAME,
        IDENTITY_ZONE,
        IDENTITY_INTERNAL_IP,
        IDENTITY_EXTERNAL_IP,
        _IDENTITY_FIELD_MAX,
} IdentityField;

/* Fills *ret from cfg (node_name, zone, internal_ip, external_ip) and, for each field cfg does not give,
 * from ask (*ret_value NULL and 0: the instance has none). Then check() judges name and zone (an error with
 * its message). The address lists hold one address or none. */
int node_identity_gather(const VolumeProviderConfig *cfg,
                         int (*ask)(void *userdata, IdentityField f, char **ret_value, char **ret_error),
                         int (*check)(const char *name, const char *zone, char **ret_error), void *userdata,
                         NodeIdentity *ret, char **ret_error);

/* Every entry that can fail with more to say than its code takes char **ret_error (may be NULL): on failure
 * it may get the provider's words (a cloud API's code and message, the file or value that is wrong; never a
 * secret; caller frees). It may also stay NULL: then the code is all there is to say. */
typedef struct VolumeProviderVTable {
        const char *name;
        int (*open)(const VolumeProviderConfig *cfg, void **ret_state, char **ret_error);
        void (*close)(void *state);
        /* Who am I: name, zone, IPs. */
        int (*node_identity)(void *state, NodeIdentity *ret, char **ret_error);
        /* Volumes tagged KubernetesCluster=cluster (NULL: all) in zone (NULL: every zone). */
        int (*list_volumes)(void *state, const char *cluster, const char *zone, VolumeList *ret,
                            char **ret_error);
        /* Attach volume id to node, compare-and-set: PK_ECONFLICT if another node holds it. Idempotent:
         * attaching a volume this node already holds makes sure its device exists. */
        int (*attach)(void *state, const char *id, const NodeIdentity *node, char **ret_error);
        /* The block device of volume id attached here, by identity (never guessed from a name):
         * 1 and path + device number, 0 if not (yet) present, -ENODEV when a device is there that cannot be
         * proven to be the volume's (*ret_error says why). */
        int (*resolve_device)(void *state, const char *id, char **ret_path, dev_t *ret_devnum,
                              char **ret_error);
        /* Detach; node NULL detaches whoever holds it, else PK_ECONFLICT if another node holds it. */
        int (*detach)(void *state, const char *id, const char *node, char **ret_error);
        /* Optional: the directories whose changes should wake the daemon before its timer (the pool's
         * metadata; the directory where an attached volume's device link appears). Fills ret with a
         * NULL-terminated list (caller frees). */
        int (*watch_paths)(void *state, char ***ret);
        /* Optional: the cluster's machines (tagged KubernetesCluster=cluster, not terminated), for the
         * approver's rule that a joining node's name is one of them. A cloud without (local) has none. */
        int (*list_machines)(void *state, const char *cluster, CloudMachine **ret, size_t *ret_n,
                             char **ret_error);
} VolumeProviderVTable;

typedef struct VolumeProvider {
        const VolumeProviderVTable *vtable;
        void *state;
} VolumeProvider;

/* Wraps an existing vtable + state (tests); takes state. */
int volume_provider_new(const VolumeProviderVTable *vt, void *state, VolumeProvider **ret);
VolumeProvider *volume_provider_free(VolumeProvider *p);
/* What to watch for wake-ups (an empty list when the provider names none); caller frees. */
int volume_provider_watch_paths(const VolumeProvider *p, char ***ret);
DEFINE_TRIVIAL_CLEANUP_FUNC(VolumeProvider *, volume_provider_free)
/* The provider's list_machines; -EOPNOTSUPP when its cloud lists none. */
int volume_provider_list_machines(const VolumeProvider *p, const char *cluster, CloudMachine **ret,
                                  size_t *ret_n, char **ret_error);
