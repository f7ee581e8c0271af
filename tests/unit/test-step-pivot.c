/* SPDX-License-Identifier: Apache-2.0 */
/* The pivot's step (daemon/step-pivot.c) where it needs nothing but the spec: a master of a self-hosted
 * cluster whose spec has no state store is refused by name (a worker's copy of the same spec loads: it has
 * no store and no pivot); a cluster that is not self-hosted has nothing to say. The pivot itself is
 * test-pivot-*.c's and tests/integration/test_pivot.py's. */
#include <stdlib.h>
#include <string.h>

#include "daemon/pass-types.h"
#include "daemon/step-pivot.h"
#include "pass-step-test.h"
#include "unit-test.h"

static const NodeSettings master = { .role = NODE_ROLE_MASTER,
                                     .node_name = "a",
                                     .manifest_dir = "/m",
                                     .kubelet_dir = "/k",
                                     .config_dir = "/c" };

static void test_a_master_needs_the_store(void **state) {
        Pass *p = pass_test_new(PASS_TEST_WORKER_SPEC "  selfHosted: true\n", &master);
        PassObservation o = {};
        PassPlan plan = {};
        _cleanup_free_ char *text = pass_test_print(&pass_step_pivot, p, &o, &plan, NULL);
        assert_string_equal(text, "pivot refused: spec.selfHosted: a master needs spec.stateStore (the "
                                  "self-hosted pods' Secrets are made from the certificates protokube "
                                  "issues)\n");
        pass_free(p);
}

static void test_not_self_hosted(void **state) {
        Pass *p = pass_test_new(PASS_TEST_WORKER_SPEC, &master);
        PassObservation o = {};
        PassPlan plan = {};
        _cleanup_free_ char *text = pass_test_print(&pass_step_pivot, p, &o, &plan, NULL);
        assert_string_equal(text, "");
        pass_free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_a_master_needs_the_store),
                cmocka_unit_test(test_not_self_hosted),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
