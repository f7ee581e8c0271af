/* SPDX-License-Identifier: Apache-2.0 */
/* A worker's kubelet bootstrap, its step alone (daemon/step-kubelet-boot.c): the plan hook, pure over a Pass
 * built from a spec text, node settings and observations built by hand, and what `protokube plan` prints
 * of it. The CA's discovery over the network and the real kubelet are tests/integration/test_worker.py's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "daemon/pass-types.h"
#include "daemon/step-kubelet-boot.h"
#include "model/cluster-view.h"
#include "pass-step-test.h"
#include "unit-test.h"

#define PIN    "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define TOKEN  "abcdef.0123456789abcdef"
#define SECRET "0123456789abcdef"

static const char spec_text[] = "apiVersion: protokube/v1alpha1\n"
                                "kind: Cluster\n"
                                "metadata:\n"
                                "  name: demo.k8s.test\n"
                                "spec:\n"
                                "  cloud: local\n"
                                "  etcdClusters:\n"
                                "    - name: main\n"
                                "      image: registry.k8s.io/etcd:3.4.13-0\n"
                                "  kubernetesVersion: 1.20.2\n"
                                "  kubelet:\n"
                                "    maxPods: 50\n";

static Pass *worker_pass(const char *pin, const char *token_file) {
        return pass_test_new(spec_text, &(NodeSettings){ .role = NODE_ROLE_WORKER,
                                                         .node_name = "w1",
                                                         .internal_ip = "10.0.1.5",
                                                         .manifest_dir = "/etc/kubernetes/manifests",
                                                         .kubelet_dir = "/k",
                                                         .ca_pin = pin,
                                                         .token_file = token_file });
}

#define CA_PEM "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

/* A worker that read its token and has none of its files yet; with masters, one of them served the CA
 * with the pin (the observation checked it), without, the observation found none to ask. */
static void observe(PassObservation *o, PassPlan *plan, size_t n_masters) {
        *o = (PassObservation){ .kubelet = { .observed = true, .has_token = true } };
        assert_int_equal(join_token_parse(TOKEN, &o->kubelet.token, NULL), 0);
        if (n_masters > 0)
                assert_non_null(o->kubelet.ca_found = strdup(CA_PEM));
        else {
                o->kubelet.ca_fetch_error = PK_EWAITING;
                assert_non_null(o->kubelet.ca_fetch_message =
                                    strdup("no master in the view yet to fetch the cluster's CA from"));
        }
        *plan = (PassPlan){};
}

/* A new worker: the CA to fetch first, then the three files; the kubelet's file has the node's facts and
 * the cluster's settings, the flags the bootstrap kubeconfig; only the bootstrap kubeconfig holds the
 * token, and `plan` never shows it. */
static void test_first_pass(void **state) {
        Pass *p = worker_pass(PIN, "/etc/protokube/token");
        PassObservation o;
        PassPlan plan;
        observe(&o, &plan, 2);
        assert_int_equal(pass_step_kubelet_boot.plan(p, &o, &plan), 0);
        PassKubeletPlan *k = &plan.kubelet;
        assert_int_equal(k->status, 0);
        assert_string_equal(k->ca, CA_PEM);
        assert_true(k->write_config && k->write_bootstrap && k->write_env);
        assert_contains(k->config, "kind: KubeletConfiguration\n");
        assert_contains(k->config, "clientCAFile: /k/ca.crt\n");
        assert_contains(k->config, "rotateCertificates: true\n");
        assert_contains(k->config, "serverTLSBootstrap: true\n");
        assert_contains(k->config, "staticPodPath: /etc/kubernetes/manifests\n");
        assert_contains(k->config, "maxPods: 50\n");
        assert_null(strstr(k->config, SECRET));
        assert_contains(k->env, "KUBELET_ARGS=\"");
        assert_contains(k->env, "--bootstrap-kubeconfig=/k/bootstrap-kubeconfig ");
        assert_contains(k->env, "--config=/k/config.yaml ");
        assert_contains(k->env, "--kubeconfig=/k/kubeconfig ");
        assert_contains(k->env, "--cert-dir=/k/pki ");
        assert_contains(k->env, "--hostname-override=w1 ");
        assert_contains(k->env, "--node-ip=10.0.1.5");
        assert_null(strstr(k->env, SECRET));
        assert_contains(k->bootstrap, "    server: https://api.internal.demo.k8s.test\n");
        assert_contains(k->bootstrap, "    certificate-authority: /k/ca.crt\n");
        assert_contains(k->bootstrap, "    token: " TOKEN "\n");

        int r;
        _cleanup_free_ char *text = pass_test_print(&pass_step_kubelet_boot, p, &o, &plan, &r);
        assert_int_equal(r, 0);
        assert_string_equal(text, "kubelet-write /k/ca.crt (the CA a master serves has the pin " PIN ")\n"
                                  "kubelet-write /k/config.yaml\n"
                                  "kubelet-write /k/bootstrap-kubeconfig\n"
                                  "kubelet-write /k/kubelet.env\n");
        pass_plan_done(&plan);
        pass_observation_done(&o);
        pass_free(p);
}

/* The files as the first pass left them, the CA pinned: nothing to write, and the kubelet is waiting for its
 * certificate; once it has it, a node without its token file any more still plans nothing. */
static void test_current(void **state) {
        Pass *p = worker_pass(PIN, "/etc/protokube/token");
        PassObservation o;
        PassPlan first, plan;
        observe(&o, &first, 1);
        assert_int_equal(pass_step_kubelet_boot.plan(p, &o, &first), 0);
        PassKubeletObserved *k = &o.kubelet;
        k->ca_pinned = true;
        free(k->ca_found); /* a pinned CA on disk: nobody is asked */
        k->ca_found = NULL;
        assert_non_null(k->config = strdup(first.kubelet.config));
        assert_non_null(k->env = strdup(first.kubelet.env));
        assert_non_null(k->bootstrap = strdup(first.kubelet.bootstrap));
        k->bootstrap_len = first.kubelet.bootstrap_len;
        for (int round = 0; round < 2; round++) {
                if (round == 1) { /* the kubelet has its certificate; the token file is gone */
                        k->joined = true;
                        k->has_token = false;
                        k->token_error = -ENOKEY;
                }
                plan = (PassPlan){};
                assert_int_equal(pass_step_kubelet_boot.plan(p, &o, &plan), 0);
                assert_int_equal(plan.kubelet.status, 0);
                assert_false(plan.kubelet.ca || plan.kubelet.write_config || plan.kubelet.write_bootstrap ||
                             plan.kubelet.write_env);
                int r;
                _cleanup_free_ char *text = pass_test_print(&pass_step_kubelet_boot, p, &o, &plan, &r);
                assert_int_equal(r, 0);
                assert_string_equal(
                    text, k->joined ? "kubelet: its files are current; it has its certificate\n"
                                    : "kubelet: its files are current; waiting for its certificate\n");
                pass_plan_done(&plan);
        }
        pass_plan_done(&first);
        pass_observation_done(&o);
        pass_free(p);
}

/* What blocks a worker's bootstrap, each said with the join's stage it stops: no pin, no token (before it
 * joined), an unreadable token file (its words), no master to fetch the CA from (waiting), no master
 * serving a CA with the pin (a wrong pin). Nothing is planned to be written. */
static void test_blocked(void **state) {
        static const struct {
                const char *pin;
                bool has_token, masters;
                int token_error;
                const char *token_message;
                int status;
                PassJoinStage stage;
                const char *words;
        } cases[] = {
                { NULL, true, true, 0, NULL, -ENOKEY, PASS_JOIN_PIN,
                  "cannot bootstrap: no CA pin: give --ca-pin" },
                { PIN, false, true, -ENOKEY, "no bootstrap token: give --token-file", -ENOKEY,
                  PASS_JOIN_TOKEN, "cannot bootstrap: no bootstrap token: give --token-file" },
                { PIN, false, true, -EPERM,
                  "bootstrap token file /t: mode 0644 lets others read a credential", -EPERM,
                  PASS_JOIN_TOKEN, "cannot bootstrap: bootstrap token file /t: mode 0644" },
                { PIN, true, false, 0, NULL, PK_EWAITING, PASS_JOIN_PIN,
                  "waiting: no master in the view yet to fetch the cluster's CA from" },
                { PIN, true, true, 0, NULL, -EACCES, PASS_JOIN_PIN,
                  "cannot bootstrap: no CA with the pin " PIN ": 10.0.0.1: the CA has sha256:99" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                Pass *p = worker_pass(cases[i].pin, "/t");
                PassObservation o;
                PassPlan plan;
                observe(&o, &plan, cases[i].masters ? 1 : 0);
                o.kubelet.has_token = cases[i].has_token;
                o.kubelet.token_error = cases[i].token_error;
                o.kubelet.token_message = cases[i].token_message ? strdup(cases[i].token_message) : NULL;
                if (cases[i].status == -EACCES) { /* the masters answered, none with the pin */
                        free(o.kubelet.ca_found);
                        o.kubelet.ca_found = NULL;
                        o.kubelet.ca_fetch_error = -EACCES;
                        o.kubelet.ca_fetch_message =
                            strdup("no CA with the pin " PIN ": 10.0.0.1: the CA has sha256:99");
                }
                assert_int_equal(pass_step_kubelet_boot.plan(p, &o, &plan), 0);
                assert_int_equal(plan.kubelet.status, cases[i].status);
                assert_int_equal(plan.kubelet.stage, cases[i].stage);
                assert_null(plan.kubelet.ca);
                assert_false(plan.kubelet.write_config || plan.kubelet.write_bootstrap ||
                             plan.kubelet.write_env);
                int r;
                _cleanup_free_ char *text = pass_test_print(&pass_step_kubelet_boot, p, &o, &plan, &r);
                assert_int_equal(r, cases[i].status == PK_EWAITING ? 0 : cases[i].status);
                assert_contains(text, cases[i].words);
                pass_plan_done(&plan);
                pass_observation_done(&o);
                pass_free(p);
        }
}

/* The worker's three rendered files for the test's spec, against tests/golden/worker/ (the token there is
 * the test's, not a secret). PROTOKUBE_UPDATE_GOLDEN=1 writes them instead
 * (scripts/update-golden-worker.sh): review the diff, it is what every worker's kubelet runs with. */
static void check_golden(const char *name, const char *text) {
        _cleanup_free_ char *path = strjoin(SRCDIR, "/tests/golden/worker/", name), *want = NULL;
        assert_non_null(path);
        if (getenv("PROTOKUBE_UPDATE_GOLDEN")) {
                assert_int_equal(write_file_atomic(path, text, strlen(text), 0644, true) >= 0, true);
                return;
        }
        size_t len;
        if (read_full_file(path, 1U << 20, &want, &len) < 0)
                fail_msg("cannot read %s (scripts/update-golden-worker.sh writes it)", path);
        if (!streq(want, text))
                fail_msg("%s differs from the rendered text:\n%s", path, text);
}

static void test_golden(void **state) {
        Pass *p = worker_pass(PIN, "/etc/protokube/token");
        PassObservation o;
        PassPlan plan;
        observe(&o, &plan, 1);
        assert_int_equal(pass_step_kubelet_boot.plan(p, &o, &plan), 0);
        check_golden("config.yaml", plan.kubelet.config);
        check_golden("kubelet.env", plan.kubelet.env);
        check_golden("bootstrap-kubeconfig", plan.kubelet.bootstrap);
        pass_plan_done(&plan);
        pass_observation_done(&o);
        pass_free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_first_pass),
                cmocka_unit_test(test_current),
                cmocka_unit_test(test_blocked),
                cmocka_unit_test(test_golden),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
