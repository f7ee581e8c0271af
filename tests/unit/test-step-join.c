/* SPDX-License-Identifier: Apache-2.0 */
/* The masters' approver and signer, its step alone (daemon/step-join.c): the plan hook, pure over a Pass
 * built from a spec text and observations built by hand (CSRs, the keystore's cluster CA from a file
 * state store), and what `protokube plan` prints of it: each CSR's decision and why, cluster-info's server
 * (the spec's secure port), and what it waits for. The round's own rules are in test-join-round.c. */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "daemon/pass-types.h"
#include "daemon/step-join.h"
#include "pass-step-test.h"
#include "pki/pki-csr.h"
#include "shared/crypto.h"
#include "shared/openssl-util.h"
#include "unit-test.h"

#define T0 (1767225600ULL * USEC_PER_SEC) /* 2026-01-01T00:00:00Z */

#define SPEC_HEAD                                         \
        "apiVersion: protokube/v1alpha1\n"                \
        "kind: Cluster\n"                                 \
        "metadata:\n"                                     \
        "  name: demo.k8s.test\n"                         \
        "spec:\n"                                         \
        "  cloud: local\n"                                \
        "  dns:\n"                                        \
        "    provider: hosts\n"                           \
        "    hosts:\n"                                    \
        "      file: /nonexistent/protokube-test/hosts\n" \
        "  etcdClusters:\n"                               \
        "    - name: main\n"                              \
        "      image: registry.k8s.io/etcd:3.5.16-0\n"    \
        "  kubernetesVersion: 1.31.2\n"

static const NodeSettings master_node = { .role = NODE_ROLE_MASTER, .node_name = "n1" };
static const char spec_text[] = SPEC_HEAD;
static const char spec_6443[] = SPEC_HEAD "  kubeAPIServer:\n"
                                          "    securePort: 6443\n"
                                          "  stateStore: file:///nonexistent/protokube-test/store\n"
                                          "  pki:\n"
                                          "    certificateLifetime: 48h\n";

/* A pending client CSR for cn, as a bootstrap token's user asks it. */
static JoinCsr *csr(const char *name, const char *cn, const char *org) {
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *key = NULL;
        _cleanup_free_ char *pem = NULL, *b64 = NULL, *text = NULL;
        assert_int_equal(pki_key_generate(PKI_KEY_ECDSA_P256, &key), 0);
        assert_int_equal(pki_csr_create(key, cn, org, NULL, NULL, NULL, &pem), 0);
        assert_int_equal(crypto_base64_encode(pem, strlen(pem), &b64), 0);
        text = strprintf("{\"apiVersion\":\"certificates.k8s.io/v1\",\"kind\":\"CertificateSigningRequest\","
                         "\"metadata\":{\"name\":\"%s\",\"resourceVersion\":\"5\"},"
                         "\"spec\":{\"signerName\":\"" JOIN_SIGNER_CLIENT "\",\"request\":\"%s\","
                         "\"usages\":[\"digital signature\",\"key encipherment\",\"client auth\"],"
                         "\"username\":\"system:bootstrap:abcdef\",\"groups\":[\"system:bootstrappers\"]},"
                         "\"status\":{}}",
                         name, b64);
        json_t *o = json_loads(text, 0, NULL);
        JoinCsr *c = NULL;
        assert_non_null(o);
        assert_int_equal(join_csr_from_json(o, &c, NULL), 0);
        json_decref(o);
        return c;
}

/* The round as observed: w1's bootstrap, and one with a foreign organization (refused). */
static void observe_round(PassObservation *o) {
        o->join_enabled = true;
        o->join.csrs = calloc(2, sizeof(JoinCsr *));
        assert_non_null(o->join.csrs);
        o->join.csrs[0] = csr("node-csr-w1", "system:node:w1", "system:nodes");
        o->join.csrs[1] = csr("node-csr-evil", "system:node:w2", "system:masters");
        o->join.n_csrs = 2;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

/* The keystore's cluster CA in o->certs, as the certificates' observation reads it. */
static void observe_keystore(PassObservation *o) {
        char root[] = "/tmp/pk-step-join-XXXXXX", url[64];
        Store *s = NULL;
        assert_non_null(mkdtemp(root));
        snprintf(url, sizeof(url), "file://%s", root);
        assert_int_equal(store_open(url, &s, NULL), 0);
        KeystoreSpec ks = KEYSTORE_SPEC_DEFAULTS;
        assert_int_equal(keystore_get_or_create(s, &ks, T0, &o->certs.keystore, NULL), 0);
        store_free(s);
        assert_int_equal(nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
}

static void test_plan_and_print(void **state) {
        Pass *p = pass_test_new(spec_text, &master_node);
        PassObservation o = {};
        PassPlan plan = {};
        observe_round(&o);
        observe_keystore(&o);
        assert_int_equal(pass_step_join.plan(p, &o, &plan), 0);
        assert_true(plan.join_planned);
        assert_true(plan.join_has_ca);
        assert_string_equal(plan.join_server, "https://api.internal.demo.k8s.test:443");
        assert_int_equal(plan.join.n_csrs, 2);
        assert_int_equal(plan.join.csrs[0].decision.verdict, JOIN_VERDICT_APPROVE);
        assert_true(plan.join.csrs[0].sign); /* the observed CA's certificate: the apply reads its key */
        assert_int_equal(plan.join.csrs[1].decision.verdict, JOIN_VERDICT_REFUSE);
        assert_false(plan.join.csrs[1].sign);

        char *text = pass_test_print(&pass_step_join, p, &o, &plan, NULL);
        assert_contains(text, "join: apply RBAC protokube:kubelet-bootstrap protokube:nodes-node-proxier\n");
        assert_contains(text, "join: publish kube-public/cluster-info (server "
                              "https://api.internal.demo.k8s.test:443) readable by system:anonymous\n");
        assert_contains(text, "join: node-csr-w1  node w1  client  by system:bootstrap:abcdef  approve: new "
                              "node w1");
        assert_contains(text, "join: node-csr-evil  node w2  client  by system:bootstrap:abcdef  refuse: ");
        assert_contains(text, "the subject's O must be exactly system:nodes");
        free(text);
        pass_plan_done(&plan);
        pass_observation_done(&o);
        pass_free(p);
}

/* On a cloud that lists its machines (the observation's, as aws' provider gives them): w1 is approved
 * only while it is the node name of one of the cluster's machines, and is bound to that machine. */
static void test_machines(void **state) {
        Pass *p = pass_test_new(spec_text, &master_node);
        for (int known = 0; known < 2; known++) {
                PassObservation o = {};
                PassPlan plan = {};
                observe_round(&o);
                o.join_machines_known = true;
                assert_non_null(o.cloud_machines = calloc(2, sizeof(CloudMachine)));
                assert_non_null(o.join_machines = calloc(2, sizeof(JoinMachine)));
                o.n_machines = 1;
                assert_non_null(o.cloud_machines[0].id = strdup("i-0abc"));
                assert_non_null(o.cloud_machines[0].node_name =
                                    strdup(known ? "w1" : "ip-10-0-0-9.ec2.internal"));
                o.join_machines[0] = (JoinMachine){ o.cloud_machines[0].id, o.cloud_machines[0].node_name };
                assert_int_equal(pass_step_join.plan(p, &o, &plan), 0);
                const JoinDecision *d = &plan.join.csrs[0].decision;
                assert_int_equal(d->verdict, known ? JOIN_VERDICT_APPROVE : JOIN_VERDICT_REFUSE);
                if (known)
                        assert_string_equal(d->machine, "i-0abc");
                else
                        assert_contains(d->reason, "w1 is not the node name of a machine of this cluster");
                pass_plan_done(&plan);
                pass_observation_done(&o);
        }
        pass_free(p);
}

/* No cluster CA in the keystore yet: approve, sign nothing, publish nothing; the spec's secure port. */
static void test_without_ca(void **state) {
        Pass *p = pass_test_new(spec_6443, &master_node);
        PassObservation o = {};
        PassPlan plan = {};
        observe_round(&o);
        assert_int_equal(pass_step_join.plan(p, &o, &plan), 0);
        assert_true(plan.join_planned);
        assert_false(plan.join_has_ca);
        assert_string_equal(plan.join_server, "https://api.internal.demo.k8s.test:6443");
        assert_int_equal(plan.join.csrs[0].decision.verdict, JOIN_VERDICT_APPROVE);
        assert_false(plan.join.csrs[0].sign);
        char *text = pass_test_print(&pass_step_join, p, &o, &plan, NULL);
        assert_contains(text, "join: kube-public/cluster-info not published: the keystore has no cluster CA "
                              "yet (nothing is signed)\n");
        assert_contains(text, "join: node-csr-w1  node w1  client");
        free(text);
        pass_plan_done(&plan);
        pass_observation_done(&o);
        pass_free(p);
}

static void test_idle_round(void **state) {
        Pass *p = pass_test_new(spec_text, &master_node);
        PassObservation o = { .join_enabled = true };
        PassPlan plan = {};
        observe_keystore(&o);
        assert_int_equal(pass_step_join.plan(p, &o, &plan), 0);
        char *text = pass_test_print(&pass_step_join, p, &o, &plan, NULL);
        assert_contains(text, "join: publish kube-public/cluster-info");
        assert_contains(text, "join: no open kubelet CSR\n");
        free(text);
        pass_plan_done(&plan);
        pass_observation_done(&o);
        pass_free(p);
}

/* The apiserver does not answer, the round could not be read, no client of its own: nothing planned. */
static void test_waiting_and_failed(void **state) {
        Pass *p = pass_test_new(spec_text, &master_node);
        PassObservation o = { .join_enabled = true, .join_status = PK_EWAITING };
        PassPlan plan = {};
        o.join_message = strdup("this master's apiserver (https://127.0.0.1:443) does not answer: refused");
        assert_int_equal(pass_step_join.plan(p, &o, &plan), 0);
        assert_false(plan.join_planned);
        char *text = pass_test_print(&pass_step_join, p, &o, &plan, NULL);
        assert_string_equal(text, "join: waiting: this master's apiserver (https://127.0.0.1:443) does not "
                                  "answer: refused\n");
        free(text);

        o.join_status = -EACCES;
        free(o.join_message);
        o.join_message = strdup("the CSRs could not be read: 403 Forbidden");
        assert_int_equal(pass_step_join.plan(p, &o, &plan), 0);
        assert_false(plan.join_planned);
        text = pass_test_print(&pass_step_join, p, &o, &plan, NULL);
        assert_string_equal(text, "join: not observed: the CSRs could not be read: 403 Forbidden\n");
        free(text);

        o.join_enabled = false;
        o.join_status = 0;
        assert_int_equal(pass_step_join.plan(p, &o, &plan), 0);
        assert_false(plan.join_planned);
        text = pass_test_print(&pass_step_join, p, &o, &plan, NULL);
        assert_string_equal(text, "");
        free(text);
        pass_plan_done(&plan);
        pass_observation_done(&o);
        pass_free(p);
}

/* The step belongs to the masters' table only. */
static void test_only_masters(void **state) {
        assert_int_equal(pass_step_join.roles, 1U << NODE_ROLE_MASTER);
        for (const PassRow *row = pass_role(NODE_ROLE_WORKER)->rows; row->step; row++)
                assert_ptr_not_equal(row->step, &pass_step_join);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_plan_and_print), cmocka_unit_test(test_without_ca),
                cmocka_unit_test(test_idle_round),     cmocka_unit_test(test_waiting_and_failed),
                cmocka_unit_test(test_only_masters),   cmocka_unit_test(test_machines),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
