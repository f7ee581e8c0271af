/* SPDX-License-Identifier: Apache-2.0 */
/* A worker's kube-proxy, its step alone (daemon/step-node-proxy.c): the static pod with the node's kubelet
 * kubeconfig and name in its KubeProxyConfiguration under the node's --config-dir, both written once the
 * kubelet has joined and only when they change; nothing in a self-hosted cluster. The real kube-proxy is
 * tests/integration/test_worker_join.py's. */
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "daemon/pass-types.h"
#include "daemon/step-node-proxy.h"
#include "pass-step-test.h"
#include "unit-test.h"

#define SPEC PASS_TEST_WORKER_SPEC

static const NodeSettings worker = PASS_TEST_WORKER;

static void plan(const Pass *p, const PassObservation *o, PassPlan *ret) {
        *ret = (PassPlan){};
        assert_int_equal(pass_step_node_proxy.plan(p, o, ret), 0);
}

/* Joined: the pod reading its file (its directory mounted) with the kubelet's kubeconfig (its directory
 * mounted) and the node's name; written once, then current. */
static void test_joined(void **state) {
        Pass *p = pass_test_new(SPEC, &worker);
        PassObservation o = { .node_proxy = { .joined = true } };
        PassPlan first, again;
        plan(p, &o, &first);
        assert_int_equal(first.node_proxy.status, 0);
        assert_true(first.node_proxy.write);
        assert_string_equal(first.node_proxy.path, "/m/kube-proxy.manifest");
        assert_contains(first.node_proxy.text, "--config=/c/kube-proxy/config.yaml\n");
        assert_null(strstr(first.node_proxy.text, "--kubeconfig"));
        assert_null(strstr(first.node_proxy.text, "--hostname-override"));
        assert_contains(first.node_proxy.text, "path: /k\n");
        assert_contains(first.node_proxy.text, "path: /c/kube-proxy\n");
        assert_null(strstr(first.node_proxy.text, "/lib/modules"));
        assert_true(first.node_proxy.write_config);
        assert_string_equal(first.node_proxy.config.path, "/c/kube-proxy/config.yaml");
        assert_contains(first.node_proxy.config.text, "clientConnection:\n  kubeconfig: /k/kubeconfig\n");
        assert_contains(first.node_proxy.config.text, "hostnameOverride: w1\n");
        _cleanup_free_ char *text = pass_test_print(&pass_step_node_proxy, p, &o, &first, NULL);
        assert_string_equal(text, "kube-proxy-write /c/kube-proxy/config.yaml\n"
                                  "kube-proxy-write /m/kube-proxy.manifest\n");

        assert_non_null(o.node_proxy.text = strdup(first.node_proxy.text));
        plan(p, &o, &again);
        assert_false(again.node_proxy.write);
        assert_true(again.node_proxy.write_config); /* the file alone is written again */
        pass_plan_done(&again);
        assert_non_null(o.node_proxy.config_text = strdup(first.node_proxy.config.text));
        plan(p, &o, &again);
        assert_false(again.node_proxy.write);
        assert_false(again.node_proxy.write_config);
        free(text);
        text = pass_test_print(&pass_step_node_proxy, p, &o, &again, NULL);
        assert_string_equal(text, "kube-proxy: /m/kube-proxy.manifest is current\n");
        pass_plan_done(&first);
        pass_plan_done(&again);
        pass_observation_done(&o);
        pass_free(p);
}

/* A manifest or a configuration file there that cannot be read (not absent): named, nothing written over it.
 */
static void test_unreadable(void **state) {
        Pass *p = pass_test_new(SPEC, &worker);
        PassObservation o = { .node_proxy = { .joined = true, .read_error = -EACCES } };
        PassPlan pl;
        plan(p, &o, &pl);
        assert_int_equal(pl.node_proxy.status, -EACCES);
        assert_false(pl.node_proxy.write || pl.node_proxy.write_config);
        assert_contains(pl.node_proxy.note, "cannot read its manifest in /m or its file in /c: ");
        pass_plan_done(&pl);
        pass_free(p);
}

/* Before the kubelet joined: waiting, nothing written. Self-hosted: the DaemonSet's, nothing planned. */
static void test_waiting_and_self_hosted(void **state) {
        Pass *p = pass_test_new(SPEC, &worker);
        PassObservation o = {};
        PassPlan pl;
        plan(p, &o, &pl);
        assert_int_equal(pl.node_proxy.status, PK_EWAITING);
        assert_false(pl.node_proxy.write);
        _cleanup_free_ char *text = pass_test_print(&pass_step_node_proxy, p, &o, &pl, NULL);
        assert_string_equal(text, "kube-proxy: waiting: the kubelet has not joined yet (no kubeconfig)\n");
        pass_plan_done(&pl);
        pass_free(p);

        p = pass_test_new(SPEC "  selfHosted: true\n  stateStore: file:///nonexistent/protokube-test\n",
                          &worker);
        o = (PassObservation){ .node_proxy = { .joined = true } };
        plan(p, &o, &pl);
        assert_null(pl.node_proxy.text);
        free(text);
        text = pass_test_print(&pass_step_node_proxy, p, &o, &pl, NULL);
        assert_string_equal(text, "kube-proxy: the self-hosted cluster's DaemonSet\n");
        pass_plan_done(&pl);
        pass_free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_joined),
                cmocka_unit_test(test_unreadable),
                cmocka_unit_test(test_waiting_and_self_hosted),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
