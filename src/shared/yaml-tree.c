/* SPDX-License-Identifier: Apache-2.0 */
#include "shared/yaml-tree.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "basic/errors.h"
#include "basic/string-util.h"

typedef struct Builder {
        YamlNode *stack[YAML_TREE_MAX_DEPTH];
        size_t depth;
        YamlNode *root;
        size_t n_nodes;
        unsigned n_documents;
        unsigned flags;
        char *error; /* "LINE:COL: message" */
        int error_code;
} Builder;

YamlNode *yaml_tree_free(YamlNode *n) {
        if (!n)
                return NULL;
        free(n->tag);
        free(n->value);
        for (size_t i = 0; i < n->n_items; i++)
                yaml_tree_free(n->items[i]);
        free(n->items);
        for (size_t i = 0; i < n->n_pairs; i++) {
                yaml_tree_free(n->pairs[i].key);
                yaml_tree_free(n->pairs[i].value);
        }
        free(n->pairs);
        free(n);
        return NULL;
}

static int builder_fail(Builder *b, int code, size_t line, size_t column, const char *message) {
        /* Keep the first error: later ones are usually consequences. */
        if (b->error_code < 0)
                return b->error_code;
        b->error = strprintf("%zu:%zu: %s", line, column, message);
        b->error_code = b->error ? code : -ENOMEM;
        return b->error_code;
}

static int builder_fail_at(Builder *b, int code, yaml_mark_t mark, const char *message) {
        return builder_fail(b, code, mark.line + 1, mark.column + 1, message);
}

static int grow(void **array, size_t n, size_t elem) {
        /* Capacity doubles at powers of two, so no separate capacity field is needed. */
        if (n == 0 || (n & (n - 1)) == 0) {
                size_t cap = n ? n * 2 : 4;
                void *p = reallocarray(*array, cap, elem);
                if (!p)
                        return -ENOMEM;
                *array = p;
        }
        return 0;
}

static int builder_attach(Builder *b, YamlNode *n) {
        if (b->depth == 0) {
                b->root = n; /* only one document is accepted, so there is only one root */
                return 0;
        }
        YamlNode *parent = b->stack[b->depth - 1];
        if (parent->kind == YAML_TREE_SEQUENCE) {
                if (grow((void **)&parent->items, parent->n_items, sizeof(YamlNode *)) < 0)
                        return -ENOMEM;
                parent->items[parent->n_items++] = n;
                return 0;
        }
        if (parent->n_pairs > 0 && !parent->pairs[parent->n_pairs - 1].value) {
                parent->pairs[parent->n_pairs - 1].value = n;
                return 0;
        }
        if (grow((void **)&parent->pairs, parent->n_pairs, sizeof(YamlPair)) < 0)
                return -ENOMEM;
        parent->pairs[parent->n_pairs++] = (YamlPair){ .key = n };
        return 0;
}

static int builder_new_node(Builder *b, YamlNodeKind kind, const yaml_event_t *e, const yaml_char_t *anchor,
                            const yaml_char_t *tag, YamlNode **ret) {
        if (anchor)
                return builder_fail_at(b, PK_EMALFORMED, e->start_mark,
                                       "anchors and aliases are not supported");
        if (++b->n_nodes > YAML_TREE_MAX_NODES)
                return builder_fail_at(b, PK_ETOOBIG, e->start_mark, "too many nodes in the document");

        YamlNode *n = new0(YamlNode, 1);
        if (!n)
                return -ENOMEM;
        n->kind = kind;
        n->line = e->start_mark.line + 1;
        n->column = e->start_mark.column + 1;
        if (tag) {
                n->tag = strndup((const char *)tag, 1024);
                if (!n->tag) {
                        free(n);
                        return -ENOMEM;
                }
        }
        if (builder_attach(b, n) < 0) {
                yaml_tree_free(n);
                return -ENOMEM;
        }
        *ret = n;
        return 0;
}

static int builder_scalar(Builder *b, const yaml_event_t *e) {
        static const YamlScalarKind styles[] = {
                [YAML_PLAIN_SCALAR_STYLE] = YAML_TREE_PLAIN,
                [YAML_SINGLE_QUOTED_SCALAR_STYLE] = YAML_TREE_SINGLE_QUOTED,
                [YAML_DOUBLE_QUOTED_SCALAR_STYLE] = YAML_TREE_DOUBLE_QUOTED,
                [YAML_LITERAL_SCALAR_STYLE] = YAML_TREE_LITERAL,
                [YAML_FOLDED_SCALAR_STYLE] = YAML_TREE_FOLDED,
        };
        YamlNode *n;
        int r = builder_new_node(b, YAML_TREE_SCALAR, e, e->data.scalar.anchor, e->data.scalar.tag, &n);
        if (r < 0)
                return r;
        n->value = malloc(e->data.scalar.length + 1);
        if (!n->value)
                return -ENOMEM;
        memcpy(n->value, e->data.scalar.value, e->data.scalar.length);
        n->value[e->data.scalar.length] = 0;
        n->len = e->data.scalar.length;
        n->style = (size_t)e->data.scalar.style < ELEMENTSOF(styles) ? styles[e->data.scalar.style]
                                                                     : YAML_TREE_PLAIN;
        return 0;
}

static int builder_start(Builder *b, const yaml_event_t *e, YamlNodeKind kind) {
        const yaml_char_t *anchor, *tag;
        YamlNode *n;

        if (kind == YAML_TREE_SEQUENCE) {
                anchor = e->data.sequence_start.anchor;
                tag = e->data.sequence_start.tag;
        } else {
                anchor = e->data.mapping_start.anchor;
                tag = e->data.mapping_start.tag;
        }
        if (b->depth >= YAML_TREE_MAX_DEPTH)
                return builder_fail_at(b, PK_ETOOBIG, e->start_mark, "nesting is too deep");
        int r = builder_new_node(b, kind, e, anchor, tag, &n);
        if (r < 0)
                return r;
        b->stack[b->depth++] = n;
        return 0;
}

typedef struct KeyRef {
        const YamlNode *key;
        size_t index;
} KeyRef;

static int key_ref_compare(const void *x, const void *y) {
        const KeyRef *a = x, *b = y;
        if (a->key->len != b->key->len)
                return a->key->len < b->key->len ? -1 : 1;
        int c = memcmp(a->key->value, b->key->value, a->key->len);
        if (c != 0)
                return c;
        return a->index < b->index ? -1 : a->index > b->index;
}

/* Marks each repeated scalar key with its first occurrence: sorting keeps this O(n log n) for the large
 * mappings a hostile input can hold. */
static int mapping_mark_duplicates(YamlNode *m) {
        _cleanup_free_ KeyRef *refs = NULL;
        size_t n = 0;

        if (m->n_pairs < 2)
                return 0;
        refs = new0(KeyRef, m->n_pairs);
        if (!refs)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_pairs; i++)
                if (m->pairs[i].key->kind == YAML_TREE_SCALAR)
                        refs[n++] = (KeyRef){ .key = m->pairs[i].key, .index = i };
        qsort_safe(refs, n, sizeof(KeyRef), key_ref_compare);
        for (size_t i = 1, first = 0; i < n; i++) {
                if (refs[i].key->len == refs[first].key->len &&
                    memcmp(refs[i].key->value, refs[first].key->value, refs[i].key->len) == 0)
                        m->pairs[refs[i].index].first = &m->pairs[refs[first].index];
                else
                        first = i;
        }
        return 0;
}

static int builder_end(Builder *b) {
        YamlNode *n = b->stack[--b->depth];

        if (n->kind != YAML_TREE_MAPPING)
                return 0;
        if (mapping_mark_duplicates(n) < 0)
                return -ENOMEM;
        if (!(b->flags & YAML_TREE_REJECT_DUPLICATES))
                return 0;
        for (size_t i = 0; i < n->n_pairs; i++) {
                const YamlPair *p = &n->pairs[i];
                if (!p->first)
                        continue;
                _cleanup_free_ char *m = strprintf("duplicate key '%s' (first at %u:%u)", p->key->value,
                                                   p->first->key->line, p->first->key->column);
                if (!m)
                        return -ENOMEM;
                return builder_fail(b, PK_EMALFORMED, p->key->line, p->key->column, m);
        }
        return 0;
}

static int builder_event(Builder *b, const yaml_event_t *e) {
        switch (e->type) {
        case YAML_DOCUMENT_START_EVENT:
                if (++b->n_documents > 1)
                        return builder_fail_at(b, PK_EMALFORMED, e->start_mark,
                                               "more than one document in the stream");
                return 0;
        case YAML_ALIAS_EVENT:
                return builder_fail_at(b, PK_EMALFORMED, e->start_mark,
                                       "anchors and aliases are not supported");
        case YAML_SCALAR_EVENT:
                return builder_scalar(b, e);
        case YAML_SEQUENCE_START_EVENT:
                return builder_start(b, e, YAML_TREE_SEQUENCE);
        case YAML_MAPPING_START_EVENT:
                return builder_start(b, e, YAML_TREE_MAPPING);
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
                return b->depth > 0 ? builder_end(b) : 0;
        default:
                return 0;
        }
}

/* Reader errors (bad encoding, control characters) carry a byte offset rather than a mark. */
static void offset_to_mark(const char *text, size_t len, size_t offset, size_t *ret_line, size_t *ret_col) {
        size_t line = 1, col = 1;
        for (size_t i = 0; i < offset && i < len; i++) {
                if (text[i] == '\n') {
                        line++;
                        col = 1;
                } else
                        col++;
        }
        *ret_line = line;
        *ret_col = col;
}

static int parser_fail(Builder *b, const yaml_parser_t *p, const char *text, size_t len) {
        _cleanup_free_ char *m = NULL;
        size_t line, col;

        if (p->error == YAML_MEMORY_ERROR)
                return -ENOMEM;
        if (p->error == YAML_READER_ERROR) {
                offset_to_mark(text, len, p->problem_offset, &line, &col);
                return builder_fail(b, PK_EMALFORMED, line, col, strna(p->problem));
        }
        if (p->context)
                m = strprintf("%s (%s started at %zu:%zu)", strna(p->problem), p->context,
                              p->context_mark.line + 1, p->context_mark.column + 1);
        else
                m = strdup(strna(p->problem));
        if (!m)
                return -ENOMEM;
        return builder_fail_at(b, PK_EMALFORMED, p->problem_mark, m);
}

static int builder_run(Builder *b, const char *text, size_t len) {
        yaml_parser_t parser;
        int r = 0;

        if (!yaml_parser_initialize(&parser))
                return -ENOMEM;
        yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
        for (bool done = false; !done && r >= 0;) {
                yaml_event_t e;
                if (!yaml_parser_parse(&parser, &e)) {
                        r = parser_fail(b, &parser, text, len);
                        break;
                }
                done = e.type == YAML_STREAM_END_EVENT;
                r = builder_event(b, &e);
                yaml_event_delete(&e);
        }
        yaml_parser_delete(&parser);
        return r;
}

int yaml_tree_parse(const char *text, size_t len, unsigned flags, YamlNode **ret, char **ret_error) {
        Builder b = { .flags = flags };
        int r;

        if (len > YAML_TREE_MAX_INPUT)
                r = builder_fail(&b, PK_ETOOBIG, 1, 1, "input is larger than 1 MiB");
        else
                r = builder_run(&b, text, len);
        if (r < 0) {
                yaml_tree_free(b.root);
                if (ret_error && b.error)
                        *ret_error = TAKE_PTR(b.error);
                free(b.error);
                return r;
        }
        *ret = b.root;
        return 0;
}

const YamlNode *yaml_tree_get(const YamlNode *n, const char *key) {
        if (!n || n->kind != YAML_TREE_MAPPING)
                return NULL;
        for (size_t i = 0; i < n->n_pairs; i++) {
                const YamlNode *k = n->pairs[i].key;
                if (k->kind == YAML_TREE_SCALAR && !n->pairs[i].first && streq(k->value, key))
                        return n->pairs[i].value;
        }
        return NULL;
}

const YamlNode *yaml_tree_item(const YamlNode *n, size_t i) {
        if (!n || n->kind != YAML_TREE_SEQUENCE || i >= n->n_items)
                return NULL;
        return n->items[i];
}

const char *yaml_tree_short_tag(const YamlNode *n) {
        if (!n || !n->tag)
                return NULL;
        return startswith(n->tag, YAML_TREE_TAG_PREFIX) ?: n->tag;
}

bool yaml_tree_is_null(const YamlNode *n) {
        const char *t = yaml_tree_short_tag(n);

        if (!n || n->kind != YAML_TREE_SCALAR)
                return false;
        if (t)
                return streq(t, "null");
        if (n->style != YAML_TREE_PLAIN)
                return false;
        return n->len == 0 || streq(n->value, "~") || streq(n->value, "null") || streq(n->value, "Null") ||
               streq(n->value, "NULL");
}

bool yaml_tree_is_string(const YamlNode *n) {
        const char *t = yaml_tree_short_tag(n);

        if (!n || n->kind != YAML_TREE_SCALAR)
                return false;
        if (t)
                return streq(t, "str") || streq(t, "!");
        return n->style != YAML_TREE_PLAIN;
}

const char *yaml_tree_describe(const YamlNode *n) {
        if (!n)
                return "nothing";
        switch (n->kind) {
        case YAML_TREE_MAPPING:
                return "a mapping";
        case YAML_TREE_SEQUENCE:
                return "a sequence";
        default:
                if (yaml_tree_is_null(n))
                        return "null";
                return yaml_tree_is_string(n) ? "a quoted string" : "a scalar";
        }
}
