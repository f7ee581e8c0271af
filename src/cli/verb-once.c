/* SPDX-License-Identifier: Apache-2.0 */
/* protokube once [--no-wait]: one pass. Exit 0 converged, 1 error, 2 usage, 3 not converged yet (waiting,
 * or a DNS change still not served everywhere after 120 s). */
#include <stdio.h>

#include "basic/errors.h"
#include "basic/log.h"
#include "cli/cli.h"
#include "daemon/pass.h"

/* How long `once` waits, after its pass, for its DNS changes to reach every name server (Route 53:
 * INSYNC): what the old in-pass wait allowed. */
#define ONCE_DNS_WAIT (120 * USEC_PER_SEC)

static bool arg_no_wait = false;

static int parse_no_wait(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        arg_no_wait = true;
        return 0;
}

const CliOption verb_once_options[] = {
        { .name = "no-wait",
          .help = "exit after the pass, without waiting (up to 120 s) until the DNS provider's name servers "
                  "all serve its changes (Route 53: INSYNC)",
          .parse = parse_no_wait },
        {},
};

int verb_once(CliContext *ctx, char **args) {
        _cleanup_(pass_freep) Pass *pass = NULL;
        PassReport rep = {};
        const char *oldest = NULL;
        int r;

        if (pass_new(ctx->spec_path, &ctx->node, &pass) < 0)
                return EXIT_ERROR;
        usec_t start = now(CLOCK_MONOTONIC);
        pass_run(pass, &rep);
        /* The pass did not wait for propagation (the manifests are already written); a one-shot command
         * does, unless told not to, so that exit 0 still means the names resolve everywhere. A failed pass
         * exits 1 anyway: no reason to make its user wait. */
        bool failed = rep.status < 0 && rep.status != PK_EWAITING;
        if (!arg_no_wait && !failed) {
                int w = pass_dns_wait(pass, ONCE_DNS_WAIT);
                if (w < 0 && rep.status == 0)
                        pass_report_error(&rep, PASS_STAGE_DNS, w == PK_ETIMEOUT ? PK_EWAITING : w,
                                          "DNS changes not yet served by every name server");
        } else if (pass_dns_pending(pass, &oldest) > 0)
                log_info("DNS: %zu change(s) still propagating (%s), e.g. '%s'.",
                         pass_dns_pending(pass, NULL),
                         arg_no_wait ? "--no-wait" : "not waited for after a failed pass", oldest);
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
