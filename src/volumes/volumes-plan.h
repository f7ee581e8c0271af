/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The volume part of a pass, as a PURE function (ARCHITECTURE.md, "One pass, in one direction"):
 * (desired etcd clusters, this node, the volumes the provider lists, what was observed on this node) ->
 * which volume this node uses for each etcd cluster and the ordered actions to get there. No I/O here:
 * unit tests drive it with tables. */

#include <stdbool.h>
#include <stddef.h>

#include "cloud/volume-tags.h"
#include "cloud/volume.h"

typedef enum MountState {
        MOUNT_STATE_NONE,  /* nothing mounted on <mount-root>/master-<id> */
        MOUNT_STATE_OURS,  /* the volume's device is mounted there */
        MOUNT_STATE_OTHER, /* another device is mounted there: an error, never "fixed" by us */
        _MOUNT_STATE_MAX,
        _MOUNT_STATE_INVALID = -EINVAL,
} MountState;

/* What this node saw about a volume it holds (zeroes for the others). */
typedef struct VolumeObserved {
        bool device_present;   /* attached here and its block device resolved by identity */
        MountState mount;      /* at <mount-root>/master-<id> */
        char *manifest_text;   /* the etcd manifest on the volume as read (NULL: absent or not a regular
                                * file); owned by the observation */
        bool manifest_current; /* it holds exactly the rendered text (set by the pass, which renders) */
        bool link_current;     /* the manifest-dir symlink points at it */
} VolumeObserved;

typedef struct VolumesInput {
        const char *cluster;        /* KubernetesCluster tag value */
        char *const *etcd_clusters; /* from the spec, in spec order; "main" goes first regardless */
        const NodeIdentity *node;
        const Volume *volumes; /* as listed by the provider (any order) */
        size_t n_volumes;
        const VolumeObserved *observed; /* parallel to volumes; NULL = nothing observed */
        bool manifests;                 /* plan step 7 (writing the etcd manifests) */
} VolumesInput;

typedef enum ActionType {
        ACTION_CLAIM,          /* compare-and-set attach of a free volume to this node */
        ACTION_ATTACH,         /* already ours, device missing: attach again (idempotent) */
        ACTION_WAIT_DEVICE,    /* bounded wait for the device to appear */
        ACTION_FSCK,           /* e2fsck -p on an ext filesystem; exit >= 4 stops this volume */
        ACTION_MOUNT,          /* mount; only if that fails and blkid proves it blank: mkfs.ext4, mount */
        ACTION_WRITE_MANIFEST, /* <mount>/k8s.io/manifests/etcd[-<cluster>].manifest */
        ACTION_LINK_MANIFEST,  /* <manifest-dir>/etcd[-<cluster>].manifest -> the file on the volume */
        ACTION_RELEASE,        /* detach a volume this node holds whose member another volume holds */
        _ACTION_TYPE_MAX,
        _ACTION_TYPE_INVALID = -EINVAL,
} ActionType;

const char *action_type_to_string(ActionType t);

typedef struct PlanAction {
        ActionType type;
        size_t volume;    /* index into VolumesInput.volumes */
        size_t selection; /* index into VolumesPlan.selections; SIZE_MAX for a release */
} PlanAction;

typedef enum SelectionState {
        SELECTION_READY,   /* held, mounted, manifests in place: nothing to do */
        SELECTION_ACTIONS, /* held or claimable, actions planned */
        SELECTION_WAITING, /* no volume of this etcd cluster is free for this node */
        SELECTION_ERROR,   /* held but stuck (e.g. another device on its mount point) */
        _SELECTION_STATE_MAX,
        _SELECTION_STATE_INVALID = -EINVAL,
} SelectionState;

typedef struct PlanSelection {
        const char *etcd_cluster; /* points into VolumesInput.etcd_clusters */
        SelectionState state;
        size_t volume; /* index into VolumesInput.volumes, SIZE_MAX when none */
        char *note;    /* why waiting / error; NULL otherwise */
        /* Another volume names the same member and may hold its data: the chosen volume must never be
         * formatted (points into VolumesInput.volumes); NULL when formatting a proven-blank device is safe.
         */
        const char *format_blocked_by;
} PlanSelection;

typedef struct VolumesPlan {
        VolumeEligibility *eligibility; /* parallel to VolumesInput.volumes */
        size_t n_volumes;
        PlanSelection *selections; /* one per etcd cluster, main first */
        size_t n_selections;
        PlanAction *actions; /* ordered */
        size_t n_actions;
} VolumesPlan;

void volumes_plan_done(VolumesPlan *p);

/* Eligibility of every volume, the selection for each etcd cluster, the ordered actions. A member is
 * held by one node only (volume_resolve_members): a volume naming a member held through another volume
 * is ineligible, and one this node holds that way is released when it is not mounted. Selection: a
 * volume this node holds wins (at most one per etcd cluster: a second one held is ignored with a note);
 * otherwise the free eligible volumes of that etcd cluster ordered by (member, what the provider knows
 * of their contents: data, unknown, blank; id) and the first is claimed. Deterministic; exclusivity
 * between nodes comes from the compare-and-set claim (the loser re-reads and plans again). -ENOMEM only. */
int volumes_plan(const VolumesInput *in, VolumesPlan *ret);

/* True when every selection is READY. */
bool volumes_plan_converged(const VolumesPlan *p);
