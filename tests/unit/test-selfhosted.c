/* SPDX-License-Identifier: Apache-2.0 */
/* The self-hosted assets (components/self-hosted.h) over a node whose pki layout a real pass of certs/ has
 * issued (a directory store in a temp dir): every object in apply order, each Secret holding exactly the
 * node's files, the workloads' placement and the pod templates' digest, which is the one the pass puts in
 * the static pods; and the refusals: no stateStore, a missing file (named), a credential outside the
 * layout, bad parameters. A configuration file outside the layout becomes a ConfigMap. */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "certs/certs.h"
#include "components/control-plane.h"
#include "components/self-hosted.h"
#include "daemon/pass-types.h"
#include "join/join-rbac.h"
#include "manifest/pod-yaml.h"
#include "shared/crypto.h"
#include "shared/yaml-tree.h"
#include "spec/spec.h"
#include "unit-test.h"

#define T0 (1767225600ULL * USEC_PER_SEC) /* 2026-01-01 */

typedef struct Fixture {
        char root[64];
        char pki[96];
        char spec_text[2048];
        char digest[CERTS_DIGEST_LEN + 1];
} Fixture;

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
        return remove(p);
}

static ClusterSpec *load(Fixture *f, const char *extra) {
        _cleanup_strv_free_ char **errors = NULL;
        _cleanup_free_ char *text = strjoin(f->spec_text, extra ?: "");
        ClusterSpec *spec = NULL;
        assert_non_null(text);
        int r = cluster_spec_load_string("test.yaml", text, strlen(text), &spec, &errors);
        if (r < 0)
                fail_msg("spec: %s", strv_length(errors) > 0 ? errors[0] : "?");
        return spec;
}

/* A pass's certificates, as `protokube once` issues them: the layout the Secrets are made of. */
static void issue(Fixture *f, const ClusterSpec *spec) {
        char *clusters[] = { (char *)"main", (char *)"events", NULL };
        CertsSettings s = pass_certs_settings(spec, clusters);
        s.sa_key_type = PKI_KEY_ECDSA_P256; /* RSA generation is slow under ASan */
        char *ips[] = { (char *)"10.0.0.1", NULL };
        const char *held[] = { "a", NULL, NULL };
        CertsNode node = { .name = "n1", .ips = ips, .held_members = held, .held_known = true };
        _cleanup_(store_freep) Store *store = NULL;
        CertsObservation o = {};
        CertsPlan p = {};
        CertsResult res = {};
        assert_int_equal(certs_observe(&s, &store, &o), 0);
        assert_int_equal(o.error, 0);
        assert_int_equal(certs_plan(&s, &o, &node, T0, &p), 0);
        assert_int_equal(certs_apply(&s, store, &o, &p, T0, NULL, &res), 0);
        assert_int_equal(strv_length(res.errors), 0);
        memcpy(f->digest, p.digest, sizeof(f->digest));
        certs_result_done(&res);
        certs_plan_done(&p);
        certs_observation_done(&o);
}

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(Fixture));
        char store[128];
        snprintf(f->root, sizeof(f->root), "/tmp/pk-selfhosted-XXXXXX");
        assert_non_null(mkdtemp(f->root));
        snprintf(f->pki, sizeof(f->pki), "%s/pki", f->root);
        snprintf(store, sizeof(store), "%s/store", f->root);
        assert_int_equal(mkdir(store, 0700), 0);
        snprintf(f->spec_text, sizeof(f->spec_text),
                 "apiVersion: protokube/v1alpha1\n"
                 "kind: Cluster\n"
                 "metadata: {name: sh.k8s.test}\n"
                 "spec:\n"
                 "  cloud: local\n"
                 "  dns: {provider: none}\n"
                 "  etcdClusters:\n"
                 "    - {name: main, image: registry.k8s.io/etcd:3.4.13-0}\n"
                 "    - {name: events, image: registry.k8s.io/etcd:3.4.13-0}\n"
                 "  kubernetesVersion: 1.20.2\n"
                 "  stateStore: file://%s\n"
                 "  pki: {dir: %s}\n",
                 store, f->pki);
        _cleanup_(cluster_spec_freep) ClusterSpec *spec = load(f, NULL);
        issue(f, spec);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;
        assert_int_equal(nftw(f->root, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
        free(f);
        return 0;
}

static const SelfHostedObject *find(const SelfHostedAssets *a, SelfHostedKind kind, const char *name) {
        for (size_t i = 0; i < a->n; i++)
                if (a->items[i].kind == kind && streq(a->items[i].name, name))
                        return &a->items[i];
        return NULL;
}

static void render_ok(Fixture *f, const char *extra, unsigned masters, SelfHostedAssets *a) {
        _cleanup_(cluster_spec_freep) ClusterSpec *spec = load(f, extra);
        _cleanup_free_ char *error = NULL;
        char *annotations[] = { (char *)CERTS_ANNOTATION, f->digest, NULL };
        SelfHostedParams p = { .n_masters = masters, .pod_annotations = annotations };
        int r = self_hosted_render(spec, &p, a, &error);
        if (r < 0)
                fail_msg("render: %s", strna(error));
}

/* The object's text holds the base64 of the file's bytes under its key. */
static void assert_secret_holds(const SelfHostedObject *o, const char *dir, const char *file) {
        _cleanup_free_ char *path = strjoin(dir, "/", file), *text = NULL, *b64 = NULL, *line = NULL;
        size_t len;
        assert_int_equal(read_full_file(path, 1 << 20, &text, &len), 0);
        assert_int_equal(crypto_base64_encode(text, len, &b64), 0);
        line = strjoin("  ", file, ": ", b64, "\n");
        if (!strstr(o->text, line))
                fail_msg("%s does not hold '%s'", o->name, path);
}

/* One owner per object: the masters' join step applies its RBAC every pass, the pivot its assets until
 * their digests match. A ClusterRoleBinding both named protokube:node-proxier was rewritten by each in
 * turn, and the pivot waited on its digest forever (test_checkpoint). */
static void test_no_name_shared_with_join_rbac(void **state) {
        Fixture *f = *state;
        SelfHostedAssets a = {};
        _cleanup_(json_decrefp) json_t *rbac = NULL;
        json_t *o;
        size_t k;
        render_ok(f, NULL, 1, &a);
        assert_int_equal(join_rbac_objects(&rbac), 0);
        assert_true(json_array_size(rbac) >= 2);
        json_array_foreach(rbac, k, o) {
                const char *name =
                    json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
                assert_non_null(name);
                assert_null(find(&a, SELF_HOSTED_CLUSTER_ROLE_BINDING, name));
        }
        self_hosted_assets_done(&a);
}

static void test_objects(void **state) {
        Fixture *f = *state;
        SelfHostedAssets a = {};
        render_ok(f, NULL, 3, &a);
        static const struct {
                SelfHostedKind kind;
                const char *name, *file;
        } want[] = {
                { SELF_HOSTED_SERVICE_ACCOUNT, "kube-proxy", "10-serviceaccount-kube-proxy.yaml" },
                { SELF_HOSTED_CLUSTER_ROLE_BINDING, "protokube:node-proxier",
                  "11-clusterrolebinding-protokube-node-proxier.yaml" },
                { SELF_HOSTED_SECRET, "kube-apiserver-pki", "20-secret-kube-apiserver-pki.yaml" },
                { SELF_HOSTED_SECRET, "kube-controller-manager-pki",
                  "20-secret-kube-controller-manager-pki.yaml" },
                { SELF_HOSTED_SECRET, "kube-proxy-pki", "20-secret-kube-proxy-pki.yaml" },
                { SELF_HOSTED_SECRET, "kube-scheduler-pki", "20-secret-kube-scheduler-pki.yaml" },
                { SELF_HOSTED_CONFIG_MAP, "kube-proxy-kube-proxy",
                  "30-configmap-kube-proxy-kube-proxy.yaml" },
                { SELF_HOSTED_CONFIG_MAP, "kube-scheduler-kube-scheduler",
                  "30-configmap-kube-scheduler-kube-scheduler.yaml" },
                { SELF_HOSTED_DAEMON_SET, "kube-apiserver", "40-daemonset-kube-apiserver.yaml" },
                { SELF_HOSTED_DAEMON_SET, "kube-proxy", "40-daemonset-kube-proxy.yaml" },
                { SELF_HOSTED_DEPLOYMENT, "kube-controller-manager",
                  "50-deployment-kube-controller-manager.yaml" },
                { SELF_HOSTED_DEPLOYMENT, "kube-scheduler", "50-deployment-kube-scheduler.yaml" },
        };
        assert_int_equal(a.n, ELEMENTSOF(want));
        for (size_t i = 0; i < a.n; i++) {
                const SelfHostedObject *o = &a.items[i];
                assert_int_equal(o->kind, want[i].kind);
                assert_string_equal(o->name, want[i].name);
                assert_string_equal(o->file_name, want[i].file);
                assert_string_equal(o->kind_name, self_hosted_kind_to_string(o->kind));
                assert_true(o->secret == (o->kind == SELF_HOSTED_SECRET));
                assert_int_equal(o->text_len, strlen(o->text));
                if (o->kind == SELF_HOSTED_CLUSTER_ROLE_BINDING)
                        assert_null(o->namespace);
                else
                        assert_string_equal(o->namespace, "kube-system");
                _cleanup_free_ char *kind_line = strjoin("\nkind: ", o->kind_name, "\n");
                _cleanup_free_ char *api_line = strjoin("apiVersion: ", o->api_version, "\n");
                assert_non_null(strstr(o->text, kind_line));
                assert_true(startswith(o->text, api_line));
        }
        self_hosted_assets_done(&a);
}

/* Each Secret holds exactly the files its component's flags and kubeconfig name, as the pass wrote them. */
static void test_secrets_hold_the_node_files(void **state) {
        Fixture *f = *state;
        SelfHostedAssets a = {};
        render_ok(f, NULL, 1, &a);
        static const struct {
                const char *dir;
                const char *files[16];
        } want[] = {
                { "kube-apiserver",
                  { "apiserver.crt", "apiserver.key", "ca.crt", "etcd-ca.crt", "etcd-client.crt",
                    "etcd-client.key", "front-proxy-ca.crt", "front-proxy-client.crt",
                    "front-proxy-client.key", "kubelet-client.crt", "kubelet-client.key",
                    "service-account.key", "service-account.pub" } },
                { "kube-controller-manager",
                  { "ca.crt", "client.crt", "client.key", "front-proxy-ca.crt", "kubeconfig",
                    "service-account.key" } },
                { "kube-scheduler",
                  { "ca.crt", "client.crt", "client.key", "front-proxy-ca.crt", "kubeconfig" } },
                { "kube-proxy", { "ca.crt", "client.crt", "client.key", "kubeconfig" } },
        };
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                _cleanup_free_ char *name = strjoin(want[i].dir, "-pki"),
                                    *dir = strjoin(f->pki, "/", want[i].dir);
                const SelfHostedObject *o = find(&a, SELF_HOSTED_SECRET, name);
                assert_non_null(o);
                size_t n = 0;
                for (; want[i].files[n]; n++)
                        assert_secret_holds(o, dir, want[i].files[n]);
                /* nothing else: one data line per file */
                const char *data = strstr(o->text, "data:\n"), *end = strstr(o->text, "kind: Secret");
                size_t lines = 0;
                for (const char *p = data; p < end; p++)
                        lines += *p == '\n';
                assert_int_equal(lines - 1, n);
                assert_null(strstr(o->text, "PRIVATE KEY"));
        }
        self_hosted_assets_done(&a);
}

static void test_workloads(void **state) {
        Fixture *f = *state;
        SelfHostedAssets a = {};
        render_ok(f, NULL, 5, &a);
        _cleanup_free_ char *annotation = strjoin(CERTS_ANNOTATION ": ", f->digest, "\n");
        _cleanup_free_ char *quoted = strjoin(CERTS_ANNOTATION ": \"", f->digest, "\"\n");
        for (size_t i = 0; i < a.n; i++) {
                const SelfHostedObject *o = &a.items[i];
                if (o->kind != SELF_HOSTED_DAEMON_SET && o->kind != SELF_HOSTED_DEPLOYMENT)
                        continue;
                assert_true(strstr(o->text, annotation) || strstr(o->text, quoted));
                /* no credential from the host: the pki dir is never a hostPath */
                _cleanup_free_ char *host = strjoin("path: ", f->pki);
                assert_null(strstr(o->text, host));
                assert_non_null(strstr(o->text, "secretName: "));
        }
        const SelfHostedObject *api = find(&a, SELF_HOSTED_DAEMON_SET, "kube-apiserver");
        assert_non_null(strstr(api->text, "--advertise-address=$(HOST_IP)\n"));
        assert_non_null(strstr(api->text, "fieldPath: status.hostIP\n"));
        assert_non_null(strstr(api->text, "node-role.kubernetes.io/master: \"\"\n"));
        assert_non_null(strstr(api->text, SELF_HOSTED_APISERVER_LABEL ": \"true\"\n"));
        assert_non_null(strstr(api->text, "priorityClassName: system-node-critical\n"));
        assert_non_null(
            strstr(api->text, "  updateStrategy:\n    rollingUpdate:\n      maxUnavailable: 1\n"));
        const SelfHostedObject *sched = find(&a, SELF_HOSTED_DEPLOYMENT, "kube-scheduler");
        assert_non_null(strstr(sched->text, "\n  replicas: 5\n"));
        assert_non_null(strstr(sched->text, "topologyKey: kubernetes.io/hostname\n"));
        assert_non_null(strstr(sched->text, "- --config=/var/lib/kube-scheduler/config.yaml\n"));
        assert_null(strstr(sched->text, "--leader-elect"));
        const SelfHostedObject *proxy = find(&a, SELF_HOSTED_DAEMON_SET, "kube-proxy");
        assert_non_null(strstr(proxy->text, "      - operator: Exists\n"));
        assert_non_null(strstr(proxy->text, "serviceAccountName: kube-proxy\n"));
        assert_null(strstr(proxy->text, "nodeSelector"));
        self_hosted_assets_done(&a);
}

/* The pods' annotation is the static pods': the digest a pass that renews nothing computes. */
static void test_node_digest_is_the_pass_digest(void **state) {
        Fixture *f = *state;
        _cleanup_(cluster_spec_freep) ClusterSpec *spec = load(f, NULL);
        char *clusters[] = { (char *)"main", (char *)"events", NULL };
        CertsSettings s = pass_certs_settings(spec, clusters);
        char digest[CERTS_DIGEST_LEN + 1];
        assert_int_equal(certs_node_digest(&s, digest), 0);
        assert_string_equal(digest, f->digest);
        s.store_url = NULL;
        assert_int_equal(certs_node_digest(&s, digest), -EINVAL);
}

static void test_config_map_and_refusals(void **state) {
        Fixture *f = *state;
        SelfHostedAssets a = {};
        char extra[512], conf_dir[128], conf[160];
        snprintf(conf_dir, sizeof(conf_dir), "%s/sched-config", f->root);
        snprintf(conf, sizeof(conf), "%s/scheduler.yaml", conf_dir);
        assert_int_equal(mkdir(conf_dir, 0755), 0);
        assert_int_equal(write_file_atomic(conf, "kind: KubeSchedulerConfiguration\n", 33, 0644, 0), 1);
        snprintf(extra, sizeof(extra), "  kubeScheduler: {config: %s}\n", conf);
        render_ok(f, extra, 3, &a);
        const SelfHostedObject *cm = find(&a, SELF_HOSTED_CONFIG_MAP, "kube-scheduler-sched-config");
        assert_non_null(cm);
        assert_false(cm->secret);
        assert_non_null(strstr(cm->text, "scheduler.yaml: "));
        const SelfHostedObject *sched = find(&a, SELF_HOSTED_DEPLOYMENT, "kube-scheduler");
        assert_non_null(strstr(sched->text, "name: kube-scheduler-sched-config\n"));
        self_hosted_assets_done(&a);

        /* a file whose name cannot be a key */
        char bad_name[600];
        snprintf(bad_name, sizeof(bad_name), "  kubeScheduler: {config: %s/sched@1.yaml}\n", conf_dir);
        _cleanup_(cluster_spec_freep) ClusterSpec *bad_key = load(f, bad_name);
        _cleanup_free_ char *key_error = NULL;
        SelfHostedParams p3 = { .n_masters = 3 };
        assert_int_equal(self_hosted_render(bad_key, &p3, &a, &key_error), -EINVAL);
        assert_non_null(strstr(key_error, "sched@1.yaml': the file's name is not a valid key"));

        /* a credential outside the layout */
        _cleanup_(cluster_spec_freep) ClusterSpec *bad =
            load(f, "  kubeAPIServer: {tlsCertFile: /etc/x/a.crt}\n");
        _cleanup_free_ char *error = NULL;
        SelfHostedParams p = { .n_masters = 3 };
        assert_int_equal(self_hosted_render(bad, &p, &a, &error), -EINVAL);
        assert_non_null(
            strstr(error, "kube-apiserver's tlsCertFile '/etc/x/a.crt' is outside the pki layout"));
        assert_null(a.items);

        /* bad parameters, no stateStore */
        _cleanup_(cluster_spec_freep) ClusterSpec *spec = load(f, NULL);
        for (unsigned n = 0; n <= 65; n += 65) {
                p.n_masters = n;
                assert_int_equal(self_hosted_render(spec, &p, &a, NULL), -EINVAL);
        }
        char *annotations[] = { (char *)"bad key!", (char *)"x", NULL };
        p = (SelfHostedParams){ .n_masters = 1, .pod_annotations = annotations };
        assert_int_equal(self_hosted_render(spec, &p, &a, NULL), -EINVAL);
        p.pod_annotations = NULL;
        char *store = spec->state_store;
        spec->state_store = NULL;
        free(error);
        error = NULL;
        assert_int_equal(self_hosted_render(spec, &p, &a, &error), -EINVAL);
        assert_non_null(strstr(error, "spec.stateStore"));
        spec->state_store = store;
}

/* The value of data[key] of a ConfigMap's text (caller frees), or NULL. */
static char *config_map_value(const SelfHostedObject *cm, const char *key) {
        _cleanup_(yaml_tree_freep) YamlNode *root = NULL;
        assert_int_equal(yaml_tree_parse(cm->text, strlen(cm->text), 0, &root, NULL), 0);
        const YamlNode *v = yaml_tree_get(yaml_tree_get(root, "data"), key);
        return v ? strdup(v->value) : NULL;
}

static const SelfHostedObject *find_in(const SelfHostedAssets *a, SelfHostedKind kind, const char *name) {
        const SelfHostedObject *o = find(a, kind, name);
        if (!o)
                fail_msg("no %s %s", self_hosted_kind_to_string(kind), name);
        return o;
}

/* The configuration files protokube renders travel as ConfigMaps, mounted at the directory the static pods
 * mount from the host, with the text the static pods' file has (the scheduler's with leader election on,
 * as its workload's flags had it), not read from the node. */
static void test_rendered_config_files(void **state) {
        Fixture *f = *state;
        SelfHostedAssets a = {};
        render_ok(f, NULL, 3, &a);
        _cleanup_(cluster_spec_freep) ClusterSpec *spec = load(f, NULL);
        ComponentConfigFile file = {};
        assert_int_equal(component_config_file(COMPONENT_KUBE_PROXY, spec, &file), 0);
        _cleanup_free_ char *value =
            config_map_value(find_in(&a, SELF_HOSTED_CONFIG_MAP, "kube-proxy-kube-proxy"), "config.yaml");
        assert_non_null(value);
        assert_string_equal(value, file.text);
        free(file.path);
        free(file.text);
        const SelfHostedObject *proxy = find_in(&a, SELF_HOSTED_DAEMON_SET, "kube-proxy");
        assert_non_null(strstr(proxy->text, "- --config=/var/lib/kube-proxy/config.yaml\n"));
        assert_null(strstr(proxy->text, "--kubeconfig"));
        assert_non_null(strstr(proxy->text, "configMap:\n"));
        assert_non_null(strstr(proxy->text, "mountPath: /var/lib/kube-proxy\n"));
        assert_null(strstr(proxy->text, "path: /var/lib/kube-proxy\n"));
        /* 1.20's scheduler: its unauthenticated server on the self-hosted instance's port, and the
         * checkpoint's copy on its own, named by the ConfigMap's annotation */
        const SelfHostedObject *cm = find_in(&a, SELF_HOSTED_CONFIG_MAP, "kube-scheduler-kube-scheduler");
        _cleanup_free_ char *own = config_map_value(cm, "config.yaml"),
                            *copy = config_map_value(cm, SELF_HOSTED_CHECKPOINT_PREFIX "config.yaml");
        assert_non_null(strstr(own, "apiVersion: kubescheduler.config.k8s.io/v1beta1\n"));
        assert_non_null(strstr(own, "healthzBindAddress: \"127.0.0.1:10261\"\n"));
        assert_non_null(strstr(own, "metricsBindAddress: \"127.0.0.1:10261\"\n"));
        assert_non_null(strstr(own, "leaderElection:\n  leaderElect: true\n"));
        assert_non_null(strstr(copy, "healthzBindAddress: \"127.0.0.1:10271\"\n"));
        assert_non_null(
            strstr(cm->text, SELF_HOSTED_CHECKPOINT_DATA ": config.yaml=checkpoint.config.yaml\n"));
        /* no copy where every instance may share the file (kube-proxy's) */
        assert_null(strstr(find_in(&a, SELF_HOSTED_CONFIG_MAP, "kube-proxy-kube-proxy")->text,
                           SELF_HOSTED_CHECKPOINT_DATA));
        self_hosted_assets_done(&a);

        _cleanup_free_ char *text = strdup(f->spec_text);
        char *v = strstr(text, "1.20.2");
        assert_non_null(v);
        memcpy(v, "1.31.2", 6);
        _cleanup_free_ char *with = strjoin(text, "  kubeScheduler: {leaderElect: false}\n");
        _cleanup_(cluster_spec_freep) ClusterSpec *s131 = NULL;
        assert_int_equal(cluster_spec_load_string("t.yaml", with, strlen(with), &s131, NULL), 0);
        SelfHostedParams p = { .n_masters = 3 };
        assert_int_equal(self_hosted_render(s131, &p, &a, NULL), 0);
        const SelfHostedObject *sched = find_in(&a, SELF_HOSTED_DEPLOYMENT, "kube-scheduler");
        assert_non_null(strstr(sched->text, "- --config=/var/lib/kube-scheduler/config.yaml\n"));
        assert_null(strstr(sched->text, "--leader-elect"));
        _cleanup_free_ char *sched_file = config_map_value(
            find_in(&a, SELF_HOSTED_CONFIG_MAP, "kube-scheduler-kube-scheduler"), "config.yaml");
        assert_non_null(strstr(sched_file, "apiVersion: kubescheduler.config.k8s.io/v1\n"));
        assert_non_null(strstr(sched_file, "leaderElection:\n  leaderElect: true\n"));
        self_hosted_assets_done(&a);
}

static void test_missing_file_is_named(void **state) {
        Fixture *f = *state;
        _cleanup_(cluster_spec_freep) ClusterSpec *spec = load(f, NULL);
        _cleanup_free_ char *error = NULL,
                            *path = strjoin(f->pki, "/kube-controller-manager/service-account.key");
        SelfHostedAssets a = {};
        SelfHostedParams p = { .n_masters = 3 };
        assert_int_equal(unlink(path), 0);
        assert_int_equal(self_hosted_render(spec, &p, &a, &error), -ENOENT);
        _cleanup_free_ char *want =
            strjoin("cannot read '", path,
                    "' (kube-controller-manager's serviceAccountPrivateKeyFile, for Secret "
                    "kube-system/kube-controller-manager-pki)");
        if (!strstr(error, want))
                fail_msg("%s", error);
        assert_null(a.items);
}

static void test_kube_proxy_disabled(void **state) {
        Fixture *f = *state;
        SelfHostedAssets a = {};
        render_ok(f, "  kubeProxy: {enabled: false}\n", 3, &a);
        assert_int_equal(a.n, 7); /* 3 Secrets, the scheduler's ConfigMap, 3 workloads */
        for (size_t i = 0; i < a.n; i++)
                assert_null(strstr(a.items[i].name, "proxy"));
        self_hosted_assets_done(&a);
}

/* A workload must select the pods it makes: the template carries k8s-app=<name>. */
static void test_workload_selector(void **state) {
        _cleanup_(workload_freep) Workload *w = calloc(1, sizeof(Workload));
        _cleanup_free_ char *text = NULL;
        assert_non_null(w);
        w->kind = WORKLOAD_DEPLOYMENT;
        w->name = strdup("x");
        assert_int_equal(pod_new(NULL, NULL, &w->pod), 0);
        assert_int_equal(pod_add_container(w->pod, "x", "img", NULL), 0);
        assert_int_equal(workload_to_yaml(w, &text), -EINVAL);
        assert_int_equal(pod_kv_set(&w->pod->labels, WORKLOAD_SELECTOR_LABEL, "y"), 0);
        assert_int_equal(workload_to_yaml(w, &text), -EINVAL);
        assert_int_equal(pod_kv_set(&w->pod->labels, WORKLOAD_SELECTOR_LABEL, "x"), 0);
        assert_int_equal(workload_to_yaml(w, &text), 0);
        assert_non_null(strstr(text, "  selector:\n    matchLabels:\n      k8s-app: x\n"));
        w->kind = _WORKLOAD_KIND_INVALID;
        free(text);
        text = NULL;
        assert_int_equal(workload_to_yaml(w, &text), -EINVAL);
}

/* spec.kubelet.selfHosted: the managed kubelet's ConfigMap and DaemonSet, on every node, with the node's
 * kubelet.env, its own credentials and the mounts a kubelet in a pod needs; nothing of it without the
 * switch. */
static void test_managed_kubelet(void **state) {
        Fixture *f = *state;
        SelfHostedAssets a = {};
        render_ok(f, NULL, 3, &a);
        assert_null(find(&a, SELF_HOSTED_DAEMON_SET, "kubelet"));
        assert_null(find(&a, SELF_HOSTED_CONFIG_MAP, "kubelet-config"));
        self_hosted_assets_done(&a);

        render_ok(f,
                  "  kubelet:\n    selfHosted: true\n    containerRuntime: remote\n"
                  "    containerRuntimeEndpoint: unix:///run/k8s/cri.sock\n",
                  3, &a);
        const SelfHostedObject *cm = find(&a, SELF_HOSTED_CONFIG_MAP, "kubelet-config");
        const SelfHostedObject *ds = find(&a, SELF_HOSTED_DAEMON_SET, "kubelet");
        assert_non_null(cm);
        assert_non_null(ds);
        assert_non_null(strstr(cm->text, "kind: KubeletConfiguration"));
        assert_non_null(strstr(ds->text, "image: registry.k8s.io/kubelet:v1.20.2\n"));
        assert_non_null(strstr(ds->text, "      hostPID: true\n"));
        assert_non_null(strstr(ds->text, "      - operator: Exists\n"));
        assert_non_null(strstr(ds->text, "        - /var/lib/kubelet/kubelet.env\n"));
        assert_non_null(strstr(ds->text, "mountPropagation: Bidirectional\n          name: root-dir\n"));
        assert_non_null(strstr(ds->text, "path: /run/k8s\n"));
        assert_non_null(strstr(ds->text, "protokube.io/kubelet-config: ")); /* quoted when all digits */
        assert_non_null(strstr(ds->text, "readinessProbe:\n          exec:\n"));
        assert_non_null(
            strstr(ds->text, "  updateStrategy:\n    rollingUpdate:\n      maxUnavailable: 1\n"));
        /* the node's own credentials and its static pods' host paths, read-only: the pki dir (the
         * kubelet checks a static pod's hostPath volumes in its own view), the components' files; never
         * a Secret shared by every node */
        _cleanup_free_ char *pki_root = strjoin("path: ", f->pki, "\n");
        assert_non_null(strstr(ds->text, pki_root));
        assert_non_null(strstr(ds->text, "path: /var/lib\n"));
        assert_non_null(strstr(ds->text, "path: /run/xtables.lock\n          type: FileOrCreate\n"));
        assert_null(strstr(ds->text, "secretName"));
        assert_null(strstr(ds->text, CERTS_ANNOTATION)); /* a renewal of the control plane's pairs does
                                                            not roll every node's kubelet */
        self_hosted_assets_done(&a);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_objects, setup, teardown),
                cmocka_unit_test_setup_teardown(test_secrets_hold_the_node_files, setup, teardown),
                cmocka_unit_test_setup_teardown(test_workloads, setup, teardown),
                cmocka_unit_test_setup_teardown(test_node_digest_is_the_pass_digest, setup, teardown),
                cmocka_unit_test_setup_teardown(test_config_map_and_refusals, setup, teardown),
                cmocka_unit_test_setup_teardown(test_rendered_config_files, setup, teardown),
                cmocka_unit_test_setup_teardown(test_missing_file_is_named, setup, teardown),
                cmocka_unit_test_setup_teardown(test_kube_proxy_disabled, setup, teardown),
                cmocka_unit_test(test_workload_selector),
                cmocka_unit_test_setup_teardown(test_no_name_shared_with_join_rbac, setup, teardown),
                cmocka_unit_test_setup_teardown(test_managed_kubelet, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
