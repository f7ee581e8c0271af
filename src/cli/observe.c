/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>

#include "basic/errors.h"
#include "basic/log.h"
#include "basic/strv.h"
#include "cli/cli.h"
#include "cloud/volume.h"
#include "daemon/pass.h"
#include "spec/spec.h"
#include "volumes/volumes.h"

int cli_load_spec(const CliContext *ctx, ClusterSpec **ret) {
        _cleanup_strv_free_ char **errors = NULL;
        int r = cluster_spec_load(ctx->spec_path, ret, &errors);
        if (r == PK_ESPEC) {
                STRV_FOREACH (e, errors)
                        fprintf(stderr, "%s\n", *e);
                return r;
        }
        if (r < 0)
                return log_error_errno(r, "Failed to load spec '%s': %m", ctx->spec_path);
        return 0;
}

int cli_observe_view(CliContext *ctx, const ClusterSpec *spec, ClusterView **ret) {
        _cleanup_(volume_provider_freep) VolumeProvider *p = NULL;
        int r = pass_open_volume_provider(spec, &ctx->node, &p);
        if (r < 0)
                return r;
        _cleanup_free_ char *detail = NULL;
        r = volumes_list_view(p, spec->name, ret, &detail);
        if (r < 0) {
                if (detail)
                        return log_error_errno(r, "Failed to list the volumes of cluster '%s': %s",
                                               spec->name, detail);
                return log_error_errno(r, "Failed to list the volumes of cluster '%s': %m", spec->name);
        }
        return 0;
}
