/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A YAML document (libyaml) as a small tree of mapping / sequence / scalar nodes with 1-based line:col
 * marks, scalar style and tag, for loaders that want to report FILE:LINE:COL errors.
 *
 * Safety: input is capped (YAML_TREE_MAX_INPUT), nesting depth (YAML_TREE_MAX_DEPTH) and node count
 * (YAML_TREE_MAX_NODES) too; anchors and aliases are rejected outright, so an alias bomb ("billion laughs")
 * never expands. libyaml accepts duplicate mapping keys silently: the tree marks them (YamlPair.first) and
 * YAML_TREE_REJECT_DUPLICATES makes them a parse error. */

#include <stdbool.h>
#include <stddef.h>

#include "basic/macro.h"

#define YAML_TREE_MAX_INPUT (1024U * 1024U)
#define YAML_TREE_MAX_DEPTH 64U
#define YAML_TREE_MAX_NODES 100000U

#define YAML_TREE_TAG_PREFIX "tag:yaml.org,2002:"

typedef enum YamlNodeKind {
        YAML_TREE_SCALAR,
        YAML_TREE_SEQUENCE,
        YAML_TREE_MAPPING,
} YamlNodeKind;

typedef enum YamlScalarKind {
        YAML_TREE_PLAIN,
        YAML_TREE_SINGLE_QUOTED,
        YAML_TREE_DOUBLE_QUOTED,
        YAML_TREE_LITERAL,
        YAML_TREE_FOLDED,
} YamlScalarKind;

typedef struct YamlNode YamlNode;

typedef struct YamlPair {
        YamlNode *key;
        YamlNode *value;
        /* For a scalar key seen earlier in the same mapping: the first pair with that key; else NULL. */
        const struct YamlPair *first;
} YamlPair;

struct YamlNode {
        YamlNodeKind kind;
        unsigned line, column; /* 1-based, of the node's first character (or its tag/indicator) */
        char *tag; /* resolved tag as libyaml reports it ("tag:yaml.org,2002:str"), NULL if none */

        /* YAML_TREE_SCALAR: value is NUL-terminated but may hold NULs itself ("\0" escape): len counts all.
         */
        char *value;
        size_t len;
        YamlScalarKind style;

        /* YAML_TREE_SEQUENCE */
        YamlNode **items;
        size_t n_items;

        /* YAML_TREE_MAPPING, in document order */
        YamlPair *pairs;
        size_t n_pairs;
};

enum {
        YAML_TREE_REJECT_DUPLICATES = 1 << 0,
};

/* Parses one YAML document. *ret is NULL for an empty stream. On malformed or refused input returns
 * PK_EMALFORMED (PK_ETOOBIG past the caps) and, if ret_error, "LINE:COL: message" (caller frees); -ENOMEM on
 * allocation failure. */
int yaml_tree_parse(const char *text, size_t len, unsigned flags, YamlNode **ret, char **ret_error);

YamlNode *yaml_tree_free(YamlNode *n);
DEFINE_TRIVIAL_CLEANUP_FUNC(YamlNode *, yaml_tree_free)

/* The value for key in a mapping (first occurrence), or NULL (also if n is NULL or not a mapping). */
const YamlNode *yaml_tree_get(const YamlNode *n, const char *key);
/* Item i of a sequence, or NULL. */
const YamlNode *yaml_tree_item(const YamlNode *n, size_t i);

/* A plain scalar that YAML reads as null: "", "~", "null", "Null", "NULL" (or an explicit !!null tag). */
bool yaml_tree_is_null(const YamlNode *n);
/* True for a scalar written as a string: quoted, block, or tagged !!str / "!". */
bool yaml_tree_is_string(const YamlNode *n);
/* The tag without "tag:yaml.org,2002:" ("str", "int"), the raw tag for others, NULL if none. */
const char *yaml_tree_short_tag(const YamlNode *n);
/* "a mapping", "a sequence", "a string", "null" ... for messages. */
const char *yaml_tree_describe(const YamlNode *n);
