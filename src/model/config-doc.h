/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A component's configuration document (KubeletConfiguration, KubeProxyConfiguration,
 * KubeSchedulerConfiguration) as plain data: nested mappings whose leaves are strings, ints, bools, lists of
 * strings, or mappings of strings or bools. manifest/pod-yaml.h writes it (keys sorted). Built by the
 * components' file renderer from the field tables; a leaf is addressed by its dotted path
 * ("clientConnection.kubeconfig"). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/macro.h"

typedef enum ConfigDocKind {
        CONFIG_DOC_MAP,    /* children, by key */
        CONFIG_DOC_STRING, /* value */
        CONFIG_DOC_INT,    /* value: the decimal text */
        CONFIG_DOC_BOOL,   /* value: "true" or "false" */
        CONFIG_DOC_LIST,   /* list: strings */
        _CONFIG_DOC_KIND_MAX,
} ConfigDocKind;

typedef struct ConfigDoc ConfigDoc;
struct ConfigDoc {
        ConfigDocKind kind;
        char *key; /* NULL for the root */
        char *value;
        char **list;
        ConfigDoc **children;
        size_t n_children;
};

/* An empty mapping (the document's root); NULL when out of memory. */
ConfigDoc *config_doc_new(void);
ConfigDoc *config_doc_free(ConfigDoc *d);
DEFINE_TRIVIAL_CLEANUP_FUNC(ConfigDoc *, config_doc_free)

/* Sets the leaf at path (dotted; the mappings on the way are made): a string, an int, a bool, a copy of a
 * list of strings. -EEXIST when the path is already a leaf or a mapping is in the way, -EINVAL for an empty
 * path segment. */
int config_doc_set_string(ConfigDoc *root, const char *path, const char *value);
int config_doc_set_int(ConfigDoc *root, const char *path, int64_t value);
int config_doc_set_bool(ConfigDoc *root, const char *path, bool value);
int config_doc_set_list(ConfigDoc *root, const char *path, char *const *list);
/* The mapping at path, made if absent (a key of it may contain dots: featureGates' names do not, but an
 * eviction signal's "memory.available" does, so map entries are added with config_doc_map_put()). */
int config_doc_map(ConfigDoc *root, const char *path, ConfigDoc **ret);
/* Adds key (taken as it is, dots and all) with a string or bool value to the mapping m. */
int config_doc_map_put_string(ConfigDoc *m, const char *key, const char *value);
int config_doc_map_put_bool(ConfigDoc *m, const char *key, bool value);

/* The node at path, or NULL. */
const ConfigDoc *config_doc_get(const ConfigDoc *root, const char *path);
