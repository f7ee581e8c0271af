/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Pod model -> YAML (libyaml's emitter): block style, keys in a fixed order (alphabetical, as kubectl and
 * kops print them), the same bytes for the same pod. Strings a YAML 1.1 or 1.2 reader would take for a bool,
 * null, number or timestamp are quoted, so the kubelet reads every string as a string. */

#include <stdbool.h>

#include "model/config-doc.h"
#include "model/pod.h"
#include "model/workload.h"

/* The manifest text for pod (caller frees), ending in a newline. */
int pod_to_yaml(const Pod *pod, char **ret);

/* The label a workload selects its pods by: the template must carry WORKLOAD_SELECTOR_LABEL=<name>. */
#define WORKLOAD_SELECTOR_LABEL "k8s-app"

/* A DaemonSet or Deployment (apps/v1) with w->pod as its template; -EINVAL unless the template carries
 * the selector label with the workload's name. Caller frees. */
int workload_to_yaml(const Workload *w, char **ret);

/* The name, namespace (NULL: cluster-scoped) and labels (key, value, ...; may be NULL) of a small object. */
typedef struct KubeObjectRef {
        const char *name;
        const char *namespace;
        char *const *labels;
        char *const *annotations; /* key, value, ...; NULL: none (ConfigMaps) */
} KubeObjectRef;

/* A v1 ServiceAccount; a ClusterRoleBinding of cluster_role to one service account; a v1 ConfigMap whose
 * data is key, text, ... (keys sorted in the output). Caller frees. */
int service_account_to_yaml(const KubeObjectRef *sa, char **ret);
int cluster_role_binding_to_yaml(const KubeObjectRef *binding, const char *cluster_role,
                                 const KubeObjectRef *service_account, char **ret);
int config_map_to_yaml(const KubeObjectRef *cm, char *const *data, char **ret);

/* A component's configuration document (model/config-doc.h): block style, every mapping's keys sorted,
 * strings quoted where a reader would take them for something else. Caller frees. */
int config_doc_to_yaml(const ConfigDoc *doc, char **ret);

/* True if s written as a plain scalar would not read back as this string (bool, null, number, timestamp,
 * sexagesimal, merge/value keys, empty). */
bool yaml_plain_is_ambiguous(const char *s);
