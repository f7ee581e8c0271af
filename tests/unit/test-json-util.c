/* SPDX-License-Identifier: Apache-2.0 */
/* The JSON accessors every room that reads API objects shares, and the pod facts built on them. */
#include "unit-test.h"

#include <jansson.h>

#include "kube/kube-resource.h"
#include "shared/json-util.h"

static void test_paths(void **state) {
        json_t *o = json_loads("{\"metadata\":{\"name\":\"p\",\"labels\":{\"a\":\"b\",\"n\":3}},\"x\":null}",
                               0, NULL);
        assert_non_null(o);
        assert_string_equal(json_get_string(o, "metadata", "name"), "p");
        assert_string_equal(json_get_string(o, "metadata", "labels", "a"), "b");
        assert_null(json_get_string(o, "metadata", "labels", "n")); /* not a string */
        assert_null(json_get_string(o, "metadata", "missing", "a"));
        assert_null(json_get(o, "x", "y")); /* through a null */
        assert_null(json_get(NULL, "a"));
        assert_true(json_is_object(json_get(o, "metadata", "labels")));
        json_decref(o);
}

static void test_pod_facts(void **state) {
        json_t *ready =
            json_loads("{\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Initialized\","
                       "\"status\":\"True\"},{\"type\":\"Ready\",\"status\":\"True\"}]},"
                       "\"metadata\":{\"ownerReferences\":[{\"kind\":\"Node\"},{\"kind\":"
                       "\"DaemonSet\",\"name\":\"d\",\"controller\":true}]}}",
                       0, NULL);
        json_t *not_ready =
            json_loads("{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}}", 0, NULL);
        assert_non_null(ready);
        assert_non_null(not_ready);
        assert_true(kube_pod_ready(ready));
        assert_string_equal(kube_pod_phase(ready), "Running");
        assert_false(kube_pod_ready(not_ready));
        assert_null(kube_pod_phase(not_ready));
        assert_string_equal(json_get_string(kube_controller_ref(ready), "kind"), "DaemonSet");
        assert_null(kube_controller_ref(not_ready));
        json_decref(ready);
        json_decref(not_ready);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_paths),
                cmocka_unit_test(test_pod_facts),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
