/* SPDX-License-Identifier: Apache-2.0 */
/* Whose pods the checkpoint takes, and whose it keeps: a pod of protokube's own workloads only, by name and
 * uid (a label anyone may set), and a component the checkpoint has stays in it while its workload still
 * wants a pod on this node. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "kube/kube-resource.h"
#include "pivot/checkpoint-internal.h"
#include "shared/json-secret.h"
#include "shared/json-util.h"

#define NAMESPACE  "kube-system"
#define MANAGED_BY "app.kubernetes.io/managed-by"

const char *const checkpoint_components[] = { "kube-apiserver", "kube-controller-manager", "kube-scheduler",
                                              NULL };

bool checkpoint_is_component(const char *app) {
        for (size_t i = 0; app && checkpoint_components[i]; i++)
                if (streq(app, checkpoint_components[i]))
                        return true;
        return false;
}

static const char *str_at(const json_t *o, const char *a, const char *b) {
        return json_string_value(json_object_get(json_object_get(o, a), b));
}

const char *checkpoint_manifest_app(const json_t *m) {
        const char *of = json_string_value(
            json_object_get(json_object_get(json_object_get(m, "metadata"), "annotations"), CHECKPOINT_OF));
        return of && strchr(of, '/') ? strchr(of, '/') + 1 : NULL;
}

/* protokube's workload kube-system/<name> of kind ("DaemonSet", "Deployment", "ReplicaSet"): NULL (and 0)
 * when absent or not labelled as protokube's. */
static int get_ours(KubeClient *api, const char *kind, const char *name, usec_t deadline, json_t **ret,
                    char **ret_error) {
        json_t *o = NULL;
        int r = kube_get(api, "apps/v1", kind, NAMESPACE, name, deadline, &o, ret_error);
        if (r == -ENOENT) {
                free(*ret_error);
                *ret_error = NULL;
                *ret = NULL;
                return 0;
        }
        if (r < 0)
                return r;
        if (!streq(strempty(json_string_value(json_object_get(
                       json_object_get(json_object_get(o, "metadata"), "labels"), MANAGED_BY))),
                   "protokube")) {
                json_decref(o);
                o = NULL;
        }
        *ret = o;
        return 0;
}

static int not_ours(char **ret_error, const char *pod, const char *what) {
        return error_setf(ret_error, PK_EMALFORMED, "pod %s/%s is not checkpointed: %s", NAMESPACE, pod,
                          what);
}

int checkpoint_owner_check(KubeClient *api, const json_t *pod, const CheckpointPod *p, usec_t deadline,
                           char **ret_error) {
        const char *name = str_at(pod, "metadata", "name"),
                   *app = json_string_value(json_object_get(
                       json_object_get(json_object_get(pod, "metadata"), "labels"), "k8s-app"));
        bool ds = streq(p->owner.kind, "DaemonSet");
        const char *wkind = ds ? "DaemonSet" : "Deployment";
        _cleanup_free_ char *want = strprintf("%s/%s", wkind, strempty(app)), *why = NULL;
        json_t *w = NULL, *rs = NULL;
        if (!want)
                return -ENOMEM;
        if (!checkpoint_is_component(app) || !streq(p->workload, want))
                return error_setf(
                    ret_error, PK_EMALFORMED,
                    "pod %s/%s is not checkpointed: its k8s-app is '%s' but it is controlled by %s",
                    NAMESPACE, strnull(name), strnull(app), p->workload);
        int r = get_ours(api, wkind, app, deadline, &w, ret_error);
        if (r >= 0 && !w)
                r = not_ours(
                    ret_error, strnull(name),
                    "protokube's workload of it (managed-by protokube, kube-system) does not exist");
        if (r >= 0 && !ds)
                r = get_ours(api, "ReplicaSet", p->owner.name, deadline, &rs, ret_error);
        if (r >= 0 && !ds && !rs)
                r = not_ours(ret_error, strnull(name), "its ReplicaSet is not protokube's");
        if (r < 0)
                goto done;
        /* the pod's owner: the DaemonSet itself, or a ReplicaSet the Deployment controls */
        const json_t *owner = ds ? w : rs, *rs_ref = rs ? kube_controller_ref(rs) : NULL;
        const char *uid = str_at(owner, "metadata", "uid"), *wuid = str_at(w, "metadata", "uid");
        if (!streq_ptr(p->owner.uid, uid))
                why = strprintf("its owner %s %s has uid %s, protokube's %s", p->owner.kind, p->owner.name,
                                strnull(p->owner.uid), strnull(uid));
        else if (!ds && (!streq_ptr(json_string_value(json_object_get(rs_ref, "kind")), "Deployment") ||
                         !streq_ptr(json_string_value(json_object_get(rs_ref, "name")), app) ||
                         !streq_ptr(json_string_value(json_object_get(rs_ref, "uid")), wuid)))
                why = strprintf("its ReplicaSet %s is not controlled by protokube's Deployment %s (uid %s)",
                                p->owner.name, app, strnull(wuid));
        if (why)
                r = not_ours(ret_error, strnull(name), why);
done:
        json_decref(w);
        json_decref(rs);
        return r;
}

/* Every key of the pod template's nodeSelector is a label of the Node with that value. */
static bool node_matches(const json_t *w, const json_t *node) {
        const json_t *sel =
            json_object_get(json_object_get(json_object_get(json_object_get(w, "spec"), "template"), "spec"),
                            "nodeSelector");
        const json_t *labels = json_object_get(json_object_get(node, "metadata"), "labels"), *v;
        const char *key;
        json_object_foreach((json_t *)sel, key, v) {
                if (!streq_ptr(json_string_value(json_object_get(labels, key)), json_string_value(v)))
                        return false;
        }
        return true;
}

/* Its status says every pod it wants exists, runs the current template and is available. */
static bool deployment_settled(const json_t *w) {
        json_int_t want = json_is_integer(json_object_get(json_object_get(w, "spec"), "replicas"))
                              ? json_integer_value(json_get(w, "spec", "replicas"))
                              : 1;
        return json_integer_value(json_get(w, "status", "observedGeneration")) >=
                   json_integer_value(json_get(w, "metadata", "generation")) &&
               json_integer_value(json_get(w, "status", "replicas")) == want &&
               json_integer_value(json_get(w, "status", "updatedReplicas")) == want &&
               json_integer_value(json_get(w, "status", "availableReplicas")) == want;
}

int checkpoint_workload_wants(KubeClient *api, const char *kind, const char *component, const char *node,
                              usec_t deadline, char **ret_why, char **ret_error) {
        json_t *w = NULL, *n = NULL;
        bool wants = false;
        int r = get_ours(api, kind, component, deadline, &w, ret_error);
        if (r < 0 || !w)
                return r;
        if (streq(kind, "DaemonSet")) {
                r = kube_get(api, "v1", "Node", NULL, node, deadline, &n, ret_error);
                wants = r >= 0 && node_matches(w, n);
                if (wants && !(*ret_why = strprintf("its DaemonSet wants a pod on %s", node)))
                        r = -ENOMEM;
        } else {
                wants = !deployment_settled(w);
                if (wants &&
                    !(*ret_why = strprintf("its Deployment has not settled: a pod of it is missing, "
                                           "and may come to %s",
                                           node)))
                        r = -ENOMEM;
        }
        json_decref(w);
        json_decref(n);
        return r < 0 ? r : wants;
}
