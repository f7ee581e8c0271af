/* SPDX-License-Identifier: Apache-2.0 */
/* protokube volumes: this cluster's volumes as this node sees them, and why each is or isn't eligible. */
#include "cli/verb-volumes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "components/etcd.h"
#include "volumes/volume-tags.h"

static int render_etcd(void *userdata, const char *etcd_cluster, const char *member, char *const *members,
                       const char *mount_path, char **ret_yaml) {
        const ClusterSpec *spec = userdata;
        EtcdMemberAssignment a = {
                .cluster = etcd_cluster,
                .member = member,
                .members = members,
                .mount_path = mount_path,
        };
        return etcd_manifest_render(spec, &a, ret_yaml);
}

static void report_log(void *userdata, int level, int error, const char *message) {
        (void)userdata;
        log_full_errno((LogLevel)level, error, "%s", message);
}

void volumes_cli_done(VolumesCli *v) {
        volume_provider_free(v->provider);
        strv_free(v->etcd_clusters);
        cluster_spec_free(v->spec);
        *v = (VolumesCli){};
}

static int load_spec(CliContext *ctx, const char *verb, ClusterSpec **ret) {
        _cleanup_strv_free_ char **errors = NULL;
        if (!ctx->spec_path)
                return cli_usage_error(verb, "needs the cluster spec (-c FILE or PROTOKUBE_CONFIG)");
        int r = cluster_spec_load(ctx->spec_path, ret, &errors);
        if (r >= 0)
                return 0;
        STRV_FOREACH (e, errors)
                log_error("%s", *e);
        log_error_errno(r, "Failed to load the cluster spec '%s': %m", ctx->spec_path);
        return EXIT_ERROR;
}

static const char *provider_name(const ClusterSpec *spec) {
        return spec->cloud.set ? cloud_provider_to_string(spec->cloud.value) : "local";
}

static int open_provider(CliContext *ctx, const ClusterSpec *spec, VolumeProvider **ret) {
        const char *cloud = provider_name(spec);
        VolumeProviderConfig pc = {
                .pool_dir = ctx->pool_dir,
                .node_name = ctx->node_name,
                .zone = ctx->zone,
                .internal_ip = ctx->internal_ip,
                .external_ip = ctx->external_ip,
        };
        int r = volume_provider_open(strna(cloud), &pc, ret);
        if (r < 0)
                return log_error_errno(r, "Failed to open the '%s' volume provider (pool '%s'): %m",
                                       strna(cloud), ctx->pool_dir);
        return 0;
}

int volumes_cli_observe_view(CliContext *ctx, const ClusterSpec *spec, ClusterView **ret) {
        _cleanup_(volume_provider_freep) VolumeProvider *p = NULL;
        int r = open_provider(ctx, spec, &p);
        if (r < 0)
                return r;
        r = volumes_observe_view(p, spec->name, ret);
        if (r < 0)
                return log_error_errno(r, "Failed to list the volumes of cluster '%s': %m", spec->name);
        return 0;
}

int volumes_cli_open(CliContext *ctx, const char *verb, VolumesCli *ret) {
        VolumesCli v = {};
        int r;

        r = load_spec(ctx, verb, &v.spec);
        if (r != 0)
                return r;
        v.etcd_clusters = calloc(1, sizeof(char *));
        if (!v.etcd_clusters)
                goto oom;
        for (size_t i = 0; i < v.spec->etcd_clusters.n; i++)
                if (strv_extend(&v.etcd_clusters, cluster_spec_etcd(v.spec, i)->name) < 0)
                        goto oom;
        if (open_provider(ctx, v.spec, &v.provider) < 0) {
                volumes_cli_done(&v);
                return EXIT_ERROR;
        }
        v.cfg = (VolumesPassConfig){
                .cluster = v.spec->name,
                .etcd_clusters = v.etcd_clusters,
                .mount_root = ctx->mount_root,
                .manifest_dir = ctx->manifest_dir,
                .render = render_etcd,
                .render_userdata = v.spec,
                .report = report_log,
        };
        *ret = v;
        return 0;
oom:
        volumes_cli_done(&v);
        log_oom();
        return EXIT_ERROR;
}

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

static void print_row(const VolumesCli *v, const VolumesObservation *o, const PassPlan *plan, size_t i) {
        const Volume *vol = &o->volumes.items[i];
        const VolumeEligibility *e = &plan->eligibility[i];
        _cleanup_free_ char *mount = volume_mount_path(v->cfg.mount_root, vol->id);
        bool mine = vol->attachment.node && streq(vol->attachment.node, o->node.name);

        printf("%-24s %-10s %-8s %-6s %-16s %-12s %-8s %s%s%s\n", vol->id, vol->zone, e->etcd.cluster ?: "-",
               e->etcd.member ?: "-", vol->attachment.node ?: "-", vol->attachment.device ?: "-",
               mine ? mount_column(o, i) : "-", e->eligible ? "yes" : "no", e->eligible ? "" : ": ",
               e->eligible ? "" : strempty(e->reason));
        if (mine && o->observed[i].mount == MOUNT_STATE_OURS)
                printf("%-24s mount %s\n", "", strna(mount));
}

VERB(volumes) {
        VolumesCli v = {};
        VolumesObservation o = {};
        PassPlan plan = {};
        PassInput in;
        int r;

        r = cli_parse_options(argc, argv, ctx, NULL, NULL, NULL, NULL);
        if (r < 0)
                return EXIT_USAGE;
        if (r < argc)
                return cli_usage_error("volumes", "unexpected argument '%s'", argv[r]);
        r = volumes_cli_open(ctx, "volumes", &v);
        if (r != 0)
                return r;
        r = volumes_observe(v.provider, &v.cfg, &o);
        if (r >= 0) {
                volumes_pass_input(&v.cfg, &o, &in);
                r = pass_plan(&in, &plan);
        }
        if (r < 0) {
                log_error_errno(r, "Failed to list the volumes of cluster '%s': %m", v.cfg.cluster);
                volumes_observation_done(&o);
                volumes_cli_done(&v);
                return EXIT_ERROR;
        }
        STRV_FOREACH (w, o.volumes.warnings)
                log_warning("Unreadable volume: %s", *w);
        printf("node %s, zone %s\n", o.node.name, o.node.zone);
        printf("%-24s %-10s %-8s %-6s %-16s %-12s %-8s %s\n", "ID", "ZONE", "ETCD", "MEMBER", "ATTACHED-TO",
               "DEVICE", "MOUNT", "ELIGIBLE");
        for (size_t i = 0; i < o.volumes.n; i++)
                print_row(&v, &o, &plan, i);
        pass_plan_done(&plan);
        volumes_observation_done(&o);
        volumes_cli_done(&v);
        return EXIT_SUCCESS;
}
