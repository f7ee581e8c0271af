/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The kubelet of every node, masters and workers alike: no pod runs it (the init system does), so what
 * protokube gives it is its configuration file, a KubeletConfiguration rendered from spec.kubelet through
 * the same field table as every component (component-file.h), and the few flags that file has no field for.
 * The settings are the cluster's; a node's own facts go into its copy of the spec (a shallow copy with
 * kubelet.staticPodPath set to the node's manifest directory, as the control plane gets the node's
 * address), or onto the kubelet's command line (its name, address, the container runtime's socket). */

#include "components/component-file.h"
#include "spec/spec.h"

/* Where the kubelet reads its file (kubeadm's path) and `render --out DIR`'s name for it. */
#define KUBELET_CONFIG_PATH "/var/lib/kubelet/config.yaml"

extern const ComponentFileDef kubelet_file;

/* The KubeletConfiguration for spec (kubelet.config.k8s.io/v1beta1 for every supported version): the table's
 * defaults, clusterDomain from spec.clusterDNSDomain. Caller frees. */
int kubelet_config_render(const ClusterSpec *spec, char **ret);

/* The kubelet's flags beside that file, sorted: --config=config_path (NULL: KUBELET_CONFIG_PATH) and those
 * of the settings the file has no field for (--kubeconfig, --v). Caller frees with strv_free. */
int kubelet_flags(const ClusterSpec *spec, const char *config_path, char ***ret);

/* The kubelet.env the init system's unit reads (EnvironmentFile=): KUBELET_ARGS="..." with kubelet_flags()
 * and the node's own (node_flags: "--hostname-override=w1", ...; may be NULL), sorted. A value with a space,
 * quote, backslash, '$', '`' or control character cannot be written there: -EINVAL. Caller frees. */
int kubelet_env_render(const ClusterSpec *spec, const char *config_path, char *const *node_flags,
                       char **ret);
