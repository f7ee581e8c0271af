/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* All static pods of a master, as manifest texts: kube-apiserver, kube-controller-manager, kube-scheduler,
 * kube-proxy (unless disabled), then one etcd pod per given member assignment; and the configuration files
 * the pods read (kube-scheduler's, kube-proxy's: control-plane.h, COMPONENT_FORM_FILE). */

#include <stddef.h>

#include "components/control-plane.h"
#include "components/etcd.h"

typedef struct RenderedManifest {
        char *file_name; /* "kube-apiserver.manifest", "etcd.manifest", "etcd-events.manifest" */
        char *text;
} RenderedManifest;

/* A configuration file a manifest names (--config) and mounts the directory of. */
typedef struct RenderedFile {
        const char *component; /* static: the component that reads it ("kube-proxy", "kubelet") */
        char *path;            /* where the component reads it on the node */
        const char *file_name; /* static: its name in `protokube render --out DIR` ("kube-proxy.yaml") */
        char *text;
} RenderedFile;

typedef struct RenderedManifests {
        RenderedManifest *items;
        size_t n;
        RenderedFile *files; /* in component order */
        size_t n_files;
} RenderedManifests;

void rendered_manifests_done(RenderedManifests *m);

/* pod_annotations (NULL-terminated key, value, ...; may be NULL) go into metadata.annotations of every pod
 * but etcd's: kubelet restarts a static pod whose manifest changes, so an annotation that changes with the
 * certificates (protokube.io/certificates: <digest>) restarts the components that read their files only
 * at start; etcd reads its files on every handshake and keeps running. A key that is not a Kubernetes
 * qualified name, a key without a value, a duplicate key or more than 256 KiB in all is -EINVAL.
 * On failure *ret_failed (if given) names the component that failed, or "pod annotations" (static
 * strings). */
typedef struct ControlPlaneParams {
        const EtcdMemberAssignment *etcd;
        size_t n_etcd;
        char *const *pod_annotations;
} ControlPlaneParams;

/* kube-scheduler and kube-proxy read the configuration files in ret->files (COMPONENT_FORM_FILE), where
 * the version has one, at the paths of the spec's node_config_dir. */
int control_plane_render(const ClusterSpec *spec, const ControlPlaneParams *p, RenderedManifests *ret,
                         const char **ret_failed);

/* kube-proxy's static pod alone, for a node outside the control plane (a worker: its copy of the spec names
 * the node's own kubeconfig, name and configuration directory): its manifest's file name
 * ("kube-proxy.manifest") and text, and the configuration file it reads (COMPONENT_FORM_FILE). Disabled
 * (kubeProxy.enabled: false): all NULL, and 0. */
int kube_proxy_manifest_render(const ClusterSpec *spec, char **ret_file_name, char **ret_text,
                               ComponentConfigFile *ret_file);

/* The pod_annotations rules above: 0 or -EINVAL. */
int render_check_pod_annotations(char *const *pod_annotations);
