/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Validation of the cluster spec: per-field checks (the `validate` callbacks of the field tables) and the
 * cross-field rules and conditional defaults that need the whole spec (spec_check_cluster). */

#include <stdbool.h>

#include "shared/yaml-tree.h"
#include "spec/field-load.h"
#include "spec/spec.h"

/* Field validators: value points at the field's storage (char ** for strings). On failure they return
 * -EINVAL and a message (caller frees). */
int spec_check_api_version(const void *value, char **ret_message);
int spec_check_kind(const void *value, char **ret_message);
int spec_check_dns_name(const void *value, char **ret_message);
int spec_check_dns_label(const void *value, char **ret_message);
int spec_check_zone(const void *value, char **ret_message);
int spec_check_absolute_path(const void *value, char **ret_message);
int spec_check_server(const void *value, char **ret_message);
int spec_check_timeout(const void *value, char **ret_message);
int spec_check_image(const void *value, char **ret_message);
int spec_check_version(const void *value, char **ret_message);

/* Cross-field rules and conditional defaults (internalSuffix, hosts file, etcd ports); errors are placed at
 * the nodes of root they concern. Returns -ENOMEM, else 0. */
int spec_check_cluster(ClusterSpec *s, const YamlNode *root, SpecErrors *errs);

/* The top-level field table of ClusterSpec (for docs and tests). */
const Field *cluster_spec_fields(void);
