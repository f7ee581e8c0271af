/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A CertificateSigningRequest (certificates.k8s.io/v1) as the API returns it, read into what the approver
 * and the signer decide on: who asked (spec.username and spec.groups, set by the API server from the
 * requester's credentials, not by the requester), for which signer, with which usages, and the PKCS#10
 * request itself (spec.request: base64 of its PEM), parsed and its signature checked (pki/pki-csr.h).
 *
 * The two signers protokube approves and signs for, as kubelet 1.20 asks them:
 *   kubernetes.io/kube-apiserver-client-kubelet  the node's client certificate: CN=system:node:<name>,
 *       O=system:nodes, usages digital signature, key encipherment, client auth, no SAN; asked with a
 *       bootstrap token (TLS bootstrap) or by the node itself (rotation);
 *   kubernetes.io/kubelet-serving  the kubelet's serving certificate: the same subject, usages digital
 *       signature, key encipherment, server auth, the node's addresses as SANs; asked by the node itself.
 * Library code: returns errors with a message, never logs. */

#include <jansson.h>
#include <stdbool.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "pki/pki-csr.h"

#define JOIN_SIGNER_CLIENT    "kubernetes.io/kube-apiserver-client-kubelet"
#define JOIN_SIGNER_SERVING   "kubernetes.io/kubelet-serving"
#define JOIN_NODE_USER_PREFIX "system:node:"
#define JOIN_NODES_GROUP      "system:nodes"
/* CN=system:node:<name> within RFC 5280's 64 characters (pki/pki-cert.h) */
#define JOIN_NODE_NAME_MAX   (PKI_CN_MAX - (sizeof(JOIN_NODE_USER_PREFIX) - 1))
#define JOIN_CSR_API_VERSION "certificates.k8s.io/v1"
#define JOIN_CSR_KIND        "CertificateSigningRequest"
/* The masters' reason for refusing a CSR they leave pending, on the CSR itself: the worker, which may read
 * its CSRs with its bootstrap token, shows it (`protokube join plan`). */
#define JOIN_CSR_REFUSAL_ANNOTATION "protokube.io/refusal"

typedef enum JoinCsrKind {
        JOIN_CSR_CLIENT,  /* JOIN_SIGNER_CLIENT */
        JOIN_CSR_SERVING, /* JOIN_SIGNER_SERVING */
        JOIN_CSR_OTHER,   /* another signer's: not protokube's to decide */
        _JOIN_CSR_KIND_MAX,
        _JOIN_CSR_KIND_INVALID = -EINVAL,
} JoinCsrKind;

typedef struct JoinCsr {
        char *name, *uid, *resource_version;
        char *signer_name;
        JoinCsrKind kind;
        char **usages;                 /* spec.usages, as written; never NULL */
        char *username;                /* spec.username: the requester */
        char **groups;                 /* spec.groups; never NULL */
        bool approved, denied, failed; /* status.conditions of those types with status True */
        bool has_certificate;          /* status.certificate is set: signed already */
        usec_t created;                /* metadata.creationTimestamp, CLOCK_REALTIME; 0 when absent */
        PkiCsr *request;               /* NULL when spec.request does not parse: */
        char *request_error;           /*   why */
        char *refusal;                 /* JOIN_CSR_REFUSAL_ANNOTATION as the masters wrote it; NULL: none */
} JoinCsr;

/* Reads obj. -EINVAL with a message when it is no CSR (no metadata.name, of another kind; an item of a
 * list, which comes without its kind, is taken); a request that does not parse is not an error here
 * (request_error says why, and the approver refuses it). */
int join_csr_from_json(const json_t *obj, JoinCsr **ret, char **ret_error);
JoinCsr *join_csr_free(JoinCsr *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(JoinCsr *, join_csr_free)

/* The status.conditions entry of obj of that type, with that status (NULL: any), or NULL. */
const json_t *join_condition(const json_t *obj, const char *type, const char *status);

/* The node name of a CN "system:node:<name>", or NULL. Points into cn. */
const char *join_node_of_cn(const char *cn);

/* The shape a signer's certificate must have, checked by the approver and again by the signer (whoever
 * approved it, an operator by hand too): a request that parsed, a key protokube signs (ECDSA P-256, RSA
 * 2048), the subject exactly CN=system:node:<name> (a valid node name of at most 52 characters) and
 * O=system:nodes, the usages of the signer (its one extended usage required, digital signature and key
 * encipherment allowed, nothing else, nothing twice), no SAN for a client certificate, at least one and
 * only DNS names and IP addresses for a serving one. 0 and *ret_node (points into csr, may be NULL) when it
 * has; -EINVAL and *ret_reason (caller frees) saying what is wrong when not. */
int join_csr_check_shape(const JoinCsr *csr, const char **ret_node, char **ret_reason);

/* The requester is a bootstrap token (user system:bootstrap:<id>, group system:bootstrappers), or the node
 * called node itself (user system:node:<node>, group system:nodes). */
bool join_csr_by_bootstrap_token(const JoinCsr *csr);
bool join_csr_by_node(const JoinCsr *csr, const char *node);
