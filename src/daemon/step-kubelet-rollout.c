/* SPDX-License-Identifier: Apache-2.0 */
/* The managed kubelet's rollout (docs/kubelet-handoff.md, "Upgrades and rollbacks"), on the masters: an
 * upgrade is a change of the DaemonSet kube-system/kubelet through the API (its image, its args), which
 * Kubernetes rolls one node at a time; but a DaemonSet has no progress deadline, and a template whose
 * kubelet never becomes Ready would hold its first node on the bootstrap kubelet for ever and stop the
 * rollout there. A master finds a rollout not complete longer than spec.kubelet.rolloutDeadline since it
 * started and puts the previous template back (kubectl rollout undo's way: the revision's template),
 * saying so in the DaemonSet's annotations; a template rolled back from is never rolled back to. The
 * deadline runs per node: from the rollout's start or the last node whose new kubelet became Ready. A
 * steady DaemonSet costs one read per pass. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "basic/trace.h"
#include "daemon/pass-types.h"
#include "daemon/progress.h"
#include "daemon/step-kubelet-rollout.h"
#include "kube/kube-client.h"
#include "kube/kube-rollout.h"
#include "shared/json-util.h"

#define DAEMON_SET       "kubelet"
#define NAMESPACE        "kube-system"
#define SELECTOR         "k8s-app=kubelet"
#define API_TIMEOUT      (10ULL * USEC_PER_SEC)
#define DEADLINE_DEFAULT (300ULL * USEC_PER_SEC)

static usec_t rollout_deadline(const ClusterSpec *spec) {
        const OptDuration *d = &spec->kubelet.rollout_deadline;
        return d->set ? d->value : DEADLINE_DEFAULT;
}

static int rollout_of(PassKubeletRolloutObserved *o, const json_t *revisions, const json_t *pods,
                      usec_t deadline, char **ret_error) {
        kube_rollout_done(&o->rollout);
        int r = kube_daemonset_rollout(o->daemon_set, revisions, pods, now(CLOCK_REALTIME), deadline,
                                       &o->rollout);
        if (r < 0 && r != -ENOMEM)
                return error_setf(ret_error, r, "the DaemonSet, its revisions or its pods: %s",
                                  pk_strerror(r));
        return r;
}

/* One read for a DaemonSet that is rolled out; its revisions and pods only while a rollout is under way. */
static int observe_with(PassKubeletRolloutObserved *o, KubeClient *c, usec_t deadline, char **ret_error) {
        _cleanup_(json_decrefp) json_t *revisions = NULL, *pods = NULL;
        int r = kube_get(c, "apps/v1", "DaemonSet", NAMESPACE, DAEMON_SET,
                         now(CLOCK_MONOTONIC) + API_TIMEOUT, &o->daemon_set, ret_error);
        if (r == -ENOENT) /* not applied (yet): nothing rolls */
                return 0;
        if (r >= 0)
                r = rollout_of(o, NULL, NULL, deadline, ret_error);
        if (r >= 0 && !o->rollout.complete) {
                r = kube_list(c, "apps/v1", "ControllerRevision", NAMESPACE, SELECTOR,
                              now(CLOCK_MONOTONIC) + API_TIMEOUT, &revisions, ret_error);
                if (r >= 0)
                        r = kube_list(c, "v1", "Pod", NAMESPACE, SELECTOR,
                                      now(CLOCK_MONOTONIC) + API_TIMEOUT, &pods, ret_error);
                if (r >= 0)
                        r = rollout_of(o, revisions, pods, deadline, ret_error);
        }
        if (r < 0)
                return r;
        o->read = true;
        return 0;
}

static int kubelet_rollout_observe(PassContext *ctx) {
        PassKubeletRolloutObserved *o = &ctx->obs->kubelet_rollout;
        const ClusterSpec *spec = ctx->pass->spec;
        _cleanup_(kube_client_freep) KubeClient *c = NULL;
        _cleanup_free_ char *error = NULL;
        if (!spec->kubelet.self_hosted.set || !spec->kubelet.self_hosted.value)
                return 0;
        trace_mark("kubelet rollout: the DaemonSet");
        int r = pass_open_own_api(ctx, API_TIMEOUT, &c, &error);
        if (r >= 0)
                r = observe_with(o, c, rollout_deadline(spec), &error);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                o->note = strdup(strna(error));
                return o->note ? 0 : -ENOMEM;
        }
        return 0;
}

static int kubelet_rollout_plan(const Pass *p, const PassObservation *o, PassPlan *plan) {
        const PassKubeletRolloutObserved *ob = &o->kubelet_rollout;
        (void)p;
        plan->kubelet_rollback = ob->read && ob->rollout.stuck && ob->rollout.previous_template;
        return 0;
}

/* The DaemonSet with the previous template and the rollback said in its annotations, replaced at the
 * version read (another master that rolled it back first wins; this one reads it again next pass). */
static json_t *rolled_back(const PassKubeletRolloutObserved *o, usec_t deadline) {
        const KubeRollout *r = &o->rollout;
        char at[RFC3339_MAX], d[GO_DURATION_MAX];
        json_t *ds = json_deep_copy(o->daemon_set);
        _cleanup_free_ char *why =
            strprintf("revision %ld (%s) -> %ld (%s): not rolled out within %s: %s", r->current, r->hash,
                      r->previous, r->previous_hash, format_go_duration(d, deadline), r->why);
        if (!ds || !why)
                goto fail;
        json_t *meta = json_object_get(ds, "metadata"), *ann = json_object_get(meta, "annotations");
        if (!json_is_object(ann) && json_object_set_new(meta, "annotations", ann = json_object()) < 0)
                goto fail;
        if (json_object_set_new(ann, KUBE_ROLLED_BACK_ANNOTATION, json_string(why)) < 0 ||
            json_object_set_new(ann, KUBE_ROLLED_BACK_AT_ANNOTATION,
                                json_string(format_rfc3339(at, now(CLOCK_REALTIME)))) < 0 ||
            json_object_set_new(ann, KUBE_ROLLED_BACK_FROM_ANNOTATION, json_string(r->hash)) < 0 ||
            json_object_set(json_object_get(ds, "spec"), "template", r->previous_template) < 0)
                goto fail;
        json_object_del(ds, "status");
        return ds;
fail:
        json_decref(ds);
        return NULL;
}

static int kubelet_rollout_apply(PassContext *ctx, PassWave wave) {
        const PassKubeletRolloutObserved *o = &ctx->obs->kubelet_rollout;
        _cleanup_(kube_client_freep) KubeClient *c = NULL;
        _cleanup_free_ char *error = NULL;
        (void)wave;
        if (!ctx->plan->kubelet_rollback)
                return 0;
        pass_progress_step("kubelet rollback");
        _cleanup_(json_decrefp) json_t *ds = rolled_back(o, rollout_deadline(ctx->pass->spec));
        if (!ds)
                return -ENOMEM;
        int r = pass_open_own_api(ctx, API_TIMEOUT, &c, &error);
        if (r >= 0)
                r = kube_replace(c, ds, NULL, now(CLOCK_MONOTONIC) + API_TIMEOUT, NULL, &error);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                _cleanup_free_ char *why =
                    strprintf("cannot roll back DaemonSet %s/%s: %s", NAMESPACE, DAEMON_SET, strna(error));
                pass_report_status(ctx, PASS_STAGE_KUBELET, "kubelet rollout", r, why);
                return 0;
        }
        log_warning("kubelet rollout: rolled DaemonSet %s/%s back: %s", NAMESPACE, DAEMON_SET,
                    json_get_string(ds, "metadata", "annotations", KUBE_ROLLED_BACK_ANNOTATION));
        ctx->rep->actions_applied++;
        return 0;
}

static int kubelet_rollout_print(const Pass *p, const PassObservation *o, const PassPlan *plan, FILE *out) {
        const PassKubeletRolloutObserved *ob = &o->kubelet_rollout;
        const KubeRollout *r = &ob->rollout;
        char since[RFC3339_MAX];
        (void)p;
        if (ob->note)
                fprintf(out, "kubelet-rollout: not read: %s\n", ob->note);
        if (!ob->read)
                return 0;
        if (r->complete)
                fprintf(out, "kubelet-rollout: complete: %s\n", r->why);
        else if (plan->kubelet_rollback)
                fprintf(out, "kubelet-rollback revision %ld (%s) -> %ld (%s): %s since %s\n", r->current,
                        r->hash, r->previous, r->previous_hash, r->why, format_rfc3339(since, r->since));
        else
                fprintf(out, "kubelet-rollout: %s revision %ld since %s: %s\n",
                        r->stuck ? "stuck, nothing to roll back to," : "under way,", r->current,
                        format_rfc3339(since, r->since), r->why);
        return 0;
}

const PassStep pass_step_kubelet_rollout = {
        .name = "kubelet rollout",
        .stage = PASS_STAGE_KUBELET,
        .roles = 1U << NODE_ROLE_MASTER,
        .observe = kubelet_rollout_observe,
        .plan = kubelet_rollout_plan,
        .apply = kubelet_rollout_apply,
        .print = kubelet_rollout_print,
};
