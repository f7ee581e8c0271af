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

/* In the node's kubelet directory: the init system's KUBELET_ARGS, and the lock the bootstrap and the
 * managed kubelet take (spec.kubelet.selfHosted; docs/kubelet-handoff.md). */
#define KUBELET_ENV_FILE  "kubelet.env"
#define KUBELET_LOCK_FILE "kubelet.lock"
/* Each node's report of its holder on its Node ("bootstrap", "managed", "none"), and the taint the masters
 * keep on a Node exactly while the managed kubelet does not hold it. */
#define KUBELET_HOLDER_ANNOTATION "protokube.io/kubelet-holder"
#define KUBELET_BOOTSTRAP_TAINT   "protokube.io/bootstrap-kubelet"
/* The machine's own flags for its kubelet (KUBELET_EXTRA_ARGS, optional): the bootstrap kubelet's unit
 * reads the file, the managed kubelet's pod sources it from the directory (both kubelets run with them). */
#define KUBELET_DEFAULTS_DIR  "/etc/default"
#define KUBELET_DEFAULTS_FILE KUBELET_DEFAULTS_DIR "/kubelet"
/* Where the kubelet's image and the bootstrap kubelet's unit have the binary (kops' path). */
#define KUBELET_IMAGE_BINARY "/usr/local/bin/kubelet"

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

/* With spec.kubelet.selfHosted, the node's flags both kubelets need, appended to *flags: the lock
 * (--lock-file=lock_path --exit-on-lock-contention: the bootstrap kubelet exits when the managed one opens
 * it), and the node's settings that are fields of the file (--pod-manifest-path, --client-ca-file, from
 * node_spec, the node's copy): the managed kubelet reads the cluster's file from its ConfigMap, and a
 * flag outranks the file. Nothing without selfHosted. */
int kubelet_handoff_flags(const ClusterSpec *node_spec, const char *lock_path, char ***flags);
