/* SPDX-License-Identifier: Apache-2.0 */
/* The self-hosted assets (self-hosted.h; docs/self-hosted.md). Each workload starts from the static pod the
 * component table builds (component_pod_build), so flags, probes, requests and the non-credential host
 * paths are the static pod's by construction; this file only swaps the credential directories for Secrets
 * (and configuration directories for ConfigMaps) mounted at the same paths, and wraps the pod in a
 * DaemonSet or a Deployment. */
#include "components/self-hosted.h"
#include "components/self-hosted-internal.h"

#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "components/control-plane.h"
#include "components/conventions.h"
#include "components/render.h"
#include "manifest/pod-yaml.h"
#include "model/pki-layout.h"
#include "model/workload.h"
#include "shared/crypto.h"

#define MASTER_ROLE_LABEL  "node-role.kubernetes.io/master"
#define HOSTNAME_LABEL     "kubernetes.io/hostname"
#define NODE_PROXIER_ROLE  "system:node-proxier" /* bootstrap role kubeadm and kops bind kube-proxy to */
#define PROXY_BINDING_NAME "protokube:node-proxier"
#define HOST_IP_ENV        "HOST_IP"
#define SECRET_FILE_MAX    (256U * 1024U)  /* any one certificate, key or kubeconfig */
#define SECRET_DATA_MAX    (1024U * 1024U) /* the API's limit on a Secret or ConfigMap */
#define SECRET_VOLUME_MODE 0600
#define CONFIG_VOLUME_MODE 0644
#define MAX_MASTERS        64

#define MANAGED_BY_LABEL "app.kubernetes.io/managed-by"
#define TIER_LABEL       "tier"

/* Config keys whose files are configuration, not credentials: they may come from a ConfigMap. A file of any
 * other key outside the pki layout is refused (a credential must come from the pki layout's Secret). */
static const char *const config_file_keys[] = { "config", "auditPolicyFile", NULL };

static const struct {
        const char *api_version, *kind, *file_prefix;
} kind_table[_SELF_HOSTED_KIND_MAX] = {
        [SELF_HOSTED_SERVICE_ACCOUNT] = { "v1", "ServiceAccount", "10-serviceaccount-" },
        [SELF_HOSTED_CLUSTER_ROLE_BINDING] = { "rbac.authorization.k8s.io/v1", "ClusterRoleBinding",
                                               "11-clusterrolebinding-" },
        [SELF_HOSTED_SECRET] = { "v1", "Secret", "20-secret-" },
        [SELF_HOSTED_CONFIG_MAP] = { "v1", "ConfigMap", "30-configmap-" },
        [SELF_HOSTED_DAEMON_SET] = { "apps/v1", "DaemonSet", "40-daemonset-" },
        [SELF_HOSTED_DEPLOYMENT] = { "apps/v1", "Deployment", "50-deployment-" },
};

const char *self_hosted_kind_to_string(SelfHostedKind k) {
        return k >= 0 && k < _SELF_HOSTED_KIND_MAX ? kind_table[k].kind : NULL;
}

static void object_done(SelfHostedObject *o) {
        free(o->namespace);
        free(o->name);
        free(o->file_name);
        if (o->secret)
                erase_and_free(o->text, o->text_len);
        else
                free(o->text);
        *o = (SelfHostedObject){};
}

void self_hosted_assets_done(SelfHostedAssets *a) {
        for (size_t i = 0; i < a->n; i++)
                object_done(&a->items[i]);
        free(a->items);
        *a = (SelfHostedAssets){};
}

/* Always takes *text (erased when freed if secret, also on failure). Two components mounting one directory
 * give one Secret: the same object twice is kept once, two different ones of a name are a conflict. */
int self_hosted_assets_add(SelfHostedAssets *a, SelfHostedKind kind, const char *namespace, const char *name,
                           char **text, size_t text_len, bool secret) {
        SelfHostedObject o = {
                .kind = kind, .secret = secret, .text = TAKE_PTR(*text), .text_len = text_len
        };
        for (size_t i = 0; i < a->n; i++)
                if (a->items[i].kind == kind && streq(a->items[i].name, name)) {
                        bool same = a->items[i].text_len == text_len &&
                                    memcmp(a->items[i].text, o.text, text_len) == 0;
                        object_done(&o);
                        return same ? 0 : -EEXIST;
                }
        o.api_version = kind_table[kind].api_version;
        o.kind_name = kind_table[kind].kind;
        o.name = strdup(name);
        o.namespace = namespace ? strdup(namespace) : NULL;
        o.file_name = strjoin(kind_table[kind].file_prefix, name, ".yaml");
        for (char *c = o.file_name; c && *c; c++)
                if (*c == ':') /* "protokube:node-proxier": a plain file name */
                        *c = '-';
        SelfHostedObject *items = reallocarray(a->items, a->n + 1, sizeof(SelfHostedObject));
        if (items)
                a->items = items;
        if (!o.name || (namespace && !o.namespace) || !o.file_name || !items) {
                object_done(&o);
                return -ENOMEM;
        }
        a->items[a->n++] = o;
        return 0;
}

static int cmp_object(const void *x, const void *y) {
        const SelfHostedObject *a = x, *b = y;
        if (a->kind != b->kind)
                return a->kind < b->kind ? -1 : 1;
        return strcmp(a->name, b->name);
}

/* The labels of every object and pod template, sorted by key (the Secret's text is written as it is):
 * managed-by protokube, k8s-app: <component> (the selector), tier: control-plane or node. Caller frees. */
int self_hosted_labels(const char *component, const char *tier, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        int r = pod_kv_set(&l, MANAGED_BY_LABEL, "protokube");
        if (r >= 0)
                r = pod_kv_set(&l, STATIC_POD_APP_LABEL, component);
        if (r >= 0)
                r = pod_kv_set(&l, TIER_LABEL, tier);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(l);
        return 0;
}

static int component_labels(const char *component, char ***ret) {
        return self_hosted_labels(component, "control-plane", ret);
}

int self_hosted_set_labels(char ***labels, const char *component, const char *tier) {
        _cleanup_strv_free_ char **l = NULL;
        int r = self_hosted_labels(component, tier, &l);
        for (size_t i = 0; r >= 0 && l[i]; i += 2)
                r = pod_kv_set(labels, l[i], l[i + 1]);
        return r;
}

static int set_labels(char ***labels, const char *component) {
        return self_hosted_set_labels(labels, component, "control-plane");
}

/* --- Secrets and ConfigMaps from the directories a pod mounts ------------------------------------- */

typedef struct DataEntry {
        const char *key;  /* the file's name in its directory */
        const char *flag; /* the config key that names it (for messages) */
        char *path;
        char *value;
        size_t len;
} DataEntry;

typedef struct DataSet {
        DataEntry entries[32];
        size_t n;
        bool secret;
} DataSet;

static void data_set_done(DataSet *d) {
        for (size_t i = 0; i < d->n; i++) {
                free(d->entries[i].path);
                if (d->secret)
                        erase_and_free(d->entries[i].value, d->entries[i].len);
                else
                        free(d->entries[i].value);
        }
        *d = (DataSet){};
}

/* The API's rule for Secret and ConfigMap keys: [-._a-zA-Z0-9]+, at most 253 characters. */
static bool data_key_is_valid(const char *key) {
        size_t n = strlen(key);
        return n > 0 && n <= 253 &&
               key[strspn(key, "-._abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")] == 0;
}

static int data_set_add(DataSet *d, const char *dir, const char *key, const char *flag) {
        if (!data_key_is_valid(key))
                return -EINVAL;
        for (size_t i = 0; i < d->n; i++)
                if (streq(d->entries[i].key, key))
                        return 0;
        if (d->n >= ELEMENTSOF(d->entries))
                return -E2BIG;
        char *path = strjoin(dir, "/", key);
        if (!path)
                return -ENOMEM;
        d->entries[d->n++] = (DataEntry){ .key = strrchr(path, '/') + 1, .flag = flag, .path = path };
        return 0;
}

static int cmp_entry(const void *x, const void *y) {
        return strcmp(((const DataEntry *)x)->key, ((const DataEntry *)y)->key);
}

/* The entry for path gets text instead of the file's content: a file protokube renders (the component's
 * configuration) need not be on this node yet. */
static int data_set_fill(DataSet *d, const char *path, const char *text) {
        for (size_t i = 0; i < d->n; i++) {
                DataEntry *e = &d->entries[i];
                if (!streq(e->path, path) || e->value)
                        continue;
                e->value = strdup(text);
                if (!e->value)
                        return -ENOMEM;
                e->len = strlen(text);
        }
        return 0;
}

/* Reads every file not filled already; the first that cannot be read fails with its path, the key naming it
 * and the object. */
static int data_set_read(DataSet *d, const char *component, const char *kind, const char *object,
                         char **ret_error) {
        size_t total = 0;
        for (size_t i = 0; i < d->n; i++) {
                DataEntry *e = &d->entries[i];
                if (e->value) {
                        total += e->len;
                        continue;
                }
                int r = d->secret ? read_full_file_secret(e->path, SECRET_FILE_MAX, &e->value, &e->len)
                                  : read_full_file(e->path, SECRET_FILE_MAX, &e->value, &e->len);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return error_setf(ret_error, r, "cannot read '%s' (%s's %s, for %s %s/%s): %s",
                                          e->path, component, e->flag, kind, STATIC_POD_NAMESPACE, object,
                                          r == -ENOENT ? "missing: has a pass issued the certificates?"
                                                       : pk_strerror(r));
                total += e->len;
        }
        if (total > SECRET_DATA_MAX / 4 * 3 - 4096) /* base64 must fit the API's limit */
                return error_setf(ret_error, PK_ETOOBIG,
                                  "%s %s/%s: %zu bytes of files, more than the API takes", kind,
                                  STATIC_POD_NAMESPACE, object, total);
        qsort_safe(d->entries, d->n, sizeof(DataEntry), cmp_entry);
        return 0;
}

/* A plain scalar for YAML, or double quotes where a reader would take it for something else; every string
 * written here (data keys, base64, label values) is of [-._/A-Za-z0-9+=:], so quotes need no escapes. */
static size_t scalar_len(const char *s) {
        return strlen(s) + (yaml_plain_is_ambiguous(s) || s[0] == '/' || s[0] == '+' ? 2 : 0);
}

static char *put_scalar(char *p, const char *s) {
        bool quote = scalar_len(s) != strlen(s);
        if (quote)
                *p++ = '"';
        p = stpcpy(p, s);
        if (quote)
                *p++ = '"';
        return p;
}

/* The Secret's YAML, written by hand into one buffer of the exact size: no copy of the key material is left
 * in freed memory (an emitter's growing buffers would leave some). Keys in the emitter's order. */
static int secret_text(const DataSet *d, const char *name, char *const *labels, char **ret,
                       size_t *ret_len) {
        char *b64[ELEMENTSOF(d->entries)] = {};
        size_t len = strlen("apiVersion: v1\ndata:\nkind: Secret\nmetadata:\n  labels:\n  name: \n"
                            "  namespace: \ntype: Opaque\n") +
                     strlen(name) + strlen(STATIC_POD_NAMESPACE);
        int r = 0;
        for (size_t i = 0; r >= 0 && i < d->n; i++) {
                r = crypto_base64_encode(d->entries[i].value, d->entries[i].len, &b64[i]);
                if (r >= 0)
                        len += 2 + scalar_len(d->entries[i].key) + 2 + scalar_len(b64[i]) + 1;
        }
        for (size_t i = 0; labels[i]; i += 2)
                len += 4 + scalar_len(labels[i]) + 2 + scalar_len(labels[i + 1]) + 1;
        char *text = r >= 0 ? malloc(len + 1) : NULL;
        if (text) {
                char *p = stpcpy(text, "apiVersion: v1\ndata:\n");
                for (size_t i = 0; i < d->n; i++) {
                        p = put_scalar(stpcpy(p, "  "), d->entries[i].key);
                        p = put_scalar(stpcpy(p, ": "), b64[i]);
                        *p++ = '\n';
                }
                p = stpcpy(p, "kind: Secret\nmetadata:\n  labels:\n");
                for (size_t i = 0; labels[i]; i += 2) {
                        p = put_scalar(stpcpy(p, "    "), labels[i]);
                        p = put_scalar(stpcpy(p, ": "), labels[i + 1]);
                        *p++ = '\n';
                }
                p = stpcpy(stpcpy(stpcpy(p, "  name: "), name), "\n  namespace: ");
                p = stpcpy(stpcpy(p, STATIC_POD_NAMESPACE), "\ntype: Opaque\n");
                len = (size_t)(p - text);
        }
        for (size_t i = 0; i < d->n; i++)
                if (b64[i])
                        erase_and_free(b64[i], strlen(b64[i]));
        if (!text)
                return r < 0 ? r : -ENOMEM;
        *ret = text;
        *ret_len = len;
        return 0;
}

static int config_map_text(const DataSet *d, const char *name, char *const *labels, char *const *annotations,
                           char **ret) {
        _cleanup_strv_free_ char **data = NULL;
        for (size_t i = 0; i < d->n; i++)
                if (strv_extend(&data, d->entries[i].key) < 0 || strv_extend(&data, d->entries[i].value) < 0)
                        return -ENOMEM;
        KubeObjectRef ref = { name, STATIC_POD_NAMESPACE, labels, annotations };
        return config_map_to_yaml(&ref, data, ret);
}

/* dir is one of the consumer directories of the pki layout: <pki dir>/<one name>. */
static bool is_pki_consumer_dir(const char *pki_dir, const char *dir) {
        size_t n = strlen(pki_dir);
        while (n > 1 && pki_dir[n - 1] == '/')
                n--;
        if (!strneq(dir, pki_dir, n) || dir[n] != '/' || dir[n + 1] == 0)
                return false;
        return !strchr(dir + n + 1, '/');
}

static bool path_is_in(const char *path, const char *dir) {
        const char *rest = startswith(path, dir);
        return rest && rest[0] == '/' && rest[1] != 0;
}

/* "<component>-<directory's name>", lowercased, other characters as '-': a DNS subdomain of the node-
 * independent part of the path. NULL on OOM. */
static char *config_map_name(const char *component, const char *dir) {
        const char *base = strrchr(dir, '/') + 1;
        char *name = strjoin(component, "-", base), *p = name ? name + strlen(component) + 1 : NULL;
        for (; p && *p; p++) {
                if (*p >= 'A' && *p <= 'Z')
                        *p = (char)(*p - 'A' + 'a');
                else if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '.'))
                        *p = '-';
        }
        size_t n = name ? strlen(name) : 0;
        while (n > 0 && (name[n - 1] == '-' || name[n - 1] == '.'))
                name[--n] = 0;
        return name;
}

typedef struct Ctx {
        const ClusterSpec *spec;
        SelfHostedAssets *assets;
        char **error;
        /* the configuration file protokube renders for the component being built (text NULL: none), and
         * its checkpoint's where that differs (COMPONENT_INSTANCE_CHECKPOINT: its own ports) */
        ComponentConfigFile config_file, checkpoint_file;
} Ctx;

static void config_files_done(Ctx *ctx) {
        free(ctx->config_file.path);
        free(ctx->config_file.text);
        free(ctx->checkpoint_file.path);
        free(ctx->checkpoint_file.text);
        ctx->config_file = ctx->checkpoint_file = (ComponentConfigFile){};
}

static void ctx_done(Ctx *ctx) {
        config_files_done(ctx);
}

/* The checkpoint's copy of the configuration file, when it differs: under the key
 * SELF_HOSTED_CHECKPOINT_PREFIX<key> of the same ConfigMap, which the annotation SELF_HOSTED_CHECKPOINT_DATA
 * ("<key>=<its key>") names for the checkpoint to take instead (docs/pivot.md, "The checkpoint"). */
static int add_checkpoint_copy(Ctx *ctx, const char *dir, DataSet *d, char ***ret_annotations) {
        const char *path = ctx->checkpoint_file.path;
        if (!ctx->checkpoint_file.text || !path_is_in(path, dir))
                return 0;
        const char *key = path + strlen(dir) + 1;
        _cleanup_free_ char *copy = strjoin(SELF_HOSTED_CHECKPOINT_PREFIX, key),
                            *value = strjoin(key, "=", copy ?: "");
        if (!copy || !value)
                return -ENOMEM;
        int r = data_set_add(d, dir, copy, "config");
        if (r >= 0)
                r = data_set_fill(d, d->entries[d->n - 1].path, ctx->checkpoint_file.text);
        if (r >= 0 && (strv_extend(ret_annotations, SELF_HOSTED_CHECKPOINT_DATA) < 0 ||
                       strv_extend(ret_annotations, value) < 0))
                r = -ENOMEM;
        return r;
}

/* The files of files (key, path, ...) in dir into d; the kubeconfig of a pki directory brings the pair and
 * CA it names (certs/: every kubeconfig of the layout names its directory's client pair and ca.crt). */
static int collect(const char *component, const char *dir, const char *pki_dir, bool pki, char *const *files,
                   DataSet *d, char **ret_error) {
        for (size_t i = 0; files[i]; i += 2) {
                const char *key = files[i], *path = files[i + 1];
                if (!path_is_in(path, dir))
                        continue;
                if (strchr(path + strlen(dir) + 1, '/'))
                        return error_setf(
                            ret_error, -EINVAL,
                            "%s's %s '%s' is below '%s', not in it: a Secret or ConfigMap mounted "
                            "there holds only the directory's own files",
                            component, key, path, dir);
                if (!pki && !strv_contains((char **)config_file_keys, key))
                        return error_setf(
                            ret_error, -EINVAL,
                            "%s's %s '%s' is outside the pki layout '%s': a self-hosted pod gets "
                            "its credentials only from the layout's Secrets",
                            component, key, path, pki_dir);
                int r = data_set_add(d, dir, path + strlen(dir) + 1, key);
                if (r == -EINVAL)
                        return error_setf(ret_error, r,
                                          "%s's %s '%s': the file's name is not a valid key of a Secret or "
                                          "ConfigMap ([-._a-zA-Z0-9])",
                                          component, key, path);
                if (r >= 0 && pki && streq(path + strlen(dir) + 1, PKI_KUBECONFIG_FILE)) {
                        r = data_set_add(d, dir, PKI_CLIENT_PAIR PKI_CERT_SUFFIX, key);
                        if (r >= 0)
                                r = data_set_add(d, dir, PKI_CLIENT_PAIR PKI_KEY_SUFFIX, key);
                        if (r >= 0)
                                r = data_set_add(d, dir, PKI_CA_FILE, key);
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The volume v (a hostPath the static pod mounts for files its flags name) as a Secret (a pki consumer
 * directory) or a ConfigMap; volumes without such files (logs, /etc/ssl/certs, modules) stay. */
static int convert_volume(Ctx *ctx, const char *component, Pod *pod, PodVolume *v, char *const *files) {
        _cleanup_(data_set_done) DataSet d = {};
        _cleanup_strv_free_ char **labels = NULL, **annotations = NULL;
        _cleanup_free_ char *name = NULL, *text = NULL;
        size_t text_len = 0;
        const char *dir = v->host_path;
        bool pki = is_pki_consumer_dir(ctx->spec->pki.dir, dir);

        d.secret = pki;
        int r = collect(component, dir, ctx->spec->pki.dir, pki, files, &d, ctx->error);
        if (r >= 0 && ctx->config_file.text)
                r = data_set_fill(&d, ctx->config_file.path, ctx->config_file.text);
        if (r >= 0 && !pki)
                r = add_checkpoint_copy(ctx, dir, &d, &annotations);
        if (r < 0 || d.n == 0)
                return r;
        name = pki ? strjoin(strrchr(dir, '/') + 1, "-pki") : config_map_name(component, dir);
        if (!name)
                return -ENOMEM;
        r = data_set_read(&d, component, pki ? "Secret" : "ConfigMap", name, ctx->error);
        if (r < 0)
                return r;
        r = component_labels(component, &labels);
        if (r < 0)
                return r;
        if (pki)
                r = secret_text(&d, name, labels, &text, &text_len);
        else {
                r = config_map_text(&d, name, labels, annotations, &text);
                text_len = text ? strlen(text) : 0;
        }
        if (r < 0)
                return r;
        r = self_hosted_assets_add(ctx->assets, pki ? SELF_HOSTED_SECRET : SELF_HOSTED_CONFIG_MAP,
                                   STATIC_POD_NAMESPACE, name, &text, text_len, pki);
        if (r == -EEXIST)
                return error_setf(ctx->error, r, "two different objects would be named %s/%s",
                                  STATIC_POD_NAMESPACE, name);
        if (r < 0)
                return r;
        free(v->host_path);
        v->host_path = NULL;
        free(v->host_path_type);
        v->host_path_type = NULL;
        /* the volume is named after its object (the host path's name would carry the node's layout) */
        for (size_t i = 0; i < pod->n_containers; i++)
                for (size_t j = 0; j < pod->containers[i].n_volume_mounts; j++) {
                        PodVolumeMount *m = &pod->containers[i].volume_mounts[j];
                        if (streq(m->name, v->name) && free_and_strdup(&m->name, name) < 0)
                                return -ENOMEM;
                }
        r = free_and_strdup(&v->name, name);
        if (r < 0)
                return r;
        if (pki)
                v->secret_name = TAKE_PTR(name);
        else
                v->config_map_name = TAKE_PTR(name);
        v->default_mode = pki ? SECRET_VOLUME_MODE : CONFIG_VOLUME_MODE;
        return 0;
}

/* The host paths of the files the component's settings name as Secrets and ConfigMaps; the configuration
 * file protokube renders comes from wspec, the spec the workload is built from (its leaderElect forced on).
 */
static int convert_volumes(Ctx *ctx, const ClusterSpec *wspec, Component c, Pod *pod) {
        _cleanup_strv_free_ char **files = NULL;
        const char *component = component_to_string(c);
        int r = component_files(c, ctx->spec, &files);
        config_files_done(ctx);
        if (r >= 0)
                r = component_config_file_instance(c, wspec, COMPONENT_INSTANCE_SELF_HOSTED,
                                                   &ctx->config_file);
        if (r >= 0)
                r = component_config_file_instance(c, wspec, COMPONENT_INSTANCE_CHECKPOINT,
                                                   &ctx->checkpoint_file);
        if (r >= 0 && streq_ptr(ctx->checkpoint_file.text, ctx->config_file.text)) {
                free(ctx->checkpoint_file.path);
                free(ctx->checkpoint_file.text);
                ctx->checkpoint_file = (ComponentConfigFile){};
        }
        if (r < 0)
                return error_setf(ctx->error, r, "%s: %s", component, pk_strerror(r));
        for (size_t i = 0; files && i < pod->n_volumes; i++) {
                if (!pod->volumes[i].host_path)
                        continue;
                r = convert_volume(ctx, component, pod, &pod->volumes[i], files);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* --- Workloads ------------------------------------------------------------------------------------- */

/* On the masters only, through their taint, and staying on a master that is not ready or unreachable: the
 * API server of a master must not be evicted because the node controller, which it serves, lost it. */
static int place_on_masters(Pod *pod) {
        int r = pod_kv_set(&pod->node_selector, MASTER_ROLE_LABEL, "");
        if (r >= 0)
                r = pod_add_toleration(pod, MASTER_ROLE_LABEL, "Exists", NULL, "NoSchedule");
        if (r >= 0)
                r = pod_add_toleration(pod, "node.kubernetes.io/not-ready", "Exists", NULL, "NoExecute");
        if (r >= 0)
                r = pod_add_toleration(pod, "node.kubernetes.io/unreachable", "Exists", NULL, "NoExecute");
        return r;
}

static int workload_wrap(Ctx *ctx, Component c, WorkloadKind kind, Pod **pod, unsigned replicas,
                         char *const *pod_annotations) {
        _cleanup_(workload_freep) Workload *w = new0(Workload, 1);
        _cleanup_free_ char *text = NULL;
        const char *name = component_to_string(c);
        if (!w)
                return -ENOMEM;
        *w = (Workload){ .kind = kind, .replicas = replicas, .max_unavailable = 1 };
        w->pod = TAKE_PTR(*pod);
        w->name = strdup(name);
        w->namespace = strdup(STATIC_POD_NAMESPACE);
        if (!w->name || !w->namespace)
                return -ENOMEM;
        int r = set_labels(&w->labels, name);
        if (r >= 0)
                r = set_labels(&w->pod->labels, name);
        for (size_t i = 0; r >= 0 && pod_annotations && pod_annotations[i]; i += 2)
                r = pod_kv_set(&w->pod->annotations, pod_annotations[i], pod_annotations[i + 1]);
        if (r >= 0)
                r = workload_to_yaml(w, &text);
        if (r < 0)
                return error_setf(ctx->error, r, "%s: %s", name, pk_strerror(r));
        SelfHostedKind k = kind == WORKLOAD_DAEMON_SET ? SELF_HOSTED_DAEMON_SET : SELF_HOSTED_DEPLOYMENT;
        r = self_hosted_assets_add(ctx->assets, k, STATIC_POD_NAMESPACE, name, &text, strlen(text), false);
        if (r < 0)
                return r;
        /* a workload's name is its component's, added once: the last object is this one */
        ctx->assets->items[ctx->assets->n - 1].certificates = true;
        return 0;
}

/* The spec the workloads are built from: what is per node in a static pod is per pod here. */
static void workload_spec(const ClusterSpec *spec, ClusterSpec *ret) {
        *ret = *spec; /* shallow: the strings stay the spec's */
        /* The static pod gets the node's address from the pass; a DaemonSet's pod gets its node's through
         * the downward API ($(HOST_IP), which kubelet expands in the command): the same value per master. */
        if (!ret->kube_apiserver.advertise_address)
                ret->kube_apiserver.advertise_address = (char *)"$(" HOST_IP_ENV ")";
        /* several replicas: exactly one of them may act */
        ret->kube_controller_manager.leader_elect = (OptBool){ .set = true, .value = true };
        ret->kube_scheduler.leader_elect = (OptBool){ .set = true, .value = true };
}

/* No container ports: with hostNetwork a container port is a host port, and kube-scheduler's NodePorts
 * filter refuses a pod whose host port another pod of the node declares, the bootstrap pod's mirror
 * included ("didn't have free ports for the requested pod ports"), so the self-hosted pods would stay
 * Pending beside the bootstrap pods they are to replace. They share the port by --permit-port-sharing
 * (docs/pivot.md); the probes name the port by number. */
static void drop_ports(Pod *pod) {
        for (size_t i = 0; i < pod->n_containers; i++) {
                PodContainer *c = &pod->containers[i];
                for (size_t j = 0; j < c->n_ports; j++) {
                        free(c->ports[j].name);
                        free(c->ports[j].protocol);
                }
                free(c->ports);
                c->ports = NULL;
                c->n_ports = 0;
        }
}

static int build_component(Ctx *ctx, const ClusterSpec *wspec, Component c, const SelfHostedParams *p) {
        _cleanup_(pod_freep) Pod *pod = NULL;
        const char *name = component_to_string(c);
        int r = component_pod_build(c, wspec, &pod);
        if (r < 0)
                return error_setf(ctx->error, r, "%s: %s", name, pk_strerror(r));
        if (!pod) /* disabled */
                return 0;
        r = convert_volumes(ctx, wspec, c, pod);
        if (r < 0)
                return r;
        if (c != COMPONENT_KUBE_PROXY)
                drop_ports(pod);
        switch (c) {
        case COMPONENT_KUBE_APISERVER:
                /* a DaemonSet's pods are evicted last under node pressure, like kubeadm's and kops' */
                r = free_and_strdup(&pod->priority_class_name, PRIORITY_NODE_CRITICAL);
                if (r >= 0 && !ctx->spec->kube_apiserver.advertise_address)
                        r = pod_kv_set(&pod->containers[0].env_field_refs, HOST_IP_ENV, "status.hostIP");
                if (r >= 0)
                        r = place_on_masters(pod);
                if (r >= 0)
                        r = pod_kv_set(&pod->node_selector, SELF_HOSTED_APISERVER_LABEL, "true");
                if (r < 0)
                        return r;
                return workload_wrap(ctx, c, WORKLOAD_DAEMON_SET, &pod, 0, p->pod_annotations);
        case COMPONENT_KUBE_CONTROLLER_MANAGER:
        case COMPONENT_KUBE_SCHEDULER:
                r = place_on_masters(pod);
                /* one replica per master among the self-hosted pods only: the bootstrap pod's mirror has
                 * the same k8s-app label but not managed-by, and must not keep its replacement away */
                if (r >= 0)
                        r = pod_kv_set(&pod->anti_affinity_labels, MANAGED_BY_LABEL, "protokube");
                if (r >= 0)
                        r = pod_kv_set(&pod->anti_affinity_labels, STATIC_POD_APP_LABEL, name);
                if (r >= 0)
                        r = free_and_strdup(&pod->anti_affinity_topology_key, HOSTNAME_LABEL);
                if (r < 0)
                        return r;
                return workload_wrap(ctx, c, WORKLOAD_DEPLOYMENT, &pod, p->n_masters, p->pod_annotations);
        case COMPONENT_KUBE_PROXY:
                /* every node, whatever its taints (an empty key with Exists tolerates them all) */
                r = pod_add_toleration(pod, NULL, "Exists", NULL, NULL);
                if (r >= 0)
                        r = free_and_strdup(&pod->service_account_name, KUBE_PROXY);
                if (r < 0)
                        return r;
                return workload_wrap(ctx, c, WORKLOAD_DAEMON_SET, &pod, 0, p->pod_annotations);
        default:
                return -EINVAL;
        }
}

/* kube-proxy's ServiceAccount, bound to the bootstrap role system:node-proxier as kubeadm and kops do. Its
 * kubeconfig (the Secret) authenticates it as system:kube-proxy, which the bootstrap policy already binds;
 * the account is for what runs in its pod without that kubeconfig (kubeadm's kube-proxy uses its token). */
static int build_rbac(Ctx *ctx) {
        _cleanup_strv_free_ char **labels = NULL;
        _cleanup_free_ char *sa_text = NULL, *crb_text = NULL;
        int r = component_labels(KUBE_PROXY, &labels);
        if (r < 0)
                return r;
        KubeObjectRef sa = { KUBE_PROXY, STATIC_POD_NAMESPACE, labels };
        KubeObjectRef crb = { PROXY_BINDING_NAME, NULL, labels };
        r = service_account_to_yaml(&sa, &sa_text);
        if (r >= 0)
                r = cluster_role_binding_to_yaml(&crb, NODE_PROXIER_ROLE, &sa, &crb_text);
        if (r >= 0)
                r = self_hosted_assets_add(ctx->assets, SELF_HOSTED_SERVICE_ACCOUNT, STATIC_POD_NAMESPACE,
                                           KUBE_PROXY, &sa_text, strlen(sa_text), false);
        if (r >= 0)
                r = self_hosted_assets_add(ctx->assets, SELF_HOSTED_CLUSTER_ROLE_BINDING, NULL,
                                           PROXY_BINDING_NAME, &crb_text, strlen(crb_text), false);
        return r;
}

int self_hosted_render(const ClusterSpec *spec, const SelfHostedParams *p, SelfHostedAssets *ret,
                       char **ret_error) {
        _cleanup_(self_hosted_assets_done) SelfHostedAssets a = {};
        ClusterSpec wspec;
        _cleanup_(ctx_done) Ctx ctx = { .spec = spec, .assets = &a, .error = ret_error };
        int r;

        if (!spec || !p || !ret)
                return -EINVAL;
        if (!cluster_spec_pki_managed(spec) || isempty(spec->pki.dir))
                return error_setf(ret_error, -EINVAL,
                                  "self-hosted assets need spec.stateStore: their Secrets hold the "
                                  "certificates protokube issues into the pki layout");
        if (p->n_masters < 1 || p->n_masters > MAX_MASTERS)
                return error_setf(ret_error, -EINVAL, "%u masters: expected 1 to %u", p->n_masters,
                                  MAX_MASTERS);
        r = render_check_pod_annotations(p->pod_annotations);
        if (r < 0)
                return error_setf(ret_error, r, "invalid pod annotations");
        workload_spec(spec, &wspec);
        if (component_enabled(COMPONENT_KUBE_PROXY, spec)) {
                r = build_rbac(&ctx);
                if (r < 0)
                        return r;
        }
        for (Component c = 0; c < _COMPONENT_MAX; c++) {
                r = build_component(&ctx, &wspec, c, p);
                if (r < 0)
                        return r;
        }
        r = self_hosted_kubelet_build(spec, p, &a, ret_error);
        if (r < 0)
                return r;
        qsort_safe(a.items, a.n, sizeof(SelfHostedObject), cmp_object);
        *ret = a;
        a = (SelfHostedAssets){};
        return 0;
}
