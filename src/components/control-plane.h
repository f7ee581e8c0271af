/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The kube-* control-plane components, built from one table of definitions (component-table.c): spec ->
 * flags -> pod model. component_flags() gives the sorted flags exactly as they end up in the pod's command
 * (caller frees with strv_free); component_pod_build() the pod (caller frees with pod_free). Defaults from
 * the field tables and from the rest of the spec (etcd servers, images, issuer, cluster CIDR ...) are
 * applied to a scratch copy, never to the spec. A disabled component (kubeProxy.enabled: false) gives
 * *ret = NULL and 0. etcd has its own builder (etcd.h): its pod depends on the member assignment. */

#include <errno.h>
#include <stdbool.h>

#include "model/pod.h"
#include "spec/spec.h"

typedef enum Component {
        COMPONENT_KUBE_APISERVER,
        COMPONENT_KUBE_CONTROLLER_MANAGER,
        COMPONENT_KUBE_SCHEDULER,
        COMPONENT_KUBE_PROXY,
        _COMPONENT_MAX,
        _COMPONENT_INVALID = -EINVAL,
} Component;

/* "kube-apiserver": the pod, container, binary and image name; NULL for an invalid component. */
const char *component_to_string(Component c);
Component component_from_string(const char *s);

bool component_enabled(Component c, const ClusterSpec *spec);
int component_flags(Component c, const ClusterSpec *spec, char ***ret);
int component_pod_build(Component c, const ClusterSpec *spec, Pod **ret);
/* The files the component's flags name (the row's file keys: certificates, keys, kubeconfigs, configs) of
 * the effective config, as key, path, ... (the YAML key: "tlsCertFile"; a list key repeats per element);
 * the files its pod mounts the directories of. Caller frees with strv_free; disabled: *ret = NULL. */
int component_files(Component c, const ClusterSpec *spec, char ***ret);
