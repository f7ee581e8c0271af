/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The signer (docs/workers.md, "Signing"): an approved kubelet CSR gets a certificate from the cluster CA
 * (the keystore's, from the state store: no CA key is on a master's disk), written to its
 * status.certificate. Each write goes through the API at the resourceVersion the CSR was read at, so of
 * several masters working on the same CSR exactly one approves it and exactly one signs it; the others get
 * 409 Conflict (PK_ECONFLICT), which is harmless: they read it again in their next round. */

#include <jansson.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "basic/time-util.h"
#include "join/join-csr.h"
#include "kube/kube-client.h"

/* The reason of the Approved condition protokube writes. */
#define JOIN_APPROVED_REASON "ProtokubeApproved"
#define JOIN_LIFETIME_MIN    (60ULL * USEC_PER_SEC)

/* True when csr is approved, neither denied nor failed, has no certificate yet and has the shape of its
 * signer's certificates (join_csr_check_shape(); whoever approved it, an operator by hand too); else false
 * and, for an approved one refused for its shape, *ret_reason (caller frees; NULL for one simply not
 * due). */
bool join_csr_signable(const JoinCsr *csr, char **ret_reason);

/* The certificate for csr (join_csr_signable() must hold): the subject CN=system:node:<name>,
 * O=system:nodes, a serving request's SANs, its signer's extended usage (clientAuth or serverAuth), the
 * request's public key, a random serial, signed by ca with ca_key; valid from at - PKI_CLOCK_SKEW for
 * lifetime, cut at the CA's own notAfter. PEM, caller frees. -EINVAL with a message for a request that is
 * not signable or a lifetime under a minute, -EKEYEXPIRED when the CA expires before at. */
int join_csr_issue(const JoinCsr *csr, X509 *ca, EVP_PKEY *ca_key, usec_t lifetime, usec_t at,
                   char **ret_pem, char **ret_error);

/* Through the API. obj is the CSR as read (its resourceVersion is the compare-and-set); *ret (may be NULL)
 * gets it as written, to go on with.
 * Approval: PUT .../approval with the condition Approved=True, reason ProtokubeApproved, message (the
 * decision's reason) and now as its lastUpdateTime. */
int join_csr_approve(KubeClient *c, const json_t *obj, const char *message, usec_t now, usec_t deadline,
                     json_t **ret, char **ret_error);
/* A refusal noted on the CSR (left pending): a merge patch of its JOIN_CSR_REFUSAL_ANNOTATION. */
int join_csr_note_refusal(KubeClient *c, const char *csr, const char *reason, usec_t deadline,
                          char **ret_error);
/* The certificate: PUT .../status with status.certificate = base64 of pem. */
int join_csr_write_certificate(KubeClient *c, const json_t *obj, const char *pem, usec_t deadline,
                               json_t **ret, char **ret_error);
