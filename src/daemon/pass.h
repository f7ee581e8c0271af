/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* One pass of protokube, wired from the rooms below (ARCHITECTURE.md, "One pass, in one direction"):
 *   1. volumes: discover, claim, attach, fsck, mount (no etcd manifest yet);
 *   2. DNS: publish the desired records from the provider's view (etcd member names, api names);
 *   3. volumes again with the etcd manifests: written on the volume, linked from the manifest dir;
 *   4. the other control-plane manifests, written atomically and only when changed.
 * DNS goes before the etcd manifests so that when kubelet starts etcd its own name already points here
 * (docs/etcd-dns.md). A failing stage is reported and the pass goes on with the others: a DNS outage must
 * not stop etcd's manifest from being kept, and a bad volume must not stop the records. */

#include <stdbool.h>
#include <stdio.h>

#include "daemon/report.h"
#include "spec/spec.h"
#include "volumes/volumes.h"

typedef struct NodeSettings {
        const char *node_name, *zone, *internal_ip, *external_ip; /* NULL = detect */
        const char *machine_id_file;                              /* NULL = /etc/machine-id */
        const char *manifest_dir;
        const char *mount_root;
        const char *pool_dir;
} NodeSettings;

typedef struct Pass {
        char *spec_path;
        ClusterSpec *spec;
        char **etcd_clusters;
        VolumeProvider *provider;
        NodeSettings node; /* node.mount_root points at mount_root */
        char *mount_root;  /* canonical (path_canonicalize), resolved once: mountinfo is compared with it */
        VolumesPassConfig observed_cfg; /* what pass_observe()'s input points into */
} Pass;

/* Loads the spec and opens its volume provider. Spec errors are logged one per line (FILE:LINE:COL). */
int pass_new(const char *spec_path, const NodeSettings *node, Pass **ret);
Pass *pass_free(Pass *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(Pass *, pass_free)

/* SIGHUP: loads the spec again; on any error keeps the old one (and says so). */
int pass_reload(Pass *p);

/* Runs one pass and fills the report. */
void pass_run(Pass *p, PassReport *rep);

/* The volume part of a pass, configured for this node (etcd manifests included), for `plan`. */
VolumesPassConfig pass_volumes_config(Pass *p);

/* Observes the volumes and plans the volume part of a pass without changing anything (`plan`, `volumes`).
 * Logs what failed. On success the caller frees with volumes_observation_done() and pass_plan_done(). */
int pass_observe(Pass *p, VolumesObservation *ret_o, PassInput *ret_in, PassPlan *ret_plan);

/* Opens the volume provider of spec's cloud with the node's settings; logs what failed. */
int pass_open_volume_provider(const ClusterSpec *spec, const NodeSettings *node, VolumeProvider **ret);

/* Prints what the DNS and control-plane stages of a pass would do (after the volume actions), one line
 * each ("dns-replace NAME TYPE ADDRESSES", "write-manifest PATH"), and changes nothing. */
int pass_print_plan_rest(Pass *p, FILE *out);
