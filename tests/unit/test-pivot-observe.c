/* SPDX-License-Identifier: Apache-2.0 */
/* What the pivot and the DNS pass read from the API's objects (pivot/pivot.h): whether a Node asks to be out
 * of the API's names for its turn, and on which master a pod says an apiserver serves (the bootstrap
 * mirror, the self-hosted DaemonSet's pod, its checkpoint; Ready, bound, not being deleted). And the
 * observation itself against the API double (tests/fakes/kube/server.py) of a cluster with 5,000 nodes. */
#include "unit-test.h"

#include <ftw.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/string-util.h"
#include "kube-fake.h"
#include "pivot-fixture.h"
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

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

/* A cluster of 5,000 nodes: kube-system holds a kube-proxy pod of each (about 4 KiB of JSON apiece, 20 MB,
 * past the client's 16 MiB response cap). The pivot's observation reads the masters and the components'
 * pods only, in pages, and sees the API ready and m1's self-hosted apiserver Ready. */
static void test_observe_5000_pods(void **state) {
        char base[] = "/tmp/pk-pivot-observe-XXXXXX";
        assert_non_null(mkdtemp(base));
        char cm_text[] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: kube-system\n";
        _cleanup_(pivot_fixture_done) PivotFixture t;
        pivot_fixture_init(&t, base, "m1", 60 * USEC_PER_SEC, cm_text);
        const char kubeconfig[] =
            "apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts:\n- name: c\n  "
            "context: {cluster: k, user: u}\nclusters:\n- name: k\n  cluster: {server: "
            "'https://127.0.0.1:1'}\nusers:\n- name: u\n  user: {}\n";
        assert_true(write_file_atomic(t.kubeconfig, kubeconfig, strlen(kubeconfig), 0600, false) >= 0);
        assert_int_equal(mkdir(t.manifest_dir, 0755), 0);
        KubeFake f;
        kube_fake_start(&f);
        kube_fake_objects(
            &f,
            "[{\"apiVersion\": \"v1\", \"kind\": \"Node\", \"metadata\": {\"name\": \"m1\", \"labels\": "
            "{\"" PIVOT_MASTER_LABEL "\": \"\"}}},"
            " {\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": "
            "\"kube-apiserver-x7k2p\", "
            "\"namespace\": \"kube-system\", \"labels\": {\"k8s-app\": \"kube-apiserver\"}, "
            "\"ownerReferences\": [{\"kind\": \"DaemonSet\", \"name\": \"kube-apiserver\", \"controller\": "
            "true}]}, \"spec\": {\"nodeName\": \"m1\"}, \"status\": {\"phase\": \"Running\", "
            "\"conditions\": [{\"type\": \"Ready\", \"status\": \"True\"}]}}]");
        kube_fake_pods(&f, 5000, "kube-proxy-{i}", "w{i}", 4000,
                       "{\"k8s-app\": \"kube-proxy\", \"app.kubernetes.io/managed-by\": \"protokube\"}");
        _cleanup_(pivot_freep) Pivot *p = NULL;
        char *err = NULL;
        assert_int_equal(pivot_new(&t.settings, &p, &err), 0);
        /* the double speaks plain http on loopback: both clients go to it */
        kube_client_free(p->api);
        kube_client_free(p->local);
        p->api = kube_fake_client(&f);
        p->local = kube_fake_client(&f);
        assert_int_equal(pivot_observe(p, &err), 0);
        if (!p->obs.api_ready)
                fail_msg("the API counts as not ready: %s", strnull(p->api_error));
        assert_int_equal(p->obs.n_masters, 1);
        assert_true(p->obs.masters[0].self_hosted_ready[PIVOT_APISERVER]);
        json_t *reqs = kube_fake_requests(&f), *r;
        size_t i;
        unsigned lists = 0;
        json_array_foreach(reqs, i, r) {
                if (!streq(json_string_value(json_object_get(r, "path")),
                           "/api/v1/namespaces/kube-system/pods"))
                        continue;
                lists++;
                assert_non_null(
                    strstr(json_string_value(json_object_get(r, "query")), "labelSelector=k8s-app"));
        }
        assert_int_equal(lists, 1);
        json_decref(reqs);
        kube_fake_stop(&f);
        assert_int_equal(nftw(base, rm_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_apiserver_pod_ready_on),
                cmocka_unit_test(test_node_names_out),
                cmocka_unit_test(test_observe_5000_pods),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
