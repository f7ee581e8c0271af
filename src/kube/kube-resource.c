/* SPDX-License-Identifier: Apache-2.0 */
#include "kube/kube-resource.h"

#include "shared/json-util.h"

#include <errno.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/string-util.h"

static const KubeResource resources[] = {
        { "v1", "Namespace", "namespaces", false, KUBE_NAME_DNS_LABEL },
        { "v1", "ConfigMap", "configmaps", true, KUBE_NAME_DNS_SUBDOMAIN },
        { "v1", "Secret", "secrets", true, KUBE_NAME_DNS_SUBDOMAIN },
        { "v1", "ServiceAccount", "serviceaccounts", true, KUBE_NAME_DNS_SUBDOMAIN },
        { "v1", "Service", "services", true, KUBE_NAME_DNS1035_LABEL },
        { "v1", "Pod", "pods", true, KUBE_NAME_DNS_SUBDOMAIN },
        { "v1", "Node", "nodes", false, KUBE_NAME_DNS_SUBDOMAIN },
        { "apps/v1", "DaemonSet", "daemonsets", true, KUBE_NAME_DNS_SUBDOMAIN },
        { "apps/v1", "Deployment", "deployments", true, KUBE_NAME_DNS_SUBDOMAIN },
        { "apps/v1", "ReplicaSet", "replicasets", true, KUBE_NAME_DNS_SUBDOMAIN },
        { "apps/v1", "ControllerRevision", "controllerrevisions", true, KUBE_NAME_DNS_SUBDOMAIN },
        { "rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", false, KUBE_NAME_RBAC },
        { "rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings", false,
          KUBE_NAME_RBAC },
        { "rbac.authorization.k8s.io/v1", "Role", "roles", true, KUBE_NAME_RBAC },
        { "rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", true, KUBE_NAME_RBAC },
        /* the API takes any name for a CSR; kubelet's ("csr-x7k2p", "node-csr-<base64url>") are path
         * segments of the RBAC rule's characters, and no other is put in a path here */
        { "certificates.k8s.io/v1", "CertificateSigningRequest", "certificatesigningrequests", false,
          KUBE_NAME_RBAC },
};

int kube_resource_find(const char *api_version, const char *kind, const KubeResource **ret,
                       char **ret_error) {
        bool kind_known = false;
        for (size_t i = 0; i < ELEMENTSOF(resources); i++) {
                if (!streq(strempty(kind), resources[i].kind))
                        continue;
                kind_known = true;
                if (streq(strempty(api_version), resources[i].api_version)) {
                        *ret = &resources[i];
                        return 0;
                }
        }
        if (kind_known)
                return error_setf(ret_error, -EINVAL, "kind '%s' is not served as apiVersion '%s' here",
                                  kind, strnull(api_version));
        return error_setf(ret_error, -EINVAL,
                          "unknown kind '%s' (apiVersion '%s'): protokube knows only Namespace, ConfigMap, "
                          "Secret, ServiceAccount, Service, Pod, Node, DaemonSet, Deployment, ReplicaSet, "
                          "ControllerRevision, "
                          "ClusterRole, ClusterRoleBinding, Role, RoleBinding, "
                          "CertificateSigningRequest",
                          strnull(kind), strnull(api_version));
}

int kube_resource_path(const KubeResource *res, const char *ns, const char *name, char **ret,
                       char **ret_error) {
        if (res->namespaced && !kube_name_valid(KUBE_NAME_DNS_LABEL, ns))
                return error_setf(ret_error, -EINVAL, "%s: invalid namespace '%s'", res->kind, strnull(ns));
        if (!res->namespaced && !isempty(ns))
                return error_setf(ret_error, -EINVAL, "%s is cluster-scoped: no namespace ('%s') allowed",
                                  res->kind, ns);
        if (name && !kube_name_valid(res->name_rule, name))
                return kube_name_check(res->name_rule, res->kind, name, ret_error);
        const char *slash = strchr(res->api_version, '/');
        _cleanup_free_ char *base =
            slash ? strjoin("/apis/", res->api_version) : strjoin("/api/", res->api_version);
        char *p = res->namespaced ? strjoin(strnull(base), "/namespaces/", ns, "/", res->plural)
                                  : strjoin(strnull(base), "/", res->plural);
        if (!base || !p) {
                free(p);
                return -ENOMEM;
        }
        if (name && strextend_printf(&p, "/%s", name) < 0) {
                free(p);
                return -ENOMEM;
        }
        *ret = p;
        return 0;
}

bool kube_pod_ready(const json_t *pod) {
        const json_t *c;
        size_t i;
        json_array_foreach(json_get(pod, "status", "conditions"), i,
                           c) if (streq_ptr(json_get_string(c, "type"),
                                            "Ready")) return streq_ptr(json_get_string(c, "status"), "True");
        return false;
}

const char *kube_pod_phase(const json_t *pod) {
        return json_get_string(pod, "status", "phase");
}

const json_t *kube_controller_ref_of(const json_t *metadata) {
        const json_t *o;
        size_t i;
        json_array_foreach(json_get(metadata, "ownerReferences"), i,
                           o) if (json_is_true(json_object_get(o, "controller"))) return o;
        return NULL;
}

const json_t *kube_controller_ref(const json_t *obj) {
        return kube_controller_ref_of(json_get(obj, "metadata"));
}
