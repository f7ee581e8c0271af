/* SPDX-License-Identifier: Apache-2.0 */
/* Which kubelet holds the node (docs/kubelet-handoff.md), with spec.kubelet.selfHosted: the bootstrap
 * kubelet the init system starts, or the managed kubelet of the DaemonSet's pod. Both run with
 * --lock-file=<kubelet dir>/kubelet.lock --exit-on-lock-contention; the one holding the flock holds the
 * node. It is read from /proc/locks by the file's device and inode: the file is never opened, since any
 * open() of it makes the kubelet holding it exit. A holder in a pod's cgroup is the managed kubelet.
 *
 * Each node reports its holder on its Node (annotation protokube.io/kubelet-holder). The masters keep the
 * taint protokube.io/bootstrap-kubelet:NoSchedule on every Node exactly while its managed kubelet does not
 * hold it: their own from what they see, another's from its report (none yet: its bootstrap kubelet, which
 * registered it). A worker only reports: NodeRestriction forbids a kubelet's identity to change its Node's
 * taints. `protokube plan` prints the holder and since when; /healthz and /metrics say it too. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "basic/trace.h"
#include "components/kubelet.h"
#include "daemon/pass-types.h"
#include "daemon/progress.h"
#include "daemon/step-kubelet-handoff.h"
#include "kube/kube-client.h"
#include "shared/json-util.h"

#define NODE_TIMEOUT (10ULL * USEC_PER_SEC)

static bool handoff_enabled(const ClusterSpec *spec) {
        return spec->kubelet.self_hosted.set && spec->kubelet.self_hosted.value;
}

static const char *holder_name(PassKubeletHolder h) {
        return h == PASS_KUBELET_HOLDER_MANAGED     ? "managed"
               : h == PASS_KUBELET_HOLDER_BOOTSTRAP ? "bootstrap"
                                                    : "none";
}

static int observe_holder(const Pass *p, PassKubeletHandoffObserved *o) {
        _cleanup_free_ char *lock = pass_kubelet_file(p, KUBELET_LOCK_FILE);
        pid_t pid = 0;
        if (!lock)
                return -ENOMEM;
        int r = flock_holder_find("/proc", lock, &pid);
        if (r == -ENOENT || r == 0)
                return 0; /* no lock file yet, or nobody holds it */
        if (r > 0)
                r = process_facts_read("/proc", pid, &o->facts);
        if (r == -ESRCH) /* it ended while we looked: the next pass sees its successor */
                return 0;
        if (r < 0) {
                o->status = r;
                o->note = strprintf("cannot tell who holds %s: %s", lock, pk_strerror(r));
                return o->note ? 0 : -ENOMEM;
        }
        o->holder = o->facts.pod_uid[0] ? PASS_KUBELET_HOLDER_MANAGED : PASS_KUBELET_HOLDER_BOOTSTRAP;
        return 0;
}

/* The index of our taint in the Node's spec.taints, or -1. */
static ssize_t taint_index(const json_t *node) {
        const json_t *taints = json_get(node, "spec", "taints");
        size_t i;
        const json_t *t;
        json_array_foreach(taints, i, t) if (streq_ptr(json_string_value(json_object_get(t, "key")),
                                                       KUBELET_BOOTSTRAP_TAINT)) return (ssize_t)i;
        return -1;
}

/* A worker: the API through a master of its view, with its kubelet's identity. */
static int open_worker_api(const PassContext *ctx, KubeClient **ret, char **ret_error) {
        const Pass *p = ctx->pass;
        _cleanup_free_ char *kubeconfig = pass_kubelet_file(p, PASS_KUBELET_KUBECONFIG), *address = NULL;
        if (!kubeconfig)
                return -ENOMEM;
        int r = pass_view_master_address(ctx->obs, &address);
        if (r < 0)
                return r == -ENOMEM ? r
                                    : error_setf(ret_error, PK_EWAITING, "no master with an address yet");
        return pass_open_api_at(p->spec, kubeconfig, address, NODE_TIMEOUT, ret, ret_error);
}

static int kubelet_handoff_observe(PassContext *ctx) {
        PassKubeletHandoffObserved *o = &ctx->obs->kubelet_handoff;
        if (!handoff_enabled(ctx->pass->spec))
                return 0;
        o->enabled = true;
        trace_mark("kubelet handoff: the lock's holder");
        return observe_holder(ctx->pass, o);
}

/* A master: every Node, for their taints. */
static int kubelet_handoff_observe_master(PassContext *ctx) {
        PassKubeletHandoffObserved *o = &ctx->obs->kubelet_handoff;
        _cleanup_(kube_client_freep) KubeClient *c = NULL;
        _cleanup_free_ char *error = NULL;
        int r = kubelet_handoff_observe(ctx);
        if (r < 0 || !o->enabled)
                return r;
        trace_mark("kubelet handoff: the Nodes");
        r = pass_open_own_api(ctx, NODE_TIMEOUT, &c, &error);
        if (r >= 0)
                r = kube_list(c, "v1", "Node", NULL, NULL, now(CLOCK_MONOTONIC) + NODE_TIMEOUT, &o->nodes,
                              &error);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                o->node_note = strdup(strna(error));
                return o->node_note ? 0 : -ENOMEM;
        }
        return 0;
}

static int add_change(PassKubeletHandoffPlan *k, const char *name, const char *holder, int taint) {
        if (!holder && taint == 0)
                return 0;
        PassKubeletNodeChange *a = reallocarray(k->changes, k->n_changes + 1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        k->changes = a;
        a[k->n_changes] = (PassKubeletNodeChange){ .name = strdup(name), .holder = holder, .taint = taint };
        return a[k->n_changes++].name ? 0 : -ENOMEM;
}

/* A Node's taint from what holds it: this node's own observation, another's report on its Node (none yet:
 * its bootstrap kubelet, which registered it). */
static int plan_node(const PassObservation *o, const json_t *node, const char *self,
                     PassKubeletHandoffPlan *k) {
        const char *name = json_get_string(node, "metadata", "name"),
                   *reported = json_get_string(node, "metadata", "annotations", KUBELET_HOLDER_ANNOTATION);
        const char *mine = holder_name(o->kubelet_handoff.holder);
        if (!name)
                return 0;
        bool own = streq_ptr(name, self);
        const char *holder = own ? mine : reported;
        bool want = !streq_ptr(holder, "managed"), has = taint_index(node) >= 0;
        return add_change(k, name, own && !streq_ptr(reported, mine) ? mine : NULL,
                          want == has ? 0
                          : want      ? 1
                                      : -1);
}

static int kubelet_handoff_plan_master(const Pass *p, const PassObservation *o, PassPlan *plan) {
        const PassKubeletHandoffObserved *ob = &o->kubelet_handoff;
        size_t i;
        const json_t *node;
        (void)p;
        if (!ob->enabled || ob->status < 0 || !ob->nodes)
                return 0;
        json_array_foreach(json_object_get(ob->nodes, "items"), i, node) {
                int r = plan_node(o, node, o->volumes.node.name, &plan->kubelet_handoff);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* A worker reports its holder on its Node (its kubelet's identity may write its annotations, not its
 * taints). */
static int kubelet_handoff_plan_worker(const Pass *p, const PassObservation *o, PassPlan *plan) {
        const PassKubeletHandoffObserved *ob = &o->kubelet_handoff;
        const char *mine = holder_name(ob->holder);
        if (!ob->enabled || ob->status < 0 || !o->node_join.node_read || !p->node.node_name)
                return 0;
        if (streq_ptr(o->node_join.kubelet_holder, mine))
                return 0;
        return add_change(&plan->kubelet_handoff, p->node.node_name, mine, 0);
}

/* A merge patch: the holder annotation, and the taints with ours added or taken out, which holds only if
 * the Node did not change since it was listed (its resourceVersion): the other taints are the node
 * controller's. */
static json_t *node_patch(const PassKubeletNodeChange *c, const json_t *node) {
        json_t *patch = json_object(), *meta = json_object();
        if (!patch || !meta || json_object_set_new(patch, "metadata", meta) < 0) {
                json_decref(patch);
                return NULL;
        }
        if (c->holder && json_object_set_new(meta, "annotations",
                                             json_pack("{s:s}", KUBELET_HOLDER_ANNOTATION, c->holder)) < 0)
                goto fail;
        if (c->taint == 0)
                return patch;
        const json_t *old = json_get(node, "spec", "taints"),
                     *rv = json_get(node, "metadata", "resourceVersion");
        json_t *taints = json_is_array(old) ? json_copy((json_t *)old) : json_array();
        ssize_t i = taint_index(node);
        if (taints && i >= 0)
                json_array_remove(taints, (size_t)i);
        if (taints && c->taint > 0 &&
            json_array_append_new(
                taints, json_pack("{s:s, s:s}", "key", KUBELET_BOOTSTRAP_TAINT, "effect", "NoSchedule")) < 0)
                json_decref(TAKE_PTR(taints));
        /* the spec object takes the list, failing or not */
        if (!taints || json_object_set_new(patch, "spec", json_pack("{s:o}", "taints", taints)) < 0)
                goto fail;
        if (json_is_string(rv) && json_object_set(meta, "resourceVersion", (json_t *)rv) < 0)
                goto fail;
        return patch;
fail:
        json_decref(patch);
        return NULL;
}

static const json_t *listed_node(const PassObservation *o, const char *name) {
        size_t i;
        const json_t *node;
        json_array_foreach(json_object_get(o->kubelet_handoff.nodes, "items"), i,
                           node) if (streq_ptr(json_get_string(node, "metadata", "name"), name)) return node;
        return NULL;
}

static int apply_change(PassContext *ctx, KubeClient *c, const PassKubeletNodeChange *ch) {
        const json_t *node = listed_node(ctx->obs, ch->name);
        _cleanup_free_ char *error = NULL;
        if (ch->taint && !node) /* planned from the list: never */
                return 0;
        _cleanup_(json_decrefp) json_t *patch = node_patch(ch, node);
        if (!patch)
                return -ENOMEM;
        int r = kube_merge_patch(c, "v1", "Node", NULL, ch->name, patch, now(CLOCK_MONOTONIC) + NODE_TIMEOUT,
                                 &error);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                _cleanup_free_ char *why = strprintf("cannot change Node %s: %s", ch->name, strna(error));
                pass_report_status(ctx, PASS_STAGE_KUBELET, "kubelet handoff", r, why);
                return 0;
        }
        if (ch->taint)
                log_info("kubelet handoff: %s %s on Node %s.", ch->taint > 0 ? "put" : "took off",
                         KUBELET_BOOTSTRAP_TAINT, ch->name);
        if (ch->holder)
                log_info("kubelet handoff: Node %s: held by the %s kubelet.", ch->name, ch->holder);
        ctx->rep->actions_applied++;
        return 0;
}

/* What /healthz and /metrics say of the holder. */
static void report_holder(PassContext *ctx) {
        const PassKubeletHandoffObserved *o = &ctx->obs->kubelet_handoff;
        PassKubeletHolderInfo *info = &ctx->rep->kubelet;
        if (!o->enabled)
                return;
        *info = (PassKubeletHolderInfo){ .known = true };
        snprintf(info->holder, sizeof(info->holder), "%s",
                 o->status < 0 ? "unknown" : holder_name(o->holder));
        if (o->holder == PASS_KUBELET_HOLDER_MANAGED)
                snprintf(info->pod, sizeof(info->pod), "%s", o->facts.pod_uid);
        if (o->holder != PASS_KUBELET_HOLDER_NONE)
                info->since = o->facts.started;
}

typedef int (*ApiOpener)(const PassContext *ctx, KubeClient **ret, char **ret_error);

static int open_master_api(const PassContext *ctx, KubeClient **ret, char **ret_error) {
        return pass_open_own_api(ctx, NODE_TIMEOUT, ret, ret_error);
}

/* The report, then the Nodes' changes through the API open() gives (each role's table names its own). */
static int apply_through(PassContext *ctx, ApiOpener open) {
        const PassKubeletHandoffPlan *k = &ctx->plan->kubelet_handoff;
        _cleanup_(kube_client_freep) KubeClient *c = NULL;
        _cleanup_free_ char *error = NULL;
        report_holder(ctx);
        if (k->n_changes == 0)
                return 0;
        pass_progress_step("kubelet handoff");
        int r = open(ctx, &c, &error);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                pass_report_status(ctx, PASS_STAGE_KUBELET, "kubelet handoff", r, error);
                return 0;
        }
        for (size_t i = 0; i < k->n_changes; i++) {
                r = apply_change(ctx, c, &k->changes[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int kubelet_handoff_apply_master(PassContext *ctx, PassWave wave) {
        (void)wave;
        return apply_through(ctx, open_master_api);
}

static int kubelet_handoff_apply_worker(PassContext *ctx, PassWave wave) {
        (void)wave;
        return apply_through(ctx, open_worker_api);
}

static int kubelet_handoff_print(const Pass *p, const PassObservation *o, const PassPlan *plan, FILE *out) {
        const PassKubeletHandoffObserved *ob = &o->kubelet_handoff;
        const PassKubeletHandoffPlan *k = &plan->kubelet_handoff;
        char since[RFC3339_MAX];
        (void)p;
        if (!ob->enabled)
                return 0;
        if (ob->status < 0)
                fprintf(out, "kubelet-holder unknown: %s\n", strna(ob->note));
        else if (ob->holder == PASS_KUBELET_HOLDER_NONE)
                fprintf(out, "kubelet-holder none: no kubelet holds the node's lock\n");
        else
                fprintf(out, "kubelet-holder %s%s%s pid=%d since=%s\n", holder_name(ob->holder),
                        ob->facts.pod_uid[0] ? " pod=" : "", ob->facts.pod_uid, (int)ob->facts.pid,
                        format_rfc3339(since, ob->facts.started));
        for (size_t i = 0; i < k->n_changes; i++) {
                const PassKubeletNodeChange *c = &k->changes[i];
                if (c->taint)
                        fprintf(out, "kubelet-taint %s %s %s:NoSchedule\n", c->name,
                                c->taint > 0 ? "add" : "remove", KUBELET_BOOTSTRAP_TAINT);
                if (c->holder)
                        fprintf(out, "kubelet-report %s %s=%s\n", c->name, KUBELET_HOLDER_ANNOTATION,
                                c->holder);
        }
        if (k->n_changes == 0 && (ob->nodes || o->node_join.node_read))
                fprintf(out, "kubelet-taint: every Node current\n");
        else if (ob->node_note)
                fprintf(out, "kubelet-taint: the Nodes not read: %s\n", ob->node_note);
        return 0;
}

const PassStep pass_step_kubelet_handoff_master = {
        .name = "kubelet handoff",
        .stage = PASS_STAGE_KUBELET,
        .roles = 1U << NODE_ROLE_MASTER,
        .observe = kubelet_handoff_observe_master,
        .plan = kubelet_handoff_plan_master,
        .apply = kubelet_handoff_apply_master,
        .print = kubelet_handoff_print,
};

const PassStep pass_step_kubelet_handoff_worker = {
        .name = "kubelet handoff",
        .stage = PASS_STAGE_KUBELET,
        .roles = 1U << NODE_ROLE_WORKER,
        .observe = kubelet_handoff_observe,
        .plan = kubelet_handoff_plan_worker, /* its report only: a worker may not taint (NodeRestriction) */
        .apply = kubelet_handoff_apply_worker,
        .print = kubelet_handoff_print,
};
