/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Validation of the cluster spec: per-field checks (the `validate` callbacks of the field tables) and the
 * cross-field rules and conditional defaults that need the whole spec (spec_check_cluster). */

#include <stdbool.h>

#include "shared/yaml-tree.h"
#include "spec/field-load.h"
#include "spec/spec.h"

/* Sets *ret_message (if given) to the formatted message and returns -EINVAL: a validator's failure. */
int spec_check_fail(char **ret_message, const char *format, ...) _printf_(2, 3);

/* Field validators: value points at the field's storage (char ** for strings). On failure they return
 * -EINVAL and a message (caller frees). */
int spec_check_api_version(const void *value, char **ret_message);
int spec_check_kind(const void *value, char **ret_message);
int spec_check_dns_name(const void *value, char **ret_message);
int spec_check_dns_label(const void *value, char **ret_message);
int spec_check_zone(const void *value, char **ret_message);
int spec_check_absolute_path(const void *value, char **ret_message);
/* A network interface's name: 1 to 15 letters, digits and . _ - (the kernel's IFNAMSIZ, and nothing a
 * CNI configuration or a shell would read otherwise). */
int spec_check_ifname(const void *value, char **ret_message);
int spec_check_server(const void *value, char **ret_message);
int spec_check_timeout(const void *value, char **ret_message);
int spec_check_image(const void *value, char **ret_message);
int spec_check_version(const void *value, char **ret_message);
int spec_check_etcd_version(const void *value, char **ret_message);
/* spec-pki.c: spec.stateStore's shape, spec.pki.dir, a CA's or certificate's lifetime (1h to 100 years) */
int spec_check_state_store(const void *value, char **ret_message);
int spec_check_pki_dir(const void *value, char **ret_message);
int spec_check_lifetime(const void *value, char **ret_message);
int spec_check_kubelet_lifetime(const void *value, char **ret_message);

/* Cross-field rules and conditional defaults (internalSuffix, hosts file, etcd ports); errors are placed at
 * the nodes of root they concern. Returns -ENOMEM, else 0. */
int spec_check_cluster(ClusterSpec *s, const YamlNode *root, SpecErrors *errs);
/* spec-pki.c: spec.pki's cross-field rules and, when spec.stateStore is set, the pki layout's paths as the
 * defaults of every certificate, key and kubeconfig key (and etcd tlsDir) the user left unset. Runs after
 * the etcd checks. Returns -ENOMEM, else 0. */
int spec_check_pki(ClusterSpec *s, const YamlNode *root, SpecErrors *errs);

/* spec-gates.c: every key set in the spec whose flag, or one of whose values (feature gates, admission
 * plugins, proxy mode), spec.kubernetesVersion does not accept. Runs after the version's own validator.
 * Returns -ENOMEM, else 0. */
int spec_check_kube_gates(const ClusterSpec *s, const YamlNode *root, SpecErrors *errs);

/* The top-level field table of ClusterSpec (for docs and tests). */
const Field *cluster_spec_fields(void);
