/* SPDX-License-Identifier: Apache-2.0 */
#include "cli/cli.h"
#include "cli/verb-volumes.h"

int cli_observe_view(CliContext *ctx, const ClusterSpec *spec, ClusterView **ret) {
        return volumes_cli_observe_view(ctx, spec, ret);
}
