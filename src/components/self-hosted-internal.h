/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What the builders of the self-hosted assets share (self-hosted.c, self-hosted-kubelet.c). */

#include "components/self-hosted.h"

/* Adds an object, taking *text. The same kind and name twice: 0 when the texts are equal, else -EEXIST. */
int self_hosted_assets_add(SelfHostedAssets *a, SelfHostedKind kind, const char *namespace, const char *name,
                           char **text, size_t text_len, bool secret);
/* managed-by protokube, k8s-app: <component>, tier: <tier>, sorted by key. Caller frees. */
int self_hosted_labels(const char *component, const char *tier, char ***ret);
/* Sets those labels in an alternating key/value list. */
int self_hosted_set_labels(char ***labels, const char *component, const char *tier);

/* The managed kubelet's ConfigMap and DaemonSet when spec.kubelet.selfHosted; nothing otherwise. */
int self_hosted_kubelet_build(const ClusterSpec *spec, const SelfHostedParams *p, SelfHostedAssets *a,
                              char **ret_error);
