/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The volume part of one pass (ARCHITECTURE.md): observe (provider + mountinfo + manifests on disk),
 * plan (volumes-plan.h, pure), apply (each action idempotent, each wait bounded). Library code: it
 * never logs, it reports through cfg->report and the verbs/daemon turn that into log lines. */

#include "cloud/volume.h"
#include "shared/cluster-view.h"
#include "volumes/volumes-plan.h"

/* Renders the etcd manifest for one member whose volume is mounted at mount_path (the components
 * layer: etcd_manifest_render). Caller frees *ret_yaml. */
typedef int (*VolumesRenderFunc)(void *userdata, const char *etcd_cluster, const char *member,
                                 char *const *members, const char *mount_path, char **ret_yaml);
/* level is a LogLevel; error 0 or a negative errno / PK_E* code. */
typedef void (*VolumesReportFunc)(void *userdata, int level, int error, const char *message);

typedef struct VolumesPassConfig {
        const char *cluster;        /* KubernetesCluster */
        char *const *etcd_clusters; /* from the spec */
        const char *mount_root;     /* volumes mount at <mount_root>/master-<id> */
        const char *manifest_dir;   /* kubelet's static pod dir: the links go here */
        usec_t device_timeout;      /* wait for an attached device; 0 = 30s */
        usec_t child_timeout;       /* fsck, mkfs; 0 = 10min */
        VolumesRenderFunc render;   /* NULL: no manifests (step 7 skipped) */
        void *render_userdata;
        VolumesReportFunc report; /* may be NULL */
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

int volumes_observe(VolumeProvider *p, const VolumesPassConfig *cfg, VolumesObservation *ret);
/* observation -> the pure planner's input (pointers into o and cfg). */
void volumes_pass_input(const VolumesPassConfig *cfg, const VolumesObservation *o, PassInput *ret);

typedef struct VolumesPassResult {
        unsigned n_ready;            /* etcd clusters whose volume is mounted with its manifest in place */
        unsigned n_waiting;          /* etcd clusters with no volume for this node yet */
        unsigned n_errors;           /* volumes stuck on an error this pass */
        unsigned n_changes;          /* actions that ran */
        unsigned n_member_conflicts; /* volumes naming a member that another volume holds */
} VolumesPassResult;

/* One pass: observe, plan, apply; a lost claim re-reads and plans again (bounded). Errors of one volume
 * do not stop the others; they are reported and counted. Returns < 0 only when the pass could not run
 * at all (provider unreachable, OOM). */
int volumes_pass(VolumeProvider *p, const VolumesPassConfig *cfg, VolumesPassResult *ret);

/* <mount_root>/master-<id>, and the manifest paths of an etcd cluster's member (caller frees). */
char *volume_mount_path(const char *mount_root, const char *id);
/* "etcd.manifest" for main, "etcd-<cluster>.manifest" otherwise. */
char *volume_etcd_manifest_name(const char *etcd_cluster);
char *volume_manifest_path(const char *mount_path, const char *etcd_cluster);
#define VOLUME_MANIFEST_SUBDIR "k8s.io/manifests"
/* Opens <mount_path>/k8s.io/manifests without following any symlink on the volume (basic/beneath.h);
 * with create, missing directories are made. Returns the fd. */
int volume_manifest_dir_open(const char *mount_path, bool create);
char *volume_manifest_link(const char *manifest_dir, const char *etcd_cluster);

/* The masters and member holders as the provider sees them (every zone): a master is a node holding an
 * eligible etcd-main volume, with the IPs recorded in the attachment. */
int volumes_observe_view(VolumeProvider *p, const char *cluster, ClusterView **ret);
