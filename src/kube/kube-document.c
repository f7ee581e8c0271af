/* SPDX-License-Identifier: Apache-2.0 */
/* The objects of a text: documents split as kubectl splits them, each one's identity read from its YAML. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/string-util.h"
#include "kube/kube-internal.h"
#include "shared/yaml-tree.h"

/* kubectl's separator (k8s.io/apimachinery yaml.YAMLReader): "---" and nothing but blanks after it. */
static bool is_separator(const char *line, size_t len) {
        if (len < 3 || memcmp(line, "---", 3) != 0)
                return false;
        for (size_t i = 3; i < len; i++)
                if (!strchr(" \t\r\n", line[i]))
                        return false;
        return true;
}

bool kube_next_document(const char *text, size_t len, size_t *pos, const char **ret_doc, size_t *ret_len) {
        size_t start = *pos, i = start;
        if (start >= len)
                return false;
        /* a separator at the very start ends an empty first document */
        for (;;) {
                const char *nl = memchr(text + i, '\n', len - i);
                size_t line_end = nl ? (size_t)(nl - text) + 1 : len;
                if (is_separator(text + i, line_end - i)) {
                        *ret_doc = text + start;
                        *ret_len = i - start;
                        *pos = line_end;
                        return true;
                }
                if (line_end >= len)
                        break;
                i = line_end;
        }
        *ret_doc = text + start;
        *ret_len = len - start;
        *pos = len;
        return true;
}

void kube_doc_identity_done(KubeDocIdentity *id) {
        free(id->api_version);
        free(id->kind);
        free(id->ns);
        free(id->name);
        *id = (KubeDocIdentity){};
}

static int get_string(const YamlNode *n, const char *key, bool required, char **ret, char **ret_error) {
        const YamlNode *v = yaml_tree_get(n, key);
        if (!v || yaml_tree_is_null(v)) {
                *ret = NULL;
                return required ? error_setf(ret_error, -EINVAL, "missing '%s'", key) : 0;
        }
        if (v->kind != YAML_TREE_SCALAR || v->len != strlen(v->value) || v->len > 253)
                return error_setf(ret_error, -EINVAL,
                                  "%u:%u: '%s' must be a string of at most 253 characters", v->line,
                                  v->column, key);
        *ret = strdup(v->value);
        return *ret ? 0 : -ENOMEM;
}

/* A Secret's values were parsed too: erased before the tree is freed. */
static void yaml_tree_erase(YamlNode *n) {
        if (!n)
                return;
        if (n->value)
                explicit_bzero(n->value, n->len);
        for (size_t i = 0; i < n->n_items; i++)
                yaml_tree_erase(n->items[i]);
        for (size_t i = 0; i < n->n_pairs; i++) {
                yaml_tree_erase(n->pairs[i].key);
                yaml_tree_erase(n->pairs[i].value);
        }
}

static void yaml_tree_erase_freep(YamlNode **n) {
        yaml_tree_erase(*n);
        yaml_tree_free(*n);
}

int kube_doc_identity(const char *text, size_t len, KubeDocIdentity *ret, char **ret_error) {
        _cleanup_(yaml_tree_erase_freep) YamlNode *root = NULL;
        _cleanup_free_ char *perr = NULL;
        KubeDocIdentity id = {};
        int r = yaml_tree_parse(text, len, YAML_TREE_REJECT_DUPLICATES, &root, &perr);
        if (r < 0)
                return error_setf(ret_error, r, "%s", perr ?: "does not parse as YAML");
        if (!root || root->kind != YAML_TREE_MAPPING)
                return error_setf(ret_error, -EINVAL,
                                  "not an object (a mapping with apiVersion, kind, "
                                  "metadata)");
        const YamlNode *meta = yaml_tree_get(root, "metadata");
        if (!meta || meta->kind != YAML_TREE_MAPPING)
                return error_setf(ret_error, -EINVAL, "missing 'metadata' (a mapping)");
        if ((r = get_string(root, "apiVersion", true, &id.api_version, ret_error)) < 0 ||
            (r = get_string(root, "kind", true, &id.kind, ret_error)) < 0 ||
            (r = get_string(meta, "name", true, &id.name, ret_error)) < 0 ||
            (r = get_string(meta, "namespace", false, &id.ns, ret_error)) < 0) {
                kube_doc_identity_done(&id);
                return r;
        }
        *ret = id;
        return 0;
}

/* A document with nothing but blanks and comments. */
static bool document_is_empty(const char *doc, size_t len) {
        bool comment = false;
        for (size_t i = 0; i < len; i++) {
                if (doc[i] == '\n')
                        comment = false;
                else if (doc[i] == '#')
                        comment = true;
                else if (!comment && !strchr(" \t\r", doc[i]))
                        return false;
        }
        return true;
}

int kube_apply_text(KubeClient *c, const char *text, size_t len, usec_t deadline, json_t **ret,
                    char **ret_error) {
        json_t *all = json_array();
        const char *doc;
        size_t pos = 0, n = 0, dlen;
        if (!all)
                return -ENOMEM;
        deadline = deadline ?: now(CLOCK_MONOTONIC) + c->retry.call_timeout;
        while (kube_next_document(text, len, &pos, &doc, &dlen)) {
                _cleanup_free_ char *err = NULL;
                json_t *obj = NULL;
                n++;
                if (document_is_empty(doc, dlen))
                        continue;
                int r = kube_apply_document(c, doc, dlen, deadline, &obj, &err);
                if (r >= 0 && json_array_append_new(all, obj) < 0)
                        r = -ENOMEM;
                if (r < 0) {
                        json_decref(all);
                        return error_setf(ret_error, r, "document %zu: %s", n, strnull(err));
                }
        }
        if (ret)
                *ret = all;
        else
                json_decref(all);
        return 0;
}
