/* SPDX-License-Identifier: Apache-2.0 */
#include "components/flags.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/parse-util.h"
#include "basic/string-util.h"
#include "basic/strv.h"

typedef struct KeyValue {
        const char *key;
        const char *value;
} KeyValue;

static int cmp_key_value(const void *a, const void *b) {
        return strcmp(((const KeyValue *)a)->key, ((const KeyValue *)b)->key);
}

/* "k1=v1,k2=v2" from an alternating key/value list; sorted by key unless the field says otherwise. */
static int render_map(const Field *f, char *const *map, char **ret) {
        size_t n = strv_length(map);
        if (n % 2 != 0)
                return -EINVAL;
        _cleanup_free_ KeyValue *kv = new0(KeyValue, n / 2);
        if (!kv)
                return -ENOMEM;
        for (size_t i = 0; i < n / 2; i++)
                kv[i] = (KeyValue){ map[2 * i], map[2 * i + 1] };
        if (!(f->flags & FIELD_NO_FLAG_SORT))
                qsort_safe(kv, n / 2, sizeof(KeyValue), cmp_key_value);

        _cleanup_free_ char *s = strdup("");
        if (!s)
                return -ENOMEM;
        for (size_t i = 0; i < n / 2; i++)
                if (strextend_printf(&s, "%s%s=%s", i > 0 ? "," : "", kv[i].key, kv[i].value) < 0)
                        return -ENOMEM;
        *ret = TAKE_PTR(s);
        return 0;
}

/* Every Opt* type of field.h starts with `bool set`, so one check serves them all. */
static bool field_is_opt(FieldType t) {
        return t == FIELD_BOOL || t == FIELD_INT || t == FIELD_DURATION || t == FIELD_ENUM;
}

static bool opt_is_set(const void *p) {
        return *(const bool *)p;
}

/* The name of enum value i; -EINVAL when i is not in the (NULL-terminated) enum_values. */
static int enum_name(const Field *f, int i, const char **ret) {
        if (!f->enum_values || i < 0)
                return -EINVAL;
        for (int j = 0; j <= i; j++)
                if (!f->enum_values[j])
                        return -EINVAL;
        *ret = f->enum_values[i];
        return 0;
}

int flags_field_value(const Field *f, const void *obj, char **ret) {
        const void *p = FIELD_PTR(obj, f);
        char buf[GO_DURATION_MAX];
        const char *v = NULL;          /* a value to copy, or */
        _cleanup_free_ char *s = NULL; /* one made here */
        int r = 0;

        if (field_is_opt(f->type) && !opt_is_set(p)) {
                *ret = NULL;
                return 0;
        }
        switch (f->type) {
        case FIELD_STRING:
                v = *(char *const *)p;
                v = isempty(v) ? NULL : v;
                break;
        case FIELD_BOOL:
                v = ((const OptBool *)p)->value ? "true" : "false";
                break;
        case FIELD_INT:
                s = strprintf("%" PRIi64, ((const OptInt *)p)->value);
                r = s ? 0 : -ENOMEM;
                break;
        case FIELD_DURATION:
                v = format_go_duration(buf, ((const OptDuration *)p)->value);
                break;
        case FIELD_ENUM:
                r = enum_name(f, ((const OptEnum *)p)->value, &v);
                break;
        case FIELD_STRV:
                if (strv_length(*(char **const *)p) > 0) {
                        s = strv_join(*(char **const *)p, ",");
                        r = s ? 0 : -ENOMEM;
                }
                break;
        case FIELD_MAP:
                if (strv_length(*(char **const *)p) > 0)
                        r = render_map(f, *(char **const *)p, &s);
                break;
        default:
                return -EINVAL;
        }
        if (r < 0)
                return r;
        if (!s && v) {
                s = strdup(v);
                if (!s)
                        return -ENOMEM;
        }
        if (s && f->empty_value && streq(s, f->empty_value)) {
                free(s);
                s = NULL;
        }
        *ret = TAKE_PTR(s);
        return 0;
}

int flags_push(char ***l, const char *flag, const char *value) {
        char *s = strjoin("--", flag, "=", value);
        if (!s)
                return -ENOMEM;
        int r = strv_push(l, s);
        if (r < 0)
                free(s);
        return r;
}

int flags_pushf(char ***l, const char *flag, const char *format, ...) {
        _cleanup_free_ char *v = NULL;
        va_list ap;
        va_start(ap, format);
        int n = vasprintf(&v, format, ap);
        va_end(ap);
        if (n < 0) {
                v = NULL; /* undefined after a failure */
                return -ENOMEM;
        }
        return flags_push(l, flag, v);
}

bool field_in_file(const Field *f, unsigned k8s_minor) {
        return f->file_field && (k8s_minor == 0 || kube_gate_allows(f->file_k8s, k8s_minor));
}

static int append_fields(const Field *fields, const void *obj, unsigned k8s_minor, bool beside_file,
                         char ***l);

static int append_field(const Field *f, const void *obj, unsigned k8s_minor, bool beside_file, char ***l) {
        if (f->type == FIELD_STRUCT)
                return f->sub ? append_fields(f->sub, FIELD_PTR(obj, f), k8s_minor, beside_file, l)
                              : -EINVAL;
        if (f->type == FIELD_STRUCT_LIST || !f->flag)
                return 0;
        if (k8s_minor > 0 && !kube_gate_allows(f->k8s, k8s_minor))
                return 0;
        if (beside_file && field_in_file(f, k8s_minor))
                return 0;
        if (beside_file && f->file_instead && kube_gate_allows(f->file_instead_k8s, k8s_minor))
                return 0; /* no effect there */

        _cleanup_free_ char *value = NULL;
        int r = flags_field_value(f, obj, &value);
        if (r < 0)
                return r;
        if (!value)
                return 0;

        if (f->type == FIELD_STRV && (f->flags & FIELD_FLAG_REPEAT)) {
                char *const *v = *(char **const *)FIELD_PTR(obj, f);
                for (size_t i = 0; v[i]; i++) {
                        r = flags_push(l, f->flag, v[i]);
                        if (r < 0)
                                return r;
                }
                return 0;
        }
        return flags_push(l, f->flag, value);
}

static int append_fields(const Field *fields, const void *obj, unsigned k8s_minor, bool beside_file,
                         char ***l) {
        for (const Field *f = fields; f && f->name; f++) {
                int r = append_field(f, obj, k8s_minor, beside_file, l);
                if (r < 0)
                        return r;
        }
        return 0;
}

int flags_append(const Field *fields, const void *obj, unsigned k8s_minor, char ***l) {
        return append_fields(fields, obj, k8s_minor, false, l);
}

static int build(const Field *fields, const void *obj, unsigned k8s_minor, bool beside_file, char ***ret) {
        _cleanup_strv_free_ char **l = new0(char *, 1);
        if (!l)
                return -ENOMEM;
        int r = append_fields(fields, obj, k8s_minor, beside_file, &l);
        if (r < 0)
                return r;
        strv_sort(l);
        *ret = TAKE_PTR(l);
        return 0;
}

int flags_build(const Field *fields, const void *obj, unsigned k8s_minor, char ***ret) {
        return build(fields, obj, k8s_minor, false, ret);
}

int flags_build_beside_file(const Field *fields, const void *obj, unsigned k8s_minor, char ***ret) {
        return build(fields, obj, k8s_minor, true, ret);
}

static int fill_default(const Field *f, void *obj) {
        void *p = FIELD_PTR(obj, f);
        const char *d = f->default_value;
        int64_t i;
        uint64_t u;

        if (f->type == FIELD_STRING) {
                if (!*(char **)p)
                        *(char **)p = (char *)d;
                return 0;
        }
        /* Lists and maps have no scalar default (see component-config.c); a set value is kept. */
        if (!field_is_opt(f->type) || opt_is_set(p))
                return 0;

        switch (f->type) {
        case FIELD_BOOL:
                if (!streq(d, "true") && !streq(d, "false"))
                        return -EINVAL;
                *(OptBool *)p = (OptBool){ .set = true, .value = streq(d, "true") };
                return 0;
        case FIELD_INT:
                if (safe_atoi64(d, &i) < 0)
                        return -EINVAL;
                *(OptInt *)p = (OptInt){ .set = true, .value = i };
                return 0;
        case FIELD_DURATION:
                if (parse_duration_usec(d, &u) < 0)
                        return -EINVAL;
                *(OptDuration *)p = (OptDuration){ .set = true, .value = u };
                return 0;
        default: /* FIELD_ENUM */
                for (int e = 0; f->enum_values && f->enum_values[e]; e++)
                        if (streq(f->enum_values[e], d)) {
                                *(OptEnum *)p = (OptEnum){ .set = true, .value = e };
                                return 0;
                        }
                return -EINVAL;
        }
}

int flags_fill_defaults(const Field *fields, void *obj) {
        for (const Field *f = fields; f && f->name; f++) {
                int r = 0;
                if (f->type == FIELD_STRUCT)
                        r = f->sub ? flags_fill_defaults(f->sub, FIELD_PTR(obj, f)) : -EINVAL;
                else if (f->default_value)
                        r = fill_default(f, obj);
                if (r < 0)
                        return r;
        }
        return 0;
}
