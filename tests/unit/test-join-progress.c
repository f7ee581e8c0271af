/* SPDX-License-Identifier: Apache-2.0 */
/* A worker's view of its join (join/join-progress.h): its client CSR found among others' by signer, subject
 * and requester (its bootstrap token, or itself on renewal), the newest one taken, each state with a
 * Denied or Failed condition's words as one line; and its Node's Ready condition. */
#include <string.h>

#include "basic/string-util.h"
#include "join/join-progress.h"
#include "pki/pki-csr.h"
#include "pki/pki-key.h"
#include "shared/crypto.h"
#include "shared/openssl-util.h"
#include "unit-test.h"

#define CLIENT  "kubernetes.io/kube-apiserver-client-kubelet"
#define SERVING "kubernetes.io/kubelet-serving"

typedef struct Csr {
        const char *name, *created, *signer, *user, *cn;
        const char *condition; /* "Approved", "Denied", "Failed" or NULL */
        bool certificate;
        const char *reason, *message;
        const char *refusal; /* the masters' note on a CSR they leave pending */
} Csr;

static json_t *csr_json(EVP_PKEY *k, const Csr *c) {
        _cleanup_free_ char *pem = NULL, *b64 = NULL;
        assert_int_equal(pki_csr_create(k, c->cn, "system:nodes", NULL, NULL, NULL, &pem), 0);
        assert_int_equal(crypto_base64_encode(pem, strlen(pem), &b64), 0);
        bool node = startswith(c->user, "system:node:");
        json_t *o = json_pack(
            "{s:s,s:s,s:{s:s,s:s},s:{s:s,s:s,s:[sss],s:[ss],s:s}}", "apiVersion", "certificates.k8s.io/v1",
            "kind", "CertificateSigningRequest", "metadata", "name", c->name, "creationTimestamp",
            c->created, "spec", "signerName", c->signer ?: CLIENT, "request", b64, "usages",
            "digital signature", "key encipherment", "client auth", "groups",
            node ? "system:nodes" : "system:bootstrappers", "system:authenticated", "username", c->user);
        assert_non_null(o);
        if (c->refusal)
                json_object_set_new(json_object_get(o, "metadata"), "annotations",
                                    json_pack("{s:s}", "protokube.io/refusal", c->refusal));
        if (c->condition) {
                json_t *st = json_pack("{s:[{s:s,s:s,s:s?,s:s?}]}", "conditions", "type", c->condition,
                                       "status", "True", "reason", c->reason, "message", c->message);
                if (c->certificate)
                        json_object_set_new(st, "certificate", json_string("LS0tLS1CRUdJTg=="));
                json_object_set_new(o, "status", st);
        }
        return o;
}

static json_t *list_of(const Csr *c, size_t n) {
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *k = NULL;
        assert_int_equal(pki_key_generate(PKI_KEY_ECDSA_P256, &k), 0);
        json_t *items = json_array();
        for (size_t i = 0; i < n; i++) {
                /* as the API lists them: the items without their apiVersion and kind */
                json_t *item = csr_json(k, &c[i]);
                json_object_del(item, "apiVersion");
                json_object_del(item, "kind");
                json_array_append_new(items, item);
        }
        return json_pack("{s:s,s:o}", "kind", "CertificateSigningRequestList", "items", items);
}

static void expect(const Csr *c, size_t n, JoinCsrState state, const char *name, const char *words) {
        _cleanup_(json_decrefp) json_t *list = list_of(c, n);
        JoinCsrProgress p = {};
        assert_int_equal(join_csr_progress(list, "w1", "abcdef", &p, NULL), 0);
        assert_int_equal(p.state, state);
        if (name)
                assert_string_equal(p.name, name);
        else
                assert_null(p.name);
        if (words)
                assert_string_equal(p.words, words);
        else
                assert_null(p.words);
        join_csr_progress_done(&p);
}

#define T1       "2026-11-28T10:00:00Z"
#define T2       "2026-11-28T10:05:00Z"
#define BY_TOKEN "system:bootstrap:abcdef"

/* Only this node's client CSR counts: not another node's, not one asked with another token, not a serving
 * one, not another's asking for this node's name. */
static void test_ours_only(void **state) {
        const Csr others[] = {
                { "csr-w2", T1, NULL, BY_TOKEN, "system:node:w2" },
                { "csr-other-token", T1, NULL, "system:bootstrap:zzzzzz", "system:node:w1" },
                { "csr-serving", T1, SERVING, "system:node:w1", "system:node:w1" },
                { "csr-by-w2", T1, NULL, "system:node:w2", "system:node:w1" },
        };
        expect(others, ELEMENTSOF(others), JOIN_CSR_STATE_NONE, NULL, NULL);
        const Csr mine[] = { { "csr-w2", T1, NULL, BY_TOKEN, "system:node:w2", "Approved", true },
                             { "csr-mine", T1, NULL, BY_TOKEN, "system:node:w1" } };
        expect(mine, ELEMENTSOF(mine), JOIN_CSR_STATE_PENDING, "csr-mine", NULL);
}

/* Each state, the newest CSR's: a denial is followed by a new request, which is what stands. */
static void test_states(void **state) {
        const Csr approved[] = { { "csr-a", T1, NULL, BY_TOKEN, "system:node:w1", "Approved" } };
        expect(approved, 1, JOIN_CSR_STATE_APPROVED, "csr-a", NULL);
        const Csr issued[] = { { "csr-a", T1, NULL, "system:node:w1", "system:node:w1", "Approved", true } };
        expect(issued, 1, JOIN_CSR_STATE_ISSUED, "csr-a", NULL);
        const Csr denied[] = { { "csr-d", T1, NULL, BY_TOKEN, "system:node:w1", "Denied", false,
                                 "ProtokubeDenied", "node name w1 is bound to another machine\n(i-0abc)" } };
        expect(denied, 1, JOIN_CSR_STATE_DENIED, "csr-d",
               "ProtokubeDenied: node name w1 is bound to another machine?(i-0abc)");
        const Csr failed[] = { { "csr-f", T1, NULL, BY_TOKEN, "system:node:w1", "Failed", false,
                                 "SignerFailed", NULL } };
        expect(failed, 1, JOIN_CSR_STATE_FAILED, "csr-f", "SignerFailed: n/a");
        const Csr again[] = { { "csr-d", T1, NULL, BY_TOKEN, "system:node:w1", "Denied", false, "X", "y" },
                              { "csr-new", T2, NULL, BY_TOKEN, "system:node:w1" } };
        expect(again, 2, JOIN_CSR_STATE_PENDING, "csr-new", NULL);
        const Csr older_last[] = { { "csr-new", T2, NULL, BY_TOKEN, "system:node:w1" },
                                   { "csr-d", T1, NULL, BY_TOKEN, "system:node:w1", "Denied", false, "X",
                                     "y" } };
        expect(older_last, 2, JOIN_CSR_STATE_PENDING, "csr-new", NULL);
}

/* A CSR the masters refuse stays pending with their reason on it: the worker shows it, as one line; once
 * approved the note no longer counts. */
static void test_refusal_noted(void **state) {
        const Csr refused[] = { { "csr-r", T1, NULL, BY_TOKEN, "system:node:w1",
                                  .refusal = "node name w1 is bound to "
                                             "machine key:sha256:ab\n" } };
        expect(refused, 1, JOIN_CSR_STATE_PENDING, "csr-r",
               "node name w1 is bound to machine key:sha256:ab?");
        const Csr approved[] = { { "csr-r", T1, NULL, BY_TOKEN, "system:node:w1", "Approved",
                                   .refusal = "an old refusal" } };
        expect(approved, 1, JOIN_CSR_STATE_APPROVED, "csr-r", NULL);
}

static void test_not_a_list(void **state) {
        _cleanup_(json_decrefp) json_t *bad = json_pack("{s:s}", "kind", "Status");
        _cleanup_free_ char *error = NULL;
        JoinCsrProgress p = {};
        assert_int_equal(join_csr_progress(bad, "w1", "abcdef", &p, &error), -EINVAL);
        assert_non_null(strstr(error, "no items"));
}

static void test_node_ready(void **state) {
        static const struct {
                const char *json;
                int ready;
                const char *words;
        } cases[] = {
                { "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}", 1, NULL },
                { "{\"status\":{\"conditions\":[{\"type\":\"MemoryPressure\",\"status\":\"False\"},"
                  "{\"type\":\"Ready\",\"status\":\"False\",\"reason\":\"KubeletNotReady\",\"message\":"
                  "\"runtime network not ready: cni config uninitialized\"}]}}",
                  0, "KubeletNotReady: runtime network not ready: cni config uninitialized" },
                { "{\"status\":{}}", 0, "no Ready condition yet" },
                { "{}", 0, "no Ready condition yet" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(json_decrefp) json_t *node = json_loads(cases[i].json, 0, NULL);
                _cleanup_free_ char *words = NULL;
                assert_non_null(node);
                assert_int_equal(join_node_ready(node, &words), cases[i].ready);
                if (cases[i].words)
                        assert_string_equal(words, cases[i].words);
                else
                        assert_null(words);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ours_only),     cmocka_unit_test(test_states),
                cmocka_unit_test(test_refusal_noted), cmocka_unit_test(test_not_a_list),
                cmocka_unit_test(test_node_ready),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
