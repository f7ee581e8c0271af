/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Kubernetes' own rules for names (k8s.io/apimachinery/pkg/util/validation and the per-kind name validators
 * of k8s.io/kubernetes/pkg/apis/.../validation). A name read from the API becomes a URL path segment here
 * and a file name in the checkpoint: checked by the rule of its kind, it can never be "..", hold a '/' or
 * climb out of a directory. The API enforces these rules for the objects it stores, with one exception that
 * matters: an ownerReference's name is only checked for being non-empty, so an owner's name is checked by
 * the rule of the owner's kind before it is used. */

#include <stdbool.h>

#define KUBE_NAME_MAX 253

typedef enum KubeNameRule {
        /* IsDNS1123Subdomain: [a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*, at most 253:
         * Pod, Secret, ConfigMap, Node, ServiceAccount, DaemonSet, Deployment, ReplicaSet */
        KUBE_NAME_DNS_SUBDOMAIN,
        /* IsDNS1123Label: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63: Namespace */
        KUBE_NAME_DNS_LABEL,
        /* IsDNS1035Label: [a-z]([-a-z0-9]*[a-z0-9])?, at most 63: Service */
        KUBE_NAME_DNS1035_LABEL,
        /* RBAC's ValidatePathSegmentName (not "." or "..", no '/' or '%'), narrowed here to what a URL path
         * segment carries unescaped, [-.:@_a-zA-Z0-9], at most 253: "system:node-proxier" */
        KUBE_NAME_RBAC,
        /* IsConfigMapKey: [-._a-zA-Z0-9]+, at most 253, not "." and not starting with "..": a key of a
         * Secret's or a ConfigMap's data (kubelet makes each a file) */
        KUBE_NAME_DATA_KEY,
        _KUBE_NAME_RULE_MAX,
} KubeNameRule;

bool kube_name_valid(KubeNameRule rule, const char *s);

/* 0 when s follows rule; else -EINVAL and a message "<what> '<s>' is not valid: <the rule in words>", s
 * shown with anything unprintable replaced and cut at 80 characters. */
int kube_name_check(KubeNameRule rule, const char *what, const char *s, char **ret_error);
