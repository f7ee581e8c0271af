/* SPDX-License-Identifier: Apache-2.0 */
/* Scaffold: the lead wires this to the volume provider once src/volumes/ exists. */
#include "basic/log.h"
#include "cli/cli.h"

int cli_observe_view(CliContext *ctx, const ClusterSpec *spec, ClusterView **ret) {
        (void)ctx;
        (void)spec;
        (void)ret;
        return log_error_errno(-EOPNOTSUPP,
                               "Observing the cluster needs the volume provider (not wired yet).");
}
