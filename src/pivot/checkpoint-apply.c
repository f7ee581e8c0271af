/* SPDX-License-Identifier: Apache-2.0 */
#include "pivot/checkpoint-apply.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "components/self-hosted.h"
#include "kube/kube-name.h"
#include "kube/kube-resource.h"
#include "pivot/checkpoint-internal.h"
#include "pivot/checkpoint.h"
#include "shared/crypto.h"
#include "shared/json-secret.h"
#include "shared/json-util.h"

#define PROC_MAX     (1U << 20) /* entries of /proc looked at: bounded */
#define MIRROR_ANNOT "kubernetes.io/config.mirror"
/* this node's pods of the components, not one of the cluster's other pods */
#define SELECTOR                                                                                     \
        "app.kubernetes.io/managed-by=protokube,k8s-app in (kube-apiserver,kube-controller-manager," \
        "kube-scheduler)"

static const char *const step_names[_CHECKPOINT_STEP_MAX] = {
        [CHECKPOINT_STEP_REFRESH] = "refresh",
        [CHECKPOINT_STEP_ACTIVATE] = "activate",
        [CHECKPOINT_STEP_DEACTIVATE] = "deactivate",
        [CHECKPOINT_STEP_WAIT] = "wait",
};

const char *checkpoint_step_to_string(CheckpointStep s) {
        return s >= 0 && s < _CHECKPOINT_STEP_MAX ? step_names[s] : NULL;
}

/* metadata.<map>.<key>, or metadata.<key> when map is NULL. */
/* A self-hosted control-plane pod the API placed on node that may still run: not a mirror pod (a static
 * pod's, the checkpoint's own included) and not a checkpoint. A pod in a terminal phase (Failed, Succeeded)
 * never runs again: kubelet 1.20 fails a pod it admits before its view of the Node has the master label
 * (NodeAffinity), the ReplicaSet replaces it and the failed object stays until the pod GC, which would keep
 * every refresh waiting. Until its replacement is here, its component stays in the checkpoint
 * (component_missing()). */
static bool is_self_hosted_here(const json_t *pod, const char *node) {
        const char *on = json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
        const char *phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
        if (phase && (streq(phase, "Failed") || streq(phase, "Succeeded")))
                return false;
        return on && streq(on, node) &&
               checkpoint_is_component(json_get_string(pod, "metadata", "labels", "k8s-app")) &&
               !json_get_string(pod, "metadata", "labels", CHECKPOINT_LABEL) &&
               !json_get_string(pod, "metadata", "annotations", MIRROR_ANNOT);
}

/* The values of one data map ("data" or "binaryData") as files under rel_dir. */
static int add_data(Gen *g, const json_t *map, bool base64, bool secret, const char *rel_dir,
                    const char *what, char **ret_error) {
        const char *key;
        const json_t *val;
        json_object_foreach((json_t *)map, key, val) {
                const char *s = json_string_value(val);
                uint8_t *data = NULL;
                size_t len;
                int r;
                _cleanup_free_ char *err = NULL;
                if (kube_name_check(KUBE_NAME_DATA_KEY, "key", key, &err) < 0)
                        return error_setf(ret_error, PK_EMALFORMED, "%s: %s", what, strnull(err));
                if (!s)
                        return error_setf(ret_error, PK_EMALFORMED, "%s: key '%s' is not a string", what,
                                          key);
                if (base64) {
                        r = crypto_base64_decode(s, strlen(s), &data, &len);
                        if (r < 0)
                                return error_setf(ret_error, r, "%s: key '%s' is not base64", what, key);
                } else {
                        len = strlen(s);
                        if (!(data = (uint8_t *)strdup(s)))
                                return -ENOMEM;
                }
                if (len > CHECKPOINT_FILE_MAX) {
                        secret ? erase_and_free(data, len) : free(data);
                        return error_setf(ret_error, PK_ETOOBIG, "%s: key '%s' holds more than %u bytes",
                                          what, key, CHECKPOINT_FILE_MAX);
                }
                r = gen_add(g, strprintf("%s/%s", rel_dir, key), data, len, secret ? 0600 : 0644, secret);
                if (r == -E2BIG)
                        return error_setf(ret_error, r, "%s: more than %u files in the checkpoint", what,
                                          CHECKPOINT_FILES_MAX);
                if (r == -EEXIST) /* data and binaryData with one key: the API refuses it */
                        return error_setf(ret_error, PK_EMALFORMED, "%s: key '%s' twice", what, key);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The ConfigMap's SELF_HOSTED_CHECKPOINT_DATA annotation: each "<key>=<other key>" makes the file <key> of
 * the checkpoint hold <other key>'s value (both keys of its data). */
static int take_checkpoint_data(json_t *obj, const char *what, char **ret_error) {
        const char *spec = json_get_string(obj, "metadata", "annotations", SELF_HOSTED_CHECKPOINT_DATA);
        json_t *data = json_object_get(obj, "data");
        _cleanup_strv_free_ char **pairs = NULL;
        if (!spec)
                return 0;
        int r = strv_split(spec, ",", &pairs);
        if (r < 0)
                return r;
        STRV_FOREACH (p, pairs) {
                char *eq = strchr(*p, '=');
                json_t *v = eq ? json_object_get(data, eq + 1) : NULL;
                if (eq)
                        *eq = 0;
                if (!json_is_string(v) || !json_is_string(json_object_get(data, *p)))
                        return error_setf(ret_error, PK_EMALFORMED,
                                          "%s: annotation %s: '%s' is not <key>=<other key> of its data",
                                          what, SELF_HOSTED_CHECKPOINT_DATA, spec);
                if (json_object_set(data, *p, v) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* One Secret or ConfigMap a checkpoint pod mounts: its data, read now, as files of the generation. */
static int fetch_volume(KubeClient *api, const char *ns, const CheckpointVolume *v, const char *link, Gen *g,
                        usec_t deadline, char **ret_error) {
        bool secret = v->source == CHECKPOINT_SECRET;
        const char *kind = secret ? "Secret" : "ConfigMap";
        const char *rel_dir = startswith(v->dir, link);
        if (!rel_dir || rel_dir[0] != '/')
                return -EINVAL; /* checkpoint_pod_from_api() was given link: cannot happen */
        rel_dir++;
        if (gen_has(g, rel_dir)) /* two pods mount one object */
                return 0;
        _cleanup_free_ char *what = strprintf("%s %s/%s", kind, ns, v->name);
        if (!what)
                return -ENOMEM;
        json_t *obj = NULL;
        int r = kube_get(api, "v1", kind, ns, v->name, deadline, &obj, ret_error);
        if (r < 0)
                return r;
        r = secret ? 0 : take_checkpoint_data(obj, what, ret_error);
        if (r >= 0)
                r = gen_add(g, strdup(rel_dir), NULL, 0, secret ? 0700 : 0755, false);
        if (r >= 0)
                r = add_data(g, json_object_get(obj, "data"), secret, secret, rel_dir, what, ret_error);
        if (r >= 0 && !secret)
                r = add_data(g, json_object_get(obj, "binaryData"), true, false, rel_dir, what, ret_error);
        if (secret)
                json_erase_values(obj);
        json_decref(obj);
        return r;
}

/* One Running pod of protokube's own workloads: its static pod (with the pod's uid, by which a running
 * container is recognised) and the data of what it mounts. */
static int add_pod(const CheckpointConfig *c, KubeClient *api, const json_t *pod, const char *link, Gen *g,
                   usec_t deadline, char **ret_error) {
        const char *ns = json_get_string(pod, "metadata", "namespace"),
                   *uid = json_get_string(pod, "metadata", "uid");
        _cleanup_(checkpoint_pod_done) CheckpointPod p = {};
        int r = checkpoint_pod_from_api(pod, link, &p, ret_error);
        if (r >= 0)
                r = checkpoint_owner_check(api, pod, &p, deadline, ret_error);
        if (r < 0)
                return r;
        for (size_t i = 0; i < p.n_volumes; i++) {
                r = fetch_volume(api, ns ?: "kube-system", &p.volumes[i], link, g, deadline, ret_error);
                if (r < 0)
                        return r;
        }
        json_t *ann = json_object_get(json_object_get(p.manifest, "metadata"), "annotations");
        if (uid && json_object_set_new(ann, CHECKPOINT_UID, json_string(uid)) < 0)
                return -ENOMEM;
        char *text = json_dumps(p.manifest, JSON_INDENT(2) | JSON_SORT_KEYS);
        if (!text)
                return -ENOMEM;
        size_t len = strlen(text);
        r = gen_add(g, strprintf("manifests/%s.json", p.name), (uint8_t *)text, len, 0644, false);
        if (r ==
            -EEXIST) /* one checkpoint per workload: which of the two would come back is not ours to pick */
                return error_setf(ret_error, PK_EMALFORMED,
                                  "two pods of %s on node %s (one is %s): the checkpoint stays as it is",
                                  p.workload, c->node_name,
                                  strnull(json_get_string(pod, "metadata", "name")));
        return r;
}

/* This node's pods of the components, and only those: the list does not grow with the cluster. */
static int list_here(const CheckpointConfig *c, KubeClient *api, usec_t deadline, json_t **ret,
                     char **ret_error) {
        _cleanup_free_ char *field = strprintf("spec.nodeName=%s", c->node_name);
        if (!field)
                return -ENOMEM;
        return kube_list_with(api, "v1", "Pod", "kube-system",
                              &(KubeListOptions){ .label_selector = SELECTOR, .field_selector = field },
                              deadline, ret, ret_error);
}

/* Builds the whole generation in memory, then writes it only if it differs from the current one. */
static int refresh_gen(const CheckpointConfig *c, KubeClient *api, const json_t *items, Gen *g,
                       usec_t deadline, char **ret_message, char **ret_error) {
        _cleanup_free_ char *link = strprintf("%s/%s", c->state_dir, CHECKPOINT_LINK), *dir = NULL;
        char digest[65];
        size_t i, n = 0;
        const json_t *pod;
        int r;
        if (!link)
                return -ENOMEM;
        json_array_foreach(items, i, pod) {
                if (!is_self_hosted_here(pod, c->node_name))
                        continue;
                if (++n > CHECKPOINT_PODS_MAX)
                        return error_setf(ret_error, -E2BIG, "more than %d self-hosted pods on node %s",
                                          CHECKPOINT_PODS_MAX, c->node_name);
                if ((r = add_pod(c, api, pod, link, g, deadline, ret_error)) < 0)
                        return r;
        }
        if ((r = gen_digest(g, digest)) < 0)
                return r;
        if (gen_unchanged(c->state_dir, digest))
                return ret_message && !(*ret_message = strprintf("checkpoint of %zu pods unchanged", n))
                           ? -ENOMEM
                           : 1;
        if ((r = gen_commit(g, c->state_dir, digest, &dir, ret_error)) < 0)
                return r;
        return ret_message && !(*ret_message = strprintf("checkpoint of %zu pods written to '%s'", n, dir))
                   ? -ENOMEM
                   : 1;
}

/* Why a pod here keeps the checkpoint as it is (NULL: none does): a pod being replaced (an update rolling,
 * a pod pending) or not Ready (a bad upgrade crash-looping); a reboot then brings back the last pods that
 * served. */
static int pod_not_settled(const CheckpointConfig *c, const json_t *items, char **ret_why) {
        size_t i;
        const json_t *pod;
        json_array_foreach(items, i, pod) {
                const char *phase = strempty(kube_pod_phase(pod));
                if (!is_self_hosted_here(pod, c->node_name) ||
                    (streq(phase, "Running") && kube_pod_ready(pod)))
                        continue;
                if (streq(phase, "Running"))
                        phase = "Running but not Ready";
                return (*ret_why = strprintf("pod %s is %s: the checkpoint stays as it is",
                                             strnull(json_get_string(pod, "metadata", "name")),
                                             isempty(phase) ? "without a phase" : phase))
                           ? 1
                           : -ENOMEM;
        }
        return 0;
}

static int checkpoint_manifests(const CheckpointConfig *c, json_t **ret, char **ret_error);

/* Whether a component the current checkpoint has is missing here while its workload still wants a pod on
 * this node: between a pod that failed and its replacement (a terminal pod is no pod here), a refresh
 * would drop it, and a reboot then would not bring it back. 1 and why: the checkpoint stays as it is. A
 * component whose workload went away, or settled with its pods elsewhere, drops out. */
static int component_missing(const CheckpointConfig *c, KubeClient *api, const json_t *items,
                             usec_t deadline, char **ret_why, char **ret_error) {
        json_t *manifests = NULL;
        size_t i, j;
        const json_t *m, *pod;
        _cleanup_free_ char *unreadable = NULL;
        int r = checkpoint_manifests(c, &manifests, &unreadable);
        if (r == -ENOMEM)
                return r;
        if (r < 0) /* nothing to keep of a checkpoint that cannot be read, nor activated: it is replaced */
                return 0;
        json_array_foreach(manifests, i, m) {
                const char *app = checkpoint_manifest_app(m),
                           *of = json_get_string(m, "metadata", "annotations", CHECKPOINT_OF);
                bool here = false;
                json_array_foreach(items, j, pod) here =
                    here ||
                    (is_self_hosted_here(pod, c->node_name) &&
                     streq(strempty(json_get_string(pod, "metadata", "labels", "k8s-app")), strempty(app)));
                if (here || !checkpoint_is_component(app))
                        continue;
                _cleanup_free_ char *why = NULL;
                const char *kind = startswith(strempty(of), "DaemonSet/") ? "DaemonSet" : "Deployment";
                r = checkpoint_workload_wants(api, kind, app, c->node_name, deadline, &why, ret_error);
                if (r > 0 && !(*ret_why = strprintf("the checkpointed %s has no pod on %s now, and %s: the "
                                                    "checkpoint stays as it is",
                                                    app, c->node_name, why)))
                        r = -ENOMEM;
                if (r != 0)
                        break;
        }
        json_decref(manifests);
        return r;
}

static int set_message(char **ret, char *s) {
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int checkpoint_refresh(const CheckpointConfig *c, KubeClient *api, usec_t deadline, char **ret_message,
                       char **ret_error) {
        _cleanup_(gen_done) Gen g = {};
        _cleanup_(json_decrefp) json_t *list = NULL;
        _cleanup_free_ char *why = NULL;
        int r;

        if (mkdir_p(c->state_dir, 0700) < 0)
                return error_setf(ret_error, -errno, "cannot create '%s': %m", c->state_dir);
        r = list_here(c, api, deadline, &list, ret_error);
        if (r < 0)
                return r;
        const json_t *items = json_object_get(list, "items");
        r = pod_not_settled(c, items, &why);
        if (r == 0)
                r = component_missing(c, api, items, deadline, &why, ret_error);
        if (r < 0)
                return r;
        if (r > 0)
                return ret_message ? set_message(ret_message, TAKE_PTR(why)) : 0;
        return refresh_gen(c, api, items, &g, deadline, ret_message, ret_error);
}

static int each_manifest(const char *dir, bool ours_only,
                         int (*fn)(const char *dir, const char *name, void *u), void *userdata,
                         char **ret_error) {
        _cleanup_(closedirp) DIR *d = opendir(dir);
        int r;
        if (!d)
                return error_setf(ret_error, -errno, "cannot read '%s': %m", dir);
        for (struct dirent *de; (de = readdir(d));) {
                if (de->d_name[0] == '.' ||
                    !endswith(de->d_name, ours_only ? CHECKPOINT_MANIFEST_SUFFIX : ".json"))
                        continue;
                if ((r = fn(dir, de->d_name, userdata)) != 0)
                        return r;
        }
        return 0;
}

static int found(const char *dir, const char *name, void *u) {
        return 1;
}

int checkpoint_is_active(const CheckpointConfig *c, char **ret_error) {
        return each_manifest(c->manifest_dir, true, found, NULL, ret_error);
}

typedef struct CopyArgs {
        const char *to;
        size_t n;
        char **error;
        char **skip; /* file names not to copy */
} CopyArgs;

static int copy_manifest(const char *dir, const char *name, void *u) {
        CopyArgs *a = u;
        if (strv_contains(a->skip, name))
                return 0;
        _cleanup_free_ char *from = strprintf("%s/%s", dir, name), *to = strprintf("%s/%s", a->to, name),
                            *text = NULL;
        size_t len;
        int r;
        if (!from || !to)
                return -ENOMEM;
        r = read_full_file(from, CHECKPOINT_FILE_MAX, &text, &len);
        if (r < 0)
                return error_setf(a->error, r, "cannot read '%s': %s", from, pk_strerror(r));
        r = write_file_atomic(to, text, len, 0644, 1);
        if (r < 0)
                return error_setf(a->error, r, "cannot write '%s': %s", to, pk_strerror(r));
        a->n++;
        return 0;
}

static int activate_except(const CheckpointConfig *c, char **skip, size_t *ret_n, char **ret_error) {
        _cleanup_free_ char *at = strprintf("%s/%s", c->state_dir, CHECKPOINT_ACTIVATED_FILE),
                            *src = strprintf("%s/%s/manifests", c->state_dir, CHECKPOINT_LINK);
        char stamp[32];
        struct tm tm;
        time_t t = time(NULL);
        int r;
        if (!at || !src)
                return -ENOMEM;
        /* The time first: the pods that come back must have started after it (checkpoint_step()). A stamp
         * is this activation's only while its manifests are in kubelet's directory: one left by an earlier
         * activation (a deactivation that stopped between its manifests and its stamp, an activation that
         * stopped before its first manifest) would count the pods' status from before this one as back. */
        r = checkpoint_is_active(c, ret_error);
        if (r < 0)
                return r;
        if (r == 0 || access(at, F_OK) < 0) {
                strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
                r = write_file_atomic(at, stamp, strlen(stamp), 0644, 0);
                if (r < 0)
                        return error_setf(ret_error, r, "cannot write '%s': %s", at, pk_strerror(r));
        }
        CopyArgs a = { .to = c->manifest_dir, .error = ret_error, .skip = skip };
        r = each_manifest(src, false, copy_manifest, &a, ret_error);
        if (r < 0)
                return r;
        if (ret_n)
                *ret_n = a.n;
        return 0;
}

int checkpoint_activate(const CheckpointConfig *c, size_t *ret_n, char **ret_error) {
        return activate_except(c, NULL, ret_n, ret_error);
}

static int remove_manifest(const char *dir, const char *name, void *u) {
        CopyArgs *a = u;
        _cleanup_free_ char *path = strprintf("%s/%s", dir, name);
        if (!path)
                return -ENOMEM;
        if (unlink(path) < 0 && errno != ENOENT)
                return error_setf(a->error, -errno, "cannot remove '%s': %m", path);
        a->n++;
        return 0;
}

int checkpoint_deactivate(const CheckpointConfig *c, size_t *ret_n, char **ret_error) {
        CopyArgs a = { .error = ret_error };
        _cleanup_free_ char *at = strprintf("%s/%s", c->state_dir, CHECKPOINT_ACTIVATED_FILE);
        if (!at)
                return -ENOMEM;
        int r = each_manifest(c->manifest_dir, true, remove_manifest, &a, ret_error);
        if (r < 0)
                return r;
        /* the manifests' removal first made durable, then the record of the activation */
        _cleanup_free_ char *dot = strprintf("%s/.", c->manifest_dir);
        if (!dot)
                return -ENOMEM;
        if ((r = fsync_parent_dir(dot)) < 0)
                return error_setf(ret_error, r, "cannot fsync '%s': %s", c->manifest_dir, pk_strerror(r));
        if (unlink(at) < 0 && errno != ENOENT)
                return error_setf(ret_error, -errno, "cannot remove '%s': %m", at);
        if (ret_n)
                *ret_n = a.n;
        return 0;
}

/* The checkpoint's manifests as parsed objects (an array; empty when there is no checkpoint yet). */
static int read_manifest(const char *dir, const char *name, void *u) {
        json_t *arr = u;
        _cleanup_free_ char *path = strprintf("%s/%s", dir, name);
        if (!path)
                return -ENOMEM;
        json_t *m = json_load_file(path, 0, NULL);
        if (!m)
                return -EINVAL;
        return json_array_append_new(arr, m) < 0 ? -ENOMEM : 0;
}

static int checkpoint_manifests(const CheckpointConfig *c, json_t **ret, char **ret_error) {
        _cleanup_free_ char *src = strprintf("%s/%s/manifests", c->state_dir, CHECKPOINT_LINK);
        json_t *arr = json_array();
        if (!src || !arr) {
                json_decref(arr);
                return -ENOMEM;
        }
        int r = access(src, F_OK) < 0 ? 0 : each_manifest(src, false, read_manifest, arr, ret_error);
        if (r < 0) {
                json_decref(arr);
                return r == -EINVAL
                           ? error_setf(ret_error, PK_EMALFORMED, "a manifest in '%s' is not JSON", src)
                           : r;
        }
        *ret = arr;
        return 0;
}

/* Whether a process on this node runs in the cgroup of a checkpointed pod: kubelet puts a pod's containers
 * (and its sandbox) under ".../pod<uid>/" (cgroupfs) or "...-pod<uid with _>.slice" (systemd). kubelet's
 * own view (/pods on its port) would need its serving CA and, with Webhook authorization, the API that is
 * down; the CRI socket needs a gRPC client. The kernel's cgroups need neither. *ret_name: the pod's. */
static int pod_process_runs(const CheckpointConfig *c, const json_t *manifests, char **ret_name) {
        _cleanup_(closedirp) DIR *d = opendir(c->proc_dir ?: "/proc");
        if (!d)
                return -errno;
        unsigned seen = 0;
        for (struct dirent *de; (de = readdir(d)) && seen < PROC_MAX; seen++) {
                if (de->d_name[0] < '0' || de->d_name[0] > '9')
                        continue;
                _cleanup_free_ char *path = strprintf("%s/%s/cgroup", c->proc_dir ?: "/proc", de->d_name),
                                    *text = NULL;
                if (!path)
                        return -ENOMEM;
                if (read_full_file(path, 64 * 1024, &text, NULL) < 0)
                        continue; /* gone meanwhile */
                size_t i;
                const json_t *m;
                json_array_foreach(manifests, i, m) {
                        const char *uid = json_get_string(m, "metadata", "annotations", CHECKPOINT_UID);
                        if (isempty(uid) || strlen(uid) > 64)
                                continue;
                        char a[80], b[80];
                        snprintf(a, sizeof(a), "pod%s/", uid);
                        snprintf(b, sizeof(b), "pod%s.slice", uid);
                        for (char *s = b; *s; s++)
                                if (*s == '-')
                                        *s = '_';
                        if (strstr(text, a) || strstr(text, b)) {
                                const char *name = json_string_value(
                                    json_object_get(json_object_get(m, "metadata"), "name"));
                                if (ret_name && !(*ret_name = strdup(strnull(name))))
                                        return -ENOMEM;
                                return 1;
                        }
                }
        }
        return 0;
}

/* Whether the checkpointed pod of manifest m has a process here (pod_process_runs() over it alone). */
static int manifest_pod_runs(const CheckpointConfig *c, const json_t *m) {
        json_t *one = json_array();
        if (!one || json_array_append(one, (json_t *)m) < 0) {
                json_decref(one);
                return -ENOMEM;
        }
        int r = pod_process_runs(c, one, NULL);
        json_decref(one);
        return r;
}

/* Ready, and every container started at or after the activation (RFC 3339 strings in UTC compare as
 * times): the API keeps a pod's status from before the reboot until kubelet writes a new one. A pod other
 * than the checkpointed one (a rolling update's new pod, started before the activation) counts when kubelet
 * runs it here (its cgroup): its Ready is then not a status from before a reboot. */
static bool pod_back(const CheckpointConfig *c, const json_t *pod, const json_t *m, const char *since) {
        const json_t *status = json_object_get(pod, "status"), *x;
        size_t i;
        if (!kube_pod_ready(pod) || json_array_size(json_object_get(status, "containerStatuses")) == 0)
                return false;
        bool after = true;
        json_array_foreach(json_object_get(status, "containerStatuses"), i, x) {
                const char *started = json_string_value(
                    json_object_get(json_object_get(json_object_get(x, "state"), "running"), "startedAt"));
                if (!started || strcmp(started, since) < 0)
                        after = false;
        }
        if (after)
                return true;
        const char *uid = json_string_value(json_object_get(json_object_get(pod, "metadata"), "uid"));
        if (isempty(uid) ||
            streq(uid, strempty(json_get_string(m, "metadata", "annotations", CHECKPOINT_UID))))
                return false;
        json_t *probe = json_pack("{s{s{ss}}}", "metadata", "annotations", CHECKPOINT_UID, uid);
        int r = probe ? manifest_pod_runs(c, probe) : 0;
        json_decref(probe);
        return r > 0;
}

/* 1 when every checkpointed component has its self-hosted pod back on this node; 0 and why if not. */
static int pods_back(const CheckpointConfig *c, KubeClient *api, const json_t *manifests, usec_t deadline,
                     char **ret_why, char **ret_error) {
        _cleanup_free_ char *at = strprintf("%s/%s", c->state_dir, CHECKPOINT_ACTIVATED_FILE), *since = NULL;
        json_t *list = NULL;
        size_t i, j;
        const json_t *m, *pod;
        if (!at)
                return -ENOMEM;
        if (read_full_file(at, 64, &since, NULL) < 0 && !(since = strdup("")))
                return -ENOMEM;
        int r = list_here(c, api, deadline, &list, ret_error);
        if (r < 0)
                return r;
        r = 1;
        json_array_foreach(manifests, i, m) {
                const char *app = checkpoint_manifest_app(m);
                bool back = false;
                json_array_foreach(json_object_get(list, "items"), j, pod) {
                        if (is_self_hosted_here(pod, c->node_name) &&
                            streq(strempty(json_get_string(pod, "metadata", "labels", "k8s-app")),
                                  strempty(app)) &&
                            pod_back(c, pod, m, since))
                                back = true;
                }
                if (!back) {
                        /* "since": the pod's status from before the activation does not count */
                        if (ret_why &&
                            !(*ret_why = strprintf("the self-hosted %s on %s has not been Ready since %s",
                                                   strnull(app), c->node_name, since)))
                                r = -ENOMEM;
                        else
                                r = 0;
                        break;
                }
        }
        json_decref(list);
        return r;
}

/* The client that answers /readyz: the local apiserver, else the internal name; NULL and why if none. */
static KubeClient *api_answering(const CheckpointConfig *c, usec_t deadline, char **ret_why) {
        _cleanup_free_ char *e1 = NULL, *e2 = NULL;
        usec_t d = now(CLOCK_MONOTONIC) + CHECKPOINT_PROBE_TIMEOUT;
        if (deadline && deadline < d)
                d = deadline;
        if (kube_probe(c->local, "readyz", d, &e1) >= 0)
                return c->local;
        if (c->internal && kube_probe(c->internal, "readyz", d, &e2) >= 0)
                return c->internal;
        *ret_why = strprintf("the API does not answer (local: %s%s%s)", strnull(e1),
                             e2 ? "; internal: " : "", strempty(e2));
        return NULL;
}

/* The checkpoint manifests kubelet has now (the active ones), as parsed objects. */
static int active_manifests(const CheckpointConfig *c, json_t **ret, char **ret_error) {
        json_t *arr = json_array();
        if (!arr)
                return -ENOMEM;
        int r = each_manifest(c->manifest_dir, true, read_manifest, arr, ret_error);
        if (r < 0) {
                json_decref(arr);
                return r == -EINVAL ? error_setf(ret_error, PK_EMALFORMED,
                                                 "a checkpoint manifest in '%s' is "
                                                 "not JSON",
                                                 c->manifest_dir)
                                    : r;
        }
        *ret = arr;
        return 0;
}

/* The checkpoint's manifests whose pod has a process here: their file names into *skip. 1 when the
 * apiserver's is one of them (*ret_name: its manifest's name). */
static int running_here(const CheckpointConfig *c, const json_t *manifests, char ***skip, char **ret_name) {
        size_t i;
        const json_t *m;
        json_array_foreach(manifests, i, m) {
                int r = manifest_pod_runs(c, m);
                if (r < 0)
                        return r;
                if (r == 0)
                        continue;
                const char *name =
                    json_string_value(json_object_get(json_object_get(m, "metadata"), "name"));
                _cleanup_free_ char *file = strprintf("%s.json", strnull(name));
                if (!file || strv_extend(skip, file) < 0)
                        return -ENOMEM;
                if (streq(strempty(checkpoint_manifest_app(m)), "kube-apiserver"))
                        return (*ret_name = strdup(strnull(name))) ? 1 : -ENOMEM;
        }
        return 0;
}

/* The API is the apiserver: while its checkpointed pod runs here, kubelet runs it and the API is down for
 * another reason (etcd), where a second apiserver would not help. Otherwise the checkpoint comes up for
 * every component whose checkpointed pod does not run here: all of them after a reboot, the apiserver
 * alone when its only pod was replaced (a rolling update on a single master, whose new pod the
 * controllers cannot create without the API) while the others keep running, not doubled. */
static int step_api_down(const CheckpointConfig *c, int active, const char *why, CheckpointStep *ret_step,
                         char **ret_message, char **ret_error) {
        _cleanup_free_ char *pod = NULL;
        _cleanup_strv_free_ char **skip = NULL;
        json_t *manifests = NULL;
        size_t n = 0;
        int r;
        *ret_step = CHECKPOINT_STEP_WAIT;
        if (active)
                return set_message(ret_message, strprintf("%s; the checkpoint is active", why));
        if ((r = checkpoint_manifests(c, &manifests, ret_error)) < 0)
                return r;
        size_t total = json_array_size(manifests);
        r = total == 0 ? 0 : running_here(c, manifests, &skip, &pod);
        json_decref(manifests);
        if (total == 0)
                return set_message(ret_message, strprintf("%s; no checkpoint of this node", why));
        if (r < 0)
                return error_setf(ret_error, r, "cannot read the processes' cgroups in '%s': %s",
                                  c->proc_dir ?: "/proc", pk_strerror(r));
        if (r > 0)
                return set_message(ret_message,
                                   strprintf("%s; the self-hosted pod of %s runs here", why, pod));
        if (strv_length(skip) == total)
                return set_message(ret_message, strprintf("%s; every checkpointed pod runs here", why));
        if ((r = activate_except(c, skip, &n, ret_error)) < 0)
                return r;
        *ret_step = CHECKPOINT_STEP_ACTIVATE;
        return set_message(
            ret_message, strprintf("%s: %zu checkpoint manifests written to '%s'", why, n, c->manifest_dir));
}

static int step_api_up(const CheckpointConfig *c, KubeClient *api, int active, usec_t deadline,
                       CheckpointStep *ret_step, char **ret_message, char **ret_error) {
        _cleanup_free_ char *why = NULL;
        json_t *manifests = NULL;
        size_t n = 0;
        int r;
        if (!active) {
                r = checkpoint_refresh(c, api, deadline, ret_message, ret_error);
                if (r >= 0)
                        *ret_step = r > 0 ? CHECKPOINT_STEP_REFRESH : CHECKPOINT_STEP_WAIT;
                return r < 0 ? r : 0;
        }
        /* the active ones only: a partial activation leaves the running components alone */
        if ((r = active_manifests(c, &manifests, ret_error)) < 0)
                return r;
        r = pods_back(c, api, manifests, deadline, &why, ret_error);
        json_decref(manifests);
        if (r < 0)
                return r;
        if (r == 0) {
                *ret_step = CHECKPOINT_STEP_WAIT;
                return set_message(ret_message, TAKE_PTR(why));
        }
        if ((r = checkpoint_deactivate(c, &n, ret_error)) < 0)
                return r;
        *ret_step = CHECKPOINT_STEP_DEACTIVATE;
        return set_message(
            ret_message,
            strprintf("the self-hosted pods are back: %zu checkpoint manifests removed from '%s'", n,
                      c->manifest_dir));
}

int checkpoint_step(const CheckpointConfig *c, usec_t deadline, CheckpointStep *ret_step, char **ret_message,
                    char **ret_error) {
        _cleanup_free_ char *why = NULL, *message = NULL;
        CheckpointStep step = CHECKPOINT_STEP_WAIT;
        int active = checkpoint_is_active(c, ret_error);
        if (active < 0)
                return active;
        KubeClient *api = api_answering(c, deadline, &why);
        if (!api && !why)
                return -ENOMEM;
        int r = api ? step_api_up(c, api, active, deadline, &step, &message, ret_error)
                    : step_api_down(c, active, why, &step, &message, ret_error);
        if (r < 0)
                return r;
        *ret_step = step;
        if (ret_message)
                *ret_message = TAKE_PTR(message);
        return 0;
}
