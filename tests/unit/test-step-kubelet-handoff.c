/* SPDX-License-Identifier: Apache-2.0 */
/* The kubelet handoff step alone (daemon/step-kubelet-handoff.c): a master's plan over the Nodes it listed
 * (its own from what it sees, another's from the report on it, none yet: bootstrap), a worker's report, what
 * `protokube plan` prints, and kubelet.env's flags with spec.kubelet.selfHosted. The lock's holder itself
 * is read from /proc (basic/flock-holder.h, its own test); the real handoff runs in
 * tests/integration/test_kubelet_handoff.py. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "daemon/pass-types.h"
#include "daemon/step-kubelet-config.h"
#include "daemon/step-kubelet-handoff.h"
#include "pass-step-test.h"
#include "unit-test.h"

#define SPEC                                                                                       \
        "apiVersion: protokube/v1alpha1\nkind: Cluster\nmetadata:\n  name: demo.k8s.test\nspec:\n" \
        "  etcdClusters:\n    - name: main\n      image: registry.k8s.io/etcd:3.4.13-0\n"          \
        "  stateStore: file:///nonexistent/protokube-test\n"                                       \
        "  pki:\n    dir: /pki\n"                                                                  \
        "  kubelet:\n    selfHosted: true\n"                                                       \
        "  kubernetesVersion: 1.20.2\n"

static const NodeSettings master = { .role = NODE_ROLE_MASTER,
                                     .node_name = "a",
                                     .internal_ip = "10.0.0.1",
                                     .manifest_dir = "/m",
                                     .kubelet_dir = "/k",
                                     .config_dir = "/c" };
static const NodeSettings worker = { .role = NODE_ROLE_WORKER,
                                     .node_name = "w1",
                                     .internal_ip = "10.0.1.1",
                                     .manifest_dir = "/m",
                                     .kubelet_dir = "/k",
                                     .config_dir = "/c" };

/* a: no report, no taint; w1: reports managed, tainted; w2: no report yet, untainted; w3: managed, clean. */
#define NODES                                                                              \
        "{\"items\": ["                                                                    \
        "{\"metadata\": {\"name\": \"a\", \"resourceVersion\": \"10\"}, \"spec\": {}},"    \
        "{\"metadata\": {\"name\": \"w1\", \"resourceVersion\": \"11\", \"annotations\": " \
        "{\"protokube.io/kubelet-holder\": \"managed\"}}, \"spec\": {\"taints\": ["        \
        "{\"key\": \"node.kubernetes.io/not-ready\", \"effect\": \"NoSchedule\"},"         \
        "{\"key\": \"protokube.io/bootstrap-kubelet\", \"effect\": \"NoSchedule\"}]}},"    \
        "{\"metadata\": {\"name\": \"w2\", \"resourceVersion\": \"12\"}, \"spec\": {}},"   \
        "{\"metadata\": {\"name\": \"w3\", \"resourceVersion\": \"13\", \"annotations\": " \
        "{\"protokube.io/kubelet-holder\": \"managed\"}}, \"spec\": {}}]}"

static void master_observation(PassObservation *o, PassKubeletHolder holder) {
        json_error_t e;
        *o = (PassObservation){};
        o->volumes.node.name = strdup("a");
        assert_non_null(o->volumes.node.name);
        o->kubelet_handoff = (PassKubeletHandoffObserved){ .enabled = true, .holder = holder };
        o->kubelet_handoff.facts = (ProcessFacts){ .pid = 4242, .started = 1795000000ULL * USEC_PER_SEC };
        assert_non_null(o->kubelet_handoff.nodes = json_loads(NODES, 0, &e));
}

static void test_master_taints_every_node_by_its_holder(void **state) {
        Pass *p = pass_test_new(SPEC, &master);
        PassObservation o;
        PassPlan pl = {};
        master_observation(&o, PASS_KUBELET_HOLDER_BOOTSTRAP);
        assert_int_equal(pass_step_kubelet_handoff_master.plan(p, &o, &pl), 0);
        const PassKubeletHandoffPlan *k = &pl.kubelet_handoff;
        assert_int_equal(k->n_changes, 3);
        assert_string_equal(k->changes[0].name, "a"); /* its own: reported, tainted */
        assert_string_equal(k->changes[0].holder, "bootstrap");
        assert_int_equal(k->changes[0].taint, 1);
        assert_string_equal(k->changes[1].name, "w1"); /* reports managed: the taint off */
        assert_null(k->changes[1].holder);
        assert_int_equal(k->changes[1].taint, -1);
        assert_string_equal(k->changes[2].name, "w2"); /* no report yet: its bootstrap kubelet */
        assert_int_equal(k->changes[2].taint, 1);
        _cleanup_free_ char *text = pass_test_print(&pass_step_kubelet_handoff_master, p, &o, &pl, NULL);
        assert_string_equal(text, "kubelet-holder bootstrap pid=4242 since=2026-11-18T11:06:40Z\n"
                                  "kubelet-taint a add protokube.io/bootstrap-kubelet:NoSchedule\n"
                                  "kubelet-report a protokube.io/kubelet-holder=bootstrap\n"
                                  "kubelet-taint w1 remove protokube.io/bootstrap-kubelet:NoSchedule\n"
                                  "kubelet-taint w2 add protokube.io/bootstrap-kubelet:NoSchedule\n");
        pass_plan_done(&pl);
        pass_observation_done(&o);

        /* the managed kubelet holds a: its taint stays off, its report changes */
        master_observation(&o, PASS_KUBELET_HOLDER_MANAGED);
        snprintf(o.kubelet_handoff.facts.pod_uid, sizeof(o.kubelet_handoff.facts.pod_uid), "%s",
                 "3f1c0000-0000-4000-8000-00000000abcd");
        pl = (PassPlan){};
        assert_int_equal(pass_step_kubelet_handoff_master.plan(p, &o, &pl), 0);
        assert_int_equal(pl.kubelet_handoff.n_changes, 3);
        assert_string_equal(pl.kubelet_handoff.changes[0].holder, "managed");
        assert_int_equal(pl.kubelet_handoff.changes[0].taint, 0);
        free(text);
        text = pass_test_print(&pass_step_kubelet_handoff_master, p, &o, &pl, NULL);
        assert_true(startswith(text,
                               "kubelet-holder managed pod=3f1c0000-0000-4000-8000-00000000abcd pid=4242 "
                               "since=2026-11-18T11:06:40Z\n"));
        pass_plan_done(&pl);
        pass_observation_done(&o);
        pass_free(p);
}

/* A holder that could not be read, or Nodes that could not be listed: nothing changes. */
static void test_master_changes_nothing_it_could_not_see(void **state) {
        Pass *p = pass_test_new(SPEC, &master);
        PassObservation o;
        PassPlan pl = {};
        master_observation(&o, PASS_KUBELET_HOLDER_BOOTSTRAP);
        o.kubelet_handoff.status = -EACCES;
        o.kubelet_handoff.note = strdup("cannot tell who holds /k/kubelet.lock: Permission denied");
        assert_int_equal(pass_step_kubelet_handoff_master.plan(p, &o, &pl), 0);
        assert_int_equal(pl.kubelet_handoff.n_changes, 0);
        _cleanup_free_ char *text = pass_test_print(&pass_step_kubelet_handoff_master, p, &o, &pl, NULL);
        assert_true(startswith(text, "kubelet-holder unknown: cannot tell who holds /k/kubelet.lock"));
        pass_plan_done(&pl);
        pass_observation_done(&o);

        master_observation(&o, PASS_KUBELET_HOLDER_BOOTSTRAP);
        json_decref(o.kubelet_handoff.nodes);
        o.kubelet_handoff.nodes = NULL;
        o.kubelet_handoff.node_note = strdup("the API did not answer");
        pl = (PassPlan){};
        assert_int_equal(pass_step_kubelet_handoff_master.plan(p, &o, &pl), 0);
        assert_int_equal(pl.kubelet_handoff.n_changes, 0);
        free(text);
        text = pass_test_print(&pass_step_kubelet_handoff_master, p, &o, &pl, NULL);
        assert_contains(text, "kubelet-taint: the Nodes not read: the API did not answer\n");
        pass_plan_done(&pl);
        pass_observation_done(&o);
        pass_free(p);
}

/* A worker reports its holder on its Node when the Node says otherwise, and never taints. */
static void test_worker_reports(void **state) {
        Pass *p = pass_test_new(SPEC, &worker);
        PassObservation o = {};
        PassPlan pl = {};
        o.kubelet_handoff =
            (PassKubeletHandoffObserved){ .enabled = true, .holder = PASS_KUBELET_HOLDER_MANAGED };
        o.node_join.node_read = true;
        o.node_join.kubelet_holder = strdup("bootstrap");
        assert_int_equal(pass_step_kubelet_handoff_worker.plan(p, &o, &pl), 0);
        assert_int_equal(pl.kubelet_handoff.n_changes, 1);
        assert_string_equal(pl.kubelet_handoff.changes[0].name, "w1");
        assert_string_equal(pl.kubelet_handoff.changes[0].holder, "managed");
        assert_int_equal(pl.kubelet_handoff.changes[0].taint, 0);
        pass_plan_done(&pl);

        free(o.node_join.kubelet_holder);
        o.node_join.kubelet_holder = strdup("managed");
        pl = (PassPlan){};
        assert_int_equal(pass_step_kubelet_handoff_worker.plan(p, &o, &pl), 0);
        assert_int_equal(pl.kubelet_handoff.n_changes, 0);
        pass_plan_done(&pl);
        pass_observation_done(&o);
        pass_free(p);
}

/* kubelet.env with selfHosted: the lock for both kubelets, and the node's file fields as flags. */
static void test_env_has_the_lock_and_the_node_settings(void **state) {
        Pass *p = pass_test_new(SPEC, &master);
        PassObservation o = {};
        PassPlan pl = {};
        assert_int_equal(pass_step_kubelet_config.plan(p, &o, &pl), 0);
        assert_contains(pl.kubelet_config.env, " --client-ca-file=/pki/kubelet/ca.crt ");
        assert_contains(pl.kubelet_config.env, " --exit-on-lock-contention=true ");
        assert_contains(pl.kubelet_config.env, " --lock-file=/k/kubelet.lock ");
        assert_contains(pl.kubelet_config.env, " --pod-manifest-path=/m ");
        pass_plan_done(&pl);
        pass_observation_done(&o);
        pass_free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_master_taints_every_node_by_its_holder),
                cmocka_unit_test(test_master_changes_nothing_it_could_not_see),
                cmocka_unit_test(test_worker_reports),
                cmocka_unit_test(test_env_has_the_lock_and_the_node_settings),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
