/* SPDX-License-Identifier: Apache-2.0 */
#include "components/static-pod.h"

#include <string.h>

#include "basic/string-util.h"
#include "basic/strv.h"

int static_pod_new(const char *name, const char *image, const char *priority_class, Pod **ret,
                   PodContainer **ret_container) {
        _cleanup_(pod_freep) Pod *pod = NULL;
        PodContainer *c;

        int r = pod_new(name, STATIC_POD_NAMESPACE, &pod);
        if (r < 0)
                return r;
        pod->host_network = true;
        pod->priority_class_name = strdup(priority_class);
        if (!pod->priority_class_name)
                return -ENOMEM;
        r = pod_kv_set(&pod->labels, "k8s-app", name);
        if (r < 0)
                return r;
        /* Control-plane pods must run even where nodes are tainted for add-ons only (kops does the same). */
        r = pod_add_toleration(pod, "CriticalAddonsOnly", "Exists", NULL, NULL);
        if (r < 0)
                return r;
        r = pod_add_container(pod, name, image, &c);
        if (r < 0)
                return r;
        *ret_container = c;
        *ret = TAKE_PTR(pod);
        return 0;
}

static bool version_is_valid(const char *v) {
        return !isempty(v) && strlen(v) < 64 &&
               v[strspn(v, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.+-")] == 0;
}

int component_image(const ClusterSpec *spec, const char *override, const char *component, char **ret) {
        char *s;
        if (!isempty(override))
                s = strdup(override);
        else {
                const char *v = spec->kubernetes_version;
                if (!version_is_valid(v))
                        return -EINVAL;
                if (v[0] == 'v')
                        v++;
                s = strprintf("%s/%s:v%s", CONTROL_PLANE_IMAGE_REGISTRY, component, v);
        }
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int spec_internal_suffix(const ClusterSpec *spec, char **ret) {
        char *s;
        if (!isempty(spec->dns.internal_suffix))
                s = strdup(spec->dns.internal_suffix);
        else if (!isempty(spec->name))
                s = strjoin("internal.", spec->name);
        else
                return -EINVAL;
        if (!s)
                return -ENOMEM;
        /* a trailing dot would end up inside URLs */
        size_t n = strlen(s);
        if (n > 1 && s[n - 1] == '.')
                s[n - 1] = 0;
        *ret = s;
        return 0;
}

const EtcdClusterSpec *spec_find_etcd_cluster(const ClusterSpec *spec, const char *name) {
        const EtcdClusterSpec *items = spec->etcd_clusters.items;
        for (size_t i = 0; name && items && i < spec->etcd_clusters.n; i++)
                if (items[i].name && streq(items[i].name, name))
                        return &items[i];
        return NULL;
}

int etcd_cluster_ports(const EtcdClusterSpec *e, int *ret_client, int *ret_peer) {
        int client = -1, peer = -1;
        if (streq(e->name, "main"))
                client = 4001, peer = 2380;
        else if (streq(e->name, "events"))
                client = 4002, peer = 2381;
        if (e->client_port.set)
                client = (int)e->client_port.value;
        if (e->peer_port.set)
                peer = (int)e->peer_port.value;
        if (client < 1 || client > 65535 || peer < 1 || peer > 65535 || client == peer)
                return -EINVAL;
        *ret_client = client;
        *ret_peer = peer;
        return 0;
}

bool dns_label_is_valid(const char *s) {
        size_t n = s ? strlen(s) : 0;
        if (n == 0 || n > 63)
                return false;
        if (s[strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-")] != 0)
                return false;
        return s[0] != '-' && s[n - 1] != '-';
}

int container_set_requests(PodContainer *c, const char *cpu, const char *memory) {
        int r;
        if (cpu) {
                r = pod_kv_set(&c->requests, "cpu", cpu);
                if (r < 0)
                        return r;
        }
        if (memory) {
                r = pod_kv_set(&c->requests, "memory", memory);
                if (r < 0)
                        return r;
        }
        return 0;
}

int container_set_command(PodContainer *c, const char *const *prefix, char *const *args) {
        _cleanup_strv_free_ char **l = new0(char *, 1);
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; prefix && prefix[i]; i++)
                if (strv_extend(&l, prefix[i]) < 0)
                        return -ENOMEM;
        for (size_t i = 0; args && args[i]; i++)
                if (strv_extend(&l, args[i]) < 0)
                        return -ENOMEM;
        strv_free(c->command);
        c->command = TAKE_PTR(l);
        return 0;
}

int container_set_go_runner_command(Pod *pod, PodContainer *c, const char *name, char *const *args) {
        _cleanup_free_ char *log = strprintf("/var/log/%s.log", name);
        _cleanup_free_ char *log_flag = strprintf("--log-file=/var/log/%s.log", name);
        _cleanup_free_ char *binary = strprintf("/usr/local/bin/%s", name);
        if (!log || !log_flag || !binary)
                return -ENOMEM;
        int r = container_set_command(
            c, (const char *const[]){ "/go-runner", log_flag, "--also-stdout", binary, NULL }, args);
        if (r < 0)
                return r;
        return pod_add_host_mount(pod, c, "logfile", log, "FileOrCreate", false);
}

/* A volume name from a path: a valid DNS label, unique in the pod. */
static int volume_name_for(const Pod *pod, const char *path, char **ret) {
        char base[64];
        size_t n = 0;
        for (const char *p = path; *p && n < 50; p++) {
                char ch = *p;
                if (ch >= 'A' && ch <= 'Z')
                        ch = (char)(ch - 'A' + 'a');
                if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')))
                        ch = '-';
                if (ch == '-' && (n == 0 || base[n - 1] == '-'))
                        continue;
                base[n++] = ch;
        }
        while (n > 0 && base[n - 1] == '-')
                n--;
        base[n] = 0;
        if (n == 0)
                snprintf(base, sizeof(base), "root");

        for (unsigned i = 0; i < 100; i++) {
                _cleanup_free_ char *name = i == 0 ? strdup(base) : strprintf("%s-%u", base, i);
                bool taken = false;
                if (!name)
                        return -ENOMEM;
                for (size_t j = 0; j < pod->n_volumes && !taken; j++)
                        taken = streq(pod->volumes[j].name, name);
                if (!taken) {
                        *ret = TAKE_PTR(name);
                        return 0;
                }
        }
        return -E2BIG;
}

static bool path_is_below(const char *path, const char *dir) {
        const char *rest = startswith(path, dir);
        return rest && (streq(dir, "/") || *rest == '/' || *rest == 0);
}

int pod_mount_file_dirs(Pod *pod, PodContainer *c, const char *const *files, size_t n_files) {
        _cleanup_strv_free_ char **dirs = new0(char *, 1);
        if (!dirs)
                return -ENOMEM;
        for (size_t i = 0; i < n_files; i++) {
                const char *f = files[i];
                if (isempty(f))
                        continue;
                if (f[0] != '/' || strstr(f, "/..") || string_has_cc(f))
                        return -EINVAL;
                const char *slash = strrchr(f, '/');
                _cleanup_free_ char *d = slash == f ? strdup("/") : strndup(f, (size_t)(slash - f));
                if (!d)
                        return -ENOMEM;
                if (!strv_contains(dirs, d) && strv_extend(&dirs, d) < 0)
                        return -ENOMEM;
        }
        /* Sorted, a parent comes before its children, so one pass drops what is already visible. */
        strv_sort(dirs);
        size_t n_mounted = 0;
        STRV_FOREACH (d, dirs) {
                bool below = false;
                for (size_t i = 0; i < n_mounted && !below; i++)
                        below = path_is_below(*d, dirs[i]);
                if (below)
                        continue;
                _cleanup_free_ char *name = NULL;
                int r = volume_name_for(pod, *d, &name);
                if (r < 0)
                        return r;
                r = pod_add_host_mount(pod, c, name, *d, "Directory", true);
                if (r < 0)
                        return r;
                /* keep the mounted ones at the front, for the check above */
                char *t = dirs[n_mounted];
                dirs[n_mounted++] = *d;
                *d = t;
        }
        return 0;
}

int pod_mount_ca_certs(Pod *pod, PodContainer *c) {
        return pod_add_host_mount(pod, c, "ca-certs", "/etc/ssl/certs", "DirectoryOrCreate", true);
}

int container_set_health_probes(PodContainer *c, const char *scheme, int port, const char *live_path,
                                const char *ready_path) {
        int r = pod_probe_http(&c->liveness_probe, scheme, "127.0.0.1", live_path, port, 10, 15);
        if (r < 0)
                return r;
        c->liveness_probe.period_seconds = 10;
        c->liveness_probe.failure_threshold = 8;
        /* A slow first start (etcd still electing) must not be killed by the liveness probe. */
        r = pod_probe_http(&c->startup_probe, scheme, "127.0.0.1", live_path, port, 10, 15);
        if (r < 0)
                return r;
        c->startup_probe.period_seconds = 10;
        c->startup_probe.failure_threshold = 24;
        if (ready_path) {
                r = pod_probe_http(&c->readiness_probe, scheme, "127.0.0.1", ready_path, port, 0, 15);
                if (r < 0)
                        return r;
                c->readiness_probe.period_seconds = 1;
                c->readiness_probe.failure_threshold = 3;
        }
        return 0;
}

int component_pod_new(const ClusterSpec *spec, const ComponentPod *c, Pod **ret_pod, PodContainer **ret_ct) {
        _cleanup_(pod_freep) Pod *pod = NULL;
        _cleanup_free_ char *image = NULL;
        PodContainer *ct;
        int r = component_image(spec, c->image_override, c->name, &image);
        if (r < 0)
                return r;
        r = static_pod_new(c->name, image, c->priority_class, &pod, &ct);
        if (r < 0)
                return r;
        r = container_set_go_runner_command(pod, ct, c->name, c->flags);
        if (r < 0)
                return r;
        r = container_set_requests(ct, c->cpu_request, c->memory_request);
        if (r < 0)
                return r;
        *ret_ct = ct;
        *ret_pod = TAKE_PTR(pod);
        return 0;
}
