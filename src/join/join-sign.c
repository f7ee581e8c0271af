/* SPDX-License-Identifier: Apache-2.0 */
/* The signer: a certificate for an approved kubelet CSR, and the approval and the certificate written
 * through the API's subresources. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "join/join-sign.h"
#include "pki/pki-cert.h"
#include "shared/crypto.h"
#include "shared/json-util.h"
#include "shared/openssl-util.h"

#define CONDITION_MESSAGE_MAX 1024

bool join_csr_signable(const JoinCsr *csr, char **ret_reason) {
        *ret_reason = NULL;
        if (csr->kind == JOIN_CSR_OTHER || !csr->approved || csr->denied || csr->failed ||
            csr->has_certificate)
                return false;
        return join_csr_check_shape(csr, NULL, ret_reason) >= 0;
}

int join_csr_issue(const JoinCsr *csr, X509 *ca, EVP_PKEY *ca_key, usec_t lifetime, usec_t at,
                   char **ret_pem, char **ret_error) {
        _cleanup_free_ char *why = NULL;
        _cleanup_(X509_freep) X509 *cert = NULL;
        usec_t ca_from, ca_until;
        if (!join_csr_signable(csr, &why))
                return error_setf(ret_error, -EINVAL, "CertificateSigningRequest %s is not to be signed%s%s",
                                  strna(csr->name), why ? ": " : "", strempty(why));
        if (lifetime < JOIN_LIFETIME_MIN)
                return error_setf(ret_error, -EINVAL, "a certificate lifetime under a minute");
        int r = pki_cert_validity(ca, &ca_from, &ca_until);
        if (r < 0)
                return error_setf(ret_error, r, "the CA's validity does not decode");
        if (ca_until <= at + JOIN_LIFETIME_MIN)
                return error_setf(ret_error, -EKEYEXPIRED,
                                  "the CA expires within a minute: nothing to sign with");
        /* a certificate outliving its CA would fail verification from that day on anyway */
        lifetime = MIN(lifetime, ca_until - at);
        const PkiCsr *q = csr->request;
        PkiCertRequest req = {
                .cn = q->cn,
                .org = JOIN_NODES_GROUP,
                .dns = csr->kind == JOIN_CSR_SERVING ? q->dns : NULL,
                .ips = csr->kind == JOIN_CSR_SERVING ? q->ips : NULL,
                .usage = csr->kind == JOIN_CSR_SERVING ? PKI_USAGE_SERVER : PKI_USAGE_CLIENT,
                .lifetime = lifetime,
        };
        r = pki_cert_issue(&req, q->key, ca, ca_key, at, &cert, ret_error);
        if (r < 0)
                return r;
        return pki_cert_to_pem(cert, ret_pem, NULL);
}

/* obj with its status.conditions extended by the Approved one. */
static int approved_copy(const json_t *obj, const char *message, usec_t now, json_t **ret) {
        char when[RFC3339_MAX];
        if (!format_rfc3339(when, now))
                return -EINVAL;
        _cleanup_free_ char *m = strndup(strempty(message), CONDITION_MESSAGE_MAX);
        json_t *copy = json_deep_copy(obj);
        json_t *cond = json_pack("{s:s,s:s,s:s,s:s?,s:s}", "type", "Approved", "status", "True", "reason",
                                 JOIN_APPROVED_REASON, "message", m, "lastUpdateTime", when);
        json_t *status = copy ? json_object_get(copy, "status") : NULL;
        if (copy && !json_is_object(status) &&
            json_object_set_new(copy, "status", status = json_object()) < 0)
                status = NULL;
        json_t *conds = status ? json_object_get(status, "conditions") : NULL;
        if (status && !json_is_array(conds) &&
            json_object_set_new(status, "conditions", conds = json_array()) < 0)
                conds = NULL;
        if (!m || !cond || !conds || json_array_append_new(conds, cond) < 0) {
                if (!conds)
                        json_decref(cond);
                json_decref(copy);
                return -ENOMEM;
        }
        *ret = copy;
        return 0;
}

int join_csr_approve(KubeClient *c, const json_t *obj, const char *message, usec_t now, usec_t deadline,
                     json_t **ret, char **ret_error) {
        json_t *copy = NULL;
        int r = approved_copy(obj, message, now, &copy);
        if (r < 0)
                return r;
        r = kube_replace(c, copy, "approval", deadline, ret, ret_error);
        json_decref(copy);
        return r;
}

int join_csr_note_refusal(KubeClient *c, const char *csr, const char *reason, usec_t deadline,
                          char **ret_error) {
        _cleanup_(json_decrefp) json_t *patch =
            json_pack("{s:{s:{s:s}}}", "metadata", "annotations", JOIN_CSR_REFUSAL_ANNOTATION, reason);
        if (!patch)
                return -ENOMEM;
        return kube_merge_patch(c, JOIN_CSR_API_VERSION, JOIN_CSR_KIND, NULL, csr, patch, deadline,
                                ret_error);
}

int join_csr_write_certificate(KubeClient *c, const json_t *obj, const char *pem, usec_t deadline,
                               json_t **ret, char **ret_error) {
        _cleanup_free_ char *b64 = NULL;
        int r = crypto_base64_encode(pem, strlen(pem), &b64);
        if (r < 0)
                return r;
        json_t *copy = json_deep_copy(obj), *status = copy ? json_object_get(copy, "status") : NULL;
        if (copy && !json_is_object(status) &&
            json_object_set_new(copy, "status", status = json_object()) < 0)
                status = NULL;
        if (!status || json_object_set_new(status, "certificate", json_string(b64)) < 0) {
                json_decref(copy);
                return -ENOMEM;
        }
        r = kube_replace(c, copy, "status", deadline, ret, ret_error);
        json_decref(copy);
        return r;
}
