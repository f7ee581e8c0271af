/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What every control-plane static pod shares (kops' and kubeadm's conventions): namespace kube-system,
 * hostNetwork, label k8s-app=<name>, a priority class, the CriticalAddonsOnly toleration. */

#include <stdbool.h>

#include "shared/pod.h"
#include "spec/spec.h"

#define STATIC_POD_NAMESPACE         "kube-system"
#define PRIORITY_CLUSTER_CRITICAL    "system-cluster-critical"
#define PRIORITY_NODE_CRITICAL       "system-node-critical"
#define CONTROL_PLANE_IMAGE_REGISTRY "registry.k8s.io"
#define ETCD_DEFAULT_IMAGE           "registry.k8s.io/etcd:3.5.16-0"

/* A pod named name in kube-system with one container of the same name running image. */
int static_pod_new(const char *name, const char *image, const char *priority_class, Pod **ret,
                   PodContainer **ret_container);

/* override if set, else registry.k8s.io/<component>:v<kubernetesVersion>. Caller frees. */
int component_image(const ClusterSpec *spec, const char *override, const char *component, char **ret);

/* dns.internalSuffix, else internal.<metadata.name>. Caller frees. */
int spec_internal_suffix(const ClusterSpec *spec, char **ret);

/* The etcd cluster called name, or NULL. */
const EtcdClusterSpec *spec_find_etcd_cluster(const ClusterSpec *spec, const char *name);
/* The cluster's client and peer ports with kops' defaults (main 4001/2380, events 4002/2381); -EINVAL for
 * another cluster without explicit ports. */
int etcd_cluster_ports(const EtcdClusterSpec *e, int *ret_client, int *ret_peer);

/* RFC 1123 label: [a-z0-9]([a-z0-9-]*[a-z0-9])?, at most 63 characters. */
bool dns_label_is_valid(const char *s);

/* resources.requests; NULL values are left out. */
int container_set_requests(PodContainer *c, const char *cpu, const char *memory);
/* command = prefix (NULL-terminated) followed by a copy of args. */
int container_set_command(PodContainer *c, const char *const *prefix, char *const *args);

/* command = /go-runner --log-file=/var/log/<name>.log --also-stdout /usr/local/bin/<name> args...: the
 * Kubernetes images' go-runner writes the log file kops users expect (klog's --log-file is gone since
 * 1.26) and still lets `kubectl logs` work; the log file is mounted from the host. */
int container_set_go_runner_command(Pod *pod, PodContainer *c, const char *name, char *const *args);

/* Mounts, read-only, the directories holding the given files (absolute paths; NULL entries are skipped,
 * relative ones rejected): each directory once, none below another one mounted. */
int pod_mount_file_dirs(Pod *pod, PodContainer *c, const char *const *files, size_t n_files);

/* The ca-certificates bundle of the host (/etc/ssl/certs), read-only, as kubeadm mounts it. */
int pod_mount_ca_certs(Pod *pod, PodContainer *c);

/* Standard probes of the control-plane components (kubeadm's timings). */
int container_set_health_probes(PodContainer *c, const char *scheme, int port, const char *live_path,
                                const char *ready_path);

/* What every kube-* control-plane pod shares: the image (the spec's, else the release's), the static pod,
 * the go-runner command with the component's flags, cpu and memory requests. Probes, ports and mounts
 * differ per component and are added by the caller. */
typedef struct ComponentPod {
        const char *name;           /* "kube-scheduler" */
        const char *image_override; /* NULL: registry.k8s.io/<name>:v<kubernetesVersion> */
        const char *priority_class;
        char *const *flags;
        const char *cpu_request;
        const char *memory_request; /* may be NULL */
} ComponentPod;

int component_pod_new(const ClusterSpec *spec, const ComponentPod *c, Pod **ret_pod, PodContainer **ret_ct);
