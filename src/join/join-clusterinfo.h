/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The ConfigMap kube-public/cluster-info, in kubeadm's format: how a worker that holds only a token and the
 * CA's pin learns the cluster CA. Its data.kubeconfig is a kubeconfig with one cluster named "" (the CA's
 * certificate-authority-data and the API's server) and no contexts or users. Anyone may read it (the Role
 * and RoleBinding below give system:anonymous `get` on it alone, as kubeadm's
 * kubeadm:bootstrap-signer-clusterinfo does): the worker fetches it over TLS it does not verify yet, checks
 * the CA against its pin (join-pin.h), and from then on verifies the API with that CA.
 *
 * Library code: returns errors with a message, never logs. */

#include <jansson.h>

#include <openssl/x509.h>

#include "basic/time-util.h"
#include "kube/kube-client.h"

#define JOIN_CLUSTER_INFO_NAMESPACE "kube-public"
#define JOIN_CLUSTER_INFO_NAME      "cluster-info"
#define JOIN_CLUSTER_INFO_KEY       "kubeconfig"
#define JOIN_CLUSTER_INFO_ROLE      "protokube:bootstrap-signer-clusterinfo"
#define JOIN_CLUSTER_INFO_USER      "system:anonymous"
/* Bytes of a cluster-info ConfigMap a worker takes: a CA's PEM in base64 is a few kB */
#define JOIN_CLUSTER_INFO_MAX (64U * 1024U)

/* The kubeconfig text of data.kubeconfig, exactly as kubeadm writes it, for ca and server
 * ("https://api.internal.CLUSTER:443"). Caller frees. */
int join_cluster_info_kubeconfig(X509 *ca, const char *server, char **ret);

/* The ConfigMap, then the Role and the RoleBinding that let system:anonymous get it (a JSON array; caller
 * decrefs). */
int join_cluster_info_objects(X509 *ca, const char *server, json_t **ret);

/* Server-side apply of each of join_cluster_info_objects() (idempotent; another field manager's keys of
 * the ConfigMap, kube-controller-manager's jws-kubeconfig-* signatures, stay). */
int join_cluster_info_apply(KubeClient *c, X509 *ca, const char *server, usec_t deadline, char **ret_error);

/* The CA of a cluster-info ConfigMap as the API returns it (JSON, untrusted: a worker reads it before it
 * trusts anything): exactly one cluster, whose certificate-authority-data is the base64 of exactly one PEM
 * certificate of a CA, and whose server is an https:// URL (*ret_server when not NULL). PK_EMALFORMED
 * with a message saying which part is wrong; never a crash on any input. Caller frees. */
int join_cluster_info_ca(const char *json, size_t len, X509 **ret_ca, char **ret_server, char **ret_error);
