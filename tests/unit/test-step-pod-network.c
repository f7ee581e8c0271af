/* SPDX-License-Identifier: Apache-2.0 */
/* kubenet's step alone (daemon/step-pod-network.c): its plan over observations built by hand (the Nodes as
 * the API gives them, the CNI file and the routes as they are) and what `protokube plan` prints of it. The
 * kernel's routes and the real kubelets are tests/integration/test_worker_join.py's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "daemon/pass-types.h"
#include "daemon/step-pod-network.h"
#include "pass-step-test.h"
#include "unit-test.h"

static Pass *test_pass(const char *provider) {
        _cleanup_free_ char *text = strprintf(
            "apiVersion: protokube/v1alpha1\nkind: Cluster\nmetadata:\n  name: demo.k8s.test\nspec:\n"
            "  etcdClusters:\n    - name: main\n      image: registry.k8s.io/etcd:3.4.13-0\n"
            "  kubernetesVersion: 1.20.2\n  networking:\n    provider: %s\n    cniConfDir: /cni\n",
            provider);
        assert_non_null(text);
        return pass_test_new(text, &(NodeSettings){ .role = NODE_ROLE_WORKER, .node_name = "w1" });
}

static void add_node(PassPodNetworkObserved *n, const char *name, const char *cidr, const char *ip) {
        KubeNodeNetwork *k = &n->nodes[n->n_nodes++];
        assert_non_null(k->name = strdup(name));
        assert_non_null(k->pod_cidrs = cidr ? strv_new(cidr) : strv_new(NULL));
        assert_non_null(k->internal_ips = ip ? strv_new(ip) : strv_new(NULL));
}

static void add_route(PassPodNetworkObserved *n, const char *spec, unsigned char protocol) {
        _cleanup_free_ char *err = NULL;
        assert_int_equal(netlink_route_parse_spec(spec, &n->routes[n->n_routes], &err), 0);
        n->routes[n->n_routes++].protocol = protocol;
}

/* w1 with Nodes a (a master), w1 itself and w2, which has no podCIDR yet. */
static void observe(PassObservation *o) {
        *o = (PassObservation){};
        PassPodNetworkObserved *n = &o->pod_network;
        n->observed = true;
        assert_non_null(n->self = strdup("w1"));
        assert_non_null(n->nodes = calloc(4, sizeof(KubeNodeNetwork)));
        add_node(n, "a", "100.96.0.0/24", "10.0.0.1");
        add_node(n, "w1", "100.96.1.0/24", "10.0.0.2");
        add_node(n, "w2", NULL, "10.0.0.3");
        assert_non_null(n->routes = calloc(4, sizeof(NetlinkRoute)));
}

static void test_first_pass(void **state) {
        Pass *p = test_pass("kubenet");
        PassObservation o;
        PassPlan plan = {};
        observe(&o);
        assert_int_equal(pass_step_pod_network_worker.plan(p, &o, &plan), 0);
        assert_int_equal(plan.pod_network.status, 0);
        assert_true(plan.pod_network.write_conflist);
        assert_non_null(strstr(plan.pod_network.conflist, "\"subnet\": \"100.96.1.0/24\""));
        int r;
        _cleanup_free_ char *text = pass_test_print(&pass_step_pod_network_worker, p, &o, &plan, &r);
        assert_int_equal(r, 0);
        assert_string_equal(text, "pod-network-write /cni/10-protokube-kubenet.conflist\n"
                                  "pod-network-route 100.96.0.0/24 via 10.0.0.1\n");
        pass_plan_done(&plan);
        pass_observation_done(&o);
        pass_free(p);
}

/* The file as written and the route there: nothing to do. A route of ours to a Node that is gone is
 * deleted; a prefix another owner routes is left to it, and said. */
static void test_routes(void **state) {
        Pass *p = test_pass("kubenet");
        PassObservation o;
        PassPlan first = {}, plan = {};
        observe(&o);
        assert_int_equal(pass_step_pod_network_worker.plan(p, &o, &first), 0);
        assert_non_null(o.pod_network.conflist = strdup(first.pod_network.conflist));
        add_route(&o.pod_network, "100.96.0.0/24=10.0.0.1", NETLINK_ROUTE_PROTO_PROTOKUBE);
        assert_int_equal(pass_step_pod_network_worker.plan(p, &o, &plan), 0);
        int r;
        _cleanup_free_ char *text = pass_test_print(&pass_step_pod_network_worker, p, &o, &plan, &r);
        assert_string_equal(text, "pod-network: the CNI network and the routes are current\n");
        pass_plan_done(&plan);

        add_route(&o.pod_network, "100.96.9.0/24=10.0.0.9", NETLINK_ROUTE_PROTO_PROTOKUBE);
        o.pod_network.nodes[2].pod_cidrs = strv_free(o.pod_network.nodes[2].pod_cidrs);
        assert_non_null(o.pod_network.nodes[2].pod_cidrs = strv_new("100.96.2.0/24"));
        add_route(&o.pod_network, "100.96.2.0/24=10.0.0.254", 4 /* static: another owner's */);
        plan = (PassPlan){};
        assert_int_equal(pass_step_pod_network_worker.plan(p, &o, &plan), 0);
        free(text);
        text = pass_test_print(&pass_step_pod_network_worker, p, &o, &plan, &r);
        assert_string_equal(text,
                            "pod-network-delete-route 100.96.9.0/24 via 10.0.0.9\n"
                            "pod-network: not routing 100.96.2.0/24 via 10.0.0.3: another owner routes "
                            "it (100.96.2.0/24 via 10.0.0.254)\n");
        pass_plan_done(&plan);

        /* a Node's value left out as unreadable: the route to the gone Node stays this pass */
        assert_non_null(o.pod_network.warnings = strv_new("Node w3: podCIDR 'x' is not a network prefix"));
        plan = (PassPlan){};
        assert_int_equal(pass_step_pod_network_worker.plan(p, &o, &plan), 0);
        assert_int_equal(plan.pod_network.routes.n_delete, 0);
        pass_plan_done(&plan);
        pass_plan_done(&first);
        pass_observation_done(&o);
        pass_free(p);
}

/* Waiting: the API not read (its words), the node's podCIDR not allocated yet; none: nothing at all. */
static void test_waiting_and_none(void **state) {
        Pass *p = test_pass("kubenet");
        PassObservation o = { .pod_network = { .status = PK_EWAITING } };
        PassPlan plan = {};
        assert_non_null(o.pod_network.message = strdup("the kubelet has not joined yet (no kubeconfig)"));
        assert_int_equal(pass_step_pod_network_worker.plan(p, &o, &plan), 0);
        int r;
        _cleanup_free_ char *text = pass_test_print(&pass_step_pod_network_worker, p, &o, &plan, &r);
        assert_int_equal(r, 0);
        assert_string_equal(text, "pod-network: waiting: the kubelet has not joined yet (no kubeconfig)\n");
        pass_plan_done(&plan);
        pass_observation_done(&o);

        observe(&o);
        o.pod_network.nodes[1].pod_cidrs = strv_free(o.pod_network.nodes[1].pod_cidrs);
        assert_non_null(o.pod_network.nodes[1].pod_cidrs = strv_new(NULL));
        plan = (PassPlan){};
        assert_int_equal(pass_step_pod_network_worker.plan(p, &o, &plan), 0);
        free(text);
        text = pass_test_print(&pass_step_pod_network_worker, p, &o, &plan, &r);
        assert_non_null(strstr(text, "pod-network: waiting: Node w1 has no podCIDR yet"));
        assert_false(plan.pod_network.write_conflist);
        pass_plan_done(&plan);
        pass_observation_done(&o);
        pass_free(p);

        p = test_pass("none");
        observe(&o);
        plan = (PassPlan){};
        assert_int_equal(pass_step_pod_network_worker.plan(p, &o, &plan), 0);
        assert_false(plan.pod_network.enabled);
        free(text);
        text = pass_test_print(&pass_step_pod_network_worker, p, &o, &plan, &r);
        assert_string_equal(text, "");
        pass_plan_done(&plan);
        pass_observation_done(&o);
        pass_free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_first_pass),
                cmocka_unit_test(test_routes),
                cmocka_unit_test(test_waiting_and_none),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
