/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What the volume verbs (volumes, plan, once) share: the spec, the provider for the spec's cloud, and
 * the pass configuration wired to the etcd builder and the log. Implemented in verb-volumes.c. */

#include "cli/cli.h"
#include "spec/spec.h"
#include "volumes/volumes.h"

typedef struct VolumesCli {
        ClusterSpec *spec;
        char **etcd_clusters;
        VolumeProvider *provider;
        VolumesPassConfig cfg;
} VolumesCli;

/* Loads the spec (-c), opens the provider; logs what failed. Returns an exit code on failure (< 0 never). */
int volumes_cli_open(CliContext *ctx, const char *verb, VolumesCli *ret);
void volumes_cli_done(VolumesCli *v);

/* For cli_observe_view() (observe.c): the ClusterView from the provider of spec's cloud, with the
 * node-local settings of ctx. Logs what failed; returns -errno / PK_E* on failure. */
int volumes_cli_observe_view(CliContext *ctx, const ClusterSpec *spec, ClusterView **ret);
