/* SPDX-License-Identifier: Apache-2.0 */
/* protokube once: one pass. Exit 0 converged, 1 error, 2 usage, 3 not converged yet (waiting). */
#include <stdio.h>

#include "basic/errors.h"
#include "basic/log.h"
#include "cli/cli.h"
#include "daemon/pass.h"

int verb_once(CliContext *ctx, char **args) {
        _cleanup_(pass_freep) Pass *pass = NULL;
        PassReport rep = {};
        int r;

        if (pass_new(ctx->spec_path, &ctx->node, &pass) < 0)
                return EXIT_ERROR;
        usec_t start = now(CLOCK_MONOTONIC);
        pass_run(pass, &rep);
        double ms = (double)(now(CLOCK_MONOTONIC) - start) / USEC_PER_MSEC;
        r = rep.status;
        if (r == 0)
                log_info("Converged in %.1f ms: %u volume(s) held, %u record(s) published, %u change(s).",
                         ms, rep.volumes_held, rep.records_published, rep.actions_applied);
        else if (r == PK_EWAITING)
                log_info("Not converged yet after %.1f ms: %s.", ms, strna(rep.reason));
        else
                log_error("Pass failed after %.1f ms: %s.", ms, strna(rep.reason));
        pass_report_done(&rep);
        return r == 0 ? EXIT_CONVERGED : r == PK_EWAITING ? EXIT_NOT_CONVERGED : EXIT_ERROR;
}
