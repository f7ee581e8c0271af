/* SPDX-License-Identifier: Apache-2.0 */
#include "spec/field-load.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/parse-util.h"
#include "basic/string-util.h"
#include "basic/strv.h"

/* ---- error collection ---- */

static void spec_errors_addv(SpecErrors *e, unsigned line, unsigned column, const char *format, va_list ap)
    _printf_(4, 0);
static void spec_errors_addv(SpecErrors *e, unsigned line, unsigned column, const char *format, va_list ap) {
        char *m = NULL;

        if (e->n >= SPEC_ERRORS_MAX) {
                e->truncated = true;
                return;
        }
        if (e->n == 0 || (e->n & (e->n - 1)) == 0) {
                SpecError *p = reallocarray(e->items, e->n ? e->n * 2 : 8, sizeof(SpecError));
                if (!p) {
                        e->oom = true;
                        return;
                }
                e->items = p;
        }
        if (vasprintf(&m, format, ap) < 0) {
                e->oom = true;
                return;
        }
        e->items[e->n] = (SpecError){ .line = line, .column = column, .seq = e->n, .message = m };
        e->n++;
}

void spec_errors_add(SpecErrors *e, unsigned line, unsigned column, const char *format, ...) {
        va_list ap;
        va_start(ap, format);
        spec_errors_addv(e, line, column, format, ap);
        va_end(ap);
}

void spec_errors_add_at(SpecErrors *e, const YamlNode *node, const char *format, ...) {
        va_list ap;
        va_start(ap, format);
        spec_errors_addv(e, node ? node->line : 1, node ? node->column : 1, format, ap);
        va_end(ap);
}

void spec_errors_clear(SpecErrors *e) {
        for (size_t i = 0; i < e->n; i++)
                free(e->items[i].message);
        free(e->items);
        *e = (SpecErrors){};
}

static int spec_error_compare(const void *x, const void *y) {
        const SpecError *a = x, *b = y;
        if (a->line != b->line)
                return a->line < b->line ? -1 : 1;
        if (a->column != b->column)
                return a->column < b->column ? -1 : 1;
        return a->seq < b->seq ? -1 : a->seq > b->seq;
}

int spec_errors_finish(SpecErrors *e, const char *file, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        bool oom = e->oom;

        if (e->n > 0)
                qsort_safe(e->items, e->n, sizeof(SpecError), spec_error_compare);
        for (size_t i = 0; i < e->n && !oom; i++) {
                char *s = strprintf("%s:%u:%u: %s", file, e->items[i].line, e->items[i].column,
                                    e->items[i].message);
                if (!s || strv_push(&l, s) < 0) {
                        free(s);
                        oom = true;
                }
        }
        if (!oom && e->truncated) {
                char *s = strprintf("%s: too many errors, stopped after %u", file, SPEC_ERRORS_MAX);
                if (!s || strv_push(&l, s) < 0) {
                        free(s);
                        oom = true;
                }
        }
        spec_errors_clear(e);
        if (oom)
                return -ENOMEM;
        *ret = TAKE_PTR(l);
        return 0;
}

const char *spec_echo(char buf[static SPEC_ECHO_MAX], const char *s) {
        size_t i, j = 0;

        /* quote + up to 64 characters + "..." + quote + NUL fits in SPEC_ECHO_MAX */
        buf[j++] = '\'';
        for (i = 0; s[i] && i < 64; i++)
                buf[j++] = ((unsigned char)s[i] < ' ' || s[i] == 0x7f) ? '?' : s[i];
        if (s[i]) {
                memcpy(buf + j, "...", 3);
                j += 3;
        }
        buf[j++] = '\'';
        buf[j] = 0;
        return buf;
}

/* ---- scalars ---- */

static char *qualify(const char *path, const char *name) {
        return isempty(path) ? strdup(name) : strjoin(path, ".", name);
}

static bool scalar_is_plain_integer(const char *s) {
        if (*s == '-')
                s++;
        return *s && strspn(s, "0123456789") == strlen(s);
}

/* For "expected X, got Y": a scalar shows its value, other nodes their kind. */
static const char *describe(const YamlNode *v, char buf[static SPEC_ECHO_MAX]) {
        if (v->kind == YAML_TREE_SCALAR && !yaml_tree_is_null(v))
                return spec_echo(buf, v->value);
        return yaml_tree_describe(v);
}

static int load_string(const Field *f, void *p, const YamlNode *v, const char *name, SpecErrors *errs) {
        char b[SPEC_ECHO_MAX];
        char *s;

        if (v->kind != YAML_TREE_SCALAR) {
                spec_errors_add_at(errs, v, "%s: expected a string, got %s", name, yaml_tree_describe(v));
                return 0;
        }
        if (memchr(v->value, 0, v->len) || string_has_cc(v->value)) {
                spec_errors_add_at(errs, v, "%s: %s contains control characters", name,
                                   spec_echo(b, v->value));
                return 0;
        }
        s = strdup(v->value);
        if (!s)
                return -ENOMEM;
        free(*(char **)p);
        *(char **)p = s;
        return 1;
}

static int load_bool(const Field *f, void *p, const YamlNode *v, const char *name, SpecErrors *errs) {
        char b[SPEC_ECHO_MAX];

        /* Only plain true/false: YAML 1.1's yes/no/on/off surprise people (the "Norway problem"). */
        if (v->kind != YAML_TREE_SCALAR || yaml_tree_is_string(v) ||
            (!streq(v->value, "true") && !streq(v->value, "false"))) {
                if (v->kind == YAML_TREE_SCALAR)
                        spec_errors_add_at(errs, v, "%s: expected true or false, got %s%s", name,
                                           yaml_tree_is_string(v) ? "a quoted string " : "",
                                           spec_echo(b, v->value));
                else
                        spec_errors_add_at(errs, v, "%s: expected true or false, got %s", name,
                                           yaml_tree_describe(v));
                return 0;
        }
        *(OptBool *)p = (OptBool){ .set = true, .value = streq(v->value, "true") };
        return 1;
}

static int load_int(const Field *f, void *p, const YamlNode *v, const char *name, SpecErrors *errs) {
        char b[SPEC_ECHO_MAX];
        int64_t i;

        if (v->kind != YAML_TREE_SCALAR) {
                spec_errors_add_at(errs, v, "%s: expected an integer, got %s", name, yaml_tree_describe(v));
                return 0;
        }
        if (yaml_tree_is_string(v) || !scalar_is_plain_integer(v->value)) {
                spec_errors_add_at(errs, v, "%s: expected an integer, got %s%s", name,
                                   yaml_tree_is_string(v) ? "a quoted string " : "", spec_echo(b, v->value));
                return 0;
        }
        if (safe_atoi64(v->value, &i) < 0 || (f->min < f->max && (i < f->min || i > f->max))) {
                if (f->min < f->max)
                        spec_errors_add_at(errs, v, "%s: %s is out of range %lld..%lld", name,
                                           spec_echo(b, v->value), (long long)f->min, (long long)f->max);
                else
                        spec_errors_add_at(errs, v, "%s: %s is out of range", name, spec_echo(b, v->value));
                return 0;
        }
        *(OptInt *)p = (OptInt){ .set = true, .value = i };
        return 1;
}

static int load_duration(const Field *f, void *p, const YamlNode *v, const char *name, SpecErrors *errs) {
        char b[SPEC_ECHO_MAX];
        uint64_t u;

        if (v->kind != YAML_TREE_SCALAR) {
                spec_errors_add_at(errs, v, "%s: expected a duration, got %s", name, yaml_tree_describe(v));
                return 0;
        }
        if (parse_duration_usec(v->value, &u) < 0 || u == USEC_INFINITY) {
                spec_errors_add_at(errs, v, "%s: invalid duration %s (Go form, e.g. 10s, 1m30s, 250ms)",
                                   name, spec_echo(b, v->value));
                return 0;
        }
        *(OptDuration *)p = (OptDuration){ .set = true, .value = u };
        return 1;
}

static int load_enum(const Field *f, void *p, const YamlNode *v, const char *name, SpecErrors *errs) {
        _cleanup_free_ char *allowed = NULL;
        char b[SPEC_ECHO_MAX];

        if (v->kind == YAML_TREE_SCALAR && f->enum_values)
                for (int i = 0; f->enum_values[i]; i++)
                        if (streq(v->value, f->enum_values[i])) {
                                *(OptEnum *)p = (OptEnum){ .set = true, .value = i };
                                return 1;
                        }
        allowed = strv_join((char **)f->enum_values, ", ");
        if (!allowed)
                return -ENOMEM;
        if (v->kind != YAML_TREE_SCALAR)
                spec_errors_add_at(errs, v, "%s: expected one of %s, got %s", name, allowed,
                                   yaml_tree_describe(v));
        else
                spec_errors_add_at(errs, v, "%s: %s is not one of %s", name, spec_echo(b, v->value),
                                   allowed);
        return 0;
}

static int load_strv(const Field *f, void *p, const YamlNode *v, const char *name, SpecErrors *errs) {
        _cleanup_strv_free_ char **l = NULL;
        char b[SPEC_ECHO_MAX];

        if (v->kind != YAML_TREE_SEQUENCE) {
                spec_errors_add_at(errs, v, "%s: expected a sequence of strings, got %s", name,
                                   describe(v, b));
                return 0;
        }
        /* Sized up front: appending one by one is quadratic on a hostile 100,000-item list. */
        l = new0(char *, v->n_items + 1);
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < v->n_items; i++) {
                _cleanup_free_ char *item_name = strprintf("%s[%zu]", name, i);
                if (!item_name)
                        return -ENOMEM;
                int r = load_string(f, &l[i], v->items[i], item_name, errs);
                if (r <= 0)
                        return r;
        }
        strv_free(*(char ***)p);
        *(char ***)p = TAKE_PTR(l);
        return 1;
}

static int pair_compare(const void *x, const void *y) {
        const YamlPair *const *a = x, *const *b = y;
        return strcmp((*a)->key->value, (*b)->key->value);
}

static int load_map(const Field *f, void *p, const YamlNode *v, const char *name, SpecErrors *errs) {
        _cleanup_free_ const YamlPair **sorted = NULL;
        _cleanup_strv_free_ char **l = NULL;
        char b[SPEC_ECHO_MAX];
        size_t n = 0;
        bool ok = true;

        if (v->kind != YAML_TREE_MAPPING) {
                spec_errors_add_at(errs, v, "%s: expected a mapping of strings, got %s", name,
                                   describe(v, b));
                return 0;
        }
        sorted = new0(const YamlPair *, v->n_pairs);
        if (!sorted)
                return -ENOMEM;
        for (size_t i = 0; i < v->n_pairs; i++) {
                const YamlPair *pr = &v->pairs[i];
                if (pr->key->kind != YAML_TREE_SCALAR || pr->value->kind != YAML_TREE_SCALAR) {
                        const YamlNode *bad = pr->key->kind != YAML_TREE_SCALAR ? pr->key : pr->value;
                        spec_errors_add_at(errs, bad, "%s: expected string keys and values, got %s", name,
                                           yaml_tree_describe(bad));
                        ok = false;
                } else if (pr->first) {
                        spec_errors_add_at(errs, pr->key, "%s: duplicate key %s (first at %u:%u)", name,
                                           spec_echo(b, pr->key->value), pr->first->key->line,
                                           pr->first->key->column);
                        ok = false;
                } else if (memchr(pr->key->value, 0, pr->key->len) || string_has_cc(pr->key->value) ||
                           memchr(pr->value->value, 0, pr->value->len) || string_has_cc(pr->value->value)) {
                        spec_errors_add_at(errs, pr->key, "%s: %s contains control characters", name,
                                           spec_echo(b, pr->key->value));
                        ok = false;
                } else
                        sorted[n++] = pr;
        }
        if (!ok)
                return 0;
        qsort_safe(sorted, n, sizeof(YamlPair *), pair_compare);
        l = new0(char *, 2 * n + 1);
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const char *value = yaml_tree_is_null(sorted[i]->value) ? "" : sorted[i]->value->value;
                l[2 * i] = strdup(sorted[i]->key->value);
                if (!l[2 * i])
                        return -ENOMEM;
                l[2 * i + 1] = strdup(value);
                if (!l[2 * i + 1])
                        return -ENOMEM;
        }
        strv_free(*(char ***)p);
        *(char ***)p = TAKE_PTR(l);
        return 1;
}

/* ---- objects ---- */

static int load_struct_list(const Field *f, void *p, const YamlNode *v, const char *name, SpecErrors *errs) {
        StructList *list = p;
        char b[SPEC_ECHO_MAX];
        int r = 0;

        if (v->kind != YAML_TREE_SEQUENCE) {
                spec_errors_add_at(errs, v, "%s: expected a sequence of mappings, got %s", name,
                                   describe(v, b));
                return 0;
        }
        if (list->items) /* cannot happen (duplicate keys are skipped), but never leak */
                return 0;
        list->items = calloc(v->n_items ?: 1, f->elem_size);
        if (!list->items)
                return -ENOMEM;
        list->n = v->n_items;
        for (size_t i = 0; i < v->n_items && r >= 0 && !spec_errors_full(errs); i++) {
                const YamlNode *it = v->items[i];
                _cleanup_free_ char *item_name = strprintf("%s[%zu]", name, i);
                if (!item_name)
                        return -ENOMEM;
                if (it->kind != YAML_TREE_MAPPING)
                        spec_errors_add_at(errs, it, "%s: expected a mapping, got %s", item_name,
                                           describe(it, b));
                r = field_table_load(f->sub, (char *)list->items + i * f->elem_size,
                                     it->kind == YAML_TREE_MAPPING ? it : NULL, item_name, errs);
        }
        return r < 0 ? r : 1;
}

static int load_value(const Field *f, void *obj, const YamlNode *v, const char *name, SpecErrors *errs) {
        void *p = FIELD_PTR(obj, f);
        char b[SPEC_ECHO_MAX];

        switch (f->type) {
        case FIELD_STRING:
                return load_string(f, p, v, name, errs);
        case FIELD_BOOL:
                return load_bool(f, p, v, name, errs);
        case FIELD_INT:
                return load_int(f, p, v, name, errs);
        case FIELD_DURATION:
                return load_duration(f, p, v, name, errs);
        case FIELD_STRV:
                return load_strv(f, p, v, name, errs);
        case FIELD_MAP:
                return load_map(f, p, v, name, errs);
        case FIELD_ENUM:
                return load_enum(f, p, v, name, errs);
        case FIELD_STRUCT:
                if (v->kind != YAML_TREE_MAPPING) {
                        spec_errors_add_at(errs, v, "%s: expected a mapping, got %s", name, describe(v, b));
                        return field_table_load(f->sub, p, NULL, name, errs);
                }
                return field_table_load(f->sub, p, v, name, errs) < 0 ? -ENOMEM : 1;
        case FIELD_STRUCT_LIST:
                return load_struct_list(f, p, v, name, errs);
        default:
                spec_errors_add_at(errs, v, "%s: field has an unknown type (a bug)", name);
                return 0;
        }
}

static int run_validate(const Field *f, void *obj, const YamlNode *v, const char *name, SpecErrors *errs) {
        _cleanup_free_ char *m = NULL;

        if (!f->validate || f->validate(FIELD_PTR(obj, f), &m) >= 0)
                return 0;
        spec_errors_add_at(errs, v, "%s: %s", name, m ?: "invalid value");
        return 0;
}

static const Field *table_find(const Field *table, const char *key) {
        for (const Field *f = table; f->name; f++)
                if (streq(f->name, key))
                        return f;
        return NULL;
}

static void report_unknown(const Field *table, const YamlPair *pr, const char *path, SpecErrors *errs) {
        const char *key = pr->key->value, *best = NULL;
        size_t best_d = SIZE_MAX, len = strlen(key);
        char b[SPEC_ECHO_MAX];

        for (const Field *f = table; f->name; f++) {
                size_t d = string_edit_distance(key, f->name);
                if (d < best_d) {
                        best_d = d;
                        best = f->name;
                }
        }
        /* Close enough to be a typo: two edits, or a third of the key (kubeApiServer -> kubeAPIServer). */
        bool suggest = best && (best_d <= 2 || (best_d <= 4 && best_d * 3 <= len));
        if (suggest)
                spec_errors_add_at(errs, pr->key, "%s%sunknown key %s, did you mean '%s'?", strempty(path),
                                   isempty(path) ? "" : ": ", spec_echo(b, key), best);
        else
                spec_errors_add_at(errs, pr->key, "%s%sunknown key %s", strempty(path),
                                   isempty(path) ? "" : ": ", spec_echo(b, key));
}

static int load_pair(const Field *table, void *obj, const YamlPair *pr, const char *path, bool *seen,
                     SpecErrors *errs) {
        char b[SPEC_ECHO_MAX];

        if (pr->key->kind != YAML_TREE_SCALAR) {
                spec_errors_add_at(errs, pr->key, "%s%skeys must be strings, got %s", strempty(path),
                                   isempty(path) ? "" : ": ", yaml_tree_describe(pr->key));
                return 0;
        }
        const Field *f = table_find(table, pr->key->value);
        if (!f) {
                report_unknown(table, pr, path, errs);
                return 0;
        }
        _cleanup_free_ char *name = qualify(path, f->name);
        if (!name)
                return -ENOMEM;
        if (pr->first) {
                spec_errors_add_at(errs, pr->key, "%s: duplicate key (first at %u:%u)", name,
                                   pr->first->key->line, pr->first->key->column);
                return 0;
        }
        if (yaml_tree_is_null(pr->value))
                return 0; /* "key:" with nothing, or null: as if absent, so the default applies */
        static char *const known_tags[] = { "str", "int", "bool", "map", "seq", "!", NULL };
        const char *tag = yaml_tree_short_tag(pr->value);
        if (tag && !strv_contains(known_tags, tag)) {
                spec_errors_add_at(errs, pr->value, "%s: unsupported tag %s", name, spec_echo(b, tag));
                return 0;
        }
        seen[f - table] = true;
        int r = load_value(f, obj, pr->value, name, errs);
        if (r > 0)
                r = run_validate(f, obj, pr->value, name, errs);
        return r < 0 ? r : 0;
}

static int apply_absent(const Field *f, void *obj, const YamlNode *map, const char *path, SpecErrors *errs) {
        _cleanup_free_ char *name = qualify(path, f->name);

        if (!name)
                return -ENOMEM;
        if (map && (f->flags & FIELD_REQUIRED)) {
                spec_errors_add_at(errs, map, "%s: missing required key", name);
                return 0;
        }
        if (f->type == FIELD_STRUCT)
                return field_table_load(f->sub, FIELD_PTR(obj, f), NULL, name, errs);
        if (!f->default_value)
                return 0;
        /* The default is parsed exactly as if the user had written it, at the parent's position. */
        YamlNode v = {
                .kind = YAML_TREE_SCALAR,
                .line = map ? map->line : 1,
                .column = map ? map->column : 1,
                .value = (char *)f->default_value,
                .len = strlen(f->default_value),
                .style = YAML_TREE_PLAIN,
        };
        int r = load_value(f, obj, &v, name, errs);
        return r < 0 ? r : 0;
}

int field_table_load(const Field *table, void *obj, const YamlNode *map, const char *path,
                     SpecErrors *errs) {
        _cleanup_free_ bool *seen = NULL;
        size_t n_fields = 0;
        int r;

        while (table[n_fields].name)
                n_fields++;
        seen = new0(bool, n_fields);
        if (!seen)
                return -ENOMEM;
        if (map && map->kind == YAML_TREE_MAPPING)
                for (size_t i = 0; i < map->n_pairs && !spec_errors_full(errs); i++) {
                        r = load_pair(table, obj, &map->pairs[i], path, seen, errs);
                        if (r < 0)
                                return r;
                }
        for (size_t i = 0; i < n_fields; i++) {
                if (seen[i])
                        continue;
                r = apply_absent(&table[i], obj, map, path, errs);
                if (r < 0)
                        return r;
        }
        return 0;
}

void field_table_free(const Field *table, void *obj) {
        for (const Field *f = table; f->name; f++) {
                void *p = FIELD_PTR(obj, f);
                switch (f->type) {
                case FIELD_STRING:
                        free(*(char **)p);
                        *(char **)p = NULL;
                        break;
                case FIELD_STRV:
                case FIELD_MAP:
                        *(char ***)p = strv_free(*(char ***)p);
                        break;
                case FIELD_STRUCT:
                        field_table_free(f->sub, p);
                        break;
                case FIELD_STRUCT_LIST: {
                        StructList *l = p;
                        for (size_t i = 0; l->items && i < l->n; i++)
                                field_table_free(f->sub, (char *)l->items + i * f->elem_size);
                        free(l->items);
                        *l = (StructList){};
                        break;
                }
                default:
                        break;
                }
        }
}
