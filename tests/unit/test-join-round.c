/* SPDX-License-Identifier: Apache-2.0 */
/* A round's plan (join/join-round.h) over observations built by hand: which CSRs it takes up (open ones
 * of the kubelet signers, nothing finished or another signer's), approval and signing with and without a
 * CA, one approved by hand that the signer refuses, a free name asked for by two machines at once (both
 * refused, whatever the order) or twice by one (both go on), and the bindings to adopt. */
#include <string.h>

#include "basic/string-util.h"
#include "join/join-round.h"
#include "shared/crypto.h"
#include "shared/openssl-util.h"
#include "unit-test.h"

#define T0 (1767225600ULL * USEC_PER_SEC) /* 2026-01-01T00:00:00Z */

/* A CSR of a new key (or of key) for node, by a bootstrap token or the node, of signer, with condition
 * (NULL: pending) and a certificate or not. */
static JoinCsr *csr(const char *name, EVP_PKEY *key, const char *node, const char *signer,
                    const char *condition, bool with_certificate) {
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *own = NULL;
        _cleanup_free_ char *cn = strjoin("system:node:", node), *pem = NULL, *b64 = NULL, *text = NULL;
        if (!key) {
                assert_int_equal(pki_key_generate(PKI_KEY_ECDSA_P256, &own), 0);
                key = own;
        }
        assert_int_equal(pki_csr_create(key, cn, "system:nodes", NULL, NULL, NULL, &pem), 0);
        assert_int_equal(crypto_base64_encode(pem, strlen(pem), &b64), 0);
        text = strprintf("{\"apiVersion\":\"certificates.k8s.io/v1\",\"kind\":\"CertificateSigningRequest\","
                         "\"metadata\":{\"name\":\"%s\",\"resourceVersion\":\"5\"},"
                         "\"spec\":{\"signerName\":\"%s\",\"request\":\"%s\","
                         "\"usages\":[\"digital signature\",\"key encipherment\",\"client auth\"],"
                         "\"username\":\"system:bootstrap:abcdef\",\"groups\":[\"system:bootstrappers\"]},"
                         "\"status\":{\"conditions\":[%s%s%s]%s}}",
                         name, signer, b64, condition ? "{\"type\":\"" : "", strempty(condition),
                         condition ? "\",\"status\":\"True\"}" : "",
                         with_certificate ? ",\"certificate\":\"eA==\"" : "");
        json_t *o = json_loads(text, 0, NULL);
        JoinCsr *c = NULL;
        assert_non_null(o);
        assert_int_equal(join_csr_from_json(o, &c, NULL), 0);
        json_decref(o);
        return c;
}

/* A CA for the settings: the plan asks only whether there is one. */
static X509 *a_ca(void) {
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *k = NULL;
        X509 *ca = NULL;
        assert_int_equal(pki_key_generate(PKI_KEY_ECDSA_P256, &k), 0);
        assert_int_equal(pki_ca_create("kubernetes-ca", k, 0, T0, &ca), 0);
        return ca;
}

static void observation_free(JoinObservation *o) {
        for (size_t i = 0; i < o->n_csrs; i++)
                join_csr_free(o->csrs[i]);
}

static const JoinCsrPlan *planned(const JoinObservation *o, const JoinPlan *p, const char *name) {
        for (size_t i = 0; i < p->n_csrs; i++)
                if (streq(o->csrs[p->csrs[i].csr]->name, name))
                        return &p->csrs[i];
        return NULL;
}

static void test_what_a_round_takes_up(void **state) {
        JoinCsr *csrs[] = {
                csr("new", NULL, "w1", JOIN_SIGNER_CLIENT, NULL, false),
                csr("approved-before", NULL, "w2", JOIN_SIGNER_CLIENT, "Approved", false),
                csr("done", NULL, "w3", JOIN_SIGNER_CLIENT, "Approved", true),
                csr("denied", NULL, "w4", JOIN_SIGNER_CLIENT, "Denied", false),
                csr("failed", NULL, "w5", JOIN_SIGNER_CLIENT, "Failed", false),
                csr("other-signer", NULL, "w6", "kubernetes.io/kube-apiserver-client", NULL, false),
                /* approved by hand, but a serving signer's request with a client usage */
                csr("hand-approved", NULL, "w7", JOIN_SIGNER_SERVING, "Approved", false),
                NULL,
        };
        JoinObservation o = { .csrs = csrs, .n_csrs = ELEMENTSOF(csrs) };
        _cleanup_(X509_freep) X509 *ca = a_ca();
        JoinSettings with_ca = { .ca = ca, .lifetime = 3600 * USEC_PER_SEC }, without = {};
        JoinPlan p = {};

        assert_int_equal(join_plan(&o, &with_ca, &p), 0);
        assert_int_equal(p.n_csrs, 3);
        const JoinCsrPlan *e = planned(&o, &p, "new");
        assert_int_equal(e->decision.verdict, JOIN_VERDICT_APPROVE);
        assert_int_equal(e->decision.bind, JOIN_BIND_CREATE);
        assert_true(e->sign);
        e = planned(&o, &p, "approved-before");
        assert_int_equal(e->decision.verdict, JOIN_VERDICT_IGNORE);
        assert_string_equal(e->decision.node, "w2"); /* for the log and `protokube csr` */
        assert_true(e->sign);
        assert_null(e->not_signed);
        e = planned(&o, &p, "hand-approved");
        assert_false(e->sign);
        assert_non_null(strstr(e->not_signed, "usage 'client auth' is not one of 'server auth'"));
        join_plan_done(&p);

        /* no CA: approve, sign nothing */
        assert_int_equal(join_plan(&o, &without, &p), 0);
        assert_int_equal(p.n_csrs, 3);
        for (size_t i = 0; i < p.n_csrs; i++)
                assert_false(p.csrs[i].sign);
        assert_int_equal(planned(&o, &p, "new")->decision.verdict, JOIN_VERDICT_APPROVE);
        join_plan_done(&p);
        o.n_csrs--; /* the NULL: an object that was no CSR */
        observation_free(&o);
}

static void test_a_name_two_machines_ask_for(void **state) {
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *k = NULL;
        assert_int_equal(pki_key_generate(PKI_KEY_ECDSA_P256, &k), 0);
        JoinCsr *csrs[] = {
                csr("a", NULL, "w1", JOIN_SIGNER_CLIENT, NULL, false),
                csr("b", NULL, "w1", JOIN_SIGNER_CLIENT, NULL, false),
                csr("c", NULL, "w2", JOIN_SIGNER_CLIENT, NULL, false),
                /* one machine asking twice (a kubelet restarted): both go on, the second loses the create */
                csr("d1", k, "w3", JOIN_SIGNER_CLIENT, NULL, false),
                csr("d2", k, "w3", JOIN_SIGNER_CLIENT, NULL, false),
        };
        JoinObservation o = { .csrs = csrs, .n_csrs = ELEMENTSOF(csrs) };
        _cleanup_(X509_freep) X509 *ca = a_ca();
        JoinSettings s = { .ca = ca, .lifetime = 3600 * USEC_PER_SEC };
        JoinPlan p = {};
        assert_int_equal(join_plan(&o, &s, &p), 0);
        for (int i = 0; i < 2; i++) {
                const JoinCsrPlan *e = planned(&o, &p, i ? "b" : "a");
                assert_int_equal(e->decision.verdict, JOIN_VERDICT_REFUSE);
                assert_int_equal(e->decision.bind, JOIN_BIND_NONE);
                assert_null(e->decision.machine);
                assert_false(e->sign);
                assert_non_null(
                    strstr(e->decision.reason,
                           "several machines ask for the free node name w1 at once (requests a, b)"));
        }
        assert_int_equal(planned(&o, &p, "c")->decision.verdict, JOIN_VERDICT_APPROVE);
        assert_int_equal(planned(&o, &p, "d1")->decision.bind, JOIN_BIND_CREATE);
        assert_int_equal(planned(&o, &p, "d2")->decision.bind, JOIN_BIND_CREATE);
        join_plan_done(&p);

        /* the same with a released name: the replacement goes to neither */
        JoinBinding b = { .node = (char *)"w1",
                          .machine = (char *)"key:sha256:00",
                          .since = T0,
                          .node_uid = (char *)"n-1",
                          .resource_version = (char *)"3" };
        o.bindings = &b;
        o.n_bindings = 1;
        assert_int_equal(join_plan(&o, &s, &p), 0);
        assert_int_equal(planned(&o, &p, "a")->decision.verdict, JOIN_VERDICT_REFUSE);
        assert_int_equal(planned(&o, &p, "b")->decision.verdict, JOIN_VERDICT_REFUSE);
        join_plan_done(&p);
        o.n_csrs = 5;
        observation_free(&o);
}

static void test_adopt(void **state) {
        JoinBinding b[] = {
                { .node = (char *)"w1", .machine = (char *)"m1", .since = T0 },
                { .node = (char *)"w2", .machine = (char *)"m2", .since = T0, .node_uid = (char *)"n-2" }
        };
        JoinNode n[] = { { .name = "w1", .uid = "n-1" }, { .name = "w2", .uid = "n-2" } };
        JoinObservation o = { .bindings = b, .n_bindings = 2, .nodes = n, .n_nodes = 2 };
        JoinPlan p = {};
        assert_int_equal(join_plan(&o, &(JoinSettings){}, &p), 0);
        assert_int_equal(p.n_csrs, 0);
        assert_int_equal(p.n_adopt, 1);
        assert_int_equal(p.adopt[0], 0);
        assert_int_equal(p.adopt_nodes[0], 0);
        join_plan_done(&p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_what_a_round_takes_up),
                cmocka_unit_test(test_a_name_two_machines_ask_for),
                cmocka_unit_test(test_adopt),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
