/* SPDX-License-Identifier: Apache-2.0 */
#include "shared/xml.h"

#include <expat.h>
#include <limits.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"

/* expat reports the namespace URI and the local name joined by this byte; it cannot occur in XML names. */
#define NS_SEP '\x01'

typedef struct XmlBuilder {
        XML_Parser parser;
        XmlNode *root, *cur;
        unsigned depth;
        size_t n_nodes;
        int error;
} XmlBuilder;

XmlNode *xml_node_free(XmlNode *n) {
        /* Siblings iteratively, children recursively: depth is capped at XML_DEPTH_MAX. */
        while (n) {
                XmlNode *next = n->next;
                xml_node_free(n->children);
                free(n->name);
                free(n->text);
                free(n);
                n = next;
        }
        return NULL;
}

static void builder_fail(XmlBuilder *b, int error) {
        if (b->error == 0)
                b->error = error;
        XML_StopParser(b->parser, XML_FALSE);
}

static void on_start(void *userdata, const XML_Char *name, const XML_Char **attrs) {
        XmlBuilder *b = userdata;
        if (b->error < 0)
                return;
        if (b->depth >= XML_DEPTH_MAX || b->n_nodes >= XML_NODES_MAX)
                return builder_fail(b, PK_ETOOBIG);
        if (!b->cur && b->root) /* a second top-level element: expat reports this itself, but be sure */
                return builder_fail(b, PK_EMALFORMED);

        const char *local = strrchr(name, NS_SEP);
        XmlNode *n = new0(XmlNode, 1);
        if (!n)
                return builder_fail(b, -ENOMEM);
        n->name = strdup(local ? local + 1 : name);
        n->text = strdup("");
        if (!n->name || !n->text) {
                xml_node_free(n);
                return builder_fail(b, -ENOMEM);
        }
        n->parent = b->cur;
        if (!b->cur)
                b->root = n;
        else if (b->cur->last_child)
                b->cur->last_child = b->cur->last_child->next = n;
        else
                b->cur->children = b->cur->last_child = n;
        b->cur = n;
        b->depth++;
        b->n_nodes++;
}

static void on_end(void *userdata, const XML_Char *name) {
        XmlBuilder *b = userdata;
        if (b->error < 0 || !b->cur)
                return;
        b->cur = b->cur->parent;
        b->depth--;
}

static void on_text(void *userdata, const XML_Char *s, int len) {
        XmlBuilder *b = userdata;
        if (b->error < 0 || !b->cur || len <= 0)
                return;
        XmlNode *n = b->cur;
        /* The total text is bounded by the document, which the caller caps. */
        char *t = realloc(n->text, n->text_len + (size_t)len + 1);
        if (!t)
                return builder_fail(b, -ENOMEM);
        memcpy(t + n->text_len, s, (size_t)len);
        n->text_len += (size_t)len;
        t[n->text_len] = 0;
        n->text = t;
}

/* No DOCTYPE at all: API responses never carry one, and refusing it rules out entity expansion attacks. */
static void on_doctype(void *userdata, const XML_Char *name, const XML_Char *sysid, const XML_Char *pubid,
                       int has_internal_subset) {
        builder_fail(userdata, PK_EMALFORMED);
}

static void on_entity_decl(void *userdata, const XML_Char *name, int is_parameter, const XML_Char *value,
                           int value_length, const XML_Char *base, const XML_Char *system_id,
                           const XML_Char *public_id, const XML_Char *notation) {
        builder_fail(userdata, PK_EMALFORMED);
}

int xml_parse(const void *data, size_t len, XmlNode **ret) {
        XmlBuilder b = {};
        if (len > INT_MAX)
                return PK_ETOOBIG;
        b.parser = XML_ParserCreateNS("UTF-8", NS_SEP);
        if (!b.parser)
                return -ENOMEM;
        XML_SetUserData(b.parser, &b);
        XML_SetElementHandler(b.parser, on_start, on_end);
        XML_SetCharacterDataHandler(b.parser, on_text);
        XML_SetStartDoctypeDeclHandler(b.parser, on_doctype);
        XML_SetEntityDeclHandler(b.parser, on_entity_decl);

        enum XML_Status st = XML_Parse(b.parser, data ?: "", (int)len, XML_TRUE);
        if (st != XML_STATUS_OK && b.error == 0)
                b.error = XML_GetErrorCode(b.parser) == XML_ERROR_NO_MEMORY ? -ENOMEM : PK_EMALFORMED;
        if (b.error == 0 && (!b.root || b.cur))
                b.error = PK_EMALFORMED;
        XML_ParserFree(b.parser);
        if (b.error < 0) {
                xml_node_free(b.root);
                return b.error;
        }
        *ret = b.root;
        return 0;
}

XmlNode *xml_child(const XmlNode *n, const char *name) {
        for (XmlNode *c = n ? n->children : NULL; c; c = c->next)
                if (!name || streq(c->name, name))
                        return c;
        return NULL;
}

XmlNode *xml_next_named(const XmlNode *n) {
        for (XmlNode *c = n ? n->next : NULL; c; c = c->next)
                if (streq(c->name, n->name))
                        return c;
        return NULL;
}

XmlNode *xml_path(const XmlNode *n, const char *path) {
        const XmlNode *cur = n;
        char step[256];
        for (const char *p = path; cur && p && *p;) {
                const char *e = strchrnul(p, '/');
                size_t l = (size_t)(e - p);
                if (l == 0 || l >= sizeof(step))
                        return NULL;
                memcpy(step, p, l);
                step[l] = 0;
                cur = xml_child(cur, step);
                p = *e ? e + 1 : e;
        }
        return (XmlNode *)cur;
}

const char *xml_path_text(const XmlNode *n, const char *path) {
        const XmlNode *x = xml_path(n, path);
        return x ? x->text : NULL;
}

int xml_escape_append(char **p, const char *s) {
        size_t old = *p ? strlen(*p) : 0, add = 0;
        for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
                if (*c < 0x20 && *c != '\t' && *c != '\n' && *c != '\r')
                        return -EINVAL; /* not representable in XML 1.0 (§2.2) */
                add += strchr("&<>\"'", *c) ? 6 : 1;
        }
        char *n = realloc(*p, old + add + 1), *o;
        if (!n)
                return -ENOMEM;
        o = n + old;
        for (const char *c = s; *c; c++) {
                const char *e = *c == '&'    ? "&amp;"
                                : *c == '<'  ? "&lt;"
                                : *c == '>'  ? "&gt;"
                                : *c == '"'  ? "&quot;"
                                : *c == '\'' ? "&apos;"
                                             : NULL;
                if (e) {
                        size_t l = strlen(e);
                        memcpy(o, e, l);
                        o += l;
                } else
                        *o++ = *c;
        }
        *o = 0;
        *p = n;
        return 0;
}

int xml_path_text_dup(const XmlNode *n, const char *path, size_t max, char **ret) {
        const char *t = xml_path_text(n, path);
        *ret = NULL;
        if (isempty(t))
                return 0;
        if (strlen(t) > max || string_has_cc(t))
                return PK_EMALFORMED;
        *ret = strdup(t);
        return *ret ? 0 : -ENOMEM;
}
