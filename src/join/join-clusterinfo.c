/* SPDX-License-Identifier: Apache-2.0 */
/* kube-public/cluster-info (join-clusterinfo.h): built for the masters to publish, parsed for a worker. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "join/join-clusterinfo.h"
#include "join/join-internal.h"
#include "pki/pki-cert.h"
#include "shared/crypto.h"
#include "shared/json-util.h"
#include "shared/openssl-util.h"
#include "shared/yaml-tree.h"

int join_cluster_info_kubeconfig(X509 *ca, const char *server, char **ret) {
        _cleanup_free_ char *pem = NULL, *b64 = NULL;
        size_t len = 0;
        if (!ca || isempty(server) || string_has_cc(server) || strchr(server, '"'))
                return -EINVAL;
        int r = pki_cert_to_pem(ca, &pem, &len);
        if (r < 0)
                return r;
        r = crypto_base64_encode(pem, len, &b64);
        if (r < 0)
                return r;
        /* clientcmd's serialization of a Config with one cluster named "" and nothing else, as kubeadm
         * publishes it (keys in its order, empty lists as null) */
        char *t = strprintf("apiVersion: v1\n"
                            "clusters:\n"
                            "- cluster:\n"
                            "    certificate-authority-data: %s\n"
                            "    server: %s\n"
                            "  name: \"\"\n"
                            "contexts: null\n"
                            "current-context: \"\"\n"
                            "kind: Config\n"
                            "preferences: {}\n"
                            "users: null\n",
                            b64, server);
        if (!t)
                return -ENOMEM;
        *ret = t;
        return 0;
}

static json_t *config_map(const char *kubeconfig) {
        return json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                         "metadata", "name", JOIN_CLUSTER_INFO_NAME, "namespace",
                         JOIN_CLUSTER_INFO_NAMESPACE, "labels", JOIN_MANAGED_BY_LABEL, "protokube", "data",
                         JOIN_CLUSTER_INFO_KEY, kubeconfig);
}

/* get on the one ConfigMap, nothing else of kube-public */
static json_t *role(void) {
        return json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:[{s:[s],s:[s],s:[s],s:[s]}]}", "apiVersion",
                         "rbac.authorization.k8s.io/v1", "kind", "Role", "metadata", "name",
                         JOIN_CLUSTER_INFO_ROLE, "namespace", JOIN_CLUSTER_INFO_NAMESPACE, "labels",
                         JOIN_MANAGED_BY_LABEL, "protokube", "rules", "apiGroups", "", "resources",
                         "configmaps", "resourceNames", JOIN_CLUSTER_INFO_NAME, "verbs", "get");
}

static json_t *role_binding(void) {
        return json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:s,s:s,s:s},s:[{s:s,s:s,s:s}]}", "apiVersion",
                         "rbac.authorization.k8s.io/v1", "kind", "RoleBinding", "metadata", "name",
                         JOIN_CLUSTER_INFO_ROLE, "namespace", JOIN_CLUSTER_INFO_NAMESPACE, "labels",
                         JOIN_MANAGED_BY_LABEL, "protokube", "roleRef", "apiGroup",
                         "rbac.authorization.k8s.io", "kind", "Role", "name", JOIN_CLUSTER_INFO_ROLE,
                         "subjects", "apiGroup", "rbac.authorization.k8s.io", "kind", "User", "name",
                         JOIN_CLUSTER_INFO_USER);
}

int join_cluster_info_objects(X509 *ca, const char *server, json_t **ret) {
        _cleanup_free_ char *kubeconfig = NULL;
        int r = join_cluster_info_kubeconfig(ca, server, &kubeconfig);
        if (r < 0)
                return r;
        json_t *l = json_array();
        if (!l || json_array_append_new(l, config_map(kubeconfig)) < 0 ||
            json_array_append_new(l, role()) < 0 || json_array_append_new(l, role_binding()) < 0) {
                json_decref(l);
                return -ENOMEM;
        }
        *ret = l;
        return 0;
}

int join_cluster_info_apply(KubeClient *c, X509 *ca, const char *server, usec_t deadline, char **ret_error) {
        _cleanup_(json_decrefp) json_t *l = NULL;
        json_t *o;
        size_t i;
        int r = join_cluster_info_objects(ca, server, &l);
        if (r == -EINVAL)
                return error_setf(ret_error, r, "cluster-info: no CA or no server to publish");
        if (r < 0)
                return r;
        json_array_foreach(l, i, o) {
                r = kube_apply(c, o, deadline, NULL, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- the parser: untrusted input ---- */

static int refuse(char **ret_error, const char *why) {
        return error_setf(ret_error, PK_EMALFORMED, "cluster-info: %s", why);
}

/* The one PEM certificate of a CA in the base64 text b64. */
static int ca_from_data(const YamlNode *b64, X509 **ret, char **ret_error) {
        _cleanup_free_ uint8_t *pem = NULL;
        _cleanup_(X509_freep) X509 *ca = NULL;
        size_t len = 0;
        if (!b64 || b64->kind != YAML_TREE_SCALAR || b64->len == 0)
                return refuse(ret_error, "its cluster has no certificate-authority-data");
        int r = crypto_base64_decode(b64->value, b64->len, &pem, &len);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return refuse(ret_error, "certificate-authority-data is not base64");
        if (pki_pem_count((const char *)pem, len, PKI_PEM_BEGIN_CERT) == 0)
                return refuse(ret_error, "certificate-authority-data holds no PEM certificate");
        if (pki_pem_count((const char *)pem, len, PKI_PEM_BEGIN) != 1)
                return refuse(ret_error, "certificate-authority-data holds more than one PEM block (one CA "
                                         "certificate expected)");
        if (pki_cert_from_pem((const char *)pem, len, &ca) < 0)
                return refuse(ret_error, "the certificate in certificate-authority-data does not parse");
        int is_ca = X509_check_ca(ca);
        ERR_clear_error();
        if (is_ca != 1)
                return refuse(ret_error, "the certificate in certificate-authority-data is not a CA");
        *ret = TAKE_PTR(ca);
        return 0;
}

static int server_of(const YamlNode *s, char **ret, char **ret_error) {
        if (!s || s->kind != YAML_TREE_SCALAR || !startswith(s->value, "https://") ||
            strlen(s->value) != s->len || s->len > 512 || string_has_cc(s->value) || s->len <= 8)
                return refuse(ret_error, "its cluster's server is not an https:// URL");
        if (!ret)
                return 0;
        *ret = strdup(s->value);
        return *ret ? 0 : -ENOMEM;
}

/* The one cluster of the kubeconfig text. */
static int parse_kubeconfig(const char *text, size_t len, X509 **ret_ca, char **ret_server,
                            char **ret_error) {
        _cleanup_(yaml_tree_freep) YamlNode *root = NULL;
        _cleanup_free_ char *err = NULL;
        _cleanup_(X509_freep) X509 *ca = NULL;
        int r = yaml_tree_parse(text, len, YAML_TREE_REJECT_DUPLICATES, &root, &err);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return error_setf(ret_error, PK_EMALFORMED, "cluster-info: data.%s does not parse: %s",
                                  JOIN_CLUSTER_INFO_KEY, strna(err));
        if (!root || root->kind != YAML_TREE_MAPPING)
                return refuse(ret_error, "data." JOIN_CLUSTER_INFO_KEY " is not a kubeconfig (a mapping)");
        const YamlNode *clusters = yaml_tree_get(root, "clusters");
        if (!clusters || clusters->kind != YAML_TREE_SEQUENCE || clusters->n_items == 0)
                return refuse(ret_error, "its kubeconfig names no cluster");
        if (clusters->n_items != 1)
                return refuse(ret_error, "its kubeconfig names more than one cluster (one expected)");
        const YamlNode *cluster = yaml_tree_get(yaml_tree_item(clusters, 0), "cluster");
        if (!cluster || cluster->kind != YAML_TREE_MAPPING)
                return refuse(ret_error, "its kubeconfig's cluster entry has no cluster");
        r = ca_from_data(yaml_tree_get(cluster, "certificate-authority-data"), &ca, ret_error);
        if (r >= 0)
                r = server_of(yaml_tree_get(cluster, "server"), ret_server, ret_error);
        if (r < 0)
                return r;
        *ret_ca = TAKE_PTR(ca);
        return 0;
}

int join_cluster_info_ca(const char *json, size_t len, X509 **ret_ca, char **ret_server, char **ret_error) {
        _cleanup_(json_decrefp) json_t *cm = NULL;
        json_error_t jerr;
        if (!json || !ret_ca)
                return -EINVAL;
        if (len > JOIN_CLUSTER_INFO_MAX)
                return error_setf(ret_error, PK_EMALFORMED, "cluster-info: %zu bytes, at most %u", len,
                                  JOIN_CLUSTER_INFO_MAX);
        cm = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!cm || !json_is_object(cm))
                return refuse(ret_error, "not a JSON object");
        const char *kind = json_get_string(cm, "kind"), *version = json_get_string(cm, "apiVersion");
        if (!kind || !streq(kind, "ConfigMap") || !version || !streq(version, "v1"))
                return refuse(ret_error, "not a ConfigMap (kind v1/ConfigMap expected)");
        const char *name = json_get_string(cm, "metadata", "name"),
                   *ns = json_get_string(cm, "metadata", "namespace");
        if (!name || !streq(name, JOIN_CLUSTER_INFO_NAME) || !ns || !streq(ns, JOIN_CLUSTER_INFO_NAMESPACE))
                return refuse(ret_error, "the ConfigMap is not " JOIN_CLUSTER_INFO_NAMESPACE
                                         "/" JOIN_CLUSTER_INFO_NAME);
        const json_t *k = json_get(cm, "data", JOIN_CLUSTER_INFO_KEY);
        if (!json_is_string(k))
                return refuse(ret_error, "the ConfigMap has no data." JOIN_CLUSTER_INFO_KEY);
        return parse_kubeconfig(json_string_value(k), json_string_length(k), ret_ca, ret_server, ret_error);
}
