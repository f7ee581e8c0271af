/* SPDX-License-Identifier: Apache-2.0 */
/* The volumes (docs/volumes.md): the provider's volumes and this node's identity, observed once; the pure
 * plan of selection, claims, attachments, checks, formats and mounts (volumes/); its apply in phases: every
 * claim first (the volumes step), then each wave's devices (the devices step), the etcd manifests
 * (step-etcd-manifests.c), and the round's account (the volumes-done step). */
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "basic/trace.h"
#include "daemon/pass-types.h"
#include "daemon/progress.h"
#include "daemon/step-volumes.h"

static int volumes_observe_step(PassContext *ctx) {
        Pass *p = ctx->pass;
        PassObservation *o = ctx->obs;
        _cleanup_free_ char *detail = NULL;
        int r = volumes_observe(p->provider, &p->cfg, &o->volumes, &detail);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                if (detail)
                        log_error_errno(r, "Failed to observe the volumes of cluster '%s': %s",
                                        p->spec->name, detail);
                else
                        log_error_errno(r, "Failed to observe the volumes of cluster '%s': %m",
                                        p->spec->name);
                o->volumes_error = r;
                o->volumes_message = TAKE_PTR(detail);
                return 0;
        }
        STRV_FOREACH (w, o->volumes.volumes.warnings)
                log_warning("Unreadable volume: %s", *w);
        volumes_input(&p->cfg, &o->volumes, &o->in);
        return 0;
}

/* The etcd manifest of each held, mounted volume against what it should be: the planner then plans a write
 * only where they differ. */
static int manifest_currency(const Pass *pass, const PassObservation *ob, const PassPlan *plan,
                             const VolumesInput *in, VolumeObserved *observed) {
        for (size_t i = 0; i < in->n_volumes; i++) {
                VolumeObserved *o = &observed[i];
                VolumeEligibility e = {};
                _cleanup_free_ char *text = NULL;
                if (o->mount == MOUNT_STATE_OURS && ob->etcd_members && ob->etcd_members[i].restoring) {
                        /* a restore under way owns the manifest and its link (step-restore.c) */
                        o->manifest_current = o->link_current = true;
                        continue;
                }
                if (o->mount != MOUNT_STATE_OURS || !o->manifest_text)
                        continue;
                int r = volume_classify(&in->volumes[i], in->cluster, NULL, in->etcd_clusters, &e);
                if (r >= 0 && e.eligible)
                        r = pass_render_member(pass, &e, in->volumes[i].id,
                                               pass_member_existing(ob, plan, i), pass_held_image(plan, i),
                                               &text);
                volume_eligibility_done(&e);
                if (r == -ENOMEM)
                        return r;
                o->manifest_current = r >= 0 && text && streq(text, o->manifest_text);
        }
        return 0;
}

/* The member held in each etcd cluster after the plan's claims: a selection with a volume. */
static int held_members(const Pass *pass, PassPlan *plan) {
        size_t n = strv_length(pass->etcd_clusters);
        plan->held_members = new0(const char *, n + 1);
        if (!plan->held_members)
                return -ENOMEM;
        for (size_t k = 0; k < plan->volumes.n_selections; k++) {
                const PlanSelection *sel = &plan->volumes.selections[k];
                if (sel->volume == SIZE_MAX || !plan->volumes.eligibility[sel->volume].eligible)
                        continue;
                for (size_t c = 0; c < n; c++)
                        if (streq(pass->etcd_clusters[c], sel->etcd_cluster))
                                plan->held_members[c] = plan->volumes.eligibility[sel->volume].etcd.member;
        }
        return 0;
}

/* The selection and steps, the members held after them, and the cluster view with the plan's claims folded
 * in (DNS and the pivot read it). The members' decisions come first (the members step's plan): whether a
 * manifest is current depends on them. */
static int volumes_plan_step(const Pass *pass, const PassObservation *o, PassPlan *plan) {
        if (o->volumes_error < 0)
                return 0;
        int r = manifest_currency(pass, o, plan, &plan->in, plan->observed);
        if (r >= 0)
                r = volumes_plan(&plan->in, &plan->volumes);
        if (r >= 0)
                r = held_members(pass, plan);
        if (r >= 0)
                r = volumes_view(&plan->in, &plan->volumes, &plan->view);
        return r;
}

/* The etcd clusters of the rest wave's selections, as a mask over p->etcd_clusters: whose members'
 * certificates come after the first wave (NULL: out of memory). */
static bool *rest_etcd_clusters(const Pass *p, const PassPlan *plan, const bool *rest) {
        bool *mask = new0(bool, strv_length(p->etcd_clusters) + 1);
        for (size_t k = 0; mask && k < plan->volumes.n_selections; k++)
                for (size_t c = 0; rest[k] && p->etcd_clusters[c]; c++)
                        if (streq(p->etcd_clusters[c], plan->volumes.selections[k].etcd_cluster))
                                mask[c] = true;
        return mask;
}

/* The selections a pass brings up first, when it has device work for the first one (the main etcd
 * cluster's: the API needs it) and for another: that member's manifest is then written before the others'
 * devices are waited for, checked and mounted (on EC2 an attachment each, seconds). NULL: one wave, every
 * selection (also when the mask cannot be allocated: the order is a matter of time only). *ret_rest: the
 * complement. */
static bool *first_wave(const PassPlan *plan, const VolumesApply *va, bool **ret_rest) {
        size_t n = plan->volumes.n_selections;
        bool others = false;
        *ret_rest = NULL;
        for (size_t k = 1; k < n && !others; k++)
                others = volumes_apply_has(va, VOLUMES_PHASE_DEVICES, k);
        if (!others || !volumes_apply_has(va, VOLUMES_PHASE_DEVICES, 0))
                return NULL;
        _cleanup_free_ bool *first = new0(bool, n), *rest = new0(bool, n);
        if (!first || !rest)
                return NULL;
        first[0] = true;
        for (size_t k = 1; k < n; k++)
                rest[k] = true;
        *ret_rest = TAKE_PTR(rest);
        return TAKE_PTR(first);
}

/* Every claim (a lost one makes the pass observe and plan again, unless this is the last round); then the
 * waves of the selections: main's first when the pass has device work for it and for another. */
static int volumes_apply_claims(PassContext *ctx, PassWave wave) {
        Pass *p = ctx->pass;
        const PassPlan *plan = ctx->plan;
        if (ctx->obs->volumes_error < 0)
                return 0; /* nothing to do with volumes: the rest still is kept */
        int r = volumes_apply_new(p->provider, &p->cfg, &plan->in, &plan->volumes, &ctx->volumes_apply);
        if (r < 0)
                return r;
        pass_progress_step("volumes");
        r = volumes_apply_run(ctx->volumes_apply, VOLUMES_PHASE_CLAIMS, NULL, NULL);
        if (r > 0 && !ctx->last_round)
                return 1;
        ctx->volumes_interrupted = r > 0;
        if (r < 0)
                return r;
        ctx->first = first_wave(plan, ctx->volumes_apply, &ctx->rest);
        if (ctx->first && !(ctx->rest_etcd = rest_etcd_clusters(p, plan, ctx->rest)))
                return -ENOMEM;
        return 0;
}

static const char *selection_state_string(SelectionState s) {
        static const char *const names[_SELECTION_STATE_MAX] = {
                [SELECTION_READY] = "ready",
                [SELECTION_ACTIONS] = "changes",
                [SELECTION_WAITING] = "waiting",
                [SELECTION_ERROR] = "error",
        };
        return s >= 0 && s < _SELECTION_STATE_MAX ? names[s] : "?";
}

static int volumes_print(const Pass *pass, const PassObservation *o, const PassPlan *plan, FILE *out) {
        const VolumesPlan *vp = &plan->volumes;
        fprintf(out, "node %s, zone %s\n", o->volumes.node.name, o->volumes.node.zone);
        for (size_t k = 0; k < vp->n_selections; k++) {
                const PlanSelection *s = &vp->selections[k];
                fprintf(out, "etcd %s: %s", s->etcd_cluster, selection_state_string(s->state));
                if (s->volume != SIZE_MAX)
                        fprintf(out, ", volume %s member %s", plan->in.volumes[s->volume].id,
                                vp->eligibility[s->volume].etcd.member);
                if (s->note)
                        fprintf(out, " (%s)", s->note);
                fprintf(out, "\n");
        }
        for (size_t k = 0; k < vp->n_actions; k++) {
                const PlanAction *a = &vp->actions[k];
                const Volume *vol = &plan->in.volumes[a->volume];
                const char *cluster = vp->eligibility[a->volume].etcd.cluster;
                _cleanup_free_ char *mount = volume_mount_path(pass->node.mount_root, vol->id),
                                    *target = NULL;
                if (a->type == ACTION_MOUNT)
                        target = strdup(strna(mount));
                else if (a->type == ACTION_WRITE_MANIFEST)
                        target = volume_manifest_path(strna(mount), cluster);
                else if (a->type == ACTION_LINK_MANIFEST)
                        target = volume_manifest_link(pass->node.manifest_dir, cluster);
                fprintf(out, "%zu. %s %s%s%s\n", k + 1, action_type_to_string(a->type), vol->id,
                        target ? " " : "", strempty(target));
        }
        if (vp->n_actions == 0)
                fprintf(out, "volumes: nothing to do\n");
        return 0;
}

const PassStep pass_step_volumes = {
        .name = "volumes",
        .stage = PASS_STAGE_CLAIM,
        .roles = 1U << NODE_ROLE_MASTER,
        .observe = volumes_observe_step,
        .plan = volumes_plan_step,
        .apply = volumes_apply_claims,
        .print = volumes_print,
};

/* The devices of a wave's selections: attach, wait, fsck, format (only a blank disk), mount. */
static int volumes_apply_devices(PassContext *ctx, PassWave wave) {
        if (!ctx->volumes_apply || (wave == PASS_WAVE_REST && !ctx->rest))
                return 0;
        if (wave == PASS_WAVE_REST)
                pass_progress_step("volumes");
        return volumes_apply_run(ctx->volumes_apply, VOLUMES_PHASE_DEVICES,
                                 wave == PASS_WAVE_REST ? ctx->rest : ctx->first, NULL);
}

const PassStep pass_step_volume_devices = {
        .name = "volume devices",
        .stage = PASS_STAGE_DEVICE,
        .roles = 1U << NODE_ROLE_MASTER,
        .apply = volumes_apply_devices,
};

/* Where a failed volume action counts in the report. */
static PassStage volumes_error_stage(VolumesErrorKind k) {
        static const PassStage stages[_VOLUMES_ERROR_MAX] = {
                [VOLUMES_ERROR_CLAIM] = PASS_STAGE_CLAIM, [VOLUMES_ERROR_DEVICE] = PASS_STAGE_DEVICE,
                [VOLUMES_ERROR_FSCK] = PASS_STAGE_FSCK,   [VOLUMES_ERROR_FORMAT] = PASS_STAGE_FORMAT,
                [VOLUMES_ERROR_MOUNT] = PASS_STAGE_MOUNT, [VOLUMES_ERROR_MANIFEST] = PASS_STAGE_MANIFEST,
        };
        return stages[k];
}

static void report_volumes(PassReport *rep, const VolumesPassResult *res) {
        rep->actions_applied += res->n_changes;
        rep->volumes_held = res->n_ready;
        rep->volumes_member_conflicts = res->n_member_conflicts;
        unsigned by_action = 0;
        for (int k = 0; k < _VOLUMES_ERROR_MAX; k++)
                for (unsigned n = 0; n < res->errors[k]; n++, by_action++)
                        pass_report_error(rep, volumes_error_stage(k), -EIO,
                                          "a volume is stuck on an error (see the log)");
        /* the rest are selections stuck before any action (another device on the mount point, a duplicate
         * held mounted): they count where a volume is chosen */
        for (unsigned n = by_action; n < res->n_errors; n++)
                pass_report_error(rep, PASS_STAGE_CLAIM, -EIO,
                                  "a volume is stuck on an error (see the log)");
        if (res->n_waiting > 0) {
                _cleanup_free_ char *why =
                    strprintf("%u etcd cluster(s) have no volume for this node yet", res->n_waiting);
                pass_report_error(rep, PASS_STAGE_CLAIM, PK_EWAITING, why);
        }
}

/* The round's account of the volumes: held, changed, stuck. */
static int volumes_apply_done(PassContext *ctx, PassWave wave) {
        VolumesPassResult res = {};
        if (!ctx->volumes_apply)
                return 0;
        volumes_apply_finish(ctx->volumes_apply, ctx->volumes_interrupted, &res);
        report_volumes(ctx->rep, &res);
        return 0;
}

const PassStep pass_step_volumes_done = {
        .name = "volumes (account)",
        .stage = PASS_STAGE_CLAIM,
        .roles = 1U << NODE_ROLE_MASTER,
        .apply = volumes_apply_done,
};

int pass_show_volumes(Pass *p, void (*show)(const char *mount_root, const VolumesObservation *o,
                                            const VolumesPlan *plan)) {
        PassObservation o = {};
        PassPlan plan = {};
        int r = pass_require_step(p, &pass_step_volumes, "volumes");
        if (r >= 0)
                r = pass_observe_and_plan(p, &o, &plan);
        if (r < 0)
                return r;
        show(p->node.mount_root, &o.volumes, &plan.volumes);
        pass_plan_done(&plan);
        pass_observation_done(&o);
        return 0;
}
