/* SPDX-License-Identifier: Apache-2.0 */
/* protokube run: reconcile until SIGTERM/SIGINT; SIGHUP reloads the spec (an invalid one is refused and the
 * previous one kept). */
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/strv.h"
#include "cli/cli.h"
#include "daemon/loop.h"
#include "daemon/pass.h"

static void run_pass(void *userdata, PassReport *rep) {
        pass_run(userdata, rep);
}

static int run_reload(void *userdata) {
        return pass_reload(userdata);
}

int verb_run(CliContext *ctx, char **args) {
        _cleanup_(pass_freep) Pass *pass = NULL;
        _cleanup_strv_free_ char **watch = NULL;
        int r;

        if (pass_new(ctx->spec_path, &ctx->node, &pass) < 0)
                return EXIT_ERROR;

        /* What wakes a pass before the timer: what the provider names (its pool's metadata changing, an
         * attached volume's device link appearing), and devices appearing in /dev. */
        if (pass_watch_paths(pass, &watch) < 0)
                return log_oom(), EXIT_ERROR;

        DaemonConfig cfg = {
                .interval = ctx->interval,
                .listen = ctx->listen,
                .watch = watch,
        };
        DaemonCallbacks cb = { .pass = run_pass, .reload = run_reload };
        log_info("protokube starting: node '%s', cluster '%s', pass every %.1f s.",
                 ctx->node.node_name ?: "(from the provider)", pass_spec(pass)->name,
                 (double)ctx->interval / USEC_PER_SEC);
        r = daemon_run(&cfg, &cb, pass);
        return r < 0 ? EXIT_ERROR : EXIT_SUCCESS;
}
