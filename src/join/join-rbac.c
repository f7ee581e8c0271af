/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>

#include "join/join-internal.h"
#include "join/join-rbac.h"
#include "join/join-token.h"

/* A ClusterRoleBinding of protokube's: group gets role. */
static json_t *binding(const char *name, const char *role, const char *group) {
        return json_pack("{s:s,s:s,s:{s:s,s:{s:s}},s:{s:s,s:s,s:s},s:[{s:s,s:s,s:s}]}", "apiVersion",
                         "rbac.authorization.k8s.io/v1", "kind", "ClusterRoleBinding", "metadata", "name",
                         name, "labels", JOIN_MANAGED_BY_LABEL, "protokube", "roleRef", "apiGroup",
                         "rbac.authorization.k8s.io", "kind", "ClusterRole", "name", role, "subjects",
                         "apiGroup", "rbac.authorization.k8s.io", "kind", "Group", "name", group);
}

int join_rbac_objects(json_t **ret) {
        json_t *l =
            json_pack("[o,o]", binding(JOIN_BOOTSTRAP_BINDING, JOIN_BOOTSTRAP_ROLE, JOIN_TOKEN_GROUP),
                      binding(JOIN_NODE_PROXIER_BINDING, JOIN_NODE_PROXIER_ROLE, JOIN_NODES_GROUP));
        if (!l)
                return -ENOMEM;
        *ret = l;
        return 0;
}

int join_rbac_apply(KubeClient *c, usec_t deadline, char **ret_error) {
        json_t *l = NULL, *o;
        size_t i;
        int r = join_rbac_objects(&l);
        if (r < 0)
                return r;
        json_array_foreach(l, i, o) {
                r = kube_apply(c, o, deadline, NULL, ret_error);
                if (r < 0)
                        break;
        }
        json_decref(l);
        return r < 0 ? r : 0;
}
