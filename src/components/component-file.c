/* SPDX-License-Identifier: Apache-2.0 */
#include "components/component-file.h"

#include <errno.h>
#include <stdlib.h>

#include "basic/parse-util.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "components/flags.h"
#include "manifest/pod-yaml.h"
#include "spec/component-config.h"

char *component_file_path(const ComponentFileDef *d, const char *root) {
        return strjoin(root ?: COMPONENT_CONFIG_ROOT, "/", d->dir, "/" COMPONENT_CONFIG_NAME);
}

const char *component_file_api_version(const ComponentFileDef *d, unsigned minor) {
        for (const ComponentFileVersion *v = d ? d->versions : NULL; v && v->api_version; v++)
                if (kube_gate_allows(v->k8s, minor))
                        return v->api_version;
        return NULL;
}

/* A map's entries: strings, or bools where the file takes bools (featureGates: map[string]bool). */
static int put_map(ConfigDoc *doc, const Field *f, char *const *map) {
        ConfigDoc *m;
        int r = config_doc_map(doc, f->file_field, &m);
        for (size_t i = 0; r >= 0 && map[i] && map[i + 1]; i += 2) {
                bool b;
                if (!(f->flags & FIELD_FILE_BOOL_VALUES))
                        r = config_doc_map_put_string(m, map[i], map[i + 1]);
                else if (component_config_parse_bool(map[i + 1], &b) < 0)
                        r = -EINVAL; /* the loader refuses it: a spec made in code */
                else
                        r = config_doc_map_put_bool(m, map[i], b);
        }
        return r;
}

/* One row's setting into the document, typed as the file wants it: what the flag would say, with bools and
 * ints as such, lists as sequences and maps as mappings. */
static int put_field(ConfigDoc *doc, const Field *f, const void *config) {
        _cleanup_free_ char *text = NULL;
        int64_t i;
        int r = flags_field_value(f, config, &text);
        if (r < 0 || !text)
                return r; /* nothing set: the component's own default */
        switch (f->type) {
        case FIELD_STRING:
        case FIELD_DURATION: /* metav1.Duration takes Go's form: "1m0s" */
        case FIELD_ENUM:
                return config_doc_set_string(doc, f->file_field, text);
        case FIELD_BOOL:
                return config_doc_set_bool(doc, f->file_field, streq(text, "true"));
        case FIELD_INT:
                r = safe_atoi64(text, &i);
                return r < 0 ? r : config_doc_set_int(doc, f->file_field, i);
        case FIELD_STRV:
                return config_doc_set_list(doc, f->file_field, *(char **const *)FIELD_PTR(config, f));
        case FIELD_MAP:
                return put_map(doc, f, *(char **const *)FIELD_PTR(config, f));
        default:
                return -EINVAL;
        }
}

int component_file_render(const ComponentFileDef *d, const Field *fields, const void *config, unsigned minor,
                          char **ret) {
        _cleanup_(config_doc_freep) ConfigDoc *doc = NULL;
        const char *api_version = component_file_api_version(d, minor);
        if (!api_version)
                return -EOPNOTSUPP;
        doc = config_doc_new();
        if (!doc)
                return -ENOMEM;
        int r = config_doc_set_string(doc, "apiVersion", api_version);
        if (r >= 0)
                r = config_doc_set_string(doc, "kind", d->kind);
        for (const Field *f = fields; r >= 0 && f->name; f++)
                if (field_in_file(f, minor) && kube_gate_allows(f->k8s, minor))
                        r = put_field(doc, f, config);
        if (r < 0)
                return r;
        return config_doc_to_yaml(doc, ret);
}
