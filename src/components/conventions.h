/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The names, paths and ports a kops (or kubeadm) master expects, kept in one place so that a node
 * provisioned for kops keeps working and so that the whole set can move to a model room later: nothing
 * here depends on more than the cluster spec. docs/components.md lists them ("What every static pod has",
 * "etcd (kops naming)"). */

#include "spec/spec.h"

/* Every static pod */
#define STATIC_POD_NAMESPACE      "kube-system"
#define STATIC_POD_APP_LABEL      "k8s-app"
#define STATIC_POD_TOLERATION     "CriticalAddonsOnly" /* nodes tainted for add-ons still run them */
#define PRIORITY_CLUSTER_CRITICAL "system-cluster-critical"
#define PRIORITY_NODE_CRITICAL    "system-node-critical"
#define MANIFEST_SUFFIX           ".manifest"
#define HOST_CA_CERTS_DIR         "/etc/ssl/certs"
#define COMPONENT_BINARY_DIR      "/usr/local/bin/"
#define COMPONENT_LOG_DIR         "/var/log/"
#define GO_RUNNER                 "/go-runner"
#define HEALTH_PROBE_HOST         "127.0.0.1"

/* Images: registry.k8s.io/<component>:v<kubernetesVersion>; etcd's when the cluster names none. */
#define CONTROL_PLANE_IMAGE_REGISTRY "registry.k8s.io"
#define ETCD_DEFAULT_IMAGE           "registry.k8s.io/etcd:3.5.16-0"

/* The control-plane components */
#define KUBE_APISERVER          "kube-apiserver"
#define KUBE_CONTROLLER_MANAGER "kube-controller-manager"
#define KUBE_SCHEDULER          "kube-scheduler"
#define KUBE_PROXY              "kube-proxy"
#define KUBE_PROXY_HEALTHZ_PORT 10256 /* when healthzBindAddress is unset */

/* etcd: "main" is kops' "etcd", any other cluster X is "etcd-X" (pod etcd-server-X, etcd-X.manifest ...) */
#define ETCD_MAIN_CLUSTER       "main"
#define ETCD_EVENTS_CLUSTER     "events"
#define ETCD_BINARY             "etcd"
#define ETCD_POD_NAME           "etcd-server"
#define ETCD_KOPS_NAME          "etcd"
#define ETCD_DATA_DIR           "/var/etcd/data"
#define ETCD_TOKEN_PREFIX       "etcd-cluster-token-"
#define ETCD_MAIN_CLIENT_PORT   4001
#define ETCD_MAIN_PEER_PORT     2380
#define ETCD_EVENTS_CLIENT_PORT 4002
#define ETCD_EVENTS_PEER_PORT   2381
#define ETCD_METRICS_PORT_SHIFT 4080 /* metrics on client port + 4080: 8081 main, 8082 events */

/* dns.internalSuffix, else internal.<metadata.name>, without a trailing dot (it ends up inside URLs).
 * Caller frees. */
int conventions_internal_suffix(const ClusterSpec *spec, char **ret);

/* override if set, else registry.k8s.io/<component>:v<kubernetesVersion>. Caller frees. */
int conventions_component_image(const ClusterSpec *spec, const char *override, const char *component,
                                char **ret);
