/* SPDX-License-Identifier: Apache-2.0 */
/* The node-name bindings: their ConfigMap both ways, and create / replace / adopt through the API. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "join/join-binding.h"
#include "join/join-internal.h"
#include "kube/kube-name.h"
#include "shared/json-util.h"

void join_binding_done(JoinBinding *b) {
        free(b->node);
        free(b->machine);
        free(b->csr);
        free(b->node_uid);
        free(b->uid);
        free(b->resource_version);
        free(b->invalid);
        *b = (JoinBinding){};
}

void join_bindings_free(JoinBinding *l, size_t n) {
        for (size_t i = 0; l && i < n; i++)
                join_binding_done(&l[i]);
        free(l);
}

char *join_binding_name(const char *node) {
        return strjoin(JOIN_BINDING_PREFIX, node);
}

static int owner_refs(const JoinBinding *b, json_t **ret) {
        *ret = json_pack("[{s:s,s:s,s:s,s:s}]", "apiVersion", "v1", "kind", "Node", "name", b->node, "uid",
                         b->node_uid);
        return *ret ? 0 : -ENOMEM;
}

int join_binding_to_json(const JoinBinding *b, json_t **ret) {
        char since[RFC3339_MAX];
        _cleanup_free_ char *name = join_binding_name(strempty(b->node));
        if (!name || !b->node || !b->machine || !format_rfc3339(since, b->since))
                return -EINVAL;
        json_t *cm =
            json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s,s:s}},s:{s:s,s:s,s:s,s:s}}", "apiVersion", "v1", "kind",
                      "ConfigMap", "metadata", "name", name, "namespace", JOIN_BINDING_NAMESPACE, "labels",
                      JOIN_MANAGED_BY_LABEL, "protokube", JOIN_BINDING_LABEL, "true", "data", "node",
                      b->node, "machine", b->machine, "csr", strempty(b->csr), "since", since);
        if (!cm)
                return -ENOMEM;
        json_t *meta = json_object_get(cm, "metadata"), *owners = NULL;
        if ((b->resource_version &&
             json_object_set_new(meta, "resourceVersion", json_string(b->resource_version)) < 0) ||
            (b->node_uid &&
             (owner_refs(b, &owners) < 0 || json_object_set_new(meta, "ownerReferences", owners) < 0))) {
                json_decref(cm);
                return -ENOMEM;
        }
        *ret = cm;
        return 0;
}

/* The uid of the owner Node called node, NULL when it has none. */
static const char *node_owner_uid(const json_t *cm, const char *node) {
        const json_t *o;
        size_t i;
        json_array_foreach(json_get(cm, "metadata", "ownerReferences"), i, o) {
                if (streq_ptr(json_get_string(o, "kind"), "Node") &&
                    streq_ptr(json_get_string(o, "apiVersion"), "v1") &&
                    streq_ptr(json_get_string(o, "name"), node))
                        return json_get_string(o, "uid");
        }
        return NULL;
}

static int dup_opt(const char *s, char **ret) {
        *ret = s ? strdup(s) : NULL;
        return !s || *ret ? 0 : -ENOMEM;
}

int join_binding_from_json(const json_t *cm, JoinBinding *ret, char **ret_error) {
        const char *name = json_get_string(cm, "metadata", "name");
        const char *node = json_get_string(cm, "data", "node"),
                   *machine = json_get_string(cm, "data", "machine"),
                   *since = json_get_string(cm, "data", "since");
        const char *of = name ? startswith(name, JOIN_BINDING_PREFIX) : NULL;
        _cleanup_(join_binding_done) JoinBinding b = {};
        if (!of || !streq_ptr(node, of) || !kube_name_valid(KUBE_NAME_DNS_SUBDOMAIN, node))
                return error_setf(ret_error, -EINVAL,
                                  "ConfigMap %s/%s: data.node is not the node name of its name",
                                  JOIN_BINDING_NAMESPACE, strnull(name));
        if (isempty(machine) || strlen(machine) > JOIN_MACHINE_MAX || string_has_cc(machine))
                return error_setf(ret_error, -EINVAL, "ConfigMap %s/%s: data.machine is not a machine's id",
                                  JOIN_BINDING_NAMESPACE, name);
        if (!since || parse_rfc3339(since, &b.since) < 0)
                return error_setf(ret_error, -EINVAL, "ConfigMap %s/%s: data.since is not an RFC 3339 time",
                                  JOIN_BINDING_NAMESPACE, name);
        const char *csr = json_get_string(cm, "data", "csr");
        if (dup_opt(node, &b.node) < 0 || dup_opt(machine, &b.machine) < 0 ||
            dup_opt(csr && !string_has_cc(csr) ? csr : NULL, &b.csr) < 0 ||
            dup_opt(node_owner_uid(cm, node), &b.node_uid) < 0 ||
            dup_opt(json_get_string(cm, "metadata", "uid"), &b.uid) < 0 ||
            dup_opt(json_get_string(cm, "metadata", "resourceVersion"), &b.resource_version) < 0)
                return -ENOMEM;
        *ret = b;
        b = (JoinBinding){};
        return 0;
}

int join_binding_list(KubeClient *c, usec_t deadline, JoinBinding **ret, size_t *ret_n, char **ret_error) {
        json_t *list = NULL;
        int r = kube_list(c, "v1", "ConfigMap", JOIN_BINDING_NAMESPACE, JOIN_BINDING_LABEL "=true", deadline,
                          &list, ret_error);
        if (r < 0)
                return r;
        const json_t *items = json_get(list, "items"), *item;
        size_t n = json_array_size(items), i;
        JoinBinding *l = new0(JoinBinding, n);
        if (!l)
                r = -ENOMEM;
        json_array_foreach(items, i, item) {
                _cleanup_free_ char *why = NULL;
                if (r < 0 || (r = join_binding_from_json(item, &l[i], &why)) != -EINVAL)
                        continue;
                const char *name = json_get_string(item, "metadata", "name");
                const char *node = name ? startswith(name, JOIN_BINDING_PREFIX) : NULL;
                r = dup_opt(node, &l[i].node);
                if (r >= 0)
                        l[i].invalid = TAKE_PTR(why);
        }
        json_decref(list);
        if (r < 0) {
                join_bindings_free(l, n);
                return r;
        }
        *ret = l;
        *ret_n = n;
        return 0;
}

static int write_binding(KubeClient *c, const JoinBinding *b, bool create, usec_t deadline,
                         char **ret_error) {
        json_t *cm = NULL;
        int r = join_binding_to_json(b, &cm);
        if (r < 0)
                return r == -EINVAL
                           ? error_setf(ret_error, r, "binding of node '%s': incomplete", strnull(b->node))
                           : r;
        r = create ? kube_create(c, cm, deadline, NULL, ret_error)
                   : kube_replace(c, cm, NULL, deadline, NULL, ret_error);
        json_decref(cm);
        return r;
}

int join_binding_create(KubeClient *c, const char *node, const char *machine, const char *csr, usec_t now,
                        usec_t deadline, char **ret_error) {
        JoinBinding b = {
                .node = (char *)node, .machine = (char *)machine, .csr = (char *)csr, .since = now
        };
        return write_binding(c, &b, true, deadline, ret_error);
}

int join_binding_replace(KubeClient *c, const JoinBinding *old, const char *machine, const char *csr,
                         usec_t now, usec_t deadline, char **ret_error) {
        /* a new machine: no owner until its Node registers */
        JoinBinding b = { .node = old->node,
                          .machine = (char *)machine,
                          .csr = (char *)csr,
                          .since = now,
                          .resource_version = old->resource_version };
        if (!old->resource_version)
                return error_setf(ret_error, -EINVAL,
                                  "binding of node '%s': no resourceVersion to replace at",
                                  strnull(old->node));
        return write_binding(c, &b, false, deadline, ret_error);
}

int join_binding_adopt(KubeClient *c, const JoinBinding *old, const char *node_uid, usec_t deadline,
                       char **ret_error) {
        JoinBinding b = *old;
        b.node_uid = (char *)node_uid;
        if (!old->resource_version || isempty(node_uid))
                return error_setf(ret_error, -EINVAL, "binding of node '%s': no resourceVersion or Node uid",
                                  strnull(old->node));
        return write_binding(c, &b, false, deadline, ret_error);
}
