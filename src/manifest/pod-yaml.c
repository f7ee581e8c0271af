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
        qsort(pairs, n, sizeof(pairs[0]), cmp_pair);
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
        if (p->failure_threshold > 0)
                key_int(em, "failureThreshold", p->failure_threshold);
        emit_str(em, "httpGet");
        map_start(em);
        key_str(em, "host", p->http_get.host);
        key_str(em, "path", p->http_get.path);
        key_int(em, "port", p->http_get.port);
        key_str(em, "scheme", p->http_get.scheme);
        map_end(em);
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

static void emit_env(Emitter *em, char *const *env) {
        size_t n = strv_length(env) / 2;
        if (n == 0)
                return;
        emit_str(em, "env");
        seq_start(em);
        for (size_t i = 0; i < n; i++) {
                map_start(em);
                key_str(em, "name", env[2 * i]);
                key_str(em, "value", env[2 * i + 1]);
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
        if (c->command) {
                emit_str(em, "command");
                emit_strv(em, c->command);
        }
        emit_env(em, c->env);
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

static void emit_volumes(Emitter *em, const Pod *pod) {
        if (pod->n_volumes == 0)
                return;
        emit_str(em, "volumes");
        seq_start(em);
        for (size_t i = 0; i < pod->n_volumes; i++) {
                const PodVolume *v = &pod->volumes[i];
                map_start(em);
                emit_str(em, "hostPath");
                map_start(em);
                key_str(em, "path", v->host_path);
                key_str(em, "type", v->host_path_type);
                map_end(em);
                key_str(em, "name", v->name);
                map_end(em);
        }
        seq_end(em);
}

static void emit_pod(Emitter *em, const Pod *pod) {
        map_start(em);
        key_str(em, "apiVersion", "v1");
        key_str(em, "kind", "Pod");
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
        key_str(em, "name", pod->name);
        key_str(em, "namespace", pod->namespace);
        map_end(em);

        emit_str(em, "spec");
        map_start(em);
        emit_str(em, "containers");
        seq_start(em);
        for (size_t i = 0; i < pod->n_containers; i++)
                emit_container(em, &pod->containers[i]);
        seq_end(em);
        if (pod->host_network) {
                emit_str(em, "hostNetwork");
                emit_bool(em, true);
        }
        key_str(em, "priorityClassName", pod->priority_class_name);
        emit_tolerations(em, pod);
        emit_volumes(em, pod);
        map_end(em);
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

int pod_to_yaml(const Pod *pod, char **ret) {
        Emitter em = {};
        Out out = {};

        if (!pod || pod->n_containers == 0)
                return -EINVAL;
        if (!yaml_emitter_initialize(&em.e))
                return -ENOMEM;
        yaml_emitter_set_output(&em.e, out_write, &out);
        yaml_emitter_set_unicode(&em.e, 1);
        yaml_emitter_set_indent(&em.e, 2);
        yaml_emitter_set_width(&em.e, -1); /* never fold long flags */

        emit_simple(&em, stream_start);
        emit_simple(&em, doc_start);
        emit_pod(&em, pod);
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
