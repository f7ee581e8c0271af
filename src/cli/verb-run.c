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

NodeSettings cli_node_settings(const CliContext *ctx) {
        return (NodeSettings){
                .node_name = ctx->node_name,
                .zone = ctx->zone,
                .internal_ip = ctx->internal_ip,
                .external_ip = ctx->external_ip,
                .machine_id_file = ctx->machine_id_file,
                .manifest_dir = ctx->manifest_dir,
                .mount_root = ctx->mount_root,
                .pool_dir = ctx->pool_dir,
        };
}

VERB(run) {
        _cleanup_(pass_freep) Pass *pass = NULL;
        _cleanup_strv_free_ char **watch = NULL;
        int r;

        r = cli_parse_options(argc, argv, ctx, NULL, NULL, NULL, NULL);
        if (r < 0)
                return EXIT_USAGE;
        if (r < argc)
                return cli_usage_error("run", "unexpected argument '%s'", argv[r]);
        if (!ctx->spec_path)
                return cli_usage_error("run", "needs the cluster spec (-c FILE or PROTOKUBE_CONFIG)");

        NodeSettings node = cli_node_settings(ctx);
        if (pass_new(ctx->spec_path, &node, &pass) < 0)
                return EXIT_ERROR;

        /* What wakes a pass before the timer: what the provider names (its pool's metadata changing, an
         * attached volume's device link appearing), and devices appearing in /dev. */
        if (volume_provider_watch_paths(pass->provider, &watch) < 0 || strv_extend(&watch, "/dev") < 0)
                return log_oom(), EXIT_ERROR;

        DaemonConfig cfg = {
                .interval = ctx->interval,
                .listen = ctx->listen,
                .watch = watch,
        };
        DaemonCallbacks cb = { .pass = run_pass, .reload = run_reload };
        log_info("protokube starting: node '%s', cluster '%s', pass every %.1f s.",
                 ctx->node_name ?: "(from the provider)", pass->spec->name,
                 (double)ctx->interval / USEC_PER_SEC);
        r = daemon_run(&cfg, &cb, pass);
        return r < 0 ? EXIT_ERROR : EXIT_SUCCESS;
}
