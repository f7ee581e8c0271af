/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The self-hosted control plane's assets (docs/self-hosted.md): the objects the cluster runs its
 * own control plane from once protokube hands it over, built from the same component table, flags and pods
 * as the static pods (control-plane.h):
 *   - RBAC: kube-proxy's ServiceAccount and its ClusterRoleBinding to system:node-proxier;
 *   - one Secret per consumer directory of the pki layout a component mounts (model/pki-layout.h), with the
 *     files its flags and kubeconfig name, read from the node's pki dir now, mounted at that directory's
 *     path: flags and kubeconfigs stay byte for byte the static pods';
 *   - one ConfigMap per other directory of configuration files (the scheduler's config, an audit policy);
 *   - DaemonSets: kube-apiserver on the masters, kube-proxy on every node;
 *   - Deployments: kube-controller-manager and kube-scheduler, one replica per master, never two on a node;
 *   - with spec.kubelet.selfHosted, the managed kubelet: its ConfigMap and a DaemonSet on every node
 *     (docs/kubelet-handoff.md).
 * etcd stays a static pod on its volume and is not among them. */

#include <stdbool.h>
#include <stddef.h>

#include "spec/spec.h"

/* The self-hosted kube-apiserver runs on the masters whose Node carries this label ="true": the pivot sets
 * it on one master at a time, once that master is out of the API's names (docs/pivot.md, "One apiserver
 * starting at a time"), so that no client is sent to an apiserver that binds its port before it serves. */
#define SELF_HOSTED_APISERVER_LABEL "protokube.io/self-hosted-apiserver"

/* A ConfigMap's annotation "<key>=<other key>[,...]": a checkpoint of a pod that mounts it reads <other
 * key>'s value as the file <key> (kube-scheduler 1.20 to 1.22: the checkpoint's own ports beside the pod it
 * stands in for; docs/pivot.md, "The checkpoint"). The other keys are SELF_HOSTED_CHECKPOINT_PREFIX<key>. */
#define SELF_HOSTED_CHECKPOINT_DATA   "protokube.io/checkpoint-data"
#define SELF_HOSTED_CHECKPOINT_PREFIX "checkpoint."

typedef enum SelfHostedKind {
        /* in the order they are applied: what a pod refers to exists before the pod */
        SELF_HOSTED_SERVICE_ACCOUNT,
        SELF_HOSTED_CLUSTER_ROLE_BINDING,
        SELF_HOSTED_SECRET,
        SELF_HOSTED_CONFIG_MAP,
        SELF_HOSTED_DAEMON_SET,
        SELF_HOSTED_DEPLOYMENT,
        _SELF_HOSTED_KIND_MAX,
        _SELF_HOSTED_KIND_INVALID = -EINVAL,
} SelfHostedKind;

typedef struct SelfHostedObject {
        SelfHostedKind kind;
        const char *api_version; /* static: "v1", "apps/v1", "rbac.authorization.k8s.io/v1" */
        const char *kind_name;   /* static: "Secret", "DaemonSet" ... */
        char *namespace;         /* NULL: cluster-scoped */
        char *name;
        char *file_name; /* "20-secret-kube-apiserver-pki.yaml": the order above, then the name */
        char *text;      /* the object as YAML (server-side apply takes application/apply-patch+yaml) */
        size_t text_len;
        bool secret; /* text holds key material: erased when freed; written 0600, never printed */
        /* A workload whose pod template carries the certificates' digest (the control plane's): a renewal
         * rolls it. The managed kubelet's does not: it reads no Secret, and is the cluster's to change. */
        bool certificates;
} SelfHostedObject;

typedef struct SelfHostedAssets {
        SelfHostedObject *items; /* in SelfHostedKind order, then by name */
        size_t n;
} SelfHostedAssets;

void self_hosted_assets_done(SelfHostedAssets *a);

typedef struct SelfHostedParams {
        /* The masters: the Deployments' replicas. The same source as the static pods: the members of the
         * main etcd cluster (its volume tag, main=a/a,b,c), or the pass's cluster view. */
        unsigned n_masters;
        /* key, value, ..., NULL (may be NULL): the pod templates' annotations, as control_plane_render()
         * gives the static pods (protokube.io/certificates: <digest>: a renewal rolls the pods). */
        char *const *pod_annotations;
        /* The node's kubelet directory (its kubelet.env, the lock, its credentials; NULL:
         * KUBELET_DIR_DEFAULT) and static pods' directory (NULL: spec.kubelet.staticPodPath): the managed
         * kubelet's host paths (spec.kubelet.selfHosted). The same on every node of a real cluster. */
        const char *kubelet_dir;
        const char *manifest_dir;
        /* Where the node mounts its etcd volumes (NULL: not mounted): a master's static pods' manifests are
         * links into them, which the managed kubelet must read as the bootstrap one does. */
        const char *mount_root;
        /* The node's components' configuration directory (NULL: COMPONENT_CONFIG_ROOT): its static pods'
         * hostPath volumes, which the managed kubelet checks in its own view. */
        const char *config_dir;
} SelfHostedParams;

/* "Secret" ...; NULL for an invalid kind. */
const char *self_hosted_kind_to_string(SelfHostedKind k);

/* Every asset for spec. The Secrets' data is read now from the node's pki dir (spec.pki.dir), so the
 * caller needs the rights to read it. Fails, with *ret_error naming what (caller frees), when the spec does
 * not have protokube issue its certificates (no stateStore), when a file is missing or unreadable (the
 * message names the file, the flag key and the Secret), when a credential lies outside the pki layout, or
 * for bad parameters. */
int self_hosted_render(const ClusterSpec *spec, const SelfHostedParams *p, SelfHostedAssets *ret,
                       char **ret_error);
