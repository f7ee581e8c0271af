/* SPDX-License-Identifier: Apache-2.0 */
/* spec.kubernetesVersion against the Kubernetes gates of the field tables: a key the user set whose flag the
 * chosen version does not have, or a feature gate, admission plugin or proxy mode it does not know, or a
 * setting beside the operator's own configuration file that the component would take only from that file, is
 * a spec error at the key's position. The binaries would refuse to start on it ("unknown flag",
 * "unrecognized feature gate"), and on a master that is a control plane that never comes up. Defaults are
 * not checked here: the flag builder leaves out a defaulted flag the version lacks. */
#include <string.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "spec/spec-check.h"

typedef struct GateContext {
        unsigned minor;
        const char *version; /* as the spec has it, for messages */
        SpecErrors *errs;
} GateContext;

static char *qualify(const char *path, const char *name) {
        return isempty(path) ? strdup(name) : strjoin(path, ".", name);
}

static void check_value(const Field *f, const YamlNode *v, const char *name, const GateContext *ctx) {
        char b[SPEC_ECHO_MAX], g[KUBE_GATE_TEXT_MAX];
        KubeGate gate = {};

        if (!v || v->kind != YAML_TREE_SCALAR || yaml_tree_is_null(v))
                return; /* a shape error, reported by the loader */
        switch (kube_value_check(f->k8s_values, v->value, ctx->minor, &gate)) {
        case KUBE_VALUE_OUT_OF_RANGE:
                spec_errors_add_at(
                    ctx->errs, v, "%s: %s %s is not supported by Kubernetes %s (it exists %s)", name,
                    f->k8s_values->what, spec_echo(b, v->value), ctx->version, kube_gate_text(g, gate));
                break;
        case KUBE_VALUE_UNKNOWN:
                spec_errors_add_at(ctx->errs, v, "%s: %s %s is not known to Kubernetes %s", name,
                                   f->k8s_values->what, spec_echo(b, v->value), ctx->version);
                break;
        default:
                break;
        }
}

/* Each element of a list, each key of a map, or the scalar itself (an enum). */
static void check_values(const Field *f, const YamlNode *v, const char *name, const GateContext *ctx) {
        if (v->kind == YAML_TREE_SEQUENCE)
                for (size_t i = 0; i < v->n_items; i++)
                        check_value(f, v->items[i], name, ctx);
        else if (v->kind == YAML_TREE_MAPPING)
                for (size_t i = 0; i < v->n_pairs; i++)
                        check_value(f, v->pairs[i].key, name, ctx);
        else
                check_value(f, v, name, ctx);
}

/* The operator's own configuration file of the component (kubeScheduler.config), if the spec names one. */
static const Field *operator_file(const Field *table, const YamlNode *map) {
        for (const Field *f = table; f->name; f++)
                if ((f->flags & FIELD_OPERATOR_FILE) && yaml_tree_get(map, f->name) &&
                    !yaml_tree_is_null(yaml_tree_get(map, f->name)))
                        return f;
        return NULL;
}

/* A component given its own configuration file reads every setting that file has from it, and ignores the
 * flags of those settings (kube-scheduler keeps only the flags its file lacks: checked with 1.20.2, whose
 * --leader-elect, --kubeconfig, --profiling and --port have no effect beside --config). protokube cannot
 * write into the operator's file, so such a setting in the spec would be silently lost. */
static int check_beside_operator_file(const Field *table, const YamlNode *map, const char *path,
                                      const GateContext *ctx) {
        const Field *own = operator_file(table, map);
        if (!own)
                return 0;
        _cleanup_free_ char *own_name = qualify(path, own->name);
        if (!own_name)
                return -ENOMEM;
        for (const Field *f = table; f->name; f++) {
                const YamlNode *v = yaml_tree_get(map, f->name);
                if (!v || yaml_tree_is_null(v) || !f->file_field ||
                    !kube_gate_allows(f->file_k8s, ctx->minor))
                        continue;
                _cleanup_free_ char *name = qualify(path, f->name);
                if (!name)
                        return -ENOMEM;
                spec_errors_add_at(
                    ctx->errs, v,
                    "%s: with %s set, Kubernetes %s ignores --%s and reads %s from that file: set it there",
                    name, own_name, ctx->version, f->flag ?: f->name, f->file_field);
        }
        return 0;
}

static int check_table(const Field *table, const YamlNode *map, const char *path, const GateContext *ctx) {
        char g[KUBE_GATE_TEXT_MAX];
        int r = check_beside_operator_file(table, map, path, ctx);
        if (r < 0)
                return r;

        for (const Field *f = table; f->name; f++) {
                const YamlNode *v = yaml_tree_get(map, f->name);
                if (!v || yaml_tree_is_null(v))
                        continue;
                _cleanup_free_ char *name = qualify(path, f->name);
                if (!name)
                        return -ENOMEM;
                if (f->type == FIELD_STRUCT && f->sub) {
                        r = check_table(f->sub, v, name, ctx);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (f->file_instead && kube_gate_allows(f->file_instead_k8s, ctx->minor))
                        spec_errors_add_at(
                            ctx->errs, v,
                            "%s: beside its configuration file Kubernetes %s ignores --%s: set "
                            "%s.%s (the file's %s) instead",
                            name, ctx->version, f->flag ?: f->name, path, f->file_instead, f->file_instead);
                else if (!kube_gate_allows(f->k8s, ctx->minor))
                        spec_errors_add_at(
                            ctx->errs, v,
                            "%s: not supported by Kubernetes %s (--%s exists in Kubernetes %s)", name,
                            ctx->version, f->flag ?: f->name, kube_gate_text(g, f->k8s));
                else if (f->k8s_values)
                        check_values(f, v, name, ctx);
        }
        return 0;
}

int spec_check_kube_gates(const ClusterSpec *s, const YamlNode *root, SpecErrors *errs) {
        KubeVersion v;

        /* A missing, malformed or unsupported version is reported by its own validator. */
        if (kube_version_parse(s->kubernetes_version, &v) < 0 || !kube_version_supported(&v))
                return 0;
        GateContext ctx = { .minor = v.minor, .version = s->kubernetes_version, .errs = errs };
        return check_table(cluster_spec_fields(), root, "", &ctx);
}
