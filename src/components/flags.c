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
                qsort(kv, n / 2, sizeof(KeyValue), cmp_key_value);

        _cleanup_free_ char *s = strdup("");
        if (!s)
                return -ENOMEM;
        for (size_t i = 0; i < n / 2; i++)
                if (strextend_printf(&s, "%s%s=%s", i > 0 ? "," : "", kv[i].key, kv[i].value) < 0)
                        return -ENOMEM;
        *ret = TAKE_PTR(s);
        return 0;
}

/* The value of one scalar-ish field as the flag would carry it; *ret = NULL when the field emits nothing. */
static int render_value(const Field *f, const void *obj, char **ret) {
        const void *p = FIELD_PTR(obj, f);
        char buf[GO_DURATION_MAX];
        char *s = NULL;

        switch (f->type) {
        case FIELD_STRING: {
                const char *v = *(char *const *)p;
                if (isempty(v))
                        break;
                s = strdup(v);
                if (!s)
                        return -ENOMEM;
                break;
        }
        case FIELD_BOOL: {
                const OptBool *v = p;
                if (!v->set)
                        break;
                s = strdup(v->value ? "true" : "false");
                if (!s)
                        return -ENOMEM;
                break;
        }
        case FIELD_INT: {
                const OptInt *v = p;
                if (!v->set)
                        break;
                s = strprintf("%" PRIi64, v->value);
                if (!s)
                        return -ENOMEM;
                break;
        }
        case FIELD_DURATION: {
                const OptDuration *v = p;
                if (!v->set)
                        break;
                s = strdup(format_go_duration(buf, v->value));
                if (!s)
                        return -ENOMEM;
                break;
        }
        case FIELD_ENUM: {
                const OptEnum *v = p;
                if (!v->set)
                        break;
                if (!f->enum_values || v->value < 0)
                        return -EINVAL;
                for (int i = 0; i < v->value; i++)
                        if (!f->enum_values[i])
                                return -EINVAL;
                if (!f->enum_values[v->value])
                        return -EINVAL;
                s = strdup(f->enum_values[v->value]);
                if (!s)
                        return -ENOMEM;
                break;
        }
        case FIELD_STRV: {
                char *const *v = *(char **const *)p;
                if (strv_length(v) == 0)
                        break;
                s = strv_join(v, ",");
                if (!s)
                        return -ENOMEM;
                break;
        }
        case FIELD_MAP: {
                char *const *v = *(char **const *)p;
                if (strv_length(v) == 0)
                        break;
                int r = render_map(f, v, &s);
                if (r < 0)
                        return r;
                break;
        }
        default:
                return -EINVAL;
        }

        if (s && f->empty_value && streq(s, f->empty_value)) {
                free(s);
                s = NULL;
        }
        *ret = s;
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

static int append_field(const Field *f, const void *obj, char ***l) {
        if (f->type == FIELD_STRUCT)
                return f->sub ? flags_append(f->sub, FIELD_PTR(obj, f), l) : -EINVAL;
        if (f->type == FIELD_STRUCT_LIST || !f->flag)
                return 0;

        _cleanup_free_ char *value = NULL;
        int r = render_value(f, obj, &value);
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

int flags_append(const Field *fields, const void *obj, char ***l) {
        for (const Field *f = fields; f && f->name; f++) {
                int r = append_field(f, obj, l);
                if (r < 0)
                        return r;
        }
        return 0;
}

int flags_build(const Field *fields, const void *obj, char ***ret) {
        _cleanup_strv_free_ char **l = new0(char *, 1);
        if (!l)
                return -ENOMEM;
        int r = flags_append(fields, obj, &l);
        if (r < 0)
                return r;
        strv_sort(l);
        *ret = TAKE_PTR(l);
        return 0;
}

static int fill_default(const Field *f, void *obj) {
        void *p = FIELD_PTR(obj, f);
        const char *d = f->default_value;

        switch (f->type) {
        case FIELD_STRING:
                if (!*(char **)p)
                        *(char **)p = (char *)d;
                return 0;
        case FIELD_BOOL: {
                OptBool *v = p;
                if (v->set)
                        return 0;
                if (!streq(d, "true") && !streq(d, "false"))
                        return -EINVAL;
                *v = (OptBool){ .set = true, .value = streq(d, "true") };
                return 0;
        }
        case FIELD_INT: {
                OptInt *v = p;
                int64_t i;
                if (v->set)
                        return 0;
                if (safe_atoi64(d, &i) < 0)
                        return -EINVAL;
                *v = (OptInt){ .set = true, .value = i };
                return 0;
        }
        case FIELD_DURATION: {
                OptDuration *v = p;
                uint64_t u;
                if (v->set)
                        return 0;
                if (parse_duration_usec(d, &u) < 0)
                        return -EINVAL;
                *v = (OptDuration){ .set = true, .value = u };
                return 0;
        }
        case FIELD_ENUM: {
                OptEnum *v = p;
                if (v->set)
                        return 0;
                for (int i = 0; f->enum_values && f->enum_values[i]; i++)
                        if (streq(f->enum_values[i], d)) {
                                *v = (OptEnum){ .set = true, .value = i };
                                return 0;
                        }
                return -EINVAL;
        }
        default:
                /* Lists and maps have no scalar default (see component-config.c). */
                return 0;
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
