/* SPDX-License-Identifier: Apache-2.0 */
/* A CSR object read for the approver and the signer, and the shape both require. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/dns-name.h"
#include "basic/errors.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "join/join-csr.h"
#include "join/join-token.h"
#include "kube/kube-name.h"
#include "shared/crypto.h"
#include "shared/json-util.h"

#define USAGES_MAX 16 /* the API knows 23 usages; a kubelet asks for 3 */
#define GROUPS_MAX 64

JoinCsr *join_csr_free(JoinCsr *c) {
        if (!c)
                return NULL;
        free(c->name);
        free(c->uid);
        free(c->resource_version);
        free(c->signer_name);
        strv_free(c->usages);
        free(c->username);
        strv_free(c->groups);
        pki_csr_free(c->request);
        free(c->request_error);
        free(c->refusal);
        free(c);
        return NULL;
}

/* A JSON array of strings as a vector (at most max; NULL members skipped); an absent array is empty. */
static int string_array(const json_t *a, size_t max, char ***ret) {
        _cleanup_strv_free_ char **l = new0(char *, 1);
        const json_t *v;
        size_t i;
        if (!l)
                return -ENOMEM;
        if (json_array_size(a) > max)
                return -E2BIG;
        json_array_foreach(a, i, v) {
                if (!json_is_string(v))
                        return -EINVAL;
                int r = strv_extend(&l, json_string_value(v));
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

const json_t *join_condition(const json_t *obj, const char *type, const char *status) {
        const json_t *c;
        size_t i;
        json_array_foreach(json_get(obj, "status", "conditions"), i, c) {
                if (streq_ptr(json_get_string(c, "type"), type) &&
                    (!status || streq_ptr(json_get_string(c, "status"), status)))
                        return c;
        }
        return NULL;
}

static bool condition_true(const json_t *obj, const char *type) {
        return join_condition(obj, type, "True") != NULL;
}

/* spec.request: base64 of a PEM request, parsed; a failure is kept as the CSR's request_error. */
static int read_request(const json_t *obj, JoinCsr *c) {
        const char *b64 = json_get_string(obj, "spec", "request");
        _cleanup_free_ uint8_t *pem = NULL;
        size_t len = 0;
        if (!b64)
                return (c->request_error = strdup("spec.request is absent")) ? 0 : -ENOMEM;
        if (strlen(b64) > PKI_CSR_PEM_MAX * 2)
                return (c->request_error = strdup("spec.request is longer than 128 KiB")) ? 0 : -ENOMEM;
        int r = crypto_base64_decode(b64, strlen(b64), &pem, &len);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return (c->request_error = strdup("spec.request is not base64")) ? 0 : -ENOMEM;
        r = pki_csr_parse((const char *)pem, len, &c->request, &c->request_error);
        if (r == -ENOMEM)
                return r;
        if (r < 0 && !c->request_error)
                return (c->request_error = strdup("spec.request does not parse")) ? 0 : -ENOMEM;
        return 0;
}

static JoinCsrKind kind_of(const char *signer) {
        if (streq_ptr(signer, JOIN_SIGNER_CLIENT))
                return JOIN_CSR_CLIENT;
        if (streq_ptr(signer, JOIN_SIGNER_SERVING))
                return JOIN_CSR_SERVING;
        return JOIN_CSR_OTHER;
}

static int copy_string(const json_t *obj, const char *a, const char *b, char **ret) {
        const char *s = b ? json_get_string(obj, a, b) : json_get_string(obj, a);
        if (!s)
                return 0;
        *ret = strdup(s);
        return *ret ? 0 : -ENOMEM;
}

int join_csr_from_json(const json_t *obj, JoinCsr **ret, char **ret_error) {
        const char *name = json_get_string(obj, "metadata", "name"), *kind = json_get_string(obj, "kind");
        /* a list's items come without their kind: absent is taken, another is not */
        if (isempty(name) || (kind && !streq(kind, JOIN_CSR_KIND)))
                return error_setf(ret_error, -EINVAL, "not a CertificateSigningRequest with a name");
        _cleanup_(join_csr_freep) JoinCsr *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        int r;
        if ((r = copy_string(obj, "metadata", "name", &c->name)) < 0 ||
            (r = copy_string(obj, "metadata", "uid", &c->uid)) < 0 ||
            (r = copy_string(obj, "metadata", "resourceVersion", &c->resource_version)) < 0 ||
            (r = copy_string(obj, "spec", "signerName", &c->signer_name)) < 0 ||
            (r = copy_string(obj, "spec", "username", &c->username)) < 0)
                return r;
        const char *refusal = json_get_string(obj, "metadata", "annotations", JOIN_CSR_REFUSAL_ANNOTATION);
        if (refusal && !(c->refusal = strdup(refusal)))
                return -ENOMEM;
        r = string_array(json_get(obj, "spec", "usages"), USAGES_MAX, &c->usages);
        if (r >= 0)
                r = string_array(json_get(obj, "spec", "groups"), GROUPS_MAX, &c->groups);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return error_setf(ret_error, -EINVAL,
                                  "CertificateSigningRequest %s: spec.usages or spec.groups is not a short "
                                  "list of strings",
                                  name);
        const char *created = json_get_string(obj, "metadata", "creationTimestamp");
        if (created && parse_rfc3339(created, &c->created) < 0)
                c->created = 0;
        c->kind = kind_of(c->signer_name);
        c->approved = condition_true(obj, "Approved");
        c->denied = condition_true(obj, "Denied");
        c->failed = condition_true(obj, "Failed");
        c->has_certificate = !isempty(json_get_string(obj, "status", "certificate"));
        r = read_request(obj, c);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(c);
        return 0;
}

const char *join_node_of_cn(const char *cn) {
        return cn ? startswith(cn, JOIN_NODE_USER_PREFIX) : NULL;
}

/* A refusal's reason into *ret_reason: -EINVAL, or -ENOMEM when it could not be written. */
#define refuse(ret_reason, ...) ((*(ret_reason) = strprintf(__VA_ARGS__)) ? -EINVAL : -ENOMEM)

static int check_subject(const PkiCsr *q, const char **ret_node, char **ret_reason) {
        const char *node = join_node_of_cn(q->cn);
        if (q->n_cn != 1 || !node)
                return refuse(ret_reason, "the subject's CN must be system:node:<name>, once (it is '%s')",
                              strna(q->cn));
        if (strlen(node) > JOIN_NODE_NAME_MAX || !kube_name_valid(KUBE_NAME_DNS_SUBDOMAIN, node))
                return refuse(ret_reason,
                              "'%.80s' is not a node name of at most %zu characters (a DNS-1123 subdomain)",
                              node, (size_t)JOIN_NODE_NAME_MAX);
        if (strv_length(q->orgs) != 1 || !streq(q->orgs[0], JOIN_NODES_GROUP))
                return refuse(ret_reason, "the subject's O must be exactly system:nodes");
        if (q->n_other_rdn > 0)
                return refuse(ret_reason, "the subject has %u attributes besides CN and O", q->n_other_rdn);
        *ret_node = node;
        return 0;
}

/* Each usage at most once, the one required present, nothing beyond the allowed. */
static int check_usages(char *const *usages, const char *required, char **ret_reason) {
        static const char *const allowed[] = { "digital signature", "key encipherment" };
        bool found = false;
        STRV_FOREACH (u, (char **)usages) {
                for (char **v = u + 1; *v; v++)
                        if (streq(*u, *v))
                                return refuse(ret_reason, "usage '%s' is asked twice", *u);
                if (streq(*u, required)) {
                        found = true;
                        continue;
                }
                bool ok = false;
                for (size_t i = 0; i < ELEMENTSOF(allowed); i++)
                        ok = ok || streq(*u, allowed[i]);
                if (!ok)
                        return refuse(ret_reason,
                                      "usage '%.40s' is not one of '%s', 'digital signature', "
                                      "'key encipherment'",
                                      *u, required);
        }
        if (!found)
                return refuse(ret_reason, "the usages lack '%s'", required);
        return 0;
}

static int check_sans(const JoinCsr *csr, char **ret_reason) {
        const PkiCsr *q = csr->request;
        size_t n = strv_length(q->dns) + strv_length(q->ips);
        if (csr->kind == JOIN_CSR_CLIENT && (n > 0 || q->n_other_sans > 0))
                return refuse(ret_reason, "a client certificate names no SAN (this request has %zu)",
                              n + q->n_other_sans);
        if (csr->kind == JOIN_CSR_SERVING && q->n_other_sans > 0)
                return refuse(ret_reason,
                              "a serving certificate names only DNS names and IP addresses (this "
                              "request has %u SANs of other kinds: email, URI...)",
                              q->n_other_sans);
        if (csr->kind == JOIN_CSR_SERVING && n == 0)
                return refuse(ret_reason, "a serving certificate names at least one DNS name or IP address");
        STRV_FOREACH (d, q->dns)
                if (!dns_hostname_is_valid(*d))
                        return refuse(ret_reason, "SAN '%.80s' is not a lowercase RFC 1123 host name", *d);
        return 0;
}

int join_csr_check_shape(const JoinCsr *csr, const char **ret_node, char **ret_reason) {
        const char *node = NULL;
        int r;
        if (csr->kind == JOIN_CSR_OTHER)
                return refuse(ret_reason, "signer '%s' is not one protokube signs for",
                              strna(csr->signer_name));
        if (!csr->request)
                return refuse(ret_reason, "%s", strna(csr->request_error));
        if (csr->request->key_type < 0)
                return refuse(ret_reason, "its %s key is not one protokube signs (ECDSA P-256, RSA 2048)",
                              strna(csr->request->key_algorithm));
        if ((r = check_subject(csr->request, &node, ret_reason)) < 0 ||
            (r = check_usages(csr->usages, csr->kind == JOIN_CSR_CLIENT ? "client auth" : "server auth",
                              ret_reason)) < 0 ||
            (r = check_sans(csr, ret_reason)) < 0)
                return r;
        if (ret_node)
                *ret_node = node;
        return 0;
}

bool join_csr_by_bootstrap_token(const JoinCsr *csr) {
        const char *id = csr->username ? startswith(csr->username, JOIN_BOOTSTRAP_USER_PREFIX) : NULL;
        return id && join_token_id_valid(id) && strv_contains(csr->groups, JOIN_BOOTSTRAP_GROUP);
}

bool join_csr_by_node(const JoinCsr *csr, const char *node) {
        const char *who = csr->username ? startswith(csr->username, JOIN_NODE_USER_PREFIX) : NULL;
        return who && node && streq(who, node) && strv_contains(csr->groups, JOIN_NODES_GROUP);
}
