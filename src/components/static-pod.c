/* SPDX-License-Identifier: Apache-2.0 */
#include "components/static-pod.h"

#include <string.h>

#include "basic/string-util.h"
#include "basic/strv.h"
#include "components/conventions.h"

/* command = [go-runner --log-file=... --also-stdout] /usr/local/bin/<binary> flags... */
static int set_command(Pod *pod, PodContainer *c, const StaticPodParams *p) {
        _cleanup_free_ char *binary = strjoin(COMPONENT_BINARY_DIR, p->binary);
        _cleanup_free_ char *log = strjoin(COMPONENT_LOG_DIR, p->binary, ".log");
        _cleanup_free_ char *log_flag = strjoin("--log-file=", log);
        _cleanup_strv_free_ char **l = new0(char *, 1);
        if (!binary || !log || !log_flag || !l)
                return -ENOMEM;
        if (p->go_runner && (strv_extend(&l, GO_RUNNER) < 0 || strv_extend(&l, log_flag) < 0 ||
                             strv_extend(&l, "--also-stdout") < 0))
                return -ENOMEM;
        if (strv_extend(&l, binary) < 0)
                return -ENOMEM;
        for (size_t i = 0; p->flags && p->flags[i]; i++)
                if (strv_extend(&l, p->flags[i]) < 0)
                        return -ENOMEM;
        strv_free(c->command);
        c->command = TAKE_PTR(l);
        return p->go_runner ? pod_add_host_mount(pod, c, "logfile", log, "FileOrCreate", false) : 0;
}

static int set_requests(PodContainer *c, const char *cpu, const char *memory) {
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

int static_pod_new(const StaticPodParams *p, Pod **ret, PodContainer **ret_container) {
        _cleanup_(pod_freep) Pod *pod = NULL;
        PodContainer *c;

        int r = pod_new(p->name, STATIC_POD_NAMESPACE, &pod);
        if (r < 0)
                return r;
        pod->host_network = true;
        pod->priority_class_name = strdup(p->priority_class);
        if (!pod->priority_class_name)
                return -ENOMEM;
        r = pod_kv_set(&pod->labels, STATIC_POD_APP_LABEL, p->name);
        if (r < 0)
                return r;
        /* Control-plane pods must run even where nodes are tainted for add-ons only (kops does the same). */
        r = pod_add_toleration(pod, STATIC_POD_TOLERATION, "Exists", NULL, NULL);
        if (r < 0)
                return r;
        r = pod_add_container(pod, p->name, p->image, &c);
        if (r < 0)
                return r;
        r = set_command(pod, c, p);
        if (r < 0)
                return r;
        r = set_requests(c, p->cpu_request, p->memory_request);
        if (r < 0)
                return r;
        *ret_container = c;
        *ret = TAKE_PTR(pod);
        return 0;
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

int static_pod_mount_file_dirs(Pod *pod, PodContainer *c, const char *const *files, size_t n_files) {
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

int static_pod_mount_ca_certs(Pod *pod, PodContainer *c) {
        return pod_add_host_mount(pod, c, "ca-certs", HOST_CA_CERTS_DIR, "DirectoryOrCreate", true);
}

int static_pod_set_health_probes(PodContainer *c, const char *scheme, int port, const char *live_path,
                                 const char *ready_path) {
        int r = pod_probe_http(&c->liveness_probe, scheme, HEALTH_PROBE_HOST, live_path, port, 10, 15);
        if (r < 0)
                return r;
        c->liveness_probe.period_seconds = 10;
        c->liveness_probe.failure_threshold = 8;
        /* A slow first start (etcd still electing) gets 250 s, as kubeadm's 10 s + 24 x 10 s; checked every
         * second, since the pod is Ready only once it passed (docs/components.md, the probes' timing). */
        r = pod_probe_http(&c->startup_probe, scheme, HEALTH_PROBE_HOST, live_path, port, 0, 15);
        if (r < 0)
                return r;
        c->startup_probe.period_seconds = 1;
        c->startup_probe.failure_threshold = 250;
        if (ready_path) {
                r = pod_probe_http(&c->readiness_probe, scheme, HEALTH_PROBE_HOST, ready_path, port, 0, 15);
                if (r < 0)
                        return r;
                c->readiness_probe.period_seconds = 1;
                c->readiness_probe.failure_threshold = 3;
        }
        return 0;
}
