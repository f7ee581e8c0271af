/* SPDX-License-Identifier: Apache-2.0 */
/* The pivot's observation (docs/pivot.md): /readyz through api.internal.<C> and on this master's own
 * address (the same name checked in the certificate: connect_to), the masters (Nodes with the master label),
 * their bootstrap mirror pods and self-hosted pods, the assets against their live objects (the digest
 * annotation), the completion ConfigMap, the bootstrap manifests on this master's disk, the local record. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "kube/kube-resource.h"
#include "pivot/checkpoint.h"
#include "pivot/pivot.h"
#include "shared/crypto.h"
#include "shared/json-secret.h"
#include "shared/json-util.h"

#define MASTERS_MAX 64

static const char *const owner_kinds[_PIVOT_COMPONENT_MAX] = {
        [PIVOT_APISERVER] = "DaemonSet",
        [PIVOT_CONTROLLER_MANAGER] = "ReplicaSet",
        [PIVOT_SCHEDULER] = "ReplicaSet",
};

/* Keeps s for the observation's pointers; NULL on allocation failure (s is freed then). */
static const char *keep(Pivot *p, char *s) {
        if (!s)
                return NULL;
        if (strv_push(&p->strings, s) < 0) {
                free(s);
                return NULL;
        }
        return s;
}

static void observation_reset(Pivot *p) {
        free(p->masters);
        p->masters = NULL;
        p->strings = strv_free(p->strings);
        free(p->stale);
        p->stale = NULL;
        free(p->api_error);
        free(p->local_error);
        p->api_error = p->local_error = NULL;
        p->self_labelled = false;
        p->obs = (PivotObservation){};
}

static PivotComponent component_of_label(const char *app) {
        for (PivotComponent c = 0; c < _PIVOT_COMPONENT_MAX; c++)
                if (app && streq(app, pivot_component_name(c)))
                        return c;
        return _PIVOT_COMPONENT_MAX; /* not one of ours (the enum is unsigned: no -1) */
}

static PivotMaster *master_named(Pivot *p, const char *node) {
        for (size_t i = 0; node && i < p->obs.n_masters; i++)
                if (streq(p->masters[i].node, node))
                        return &p->masters[i];
        return NULL;
}

bool pivot_node_names_out(const json_t *node) {
        return streq_ptr(
            json_get_string((json_t *)json_get(node, "metadata", "annotations"), PIVOT_NAMES_ANNOTATION),
            PIVOT_NAMES_OUT);
}

static int observe_masters(Pivot *p, char **ret_error) {
        _cleanup_(json_decrefp) json_t *list = NULL;
        int r = kube_list(p->api, "v1", "Node", NULL, PIVOT_MASTER_LABEL, 0, &list, ret_error);
        if (r < 0)
                return r;
        json_t *items = json_object_get(list, "items"), *n;
        size_t i;
        p->masters = new0(PivotMaster, MIN(json_array_size(items), (size_t)MASTERS_MAX) + 1);
        if (!p->masters)
                return -ENOMEM;
        json_array_foreach(items, i, n) {
                const char *name = json_get_string((json_t *)json_get(n, "metadata"), "name");
                if (!name || p->obs.n_masters >= MASTERS_MAX)
                        continue;
                const char *kept = keep(p, strdup(name));
                if (!kept)
                        return -ENOMEM;
                json_t *md = (json_t *)json_get(n, "metadata");
                p->masters[p->obs.n_masters++] = (PivotMaster){
                        .node = kept,
                        .apiserver_started = streq_ptr(
                            json_get_string((json_t *)json_get(md, "labels"), SELF_HOSTED_APISERVER_LABEL),
                            "true"),
                        .names_out = pivot_node_names_out(n),
                };
                if (streq(name, p->settings->node_name))
                        p->self_labelled = true;
        }
        if (!p->self_labelled) { /* not yet labelled: it takes part all the same (it labels itself next) */
                const char *kept = keep(p, strdup(p->settings->node_name));
                if (!kept)
                        return -ENOMEM;
                p->masters[p->obs.n_masters++].node = kept;
        }
        return 0;
}

static bool owned_by(const json_t *pod, const char *kind) {
        json_t *o;
        size_t i;
        json_array_foreach((json_t *)json_get(pod, "metadata", "ownerReferences"), i,
                           o) if (json_is_true(json_object_get(o, "controller")) &&
                                  streq_ptr(json_get_string(o, "kind"), kind)) return true;
        return false;
}

const char *pivot_apiserver_pod_ready_on(const json_t *pod) {
        const char *app = pivot_component_name(PIVOT_APISERVER);
        json_t *md = json_object_get(pod, "metadata");
        const char *of = json_get_string((json_t *)json_get(md, "annotations"), CHECKPOINT_OF),
                   *slash = of ? strchr(of, '/') : NULL;
        bool apiserver = streq_ptr(json_get_string((json_t *)json_get(md, "labels"), "k8s-app"), app) ||
                         (slash && streq(slash + 1, app)); /* a checkpoint carries no other label */
        if (!apiserver || (json_t *)json_get(md, "deletionTimestamp") || !kube_pod_ready(pod))
                return NULL;
        return json_get_string(json_object_get(pod, "spec"), "nodeName");
}

/* Why a pod is not Ready, from its containers (ErrImagePull: ..., CrashLoopBackOff: ...) or its phase. */
static char *pod_reason(const json_t *pod) {
        json_t *cs;
        size_t i;
        json_array_foreach((json_t *)json_get(pod, "status", "containerStatuses"), i, cs) {
                json_t *w = (json_t *)json_get(cs, "state", "waiting"),
                       *t = (json_t *)json_get(cs, "state", "terminated"),
                       *last = (json_t *)json_get(cs, "lastState", "terminated");
                if (w && json_get_string(w, "reason"))
                        return strprintf("pod %s: %s%s%s%s",
                                         strna(json_get_string((json_t *)json_get(pod, "metadata"), "name")),
                                         json_get_string(w, "reason"),
                                         json_get_string(w, "message") ? ": " : "",
                                         strempty(json_get_string(w, "message")),
                                         last ? strempty(json_get_string(last, "reason")) : "");
                if (t && json_get_string(t, "reason"))
                        return strprintf("pod %s: terminated: %s",
                                         strna(json_get_string((json_t *)json_get(pod, "metadata"), "name")),
                                         json_get_string(t, "reason"));
        }
        json_t *c;
        json_array_foreach(
            (json_t *)json_get(pod, "status", "conditions"), i,
            c) if (streq_ptr(json_get_string(c, "status"), "False") &&
                   json_get_string(
                       c, "message")) return strprintf("pod %s: %s: %s: %s",
                                                       strna(json_get_string(
                                                           (json_t *)json_get(pod, "metadata"), "name")),
                                                       strna(json_get_string(
                                                           (json_t *)json_get(pod, "status"), "phase")),
                                                       strna(json_get_string(c, "type")),
                                                       json_get_string(c, "message"));
        return strprintf("pod %s: %s", strna(json_get_string((json_t *)json_get(pod, "metadata"), "name")),
                         strna(json_get_string((json_t *)json_get(pod, "status"), "phase")));
}

/* The node a pod is for: spec.nodeName once bound; before, a DaemonSet's pod names its node in its node
 * affinity (matchFields metadata.name), so that a pod that cannot be scheduled is still that master's. */
static const char *pod_node(const json_t *pod) {
        json_t *spec = json_object_get(pod, "spec"), *term, *f;
        size_t i, j;
        if (json_get_string(spec, "nodeName"))
                return json_get_string(spec, "nodeName");
        json_array_foreach((json_t *)json_get(spec, "affinity", "nodeAffinity",
                                              "requiredDuringSchedulingIgnoredDuringExecution",
                                              "nodeSelectorTerms"),
                           i, term)
            json_array_foreach(json_object_get(term, "matchFields"), j, f) if (
                streq_ptr(
                    json_get_string(f, "key"),
                    "metadata.name")) return json_string_value(json_array_get(json_object_get(f, "values"),
                                                                              0));
        return NULL;
}

static int observe_pod(Pivot *p, const json_t *pod) {
        json_t *md = json_object_get(pod, "metadata");
        const char *name = json_get_string(md, "name");
        if (!name)
                return 0;
        if ((json_t *)json_get(md, "annotations", PIVOT_MIRROR_ANNOTATION)) {
                /* a bootstrap pod's mirror: "<component>-<node>" */
                for (PivotComponent c = 0; c < _PIVOT_COMPONENT_MAX; c++) {
                        const char *rest = startswith(name, pivot_component_name(c));
                        PivotMaster *m = rest && rest[0] == '-' ? master_named(p, rest + 1) : NULL;
                        if (m) {
                                m->bootstrap_mirror[c] = true;
                                m->bootstrap_ready[c] = kube_pod_ready(pod);
                        }
                }
                return 0;
        }
        PivotComponent c = component_of_label(json_get_string((json_t *)json_get(md, "labels"), "k8s-app"));
        PivotMaster *m = master_named(p, pod_node(pod));
        if (c >= _PIVOT_COMPONENT_MAX || !m || !owned_by(pod, owner_kinds[c]) ||
            (json_t *)json_get(md, "deletionTimestamp"))
                return 0;
        if (kube_pod_ready(pod)) {
                m->self_hosted_ready[c] = true;
                m->self_hosted_reasons[c] = NULL;
        } else if (!m->self_hosted_ready[c]) {
                m->self_hosted_reasons[c] = keep(p, pod_reason(pod));
                if (!m->self_hosted_reasons[c])
                        return -ENOMEM;
        }
        m->self_hosted_reason = m->self_hosted_reasons[PIVOT_APISERVER];
        return 0;
}

/* The components' pods only (their bootstrap mirrors carry the same k8s-app): kube-system also holds a
 * pod of every node (kube-proxy, the network's), which a list of all would read in full every pass. */
#define COMPONENT_PODS "k8s-app in (kube-apiserver,kube-controller-manager,kube-scheduler)"

static int observe_pods(Pivot *p, char **ret_error) {
        _cleanup_(json_decrefp) json_t *list = NULL;
        int r = kube_list(p->api, "v1", "Pod", "kube-system", COMPONENT_PODS, 0, &list, ret_error);
        if (r < 0)
                return r;
        json_t *pod;
        size_t i;
        json_array_foreach(json_object_get(list, "items"), i, pod) {
                r = observe_pod(p, pod);
                if (r < 0)
                        return r;
        }
        /* a master without any self-hosted pod of a component: say so */
        for (size_t m = 0; m < p->obs.n_masters; m++)
                for (PivotComponent c = 0; c < _PIVOT_COMPONENT_MAX; c++)
                        if (!p->masters[m].self_hosted_ready[c] && !p->masters[m].self_hosted_reasons[c]) {
                                p->masters[m].self_hosted_reasons[c] = keep(p, strdup("no pod there yet"));
                                if (!p->masters[m].self_hosted_reasons[c])
                                        return -ENOMEM;
                        }
        for (size_t m = 0; m < p->obs.n_masters; m++)
                p->masters[m].self_hosted_reason = p->masters[m].self_hosted_reasons[PIVOT_APISERVER];
        return 0;
}

static int observe_complete(Pivot *p, char **ret_error) {
        _cleanup_(json_decrefp) json_t *cm = NULL;
        int r = kube_get(p->api, "v1", "ConfigMap", "kube-system", PIVOT_CONFIGMAP, 0, &cm, ret_error);
        if (r == -ENOENT) {
                free(*ret_error);
                *ret_error = NULL;
                return 0;
        }
        if (r < 0)
                return r;
        p->obs.complete = streq_ptr(json_get_string((json_t *)json_get(cm, "data"), "complete"), "true");
        return 0;
}

/* Whether this master comes first by node name among the masters the API lists. */
static bool first_master(const Pivot *p) {
        for (size_t i = 0; i < p->obs.n_masters; i++)
                if (strcmp(p->masters[i].node, p->settings->node_name) < 0)
                        return false;
        return true;
}

/* The asset's live object; NULL (and 0) when it does not exist. A Secret's data is erased by live_free(). */
static int get_live(Pivot *p, const SelfHostedObject *o, json_t **ret, char **ret_error) {
        int r = kube_get(p->api, o->api_version, o->kind_name, o->namespace, o->name, 0, ret, ret_error);
        if (r == -ENOENT) {
                free(*ret_error);
                *ret_error = NULL;
                *ret = NULL;
                return 0;
        }
        return r;
}

static void live_free(const SelfHostedObject *o, json_t *live) {
        if (o->secret)
                json_erase_values(live);
        json_decref(live);
}

static bool asset_stale(const Pivot *p, size_t i, const json_t *live, bool first) {
        const char *d =
            json_get_string((json_t *)json_get(live, "metadata", "annotations"), PIVOT_DIGEST_ANNOTATION);
        return !d || (first && !streq(d, p->digests[i]));
}

/* "DaemonSet kube-system/kube-proxy (absent)", "ClusterRoleBinding x (no digest)", "... (digest X,
 * rendered Y)": which asset keeps the pivot applying, for its log. */
static char *asset_label(const SelfHostedObject *o, const json_t *live, const char *rendered) {
        const char *d =
            json_get_string((json_t *)json_get(live, "metadata", "annotations"), PIVOT_DIGEST_ANNOTATION);
        _cleanup_free_ char *state = !live ? strdup("absent")
                                     : !d  ? strdup("no digest")
                                           : strprintf("digest %s, rendered %s", d, rendered);
        if (!state)
                return NULL;
        return strprintf("%s %s%s%s (%s)", o->kind_name, strempty(o->namespace), o->namespace ? "/" : "",
                         o->name, state);
}

/* An asset is stale when it is absent (or carries no digest), or, for the first master by node name only,
 * when its digest differs from this master's render. Each master renders its own certificates into the
 * Secrets and their digest into the pod templates: with every master applying what differs from its own
 * render, three masters overwrote each other without end (and rolled the workloads each time), as the
 * three-master demo showed. One writer: the first master's render is the cluster's. */
static int observe_assets(Pivot *p, char **ret_error) {
        const SelfHostedAssets *a = p->settings->assets;
        bool first = first_master(p);
        p->stale = new0(bool, a->n + 1);
        if (!p->stale)
                return -ENOMEM;
        for (size_t i = 0; i < a->n; i++) {
                json_t *live = NULL;
                int r = get_live(p, &a->items[i], &live, ret_error);
                if (r < 0)
                        return r;
                p->stale[i] = asset_stale(p, i, live, first);
                p->obs.assets_stale += p->stale[i];
                if (p->stale[i] && !p->obs.stale_asset &&
                    !(p->obs.stale_asset = keep(p, asset_label(&a->items[i], live, p->digests[i])))) {
                        live_free(&a->items[i], live);
                        return -ENOMEM;
                }
                live_free(&a->items[i], live);
        }
        return 0;
}

/* A workload a renewal rolls: the control plane's (the managed kubelet's reads no Secret). */
static bool is_workload(const SelfHostedObject *o) {
        return (o->kind == SELF_HOSTED_DAEMON_SET || o->kind == SELF_HOSTED_DEPLOYMENT) && o->certificates;
}

/* A workload whose pod template lacks one of the rendered pod annotations (the certificates' digest). */
static bool template_stale(const Pivot *p, const json_t *live) {
        const json_t *ann = (json_t *)json_get(live, "spec", "template", "metadata", "annotations");
        char *const *want = p->settings->pod_annotations;
        for (size_t k = 0; want && want[k] && want[k + 1]; k += 2)
                if (!streq_ptr(json_get_string(ann, want[k]), want[k + 1]))
                        return true;
        return false;
}

/* Once complete, the cluster owns the workloads and the configuration, but the certificates stay
 * protokube's: the first master (the one writer) finds the Secrets that differ from its render and, with
 * more than one master, the workloads whose pod template carries another certificates digest, so that a
 * renewal rolls them. One master's workloads are not rolled: its only controller-manager would delete
 * itself before creating its successor (hostNetwork: two cannot share a node), and nothing would be left
 * to create it; its pods read the renewed files where kubelet refreshes their Secret volumes (kube-apiserver
 * 1.20 reloads its serving pair, client-go its client certificate files). A workload that is absent was
 * deleted through the API: that is the cluster's business, not a renewal. */
static int observe_certificates(Pivot *p, char **ret_error) {
        const SelfHostedAssets *a = p->settings->assets;
        p->stale = new0(bool, a->n + 1);
        if (!p->stale)
                return -ENOMEM;
        if (!first_master(p))
                return 0;
        bool roll = p->obs.n_masters > 1;
        for (size_t i = 0; i < a->n; i++) {
                const SelfHostedObject *o = &a->items[i];
                if (!o->secret && !(roll && is_workload(o)))
                        continue;
                json_t *live = NULL;
                int r = get_live(p, o, &live, ret_error);
                if (r < 0)
                        return r;
                p->stale[i] = o->secret ? asset_stale(p, i, live, true) : live && template_stale(p, live);
                p->obs.certificates_stale += p->stale[i];
                live_free(o, live);
        }
        return 0;
}

static int observe_disk(Pivot *p, char **ret_error) {
        const PivotSettings *s = p->settings;
        for (PivotComponent c = 0; c < _PIVOT_COMPONENT_MAX; c++) {
                _cleanup_free_ char *path =
                    strjoin(s->manifest_dir, "/", pivot_component_name(c), ".manifest");
                if (!path)
                        return -ENOMEM;
                p->obs.local_bootstrap[c] = access(path, F_OK) == 0;
        }
        int r = pivot_record_load(s->state_dir, &p->record, ret_error);
        if (r < 0)
                return r;
        p->obs.assets_applied_at = p->record.assets_applied_at;
        p->obs.removed_at = p->record.removed_at;
        p->obs.names_left_at = p->record.names_left_at;
        p->obs.names_gone_at = p->record.names_gone_at;
        p->obs.started_at = p->record.started_at;
        return 0;
}

/* The API part; a failure here is an observation (the API is away), kept in api_error. */
static int observe_api(Pivot *p) {
        _cleanup_free_ char *err = NULL;
        int r = observe_complete(p, &err);
        if (r >= 0)
                r = p->obs.complete ? observe_certificates(p, &err) : observe_assets(p, &err);
        if (r >= 0)
                r = observe_pods(p, &err);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                p->obs.api_ready = false;
                p->api_error = TAKE_PTR(err);
        }
        return 0;
}

int pivot_observe(Pivot *p, char **ret_error) {
        const PivotSettings *s = p->settings;
        int r;
        observation_reset(p);
        p->obs.self = s->node_name;
        p->obs.masters_expected = s->masters_expected;
        p->obs.ready_deadline = s->ready_deadline;
        p->obs.restore_deadline = s->restore_deadline;
        p->obs.names_ttl = s->names_ttl;
        p->obs.names_listed = s->names_known ? s->names_listed : -1;
        r = observe_disk(p, ret_error);
        if (r < 0)
                return r;
        usec_t deadline = now(CLOCK_MONOTONIC) + (s->call_timeout ?: 10 * USEC_PER_SEC);
        p->obs.api_ready = kube_probe(p->api, "readyz", deadline, &p->api_error) >= 0;
        p->obs.local_api_ready = kube_probe(p->local, "readyz", deadline, &p->local_error) >= 0;
        r = 0;
        if (p->obs.api_ready)
                r = observe_masters(p, &p->api_error);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                p->obs.api_ready = false;
        if (!p->masters) { /* the API is away: this master alone, as far as it can tell */
                p->masters = new0(PivotMaster, 1);
                if (!p->masters)
                        return -ENOMEM;
                p->masters[0].node = s->node_name;
                p->obs.n_masters = 1;
        } else if (p->obs.api_ready) {
                r = observe_api(p);
                if (r < 0)
                        return r;
        }
        /* This master saw the pivot complete (its record): it stays complete whatever the API answers now.
         * Without this, an API outage after completion (a reboot, the rolling upgrade of a single master's
         * apiserver) read as "not complete" and the rollback deadline, counted from the removal long ago,
         * wrote the bootstrap manifests back (test_checkpoint.py's upgrade showed it). */
        p->obs.complete = p->obs.complete || p->record.complete_at != 0;
        p->obs.masters = p->masters;
        p->obs.now = now(CLOCK_REALTIME);
        return 0;
}
