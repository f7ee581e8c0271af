/* SPDX-License-Identifier: Apache-2.0 */
/* The pass's pivot step (docs/pivot.md): the pivot's record read first (the API's names follow the pivot's
 * turns), then, after the control-plane manifests, the checkpoint's step and one pivot step. */
#include <stdio.h>
#include <stdlib.h>

#include "basic/errors.h"
#include "basic/log.h"
#include "basic/stop.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "daemon/pass-pivot.h"
#include "daemon/pass-types.h"
#include "daemon/progress.h"
#include "daemon/step-pivot.h"
#include "dns/dns-records.h"
#include "model/cluster-view.h"
#include "model/conventions.h"

/* The pivot's record (docs/pivot.md): a master that retired its bootstrap manifests, or saw the pivot
 * complete, must not get them back from the pass. A record that cannot be read keeps them away too: writing
 * them could undo a pivot. Read first: the API's names follow the pivot's turns while it is under way. */
static int pivot_step_observe(PassContext *ctx) {
        const Pass *p = ctx->pass;
        PassObservation *o = ctx->obs;
        _cleanup_free_ char *error = NULL;
        int r = pivot_record_load(p->node.state_dir ?: STATE_DIR_DEFAULT, &o->pivot_record, &error);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                log_error("%s: the bootstrap control-plane manifests are not written this pass.", error);
                o->pivot_record = (PivotRecord){ .removed_at = 1 };
        }
        return 0;
}

/* The masters the cluster has: the main etcd cluster's members in the view. */
static size_t main_members(const ClusterView *v) {
        size_t n = 0;
        for (size_t i = 0; v && i < v->n_members; i++)
                n += streq(v->members[i].cluster, ETCD_MAIN_CLUSTER);
        return n;
}

/* The pivot of this node, from the pass's observation (its name and address) and plan (the masters). 0
 * with *ret, 1 when those are not known this pass, < 0 (logged) on failure. */
static int pivot_for_pass(const Pass *p, const PassObservation *o, const PassPlan *plan, PassPivot **ret) {
        const char *ip = o->volumes_error < 0                            ? NULL
                         : strv_length(o->volumes.node.internal_ips) > 0 ? o->volumes.node.internal_ips[0]
                                                                         : NULL;
        const char *name = o->volumes_error < 0 ? NULL : o->volumes.node.name;
        if (!ip || !name || main_members(plan->view) == 0)
                return 1;
        int r = pass_pivot_open(p->spec, &p->node, name, ip, main_members(plan->view), ret);
        _cleanup_free_ char *host = NULL;
        if (r >= 0 && o->dns_error >= 0 && o->dns_enabled &&
            api_dns_name(p->spec->dns.internal_suffix, &host) >= 0)
                pass_pivot_set_names_listed(
                    *ret, dns_rrsets_hold_all(&o->dns_served, host, o->volumes.node.internal_ips));
        return r;
}

/* A master pivots with the certificates of the store (the self-hosted pods' Secrets are made from them); a
 * worker's copy of the spec has no store and keeps selfHosted for its own steps (its kube-proxy is the
 * DaemonSet's), so the spec's loader cannot refuse it: the master's pivot does. */
#define PIVOT_NEEDS_STORE                                                                               \
        "spec.selfHosted: a master needs spec.stateStore (the self-hosted pods' Secrets are made from " \
        "the certificates protokube issues)"

/* spec selfHosted: true, each pass after the control-plane manifests (docs/pivot.md): the checkpoint's step,
 * then one pivot step. Not done yet is PK_EWAITING with the step's why; a failure is the stage's error. The
 * checkpoint comes first and also after a failed apply round (apply_ok false: no pivot step then): when the
 * API is down at boot it is what brings the API back, and nothing before it needs the API. */
static int pivot_step_apply(PassContext *ctx, PassWave wave) {
        const Pass *p = ctx->pass;
        const PassObservation *o = ctx->obs;
        const PassPlan *plan = ctx->plan;
        PassReport *rep = ctx->rep;
        bool apply_ok = !ctx->apply_failed;
        _cleanup_(pass_pivot_freep) PassPivot *pp = NULL;
        PivotDecision d = {};
        if (!p->spec->self_hosted.set || !p->spec->self_hosted.value)
                return 0;
        if (!p->spec->state_store) {
                pass_report_error(rep, PASS_STAGE_PIVOT, -EINVAL, PIVOT_NEEDS_STORE);
                return 0;
        }
        pass_progress_step("pivot");
        int r = pivot_for_pass(p, o, plan, &pp);
        if (r > 0) {
                pass_report_error(rep, PASS_STAGE_PIVOT, PK_EWAITING,
                                  "pivot: waiting for this node's name and address and the masters");
                return 0;
        }
        if (r >= 0) {
                pass_progress_step("checkpoint");
                pass_checkpoint_run(pp, rep);
        }
        if (!apply_ok || stop_requested())
                return 0;
        pass_progress_step("pivot");
        if (r < 0 || pass_pivot_step(pp, true, &d) < 0) {
                pass_report_error(rep, PASS_STAGE_PIVOT, -EIO, "pivot: a step failed (see the log)");
                rep->repass_soon = true;
                return 0;
        }
        _cleanup_free_ char *why = strprintf("pivot: %s: %s", pivot_step_name(d.step), d.why);
        if (d.step == PIVOT_FAILED) {
                log_error("The pivot failed: %s", d.why);
                pass_report_error(rep, PASS_STAGE_PIVOT, -ETIMEDOUT, why ?: "pivot failed");
        } else if (d.step != PIVOT_DONE) {
                log_info("Pivot: %s: %s", pivot_step_name(d.step), d.why);
                pass_report_error(rep, PASS_STAGE_PIVOT, PK_EWAITING, why ?: "pivot under way");
                rep->repass_soon = true;
        }
        pivot_decision_done(&d);
        return 0;
}

/* For `plan` with selfHosted: "pivot STEP: why", the pivot's next step (observed through the API, decided,
 * not taken). */
static int pivot_print(const Pass *p, const PassObservation *o, const PassPlan *plan, FILE *out) {
        _cleanup_(pass_pivot_freep) PassPivot *pp = NULL;
        PivotDecision d = {};
        if (!p->spec->self_hosted.set || !p->spec->self_hosted.value)
                return 0;
        if (!p->spec->state_store) {
                fprintf(out, "pivot refused: %s\n", PIVOT_NEEDS_STORE);
                return 0;
        }
        int r = pivot_for_pass(p, o, plan, &pp);
        if (r > 0) {
                fprintf(out, "pivot wait: this node's name and address and the masters are not known\n");
                return 0;
        }
        if (r < 0 || (r = pass_pivot_step(pp, false, &d)) < 0) {
                /* the pivot's step needs the API and the certificates: without them the rest stands */
                log_warning("The pivot's next step is not known (see above).");
                return 0;
        }
        fprintf(out, "pivot %s: %s\n", pivot_step_name(d.step), d.why);
        pivot_decision_done(&d);
        return 0;
}

const PassStep pass_step_pivot = {
        .name = "pivot",
        .stage = PASS_STAGE_PIVOT,
        .roles = 1U << NODE_ROLE_MASTER,
        /* the checkpoint is what brings the API back at boot: it runs after a failed apply too */
        .after_failure = true,
        .observe = pivot_step_observe,
        .apply = pivot_step_apply,
        .print = pivot_print,
};
