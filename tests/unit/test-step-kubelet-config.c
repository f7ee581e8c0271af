/* SPDX-License-Identifier: Apache-2.0 */
/* A master's kubelet, its step alone (daemon/step-kubelet-config.c): its KubeletConfiguration with the
 * node's manifest directory and the pki layout's kubeconfig and CA, and kubelet.env with the flags beside
 * the file and the node's name and address; written once, then current; a file that cannot be read is named
 * and nothing is written. The real kubelet starts from these files in tests/integration/test_k8s_node.py and
 * the demos. */
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "daemon/pass-types.h"
#include "daemon/step-kubelet-config.h"
#include "pass-step-test.h"
#include "unit-test.h"

#define SPEC                                                                                       \
        "apiVersion: protokube/v1alpha1\nkind: Cluster\nmetadata:\n  name: demo.k8s.test\nspec:\n" \
        "  etcdClusters:\n    - name: main\n      image: registry.k8s.io/etcd:3.4.13-0\n"          \
        "  stateStore: file:///nonexistent/protokube-test\n"                                       \
        "  pki:\n    dir: /pki\n"                                                                  \
        "  kubelet:\n    cgroupRoot: /pk-a\n    syncFrequency: 10s\n"                              \
        "  kubernetesVersion: 1.20.2\n"

static const NodeSettings master = { .role = NODE_ROLE_MASTER,
                                     .node_name = "a",
                                     .internal_ip = "10.0.0.1",
                                     .manifest_dir = "/m",
                                     .kubelet_dir = "/k",
                                     .config_dir = "/c" };

static void plan(const Pass *p, const PassObservation *o, PassPlan *ret) {
        *ret = (PassPlan){};
        assert_int_equal(pass_step_kubelet_config.plan(p, o, ret), 0);
}

static void test_files(void **state) {
        Pass *p = pass_test_new(SPEC, &master);
        PassObservation o = {};
        PassPlan first, again;
        plan(p, &o, &first);
        const PassKubeletConfigPlan *k = &first.kubelet_config;
        assert_int_equal(k->status, 0);
        assert_true(k->write_config && k->write_env);
        assert_true(startswith(k->config, "apiVersion: kubelet.config.k8s.io/v1beta1\n"));
        assert_contains(k->config, "staticPodPath: /m\n");
        assert_contains(k->config, "clientCAFile: /pki/kubelet/ca.crt\n");
        assert_contains(k->config, "cgroupRoot: /pk-a\n");
        assert_contains(k->config, "syncFrequency: 10s\n");
        assert_contains(k->env,
                        "KUBELET_ARGS=\"--cert-dir=/k/pki --config=/k/config.yaml --hostname-override=a "
                        "--kubeconfig=/pki/kubelet/kubeconfig --node-ip=10.0.0.1 --v=2\"\n");
        _cleanup_free_ char *text = pass_test_print(&pass_step_kubelet_config, p, &o, &first, NULL);
        assert_string_equal(text, "kubelet-write /k/config.yaml\nkubelet-write /k/kubelet.env\n");

        assert_non_null(o.kubelet_config.config = strdup(k->config));
        assert_non_null(o.kubelet_config.env = strdup(k->env));
        plan(p, &o, &again);
        assert_false(again.kubelet_config.write_config || again.kubelet_config.write_env);
        free(text);
        text = pass_test_print(&pass_step_kubelet_config, p, &o, &again, NULL);
        assert_string_equal(text, "kubelet: its files are current\n");
        pass_plan_done(&first);
        pass_plan_done(&again);
        pass_observation_done(&o);
        pass_free(p);
}

/* A file that cannot be read: named, nothing planned to be written over it. A value kubelet.env cannot
 * carry (a space in the node's name is refused earlier; here a manifest directory with one): refused. */
static void test_errors(void **state) {
        Pass *p = pass_test_new(SPEC, &master);
        PassObservation o = { .kubelet_config = { .read_error = -EACCES } };
        PassPlan pl;
        plan(p, &o, &pl);
        assert_int_equal(pl.kubelet_config.status, -EACCES);
        assert_false(pl.kubelet_config.write_config || pl.kubelet_config.write_env);
        int r;
        _cleanup_free_ char *text = pass_test_print(&pass_step_kubelet_config, p, &o, &pl, &r);
        assert_int_equal(r, -EACCES);
        assert_contains(text, "kubelet: cannot plan: cannot read its files in /k: ");
        pass_plan_done(&pl);

        o = (PassObservation){};
        p->node.kubelet_dir = "/k with space";
        plan(p, &o, &pl);
        assert_int_equal(pl.kubelet_config.status, -EINVAL);
        assert_contains(pl.kubelet_config.note, "cannot render its flags");
        pass_plan_done(&pl);
        pass_free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_files),
                cmocka_unit_test(test_errors),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
