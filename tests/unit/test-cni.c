/* SPDX-License-Identifier: Apache-2.0 */
/* The kubenet CNI network of a node (components/cni.c): the whole file for a podCIDR of each family, and
 * the refusal of a podCIDR that is no network prefix (it comes from the API). */
#include <stdlib.h>
#include <string.h>

#include "basic/string-util.h"
#include "basic/strv.h"
#include "components/cni.h"
#include "unit-test.h"

static ClusterSpec *load(void) {
        static const char text[] =
            "apiVersion: protokube/v1alpha1\nkind: Cluster\nmetadata:\n  name: demo.k8s.test\n"
            "spec:\n  etcdClusters:\n    - name: main\n"
            "      image: registry.k8s.io/etcd:3.4.13-0\n  kubernetesVersion: 1.20.2\n"
            "  networking:\n    provider: kubenet\n";
        ClusterSpec *s = NULL;
        _cleanup_strv_free_ char **errors = NULL;
        assert_int_equal(cluster_spec_load_string("cluster.yaml", text, strlen(text), &s, &errors), 0);
        assert_int_equal(s->networking.provider.value, NETWORKING_KUBENET);
        return s;
}

static void test_conflist(void **state) {
        _cleanup_(cluster_spec_freep) ClusterSpec *s = load();
        _cleanup_free_ char *text = NULL, *err = NULL;
        assert_int_equal(cni_kubenet_conflist(s, "100.96.1.0/24", &text, &err), 0);
        assert_string_equal(text, "{\n"
                                  " \"cniVersion\": \"0.4.0\",\n"
                                  " \"name\": \"protokube-kubenet\",\n"
                                  " \"plugins\": [\n"
                                  "  {\n"
                                  "   \"bridge\": \"cbr0\",\n"
                                  "   \"hairpinMode\": true,\n"
                                  "   \"ipMasq\": false,\n"
                                  "   \"ipam\": {\n"
                                  "    \"ranges\": [\n"
                                  "     [\n"
                                  "      {\n"
                                  "       \"subnet\": \"100.96.1.0/24\"\n"
                                  "      }\n"
                                  "     ]\n"
                                  "    ],\n"
                                  "    \"routes\": [\n"
                                  "     {\n"
                                  "      \"dst\": \"0.0.0.0/0\"\n"
                                  "     }\n"
                                  "    ],\n"
                                  "    \"type\": \"host-local\"\n"
                                  "   },\n"
                                  "   \"isGateway\": true,\n"
                                  "   \"type\": \"bridge\"\n"
                                  "  },\n"
                                  "  {\n"
                                  "   \"capabilities\": {\n"
                                  "    \"portMappings\": true\n"
                                  "   },\n"
                                  "   \"type\": \"portmap\"\n"
                                  "  }\n"
                                  " ]\n"
                                  "}\n");
        free(text);
        text = NULL;
        assert_int_equal(cni_kubenet_conflist(s, "fd00:1::/64", &text, &err), 0);
        assert_non_null(strstr(text, "\"dst\": \"::/0\""));
}

static void test_refused(void **state) {
        _cleanup_(cluster_spec_freep) ClusterSpec *s = load();
        static const char *const bad[] = { "100.96.1.5/24", "", "100.96.1.0", "\"},{\"type\":\"x", NULL };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_free_ char *text = NULL, *err = NULL;
                assert_int_equal(cni_kubenet_conflist(s, bad[i], &text, &err), -EINVAL);
                assert_null(text);
                assert_non_null(strstr(err, "is not a network prefix"));
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_conflist),
                cmocka_unit_test(test_refused),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
