/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "components/control-plane.h"
#include "components/etcd.h"
#include "components/render.h"
#include "manifest/pod-yaml.h"
#include "model/pod.h"
#include "spec/spec.h"
#include "unit-test.h"

/* A spec as cluster_spec_load leaves it: kops' ports and the internal suffix filled in
 * (model/conventions.h), except for cilium, whose ports the tests set. */
static EtcdClusterSpec test_etcd[] = {
        { .name = "main",
          .image = "registry.k8s.io/etcd:3.5.16-0",
          .client_port = { true, 4001 },
          .peer_port = { true, 2380 } },
        { .name = "events",
          .tls_dir = "/etc/kubernetes/pki/etcd-events/",
          .client_port = { true, 4002 },
          .peer_port = { true, 2381 } },
        { .name = "cilium" },
};

static ClusterSpec test_spec(void) {
        return (ClusterSpec){
                .name = "demo.k8s.test",
                .dns = { .internal_suffix = "internal.demo.k8s.test" },
                .kubernetes_version = "1.31.2",
                .etcd_clusters = { test_etcd, ELEMENTSOF(test_etcd) },
        };
}

static char *abc[] = { "a", "b", "c", NULL };

static const PodContainer *only_container(const Pod *pod) {
        assert_int_equal(pod->n_containers, 1);
        return &pod->containers[0];
}

static bool has_arg(const PodContainer *c, const char *arg) {
        return strv_contains(c->command, arg);
}

static const char *volume_path(const Pod *pod, const char *name) {
        for (size_t i = 0; i < pod->n_volumes; i++)
                if (streq(pod->volumes[i].name, name))
                        return pod->volumes[i].host_path;
        return NULL;
}

static void test_etcd_main(void **state) {
        ClusterSpec s = test_spec();
        EtcdMemberAssignment m = { "main", "b", abc, "/mnt/master-vol-1" };
        _cleanup_(pod_freep) Pod *pod = NULL;

        assert_int_equal(etcd_pod_build(&s, &m, &pod), 0);
        assert_string_equal(pod->name, "etcd-server");
        assert_string_equal(pod->namespace, "kube-system");
        assert_true(pod->host_network);
        assert_string_equal(pod->priority_class_name, "system-cluster-critical");
        const PodContainer *c = only_container(pod);
        assert_string_equal(c->image, "registry.k8s.io/etcd:3.5.16-0");
        assert_string_equal(c->command[0], "/usr/local/bin/etcd");
        /* the flags after the binary are sorted */
        for (size_t i = 2; c->command[i]; i++)
                assert_true(strcmp(c->command[i - 1], c->command[i]) < 0);
        assert_true(has_arg(c, "--name=etcd-b"));
        assert_true(has_arg(c, "--data-dir=/var/etcd/data"));
        assert_true(has_arg(c, "--listen-client-urls=http://0.0.0.0:4001"));
        assert_true(has_arg(c, "--listen-peer-urls=http://0.0.0.0:2380"));
        assert_true(has_arg(c, "--advertise-client-urls=http://etcd-b.internal.demo.k8s.test:4001"));
        assert_true(has_arg(c, "--initial-advertise-peer-urls=http://etcd-b.internal.demo.k8s.test:2380"));
        assert_true(has_arg(c, "--initial-cluster=etcd-a=http://etcd-a.internal.demo.k8s.test:2380,"
                               "etcd-b=http://etcd-b.internal.demo.k8s.test:2380,"
                               "etcd-c=http://etcd-c.internal.demo.k8s.test:2380"));
        assert_true(has_arg(c, "--initial-cluster-state=new"));
        assert_true(has_arg(c, "--initial-cluster-token=etcd-cluster-token-etcd"));
        for (size_t i = 0; c->command[i]; i++)
                assert_null(strstr(c->command[i], "https"));
        assert_string_equal(volume_path(pod, "etcd-data"), "/mnt/master-vol-1/var/etcd/data");
        assert_string_equal(pod->volumes[0].host_path_type, "DirectoryOrCreate");
        assert_true(c->liveness_probe.set);
        assert_int_equal(c->liveness_probe.http_get.port, 4001);
        assert_string_equal(c->liveness_probe.http_get.path, "/health");
        assert_string_equal(c->liveness_probe.http_get.scheme, "HTTP");
}

/* Each version's row (model/etcd-versions.h): 3.4.13 gets the flags every version knows and nothing else,
 * 3.5.16 zap logging to stderr and the initial corruption check; the version key wins over the image's tag;
 * a version without a row renders nothing. */
static void test_etcd_version_flags(void **state) {
        ClusterSpec s = test_spec();
        EtcdMemberAssignment m = { "main", "b", abc, "/mnt/x" };
        static const char *const v35[] = { "--experimental-initial-corrupt-check=true",
                                           "--log-outputs=stderr", "--logger=zap" };
        static const struct {
                const char *image, *version;
                int r;
                bool is35;
        } cases[] = {
                { "registry.k8s.io/etcd:3.4.13-0", NULL, 0, false },
                { "registry.k8s.io/etcd:3.5.16-0", NULL, 0, true },
                { "example.com/etcd@sha256:0123", "3.5.16", 0, true },
                { "registry.k8s.io/etcd:3.5.16-0", "3.4.13", 0, false },
                { "registry.k8s.io/etcd:3.5.2-0", NULL, -EINVAL, false },
                { "example.com/etcd:latest", NULL, -EINVAL, false },
                { "registry.k8s.io/etcd:3.4.13-0", "3.6.0", -EINVAL, false },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(pod_freep) Pod *pod = NULL;
                test_etcd[0].image = (char *)cases[i].image;
                test_etcd[0].version = (char *)cases[i].version;
                int r = etcd_pod_build(&s, &m, &pod);
                test_etcd[0].image = "registry.k8s.io/etcd:3.5.16-0";
                test_etcd[0].version = NULL;
                assert_int_equal(r, cases[i].r);
                if (r < 0)
                        continue;
                char **cmd = only_container(pod)->command;
                for (size_t k = 0; k < ELEMENTSOF(v35); k++)
                        if (strv_contains(cmd, v35[k]) != cases[i].is35)
                                fail_msg("case %zu: %s %s", i, v35[k],
                                         cases[i].is35 ? "missing" : "present");
                assert_true(strv_contains(cmd, "--name=etcd-b"));
        }
}

/* A restore under way (docs/etcd-restore.md): the init container runs the image's restore tool (etcdutl in
 * 3.5) through its shell with the values as positional parameters; the snapshot's directory is mounted
 * read-only in it alone. */
static void test_etcd_restore_init_container(void **state) {
        ClusterSpec s = test_spec();
        EtcdMemberAssignment m = { .cluster = "main",
                                   .member = "b",
                                   .members = abc,
                                   .mount_path = "/mnt/master-vol-1",
                                   .restore_id = "20261124T011500Z-1a2b3c4d" };
        _cleanup_(pod_freep) Pod *pod = NULL;
        _cleanup_free_ char *yaml = NULL;
        assert_int_equal(etcd_pod_build(&s, &m, &pod), 0);
        assert_int_equal(pod->n_init_containers, 1);
        const PodContainer *init = &pod->init_containers[0], *c = only_container(pod);
        assert_string_equal(init->name, "etcd-restore");
        assert_string_equal(init->image, c->image);
        assert_string_equal(init->command[0], "/bin/sh");
        assert_string_equal(init->command[1], "-c");
        assert_non_null(strstr(init->command[2], "\netcdutl snapshot restore \"$2\""));
        const char *want[] = { "etcd-restore",
                               "/var/etcd/data",
                               "/var/etcd/restore/20261124T011500Z-1a2b3c4d.db",
                               "etcd-b",
                               "etcd-a=http://etcd-a.internal.demo.k8s.test:2380,"
                               "etcd-b=http://etcd-b.internal.demo.k8s.test:2380,"
                               "etcd-c=http://etcd-c.internal.demo.k8s.test:2380",
                               "main-20261124T011500Z-1a2b3c4d",
                               "http://etcd-b.internal.demo.k8s.test:2380",
                               NULL };
        for (size_t i = 0; want[i]; i++)
                assert_string_equal(init->command[3 + i], want[i]);
        assert_null(init->command[10]);
        assert_int_equal(init->n_volume_mounts, 2);
        assert_string_equal(init->volume_mounts[1].mount_path, "/var/etcd/restore");
        assert_true(init->volume_mounts[1].read_only);
        assert_string_equal(volume_path(pod, "etcd-restore"), "/mnt/master-vol-1/var/etcd/restore");
        assert_int_equal(c->n_volume_mounts, 1); /* etcd itself never sees the snapshot */
        assert_int_equal(pod_to_yaml(pod, &yaml), 0);
        assert_non_null(strstr(yaml, "\n  initContainers:\n  - command:\n    - /bin/sh\n"));
        /* 3.4's image restores with its etcdctl */
        pod = pod_free(pod);
        test_etcd[0].image = "registry.k8s.io/etcd:3.4.13-0";
        int r = etcd_pod_build(&s, &m, &pod);
        test_etcd[0].image = "registry.k8s.io/etcd:3.5.16-0";
        assert_int_equal(r, 0);
        assert_non_null(strstr(pod->init_containers[0].command[2], "\netcdctl snapshot restore \"$2\""));
        /* no restore: no init container; a bad id is refused */
        pod = pod_free(pod);
        m.restore_id = NULL;
        assert_int_equal(etcd_pod_build(&s, &m, &pod), 0);
        assert_int_equal(pod->n_init_containers, 0);
        pod = pod_free(pod);
        m.restore_id = "x; rm -rf /";
        assert_int_equal(etcd_pod_build(&s, &m, &pod), -EINVAL);
}

static void test_etcd_events_tls(void **state) {
        ClusterSpec s = test_spec();
        s.dns.internal_suffix = "int.example";
        char *members[] = { "c", "a", NULL }; /* tag order is kept */
        EtcdMemberAssignment m = { "events", "a", members, "/mnt/master-vol-2/" };
        _cleanup_(pod_freep) Pod *pod = NULL;

        assert_int_equal(etcd_pod_build(&s, &m, &pod), 0);
        assert_string_equal(pod->name, "etcd-server-events");
        const PodContainer *c = only_container(pod);
        assert_string_equal(c->image, "registry.k8s.io/etcd:3.5.16-0");
        assert_true(has_arg(c, "--name=etcd-events-a"));
        assert_true(has_arg(c, "--data-dir=/var/etcd/data-events"));
        assert_true(has_arg(c, "--listen-client-urls=https://0.0.0.0:4002"));
        assert_true(has_arg(c, "--advertise-client-urls=https://etcd-events-a.int.example:4002"));
        assert_true(has_arg(c, "--initial-cluster=etcd-events-c=https://etcd-events-c.int.example:2381,"
                               "etcd-events-a=https://etcd-events-a.int.example:2381"));
        assert_true(has_arg(c, "--initial-cluster-token=etcd-cluster-token-etcd-events"));
        assert_true(has_arg(c, "--trusted-ca-file=/etc/kubernetes/pki/etcd-events/ca.crt"));
        assert_true(has_arg(c, "--cert-file=/etc/kubernetes/pki/etcd-events/server.crt"));
        assert_true(has_arg(c, "--key-file=/etc/kubernetes/pki/etcd-events/server.key"));
        assert_true(has_arg(c, "--peer-cert-file=/etc/kubernetes/pki/etcd-events/peer.crt"));
        assert_true(has_arg(c, "--peer-key-file=/etc/kubernetes/pki/etcd-events/peer.key"));
        /* peers are checked against their own CA, not the clients' */
        assert_true(has_arg(c, "--peer-trusted-ca-file=/etc/kubernetes/pki/etcd-events/peer-ca.crt"));
        assert_true(has_arg(c, "--client-cert-auth=true"));
        assert_true(has_arg(c, "--peer-client-cert-auth=true"));
        assert_string_equal(volume_path(pod, "etcd-data"), "/mnt/master-vol-2/var/etcd/data-events");
        assert_non_null(volume_path(pod, "etcd-tls"));
        /* the probe goes to the plain-http loopback metrics listener */
        assert_true(has_arg(c, "--listen-metrics-urls=http://127.0.0.1:8082"));
        assert_int_equal(c->liveness_probe.http_get.port, 8082);
}

static void test_etcd_render_yaml(void **state) {
        ClusterSpec s = test_spec();
        EtcdMemberAssignment m = { "main", "a", abc, "/mnt/v" };
        _cleanup_free_ char *y1 = NULL, *y2 = NULL;

        assert_int_equal(etcd_manifest_render(&s, &m, &y1), 0);
        assert_int_equal(etcd_manifest_render(&s, &m, &y2), 0);
        assert_string_equal(y1, y2);
        assert_true(strncmp(y1, "apiVersion: v1\nkind: Pod\n", 25) == 0);
        assert_non_null(strstr(y1, "\n    - /usr/local/bin/etcd\n    - --advertise-client-urls="));
        assert_non_null(strstr(y1, "\n  hostNetwork: true\n"));
}

/* A member an upgrade holds at the version it runs (docs/etcd-versions.md): its manifest gets the held
 * image and that version's flags, whatever the spec wants; the image is read back from the manifest. */
static void test_etcd_held_image(void **state) {
        ClusterSpec s = test_spec(); /* wants 3.5.16 */
        EtcdMemberAssignment m = { "main", "a", abc, "/mnt/v" };
        m.image = "registry.k8s.io/etcd:3.4.13-0";
        _cleanup_free_ char *held = NULL, *wanted = NULL, *image = NULL;
        assert_int_equal(etcd_manifest_render(&s, &m, &held), 0);
        assert_null(strstr(held, "--logger=zap"));
        assert_int_equal(etcd_manifest_image(held, &image), 0);
        assert_string_equal(image, "registry.k8s.io/etcd:3.4.13-0");
        free(image), image = NULL;

        m.image = NULL;
        assert_int_equal(etcd_manifest_render(&s, &m, &wanted), 0);
        assert_non_null(strstr(wanted, "--logger=zap"));
        assert_int_equal(etcd_manifest_image(wanted, &image), 0);
        assert_string_equal(image, "registry.k8s.io/etcd:3.5.16-0");

        _cleanup_(pod_freep) Pod *pod = NULL;
        m.image = "example.com/etcd:latest"; /* a held image must name a version protokube runs */
        assert_int_equal(etcd_pod_build(&s, &m, &pod), -EINVAL);
        static const char *const bad[] = { "",
                                           "kind: Pod\n",
                                           "spec:\n  containers: []\n",
                                           "spec:\n  containers:\n  - name: x\n",
                                           "spec:\n  containers:\n  - image: [a]\n",
                                           "{" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                char *x = NULL;
                assert_int_equal(etcd_manifest_image(bad[i], &x), PK_EMALFORMED);
                assert_null(x);
        }
}

static void test_etcd_invalid(void **state) {
        ClusterSpec s = test_spec();
        _cleanup_(pod_freep) Pod *pod = NULL;
        char *dup[] = { "a", "b", "a", NULL };
        char *bad[] = { "a", "B_", NULL };
        char *none[] = { NULL };

        assert_int_equal(etcd_pod_build(&s, &(EtcdMemberAssignment){ "main", "d", abc, "/mnt/v" }, &pod),
                         -EINVAL);
        assert_int_equal(etcd_pod_build(&s, &(EtcdMemberAssignment){ "main", "a", dup, "/mnt/v" }, &pod),
                         -EINVAL);
        assert_int_equal(etcd_pod_build(&s, &(EtcdMemberAssignment){ "main", "a", bad, "/mnt/v" }, &pod),
                         -EINVAL);
        assert_int_equal(etcd_pod_build(&s, &(EtcdMemberAssignment){ "main", "a", none, "/mnt/v" }, &pod),
                         -EINVAL);
        assert_int_equal(etcd_pod_build(&s, &(EtcdMemberAssignment){ "main", "a", abc, "mnt/v" }, &pod),
                         -EINVAL);
        assert_int_equal(
            etcd_pod_build(&s, &(EtcdMemberAssignment){ "main", "a", abc, "/mnt/../etc" }, &pod), -EINVAL);
        assert_int_equal(etcd_pod_build(&s, &(EtcdMemberAssignment){ "nope", "a", abc, "/mnt/v" }, &pod),
                         -ENOENT);
        /* a cluster other than main/events needs its ports in the spec */
        assert_int_equal(etcd_pod_build(&s, &(EtcdMemberAssignment){ "cilium", "a", abc, "/mnt/v" }, &pod),
                         -EINVAL);
        test_etcd[2].client_port = (OptInt){ true, 4003 };
        test_etcd[2].peer_port = (OptInt){ true, 2382 };
        assert_int_equal(etcd_pod_build(&s, &(EtcdMemberAssignment){ "cilium", "a", abc, "/mnt/v" }, &pod),
                         0);
        assert_true(has_arg(only_container(pod), "--listen-client-urls=http://0.0.0.0:4003"));
        assert_true(has_arg(only_container(pod), "--data-dir=/var/etcd/data-cilium"));
        test_etcd[2].client_port = (OptInt){};
        test_etcd[2].peer_port = (OptInt){};
}

static const char *volume_type(const Pod *pod, const char *path) {
        for (size_t i = 0; i < pod->n_volumes; i++)
                if (streq(pod->volumes[i].host_path, path))
                        return strempty(pod->volumes[i].host_path_type);
        return NULL;
}

static bool mounted_at(const PodContainer *c, const char *path, bool read_only) {
        for (size_t i = 0; i < c->n_volume_mounts; i++)
                if (streq(c->volume_mounts[i].mount_path, path))
                        return c->volume_mounts[i].read_only == read_only;
        return false;
}

/* command = go-runner + its arguments + the binary + the flags, and the flags are the builder's flags */
static void assert_go_runner(const PodContainer *c, const char *name, char **flags) {
        char log[128], bin[128];
        snprintf(log, sizeof(log), "--log-file=/var/log/%s.log", name);
        snprintf(bin, sizeof(bin), "/usr/local/bin/%s", name);
        assert_string_equal(c->command[0], "/go-runner");
        assert_string_equal(c->command[1], log);
        assert_string_equal(c->command[2], "--also-stdout");
        assert_string_equal(c->command[3], bin);
        assert_true(strv_equal(c->command + 4, flags));
}

static void test_kube_apiserver_defaults(void **state) {
        ClusterSpec s = test_spec();
        _cleanup_(pod_freep) Pod *pod = NULL;
        _cleanup_strv_free_ char **flags = NULL;

        assert_int_equal(component_flags(COMPONENT_KUBE_APISERVER, &s, &flags), 0);
        assert_int_equal(component_pod_build(COMPONENT_KUBE_APISERVER, &s, &pod), 0);
        const PodContainer *c = only_container(pod);
        assert_go_runner(c, "kube-apiserver", flags);
        assert_string_equal(pod->name, "kube-apiserver");
        assert_string_equal(pod->priority_class_name, "system-cluster-critical");
        assert_string_equal(c->image, "registry.k8s.io/kube-apiserver:v1.31.2");
        assert_true(strv_contains(flags, "--etcd-servers=http://127.0.0.1:4001"));
        /* events has tlsDir in the test spec */
        assert_true(strv_contains(flags, "--etcd-servers-overrides=/events#https://127.0.0.1:4002"));
        assert_true(strv_contains(flags, "--secure-port=443"));
        assert_true(strv_contains(flags, "--authorization-mode=Node,RBAC"));
        assert_true(strv_contains(flags, "--service-account-issuer=https://api.internal.demo.k8s.test"));
        assert_true(strv_contains(flags, "--allow-privileged=true"));
        assert_true(strv_contains(flags, "--v=2"));
        assert_true(strv_contains(flags, "--tls-cert-file=/srv/kubernetes/kube-apiserver/server.crt"));
        assert_false(strv_contains(flags, "--etcd-cafile=/etc/kubernetes/pki/etcd-events/ca.crt"));
        for (size_t i = 1; flags[i]; i++)
                assert_true(strcmp(flags[i - 1], flags[i]) < 0);
        assert_true(c->liveness_probe.set);
        assert_string_equal(c->liveness_probe.http_get.path, "/livez");
        assert_string_equal(c->liveness_probe.http_get.scheme, "HTTPS");
        assert_string_equal(c->liveness_probe.http_get.host, "127.0.0.1");
        assert_int_equal(c->liveness_probe.http_get.port, 443);
        assert_string_equal(c->readiness_probe.http_get.path, "/readyz");
        assert_int_equal(c->ports[0].container_port, 443);
        assert_string_equal(volume_type(pod, "/var/log/kube-apiserver.log"), "FileOrCreate");
        assert_true(mounted_at(c, "/var/log/kube-apiserver.log", false));
        assert_true(mounted_at(c, "/srv/kubernetes", true));
        assert_string_equal(c->requests[0], "cpu");
        assert_string_equal(c->requests[1], "150m");
}

static void test_kube_apiserver_config(void **state) {
        ClusterSpec s = test_spec();
        char *gates[] = { "B", "false", "A", "true", NULL };
        char *servers[] = { "https://10.0.0.1:2379", NULL };
        char *keys[] = { "/keys/a.pub", "/etc/k/b.pub", NULL };
        s.kubernetes_version = "v1.30.0";
        s.kube_apiserver = (KubeAPIServerConfig){
                .image = "example.com/apiserver:dev",
                .secure_port = { true, 6443 },
                .log_level = { true, 0 },
                .anonymous_auth = { true, false },
                .etcd_servers = servers,
                .feature_gates = gates,
                .event_ttl = { true, 3 * 3600 * USEC_PER_SEC },
                .service_account_key_file = keys,
                .audit_log_path = "/var/log/audit/kube.log",
                .oidc_issuer_url = "https://dex",
        };
        test_etcd[0].tls_dir = "/pki/etcd";
        _cleanup_(pod_freep) Pod *pod = NULL;
        _cleanup_strv_free_ char **flags = NULL;
        assert_int_equal(component_flags(COMPONENT_KUBE_APISERVER, &s, &flags), 0);
        assert_int_equal(component_pod_build(COMPONENT_KUBE_APISERVER, &s, &pod), 0);
        test_etcd[0].tls_dir = NULL;

        const PodContainer *c = only_container(pod);
        assert_string_equal(c->image, "example.com/apiserver:dev");
        assert_true(strv_contains(flags, "--etcd-servers=https://10.0.0.1:2379"));
        assert_true(strv_contains(flags, "--etcd-cafile=/pki/etcd/ca.crt"));
        assert_true(strv_contains(flags, "--etcd-certfile=/pki/etcd/server.crt"));
        assert_true(strv_contains(flags, "--feature-gates=A=true,B=false"));
        assert_true(strv_contains(flags, "--event-ttl=3h0m0s"));
        assert_true(strv_contains(flags, "--anonymous-auth=false"));
        assert_true(strv_contains(flags, "--v=0"));
        assert_true(strv_contains(flags, "--secure-port=6443"));
        assert_true(strv_contains(flags, "--service-account-key-file=/keys/a.pub"));
        assert_true(strv_contains(flags, "--service-account-key-file=/etc/k/b.pub"));
        assert_true(strv_contains(flags, "--oidc-issuer-url=https://dex"));
        assert_int_equal(c->liveness_probe.http_get.port, 6443);
        /* every file's directory is mounted read-only, the audit log directory writable */
        assert_true(mounted_at(c, "/keys", true));
        assert_true(mounted_at(c, "/etc/k", true));
        assert_true(mounted_at(c, "/pki/etcd", true));
        assert_true(mounted_at(c, "/var/log/audit", false));
        /* the spec itself is not modified by defaulting */
        assert_null(s.kube_apiserver.storage_backend);
        assert_null(s.kube_apiserver.enable_admission_plugins);
}

static void test_kube_controller_manager(void **state) {
        ClusterSpec s = test_spec();
        s.kube_apiserver.service_cluster_ip_range = "10.32.0.0/16";
        s.kube_controller_manager.node_monitor_grace_period = (OptDuration){ true, 40 * USEC_PER_SEC };
        _cleanup_(pod_freep) Pod *pod = NULL;
        _cleanup_strv_free_ char **flags = NULL;
        assert_int_equal(component_flags(COMPONENT_KUBE_CONTROLLER_MANAGER, &s, &flags), 0);
        assert_int_equal(component_pod_build(COMPONENT_KUBE_CONTROLLER_MANAGER, &s, &pod), 0);
        const PodContainer *c = only_container(pod);
        assert_go_runner(c, "kube-controller-manager", flags);
        assert_string_equal(c->image, "registry.k8s.io/kube-controller-manager:v1.31.2");
        assert_true(strv_contains(flags, "--cluster-name=demo.k8s.test"));
        assert_true(strv_contains(flags, "--service-cluster-ip-range=10.32.0.0/16"));
        assert_true(strv_contains(flags, "--cluster-cidr=100.96.0.0/11"));
        assert_true(strv_contains(flags, "--kubeconfig=/var/lib/kube-controller-manager/kubeconfig"));
        assert_true(strv_contains(flags, "--node-monitor-grace-period=40s"));
        assert_true(strv_contains(flags, "--leader-elect=true"));
        assert_string_equal(c->liveness_probe.http_get.path, "/healthz");
        assert_int_equal(c->liveness_probe.http_get.port, 10257);
        assert_string_equal(c->liveness_probe.http_get.scheme, "HTTPS");
        assert_true(mounted_at(c, "/var/lib/kube-controller-manager", true));
        assert_string_equal(pod->priority_class_name, "system-cluster-critical");
}

static void test_kube_scheduler(void **state) {
        ClusterSpec s = test_spec();
        s.kube_scheduler.secure_port = (OptInt){ true, 11259 };
        _cleanup_(pod_freep) Pod *pod = NULL;
        _cleanup_strv_free_ char **flags = NULL;
        assert_int_equal(component_flags(COMPONENT_KUBE_SCHEDULER, &s, &flags), 0);
        assert_int_equal(component_pod_build(COMPONENT_KUBE_SCHEDULER, &s, &pod), 0);
        const PodContainer *c = only_container(pod);
        assert_go_runner(c, "kube-scheduler", flags);
        assert_true(strv_contains(flags, "--secure-port=11259"));
        /* 1.31: the kubeconfig is in the file the pod reads, not a flag */
        assert_true(strv_contains(flags, "--config=/var/lib/kube-scheduler/config.yaml"));
        assert_false(strv_contains(flags, "--kubeconfig=/var/lib/kube-scheduler/kubeconfig"));
        assert_int_equal(c->liveness_probe.http_get.port, 11259);
        assert_string_equal(c->liveness_probe.http_get.path, "/healthz");
        assert_true(mounted_at(c, "/var/lib/kube-scheduler", true));

        _cleanup_strv_free_ char **plain = NULL;
        assert_int_equal(component_flags_form(COMPONENT_KUBE_SCHEDULER, &s, COMPONENT_FORM_FLAGS, &plain),
                         0);
        assert_true(strv_contains(plain, "--kubeconfig=/var/lib/kube-scheduler/kubeconfig"));
        assert_false(strv_contains(plain, "--config=/var/lib/kube-scheduler/config.yaml"));
}

static void test_kube_proxy(void **state) {
        ClusterSpec s = test_spec();
        s.kube_controller_manager.cluster_cidr = "10.200.0.0/16";
        s.kube_proxy.proxy_mode = (OptEnum){ true, PROXY_MODE_IPVS };
        s.kube_proxy.healthz_bind_address = "0.0.0.0:10266";
        _cleanup_(pod_freep) Pod *pod = NULL;
        _cleanup_strv_free_ char **flags = NULL;
        assert_int_equal(component_flags(COMPONENT_KUBE_PROXY, &s, &flags), 0);
        assert_int_equal(component_pod_build(COMPONENT_KUBE_PROXY, &s, &pod), 0);
        const PodContainer *c = only_container(pod);
        assert_go_runner(c, "kube-proxy", flags);
        assert_string_equal(pod->priority_class_name, "system-node-critical");
        assert_true(c->privileged);
        /* every setting but the log level is in its file */
        char *file_form[] = { "--config=/var/lib/kube-proxy/config.yaml", "--v=2", NULL };
        assert_true(strv_equal(flags, file_form));
        _cleanup_strv_free_ char **plain = NULL;
        assert_int_equal(component_flags_form(COMPONENT_KUBE_PROXY, &s, COMPONENT_FORM_FLAGS, &plain), 0);
        assert_true(strv_contains(plain, "--cluster-cidr=10.200.0.0/16"));
        assert_true(strv_contains(plain, "--proxy-mode=ipvs"));
        assert_int_equal(c->liveness_probe.http_get.port, 10266);
        assert_string_equal(c->liveness_probe.http_get.scheme, "HTTP");
        assert_true(mounted_at(c, "/run/xtables.lock", false));
        assert_true(mounted_at(c, "/lib/modules", true));

        s.kube_proxy.healthz_bind_address = "no-port";
        Pod *bad = NULL;
        assert_int_equal(component_pod_build(COMPONENT_KUBE_PROXY, &s, &bad), -EINVAL);
        s.kube_proxy.enabled = (OptBool){ true, false };
        assert_int_equal(component_pod_build(COMPONENT_KUBE_PROXY, &s, &bad), 0);
        assert_null(bad);
}

/* Every component has a row whose name maps back and names its pod; anything else is refused. */
static void test_component_table(void **state) {
        ClusterSpec s = test_spec();
        for (Component c = 0; c < _COMPONENT_MAX; c++) {
                _cleanup_(pod_freep) Pod *pod = NULL;
                assert_non_null(component_to_string(c));
                assert_int_equal(component_from_string(component_to_string(c)), c);
                assert_true(component_enabled(c, &s));
                assert_int_equal(component_pod_build(c, &s, &pod), 0);
                assert_string_equal(pod->name, component_to_string(c));
        }
        _cleanup_strv_free_ char **flags = NULL;
        Pod *pod = NULL;
        assert_null(component_to_string(_COMPONENT_MAX));
        assert_int_equal(component_from_string("etcd"), _COMPONENT_INVALID);
        assert_int_equal(component_flags(_COMPONENT_MAX, &s, &flags), -EINVAL);
        assert_int_equal(component_pod_build(_COMPONENT_INVALID, &s, &pod), -EINVAL);
        assert_null(pod);
}

/* Unset, a key takes the other component's table default: the components agree without a loaded spec. */
static void test_inherited_defaults(void **state) {
        ClusterSpec s = test_spec();
        _cleanup_strv_free_ char **kcm = NULL, **proxy = NULL;
        assert_int_equal(component_flags(COMPONENT_KUBE_CONTROLLER_MANAGER, &s, &kcm), 0);
        assert_true(strv_contains(kcm, "--service-cluster-ip-range=100.64.0.0/13"));
        assert_int_equal(component_flags_form(COMPONENT_KUBE_PROXY, &s, COMPONENT_FORM_FLAGS, &proxy), 0);
        assert_true(strv_contains(proxy, "--cluster-cidr=100.96.0.0/11"));
        /* the spec itself is not modified */
        assert_null(s.kube_controller_manager.service_cluster_ip_range);
        assert_null(s.kube_proxy.cluster_cidr);
}

static void test_render_set(void **state) {
        ClusterSpec s = test_spec();
        EtcdMemberAssignment m[] = { { "main", "a", abc, "/mnt/a" }, { "events", "a", abc, "/mnt/b" } };
        _cleanup_(rendered_manifests_done) RenderedManifests r = {};
        const char *failed = NULL;
        static const char *const names[] = { "kube-apiserver.manifest", "kube-controller-manager.manifest",
                                             "kube-scheduler.manifest", "kube-proxy.manifest",
                                             "etcd.manifest",           "etcd-events.manifest" };
        assert_int_equal(control_plane_render(&s, &(ControlPlaneParams){ m, 2, NULL }, &r, &failed), 0);
        assert_int_equal(r.n, ELEMENTSOF(names));
        for (size_t i = 0; i < r.n; i++)
                assert_string_equal(r.items[i].file_name, names[i]);

        /* two assignments for one cluster, or none in the spec: an error naming etcd */
        RenderedManifests r2 = {};
        EtcdMemberAssignment twice[] = { m[0], m[0] };
        assert_int_equal(control_plane_render(&s, &(ControlPlaneParams){ twice, 2, NULL }, &r2, &failed),
                         -EEXIST);
        assert_string_equal(failed, "etcd");
        s.kubernetes_version = "1.31 2";
        assert_int_equal(control_plane_render(&s, &(ControlPlaneParams){ NULL, 0, NULL }, &r2, &failed),
                         -EINVAL);
        assert_string_equal(failed, "kube-apiserver");
}

/* kubernetesVersion selects the flags: 1.20 to 1.23 get --port=0 (no unauthenticated HTTP port on
 * kube-controller-manager), later versions, which have no --port, do not; kube-scheduler reads its file,
 * beside which 1.20 to 1.22 ignore --port (the file's healthzBindAddress stands in), so only 1.23 gets it; a
 * version outside 1.20..1.31 in a spec made in code is refused. */
static void test_flags_by_version(void **state) {
        const struct {
                const char *version;
                bool port, scheduler_port;
        } cases[] = { { "1.20.2", true, false },
                      { "1.22.1", true, false },
                      { "v1.23.17", true, true },
                      { "1.24.0", false, false },
                      { "1.31.2", false, false } };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                ClusterSpec s = test_spec();
                s.kubernetes_version = (char *)cases[i].version;
                const Component gated[] = { COMPONENT_KUBE_CONTROLLER_MANAGER, COMPONENT_KUBE_SCHEDULER };
                for (size_t j = 0; j < ELEMENTSOF(gated); j++) {
                        _cleanup_strv_free_ char **flags = NULL;
                        assert_int_equal(component_flags(gated[j], &s, &flags), 0);
                        assert_int_equal(strv_contains(flags, "--port=0"),
                                         j == 0 ? cases[i].port : cases[i].scheduler_port);
                }
                _cleanup_strv_free_ char **flags = NULL;
                assert_int_equal(component_flags(COMPONENT_KUBE_APISERVER, &s, &flags), 0);
                STRV_FOREACH (f, flags)
                        assert_false(startswith(*f, "--port=") || startswith(*f, "--insecure-port="));
        }
        ClusterSpec s = test_spec();
        char **flags = NULL;
        s.kubernetes_version = "1.19.16";
        assert_int_equal(component_flags(COMPONENT_KUBE_SCHEDULER, &s, &flags), -EOPNOTSUPP);
        s.kubernetes_version = "1.32.0";
        assert_int_equal(component_flags(COMPONENT_KUBE_SCHEDULER, &s, &flags), -EOPNOTSUPP);
        assert_null(flags);
}

/* The flags for examples/cluster.yaml, from the C builders, match tests/golden/flags (which
 * scripts/update-golden-manifests.sh extracts from the rendered manifests). */
static void compare_golden(const char *component, char **flags) {
        _cleanup_free_ char *path = strprintf("%s/tests/golden/flags/%s.flags", SRCDIR, component);
        _cleanup_free_ char *want = NULL, *got = strv_join(flags, "\n");
        assert_int_equal(read_full_file(path, 1 << 20, &want, NULL), 0);
        assert_non_null(got);
        assert_true(strextend_printf(&got, "\n") >= 0);
        if (!streq(got, want))
                fail_msg("%s: flags differ from %s:\n%s", component, path, got);
}

static void test_golden_flags(void **state) {
        _cleanup_(cluster_spec_freep) ClusterSpec *s = NULL;
        _cleanup_strv_free_ char **errors = NULL;
        assert_int_equal(cluster_spec_load(SRCDIR "/examples/cluster.yaml", &s, &errors), 0);
        for (Component c = 0; c < _COMPONENT_MAX; c++) {
                _cleanup_strv_free_ char **flags = NULL;
                assert_int_equal(component_flags(c, s, &flags), 0);
                compare_golden(component_to_string(c), flags);
        }
        _cleanup_(pod_freep) Pod *pod = NULL;
        assert_int_equal(etcd_pod_build(s, &(EtcdMemberAssignment){ "main", "b", abc, "/mnt/x" }, &pod), 0);
        compare_golden("etcd", pod->containers[0].command + 1);
}

/* Values that reach a manifest or a joined flag are checked when the spec is loaded. */
static void test_config_validation(void **state) {
        static const char base[] =
            "apiVersion: protokube/v1alpha1\nkind: Cluster\nmetadata: {name: a.k8s.test}\n"
            "spec:\n  cloud: local\n  dns: {provider: none}\n"
            "  etcdClusters: [{name: main, image: \"x:3.4.13\"}]\n  kubernetesVersion: 1.31.2\n";
        static const struct {
                const char *yaml, *error;
        } cases[] = {
                { "  kubeAPIServer: {cpuRequest: lots}\n",
                  "spec.kubeAPIServer.cpuRequest: must be a Kubernetes" },
                { "  kubeAPIServer: {memoryRequest: 1.2.3}\n", "spec.kubeAPIServer.memoryRequest: must be" },
                { "  kubeAPIServer: {tlsCertFile: rel/x.crt}\n",
                  "spec.kubeAPIServer.tlsCertFile: must be an absolute" },
                { "  kubeAPIServer: {serviceAccountKeyFile: [/a, ../b]}\n",
                  "serviceAccountKeyFile: must be an abs" },
                { "  kubeAPIServer: {apiAudiences: [\"a,b\"]}\n",
                  "spec.kubeAPIServer.apiAudiences: elements" },
                { "  kubeAPIServer: {featureGates: {\"A=B\": \"true\"}}\n",
                  "spec.kubeAPIServer.featureGates: keys" },
                { "  kubeAPIServer: {securePort: 70000}\n", "spec.kubeAPIServer.securePort" },
                { "  kubeControllerManager: {kubeconfig: /x/../y}\n",
                  "kubeControllerManager.kubeconfig: must" },
                { "  kubeProxy: {healthzBindAddress: nope}\n",
                  "spec.kubeProxy.healthzBindAddress: must be address" },
                { "  kubeProxy: {proxyMode: userspace}\n", "spec.kubeProxy.proxyMode" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *text = strjoin(base, cases[i].yaml);
                _cleanup_(cluster_spec_freep) ClusterSpec *s = NULL;
                _cleanup_strv_free_ char **errors = NULL;
                assert_non_null(text);
                assert_int_equal(cluster_spec_load_string("t.yaml", text, strlen(text), &s, &errors),
                                 PK_ESPEC);
                assert_int_equal(strv_length(errors), 1);
                if (!strstr(errors[0], cases[i].error))
                        fail_msg("case %zu: '%s' does not contain '%s'", i, errors[0], cases[i].error);
        }
        _cleanup_free_ char *ok =
            strjoin(base, "  kubeAPIServer: {cpuRequest: 1e3, memoryRequest: 512Mi}\n");
        _cleanup_(cluster_spec_freep) ClusterSpec *s = NULL;
        assert_int_equal(cluster_spec_load_string("t.yaml", ok, strlen(ok), &s, NULL), 0);
}

/* The volumes of a pod, as "hostPath:type:readOnly in the container" strings in order. */
static char **mounts_of(const Pod *pod) {
        char **l = NULL;
        const PodContainer *c = only_container(pod);
        for (size_t i = 0; i < pod->n_volumes; i++) {
                bool ro = false;
                for (size_t j = 0; j < c->n_volume_mounts; j++)
                        if (streq(c->volume_mounts[j].name, pod->volumes[i].name))
                                ro = c->volume_mounts[j].read_only;
                char *m = strprintf("%s:%s%s", pod->volumes[i].host_path,
                                    strempty(pod->volumes[i].host_path_type), ro ? ":ro" : "");
                assert_non_null(m);
                assert_int_equal(strv_push(&l, m), 0);
        }
        return l;
}

static void assert_mounts(const Pod *pod, ...) {
        _cleanup_strv_free_ char **got = mounts_of(pod), **want = NULL;
        va_list ap;
        va_start(ap, pod);
        for (const char *m; (m = va_arg(ap, const char *));)
                assert_int_equal(strv_extend(&want, m), 0);
        va_end(ap);
        if (!strv_equal(got, want)) {
                _cleanup_free_ char *g = strv_join(got, "\n");
                fail_msg("%s: mounts differ:\n%s", pod->name, strnull(g));
        }
}

static ClusterSpec *load_spec(const char *text) {
        ClusterSpec *s = NULL;
        _cleanup_strv_free_ char **errors = NULL;
        if (cluster_spec_load_string("t.yaml", text, strlen(text), &s, &errors) < 0) {
                _cleanup_free_ char *all = strv_join(errors, "\n");
                fail_msg("load failed:\n%s", strnull(all));
        }
        return s;
}

#define PKI_SPEC                                                                                     \
        "apiVersion: protokube/v1alpha1\nkind: Cluster\nmetadata: {name: pki.k8s.test}\nspec:\n"     \
        "  etcdClusters: [{name: main, image: \"e:3.4.13\"}, {name: events, image: \"e:3.4.13\"}]\n" \
        "  kubernetesVersion: 1.20.2\n  stateStore: file:///srv/state\n  pki: {dir: /pk}\n"

/* A spec with a state store: the flags name the pki layout's files and each pod mounts exactly the
 * directory of its own files (never a file: pairs are replaced by a rename), nothing above it. */
static void test_pki_managed_render(void **state) {
        _cleanup_(cluster_spec_freep) ClusterSpec *s = load_spec(PKI_SPEC);
        _cleanup_(pod_freep) Pod *api = NULL, *kcm = NULL, *sched = NULL, *proxy = NULL, *etcd = NULL;
        _cleanup_strv_free_ char **flags = NULL, **kcm_flags = NULL;

        assert_int_equal(component_flags(COMPONENT_KUBE_APISERVER, s, &flags), 0);
        static const char *const want[] = {
                "--etcd-servers=https://127.0.0.1:4001",
                "--etcd-servers-overrides=/events#https://127.0.0.1:4002",
                "--etcd-cafile=/pk/kube-apiserver/etcd-ca.crt",
                "--etcd-certfile=/pk/kube-apiserver/etcd-client.crt",
                "--etcd-keyfile=/pk/kube-apiserver/etcd-client.key",
                "--tls-cert-file=/pk/kube-apiserver/apiserver.crt",
                "--tls-private-key-file=/pk/kube-apiserver/apiserver.key",
                "--client-ca-file=/pk/kube-apiserver/ca.crt",
                "--kubelet-client-certificate=/pk/kube-apiserver/kubelet-client.crt",
                "--kubelet-client-key=/pk/kube-apiserver/kubelet-client.key",
                "--requestheader-client-ca-file=/pk/kube-apiserver/front-proxy-ca.crt",
                "--requestheader-allowed-names=front-proxy-client",
                "--proxy-client-cert-file=/pk/kube-apiserver/front-proxy-client.crt",
                "--proxy-client-key-file=/pk/kube-apiserver/front-proxy-client.key",
                "--service-account-key-file=/pk/kube-apiserver/service-account.pub",
                "--service-account-signing-key-file=/pk/kube-apiserver/service-account.key",
                "--service-account-issuer=https://api.internal.pki.k8s.test",
        };
        for (size_t i = 0; i < ELEMENTSOF(want); i++)
                if (!strv_contains(flags, want[i]))
                        fail_msg("kube-apiserver: no %s", want[i]);
        assert_int_equal(component_pod_build(COMPONENT_KUBE_APISERVER, s, &api), 0);
        assert_mounts(api, "/var/log/kube-apiserver.log:FileOrCreate", "/pk/kube-apiserver:Directory:ro",
                      "/etc/ssl/certs:DirectoryOrCreate:ro", NULL);

        assert_int_equal(component_flags(COMPONENT_KUBE_CONTROLLER_MANAGER, s, &kcm_flags), 0);
        assert_true(strv_contains(kcm_flags, "--kubeconfig=/pk/kube-controller-manager/kubeconfig"));
        assert_true(strv_contains(kcm_flags, "--root-ca-file=/pk/kube-controller-manager/ca.crt"));
        assert_true(strv_contains(kcm_flags, "--use-service-account-credentials=true"));
        STRV_FOREACH (f, kcm_flags)
                assert_null(startswith(*f, "--cluster-signing-"));
        assert_int_equal(component_pod_build(COMPONENT_KUBE_CONTROLLER_MANAGER, s, &kcm), 0);
        assert_mounts(kcm, "/var/log/kube-controller-manager.log:FileOrCreate",
                      "/pk/kube-controller-manager:Directory:ro", "/etc/ssl/certs:DirectoryOrCreate:ro",
                      NULL);
        assert_int_equal(component_pod_build(COMPONENT_KUBE_SCHEDULER, s, &sched), 0);
        assert_mounts(sched, "/var/log/kube-scheduler.log:FileOrCreate", "/pk/kube-scheduler:Directory:ro",
                      "/var/lib/kube-scheduler:Directory:ro", NULL);
        assert_int_equal(component_pod_build(COMPONENT_KUBE_PROXY, s, &proxy), 0);
        assert_true(has_arg(only_container(proxy), "--config=/var/lib/kube-proxy/config.yaml"));
        /* the kubeconfig is named in the file, and its directory mounted all the same; the file's too */
        /* iptables mode (the default): no /lib/modules (ipvs mounts it: test_kube_proxy) */
        assert_mounts(proxy, "/var/log/kube-proxy.log:FileOrCreate", "/pk/kube-proxy:Directory:ro",
                      "/var/lib/kube-proxy:Directory:ro", "/run/xtables.lock:FileOrCreate",
                      "/etc/ssl/certs:DirectoryOrCreate:ro", NULL);
        ComponentConfigFile file = {};
        assert_int_equal(component_config_file(COMPONENT_KUBE_PROXY, s, &file), 0);
        assert_non_null(strstr(file.text, "clientConnection:\n  kubeconfig: /pk/kube-proxy/kubeconfig\n"));
        assert_string_equal(file.path, "/var/lib/kube-proxy/config.yaml");
        free(file.path);
        free(file.text);
        /* a node's copy of the spec with its own configuration directory (--config-dir) */
        s->node_config_dir = "/node/lib";
        _cleanup_(pod_freep) Pod *proxy2 = NULL;
        assert_int_equal(component_pod_build(COMPONENT_KUBE_PROXY, s, &proxy2), 0);
        assert_true(has_arg(only_container(proxy2), "--config=/node/lib/kube-proxy/config.yaml"));
        assert_mounts(proxy2, "/var/log/kube-proxy.log:FileOrCreate", "/node/lib/kube-proxy:Directory:ro",
                      "/pk/kube-proxy:Directory:ro", "/run/xtables.lock:FileOrCreate",
                      "/etc/ssl/certs:DirectoryOrCreate:ro", NULL);
        assert_int_equal(component_config_file(COMPONENT_KUBE_PROXY, s, &file), 0);
        assert_string_equal(file.path, "/node/lib/kube-proxy/config.yaml");
        free(file.path);
        free(file.text);
        s->node_config_dir = NULL;

        assert_int_equal(etcd_pod_build(s, &(EtcdMemberAssignment){ "events", "b", abc, "/mnt/v" }, &etcd),
                         0);
        const PodContainer *c = only_container(etcd);
        assert_true(has_arg(c, "--trusted-ca-file=/pk/etcd-events/ca.crt"));
        assert_true(has_arg(c, "--peer-trusted-ca-file=/pk/etcd-events/peer-ca.crt"));
        assert_true(has_arg(c, "--cert-file=/pk/etcd-events/server.crt"));
        assert_true(has_arg(c, "--peer-key-file=/pk/etcd-events/peer.key"));
        assert_true(has_arg(c, "--client-cert-auth=true"));
        assert_true(has_arg(c, "--peer-client-cert-auth=true"));
        assert_true(has_arg(c, "--listen-peer-urls=https://0.0.0.0:2381"));
        assert_mounts(etcd, "/mnt/v/var/etcd/data-events:DirectoryOrCreate", "/pk/etcd-events:Directory:ro",
                      NULL);
}

/* A user's own etcd client files win over the layout's, and without a state store a user tlsDir still
 * gives the apiserver the member's files (round 1). */
static void test_pki_user_paths(void **state) {
        _cleanup_(cluster_spec_freep) ClusterSpec *s =
            load_spec(PKI_SPEC "  kubeAPIServer: {etcdCAFile: /etc/my-etcd/ca.pem}\n");
        _cleanup_strv_free_ char **flags = NULL, **plain = NULL;
        assert_int_equal(component_flags(COMPONENT_KUBE_APISERVER, s, &flags), 0);
        assert_true(strv_contains(flags, "--etcd-cafile=/etc/my-etcd/ca.pem"));
        assert_true(strv_contains(flags, "--etcd-certfile=/pk/kube-apiserver/etcd-client.crt"));

        _cleanup_(cluster_spec_freep) ClusterSpec *u =
            load_spec("apiVersion: protokube/v1alpha1\nkind: Cluster\nmetadata: {name: u.k8s.test}\nspec:\n"
                      "  etcdClusters: [{name: main, image: \"e:3.4.13\", tlsDir: /etc/etcd-tls}]\n  "
                      "kubernetesVersion: 1.20.2\n");
        assert_int_equal(component_flags(COMPONENT_KUBE_APISERVER, u, &plain), 0);
        assert_true(strv_contains(plain, "--etcd-cafile=/etc/etcd-tls/ca.crt"));
        assert_true(strv_contains(plain, "--etcd-certfile=/etc/etcd-tls/server.crt"));
        assert_true(strv_contains(plain, "--etcd-keyfile=/etc/etcd-tls/server.key"));
        assert_true(strv_contains(plain, "--tls-cert-file=/srv/kubernetes/kube-apiserver/server.crt"));
}

/* The pod annotations go to every control-plane pod but etcd's, which reloads its files itself. */
static void test_render_annotations(void **state) {
        ClusterSpec s = test_spec();
        EtcdMemberAssignment m[] = { { "main", "a", abc, "/mnt/a" }, { "events", "a", abc, "/mnt/b" } };
        _cleanup_(rendered_manifests_done) RenderedManifests r = {}, plain = {};
        const char *failed = NULL;
        char *annotations[] = { "protokube.io/certificates", "sha256:0123abcd", "example.com/other", "yes",
                                NULL };

        assert_int_equal(control_plane_render(&s, &(ControlPlaneParams){ m, 2, annotations }, &r, &failed),
                         0);
        assert_int_equal(control_plane_render(&s, &(ControlPlaneParams){ m, 2, NULL }, &plain, &failed), 0);
        assert_int_equal(r.n, 6);
        for (size_t i = 0; i < r.n; i++) {
                const char *text = r.items[i].text;
                if (startswith(r.items[i].file_name, "etcd")) {
                        assert_null(strstr(text, "annotations"));
                        assert_string_equal(text, plain.items[i].text);
                        continue;
                }
                /* sorted by key, the value quoted where YAML would read it as a bool */
                if (!strstr(text, "metadata:\n  annotations:\n    example.com/other: \"yes\"\n"
                                  "    protokube.io/certificates: sha256:0123abcd\n  labels:\n"))
                        fail_msg("%s:\n%s", r.items[i].file_name, text);
                assert_null(strstr(plain.items[i].text, "annotations"));
        }

        static char *bad_keys[] = {
                "Protokube.io/x",
                "-x",
                "x-",
                "a/b/c",
                "",
                "/x",
                "protokube.io/",
                "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", /* 64 */
                "a b",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad_keys); i++) {
                RenderedManifests none = {};
                char *one[] = { bad_keys[i], "v", NULL };
                failed = NULL;
                assert_int_equal(
                    control_plane_render(&s, &(ControlPlaneParams){ m, 2, one }, &none, &failed), -EINVAL);
                assert_string_equal(failed, "pod annotations");
                assert_null(none.items);
        }
        RenderedManifests none = {};
        char *odd[] = { "protokube.io/certificates", NULL };
        char *dup[] = { "a.io/x", "1", "a.io/x", "2", NULL };
        assert_int_equal(control_plane_render(&s, &(ControlPlaneParams){ m, 2, odd }, &none, &failed),
                         -EINVAL);
        assert_int_equal(control_plane_render(&s, &(ControlPlaneParams){ m, 2, dup }, &none, &failed),
                         -EINVAL);
        _cleanup_free_ char *huge = new0(char, 300 * 1024);
        assert_non_null(huge);
        memset(huge, 'x', 300 * 1024 - 1);
        char *big[] = { "a.io/x", huge, NULL };
        assert_int_equal(control_plane_render(&s, &(ControlPlaneParams){ m, 2, big }, &none, &failed),
                         -EINVAL);
}

static void test_qualified_names(void **state) {
        static const char *const ok[] = { "k8s-app", "protokube.io/certificates", "a",
                                          "A.b_c-9", "kubernetes.io/config.hash", "x.y.z/Name_1" };
        static const char *const bad[] = { NULL,     "",        "_a",    "a_",  "a/", "/a",
                                           "A.io/x", "a..io/x", "a/b/c", "a:b", "é" };
        for (size_t i = 0; i < ELEMENTSOF(ok); i++)
                if (!pod_qualified_name_is_valid(ok[i]))
                        fail_msg("'%s' refused", ok[i]);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (pod_qualified_name_is_valid(bad[i]))
                        fail_msg("'%s' accepted", strnull(bad[i]));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_etcd_main),
                cmocka_unit_test(test_etcd_events_tls),
                cmocka_unit_test(test_etcd_version_flags),
                cmocka_unit_test(test_etcd_restore_init_container),
                cmocka_unit_test(test_etcd_render_yaml),
                cmocka_unit_test(test_etcd_held_image),
                cmocka_unit_test(test_etcd_invalid),
                cmocka_unit_test(test_kube_apiserver_defaults),
                cmocka_unit_test(test_kube_apiserver_config),
                cmocka_unit_test(test_kube_controller_manager),
                cmocka_unit_test(test_kube_scheduler),
                cmocka_unit_test(test_kube_proxy),
                cmocka_unit_test(test_component_table),
                cmocka_unit_test(test_inherited_defaults),
                cmocka_unit_test(test_render_set),
                cmocka_unit_test(test_golden_flags),
                cmocka_unit_test(test_flags_by_version),
                cmocka_unit_test(test_config_validation),
                cmocka_unit_test(test_pki_managed_render),
                cmocka_unit_test(test_pki_user_paths),
                cmocka_unit_test(test_render_annotations),
                cmocka_unit_test(test_qualified_names),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
