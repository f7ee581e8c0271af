/* SPDX-License-Identifier: Apache-2.0 */
#include "manifest/pod-yaml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "model/workload.h"

/* A manifest larger than this is a bug, not a pod. */
#define POD_YAML_MAX (1024 * 1024)

typedef struct Out {
        char *data;
        size_t len, allocated;
        bool too_big;
} Out;

static int out_write(void *userdata, unsigned char *buffer, size_t size) {
        Out *o = userdata;
        if (o->len + size + 1 > POD_YAML_MAX) {
                o->too_big = true;
                return 0;
        }
        if (o->len + size + 1 > o->allocated) {
                size_t a = MAX(o->allocated * 2, o->len + size + 1);
                char *d = realloc(o->data, a);
                if (!d)
                        return 0;
                o->data = d;
                o->allocated = a;
        }
        memcpy(o->data + o->len, buffer, size);
        o->len += size;
        o->data[o->len] = 0;
        return 1;
}

static bool word_in(const char *s, const char *const *words) {
        for (size_t i = 0; words[i]; i++)
                if (strcasecmp(s, words[i]) == 0)
                        return true;
        return false;
}

bool yaml_plain_is_ambiguous(const char *s) {
        /* YAML 1.1 bool (yaml.org/type/bool.html) and null (yaml.org/type/null.html), any case to be safe;
         * "=" is the value key type and "<<" the merge key. */
        static const char *const words[] = { "y",   "n",    "yes", "no", "true", "false", "on",
                                             "off", "null", "~",   "=",  "<<",   NULL };
        if (isempty(s) || word_in(s, words))
                return true;

        const char *p = s;
        if (*p == '+' || *p == '-')
                p++;
        if (word_in(p, (const char *const[]){ ".inf", ".nan", NULL }))
                return true;
        /* Numbers in every YAML 1.1/1.2 form (0755, 0x1F, 0o17, 0b101, 1_000, 1e3, .5, 12:30 sexagesimal)
         * and timestamps (2001-12-14) all start with a digit or a dot followed by a digit and use only these
         * characters; anything of that shape is quoted, which is never wrong. */
        if (!((*p >= '0' && *p <= '9') || (*p == '.' && p[1] >= '0' && p[1] <= '9')))
                return false;
        return p[strspn(p, "0123456789abcdefABCDEFxXoO_.:+-eEtTzZ ")] == 0;
}

typedef struct Emitter {
        yaml_emitter_t e;
        bool failed;
} Emitter;

static void emit(Emitter *em, yaml_event_t *ev) {
        if (em->failed)
                return;
        if (!yaml_emitter_emit(&em->e, ev))
                em->failed = true;
}

static void emit_scalar_style(Emitter *em, const char *s, yaml_scalar_style_t style) {
        yaml_event_t ev;
        if (em->failed)
                return;
        if (!yaml_scalar_event_initialize(&ev, NULL, (yaml_char_t *)YAML_STR_TAG, (yaml_char_t *)s,
                                          (int)strlen(s), 1, 1, style)) {
                em->failed = true;
                return;
        }
        emit(em, &ev);
}

static void emit_str(Emitter *em, const char *s) {
        emit_scalar_style(
            em, s, yaml_plain_is_ambiguous(s) ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_ANY_SCALAR_STYLE);
}

/* Ints and bools are written plain so they read back as ints and bools. */
static void emit_int(Emitter *em, long long v) {
        char b[32];
        snprintf(b, sizeof(b), "%lld", v);
        emit_scalar_style(em, b, YAML_PLAIN_SCALAR_STYLE);
}

static void emit_bool(Emitter *em, bool v) {
        emit_scalar_style(em, v ? "true" : "false", YAML_PLAIN_SCALAR_STYLE);
}

static void map_start(Emitter *em) {
        yaml_event_t ev;
        if (em->failed)
                return;
        if (!yaml_mapping_start_event_initialize(&ev, NULL, (yaml_char_t *)YAML_MAP_TAG, 1,
                                                 YAML_BLOCK_MAPPING_STYLE)) {
                em->failed = true;
                return;
        }
        emit(em, &ev);
}

static void map_end(Emitter *em) {
        yaml_event_t ev;
        if (em->failed)
                return;
        if (!yaml_mapping_end_event_initialize(&ev)) {
                em->failed = true;
                return;
        }
        emit(em, &ev);
}

static void seq_start(Emitter *em) {
        yaml_event_t ev;
        if (em->failed)
                return;
        if (!yaml_sequence_start_event_initialize(&ev, NULL, (yaml_char_t *)YAML_SEQ_TAG, 1,
                                                  YAML_BLOCK_SEQUENCE_STYLE)) {
                em->failed = true;
                return;
        }
        emit(em, &ev);
}

static void seq_end(Emitter *em) {
        yaml_event_t ev;
        if (em->failed)
                return;
        if (!yaml_sequence_end_event_initialize(&ev)) {
                em->failed = true;
                return;
        }
        emit(em, &ev);
}

static void key_str(Emitter *em, const char *key, const char *value) {
        if (!value)
                return;
        emit_str(em, key);
        emit_str(em, value);
}

static void key_int(Emitter *em, const char *key, long long value) {
        emit_str(em, key);
        emit_int(em, value);
}

/* Key/value lists come out sorted by key, so the bytes don't depend on how a builder filled them. */
static int cmp_pair(const void *a, const void *b) {
        return strcmp(**(char *const *const *)a, **(char *const *const *)b);
}

static void emit_kv_map(Emitter *em, char *const *l) {
        size_t n = strv_length(l) / 2;
        _cleanup_free_ char *const **pairs = new0(char *const *, n);
        if (!pairs) {
                em->failed = true;
                return;
        }
        for (size_t i = 0; i < n; i++)
                pairs[i] = &l[2 * i];
        qsort_safe(pairs, n, sizeof(pairs[0]), cmp_pair);
        map_start(em);
        for (size_t i = 0; i < n; i++)
                key_str(em, pairs[i][0], pairs[i][1]);
        map_end(em);
}

static void emit_strv(Emitter *em, char *const *l) {
        seq_start(em);
        STRV_FOREACH (s, (char **)l)
                emit_str(em, *s);
        seq_end(em);
}

static void emit_probe(Emitter *em, const char *key, const PodProbe *p) {
        if (!p->set)
                return;
        emit_str(em, key);
        map_start(em);
        if (p->exec_command) {
                emit_str(em, "exec");
                map_start(em);
                emit_str(em, "command");
                emit_strv(em, p->exec_command);
                map_end(em);
        }
        if (p->failure_threshold > 0)
                key_int(em, "failureThreshold", p->failure_threshold);
        if (!p->exec_command) {
                emit_str(em, "httpGet");
                map_start(em);
                key_str(em, "host", p->http_get.host);
                key_str(em, "path", p->http_get.path);
                key_int(em, "port", p->http_get.port);
                key_str(em, "scheme", p->http_get.scheme);
                map_end(em);
        }
        if (p->initial_delay_seconds > 0)
                key_int(em, "initialDelaySeconds", p->initial_delay_seconds);
        if (p->period_seconds > 0)
                key_int(em, "periodSeconds", p->period_seconds);
        if (p->timeout_seconds > 0)
                key_int(em, "timeoutSeconds", p->timeout_seconds);
        map_end(em);
}

static void emit_ports(Emitter *em, const PodContainer *c) {
        if (c->n_ports == 0)
                return;
        emit_str(em, "ports");
        seq_start(em);
        for (size_t i = 0; i < c->n_ports; i++) {
                const PodPort *p = &c->ports[i];
                map_start(em);
                key_int(em, "containerPort", p->container_port);
                if (p->host_port > 0)
                        key_int(em, "hostPort", p->host_port);
                key_str(em, "name", p->name);
                key_str(em, "protocol", p->protocol);
                map_end(em);
        }
        seq_end(em);
}

static void emit_env(Emitter *em, const PodContainer *c) {
        size_t n = strv_length(c->env) / 2, n_refs = strv_length(c->env_field_refs) / 2;
        if (n + n_refs == 0)
                return;
        emit_str(em, "env");
        seq_start(em);
        for (size_t i = 0; i < n; i++) {
                map_start(em);
                key_str(em, "name", c->env[2 * i]);
                key_str(em, "value", c->env[2 * i + 1]);
                map_end(em);
        }
        for (size_t i = 0; i < n_refs; i++) {
                map_start(em);
                key_str(em, "name", c->env_field_refs[2 * i]);
                emit_str(em, "valueFrom");
                map_start(em);
                emit_str(em, "fieldRef");
                map_start(em);
                key_str(em, "fieldPath", c->env_field_refs[2 * i + 1]);
                map_end(em);
                map_end(em);
                map_end(em);
        }
        seq_end(em);
}

static void emit_mounts(Emitter *em, const PodContainer *c) {
        if (c->n_volume_mounts == 0)
                return;
        emit_str(em, "volumeMounts");
        seq_start(em);
        for (size_t i = 0; i < c->n_volume_mounts; i++) {
                const PodVolumeMount *m = &c->volume_mounts[i];
                map_start(em);
                key_str(em, "mountPath", m->mount_path);
                key_str(em, "mountPropagation", m->propagation);
                key_str(em, "name", m->name);
                if (m->read_only) {
                        emit_str(em, "readOnly");
                        emit_bool(em, true);
                }
                map_end(em);
        }
        seq_end(em);
}

static void emit_container(Emitter *em, const PodContainer *c) {
        map_start(em);
        if (c->args) {
                emit_str(em, "args");
                emit_strv(em, c->args);
        }
        if (c->command) {
                emit_str(em, "command");
                emit_strv(em, c->command);
        }
        emit_env(em, c);
        key_str(em, "image", c->image);
        emit_probe(em, "livenessProbe", &c->liveness_probe);
        key_str(em, "name", c->name);
        emit_ports(em, c);
        emit_probe(em, "readinessProbe", &c->readiness_probe);
        emit_str(em, "resources");
        map_start(em);
        if (strv_length(c->requests) >= 2) {
                emit_str(em, "requests");
                emit_kv_map(em, c->requests);
        }
        map_end(em);
        if (c->privileged) {
                emit_str(em, "securityContext");
                map_start(em);
                emit_str(em, "privileged");
                emit_bool(em, true);
                map_end(em);
        }
        emit_probe(em, "startupProbe", &c->startup_probe);
        emit_mounts(em, c);
        map_end(em);
}

static void emit_tolerations(Emitter *em, const Pod *pod) {
        if (pod->n_tolerations == 0)
                return;
        emit_str(em, "tolerations");
        seq_start(em);
        for (size_t i = 0; i < pod->n_tolerations; i++) {
                const PodToleration *t = &pod->tolerations[i];
                map_start(em);
                key_str(em, "effect", t->effect);
                key_str(em, "key", t->key);
                key_str(em, "operator", t->operator);
                key_str(em, "value", t->value);
                map_end(em);
        }
        seq_end(em);
}

static void emit_object_volume(Emitter *em, const char *key, const char *name_key, const char *name,
                               int mode) {
        emit_str(em, key);
        map_start(em);
        if (mode > 0)
                key_int(em, "defaultMode", mode);
        key_str(em, name_key, name);
        map_end(em);
}

static void emit_volumes(Emitter *em, const Pod *pod) {
        if (pod->n_volumes == 0)
                return;
        emit_str(em, "volumes");
        seq_start(em);
        for (size_t i = 0; i < pod->n_volumes; i++) {
                const PodVolume *v = &pod->volumes[i];
                map_start(em);
                if (v->config_map_name)
                        emit_object_volume(em, "configMap", "name", v->config_map_name, v->default_mode);
                if (v->host_path) {
                        emit_str(em, "hostPath");
                        map_start(em);
                        key_str(em, "path", v->host_path);
                        key_str(em, "type", v->host_path_type);
                        map_end(em);
                }
                key_str(em, "name", v->name);
                if (v->secret_name)
                        emit_object_volume(em, "secret", "secretName", v->secret_name, v->default_mode);
                map_end(em);
        }
        seq_end(em);
}

/* affinity.podAntiAffinity, required: at most one such pod per value of the topology key. */
static void emit_affinity(Emitter *em, const Pod *pod) {
        if (strv_length(pod->anti_affinity_labels) < 2 || !pod->anti_affinity_topology_key)
                return;
        emit_str(em, "affinity");
        map_start(em);
        emit_str(em, "podAntiAffinity");
        map_start(em);
        emit_str(em, "requiredDuringSchedulingIgnoredDuringExecution");
        seq_start(em);
        map_start(em);
        emit_str(em, "labelSelector");
        map_start(em);
        emit_str(em, "matchLabels");
        emit_kv_map(em, pod->anti_affinity_labels);
        map_end(em);
        key_str(em, "topologyKey", pod->anti_affinity_topology_key);
        map_end(em);
        seq_end(em);
        map_end(em);
        map_end(em);
}

static void emit_pod_metadata(Emitter *em, const Pod *pod, bool template) {
        emit_str(em, "metadata");
        map_start(em);
        if (strv_length(pod->annotations) >= 2) {
                emit_str(em, "annotations");
                emit_kv_map(em, pod->annotations);
        }
        if (strv_length(pod->labels) >= 2) {
                emit_str(em, "labels");
                emit_kv_map(em, pod->labels);
        }
        if (!template) {
                key_str(em, "name", pod->name);
                key_str(em, "namespace", pod->namespace);
        }
        map_end(em);
}

/* Keys in alphabetical order, like the rest. */
static void emit_pod_spec(Emitter *em, const Pod *pod) {
        emit_str(em, "spec");
        map_start(em);
        emit_affinity(em, pod);
        emit_str(em, "containers");
        seq_start(em);
        for (size_t i = 0; i < pod->n_containers; i++)
                emit_container(em, &pod->containers[i]);
        seq_end(em);
        if (pod->host_network) {
                emit_str(em, "hostNetwork");
                emit_bool(em, true);
        }
        if (pod->host_pid) {
                emit_str(em, "hostPID");
                emit_bool(em, true);
        }
        if (pod->n_init_containers > 0) {
                emit_str(em, "initContainers");
                seq_start(em);
                for (size_t i = 0; i < pod->n_init_containers; i++)
                        emit_container(em, &pod->init_containers[i]);
                seq_end(em);
        }
        if (strv_length(pod->node_selector) >= 2) {
                emit_str(em, "nodeSelector");
                emit_kv_map(em, pod->node_selector);
        }
        key_str(em, "priorityClassName", pod->priority_class_name);
        key_str(em, "serviceAccountName", pod->service_account_name);
        emit_tolerations(em, pod);
        emit_volumes(em, pod);
        map_end(em);
}

static void emit_pod(Emitter *em, const Pod *pod) {
        map_start(em);
        key_str(em, "apiVersion", "v1");
        key_str(em, "kind", "Pod");
        emit_pod_metadata(em, pod, false);
        emit_pod_spec(em, pod);
        map_end(em);
}

static void emit_simple(Emitter *em, int (*init)(yaml_event_t *ev)) {
        yaml_event_t ev;
        if (em->failed)
                return;
        if (!init(&ev)) {
                em->failed = true;
                return;
        }
        emit(em, &ev);
}

static int stream_start(yaml_event_t *ev) {
        return yaml_stream_start_event_initialize(ev, YAML_UTF8_ENCODING);
}
static int stream_end(yaml_event_t *ev) {
        return yaml_stream_end_event_initialize(ev);
}
static int doc_start(yaml_event_t *ev) {
        return yaml_document_start_event_initialize(ev, NULL, NULL, NULL, 1);
}
static int doc_end(yaml_event_t *ev) {
        return yaml_document_end_event_initialize(ev, 1);
}

/* One document: body emits the top-level mapping of obj. */
static int emit_document(void (*body)(Emitter *em, const void *obj), const void *obj, char **ret) {
        Emitter em = {};
        Out out = {};

        if (!yaml_emitter_initialize(&em.e))
                return -ENOMEM;
        yaml_emitter_set_output(&em.e, out_write, &out);
        yaml_emitter_set_unicode(&em.e, 1);
        yaml_emitter_set_indent(&em.e, 2);
        yaml_emitter_set_width(&em.e, -1); /* never fold long flags */

        emit_simple(&em, stream_start);
        emit_simple(&em, doc_start);
        body(&em, obj);
        emit_simple(&em, doc_end);
        emit_simple(&em, stream_end);
        if (!em.failed && !yaml_emitter_flush(&em.e))
                em.failed = true;
        yaml_error_type_t error = em.e.error;
        yaml_emitter_delete(&em.e);

        if (em.failed || !out.data) {
                free(out.data);
                /* the emitter refuses only on OOM or on input it cannot write (invalid UTF-8) */
                return out.too_big ? PK_ETOOBIG : error == YAML_MEMORY_ERROR ? -ENOMEM : -EINVAL;
        }
        *ret = out.data;
        return 0;
}

static void emit_pod_body(Emitter *em, const void *obj) {
        emit_pod(em, obj);
}

int pod_to_yaml(const Pod *pod, char **ret) {
        if (!pod || pod->n_containers == 0)
                return -EINVAL;
        return emit_document(emit_pod_body, pod, ret);
}

static void emit_object_metadata(Emitter *em, const char *name, const char *namespace, char *const *labels,
                                 char *const *annotations) {
        emit_str(em, "metadata");
        map_start(em);
        if (strv_length(annotations) >= 2) {
                emit_str(em, "annotations");
                emit_kv_map(em, annotations);
        }
        if (strv_length(labels) >= 2) {
                emit_str(em, "labels");
                emit_kv_map(em, labels);
        }
        key_str(em, "name", name);
        key_str(em, "namespace", namespace);
        map_end(em);
}

static void emit_rolling_update(Emitter *em, const Workload *w) {
        emit_str(em, w->kind == WORKLOAD_DAEMON_SET ? "updateStrategy" : "strategy");
        map_start(em);
        emit_str(em, "rollingUpdate");
        map_start(em);
        if (w->kind == WORKLOAD_DEPLOYMENT)
                key_int(em, "maxSurge", 0);
        key_int(em, "maxUnavailable", w->max_unavailable);
        map_end(em);
        key_str(em, "type", "RollingUpdate");
        map_end(em);
}

static void emit_workload(Emitter *em, const void *obj) {
        const Workload *w = obj;
        map_start(em);
        key_str(em, "apiVersion", "apps/v1");
        key_str(em, "kind", workload_kind_to_string(w->kind));
        emit_object_metadata(em, w->name, w->namespace, w->labels, w->annotations);
        emit_str(em, "spec");
        map_start(em);
        if (w->kind == WORKLOAD_DEPLOYMENT)
                key_int(em, "replicas", w->replicas);
        emit_str(em, "selector");
        map_start(em);
        emit_str(em, "matchLabels");
        map_start(em);
        key_str(em, WORKLOAD_SELECTOR_LABEL, w->name);
        map_end(em);
        map_end(em);
        if (w->kind == WORKLOAD_DEPLOYMENT)
                emit_rolling_update(em, w);
        emit_str(em, "template");
        map_start(em);
        emit_pod_metadata(em, w->pod, true);
        emit_pod_spec(em, w->pod);
        map_end(em);
        if (w->kind == WORKLOAD_DAEMON_SET)
                emit_rolling_update(em, w);
        map_end(em);
        map_end(em);
}

static bool workload_selects_its_pods(const Workload *w) {
        char *const *l = w->pod->labels;
        for (size_t i = 0; l && l[i] && l[i + 1]; i += 2)
                if (streq(l[i], WORKLOAD_SELECTOR_LABEL))
                        return streq(l[i + 1], w->name);
        return false;
}

int workload_to_yaml(const Workload *w, char **ret) {
        if (!w || !w->pod || w->pod->n_containers == 0 || !workload_kind_to_string(w->kind) || !w->name ||
            !workload_selects_its_pods(w))
                return -EINVAL;
        return emit_document(emit_workload, w, ret);
}

static void emit_service_account(Emitter *em, const void *obj) {
        const KubeObjectRef *o = obj;
        map_start(em);
        key_str(em, "apiVersion", "v1");
        key_str(em, "kind", "ServiceAccount");
        emit_object_metadata(em, o->name, o->namespace, o->labels, NULL);
        map_end(em);
}

int service_account_to_yaml(const KubeObjectRef *sa, char **ret) {
        if (!sa || !sa->name || !sa->namespace)
                return -EINVAL;
        return emit_document(emit_service_account, sa, ret);
}

typedef struct Binding {
        const KubeObjectRef *binding;
        const char *cluster_role;
        const KubeObjectRef *service_account;
} Binding;

static void emit_binding(Emitter *em, const void *obj) {
        const Binding *b = obj;
        map_start(em);
        key_str(em, "apiVersion", "rbac.authorization.k8s.io/v1");
        key_str(em, "kind", "ClusterRoleBinding");
        emit_object_metadata(em, b->binding->name, NULL, b->binding->labels, NULL);
        emit_str(em, "roleRef");
        map_start(em);
        key_str(em, "apiGroup", "rbac.authorization.k8s.io");
        key_str(em, "kind", "ClusterRole");
        key_str(em, "name", b->cluster_role);
        map_end(em);
        emit_str(em, "subjects");
        seq_start(em);
        map_start(em);
        key_str(em, "kind", "ServiceAccount");
        key_str(em, "name", b->service_account->name);
        key_str(em, "namespace", b->service_account->namespace);
        map_end(em);
        seq_end(em);
        map_end(em);
}

int cluster_role_binding_to_yaml(const KubeObjectRef *binding, const char *cluster_role,
                                 const KubeObjectRef *service_account, char **ret) {
        if (!binding || !binding->name || !cluster_role || !service_account || !service_account->name ||
            !service_account->namespace)
                return -EINVAL;
        Binding b = { binding, cluster_role, service_account };
        return emit_document(emit_binding, &b, ret);
}

typedef struct ConfigMapDoc {
        const KubeObjectRef *ref;
        char *const *data;
} ConfigMapDoc;

static void emit_config_map(Emitter *em, const void *obj) {
        const ConfigMapDoc *c = obj;
        map_start(em);
        key_str(em, "apiVersion", "v1");
        emit_str(em, "data");
        emit_kv_map(em, c->data);
        key_str(em, "kind", "ConfigMap");
        emit_object_metadata(em, c->ref->name, c->ref->namespace, c->ref->labels, c->ref->annotations);
        map_end(em);
}

int config_map_to_yaml(const KubeObjectRef *cm, char *const *data, char **ret) {
        if (!cm || !cm->name || !cm->namespace || strv_length(data) % 2 != 0)
                return -EINVAL;
        ConfigMapDoc c = { cm, data };
        return emit_document(emit_config_map, &c, ret);
}

/* A configuration document: every mapping's keys sorted, so the bytes depend only on its content. */
static int cmp_doc(const void *a, const void *b) {
        return strcmp((*(ConfigDoc *const *)a)->key, (*(ConfigDoc *const *)b)->key);
}

static void emit_config_doc(Emitter *em, const void *obj) {
        const ConfigDoc *d = obj;
        switch (d->kind) {
        case CONFIG_DOC_MAP: {
                _cleanup_free_ ConfigDoc **sorted = new0(ConfigDoc *, d->n_children);
                if (!sorted) {
                        em->failed = true;
                        return;
                }
                if (d->n_children > 0)
                        memcpy(sorted, d->children, d->n_children * sizeof(ConfigDoc *));
                qsort_safe(sorted, d->n_children, sizeof(ConfigDoc *), cmp_doc);
                map_start(em);
                for (size_t i = 0; i < d->n_children; i++) {
                        emit_str(em, sorted[i]->key);
                        emit_config_doc(em, sorted[i]);
                }
                map_end(em);
                return;
        }
        case CONFIG_DOC_STRING:
                emit_str(em, d->value);
                return;
        case CONFIG_DOC_INT:
        case CONFIG_DOC_BOOL: /* plain: they read back as ints and bools */
                emit_scalar_style(em, d->value, YAML_PLAIN_SCALAR_STYLE);
                return;
        case CONFIG_DOC_LIST:
                emit_strv(em, d->list);
                return;
        default:
                em->failed = true;
        }
}

int config_doc_to_yaml(const ConfigDoc *doc, char **ret) {
        if (!doc || doc->kind != CONFIG_DOC_MAP)
                return -EINVAL;
        return emit_document(emit_config_doc, doc, ret);
}
