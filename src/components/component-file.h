/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The configuration files of the components that read one (kubelet, kube-proxy, kube-scheduler), rendered
 * from the same field tables and the same effective config as their flags: a row whose file field the chosen
 * version's file has goes into the file (field_in_file()), every other row stays a flag
 * (flags_build_beside_file()). A ComponentFileDef says the file's kind, its apiVersion for each Kubernetes
 * minor (a minor with none: the component keeps its flags), and where it lives on the node. */

#include "spec/field.h"

typedef struct ComponentFileVersion {
        KubeGate k8s;            /* the minors that read this apiVersion */
        const char *api_version; /* "kubeproxy.config.k8s.io/v1alpha1"; NULL ends a table */
} ComponentFileVersion;

typedef struct ComponentFileDef {
        const char *kind; /* "KubeProxyConfiguration" */
        const ComponentFileVersion *versions;
        /* Its directory under the node's configuration root (component_file_path()): the component reads
         * <root>/<dir>/config.yaml; its pod mounts the directory (protokube replaces the file by a rename,
         * which a bind mount of the file itself would never see). */
        const char *dir;
        const char *out_name; /* its name in `protokube render --out DIR`: "kube-proxy.yaml" */
} ComponentFileDef;

/* Where the components' configuration files live on a node unless it is told otherwise (--config-dir):
 * kubeadm's and kops' /var/lib/kube-proxy/config.yaml, /var/lib/kube-scheduler/config.yaml. */
#define COMPONENT_CONFIG_ROOT "/var/lib"
#define COMPONENT_CONFIG_NAME "config.yaml"

/* "<root>/<d->dir>/config.yaml" (root NULL: COMPONENT_CONFIG_ROOT). NULL: out of memory. Caller frees. */
char *component_file_path(const ComponentFileDef *d, const char *root);

/* The apiVersion of the file for Kubernetes 1.<minor>; NULL when protokube renders none for that minor. */
const char *component_file_api_version(const ComponentFileDef *d, unsigned minor);

/* The file for config (described by fields) at 1.<minor>, as text ending in a newline: apiVersion, kind,
 * and every row in the file at that minor whose value is set (the flag builder's rules: an unset, empty or
 * empty_value setting is left out). -EOPNOTSUPP when the minor has no file; -EINVAL for a value the file
 * cannot take (a feature gate that is not a bool). Caller frees. */
int component_file_render(const ComponentFileDef *d, const Field *fields, const void *config, unsigned minor,
                          char **ret);
