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

/* Column widths: at least the header's, else the longest value (a GCE disk name is up to 63 characters). */
typedef struct Widths {
        int id, zone;
} Widths;

static void print_row(const char *mount_root, const VolumesObservation *o, const VolumesPlan *plan, size_t i,
                      Widths w) {
        const Volume *vol = &o->volumes.items[i];
        const VolumeEligibility *e = &plan->eligibility[i];
        _cleanup_free_ char *mount = volume_mount_path(mount_root, vol->id);
        bool mine = !vol->damaged && node_identity_holds(&o->node, &vol->attachment);

        printf("%-*s %-*s %-8s %-6s %-16s %-12s %-8s %s%s%s\n", w.id, vol->id, w.zone, strna(vol->zone),
               e->etcd.cluster ?: "-", e->etcd.member ?: "-", vol->attachment.node ?: "-",
               vol->attachment.device ?: "-", mine ? mount_column(o, i) : "-", e->eligible ? "yes" : "no",
               e->eligible ? "" : ": ", e->eligible ? "" : strempty(e->reason));
        if (mine && o->observed[i].mount == MOUNT_STATE_OURS)
                printf("%-*s mount %s\n", w.id, "", strna(mount));
}

static void show(const char *mount_root, const VolumesObservation *o, const VolumesPlan *plan) {
        Widths w = { 24, 10 };
        for (size_t i = 0; i < o->volumes.n; i++) {
                w.id = MAX(w.id, (int)MIN(strlen(o->volumes.items[i].id), (size_t)128));
                w.zone = MAX(w.zone, (int)MIN(strlen(strna(o->volumes.items[i].zone)), (size_t)64));
        }
        printf("node %s, zone %s\n", o->node.name, o->node.zone);
        printf("%-*s %-*s %-8s %-6s %-16s %-12s %-8s %s\n", w.id, "ID", w.zone, "ZONE", "ETCD", "MEMBER",
               "ATTACHED-TO", "DEVICE", "MOUNT", "ELIGIBLE");
        for (size_t i = 0; i < o->volumes.n; i++)
                print_row(mount_root, o, plan, i, w);
}

int verb_volumes(CliContext *ctx, char **args) {
        _cleanup_(pass_freep) Pass *pass = NULL;
        if (pass_new(ctx->spec_path, &ctx->node, &pass) < 0 || pass_show_volumes(pass, show) < 0)
                return EXIT_ERROR;
        return EXIT_SUCCESS;
}
