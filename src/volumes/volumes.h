/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The volume part of one pass (ARCHITECTURE.md): observe (provider + mountinfo + manifests on disk),
 * plan (volumes-plan.h, pure), apply (each action idempotent, each wait bounded). Library code: it
 * never logs, it reports through cfg->report and the verbs/daemon turn that into log lines. */

#include "cloud/volume.h"
#include "model/cluster-view.h"
#include "model/conventions.h" /* VOLUME_MANIFEST_SUBDIR, the mount and manifest names */
#include "volumes/volumes-plan.h"

/* level is a LogLevel; error 0 or a negative errno / PK_E* code. */
typedef void (*VolumesReportFunc)(void *userdata, int level, int error, const char *message);

typedef struct VolumesPassConfig {
        const char *cluster;        /* KubernetesCluster */
        char *const *etcd_clusters; /* from the spec */
        const char *mount_root;     /* volumes mount at <mount_root>/master-<id> */
        const char *manifest_dir;   /* kubelet's static pod dir: the links go here */
        usec_t device_timeout;      /* wait for an attached device; 0 = 30s */
        usec_t child_timeout;       /* fsck, mkfs; 0 = 10min */
        VolumesReportFunc report;   /* may be NULL */
        void *report_userdata;
        /* Called as each action starts ("fsck vol-x", "mkfs.ext4 vol-x"): what the pass is doing now, for
         * /healthz. May be NULL; shares report_userdata. */
        void (*progress)(void *userdata, const char *step);
} VolumesPassConfig;

/* Everything a pass saw: the node, the volumes, per volume what is on this node. */
typedef struct VolumesObservation {
        NodeIdentity node;
        VolumeList volumes;
        VolumeObserved *observed; /* parallel to volumes.items */
} VolumesObservation;

void volumes_observation_done(VolumesObservation *o);

/* On failure *ret_error (may be NULL) may get the provider's words (caller frees). */
int volumes_observe(VolumeProvider *p, const VolumesPassConfig *cfg, VolumesObservation *ret,
                    char **ret_error);
/* observation -> the pure planner's input (pointers into o and cfg). */
void volumes_input(const VolumesPassConfig *cfg, const VolumesObservation *o, VolumesInput *ret);

/* Which step a failed volume action was in (the report counts errors by stage). */
typedef enum VolumesErrorKind {
        VOLUMES_ERROR_CLAIM, /* claim, attach, release */
        VOLUMES_ERROR_DEVICE,
        VOLUMES_ERROR_FSCK,
        VOLUMES_ERROR_FORMAT,
        VOLUMES_ERROR_MOUNT,
        VOLUMES_ERROR_MANIFEST,
        _VOLUMES_ERROR_MAX,
} VolumesErrorKind;

typedef struct VolumesPassResult {
        unsigned n_ready;            /* etcd clusters whose volume is mounted with its manifest in place */
        unsigned n_waiting;          /* etcd clusters with no volume for this node yet */
        unsigned n_errors;           /* volumes stuck on an error this pass */
        unsigned n_changes;          /* actions that ran */
        unsigned n_member_conflicts; /* volumes naming a member that another volume holds */
        unsigned errors[_VOLUMES_ERROR_MAX]; /* failed actions by step */
} VolumesPassResult;

/* Apply: runs a plan's actions in three phases, so that the pass can publish DNS before any manifest (a
 * member's name points here before kubelet can start its etcd: docs/etcd-dns.md). CLAIMS: claim, attach,
 * release; DEVICES: wait for the device, fsck, mount (formatting only a proven-blank device); MANIFESTS:
 * write the etcd manifests (the texts the pass rendered, one per selection) on the volumes and link them.
 * Every claim comes first, so a lost one is known before any device work, and the attachments proceed
 * together. Errors of one volume do not stop the others; they are reported and counted. */
typedef enum VolumesPhase {
        VOLUMES_PHASE_CLAIMS,
        VOLUMES_PHASE_DEVICES,
        VOLUMES_PHASE_MANIFESTS
} VolumesPhase;
typedef struct VolumesApply VolumesApply;
int volumes_apply_new(VolumeProvider *p, const VolumesPassConfig *cfg, const VolumesInput *in,
                      const VolumesPlan *plan, VolumesApply **ret);
VolumesApply *volumes_apply_free(VolumesApply *a);
DEFINE_TRIVIAL_CLEANUP_FUNC(VolumesApply *, volumes_apply_free)
/* The phase's actions of the selections where only[k] is true (NULL: of every selection; a release, which
 * belongs to none, runs only then). 1 when a claim was lost (observe and plan again), 0 when the phase
 * ran, -ENOMEM or -ECANCELED (a stop was requested; the node is consistent between two actions). */
int volumes_apply_run(VolumesApply *a, VolumesPhase phase, const bool *only, char *const *etcd_texts);
/* Whether the phase has actions for selection k. */
bool volumes_apply_has(const VolumesApply *a, VolumesPhase phase, size_t k);
/* Reports the plan's notes and counts the outcome; interrupted: not every action ran. */
void volumes_apply_finish(VolumesApply *a, bool interrupted, VolumesPassResult *ret);

/* <mount_root>/master-<id>, and the manifest paths of an etcd cluster's member (caller frees). */
char *volume_mount_path(const char *mount_root, const char *id);
/* "etcd.manifest" for main, "etcd-<cluster>.manifest" otherwise. */
char *volume_etcd_manifest_name(const char *etcd_cluster);
char *volume_manifest_path(const char *mount_path, const char *etcd_cluster);
/* Opens <mount_path>/k8s.io/manifests without following any symlink on the volume (basic/beneath.h);
 * with create, missing directories are made. Returns the fd. */
int volume_manifest_dir_open(const char *mount_path, bool create);
char *volume_manifest_link(const char *manifest_dir, const char *etcd_cluster);
/* The etcd manifest on the volume mounted at mount_path (caller frees), NULL when absent; anything but a
 * regular file there reads as absent (never followed). -ENOMEM only. */
int volume_manifest_read(const char *mount_path, const char *etcd_cluster, char **ret);

/* The masters and member holders (every zone), from the observation with this pass's planned claims and
 * releases folded in (plan NULL: as observed): a master is a node holding an eligible etcd-main volume,
 * with the IPs recorded in the attachment (this node's own for its claims). Pure. */
int volumes_view(const VolumesInput *in, const VolumesPlan *plan, ClusterView **ret);
/* The provider's volumes of cluster in every zone, and nothing else: no node identity, no device, no mount,
 * no claim. What a node that holds no volume needs to learn the masters (volumes_view() over it). */
int volumes_list(VolumeProvider *p, const char *cluster, VolumeList *ret, char **ret_error);
/* The same as the provider lists it now, without a pass (`protokube dns`). */
int volumes_list_view(VolumeProvider *p, const char *cluster, ClusterView **ret, char **ret_error);
