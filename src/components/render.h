/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* All static pods of a master, as manifest texts: kube-apiserver, kube-controller-manager, kube-scheduler,
 * kube-proxy (unless disabled), then one etcd pod per given member assignment. */

#include <stddef.h>

#include "components/etcd.h"

typedef struct RenderedManifest {
        char *file_name; /* "kube-apiserver.manifest", "etcd.manifest", "etcd-events.manifest" */
        char *text;
} RenderedManifest;

typedef struct RenderedManifests {
        RenderedManifest *items;
        size_t n;
} RenderedManifests;

void rendered_manifests_done(RenderedManifests *m);

/* On failure *ret_failed (if given) names the component that failed (static string). */
int control_plane_render(const ClusterSpec *spec, const EtcdMemberAssignment *etcd, size_t n_etcd,
                         RenderedManifests *ret, const char **ret_failed);
