/* SPDX-License-Identifier: Apache-2.0 */
#include "pivot/checkpoint.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "kube/kube-name.h"
#include "kube/kube-resource.h"

/* Fields of a pod spec that tie it to the API or the scheduler: a static pod has none of them (kubelet
 * refuses service accounts and API volumes for static pods, and a node's own pod needs no scheduling). */
static const char *const spec_dropped[] = {
        "nodeName",           "serviceAccountName",
        "serviceAccount",     "tolerations",
        "affinity",           "nodeSelector",
        "schedulerName",      "priority",
        "preemptionPolicy",   "topologySpreadConstraints",
        "readinessGates",     "imagePullSecrets",
        "enableServiceLinks", "overhead",
};

void checkpoint_pod_done(CheckpointPod *p) {
        for (size_t i = 0; p->volumes && i < p->n_volumes; i++) {
                free(p->volumes[i].name);
                free(p->volumes[i].dir);
        }
        free(p->volumes);
        free(p->name);
        free(p->workload);
        free(p->owner.kind);
        free(p->owner.name);
        free(p->owner.uid);
        json_decref(p->manifest);
        *p = (CheckpointPod){};
}

static int bad(char **ret_error, const char *pod, const char *what) {
        return error_setf(ret_error, PK_EMALFORMED, "pod %s cannot be checkpointed: %s", strna(pod), what);
}

/* The controlling ownerReference (controller: true), or NULL. */
/* The controlling owner: a DaemonSet, or a ReplicaSet named "<deployment>-<pod-template-hash>", its name
 * checked by its kind's rule: the API checks an ownerReference's name only for being non-empty, and the
 * workload's name becomes the checkpoint's file name. p->owner, p->workload and p->name. */
static int owner_of(CheckpointPod *p, const json_t *meta, const char *pod, char **ret_error) {
        const char *hash =
            json_string_value(json_object_get(json_object_get(meta, "labels"), "pod-template-hash"));
        const json_t *o = kube_controller_ref_of(meta);
        const char *kind = json_string_value(json_object_get(o, "kind")),
                   *name = json_string_value(json_object_get(o, "name")),
                   *uid = json_string_value(json_object_get(o, "uid"));
        _cleanup_free_ char *err = NULL, *base = NULL;
        if (!o || !kind || (!streq(kind, "DaemonSet") && !streq(kind, "ReplicaSet")))
                return bad(ret_error, pod, "not controlled by a DaemonSet or a Deployment's ReplicaSet");
        if (kube_name_check(KUBE_NAME_DNS_SUBDOMAIN, kind, name, &err) < 0)
                return error_setf(ret_error, PK_EMALFORMED,
                                  "pod %s cannot be checkpointed: its controlling owner %s", pod,
                                  strnull(err));
        bool ds = streq(kind, "DaemonSet");
        size_t cut = ds ? 0 : (hash ? strlen(hash) + 1 : 0);
        if (!ds &&
            (cut == 0 || strlen(name) <= cut || !endswith(name, hash) || name[strlen(name) - cut] != '-'))
                return bad(ret_error, pod, "its ReplicaSet's name is not <deployment>-<pod-template-hash>");
        if (!(base = strndup(name, strlen(name) - cut)))
                return -ENOMEM;
        p->owner =
            (CheckpointOwner){ .kind = strdup(kind), .name = strdup(name), .uid = uid ? strdup(uid) : NULL };
        p->workload = strprintf("%s/%s", ds ? "DaemonSet" : "Deployment", base);
        p->name = strprintf("%s-checkpoint", base);
        if (!p->owner.kind || !p->owner.name || (uid && !p->owner.uid) || !p->workload || !p->name)
                return -ENOMEM;
        /* "<name>-checkpoint" is the static pod's name and, with ".json", a file name */
        if (kube_name_check(KUBE_NAME_DNS_SUBDOMAIN, "the checkpoint's name", p->name, &err) < 0)
                return error_setf(ret_error, PK_EMALFORMED, "pod %s cannot be checkpointed: %s", pod,
                                  strnull(err));
        return 0;
}

/* Whether the volume named name is mounted at the service-account path in some container. */
static bool is_token_volume(const json_t *spec, const char *name) {
        static const char *const lists[] = { "containers", "initContainers" };
        for (size_t l = 0; l < ELEMENTSOF(lists); l++) {
                size_t i, j;
                const json_t *c, *m;
                json_array_foreach(json_object_get(spec, lists[l]), i, c)
                    json_array_foreach(json_object_get(c, "volumeMounts"), j, m) {
                        if (streq_ptr(json_string_value(json_object_get(m, "name")), name) &&
                            streq_ptr(json_string_value(json_object_get(m, "mountPath")),
                                      CHECKPOINT_SA_MOUNT))
                                return true;
                }
        }
        return false;
}

/* Removes the mounts of the volume named name from every container. */
static void drop_mounts(json_t *spec, const char *name) {
        static const char *const lists[] = { "containers", "initContainers" };
        for (size_t l = 0; l < ELEMENTSOF(lists); l++) {
                size_t i;
                json_t *c;
                json_array_foreach(json_object_get(spec, lists[l]), i, c) {
                        json_t *mounts = json_object_get(c, "volumeMounts");
                        for (size_t j = json_array_size(mounts); j > 0; j--)
                                if (streq_ptr(json_string_value(
                                                  json_object_get(json_array_get(mounts, j - 1), "name")),
                                              name))
                                        json_array_remove(mounts, j - 1);
                }
        }
}

static int add_volume(CheckpointPod *p, CheckpointSource source, const char *name, const char *dir) {
        if (p->n_volumes >= CHECKPOINT_VOLUMES_MAX)
                return -E2BIG;
        CheckpointVolume *v = reallocarray(p->volumes, p->n_volumes + 1, sizeof(*v));
        if (!v)
                return -ENOMEM;
        p->volumes = v;
        v[p->n_volumes] = (CheckpointVolume){ .source = source, .name = strdup(name), .dir = strdup(dir) };
        p->n_volumes++;
        return v[p->n_volumes - 1].name && v[p->n_volumes - 1].dir ? 0 : -ENOMEM;
}

/* One volume: kept (hostPath, emptyDir), turned into a host directory (secret, configMap) or dropped (the
 * service-account token). */
static int convert_volume(CheckpointPod *p, json_t *spec, json_t *vols, size_t i, const char *checkpoint_dir,
                          const char *pod, char **ret_error) {
        json_t *v = json_array_get(vols, i);
        const char *name = json_string_value(json_object_get(v, "name"));
        const json_t *secret = json_object_get(v, "secret"), *cm = json_object_get(v, "configMap");
        if (!name)
                return bad(ret_error, pod, "a volume without a name");
        if (json_object_get(v, "hostPath") || json_object_get(v, "emptyDir"))
                return 0;
        if (is_token_volume(spec, name)) {
                drop_mounts(spec, name);
                return json_array_remove(vols, i) < 0 ? -ENOMEM : 1;
        }
        if (!secret && !cm)
                return error_setf(ret_error, PK_EMALFORMED,
                                  "pod %s cannot be checkpointed: volume %s is neither hostPath, emptyDir, "
                                  "secret nor configMap",
                                  pod, name);
        const json_t *src = secret ?: cm;
        const char *obj = json_string_value(json_object_get(src, secret ? "secretName" : "name"));
        _cleanup_free_ char *err = NULL;
        if (isempty(obj) || json_object_get(src, "items"))
                return error_setf(
                    ret_error, PK_EMALFORMED,
                    "pod %s cannot be checkpointed: volume %s: a whole %s by name is needed (no "
                    "items)",
                    pod, name, secret ? "Secret" : "ConfigMap");
        /* its name becomes a directory of the checkpoint */
        if (kube_name_check(KUBE_NAME_DNS_SUBDOMAIN, secret ? "Secret" : "ConfigMap", obj, &err) < 0)
                return error_setf(ret_error, PK_EMALFORMED, "pod %s cannot be checkpointed: volume %s: %s",
                                  pod, name, strnull(err));
        _cleanup_free_ char *dir =
            strprintf("%s/%s/%s", checkpoint_dir, secret ? "secrets" : "configmaps", obj);
        if (!dir)
                return -ENOMEM;
        /* recorded before the volume is replaced: obj points into it */
        int r = add_volume(p, secret ? CHECKPOINT_SECRET : CHECKPOINT_CONFIG_MAP, obj, dir);
        if (r < 0)
                return r;
        json_t *host =
            json_pack("{s:s, s:{s:s, s:s}}", "name", name, "hostPath", "path", dir, "type", "Directory");
        if (!host || json_array_set_new(vols, i, host) < 0)
                return -ENOMEM;
        return 0;
}

/* The containers' ports go: with hostNetwork they only declare host ports, and kubelet admits a pod only
 * if no pod it runs declares the same host port. Declared by the checkpoint, 443 would make kubelet refuse
 * the self-hosted apiserver when the API comes back, and the checkpoint would never be retired. The servers
 * share the port anyway (--permit-port-sharing). */
static void drop_ports(json_t *spec) {
        static const char *const lists[] = { "containers", "initContainers" };
        for (size_t l = 0; l < ELEMENTSOF(lists); l++) {
                size_t i;
                json_t *c;
                json_array_foreach(json_object_get(spec, lists[l]), i, c) json_object_del(c, "ports");
        }
}

static int convert_spec(CheckpointPod *p, json_t *spec, const char *checkpoint_dir, const char *pod,
                        char **ret_error) {
        for (size_t i = 0; i < ELEMENTSOF(spec_dropped); i++)
                json_object_del(spec, spec_dropped[i]);
        drop_ports(spec);
        if (json_object_set_new(spec, "automountServiceAccountToken", json_false()) < 0 ||
            json_object_set_new(spec, "restartPolicy", json_string("Always")) < 0)
                return -ENOMEM;
        json_t *vols = json_object_get(spec, "volumes");
        for (size_t i = 0; i < json_array_size(vols);) {
                int r = convert_volume(p, spec, vols, i, checkpoint_dir, pod, ret_error);
                if (r < 0)
                        return r;
                if (r == 0)
                        i++; /* 1: removed, the next one moved to i */
        }
        return 0;
}

/* The checkpoint carries none of the pod's labels, only its own: its mirror pod must match no workload's
 * selector (a controller would count or adopt it) and no anti-affinity (a Deployment's replacement pod could
 * not be scheduled on this master while the checkpoint runs, and the checkpoint would never be retired). The
 * component is named by the CHECKPOINT_OF annotation. */
static int convert_meta(json_t *out_meta, const json_t *meta, const char *name, const char *owner) {
        json_t *labels = json_object();
        const json_t *ann = json_object_get(meta, "annotations");
        const char *certs = json_string_value(json_object_get(ann, "protokube.io/certificates"));
        json_t *annotations = json_pack("{s:s}", CHECKPOINT_OF, owner);
        if (!labels || !annotations) {
                json_decref(labels);
                json_decref(annotations);
                return -ENOMEM;
        }
        if (json_object_set_new(out_meta, "labels", labels) < 0 ||
            json_object_set_new(out_meta, "annotations", annotations) < 0 ||
            json_object_set_new(labels, CHECKPOINT_LABEL, json_string("true")) < 0 ||
            (certs &&
             json_object_set_new(annotations, "protokube.io/certificates", json_string(certs)) < 0) ||
            json_object_set_new(out_meta, "name", json_string(name)) < 0 ||
            json_object_set_new(
                out_meta, "namespace",
                json_string(json_string_value(json_object_get(meta, "namespace")) ?: "kube-system")) < 0)
                return -ENOMEM;
        return 0;
}

int checkpoint_pod_from_api(const json_t *pod, const char *checkpoint_dir, CheckpointPod *ret,
                            char **ret_error) {
        const json_t *meta = json_object_get(pod, "metadata"), *spec = json_object_get(pod, "spec");
        const char *pod_name = json_string_value(json_object_get(meta, "name"));
        _cleanup_free_ char *err = NULL;
        CheckpointPod p = {};
        int r;

        if (!json_is_object(meta) || !json_is_object(spec) || isempty(pod_name))
                return bad(ret_error, pod_name, "no metadata.name or spec");
        if (kube_name_check(KUBE_NAME_DNS_SUBDOMAIN, "pod", pod_name, &err) < 0)
                return error_setf(ret_error, PK_EMALFORMED, "a pod cannot be checkpointed: %s",
                                  strnull(err));
        r = owner_of(&p, meta, pod_name, ret_error);
        if (r < 0) {
                checkpoint_pod_done(&p);
                return r;
        }
        json_t *out_spec = json_deep_copy(spec), *out_meta = json_object();
        p.manifest = json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", "v1", "kind", "Pod", "metadata",
                               out_meta, "spec", out_spec);
        if (!p.manifest)
                r = -ENOMEM;
        else if ((r = convert_meta(out_meta, meta, p.name, p.workload)) >= 0)
                r = convert_spec(&p, out_spec, checkpoint_dir, pod_name, ret_error);
        if (r < 0) {
                checkpoint_pod_done(&p);
                return r;
        }
        *ret = p;
        return 0;
}
