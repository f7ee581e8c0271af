/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A small read-only DOM over expat, for API responses (EC2, Route53). Bounded: documents with a DOCTYPE (and
 * so any entity definition) are refused, depth and node count are capped, and malformed input is
 * PK_EMALFORMED, never a crash. Namespaces are dropped: nodes carry their local name only. */

#include <stddef.h>

#include "basic/macro.h"

#define XML_DEPTH_MAX 64
#define XML_NODES_MAX (512U * 1024)

typedef struct XmlNode XmlNode;
struct XmlNode {
        char *name; /* local name, without namespace */
        char *text; /* the character data directly inside this element, never NULL */
        size_t text_len;
        XmlNode *parent, *children, *last_child, *next;
};

/* Parses data[0..len) (no NUL needed). Returns PK_EMALFORMED for anything that is not one well-formed
 * element tree, PK_ETOOBIG past the caps. *ret: caller frees with xml_node_free(). */
int xml_parse(const void *data, size_t len, XmlNode **ret);
XmlNode *xml_node_free(XmlNode *n);
DEFINE_TRIVIAL_CLEANUP_FUNC(XmlNode *, xml_node_free);

/* First child named name (NULL for any), or NULL. */
XmlNode *xml_child(const XmlNode *n, const char *name) _pure_;
/* Next sibling after n with the same name as n, or NULL. */
XmlNode *xml_next_named(const XmlNode *n) _pure_;
/* Follows "a/b/c" from n through first children of each name. NULL when any step is missing. */
XmlNode *xml_path(const XmlNode *n, const char *path) _pure_;
/* The text of xml_path(n, path), or NULL when absent. */
const char *xml_path_text(const XmlNode *n, const char *path) _pure_;
/* A copy of xml_path_text() for keeping (caller frees); *ret NULL, not an error, when the element is absent
 * or empty. PK_EMALFORMED for text longer than max or holding control characters: values from outside. */
int xml_path_text_dup(const XmlNode *n, const char *path, size_t max, char **ret);

#define XML_FOREACH_NAMED(c, parent, nm) \
        for (XmlNode *c = xml_child((parent), (nm)); c; c = xml_next_named(c))

/* Appends s to *p with XML escaping of & < > " ' (for building request bodies). */
int xml_escape_append(char **p, const char *s);
