/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The RBAC a node's TLS bootstrap needs beyond Kubernetes' bootstrap policy: the holders of protokube's
 * tokens (group JOIN_TOKEN_GROUP) may create CertificateSigningRequests, through the built-in ClusterRole
 * system:node-bootstrapper, as kubeadm's kubeadm:kubelet-bootstrap binds it. A node's own renewal and its
 * serving request need nothing more: the Node authorizer (--authorization-mode=Node,...) lets a node
 * create CSRs, and protokube approves without a SubjectAccessReview. */

#include <jansson.h>

#include "basic/time-util.h"
#include "kube/kube-client.h"

#define JOIN_BOOTSTRAP_BINDING "protokube:kubelet-bootstrap"
#define JOIN_BOOTSTRAP_ROLE    "system:node-bootstrapper"
/* A worker's kube-proxy runs with its node's own credentials (the kubelet's kubeconfig: a worker holds no
 * other, docs/workers.md "kube-proxy"): the nodes (group system:nodes) get the built-in ClusterRole
 * system:node-proxier, kube-proxy's read of Services, Endpoints, EndpointSlices and Nodes and its Events. */
#define JOIN_NODE_PROXIER_BINDING "protokube:nodes-node-proxier"
#define JOIN_NODE_PROXIER_ROLE    "system:node-proxier"
#define JOIN_NODES_GROUP          "system:nodes"

/* The objects, a JSON array of ClusterRoleBindings. Caller decrefs. */
int join_rbac_objects(json_t **ret);
/* Server-side apply of each (idempotent). */
int join_rbac_apply(KubeClient *c, usec_t deadline, char **ret_error);
