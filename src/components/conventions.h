/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What a kops (or kubeadm) master expects of its static pods, kept in one place so that a node provisioned
 * for kops keeps working. docs/components.md lists them ("What every static pod has"). etcd's names and
 * ports, which other rooms need too, live in model/conventions.h. */

#include "model/conventions.h"
#include "spec/spec.h"

/* Every static pod */
#define STATIC_POD_NAMESPACE      "kube-system"
#define STATIC_POD_APP_LABEL      "k8s-app"
#define STATIC_POD_TOLERATION     "CriticalAddonsOnly" /* nodes tainted for add-ons still run them */
#define PRIORITY_CLUSTER_CRITICAL "system-cluster-critical"
#define PRIORITY_NODE_CRITICAL    "system-node-critical"
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

/* override if set, else registry.k8s.io/<component>:v<kubernetesVersion>. Caller frees. */
int conventions_component_image(const ClusterSpec *spec, const char *override, const char *component,
                                char **ret);
