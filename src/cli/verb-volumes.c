/* SPDX-License-Identifier: Apache-2.0 */
/* protokube volumes: this cluster's volumes as this node sees them, and why each is or isn't eligible. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/string-util.h"
#include "cli/cli.h"
#include "cloud/volume-tags.h"
#include "daemon/pass.h"
#include "volumes/volumes.h"

static const char *mount_column(const VolumesObservation *o, size_t i) {
        switch (o->observed[i].mount) {
        case MOUNT_STATE_OURS:
                return "mounted";
        case MOUNT_STATE_OTHER:
                return "OTHER-DEVICE";
        default:
                return "-";
        }
}

static void print_row(const char *mount_root, const VolumesObservation *o, const VolumesPlan *plan,
                      size_t i) {
        const Volume *vol = &o->volumes.items[i];
        const VolumeEligibility *e = &plan->eligibility[i];
        _cleanup_free_ char *mount = volume_mount_path(mount_root, vol->id);
        bool mine = !vol->damaged && node_identity_holds(&o->node, &vol->attachment);

        printf("%-24s %-10s %-8s %-6s %-16s %-12s %-8s %s%s%s\n", vol->id, strna(vol->zone),
               e->etcd.cluster ?: "-", e->etcd.member ?: "-", vol->attachment.node ?: "-",
               vol->attachment.device ?: "-", mine ? mount_column(o, i) : "-", e->eligible ? "yes" : "no",
               e->eligible ? "" : ": ", e->eligible ? "" : strempty(e->reason));
        if (mine && o->observed[i].mount == MOUNT_STATE_OURS)
                printf("%-24s mount %s\n", "", strna(mount));
}

static void show(const char *mount_root, const VolumesObservation *o, const VolumesPlan *plan) {
        printf("node %s, zone %s\n", o->node.name, o->node.zone);
        printf("%-24s %-10s %-8s %-6s %-16s %-12s %-8s %s\n", "ID", "ZONE", "ETCD", "MEMBER", "ATTACHED-TO",
               "DEVICE", "MOUNT", "ELIGIBLE");
        for (size_t i = 0; i < o->volumes.n; i++)
                print_row(mount_root, o, plan, i);
}

int verb_volumes(CliContext *ctx, char **args) {
        _cleanup_(pass_freep) Pass *pass = NULL;
        if (pass_new(ctx->spec_path, &ctx->node, &pass) < 0 || pass_show_volumes(pass, show) < 0)
                return EXIT_ERROR;
        return EXIT_SUCCESS;
}
