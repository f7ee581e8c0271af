/* SPDX-License-Identifier: Apache-2.0 */
/* spec.kubernetesVersion: parsing, the supported range, the gate tables (feature gates, admission plugins)
 * and the spec errors for keys and values the chosen version does not accept. */
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "spec/kube-version.h"
#include "spec/spec.h"
#include "unit-test.h"

#define HEAD                                                                                      \
        "apiVersion: protokube/v1alpha1\nkind: Cluster\nmetadata: {name: demo.k8s.test}\nspec:\n" \
        "  etcdClusters:\n  - {name: main, image: registry.k8s.io/etcd:3.5.16-0}\n"

static void test_parse(void **state) {
        KubeVersion v;
        assert_int_equal(kube_version_parse("1.31.2", &v), 0);
        assert_true(v.major == 1 && v.minor == 31 && v.patch == 2);
        assert_int_equal(kube_version_parse("v1.20.2", &v), 0);
        assert_true(v.major == 1 && v.minor == 20 && v.patch == 2);
        assert_int_equal(kube_version_parse("1.30.0-rc.1", &v), 0);
        assert_true(v.minor == 30 && v.patch == 0);
        assert_int_equal(kube_version_parse("1.19.16", &v), 0);
        assert_false(kube_version_supported(&v));
        assert_int_equal(kube_version_parse("1.32.0", &v), 0);
        assert_false(kube_version_supported(&v));
        assert_int_equal(kube_version_parse("2.20.0", &v), 0);
        assert_false(kube_version_supported(&v));
        const char *bad[] = {
                "",        "1.31",    "1.31.", "1.31.2-", "1.031.2",  "vv1.31.2", "1.31.2 ",
                "1.3x1.2", "V1.31.2", "1..2",  "-1.31.2", "1.31.2+x", "1.31.2\n", "1234567.1.1"
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                v = (KubeVersion){ 7, 7, 7 };
                assert_int_equal(kube_version_parse(bad[i], &v), -EINVAL);
                assert_int_equal(v.major, 7); /* untouched on failure */
        }
        assert_int_equal(kube_version_parse(NULL, &v), -EINVAL);
}

static void test_gates(void **state) {
        char b[KUBE_GATE_TEXT_MAX];
        assert_true(kube_gate_allows((KubeGate){}, 20));
        assert_true(kube_gate_allows((KubeGate){ .until = 23 }, 23));
        assert_false(kube_gate_allows((KubeGate){ .until = 23 }, 24));
        assert_false(kube_gate_allows((KubeGate){ .since = 27 }, 26));
        assert_true(kube_gate_allows((KubeGate){ .since = 27 }, 27));
        assert_string_equal(kube_gate_text(b, (KubeGate){ .until = 23 }), "until 1.23");
        assert_string_equal(kube_gate_text(b, (KubeGate){ .since = 27 }), "since 1.27");
        assert_string_equal(kube_gate_text(b, (KubeGate){ 21, 24 }), "1.21 to 1.24");
}

static void test_value_tables(void **state) {
        KubeGate g = {};
        /* 1.20's own list (its --help): known, and an unknown name is refused for 1.20 only */
        assert_int_equal(kube_value_check(&kube_feature_gates, "AnyVolumeDataSource", 20, NULL),
                         KUBE_VALUE_OK);
        assert_int_equal(kube_value_check(&kube_feature_gates, "NoSuchGate", 20, NULL), KUBE_VALUE_UNKNOWN);
        assert_int_equal(kube_value_check(&kube_feature_gates, "NoSuchGate", 21, NULL), KUBE_VALUE_OK);
        /* added later */
        assert_int_equal(kube_value_check(&kube_feature_gates, "InPlacePodVerticalScaling", 26, &g),
                         KUBE_VALUE_OUT_OF_RANGE);
        assert_int_equal(g.since, 27);
        assert_int_equal(kube_value_check(&kube_feature_gates, "InPlacePodVerticalScaling", 27, NULL),
                         KUBE_VALUE_OK);
        /* removed later */
        assert_int_equal(kube_value_check(&kube_admission_plugins, "PodSecurityPolicy", 24, NULL),
                         KUBE_VALUE_OK);
        assert_int_equal(kube_value_check(&kube_admission_plugins, "PodSecurityPolicy", 25, &g),
                         KUBE_VALUE_OUT_OF_RANGE);
        assert_int_equal(g.until, 24);
        assert_int_equal(kube_value_check(&kube_admission_plugins, "PodSecurity", 20, NULL),
                         KUBE_VALUE_OUT_OF_RANGE);
        assert_int_equal(kube_value_check(&kube_admission_plugins, "PodSecurity", 22, NULL), KUBE_VALUE_OK);

        /* The tables are sane: no name twice, every bound inside the supported range, and an entry with a
         * "since" is newer than the complete 1.20 list (else it would be in it). */
        const KubeValueGates *tables[] = { &kube_feature_gates, &kube_admission_plugins };
        for (size_t t = 0; t < ELEMENTSOF(tables); t++) {
                size_t n = 0;
                for (const KubeValueGate *a = tables[t]->values; a->value; a++, n++) {
                        for (const KubeValueGate *c = a + 1; c->value; c++)
                                if (streq(a->value, c->value))
                                        fail_msg("%s '%s' twice", tables[t]->what, a->value);
                        KubeGate x = a->gate;
                        assert_true(x.since == 0 ||
                                    (x.since > tables[t]->complete_until && x.since <= KUBE_MINOR_MAX));
                        assert_true(x.until == 0 || (x.until >= KUBE_MINOR_MIN && x.until < KUBE_MINOR_MAX));
                        assert_true(x.since == 0 || x.until == 0 || x.since <= x.until);
                }
                assert_true(n > 30);
        }
}

static void load_fails(const char *text, const char *want) {
        _cleanup_strv_free_ char **errors = NULL;
        ClusterSpec *s = NULL;
        assert_int_equal(cluster_spec_load_string("t.yaml", text, strlen(text), &s, &errors), PK_ESPEC);
        assert_null(s);
        _cleanup_free_ char *got = strv_join(errors, "\n");
        if (!got || !streq(got, want))
                fail_msg("errors differ\ngot:\n%s\nwant:\n%s", strnull(got), want);
}

static void load_ok(const char *text) {
        _cleanup_strv_free_ char **errors = NULL;
        _cleanup_(cluster_spec_freep) ClusterSpec *s = NULL;
        int r = cluster_spec_load_string("t.yaml", text, strlen(text), &s, &errors);
        if (r < 0) {
                _cleanup_free_ char *all = strv_join(errors, "\n");
                fail_msg("load failed: %d\n%s", r, strnull(all));
        }
}

static void test_spec_version_range(void **state) {
        load_fails(HEAD "  kubernetesVersion: 1.19.16\n",
                   "t.yaml:7:22: spec.kubernetesVersion: '1.19.16' is not supported: protokube renders the "
                   "flags of Kubernetes 1.20 to 1.31");
        load_fails(HEAD "  kubernetesVersion: v1.32.0\n",
                   "t.yaml:7:22: spec.kubernetesVersion: 'v1.32.0' is not supported: protokube renders the "
                   "flags of Kubernetes 1.20 to 1.31");
        load_fails(HEAD "  kubernetesVersion: 1.31\n",
                   "t.yaml:7:22: spec.kubernetesVersion: '1.31' is not a Kubernetes version like 1.31.2");
        load_ok(HEAD "  kubernetesVersion: 1.20.0\n");
        load_ok(HEAD "  kubernetesVersion: v1.31.0-rc.1\n");
}

static void test_spec_gated_keys(void **state) {
        /* a key whose flag the version lacks: set -> error; the default is left out by the builder */
        load_ok(HEAD "  kubernetesVersion: 1.23.17\n  kubeScheduler: {insecurePort: 0}\n");
        load_fails(
            HEAD "  kubernetesVersion: 1.24.0\n  kubeScheduler: {insecurePort: 0}\n",
            "t.yaml:8:33: spec.kubeScheduler.insecurePort: not supported by Kubernetes 1.24.0 (--port "
            "exists in Kubernetes until 1.23)");
        load_fails(
            HEAD "  kubernetesVersion: v1.31.2\n  kubeControllerManager:\n    insecurePort: 10252\n",
            "t.yaml:9:19: spec.kubeControllerManager.insecurePort: not supported by Kubernetes 1.31.2 "
            "(--port exists in Kubernetes until 1.23)");
}

static void test_spec_gated_values(void **state) {
        load_fails(
            HEAD "  kubernetesVersion: 1.20.2\n  kubeAPIServer:\n    featureGates:\n"
                 "      AnyVolumeDataSource: \"true\"\n      InPlacePodVerticalScaling: \"true\"\n"
                 "      NoSuchGate: \"false\"\n",
            "t.yaml:11:7: spec.kubeAPIServer.featureGates: feature gate 'InPlacePodVerticalScaling' is "
            "not supported by Kubernetes 1.20.2 (it exists since 1.27)\n"
            "t.yaml:12:7: spec.kubeAPIServer.featureGates: feature gate 'NoSuchGate' is not known to "
            "Kubernetes 1.20.2");
        load_ok(HEAD
                "  kubernetesVersion: 1.27.0\n  kubeProxy:\n    featureGates: {InPlacePodVerticalScaling: "
                "\"true\"}\n");
        load_fails(
            HEAD "  kubernetesVersion: 1.20.2\n  kubeAPIServer:\n"
                 "    enableAdmissionPlugins: [NodeRestriction, PodSecurity]\n",
            "t.yaml:9:47: spec.kubeAPIServer.enableAdmissionPlugins: admission plugin 'PodSecurity' is "
            "not supported by Kubernetes 1.20.2 (it exists since 1.22)");
        load_fails(HEAD "  kubernetesVersion: 1.25.0\n  kubeAPIServer:\n"
                        "    disableAdmissionPlugins: [PodSecurityPolicy]\n",
                   "t.yaml:9:31: spec.kubeAPIServer.disableAdmissionPlugins: admission plugin "
                   "'PodSecurityPolicy' is not supported by Kubernetes 1.25.0 (it exists until 1.24)");
        load_fails(HEAD "  kubernetesVersion: 1.28.4\n  kubeProxy: {proxyMode: nftables}\n",
                   "t.yaml:8:26: spec.kubeProxy.proxyMode: proxy mode 'nftables' is not supported by "
                   "Kubernetes 1.28.4 (it exists since 1.29)");
        load_ok(HEAD "  kubernetesVersion: 1.29.0\n  kubeProxy: {proxyMode: nftables}\n");
        load_ok(HEAD "  kubernetesVersion: 1.20.2\n  kubeProxy: {proxyMode: ipvs}\n");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse),           cmocka_unit_test(test_gates),
                cmocka_unit_test(test_value_tables),    cmocka_unit_test(test_spec_version_range),
                cmocka_unit_test(test_spec_gated_keys), cmocka_unit_test(test_spec_gated_values),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
