/* SPDX-License-Identifier: Apache-2.0 */
#include "model/config-doc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/string-util.h"
#include "basic/strv.h"

ConfigDoc *config_doc_new(void) {
        ConfigDoc *d = new0(ConfigDoc, 1);
        if (d)
                d->kind = CONFIG_DOC_MAP;
        return d;
}

ConfigDoc *config_doc_free(ConfigDoc *d) {
        if (!d)
                return NULL;
        for (size_t i = 0; i < d->n_children; i++)
                config_doc_free(d->children[i]);
        free(d->children);
        free(d->key);
        free(d->value);
        strv_free(d->list);
        free(d);
        return NULL;
}

static ConfigDoc *child(const ConfigDoc *m, const char *key, size_t len) {
        for (size_t i = 0; i < m->n_children; i++)
                if (strlen(m->children[i]->key) == len && strneq(m->children[i]->key, key, len))
                        return m->children[i];
        return NULL;
}

/* A new child of m named key (len bytes of it), of kind. */
static int add_child(ConfigDoc *m, const char *key, size_t len, ConfigDocKind kind, ConfigDoc **ret) {
        if (len == 0)
                return -EINVAL;
        if (child(m, key, len))
                return -EEXIST;
        ConfigDoc **children = reallocarray(m->children, m->n_children + 1, sizeof(ConfigDoc *));
        if (!children)
                return -ENOMEM;
        m->children = children;
        _cleanup_(config_doc_freep) ConfigDoc *c = new0(ConfigDoc, 1);
        if (!c)
                return -ENOMEM;
        c->kind = kind;
        c->key = strndup(key, len);
        if (!c->key)
                return -ENOMEM;
        m->children[m->n_children++] = c;
        *ret = TAKE_PTR(c);
        return 0;
}

/* The mapping that holds the last segment of path, made on the way; *ret_last is that segment. */
static int parent_of(ConfigDoc *root, const char *path, ConfigDoc **ret, const char **ret_last) {
        ConfigDoc *m = root;
        const char *p = path;
        for (const char *dot; (dot = strchr(p, '.')); p = dot + 1) {
                ConfigDoc *c = child(m, p, (size_t)(dot - p));
                if (!c) {
                        int r = add_child(m, p, (size_t)(dot - p), CONFIG_DOC_MAP, &c);
                        if (r < 0)
                                return r;
                } else if (c->kind != CONFIG_DOC_MAP)
                        return -EEXIST;
                m = c;
        }
        *ret = m;
        *ret_last = p;
        return 0;
}

static int set_leaf(ConfigDoc *root, const char *path, ConfigDocKind kind, const char *value,
                    char *const *list) {
        ConfigDoc *m, *leaf;
        const char *last;
        if (!root || !path)
                return -EINVAL;
        int r = parent_of(root, path, &m, &last);
        if (r < 0)
                return r;
        r = add_child(m, last, strlen(last), kind, &leaf);
        if (r < 0)
                return r;
        /* a leaf left without its value on failure is freed with the document */
        if (value && !(leaf->value = strdup(value)))
                return -ENOMEM;
        if (list && !(leaf->list = strv_copy(list)))
                return -ENOMEM;
        return 0;
}

int config_doc_set_string(ConfigDoc *root, const char *path, const char *value) {
        return value ? set_leaf(root, path, CONFIG_DOC_STRING, value, NULL) : -EINVAL;
}

int config_doc_set_int(ConfigDoc *root, const char *path, int64_t value) {
        char b[32];
        snprintf(b, sizeof(b), "%" PRIi64, value);
        return set_leaf(root, path, CONFIG_DOC_INT, b, NULL);
}

int config_doc_set_bool(ConfigDoc *root, const char *path, bool value) {
        return set_leaf(root, path, CONFIG_DOC_BOOL, value ? "true" : "false", NULL);
}

int config_doc_set_list(ConfigDoc *root, const char *path, char *const *list) {
        return list ? set_leaf(root, path, CONFIG_DOC_LIST, NULL, list) : -EINVAL;
}

int config_doc_map(ConfigDoc *root, const char *path, ConfigDoc **ret) {
        ConfigDoc *m, *c;
        const char *last;
        if (!root || !path)
                return -EINVAL;
        int r = parent_of(root, path, &m, &last);
        if (r < 0)
                return r;
        c = child(m, last, strlen(last));
        if (c) {
                if (c->kind != CONFIG_DOC_MAP)
                        return -EEXIST;
                *ret = c;
                return 0;
        }
        r = add_child(m, last, strlen(last), CONFIG_DOC_MAP, &c);
        if (r < 0)
                return r;
        *ret = c;
        return 0;
}

static int map_put(ConfigDoc *m, const char *key, ConfigDocKind kind, const char *value) {
        ConfigDoc *c;
        if (!m || m->kind != CONFIG_DOC_MAP || !key)
                return -EINVAL;
        int r = add_child(m, key, strlen(key), kind, &c);
        if (r < 0)
                return r;
        c->value = strdup(value);
        return c->value ? 0 : -ENOMEM;
}

int config_doc_map_put_string(ConfigDoc *m, const char *key, const char *value) {
        return value ? map_put(m, key, CONFIG_DOC_STRING, value) : -EINVAL;
}

int config_doc_map_put_bool(ConfigDoc *m, const char *key, bool value) {
        return map_put(m, key, CONFIG_DOC_BOOL, value ? "true" : "false");
}

const ConfigDoc *config_doc_get(const ConfigDoc *root, const char *path) {
        const ConfigDoc *n = root;
        const char *p = path;
        if (!root || !path)
                return NULL;
        for (;;) {
                const char *dot = strchr(p, '.');
                size_t len = dot ? (size_t)(dot - p) : strlen(p);
                if (n->kind != CONFIG_DOC_MAP)
                        return NULL;
                n = child(n, p, len);
                if (!n || !dot)
                        return n;
                p = dot + 1;
        }
}
