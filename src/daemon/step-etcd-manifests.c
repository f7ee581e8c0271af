/* SPDX-License-Identifier: Apache-2.0 */
/* The etcd manifest of each member this node holds (docs/volumes.md): rendered in the plan once its
 * certificates are in place, written on its volume and linked from kubelet's directory in each wave, as
 * the steps between the plan and the write left it (PassContext.etcd_texts: held back during a restore or
 * a member's replacement, rendered anew with state existing). */
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "daemon/pass-types.h"
#include "daemon/progress.h"
#include "daemon/step-etcd-manifests.h"

/* Whether the certificates of the etcd cluster's member are in place once the plan is applied (always, when
 * protokube manages none). */
static bool etcd_certs_ready(const Pass *pass, const PassPlan *plan, const char *cluster) {
        for (size_t c = 0; plan->certs.etcd_ready && pass->etcd_clusters[c]; c++)
                if (streq(pass->etcd_clusters[c], cluster))
                        return plan->certs.etcd_ready[c];
        return !plan->certs.managed;
}

/* The etcd manifest of each selected member, for the write actions. */
static int etcd_manifests_plan(const Pass *pass, const PassObservation *o, PassPlan *plan) {
        if (o->volumes_error < 0)
                return 0;
        plan->etcd_texts = new0(char *, plan->volumes.n_selections + 1);
        if (!plan->etcd_texts)
                return -ENOMEM;
        for (size_t k = 0; k < plan->volumes.n_selections; k++) {
                size_t i = plan->volumes.selections[k].volume;
                if (i == SIZE_MAX || !plan->volumes.eligibility[i].eligible)
                        continue;
                if (!etcd_certs_ready(pass, plan, plan->volumes.selections[k].etcd_cluster)) {
                        if (!plan->etcd_render_error &&
                            !(plan->etcd_render_error = strprintf(
                                  "etcd %s: waiting for its certificates: %s",
                                  plan->volumes.selections[k].etcd_cluster, strna(plan->certs.note))))
                                return -ENOMEM;
                        continue;
                }
                int r = pass_render_member(pass, &plan->volumes.eligibility[i], plan->in.volumes[i].id,
                                           pass_member_existing(o, plan, i), pass_held_image(plan, i),
                                           &plan->etcd_texts[k]);
                if (r == -ENOMEM)
                        return r;
                if (r < 0 && !plan->etcd_render_error)
                        plan->etcd_render_error = strprintf(
                            "etcd %s: %s", plan->volumes.selections[k].etcd_cluster, pk_strerror(r));
        }
        return 0;
}

static int etcd_manifests_apply(PassContext *ctx, PassWave wave) {
        if (!ctx->volumes_apply || (wave == PASS_WAVE_REST && !ctx->rest))
                return 0;
        if (wave != PASS_WAVE_REST && ctx->plan->etcd_render_error)
                log_error("Failed to render the etcd manifest: %s", ctx->plan->etcd_render_error);
        pass_progress_step("etcd manifests");
        int r = volumes_apply_run(ctx->volumes_apply, VOLUMES_PHASE_MANIFESTS,
                                  wave == PASS_WAVE_REST ? ctx->rest : ctx->first, ctx->etcd_texts);
        ctx->volumes_interrupted = ctx->volumes_interrupted || r > 0;
        return r < 0 ? r : 0;
}

const PassStep pass_step_etcd_manifests = {
        .name = "etcd manifests",
        .stage = PASS_STAGE_MANIFEST,
        .roles = 1U << NODE_ROLE_MASTER,
        .plan = etcd_manifests_plan,
        .apply = etcd_manifests_apply,
};
