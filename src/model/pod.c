/* SPDX-License-Identifier: Apache-2.0 */
#include "model/pod.h"

#include <stdlib.h>
#include <string.h>

#include "basic/dns-name.h"
#include "basic/string-util.h"
#include "basic/strv.h"

static void probe_done(PodProbe *p) {
        free(p->http_get.host);
        free(p->http_get.path);
        free(p->http_get.scheme);
        strv_free(p->exec_command);
        *p = (PodProbe){};
}

static void container_done(PodContainer *c) {
        free(c->name);
        free(c->image);
        strv_free(c->command);
        strv_free(c->args);
        strv_free(c->env);
        strv_free(c->env_field_refs);
        for (size_t i = 0; i < c->n_ports; i++) {
                free(c->ports[i].name);
                free(c->ports[i].protocol);
        }
        free(c->ports);
        for (size_t i = 0; i < c->n_volume_mounts; i++) {
                free(c->volume_mounts[i].name);
                free(c->volume_mounts[i].mount_path);
                free(c->volume_mounts[i].propagation);
        }
        free(c->volume_mounts);
        strv_free(c->requests);
        probe_done(&c->liveness_probe);
        probe_done(&c->readiness_probe);
        probe_done(&c->startup_probe);
}

Pod *pod_free(Pod *pod) {
        if (!pod)
                return NULL;
        free(pod->name);
        free(pod->namespace);
        strv_free(pod->labels);
        strv_free(pod->annotations);
        free(pod->priority_class_name);
        for (size_t i = 0; i < pod->n_containers; i++)
                container_done(&pod->containers[i]);
        free(pod->containers);
        for (size_t i = 0; i < pod->n_init_containers; i++)
                container_done(&pod->init_containers[i]);
        free(pod->init_containers);
        for (size_t i = 0; i < pod->n_volumes; i++) {
                free(pod->volumes[i].name);
                free(pod->volumes[i].host_path);
                free(pod->volumes[i].host_path_type);
                free(pod->volumes[i].secret_name);
                free(pod->volumes[i].config_map_name);
        }
        free(pod->volumes);
        for (size_t i = 0; i < pod->n_tolerations; i++) {
                free(pod->tolerations[i].key);
                free(pod->tolerations[i].operator);
                free(pod->tolerations[i].value);
                free(pod->tolerations[i].effect);
        }
        free(pod->tolerations);
        strv_free(pod->node_selector);
        free(pod->service_account_name);
        strv_free(pod->anti_affinity_labels);
        free(pod->anti_affinity_topology_key);
        free(pod);
        return NULL;
}

static bool ascii_alnum(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool pod_qualified_name_is_valid(const char *s) {
        if (!s)
                return false;
        const char *slash = strchr(s, '/'), *name = slash ? slash + 1 : s;
        if (slash) {
                _cleanup_free_ char *prefix = strndup(s, (size_t)(slash - s));
                if (!prefix || !dns_hostname_is_valid(prefix))
                        return false;
        }
        size_t n = strlen(name);
        if (n == 0 || n > 63 || !ascii_alnum(name[0]) || !ascii_alnum(name[n - 1]))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!ascii_alnum(name[i]) && !strchr("-_.", name[i]))
                        return false;
        return true;
}

/* strdup that keeps NULL; false on OOM. */
static bool dup_opt(const char *s, char **ret) {
        *ret = NULL;
        if (!s)
                return true;
        *ret = strdup(s);
        return *ret != NULL;
}

/* Grows an array by one zeroed element; returns it, or NULL on OOM (array unchanged). */
static void *array_grow(void **array, size_t *n, size_t size) {
        char *a = realloc(*array, (*n + 1) * size);
        if (!a)
                return NULL;
        *array = a;
        memset(a + *n * size, 0, size);
        return a + (*n)++ * size;
}

int pod_new(const char *name, const char *namespace, Pod **ret) {
        _cleanup_(pod_freep) Pod *p = new0(Pod, 1);
        if (!p || !dup_opt(name, &p->name) || !dup_opt(namespace, &p->namespace))
                return -ENOMEM;
        *ret = TAKE_PTR(p);
        return 0;
}

int pod_kv_set(char ***l, const char *key, const char *value) {
        size_t n = strv_length(*l);
        for (size_t i = 0; i + 1 < n; i += 2)
                if (streq((*l)[i], key)) {
                        char *v = strdup(value);
                        if (!v)
                                return -ENOMEM;
                        free((*l)[i + 1]);
                        (*l)[i + 1] = v;
                        return 0;
                }
        int r = strv_extend(l, key);
        if (r < 0)
                return r;
        r = strv_extend(l, value);
        if (r < 0) {
                /* keep the list even-length */
                free((*l)[n]);
                (*l)[n] = NULL;
        }
        return r;
}

static int add_container(PodContainer **array, size_t *n, const char *name, const char *image,
                         PodContainer **ret) {
        _cleanup_free_ char *nm = NULL, *i = NULL;
        if (!dup_opt(name, &nm) || !dup_opt(image, &i))
                return -ENOMEM;
        PodContainer *c = array_grow((void **)array, n, sizeof(PodContainer));
        if (!c)
                return -ENOMEM;
        c->name = TAKE_PTR(nm);
        c->image = TAKE_PTR(i);
        if (ret)
                *ret = c;
        return 0;
}

int pod_add_container(Pod *pod, const char *name, const char *image, PodContainer **ret) {
        return add_container(&pod->containers, &pod->n_containers, name, image, ret);
}

int pod_add_init_container(Pod *pod, const char *name, const char *image, PodContainer **ret) {
        return add_container(&pod->init_containers, &pod->n_init_containers, name, image, ret);
}

int pod_add_host_path_volume(Pod *pod, const char *name, const char *path, const char *type) {
        _cleanup_free_ char *n = NULL, *p = NULL, *t = NULL;
        if (!dup_opt(name, &n) || !dup_opt(path, &p) || !dup_opt(type, &t))
                return -ENOMEM;
        PodVolume *v = array_grow((void **)&pod->volumes, &pod->n_volumes, sizeof(PodVolume));
        if (!v)
                return -ENOMEM;
        v->name = TAKE_PTR(n);
        v->host_path = TAKE_PTR(p);
        v->host_path_type = TAKE_PTR(t);
        return 0;
}

int pod_add_object_volume(Pod *pod, const char *name, const char *object_name, bool config_map, int mode) {
        _cleanup_free_ char *n = NULL, *o = NULL;
        if (!name || !object_name || mode < 0 || mode > 0777)
                return -EINVAL;
        if (!dup_opt(name, &n) || !dup_opt(object_name, &o))
                return -ENOMEM;
        PodVolume *v = array_grow((void **)&pod->volumes, &pod->n_volumes, sizeof(PodVolume));
        if (!v)
                return -ENOMEM;
        v->name = TAKE_PTR(n);
        if (config_map)
                v->config_map_name = TAKE_PTR(o);
        else
                v->secret_name = TAKE_PTR(o);
        v->default_mode = mode;
        return 0;
}

int pod_add_toleration(Pod *pod, const char *key, const char *operator, const char * value,
                       const char *effect) {
        _cleanup_free_ char *k = NULL, *o = NULL, *v = NULL, *e = NULL;
        if (!dup_opt(key, &k) || !dup_opt(operator, & o) || !dup_opt(value, &v) || !dup_opt(effect, &e))
                return -ENOMEM;
        PodToleration *t =
            array_grow((void **)&pod->tolerations, &pod->n_tolerations, sizeof(PodToleration));
        if (!t)
                return -ENOMEM;
        t->key = TAKE_PTR(k);
        t->operator= TAKE_PTR(o);
        t->value = TAKE_PTR(v);
        t->effect = TAKE_PTR(e);
        return 0;
}

int pod_container_add_port(PodContainer *c, const char *name, int container_port, int host_port) {
        _cleanup_free_ char *n = NULL, *proto = NULL;
        if (!dup_opt(name, &n) || !dup_opt("TCP", &proto))
                return -ENOMEM;
        PodPort *p = array_grow((void **)&c->ports, &c->n_ports, sizeof(PodPort));
        if (!p)
                return -ENOMEM;
        p->name = TAKE_PTR(n);
        p->protocol = TAKE_PTR(proto);
        p->container_port = container_port;
        p->host_port = host_port;
        return 0;
}

int pod_container_add_mount(PodContainer *c, const char *name, const char *mount_path, bool read_only) {
        _cleanup_free_ char *n = NULL, *p = NULL;
        if (!dup_opt(name, &n) || !dup_opt(mount_path, &p))
                return -ENOMEM;
        PodVolumeMount *m =
            array_grow((void **)&c->volume_mounts, &c->n_volume_mounts, sizeof(PodVolumeMount));
        if (!m)
                return -ENOMEM;
        m->name = TAKE_PTR(n);
        m->mount_path = TAKE_PTR(p);
        m->read_only = read_only;
        return 0;
}

int pod_add_host_mount(Pod *pod, PodContainer *c, const char *name, const char *path, const char *type,
                       bool read_only) {
        int r = pod_add_host_path_volume(pod, name, path, type);
        if (r < 0)
                return r;
        return pod_container_add_mount(c, name, path, read_only);
}

int pod_probe_http(PodProbe *p, const char *scheme, const char *host, const char *path, int port,
                   int initial_delay_seconds, int timeout_seconds) {
        PodProbe n = {
                .set = true,
                .http_get.port = port,
                .initial_delay_seconds = initial_delay_seconds,
                .timeout_seconds = timeout_seconds,
        };
        if (!dup_opt(scheme, &n.http_get.scheme) || !dup_opt(host, &n.http_get.host) ||
            !dup_opt(path, &n.http_get.path)) {
                probe_done(&n);
                return -ENOMEM;
        }
        probe_done(p);
        *p = n;
        return 0;
}
