/* SPDX-License-Identifier: Apache-2.0 */
/* What the pivot and the DNS pass read from the API's objects (pivot/pivot.h): whether a Node asks to be out
 * of the API's names for its turn, and on which master a pod says an apiserver serves (the bootstrap
 * mirror, the self-hosted DaemonSet's pod, its checkpoint; Ready, bound, not being deleted). */
#include "unit-test.h"

#include <jansson.h>
#include <string.h>

#include "basic/string-util.h"
#include "pivot/pivot.h"

static json_t *parse(const char *text) {
        json_error_t e;
        json_t *j = json_loads(text, 0, &e);
        if (!j)
                fail_msg("%s: %s", text, e.text);
        return j;
}

#define READY                                                                          \
        "\"status\":{\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"True\"}," \
        "{\"type\":\"Ready\",\"status\":\"True\"}]}"
#define NOT_READY "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}"
#define ON_A      "\"spec\":{\"nodeName\":\"a\"}"

static void test_apiserver_pod_ready_on(void **state) {
        static const struct {
                const char *what, *pod, *node;
        } cases[] = {
                { "the bootstrap mirror",
                  "{\"metadata\":{\"name\":\"kube-apiserver-a\",\"labels\":{\"k8s-app\":\"kube-apiserver\"},"
                  "\"annotations\":{\"kubernetes.io/config.mirror\":\"x\"}}," ON_A "," READY "}",
                  "a" },
                { "the DaemonSet's pod",
                  "{\"metadata\":{\"name\":\"kube-apiserver-x7k2p\",\"labels\":{\"k8s-app\":\"kube-"
                  "apiserver\"}}," ON_A "," READY "}",
                  "a" },
                { "its checkpoint (no label but its own)",
                  "{\"metadata\":{\"name\":\"kube-apiserver-checkpoint-a\",\"labels\":{\"protokube.io/"
                  "checkpoint\":\"true\"},\"annotations\":{\"protokube.io/checkpoint-of\":\"DaemonSet/"
                  "kube-apiserver\"}}," ON_A "," READY "}",
                  "a" },
                { "not Ready",
                  "{\"metadata\":{\"name\":\"kube-apiserver-a\",\"labels\":{\"k8s-app\":\"kube-apiserver\"}}"
                  "," ON_A "," NOT_READY "}",
                  NULL },
                { "no conditions yet",
                  "{\"metadata\":{\"name\":\"kube-apiserver-a\",\"labels\":{\"k8s-app\":\"kube-apiserver\"}}"
                  "," ON_A "}",
                  NULL },
                { "being deleted",
                  "{\"metadata\":{\"name\":\"kube-apiserver-a\",\"labels\":{\"k8s-app\":\"kube-apiserver\"},"
                  "\"deletionTimestamp\":\"2026-11-27T10:00:00Z\"}," ON_A "," READY "}",
                  NULL },
                { "not bound yet",
                  "{\"metadata\":{\"name\":\"kube-apiserver-x\",\"labels\":{\"k8s-app\":\"kube-apiserver\"}}"
                  ","
                  "\"spec\":{}," READY "}",
                  NULL },
                { "another component",
                  "{\"metadata\":{\"name\":\"kube-scheduler-a\",\"labels\":{\"k8s-app\":\"kube-scheduler\"}}"
                  "," ON_A "," READY "}",
                  NULL },
                { "another component's checkpoint",
                  "{\"metadata\":{\"name\":\"kube-scheduler-checkpoint\",\"annotations\":{\"protokube.io/"
                  "checkpoint-of\":\"ReplicaSet/kube-scheduler\"}}," ON_A "," READY "}",
                  NULL },
                { "a look-alike name", "{\"metadata\":{\"name\":\"kube-apiserver-a\"}," ON_A "," READY "}",
                  NULL },
                { "no metadata", "{" ON_A "," READY "}", NULL },
        };
        for (size_t c = 0; c < ELEMENTSOF(cases); c++) {
                json_t *pod = parse(cases[c].pod);
                const char *got = pivot_apiserver_pod_ready_on(pod);
                if (!streq(strempty(got), strempty(cases[c].node)))
                        fail_msg("%s: '%s', wanted '%s'", cases[c].what, strempty(got),
                                 strempty(cases[c].node));
                json_decref(pod);
        }
}

static void test_node_names_out(void **state) {
        json_t *out =
            parse("{\"metadata\":{\"name\":\"a\",\"annotations\":{\"protokube.io/api-names\":\"out\"}}}");
        json_t *other =
            parse("{\"metadata\":{\"name\":\"a\",\"annotations\":{\"protokube.io/api-names\":\"in\"}}}");
        json_t *none = parse("{\"metadata\":{\"name\":\"a\"}}");
        assert_true(pivot_node_names_out(out));
        assert_false(pivot_node_names_out(other));
        assert_false(pivot_node_names_out(none));
        json_decref(out);
        json_decref(other);
        json_decref(none);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_apiserver_pod_ready_on),
                cmocka_unit_test(test_node_names_out),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
