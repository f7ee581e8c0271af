/* SPDX-License-Identifier: Apache-2.0 */
#include "components/etcd.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "basic/string-util.h"
#include "basic/strv.h"
#include "components/static-pod.h"
#include "manifest/pod-yaml.h"

/* Data directories and pod names are kops' (ARCHITECTURE.md, "Conventions kept from kops"). */
#define ETCD_DATA_DIR "/var/etcd/data"
#define ETCD_BINARY   "/usr/local/bin/etcd"

static bool is_main(const char *cluster) {
        return streq(cluster, "main");
}

/* "etcd" / "etcd-events": kops' etcd cluster name, the stem of member names and the cluster token. */
static char *kops_cluster_name(const char *cluster) {
        return is_main(cluster) ? strdup("etcd") : strjoin("etcd-", cluster);
}

int etcd_member_name(const char *cluster, const char *member, char **ret) {
        if (!dns_label_is_valid(cluster) || !dns_label_is_valid(member))
                return -EINVAL;
        char *s = is_main(cluster) ? strjoin("etcd-", member) : strjoin("etcd-", cluster, "-", member);
        if (!s)
                return -ENOMEM;
        /* It becomes one DNS label of the member's name. */
        if (strlen(s) > 63) {
                free(s);
                return -EINVAL;
        }
        *ret = s;
        return 0;
}

int etcd_member_dns_name(const ClusterSpec *spec, const char *cluster, const char *member, char **ret) {
        _cleanup_free_ char *name = NULL, *suffix = NULL;
        int r = etcd_member_name(cluster, member, &name);
        if (r < 0)
                return r;
        r = spec_internal_suffix(spec, &suffix);
        if (r < 0)
                return r;
        char *s = strjoin(name, ".", suffix);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int etcd_manifest_file_name(const char *cluster, char **ret) {
        if (!dns_label_is_valid(cluster))
                return -EINVAL;
        char *s = is_main(cluster) ? strdup("etcd.manifest") : strjoin("etcd-", cluster, ".manifest");
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static int check_assignment(const EtcdMemberAssignment *m) {
        if (!m || !dns_label_is_valid(m->cluster) || !dns_label_is_valid(m->member))
                return -EINVAL;
        if (isempty(m->mount_path) || m->mount_path[0] != '/' || strstr(m->mount_path, "/..") ||
            string_has_cc(m->mount_path))
                return -EINVAL;
        if (strv_length(m->members) == 0 || strv_length(m->members) > 64 ||
            !strv_contains(m->members, m->member))
                return -EINVAL;
        for (size_t i = 0; m->members[i]; i++) {
                if (!dns_label_is_valid(m->members[i]))
                        return -EINVAL;
                for (size_t j = 0; j < i; j++)
                        if (streq(m->members[i], m->members[j]))
                                return -EINVAL;
        }
        return 0;
}

typedef struct EtcdLayout {
        const char *scheme; /* http or https */
        int client_port, peer_port, metrics_port;
        char *data_dir;  /* in the container */
        char *host_data; /* on the node: under the volume's mount */
} EtcdLayout;

static void etcd_layout_done(EtcdLayout *l) {
        free(l->data_dir);
        free(l->host_data);
}

static int etcd_layout(const EtcdClusterSpec *e, const EtcdMemberAssignment *m, EtcdLayout *ret) {
        EtcdLayout l = { .scheme = isempty(e->tls_dir) ? "http" : "https" };
        int r = etcd_cluster_ports(e, &l.client_port, &l.peer_port);
        if (r < 0)
                return r;
        /* With client-cert-auth the kubelet's probe cannot pass TLS, so a TLS member also serves /health in
         * plain http on loopback, on kops' etcd metrics ports (main 8081, events 8082). */
        if (!isempty(e->tls_dir)) {
                l.metrics_port = l.client_port + 4080;
                if (l.metrics_port > 65535)
                        return -EINVAL;
        }
        l.data_dir = is_main(m->cluster) ? strdup(ETCD_DATA_DIR) : strjoin(ETCD_DATA_DIR "-", m->cluster);
        if (!l.data_dir)
                return -ENOMEM;
        l.host_data = strjoin(m->mount_path, endswith(m->mount_path, "/") ? "" : "/", l.data_dir + 1);
        if (!l.host_data) {
                etcd_layout_done(&l);
                return -ENOMEM;
        }
        *ret = l;
        return 0;
}

static int push_flag(char ***l, const char *name, const char *value) {
        char *s = strjoin("--", name, "=", value);
        if (!s)
                return -ENOMEM;
        int r = strv_push(l, s);
        if (r < 0)
                free(s);
        return r;
}

static int push_flag_printf(char ***l, const char *name, const char *format, ...) _printf_(3, 4);
static int push_flag_printf(char ***l, const char *name, const char *format, ...) {
        _cleanup_free_ char *v = NULL;
        va_list ap;
        va_start(ap, format);
        int n = vasprintf(&v, format, ap);
        va_end(ap);
        if (n < 0) {
                v = NULL;
                return -ENOMEM;
        }
        return push_flag(l, name, v);
}

/* name1=url1,name2=url2 for every member, in the given order. */
static int initial_cluster(const ClusterSpec *spec, const EtcdMemberAssignment *m, const EtcdLayout *l,
                           char **ret) {
        _cleanup_free_ char *s = strdup("");
        if (!s)
                return -ENOMEM;
        for (size_t i = 0; m->members[i]; i++) {
                _cleanup_free_ char *name = NULL, *dns = NULL;
                int r = etcd_member_name(m->cluster, m->members[i], &name);
                if (r < 0)
                        return r;
                r = etcd_member_dns_name(spec, m->cluster, m->members[i], &dns);
                if (r < 0)
                        return r;
                if (strextend_printf(&s, "%s%s=%s://%s:%d", i > 0 ? "," : "", name, l->scheme, dns,
                                     l->peer_port) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(s);
        return 0;
}

static int tls_flags(const EtcdClusterSpec *e, char ***l) {
        static const struct {
                const char *flag, *file;
        } files[] = {
                { "trusted-ca-file", "ca.crt" },  { "cert-file", "server.crt" },
                { "key-file", "server.key" },     { "peer-trusted-ca-file", "ca.crt" },
                { "peer-cert-file", "peer.crt" }, { "peer-key-file", "peer.key" },
        };
        const char *sep = endswith(e->tls_dir, "/") ? "" : "/";
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                int r = push_flag_printf(l, files[i].flag, "%s%s%s", e->tls_dir, sep, files[i].file);
                if (r < 0)
                        return r;
        }
        int r = push_flag(l, "client-cert-auth", "true");
        if (r < 0)
                return r;
        return push_flag(l, "peer-client-cert-auth", "true");
}

/* Only flags etcd 3.4 and 3.5 both know. */
static int etcd_flags(const ClusterSpec *spec, const EtcdClusterSpec *e, const EtcdMemberAssignment *m,
                      const EtcdLayout *l, char ***ret) {
        _cleanup_strv_free_ char **f = new0(char *, 1);
        _cleanup_free_ char *name = NULL, *dns = NULL, *cluster = NULL,
                            *kops = kops_cluster_name(m->cluster);
        int r;

        if (!f || !kops)
                return -ENOMEM;
        r = etcd_member_name(m->cluster, m->member, &name);
        if (r < 0)
                return r;
        r = etcd_member_dns_name(spec, m->cluster, m->member, &dns);
        if (r < 0)
                return r;
        r = initial_cluster(spec, m, l, &cluster);
        if (r < 0)
                return r;

        if (push_flag(&f, "name", name) < 0 || push_flag(&f, "data-dir", l->data_dir) < 0 ||
            push_flag_printf(&f, "listen-client-urls", "%s://0.0.0.0:%d", l->scheme, l->client_port) < 0 ||
            push_flag_printf(&f, "advertise-client-urls", "%s://%s:%d", l->scheme, dns, l->client_port) <
                0 ||
            push_flag_printf(&f, "listen-peer-urls", "%s://0.0.0.0:%d", l->scheme, l->peer_port) < 0 ||
            push_flag_printf(&f, "initial-advertise-peer-urls", "%s://%s:%d", l->scheme, dns, l->peer_port) <
                0 ||
            push_flag(&f, "initial-cluster", cluster) < 0 ||
            push_flag(&f, "initial-cluster-state", "new") < 0 ||
            push_flag_printf(&f, "initial-cluster-token", "etcd-cluster-token-%s", kops) < 0)
                return -ENOMEM;
        if (l->metrics_port > 0 &&
            push_flag_printf(&f, "listen-metrics-urls", "http://127.0.0.1:%d", l->metrics_port) < 0)
                return -ENOMEM;
        if (!isempty(e->tls_dir)) {
                r = tls_flags(e, &f);
                if (r < 0)
                        return r;
        }
        strv_sort(f);
        *ret = TAKE_PTR(f);
        return 0;
}

static int etcd_container(const ClusterSpec *spec, const EtcdClusterSpec *e, const EtcdMemberAssignment *m,
                          const EtcdLayout *l, Pod *pod, PodContainer *c) {
        _cleanup_strv_free_ char **flags = NULL;
        int r = etcd_flags(spec, e, m, l, &flags);
        if (r < 0)
                return r;
        r = container_set_command(c, (const char *const[]){ ETCD_BINARY, NULL }, flags);
        if (r < 0)
                return r;
        /* kops' requests: main gets more CPU than the other clusters. */
        r = container_set_requests(c, is_main(m->cluster) ? "200m" : "100m", "100Mi");
        if (r < 0)
                return r;
        if (pod_container_add_port(c, "client", l->client_port, l->client_port) < 0 ||
            pod_container_add_port(c, "peer", l->peer_port, l->peer_port) < 0)
                return -ENOMEM;
        if (l->metrics_port > 0 &&
            pod_container_add_port(c, "metrics", l->metrics_port, l->metrics_port) < 0)
                return -ENOMEM;
        r = pod_probe_http(&c->liveness_probe, "HTTP", "127.0.0.1", "/health",
                           l->metrics_port > 0 ? l->metrics_port : l->client_port, 15, 15);
        if (r < 0)
                return r;

        r = pod_add_host_path_volume(pod, "etcd-data", l->host_data, "DirectoryOrCreate");
        if (r < 0)
                return r;
        r = pod_container_add_mount(c, "etcd-data", l->data_dir, false);
        if (r < 0)
                return r;
        if (!isempty(e->tls_dir)) {
                r = pod_add_host_mount(pod, c, "etcd-tls", e->tls_dir, "Directory", true);
                if (r < 0)
                        return r;
        }
        return 0;
}

int etcd_pod_build(const ClusterSpec *spec, const EtcdMemberAssignment *m, Pod **ret) {
        _cleanup_(pod_freep) Pod *pod = NULL;
        _cleanup_(etcd_layout_done) EtcdLayout l = {};
        _cleanup_free_ char *pod_name = NULL;
        PodContainer *c;

        int r = check_assignment(m);
        if (r < 0)
                return r;
        const EtcdClusterSpec *e = spec_find_etcd_cluster(spec, m->cluster);
        if (!e)
                return -ENOENT;
        if (!isempty(e->tls_dir) && (e->tls_dir[0] != '/' || string_has_cc(e->tls_dir)))
                return -EINVAL;
        r = etcd_layout(e, m, &l);
        if (r < 0)
                return r;

        pod_name = is_main(m->cluster) ? strdup("etcd-server") : strjoin("etcd-server-", m->cluster);
        if (!pod_name)
                return -ENOMEM;
        r = static_pod_new(pod_name, isempty(e->image) ? ETCD_DEFAULT_IMAGE : e->image,
                           PRIORITY_CLUSTER_CRITICAL, &pod, &c);
        if (r < 0)
                return r;
        r = etcd_container(spec, e, m, &l, pod, c);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(pod);
        return 0;
}

int etcd_manifest_render(const ClusterSpec *spec, const EtcdMemberAssignment *m, char **ret_yaml) {
        _cleanup_(pod_freep) Pod *pod = NULL;
        int r = etcd_pod_build(spec, m, &pod);
        if (r < 0)
                return r;
        return pod_to_yaml(pod, ret_yaml);
}
