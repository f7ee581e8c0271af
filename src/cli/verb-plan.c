/* SPDX-License-Identifier: Apache-2.0 */
/* protokube plan: what a pass would do, in order; changes nothing. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "basic/errors.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "cli/cli.h"
#include "daemon/pass.h"

static const char *selection_state_string(SelectionState s) {
        switch (s) {
        case SELECTION_READY:
                return "ready";
        case SELECTION_ACTIONS:
                return "changes";
        case SELECTION_WAITING:
                return "waiting";
        case SELECTION_ERROR:
                return "error";
        default:
                return "?";
        }
}

static void print_plan(const VolumesPassConfig *cfg, const VolumesObservation *o, const PassPlan *plan) {
        printf("node %s, zone %s\n", o->node.name, o->node.zone);
        for (size_t k = 0; k < plan->n_selections; k++) {
                const PlanSelection *s = &plan->selections[k];
                printf("etcd %s: %s", s->etcd_cluster, selection_state_string(s->state));
                if (s->volume != SIZE_MAX)
                        printf(", volume %s member %s", o->volumes.items[s->volume].id,
                               plan->eligibility[s->volume].etcd.member);
                if (s->note)
                        printf(" (%s)", s->note);
                printf("\n");
        }
        for (size_t k = 0; k < plan->n_actions; k++) {
                const PlanAction *a = &plan->actions[k];
                const Volume *vol = &o->volumes.items[a->volume];
                const char *cluster = plan->eligibility[a->volume].etcd.cluster;
                _cleanup_free_ char *mount = volume_mount_path(cfg->mount_root, vol->id), *target = NULL;
                if (a->type == ACTION_MOUNT)
                        target = strdup(strna(mount));
                else if (a->type == ACTION_WRITE_MANIFEST)
                        target = volume_manifest_path(strna(mount), cluster);
                else if (a->type == ACTION_LINK_MANIFEST)
                        target = volume_manifest_link(cfg->manifest_dir, cluster);
                printf("%zu. %s %s%s%s\n", k + 1, action_type_to_string(a->type), vol->id, target ? " " : "",
                       strempty(target));
        }
        if (plan->n_actions == 0)
                printf("volumes: nothing to do\n");
}

int verb_plan(CliContext *ctx, char **args) {
        _cleanup_(pass_freep) Pass *pass = NULL;
        VolumesObservation o = {};
        PassPlan plan = {};
        PassInput in;
        int r;

        if (pass_new(ctx->spec_path, &ctx->node, &pass) < 0)
                return EXIT_ERROR;
        if (pass_observe(pass, &o, &in, &plan) < 0)
                return EXIT_ERROR;
        VolumesPassConfig cfg = pass_volumes_config(pass);
        print_plan(&cfg, &o, &plan);
        pass_plan_done(&plan);
        volumes_observation_done(&o);
        fflush(stdout);
        r = pass_print_plan_rest(pass, stdout);
        return r < 0 && r != PK_EWAITING ? EXIT_ERROR : EXIT_SUCCESS;
}
