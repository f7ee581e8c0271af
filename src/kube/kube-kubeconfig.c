/* SPDX-License-Identifier: Apache-2.0 */
/* A client from a kubeconfig that names its credentials by path (protokube's own: pki/pki-kubeconfig.h). */
#include <errno.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/string-util.h"
#include "kube/kube-internal.h"
#include "shared/yaml-tree.h"

#define KUBECONFIG_MAX (256U * 1024U)

/* The entry of a named list ("clusters", "users", "contexts") with that name, its inner mapping (key
 * "cluster", "user", "context"); with name NULL, the only entry. */
static const YamlNode *named_entry(const YamlNode *root, const char *list, const char *inner,
                                   const char *name) {
        const YamlNode *l = yaml_tree_get(root, list);
        if (!l || l->kind != YAML_TREE_SEQUENCE)
                return NULL;
        if (!name)
                return l->n_items == 1 ? yaml_tree_get(l->items[0], inner) : NULL;
        for (size_t i = 0; i < l->n_items; i++) {
                const YamlNode *n = yaml_tree_get(l->items[i], "name");
                if (n && n->kind == YAML_TREE_SCALAR && streq(n->value, name))
                        return yaml_tree_get(l->items[i], inner);
        }
        return NULL;
}

static const char *scalar(const YamlNode *m, const char *key) {
        const YamlNode *n = yaml_tree_get(m, key);
        return n && n->kind == YAML_TREE_SCALAR && !yaml_tree_is_null(n) ? n->value : NULL;
}

/* A path as kubectl reads it: relative to the kubeconfig's directory. */
static int resolve(const char *dir, const char *p, char **ret) {
        *ret = !p ? NULL : p[0] == '/' ? strdup(p) : strjoin(dir, "/", p);
        return !p || *ret ? 0 : -ENOMEM;
}

static int from_tree(const char *path, const YamlNode *root, KubeClient **ret, char **ret_error) {
        const char *ctx_name = scalar(root, "current-context");
        const YamlNode *ctx = named_entry(root, "contexts", "context", ctx_name);
        const YamlNode *cluster =
            named_entry(root, "clusters", "cluster", ctx ? scalar(ctx, "cluster") : NULL);
        const YamlNode *user = named_entry(root, "users", "user", ctx ? scalar(ctx, "user") : NULL);
        if (!cluster || !user)
                return error_setf(ret_error, -EINVAL,
                                  "%s: no cluster and user for context '%s' (or no single cluster and user)",
                                  path, strnull(ctx_name));
        static const char *const embedded[] = { "certificate-authority-data", "client-certificate-data",
                                                "client-key-data", "token" };
        for (size_t i = 0; i < ELEMENTSOF(embedded); i++)
                if (yaml_tree_get(i == 0 ? cluster : user, embedded[i]))
                        return error_setf(
                            ret_error, -EINVAL,
                            "%s: '%s' is not supported: name the files (certificate-authority, "
                            "client-certificate, client-key)",
                            path, embedded[i]);
        _cleanup_free_ char *copy = strdup(path), *ca = NULL, *cert = NULL, *key = NULL;
        if (!copy)
                return -ENOMEM;
        const char *dir = dirname(copy);
        if (resolve(dir, scalar(cluster, "certificate-authority"), &ca) < 0 ||
            resolve(dir, scalar(user, "client-certificate"), &cert) < 0 ||
            resolve(dir, scalar(user, "client-key"), &key) < 0)
                return -ENOMEM;
        KubeClientConfig cfg = {
                .server = scalar(cluster, "server"), .ca_file = ca, .cert_file = cert, .key_file = key
        };
        _cleanup_free_ char *err = NULL;
        int r = kube_client_new(&cfg, ret, &err);
        if (r < 0)
                return error_setf(ret_error, r, "%s: %s", path, strnull(err));
        return 0;
}

int kube_client_new_from_kubeconfig(const char *path, KubeClient **ret, char **ret_error) {
        _cleanup_(yaml_tree_freep) YamlNode *root = NULL;
        _cleanup_free_ char *text = NULL, *perr = NULL;
        size_t len = 0;
        int r = read_full_file(path, KUBECONFIG_MAX, &text, &len);
        if (r < 0)
                return error_setf(ret_error, r, "cannot read kubeconfig '%s': %s", path, pk_strerror(r));
        r = yaml_tree_parse(text, len, YAML_TREE_REJECT_DUPLICATES, &root, &perr);
        if (r < 0)
                return error_setf(ret_error, r, "%s:%s", path, strnull(perr));
        if (!root || root->kind != YAML_TREE_MAPPING)
                return error_setf(ret_error, -EINVAL, "%s: not a kubeconfig (a mapping)", path);
        return from_tree(path, root, ret, ret_error);
}
