/* SPDX-License-Identifier: Apache-2.0 */
/* The components' configuration files (docs/components.md, "Configuration files"): the document model and
 * its YAML, the apiVersion per Kubernetes minor, which settings go into the file and which stay flags (one
 * row of the field table says both), the operator's own file, the kubelet's file and flags, the refusals of
 * `validate`, and the docs' tables against the code. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "components/component-def.h"
#include "components/component-file.h"
#include "components/control-plane.h"
#include "components/flags.h"
#include "components/kubelet.h"
#include "components/render.h"
#include "manifest/pod-yaml.h"
#include "model/config-doc.h"
#include "spec/spec-check.h"
#include "spec/spec.h"
#include "unit-test.h"

static ClusterSpec *load(const char *version, const char *extra) {
        _cleanup_free_ char *text =
            strprintf("apiVersion: protokube/v1alpha1\nkind: Cluster\nmetadata: {name: f.k8s.test}\nspec:\n"
                      "  etcdClusters: [{name: main, image: \"e:3.5.16-0\"}]\n  kubernetesVersion: %s\n%s",
                      version, extra ?: "");
        _cleanup_strv_free_ char **errors = NULL;
        ClusterSpec *s = NULL;
        assert_non_null(text);
        int r = cluster_spec_load_string("t.yaml", text, strlen(text), &s, &errors);
        if (r < 0)
                fail_msg("spec: %s", strv_length(errors) > 0 ? errors[0] : pk_strerror(r));
        return s;
}

/* The errors of a spec that must not load, joined by newlines. */
static char *load_errors(const char *version, const char *extra) {
        _cleanup_free_ char *text =
            strprintf("apiVersion: protokube/v1alpha1\nkind: Cluster\nmetadata: {name: f.k8s.test}\nspec:\n"
                      "  etcdClusters: [{name: main, image: \"e:3.5.16-0\"}]\n  kubernetesVersion: %s\n%s",
                      version, extra);
        _cleanup_strv_free_ char **errors = NULL;
        ClusterSpec *s = NULL;
        assert_int_equal(cluster_spec_load_string("t.yaml", text, strlen(text), &s, &errors), PK_ESPEC);
        return strv_join(errors, "\n");
}

static void test_config_doc(void **state) {
        _cleanup_(config_doc_freep) ConfigDoc *d = config_doc_new();
        _cleanup_free_ char *text = NULL;
        ConfigDoc *m;
        char *list[] = { "10.0.0.0/8", "true", NULL };
        assert_non_null(d);
        assert_int_equal(config_doc_set_string(d, "kind", "X"), 0);
        assert_int_equal(config_doc_set_string(d, "b.c", "1.5"), 0);
        assert_int_equal(config_doc_set_int(d, "b.a", -3), 0);
        assert_int_equal(config_doc_set_bool(d, "a", false), 0);
        assert_int_equal(config_doc_set_list(d, "b.l", list), 0);
        assert_int_equal(config_doc_map(d, "m", &m), 0);
        assert_int_equal(config_doc_map_put_string(m, "memory.available", "100Mi"), 0);
        assert_int_equal(config_doc_map_put_bool(m, "Gate", true), 0);
        /* a leaf twice, a leaf in the way of a mapping, an empty segment */
        assert_int_equal(config_doc_set_string(d, "kind", "Y"), -EEXIST);
        assert_int_equal(config_doc_set_string(d, "a.x", "y"), -EEXIST);
        assert_int_equal(config_doc_map(d, "kind", &m), -EEXIST);
        assert_int_equal(config_doc_set_string(d, "b..x", "y"), -EINVAL);
        assert_int_equal(config_doc_map_put_bool(m, "Gate", false), -EEXIST);
        assert_string_equal(config_doc_get(d, "b.a")->value, "-3");
        assert_null(config_doc_get(d, "b.a.z"));
        assert_int_equal(config_doc_to_yaml(d, &text), 0);
        /* sorted at every level; strings a reader would take for a number or a bool are quoted */
        assert_string_equal(text, "a: false\n"
                                  "b:\n"
                                  "  a: -3\n"
                                  "  c: \"1.5\"\n"
                                  "  l:\n"
                                  "  - 10.0.0.0/8\n"
                                  "  - \"true\"\n"
                                  "kind: X\n"
                                  "m:\n"
                                  "  Gate: true\n"
                                  "  memory.available: 100Mi\n");
}

/* The apiVersion of each file by minor. */
static void test_api_versions(void **state) {
        for (unsigned m = KUBE_MINOR_MIN; m <= KUBE_MINOR_MAX; m++) {
                assert_string_equal(component_file_api_version(&kube_proxy_file, m),
                                    "kubeproxy.config.k8s.io/v1alpha1");
                assert_string_equal(component_file_api_version(&kubelet_file, m),
                                    "kubelet.config.k8s.io/v1beta1");
                const char *s = component_file_api_version(&kube_scheduler_file, m);
                assert_string_equal(s, m < 22   ? "kubescheduler.config.k8s.io/v1beta1"
                                       : m < 23 ? "kubescheduler.config.k8s.io/v1beta2"
                                       : m < 25 ? "kubescheduler.config.k8s.io/v1beta3"
                                                : "kubescheduler.config.k8s.io/v1");
        }
        assert_null(component_file_api_version(NULL, 20));
}

static char *config_text(Component c, const ClusterSpec *s) {
        ComponentConfigFile f = {};
        assert_int_equal(component_config_file(c, s, &f), 0);
        free(f.path);
        return f.text;
}

/* Every version reads a file with the kubeconfig, leader election and profiling, and the rest stays flags.
 * 1.20 to 1.22: the file's unauthenticated server on loopback, and no --port (it has no effect beside the
 * file); 1.23 still has --port (its server gone, 0 keeps the flag's meaning). */
static void test_scheduler_by_version(void **state) {
        static const struct {
                const char *version;
                bool port;        /* --port=0 */
                const char *file; /* NULL: flags only */
        } cases[] = {
                { "1.20.2", false,
                  "apiVersion: kubescheduler.config.k8s.io/v1beta1\n"
                  "clientConnection:\n  kubeconfig: /var/lib/kube-scheduler/kubeconfig\n"
                  "enableProfiling: false\n"
                  "healthzBindAddress: \"127.0.0.1:10251\"\n"
                  "kind: KubeSchedulerConfiguration\n"
                  "leaderElection:\n  leaderElect: true\n"
                  "metricsBindAddress: \"127.0.0.1:10251\"\n" },
                { "1.22.17", false,
                  "apiVersion: kubescheduler.config.k8s.io/v1beta2\n"
                  "clientConnection:\n  kubeconfig: /var/lib/kube-scheduler/kubeconfig\n"
                  "enableProfiling: false\n"
                  "healthzBindAddress: \"127.0.0.1:10251\"\n"
                  "kind: KubeSchedulerConfiguration\n"
                  "leaderElection:\n  leaderElect: true\n"
                  "metricsBindAddress: \"127.0.0.1:10251\"\n" },
                { "1.23.0", true,
                  "apiVersion: kubescheduler.config.k8s.io/v1beta3\n"
                  "clientConnection:\n  kubeconfig: /var/lib/kube-scheduler/kubeconfig\n"
                  "enableProfiling: false\n"
                  "kind: KubeSchedulerConfiguration\n"
                  "leaderElection:\n  leaderElect: true\n" },
                { "1.31.2", false,
                  "apiVersion: kubescheduler.config.k8s.io/v1\n"
                  "clientConnection:\n  kubeconfig: /var/lib/kube-scheduler/kubeconfig\n"
                  "enableProfiling: false\n"
                  "kind: KubeSchedulerConfiguration\n"
                  "leaderElection:\n  leaderElect: true\n" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(cluster_spec_freep) ClusterSpec *s =
                    load(cases[i].version, "  kubeScheduler: {enableProfiling: false}\n");
                _cleanup_strv_free_ char **flags = NULL;
                _cleanup_free_ char *text = config_text(COMPONENT_KUBE_SCHEDULER, s);
                assert_int_equal(component_flags(COMPONENT_KUBE_SCHEDULER, s, &flags), 0);
                bool file = cases[i].file != NULL;
                if (file)
                        assert_string_equal(text, cases[i].file);
                else
                        assert_null(text);
                assert_true(strv_contains(flags, "--config=/var/lib/kube-scheduler/config.yaml") == file);
                assert_true(strv_contains(flags, "--kubeconfig=/var/lib/kube-scheduler/kubeconfig") ==
                            !file);
                assert_true(strv_contains(flags, "--leader-elect=true") == !file);
                assert_true(strv_contains(flags, "--profiling=false") == !file);
                assert_true(
                    strv_contains(flags, "--authentication-kubeconfig=/var/lib/kube-scheduler/kubeconfig"));
                assert_true(strv_contains(flags, "--secure-port=10259"));
                assert_true(strv_contains(flags, "--port=0") == cases[i].port);
        }
}

/* The operator's own file wins: no file, the flags as before, its directory mounted; `validate` refuses the
 * settings the scheduler would then read only from that file (1.20 as 1.31: checked with the 1.20.2 binary).
 */
static void test_operator_file(void **state) {
        _cleanup_(cluster_spec_freep) ClusterSpec *s =
            load("1.31.2", "  kubeScheduler: {config: /etc/sched/config.yaml}\n");
        _cleanup_strv_free_ char **flags = NULL, **files = NULL;
        _cleanup_free_ char *text = config_text(COMPONENT_KUBE_SCHEDULER, s);
        assert_null(text);
        assert_int_equal(component_flags(COMPONENT_KUBE_SCHEDULER, s, &flags), 0);
        assert_true(strv_contains(flags, "--config=/etc/sched/config.yaml"));
        assert_true(strv_contains(flags, "--kubeconfig=/var/lib/kube-scheduler/kubeconfig"));
        assert_int_equal(component_files(COMPONENT_KUBE_SCHEDULER, s, &files), 0);
        assert_false(strv_contains(files, "/var/lib/kube-scheduler/config.yaml"));
        assert_true(strv_contains(files, "/etc/sched/config.yaml"));

        static const char *const versions[] = { "1.20.2", "1.31.2" };
        for (size_t i = 0; i < ELEMENTSOF(versions); i++) {
                _cleanup_free_ char *e = load_errors(
                    versions[i], "  kubeScheduler:\n    config: /etc/s.yaml\n    enableProfiling: true\n"
                                 "    leaderElect: false\n    securePort: 10300\n");
                _cleanup_free_ char *want1 = strprintf(
                    "t.yaml:9:22: spec.kubeScheduler.enableProfiling: with spec.kubeScheduler.config set, "
                    "Kubernetes %s ignores --profiling and reads enableProfiling from that file: set it "
                    "there",
                    versions[i]);
                _cleanup_free_ char *want2 = strprintf(
                    "t.yaml:10:18: spec.kubeScheduler.leaderElect: with spec.kubeScheduler.config set, "
                    "Kubernetes %s ignores --leader-elect and reads leaderElection.leaderElect from that "
                    "file: set it there",
                    versions[i]);
                _cleanup_free_ char *want = strjoin(want1, "\n", want2);
                /* securePort stays a flag, which the scheduler honours: not refused */
                assert_string_equal(e, want);
        }
}

/* The 1.20 to 1.22 scheduler's unauthenticated server: --port refused beside the file, naming the key that
 * stands in; that key's port leaves room for the instances; gone from 1.23; each instance its own port. */
static void test_scheduler_insecure_server(void **state) {
        _cleanup_free_ char *e = load_errors("1.20.2", "  kubeScheduler:\n    insecurePort: 10251\n");
        assert_string_equal(
            e, "t.yaml:8:19: spec.kubeScheduler.insecurePort: beside its configuration file "
               "Kubernetes 1.20.2 ignores --port: set spec.kubeScheduler.healthzBindAddress (the "
               "file's healthzBindAddress) instead");
        free(e);
        e = load_errors("1.20.2", "  kubeScheduler:\n    healthzBindAddress: 127.0.0.1:65530\n");
        assert_non_null(
            strstr(e, "spec.kubeScheduler.healthzBindAddress: must be address:port with a port of "
                      "at most 65515 (the self-hosted pod takes the port + 10, its checkpoint + 20)"));
        free(e);
        e = load_errors("1.23.0", "  kubeScheduler:\n    metricsBindAddress: 127.0.0.1:10251\n");
        assert_non_null(
            strstr(e, "spec.kubeScheduler.metricsBindAddress: not supported by Kubernetes 1.23.0"));
        /* 1.23 keeps --port (0) beside its file, where it has no server to open */
        _cleanup_(cluster_spec_freep) ClusterSpec *s123 = load("1.23.0", NULL);
        _cleanup_strv_free_ char **flags = NULL;
        assert_int_equal(component_flags(COMPONENT_KUBE_SCHEDULER, s123, &flags), 0);
        assert_true(strv_contains(flags, "--port=0"));

        _cleanup_(cluster_spec_freep) ClusterSpec *s =
            load("1.20.2", "  kubeScheduler:\n    healthzBindAddress: 0.0.0.0:10300\n");
        static const char *const want[] = { "0.0.0.0:10300", "0.0.0.0:10310", "0.0.0.0:10320" };
        for (ComponentInstance i = 0; i < _COMPONENT_INSTANCE_MAX; i++) {
                ComponentConfigFile f = {};
                assert_int_equal(component_config_file_instance(COMPONENT_KUBE_SCHEDULER, s, i, &f), 0);
                _cleanup_free_ char *healthz = strprintf("healthzBindAddress: \"%s\"\n", want[i]);
                assert_non_null(strstr(f.text, healthz));
                /* the metrics address keeps its default, moved likewise */
                _cleanup_free_ char *metrics =
                    strprintf("metricsBindAddress: \"127.0.0.1:%d\"\n", 10251 + 10 * i);
                assert_non_null(strstr(f.text, metrics));
                free(f.path);
                free(f.text);
        }
        /* kube-proxy's file is the same for every instance */
        ComponentConfigFile a = {}, b = {};
        assert_int_equal(
            component_config_file_instance(COMPONENT_KUBE_PROXY, s, COMPONENT_INSTANCE_STATIC, &a), 0);
        assert_int_equal(
            component_config_file_instance(COMPONENT_KUBE_PROXY, s, COMPONENT_INSTANCE_CHECKPOINT, &b), 0);
        assert_string_equal(a.text, b.text);
        free(a.path);
        free(a.text);
        free(b.path);
        free(b.text);
}

/* Every kube-proxy setting in its file, typed; the feature gates as bools. */
static void test_proxy_file(void **state) {
        _cleanup_(cluster_spec_freep) ClusterSpec *s =
            load("1.20.2", "  kubeControllerManager: {clusterCIDR: 10.96.0.0/12}\n"
                           "  kubeProxy:\n    proxyMode: ipvs\n    ipvsExcludeCIDRs: [10.1.0.0/16]\n"
                           "    conntrackMaxPerCore: 0\n    oomScoreAdj: -999\n"
                           "    metricsBindAddress: 127.0.0.1:10249\n    logLevel: 4\n"
                           "    featureGates: {EndpointSliceProxying: \"true\", IPv6DualStack: False}\n");
        _cleanup_free_ char *text = config_text(COMPONENT_KUBE_PROXY, s);
        assert_string_equal(text, "apiVersion: kubeproxy.config.k8s.io/v1alpha1\n"
                                  "clientConnection:\n  kubeconfig: /var/lib/kube-proxy/kubeconfig\n"
                                  "clusterCIDR: 10.96.0.0/12\n"
                                  "conntrack:\n  maxPerCore: 0\n"
                                  "featureGates:\n  EndpointSliceProxying: true\n  IPv6DualStack: false\n"
                                  "ipvs:\n  excludeCIDRs:\n  - 10.1.0.0/16\n"
                                  "kind: KubeProxyConfiguration\n"
                                  "metricsBindAddress: \"127.0.0.1:10249\"\n"
                                  "mode: ipvs\n"
                                  "oomScoreAdj: -999\n");
        _cleanup_strv_free_ char **flags = NULL;
        assert_int_equal(component_flags(COMPONENT_KUBE_PROXY, s, &flags), 0);
        char *want[] = { "--config=/var/lib/kube-proxy/config.yaml", "--v=4", NULL };
        assert_true(strv_equal(flags, want));

        /* a gate's value the loader would refuse, in a spec made in code */
        char *gates[] = { "EndpointSliceProxying", "maybe", NULL }, **loaded = s->kube_proxy.feature_gates;
        s->kube_proxy.feature_gates = gates;
        ComponentConfigFile f = {};
        assert_int_equal(component_config_file(COMPONENT_KUBE_PROXY, s, &f), -EINVAL);
        s->kube_proxy.feature_gates = loaded;
        assert_int_equal(
            component_file_render(&kube_proxy_file, kube_proxy_config_fields, &s->kube_proxy, 19, &f.text),
            0); /* no version gate on the proxy's file */
        free(f.text);
        assert_int_equal(component_file_render(&kube_scheduler_file, kube_scheduler_config_fields,
                                               &s->kube_scheduler, 19, &f.text),
                         -EOPNOTSUPP);
}

/* A setting whose file has its field only from some minor on is a flag before and a field after (the row's
 * file_k8s), and the file of a minor has only the fields it knows. */
typedef struct Gated {
        char *endpoint;
        OptInt burst;
} Gated;

static void test_file_field_gate(void **state) {
        static const Field fields[] = {
                { .name = "endpoint",
                  .type = FIELD_STRING,
                  .offset = offsetof(Gated, endpoint),
                  .flag = "container-runtime-endpoint",
                  .file_field = "containerRuntimeEndpoint",
                  .file_k8s = { .since = 27 } },
                { .name = "burst",
                  .type = FIELD_INT,
                  .offset = offsetof(Gated, burst),
                  .flag = "burst",
                  .file_field = "burst" },
                {},
        };
        static const ComponentFileVersion versions[] = { { {}, "x/v1" }, {} };
        const ComponentFileDef def = { .kind = "Gated", .versions = versions };
        Gated g = { .endpoint = (char *)"unix:///run/c.sock", .burst = { true, 7 } };
        _cleanup_strv_free_ char **before = NULL, **after = NULL;
        _cleanup_free_ char *text_before = NULL, *text_after = NULL;
        assert_int_equal(flags_build_beside_file(fields, &g, 26, &before), 0);
        assert_int_equal(flags_build_beside_file(fields, &g, 27, &after), 0);
        char *want_before[] = { "--container-runtime-endpoint=unix:///run/c.sock", NULL };
        assert_true(strv_equal(before, want_before));
        assert_int_equal(strv_length(after), 0);
        assert_int_equal(component_file_render(&def, fields, &g, 26, &text_before), 0);
        assert_int_equal(component_file_render(&def, fields, &g, 27, &text_after), 0);
        assert_string_equal(text_before, "apiVersion: x/v1\nburst: 7\nkind: Gated\n");
        assert_string_equal(
            text_after,
            "apiVersion: x/v1\nburst: 7\ncontainerRuntimeEndpoint: unix:///run/c.sock\nkind: Gated\n");
}

/* The files in render's output, beside the manifests: the manifest of each component that reads one names
 * it. */
static void test_render_files(void **state) {
        _cleanup_(cluster_spec_freep) ClusterSpec *s = load("1.31.2", NULL);
        _cleanup_(rendered_manifests_done) RenderedManifests files = {};
        assert_int_equal(control_plane_render(s, &(ControlPlaneParams){}, &files, NULL), 0);
        assert_int_equal(files.n_files, 2);
        assert_string_equal(files.files[0].file_name, "kube-scheduler.yaml");
        assert_string_equal(files.files[0].path, "/var/lib/kube-scheduler/config.yaml");
        assert_string_equal(files.files[1].file_name, "kube-proxy.yaml");
        assert_string_equal(files.files[1].path, "/var/lib/kube-proxy/config.yaml");
        for (size_t i = 0; i < files.n; i++)
                assert_true((strstr(files.items[i].text, "--config=") != NULL) ==
                            (startswith(files.items[i].file_name, "kube-scheduler") ||
                             startswith(files.items[i].file_name, "kube-proxy")));
}

static void test_kubelet(void **state) {
        _cleanup_(cluster_spec_freep) ClusterSpec *s = load("1.20.2", "  clusterDNSDomain: example.test\n");
        _cleanup_free_ char *text = NULL;
        _cleanup_strv_free_ char **flags = NULL;
        assert_int_equal(kubelet_config_render(s, &text), 0);
        assert_string_equal(text, "apiVersion: kubelet.config.k8s.io/v1beta1\n"
                                  "authentication:\n"
                                  "  anonymous:\n    enabled: false\n"
                                  "  webhook:\n    enabled: true\n"
                                  "  x509:\n    clientCAFile: /srv/kubernetes/ca.crt\n"
                                  "authorization:\n  mode: Webhook\n"
                                  "clusterDomain: example.test\n"
                                  "kind: KubeletConfiguration\n"
                                  "readOnlyPort: 0\n"
                                  "staticPodPath: /etc/kubernetes/manifests\n");
        assert_int_equal(kubelet_flags(s, NULL, &flags), 0);
        char *want[] = { "--config=/var/lib/kubelet/config.yaml", "--kubeconfig=/var/lib/kubelet/kubeconfig",
                         "--v=2", NULL };
        assert_true(strv_equal(flags, want));

        /* a node's own copy: its manifest directory; the spec is not changed */
        ClusterSpec node = *s;
        node.kubelet.static_pod_path = (char *)"/run/node-a/manifests";
        free(text);
        text = NULL;
        assert_int_equal(kubelet_config_render(&node, &text), 0);
        assert_non_null(strstr(text, "staticPodPath: /run/node-a/manifests\n"));
        assert_string_equal(s->kubelet.static_pod_path, "/etc/kubernetes/manifests");

        /* with a state store, the pki layout's kubeconfig and CA; the user's settings as typed */
        _cleanup_(cluster_spec_freep) ClusterSpec *p =
            load("1.20.2", "  stateStore: file:///srv/state\n  pki: {dir: /pk}\n"
                           "  kubelet:\n    logLevel: 0\n    failSwapOn: false\n    cgroupDriver: systemd\n"
                           "    clusterDNS: [100.64.0.10]\n    syncFrequency: 10s\n"
                           "    evictionHard: {memory.available: 1Mi}\n"
                           "    featureGates: {GracefulNodeShutdown: \"1\"}\n");
        free(text);
        text = NULL;
        assert_int_equal(kubelet_config_render(p, &text), 0);
        static const char *const lines[] = {
                "    clientCAFile: /pk/kubelet/ca.crt\n",
                "cgroupDriver: systemd\n",
                "clusterDNS:\n- \"100.64.0.10\"\n",
                "evictionHard:\n  memory.available: 1Mi\n",
                "failSwapOn: false\n",
                "featureGates:\n  GracefulNodeShutdown: true\n",
                "syncFrequency: 10s\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(lines); i++)
                if (!strstr(text, lines[i]))
                        fail_msg("no '%s' in:\n%s", lines[i], text);
        strv_free(flags);
        flags = NULL;
        assert_int_equal(kubelet_flags(p, "/etc/kubelet.yaml", &flags), 0);
        char *want_pki[] = { "--config=/etc/kubelet.yaml", "--kubeconfig=/pk/kubelet/kubeconfig", "--v=0",
                             NULL };
        assert_true(strv_equal(flags, want_pki));

        _cleanup_free_ char *e = load_errors("1.20.2", "  kubelet: {imageGCHighThresholdPercent: 70}\n");
        assert_string_equal(e, "t.yaml:7:42: spec.kubelet.imageGCLowThresholdPercent: 80 must be less than "
                               "imageGCHighThresholdPercent 70 (the kubelet's defaults: 80 and 85)");
}

/* The table's own rules: a file field is a dotted path of names, once per table; bools as map values only
 * in maps; the operator's file is a string; a component's file rows are of types the renderer writes. */
static void check_table(const Field *table) {
        for (const Field *f = table; f->name; f++) {
                if (f->flags & FIELD_FILE_BOOL_VALUES)
                        assert_int_equal(f->type, FIELD_MAP);
                if (f->flags & FIELD_OPERATOR_FILE)
                        assert_int_equal(f->type, FIELD_STRING);
                if (!f->file_field) {
                        assert_int_equal(f->file_k8s.since, 0);
                        assert_int_equal(f->file_k8s.until, 0);
                        continue;
                }
                assert_true(f->type != FIELD_STRUCT && f->type != FIELD_STRUCT_LIST);
                const char *p = f->file_field;
                assert_true(strlen(p) > 0 && p[0] != '.' && !endswith(p, ".") && !strstr(p, ".."));
                assert_true(
                    p[strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.")] == 0);
                for (const Field *g = table; g != f; g++)
                        if (g->file_field && streq(g->file_field, f->file_field))
                                fail_msg("%s and %s both at %s", g->name, f->name, f->file_field);
        }
}

static void test_tables(void **state) {
        check_table(kube_apiserver_config_fields);
        check_table(kube_controller_manager_config_fields);
        check_table(kube_scheduler_config_fields);
        check_table(kube_proxy_config_fields);
        check_table(kubelet_config_fields);
        /* the components without a file have no file rows */
        for (const Field *f = kube_apiserver_config_fields; f->name; f++)
                assert_null(f->file_field);
        for (const Field *f = kube_controller_manager_config_fields; f->name; f++)
                assert_null(f->file_field);
}

/* ---- docs/components.md against the code ---- */

typedef struct DocRow {
        char *cells[8];
        size_t n;
} DocRow;

/* s without leading and trailing blanks, in place. */
static char *trim(char *s) {
        s += strspn(s, " ");
        size_t n = strlen(s);
        while (n > 0 && s[n - 1] == ' ')
                s[--n] = 0;
        return s;
}

/* The rows of the first table after the line heading (cells trimmed; header and separator skipped). */
static size_t doc_table(const char *doc, const char *heading, DocRow *rows, size_t max) {
        const char *p = strstr(doc, heading);
        size_t n = 0;
        if (!p)
                fail_msg("docs/components.md: no '%s'", heading);
        p = strstr(p, "\n|");
        assert_non_null(p);
        p++;
        for (bool header = true; p && *p == '|' && n < max;) {
                const char *end = strchr(p, '\n');
                _cleanup_free_ char *line = strndup(p, end ? (size_t)(end - p) : strlen(p));
                p = end ? end + 1 : NULL;
                if (header || startswith(line, "|---")) {
                        header = startswith(line, "|---") ? false : header;
                        continue;
                }
                DocRow *r = &rows[n++];
                r->n = 0;
                for (char *c = line + 1, *bar; (bar = strchr(c, '|')) && r->n < ELEMENTSOF(r->cells);
                     c = bar + 1) {
                        *bar = 0;
                        r->cells[r->n++] = strdup(trim(c));
                }
        }
        return n;
}

static void doc_rows_done(DocRow *rows, size_t n) {
        for (size_t i = 0; i < n; i++)
                for (size_t j = 0; j < rows[i].n; j++)
                        free(rows[i].cells[j]);
}

static char *backticked(const char *s) {
        return strjoin("`", s, "`");
}

/* "`a` (gate), `b` (gate)" for a file's versions. */
static char *api_versions_cell(const ComponentFileDef *d) {
        _cleanup_free_ char *s = strdup("");
        char g[KUBE_GATE_TEXT_MAX];
        for (const ComponentFileVersion *v = d->versions; v->api_version; v++)
                assert_int_equal(strextend_printf(&s, "%s`%s` (%s)", v == d->versions ? "" : ", ",
                                                  v->api_version, kube_gate_text(g, v->k8s)),
                                 0);
        return TAKE_PTR(s);
}

static void check_keys_table(const char *doc, const char *section, const Field *fields, bool file_column) {
        DocRow rows[128];
        _cleanup_free_ char *heading = strjoin("### spec.", section, "\n");
        size_t n = doc_table(doc, heading, rows, ELEMENTSOF(rows)), n_fields = 0;
        assert_true(n < ELEMENTSOF(rows));
        for (const Field *f = fields; f->name; f++, n_fields++) {
                _cleanup_free_ char *key = backticked(f->name), *flag = NULL, *file = NULL;
                const DocRow *r = NULL;
                char g[KUBE_GATE_TEXT_MAX];
                for (size_t i = 0; i < n && !r; i++)
                        if (streq(rows[i].cells[0], key))
                                r = &rows[i];
                if (!r)
                        fail_msg("docs: spec.%s has no row for %s", section, f->name);
                assert_int_equal(r->n, file_column ? 6 : 5);
                flag = f->flag ? strjoin("`--", f->flag, "`") : strdup("");
                if (!streq(r->cells[2], flag))
                        fail_msg("docs: spec.%s.%s: the docs say flag '%s', the field table '%s'", section,
                                 f->name, r->cells[2], flag);
                if (!file_column) {
                        assert_null(f->file_field);
                        continue;
                }
                file = !f->file_field ? strdup("")
                       : f->file_k8s.since || f->file_k8s.until
                           ? strprintf("`%s` (%s)", f->file_field, kube_gate_text(g, f->file_k8s))
                           : backticked(f->file_field);
                if (!streq(r->cells[3], file))
                        fail_msg("docs: spec.%s.%s: the docs say file field '%s', the field table '%s'",
                                 section, f->name, r->cells[3], file);
        }
        assert_int_equal(n, n_fields); /* no row for a key the table does not have */
        doc_rows_done(rows, n);
}

static void test_docs_tables(void **state) {
        _cleanup_free_ char *path = strjoin(SRCDIR, "/docs/components.md"), *doc = NULL;
        assert_int_equal(read_full_file(path, 1 << 20, &doc, NULL), 0);
        check_keys_table(doc, "kubeAPIServer", kube_apiserver_config_fields, false);
        check_keys_table(doc, "kubeControllerManager", kube_controller_manager_config_fields, false);
        check_keys_table(doc, "kubeScheduler", kube_scheduler_config_fields, true);
        check_keys_table(doc, "kubeProxy", kube_proxy_config_fields, true);
        check_keys_table(doc, "kubelet", kubelet_config_fields, true);

        static const struct {
                const char *component;
                const ComponentFileDef *def;
        } files[] = {
                { "kube-scheduler", &kube_scheduler_file },
                { "kube-proxy", &kube_proxy_file },
                { "kubelet", &kubelet_file },
        };
        DocRow rows[8];
        size_t n = doc_table(doc, "## Configuration files\n", rows, ELEMENTSOF(rows));
        assert_int_equal(n, ELEMENTSOF(files));
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *versions = api_versions_cell(files[i].def),
                                    *def_path = component_file_path(files[i].def, NULL),
                                    *path_cell = backticked(def_path),
                                    *name_cell = backticked(files[i].def->out_name);
                assert_int_equal(rows[i].n, 5);
                assert_string_equal(rows[i].cells[0], files[i].component);
                assert_string_equal(rows[i].cells[1], files[i].def->kind);
                assert_string_equal(rows[i].cells[2], versions);
                assert_string_equal(rows[i].cells[3], path_cell);
                assert_string_equal(rows[i].cells[4], name_cell);
        }
        doc_rows_done(rows, n);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_config_doc),
                cmocka_unit_test(test_api_versions),
                cmocka_unit_test(test_scheduler_by_version),
                cmocka_unit_test(test_scheduler_insecure_server),
                cmocka_unit_test(test_operator_file),
                cmocka_unit_test(test_proxy_file),
                cmocka_unit_test(test_file_field_gate),
                cmocka_unit_test(test_render_files),
                cmocka_unit_test(test_kubelet),
                cmocka_unit_test(test_tables),
                cmocka_unit_test(test_docs_tables),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
