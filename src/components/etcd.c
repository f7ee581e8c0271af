/* SPDX-License-Identifier: Apache-2.0 */
#include "components/etcd.h"

#include <string.h>

#include "basic/dns-name.h"
#include "basic/errors.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "components/conventions.h"
#include "components/flags.h"
#include "components/static-pod.h"
#include "manifest/pod-yaml.h"
#include "model/etcd-versions.h"
#include "model/pki-layout.h"
#include "shared/yaml-tree.h"

int etcd_cluster_ports(const EtcdClusterSpec *e, int *ret_client, int *ret_peer) {
        /* The spec has applied kops' defaults (model/conventions.h); a cluster without ports is not loaded.
         */
        if (!e->client_port.set || !e->peer_port.set)
                return -EINVAL;
        int64_t client = e->client_port.value, peer = e->peer_port.value;
        if (client < 1 || client > 65535 || peer < 1 || peer > 65535 || client == peer)
                return -EINVAL;
        *ret_client = (int)client;
        *ret_peer = (int)peer;
        return 0;
}

static bool label_ok(const char *s) {
        return s && dns_label_is_valid(s, strlen(s));
}

static int check_assignment(const EtcdMemberAssignment *m) {
        if (!m || !label_ok(m->cluster) || !label_ok(m->member))
                return -EINVAL;
        if (isempty(m->mount_path) || m->mount_path[0] != '/' || strstr(m->mount_path, "/..") ||
            string_has_cc(m->mount_path))
                return -EINVAL;
        if (strv_length(m->members) == 0 || strv_length(m->members) > 64 ||
            !strv_contains(m->members, m->member))
                return -EINVAL;
        for (size_t i = 0; m->members[i]; i++) {
                if (!label_ok(m->members[i]))
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
                l.metrics_port = l.client_port + ETCD_METRICS_PORT_SHIFT;
                if (l.metrics_port > 65535)
                        return -EINVAL;
        }
        r = etcd_data_dir(m->cluster, &l.data_dir);
        if (r < 0)
                return r;
        l.host_data = strjoin(m->mount_path, endswith(m->mount_path, "/") ? "" : "/", l.data_dir + 1);
        if (!l.host_data) {
                etcd_layout_done(&l);
                return -ENOMEM;
        }
        *ret = l;
        return 0;
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
                r = etcd_member_dns_name(m->cluster, m->members[i], spec->dns.internal_suffix, &dns);
                if (r < 0)
                        return r;
                if (strextend_printf(&s, "%s%s=%s://%s:%d", i > 0 ? "," : "", name, l->scheme, dns,
                                     l->peer_port) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(s);
        return 0;
}

/* The files of tlsDir (model/pki-layout.h): clients are checked against ca.crt, peers against peer-ca.crt,
 * two CAs, so that a client certificate (the apiserver's) is never accepted as a peer. etcd reads them per
 * handshake, so a renewed pair needs no restart. */
static int tls_flags(const EtcdClusterSpec *e, char ***l) {
        static const struct {
                const char *flag, *file;
        } files[] = {
                { "trusted-ca-file", PKI_CA_FILE },
                { "cert-file", PKI_ETCD_SERVER_PAIR PKI_CERT_SUFFIX },
                { "key-file", PKI_ETCD_SERVER_PAIR PKI_KEY_SUFFIX },
                { "peer-trusted-ca-file", PKI_ETCD_PEER_CA_FILE },
                { "peer-cert-file", PKI_ETCD_PEER_PAIR PKI_CERT_SUFFIX },
                { "peer-key-file", PKI_ETCD_PEER_PAIR PKI_KEY_SUFFIX },
        };
        const char *sep = endswith(e->tls_dir, "/") ? "" : "/";
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                int r = flags_pushf(l, files[i].flag, "%s%s%s", e->tls_dir, sep, files[i].file);
                if (r < 0)
                        return r;
        }
        int r = flags_push(l, "client-cert-auth", "true");
        if (r < 0)
                return r;
        return flags_push(l, "peer-client-cert-auth", "true");
}

/* This member's name, data and URLs: it listens on every address and advertises its DNS name. */
static int member_flags(const ClusterSpec *spec, const EtcdMemberAssignment *m, const EtcdLayout *l,
                        char ***f) {
        _cleanup_free_ char *name = NULL, *dns = NULL;
        int r = etcd_member_name(m->cluster, m->member, &name);
        if (r < 0)
                return r;
        r = etcd_member_dns_name(m->cluster, m->member, spec->dns.internal_suffix, &dns);
        if (r < 0)
                return r;
        if (flags_push(f, "name", name) < 0 || flags_push(f, "data-dir", l->data_dir) < 0 ||
            flags_pushf(f, "listen-client-urls", "%s://0.0.0.0:%d", l->scheme, l->client_port) < 0 ||
            flags_pushf(f, "advertise-client-urls", "%s://%s:%d", l->scheme, dns, l->client_port) < 0 ||
            flags_pushf(f, "listen-peer-urls", "%s://0.0.0.0:%d", l->scheme, l->peer_port) < 0 ||
            flags_pushf(f, "initial-advertise-peer-urls", "%s://%s:%d", l->scheme, dns, l->peer_port) < 0)
                return -ENOMEM;
        if (l->metrics_port > 0 &&
            flags_pushf(f, "listen-metrics-urls", "http://127.0.0.1:%d", l->metrics_port) < 0)
                return -ENOMEM;
        return 0;
}

/* Every member bootstraps the same cluster from the same list: all members in tag order, kops' token. A
 * replaced member joins the running cluster: state existing, and the same list, which is the cluster's
 * current member list (protokube replaces a member only when the cluster lists no other). */
static int cluster_flags(const ClusterSpec *spec, const EtcdMemberAssignment *m, const EtcdLayout *l,
                         char ***f) {
        _cleanup_free_ char *cluster = NULL, *token = NULL;
        int r = etcd_cluster_token(m->cluster, &token);
        if (r < 0)
                return r;
        r = initial_cluster(spec, m, l, &cluster);
        if (r < 0)
                return r;
        if (flags_push(f, "initial-cluster", cluster) < 0 ||
            flags_push(f, "initial-cluster-state", m->existing ? "existing" : "new") < 0 ||
            flags_push(f, "initial-cluster-token", token) < 0)
                return -ENOMEM;
        return 0;
}

static const char *etcd_image(const EtcdClusterSpec *e) {
        return isempty(e->image) ? ETCD_DEFAULT_IMAGE : e->image;
}

static const char *member_image(const EtcdClusterSpec *e, const EtcdMemberAssignment *m) {
        return m->image ?: etcd_image(e);
}

/* The row of the member's version: the tag of the image an upgrade holds it at, else the spec's version (a
 * loaded spec always has one), else its image's tag (a spec made in code); NULL for a version protokube
 * does not run, whose flags nobody checked. */
static const EtcdVersionInfo *etcd_member_version(const EtcdClusterSpec *e, const EtcdMemberAssignment *m) {
        char tag[ETCD_VERSION_MAX];
        if (!m->image && e->version)
                return etcd_version_find(e->version);
        return etcd_version_of_image(member_image(e, m), tag) >= 0 ? etcd_version_find(tag) : NULL;
}

static int version_flags(const EtcdVersionInfo *v, char ***f) {
        for (const char *const *p = v->flags; p && *p; p++) {
                const char *eq = strchr(*p, '=');
                _cleanup_free_ char *name = eq ? strndup(*p, (size_t)(eq - *p)) : NULL;
                if (!eq)
                        return -EINVAL;
                if (!name || flags_push(f, name, eq + 1) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* The flags every version knows, and the version's own (model/etcd-versions.h); sorted like every
 * component's (flags.h). */
static int etcd_flags(const ClusterSpec *spec, const EtcdClusterSpec *e, const EtcdMemberAssignment *m,
                      const EtcdLayout *l, const EtcdVersionInfo *v, char ***ret) {
        _cleanup_strv_free_ char **f = new0(char *, 1);
        if (!f)
                return -ENOMEM;
        int r = member_flags(spec, m, l, &f);
        if (r < 0)
                return r;
        r = cluster_flags(spec, m, l, &f);
        if (r < 0)
                return r;
        if (!isempty(e->tls_dir)) {
                r = tls_flags(e, &f);
                if (r < 0)
                        return r;
        }
        r = version_flags(v, &f);
        if (r < 0)
                return r;
        strv_sort(f);
        *ret = TAKE_PTR(f);
        return 0;
}

/* Ports, the probe and the volumes: what etcd adds to the common static pod. */
static int etcd_container(const EtcdClusterSpec *e, const EtcdLayout *l, Pod *pod, PodContainer *c) {
        if (pod_container_add_port(c, "client", l->client_port, l->client_port) < 0 ||
            pod_container_add_port(c, "peer", l->peer_port, l->peer_port) < 0)
                return -ENOMEM;
        if (l->metrics_port > 0 &&
            pod_container_add_port(c, "metrics", l->metrics_port, l->metrics_port) < 0)
                return -ENOMEM;
        int r = pod_probe_http(&c->liveness_probe, "HTTP", HEALTH_PROBE_HOST, "/health",
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

/* The restore's step (docs/etcd-restore.md), with the etcd image's own shell and restore tool (etcdctl, or
 * etcdutl from 3.5 on: the version's row in model/etcd-versions.h), so nothing on the host needs etcd's
 * tools. It restores into a directory inside the data dir (the data dir is the volume mount's target and
 * cannot be replaced) and moves the result into place, so the data dir holds either no member/ or a whole
 * one; with member/ there it does nothing, and a kubelet that restarts the pod after the restore finished
 * leaves the data alone. The values are positional parameters, never spliced into the script; the tool's
 * name, a constant of the table, goes between the two halves. */
static const char restore_script_head[] =
    "set -e\n"
    "if [ -d \"$1/member\" ]; then rm -rf \"$1/restore.tmp\"; exit 0; fi\n"
    "rm -rf \"$1/restore.tmp\"\n";
static const char restore_script_tail[] =
    " snapshot restore \"$2\" --data-dir \"$1/restore.tmp\" --name \"$3\" --initial-cluster \"$4\" "
    "--initial-cluster-token \"$5\" --initial-advertise-peer-urls \"$6\"\n"
    "mv \"$1/restore.tmp/member\" \"$1/member\"\n"
    "rmdir \"$1/restore.tmp\"\n";

static bool restore_id_ok(const char *id) {
        if (isempty(id) || strlen(id) > 64)
                return false;
        for (const char *p = id; *p; p++)
                if (!strchr("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-", *p))
                        return false;
        return true;
}

static int etcd_restore_container(const ClusterSpec *spec, const EtcdMemberAssignment *m,
                                  const EtcdLayout *l, const EtcdClusterSpec *e, const EtcdVersionInfo *v,
                                  Pod *pod) {
        _cleanup_free_ char *dir = NULL, *host_dir = NULL, *snapshot = NULL, *name = NULL, *dns = NULL,
                            *cluster = NULL, *token = NULL, *peer = NULL, *script = NULL;
        PodContainer *c;
        if (!restore_id_ok(m->restore_id))
                return -EINVAL;
        int r = etcd_restore_dir(m->cluster, &dir);
        if (r >= 0)
                r = etcd_member_name(m->cluster, m->member, &name);
        if (r >= 0)
                r = etcd_member_dns_name(m->cluster, m->member, spec->dns.internal_suffix, &dns);
        if (r >= 0)
                r = initial_cluster(spec, m, l, &cluster);
        if (r < 0)
                return r;
        host_dir = strjoin(m->mount_path, endswith(m->mount_path, "/") ? "" : "/", dir + 1);
        snapshot = strjoin(dir, "/", m->restore_id, ".db");
        token = strjoin(m->cluster, "-", m->restore_id);
        peer = strprintf("%s://%s:%d", l->scheme, dns, l->peer_port);
        script = strjoin(restore_script_head, v->restore_tool, restore_script_tail);
        if (!host_dir || !snapshot || !token || !peer || !script)
                return -ENOMEM;
        char *argv[] = { "/bin/sh", "-c",    script, "etcd-restore", l->data_dir, snapshot,
                         name,      cluster, token,  peer,           NULL };
        r = pod_add_init_container(pod, "etcd-restore", member_image(e, m), &c);
        if (r < 0)
                return r;
        if (!(c->command = strv_copy(argv)) || pod_kv_set(&c->env, "ETCDCTL_API", "3") < 0)
                return -ENOMEM;
        r = pod_container_add_mount(c, "etcd-data", l->data_dir, false);
        if (r >= 0)
                r = pod_add_host_path_volume(pod, "etcd-restore", host_dir, "Directory");
        if (r >= 0)
                r = pod_container_add_mount(c, "etcd-restore", dir, true);
        return r;
}

static int etcd_pod_new(const ClusterSpec *spec, const EtcdClusterSpec *e, const EtcdMemberAssignment *m,
                        const EtcdLayout *l, const EtcdVersionInfo *v, Pod **ret,
                        PodContainer **ret_container) {
        _cleanup_strv_free_ char **flags = NULL;
        _cleanup_free_ char *pod_name = NULL;
        int r = etcd_pod_name(m->cluster, &pod_name);
        if (r < 0)
                return r;
        r = etcd_flags(spec, e, m, l, v, &flags);
        if (r < 0)
                return r;
        StaticPodParams p = {
                .name = pod_name,
                .image = member_image(e, m),
                .priority_class = PRIORITY_CLUSTER_CRITICAL,
                .binary = ETCD_BINARY,
                .flags = flags,
                /* kops' requests: main gets more CPU than the other clusters. */
                .cpu_request = etcd_cluster_is_main(m->cluster) ? "200m" : "100m",
                .memory_request = "100Mi",
        };
        return static_pod_new(&p, ret, ret_container);
}

int etcd_pod_build(const ClusterSpec *spec, const EtcdMemberAssignment *m, Pod **ret) {
        _cleanup_(pod_freep) Pod *pod = NULL;
        _cleanup_(etcd_layout_done) EtcdLayout l = {};
        PodContainer *c;

        int r = check_assignment(m);
        if (r < 0)
                return r;
        const EtcdClusterSpec *e = cluster_spec_find_etcd(spec, m->cluster);
        if (!e)
                return -ENOENT;
        if (!isempty(e->tls_dir) && (e->tls_dir[0] != '/' || string_has_cc(e->tls_dir)))
                return -EINVAL;
        const EtcdVersionInfo *v = etcd_member_version(e, m);
        if (!v)
                return -EINVAL;
        r = etcd_layout(e, m, &l);
        if (r < 0)
                return r;
        r = etcd_pod_new(spec, e, m, &l, v, &pod, &c);
        if (r < 0)
                return r;
        r = etcd_container(e, &l, pod, c);
        if (r < 0)
                return r;
        if (m->restore_id) {
                r = etcd_restore_container(spec, m, &l, e, v, pod);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(pod);
        return 0;
}

int etcd_manifest_image(const char *yaml, char **ret) {
        _cleanup_(yaml_tree_freep) YamlNode *root = NULL;
        int r = yaml_tree_parse(yaml, strlen(yaml), 0, &root, NULL);
        if (r == -ENOMEM)
                return r;
        const YamlNode *c = yaml_tree_item(yaml_tree_get(yaml_tree_get(root, "spec"), "containers"), 0);
        const YamlNode *image = yaml_tree_get(c, "image");
        if (r < 0 || !image || image->kind != YAML_TREE_SCALAR || image->len != strlen(image->value) ||
            isempty(image->value))
                return PK_EMALFORMED;
        *ret = strdup(image->value);
        return *ret ? 0 : -ENOMEM;
}

int etcd_manifest_render(const ClusterSpec *spec, const EtcdMemberAssignment *m, char **ret_yaml) {
        _cleanup_(pod_freep) Pod *pod = NULL;
        int r = etcd_pod_build(spec, m, &pod);
        if (r < 0)
                return r;
        return pod_to_yaml(pod, ret_yaml);
}
