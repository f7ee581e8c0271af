/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The builders of the control-plane static pods: spec -> flags -> pod model. Each *_flags() gives the sorted
 * flags exactly as they end up in the pod's command (caller frees with strv_free); each *_pod_build() the
 * pod (caller frees with pod_free). Defaults from the field tables and from the rest of the spec (etcd
 * servers, images, issuer, cluster CIDR ...) are applied to a scratch copy, never to the spec. */

#include "shared/pod.h"
#include "spec/spec.h"

int kube_apiserver_flags(const ClusterSpec *spec, char ***ret);
int kube_apiserver_pod_build(const ClusterSpec *spec, Pod **ret);

int kube_controller_manager_flags(const ClusterSpec *spec, char ***ret);
int kube_controller_manager_pod_build(const ClusterSpec *spec, Pod **ret);

int kube_scheduler_flags(const ClusterSpec *spec, char ***ret);
int kube_scheduler_pod_build(const ClusterSpec *spec, Pod **ret);

/* kube-proxy is optional (kubeProxy.enabled: false): *ret = NULL then, and 0 is returned. */
int kube_proxy_flags(const ClusterSpec *spec, char ***ret);
int kube_proxy_pod_build(const ClusterSpec *spec, Pod **ret);
bool kube_proxy_enabled(const ClusterSpec *spec);
