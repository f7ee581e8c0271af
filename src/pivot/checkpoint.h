/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A master's checkpoint of its self-hosted control-plane pods (docs/pivot.md, "The checkpoint"): what brings
 * the API back when every master lost power at once. While the self-hosted control plane runs, protokube
 * keeps, for each self-hosted pod on its node, the pod as a static pod it could hand to kubelet: the pod's
 * spec as the API runs it (so an upgrade made through the API is what comes back after a reboot), with every
 * Secret and ConfigMap volume turned into a host directory under the checkpoint directory, where protokube
 * materialises their data (Secrets 0600). When the API is unreachable at boot and those pods are not
 * running, the checkpoint manifests go into kubelet's manifest directory; once the API and the self-hosted
 * pods are back, they are removed again.
 *
 * This file is the pure part: the transformation of an API pod into the checkpoint's static pod, and the
 * list of the objects whose data must be materialised. */

#include <jansson.h>
#include <stddef.h>

#define CHECKPOINT_LABEL       "protokube.io/checkpoint"    /* "true" on every checkpoint pod */
#define CHECKPOINT_OF          "protokube.io/checkpoint-of" /* the self-hosted pod's owner: "DaemonSet/x" */
#define CHECKPOINT_SA_MOUNT    "/var/run/secrets/kubernetes.io/serviceaccount"
#define CHECKPOINT_VOLUMES_MAX 64

typedef enum CheckpointSource {
        CHECKPOINT_SECRET,
        CHECKPOINT_CONFIG_MAP,
} CheckpointSource;

/* One object whose data the checkpoint needs on the node, and where: dir is
 * "<checkpoint_dir>/<secrets|configmaps>/<name>". */
typedef struct CheckpointVolume {
        CheckpointSource source;
        char *name; /* the Secret's or ConfigMap's name (same namespace as the pod) */
        char *dir;
} CheckpointVolume;

/* The pod's controlling ownerReference, as the pod names it (the API checks only that the name is not
 * empty: checkpoint_pod_from_api() has checked it as a DaemonSet's or ReplicaSet's name). */
typedef struct CheckpointOwner {
        char *kind; /* "DaemonSet" or "ReplicaSet" */
        char *name;
        char *uid; /* NULL when the reference has none */
} CheckpointOwner;

typedef struct CheckpointPod {
        char *name; /* the static pod's name: "<workload's name>-checkpoint" (kubelet appends "-<node>") */
        char *workload; /* "DaemonSet/x" or "Deployment/x" (the ReplicaSet's name without its hash) */
        CheckpointOwner owner;
        json_t *manifest; /* the static pod */
        CheckpointVolume *volumes;
        size_t n_volumes;
} CheckpointPod;

void checkpoint_pod_done(CheckpointPod *p);

/* From a pod as the API returns it (GET .../pods/NAME): the static pod. Only a pod owned by a DaemonSet or
 * a ReplicaSet (a Deployment's) can be checkpointed; everything that ties a pod to the API or to the
 * scheduler goes (status, uid, nodeName, owner references, service account, the service-account token
 * volume, tolerations, affinity), Secret and ConfigMap volumes become host directories under
 * checkpoint_dir. Every name that becomes a path (the pod's, its owner's, a Secret's or ConfigMap's) is
 * checked by Kubernetes' rule for its kind (kube/kube-name.h). PK_EMALFORMED with a message naming the
 * field and the value when the pod is not one we can take. Whether the owner is one of protokube's own
 * workloads is the caller's to check (it needs the API): p->owner says which it names. */
int checkpoint_pod_from_api(const json_t *pod, const char *checkpoint_dir, CheckpointPod *ret,
                            char **ret_error);
