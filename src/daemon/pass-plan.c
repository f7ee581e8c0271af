/* SPDX-License-Identifier: Apache-2.0 */
/* A pass's phases over its role's table (pass-roles.c): one observation (all its reads, once), a pure plan
 * (every action as data), the apply in the table's order, the report; and `plan`'s print of the same. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/log.h"
#include "basic/stop.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "basic/trace.h"
#include "daemon/pass-types.h"
#include "daemon/pass.h"
#include "model/cluster-view.h"

void pass_observation_done(PassObservation *o) {
        volumes_observation_done(&o->volumes);
        free(o->dns_message);
        free(o->volumes_message);
        dns_rrset_list_done(&o->dns_served);
        strv_free(o->api.probed);
        strv_free(o->api.ready);
        strv_free(o->api.out);
        strv_free(o->api.pods_ready);
        free(o->api.pods_through);
        strv_free(o->api_why);
        strv_free(o->manifest_names);
        for (size_t i = 0; i < ELEMENTSOF(o->config_texts); i++)
                free(o->config_texts[i]);
        strv_free(o->manifest_texts);
        certs_observation_done(&o->certs);
        pass_kubelet_observed_done(&o->kubelet);
        pass_pod_network_observed_done(&o->pod_network);
        free(o->node_proxy.text);
        free(o->kubelet_config.config);
        free(o->kubelet_config.env);
        free(o->kubelet_handoff.note);
        free(o->kubelet_handoff.node_note);
        json_decref(o->kubelet_handoff.nodes);
        json_decref(o->kubelet_rollout.daemon_set);
        kube_rollout_done(&o->kubelet_rollout.rollout);
        free(o->kubelet_rollout.note);
        free(o->node_join.kubelet_holder);
        free(o->node_proxy.config_text);
        free(o->node_join.message);
        join_csr_progress_done(&o->node_join.csr);
        free(o->node_join.ready_words);
        for (size_t i = 0; o->etcd_members && i < o->in.n_volumes; i++)
                pass_etcd_member_done(&o->etcd_members[i]);
        free(o->etcd_members);
        for (size_t i = 0; o->etcd_upgrades && i < o->in.n_volumes; i++)
                pass_etcd_upgrade_done(&o->etcd_upgrades[i]);
        free(o->etcd_upgrades);
        free(o->join_message);
        join_observation_done(&o->join);
        cloud_machines_free(o->cloud_machines, o->n_machines);
        free(o->join_machines);
        *o = (PassObservation){};
}

void pass_plan_done(PassPlan *p) {
        for (size_t k = 0; p->etcd_texts && k < p->volumes.n_selections; k++)
                free(p->etcd_texts[k]);
        free(p->etcd_texts);
        volumes_plan_done(&p->volumes);
        free(p->observed);
        free(p->etcd_render_error);
        cluster_view_free(p->view);
        free(p->dns_note);
        dns_rrset_list_done(&p->dns_desired);
        dns_rrset_list_done(&p->dns_changes);
        strv_free(p->api_withheld);
        free(p->api_note);
        rendered_manifests_done(&p->control_plane);
        free(p->control_plane_write);
        free(p->config_write);
        certs_plan_done(&p->certs);
        pass_kubelet_plan_done(&p->kubelet);
        pass_pod_network_plan_done(&p->pod_network);
        pass_node_proxy_plan_done(&p->node_proxy);
        for (size_t i = 0; i < p->kubelet_handoff.n_changes; i++)
                free(p->kubelet_handoff.changes[i].name);
        free(p->kubelet_handoff.changes);
        free(p->kubelet_config.note);
        free(p->kubelet_config.config);
        free(p->kubelet_config.env);
        free(p->node_join.note);
        free(p->held_members);
        free(p->member_plans);
        free(p->upgrade_plans);
        free(p->held_images);
        join_plan_done(&p->join);
        free(p->join_server);
        *p = (PassPlan){};
}

static const PassRole *role_of(const Pass *pass) {
        const PassRole *r = pass_role(pass->node.role);
        assert(r); /* the node options accept only roles with a table */
        return r;
}

bool pass_has_step(const Pass *pass, const PassStep *step) {
        for (const PassRow *row = role_of(pass)->rows; row->step; row++)
                if (row->step == step)
                        return true;
        return false;
}

int pass_require_step(const Pass *pass, const PassStep *step, const char *verb) {
        if (pass_has_step(pass, step))
                return 0;
        return log_error_errno(-EOPNOTSUPP,
                               "'protokube %s' is about the %s step, and a %s's pass has no such step (its "
                               "role's table: docs/ARCHITECTURE.md).",
                               verb, step->name, strna(node_role_to_string(pass->node.role)));
}

/* The apply's rows: a stop request ends the round (the node is consistent between two actions: the next
 * pass goes on); an apply that fails leaves only the rows that must run anyway (the checkpoint); 1 (a
 * lost claim) ends the round for a new observation. */
static int apply_rows(PassContext *ctx, const PassRow *rows) {
        for (const PassRow *row = rows; row->step; row++) {
                const PassStep *s = row->step;
                if (row->phase != PASS_PHASE_APPLY || !s->apply || (ctx->apply_failed && !s->after_failure))
                        continue;
                if (stop_requested()) {
                        pass_report_error(ctx->rep, PASS_STAGE_SPEC, PK_EWAITING, "stopping");
                        return 0;
                }
                int r = s->revise ? s->revise(ctx, row->wave) : 0;
                if (r >= 0)
                        r = s->apply(ctx, row->wave);
                if (r == -ECANCELED) /* a wait ended by the stop request */
                        continue;
                if (r > 0)
                        return r;
                if (r < 0) {
                        pass_report_error(ctx->rep, PASS_STAGE_DISCOVER, r, "out of memory");
                        ctx->apply_failed = true;
                }
        }
        return ctx->apply_failed ? -ENOMEM : 0;
}

int pass_run_phase(PassContext *ctx, PassPhase phase) {
        const PassRow *rows = role_of(ctx->pass)->rows;
        if (phase == PASS_PHASE_APPLY)
                return apply_rows(ctx, rows);
        for (const PassRow *row = rows; row->step; row++) {
                const PassStep *s = row->step;
                int r = 0;
                if (row->phase != phase)
                        continue;
                if (phase == PASS_PHASE_OBSERVE && s->observe)
                        r = s->observe(ctx);
                else if (phase == PASS_PHASE_FINISH && s->finish)
                        r = s->finish(ctx);
                if (r < 0)
                        return r;
        }
        return 0;
}

int pass_plan_steps(const Pass *pass, const PassObservation *o, PassPlan *ret) {
        PassPlan plan = { .in = o->in };
        trace_mark("planning");
        plan.observed = new0(VolumeObserved, o->in.n_volumes + 1);
        if (!plan.observed)
                return -ENOMEM;
        if (o->in.observed)
                memcpy(plan.observed, o->in.observed, sizeof(VolumeObserved) * o->in.n_volumes);
        plan.in.observed = plan.observed;
        for (const PassRow *row = role_of(pass)->rows; row->step; row++) {
                if (row->phase != PASS_PHASE_PLAN || !row->step->plan)
                        continue;
                trace_mark("plan: %s", row->step->name);
                int r = row->step->plan(pass, o, &plan);
                if (r < 0) {
                        pass_plan_done(&plan);
                        return r;
                }
        }
        *ret = plan;
        return 0;
}

/* Every step prints its part; the first failure (logged by its step) is the result. */
int pass_print_steps(const Pass *pass, const PassObservation *o, const PassPlan *plan, FILE *out) {
        int ret = 0;
        for (const PassRow *row = role_of(pass)->rows; row->step; row++) {
                if (row->phase != PASS_PHASE_PRINT || !row->step->print)
                        continue;
                int r = row->step->print(pass, o, plan, out);
                if (r < 0 && ret >= 0)
                        ret = r;
        }
        return ret;
}

void pass_context_done(PassContext *ctx) {
        dns_session_free(ctx->dns);
        store_free(ctx->store);
        kube_client_free(ctx->join_api);
        volumes_apply_free(ctx->volumes_apply);
        free(ctx->first);
        free(ctx->rest);
        free(ctx->rest_etcd);
        free(ctx->etcd_texts);
        strv_free(ctx->etcd_owned);
        free(ctx->member_plans);
        free(ctx->upgrade_plans);
        free(ctx->held_images);
        free(ctx->restoring);
        *ctx = (PassContext){};
}

int pass_observe_with(PassContext *ctx, PassObservation *o) {
        *o = (PassObservation){ .realtime = now(CLOCK_REALTIME) };
        ctx->obs = o; /* filled in place: the planner's input points into it */
        int r = pass_run_phase(ctx, PASS_PHASE_OBSERVE);
        if (r < 0) {
                pass_observation_done(o);
                return r;
        }
        return 0;
}

/* The apply's working copies of what the steps between the plan and the writes may revise. */
int pass_context_prepare_apply(PassContext *ctx, const PassPlan *plan) {
        size_t n = plan->volumes.n_selections, v = ctx->obs->in.n_volumes;
        ctx->plan = plan;
        ctx->etcd_texts = new0(char *, n + 1);
        ctx->member_plans = new0(MemberPlan, v + 1);
        ctx->restoring = new0(bool, v + 1);
        ctx->upgrade_plans = new0(UpgradePlan, v + 1);
        ctx->held_images = new0(const char *, v + 1);
        if (!ctx->etcd_texts || !ctx->member_plans || !ctx->restoring || !ctx->upgrade_plans ||
            !ctx->held_images)
                return -ENOMEM;
        for (size_t k = 0; plan->etcd_texts && k < n; k++)
                ctx->etcd_texts[k] = plan->etcd_texts[k];
        if (plan->member_plans)
                memcpy(ctx->member_plans, plan->member_plans, sizeof(MemberPlan) * v);
        if (plan->upgrade_plans)
                memcpy(ctx->upgrade_plans, plan->upgrade_plans, sizeof(UpgradePlan) * v);
        if (plan->held_images)
                memcpy(ctx->held_images, plan->held_images, sizeof(const char *) * v);
        return 0;
}

int pass_observe_and_plan(Pass *p, PassObservation *o, PassPlan *plan) {
        _cleanup_(pass_context_done) PassContext ctx = { .pass = p };
        int r = pass_observe_with(&ctx, o);
        if (r < 0)
                return log_error_errno(r, "Failed to observe: %m");
        if (o->volumes_error < 0) { /* logged: nothing to plan from */
                r = o->volumes_error;
                pass_observation_done(o);
                return r;
        }
        r = pass_plan_steps(p, o, plan);
        if (r < 0) {
                pass_observation_done(o);
                return log_oom();
        }
        return 0;
}

int pass_print_plan(Pass *p, FILE *out) {
        PassObservation o = {};
        PassPlan plan = {};
        int r = pass_observe_and_plan(p, &o, &plan);
        if (r < 0)
                return r;
        r = pass_print_steps(p, &o, &plan, out);
        pass_plan_done(&plan);
        pass_observation_done(&o);
        return r;
}

/* Every stage in the join's order; the first that is not done is the verdict (0: every one done). */
static int print_join_stages(const PassJoinStatus stages[static _PASS_JOIN_STAGE_MAX], FILE *out) {
        int verdict = 0;
        PassJoinStage blocked = _PASS_JOIN_STAGE_MAX;
        for (PassJoinStage i = 0; i < _PASS_JOIN_STAGE_MAX; i++) {
                const PassJoinStatus *s = &stages[i];
                const char *name = pass_join_stage_to_string(i);
                if (!s->known) {
                        fprintf(out, "%s: not reached\n", name);
                        continue;
                }
                fprintf(out, "%s: %s: %s\n", name,
                        s->status == 0             ? "ok"
                        : s->status == PK_EWAITING ? "waiting"
                                                   : "refused",
                        strna(s->note));
                if (verdict == 0 && s->status != 0) {
                        verdict = s->status;
                        blocked = i;
                }
        }
        if (verdict == 0 && !(stages[PASS_JOIN_NODE].known && stages[PASS_JOIN_NODE].status == 0)) {
                verdict = PK_EWAITING;
                blocked = PASS_JOIN_NODE;
        }
        if (verdict == 0) {
                fprintf(out, "join: done\n");
                return 0;
        }
        fprintf(out, "join: blocked at %s\n", pass_join_stage_to_string(blocked));
        if (verdict != PK_EWAITING)
                log_error_errno(verdict, "join: %s: %s", pass_join_stage_to_string(blocked),
                                strna(stages[blocked].note));
        return verdict;
}

int pass_print_join(Pass *p, FILE *out) {
        PassObservation o = {};
        PassPlan plan = {};
        PassJoinStatus stages[_PASS_JOIN_STAGE_MAX] = {};
        bool any = false;
        int r = pass_observe_and_plan(p, &o, &plan);
        if (r < 0)
                return r;
        for (const PassRow *row = role_of(p)->rows; r >= 0 && row->step; row++)
                if (row->phase == PASS_PHASE_JOIN && row->step->join) {
                        any = true;
                        r = row->step->join(p, &o, &plan, stages);
                }
        if (r >= 0 && !any)
                r = log_error_errno(
                    -EOPNOTSUPP, "join plan: a %s does not join a cluster (its table keeps no join stage)",
                    node_role_to_string(p->node.role));
        if (r >= 0)
                r = print_join_stages(stages, out);
        pass_join_statuses_done(stages);
        pass_plan_done(&plan);
        pass_observation_done(&o);
        return r;
}
