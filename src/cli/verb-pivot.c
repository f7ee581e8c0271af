/* SPDX-License-Identifier: Apache-2.0 */
/* protokube pivot [--once] [--timeout D]: the self-hosted pivot of this master (docs/pivot.md), step after
 * step until the control plane is self-hosted (exit 0), the pivot failed (1: the self-hosted pods missed
 * their deadline; the bootstrap pods stay) or the timeout (3); each step printed with why. `pivot plan`
 * prints the next step and changes nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/log.h"
#include "basic/parse-util.h"
#include "basic/stop.h"
#include "basic/string-util.h"
#include "cli/cli.h"
#include "daemon/node-lock.h"
#include "daemon/pass-pivot.h"
#include "daemon/pass.h"
#include "model/cluster-view.h"
#include "model/conventions.h"
#include "pivot/pivot.h"

#define PIVOT_TIMEOUT_DEFAULT (15 * 60 * USEC_PER_SEC)
#define PIVOT_WAIT_INTERVAL   (1 * USEC_PER_SEC)

static struct {
        bool once;
        usec_t timeout;
} arg_pivot = { .timeout = PIVOT_TIMEOUT_DEFAULT };

static int parse_pivot(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        if (streq(o->name, "once")) {
                arg_pivot.once = true;
                return 0;
        }
        uint64_t u;
        if (parse_duration_usec(value, &u) < 0 || u == 0)
                return cli_usage_error("pivot", "invalid %s '%s' (a duration: 30s, 10m)", source, value),
                       -EINVAL;
        arg_pivot.timeout = u;
        return 0;
}

const CliOption verb_pivot_options[] = {
        { .name = "once", .help = "take one step and exit (0 done, 3 not yet)", .parse = parse_pivot },
        { .name = "timeout",
          .arg_name = "DURATION",
          .help = "give up after DURATION (default 15m): exit 3",
          .parse = parse_pivot },
        {},
};

/* The masters the cluster has: the members of the main etcd cluster (their volume tags). */
static int masters_expected(CliContext *ctx, const ClusterSpec *spec, size_t *ret) {
        _cleanup_(cluster_view_freep) ClusterView *view = NULL;
        int r = cli_observe_view(ctx, spec, &view);
        if (r < 0)
                return r;
        size_t n = 0;
        for (size_t i = 0; i < view->n_members; i++)
                n += streq(view->members[i].cluster, ETCD_MAIN_CLUSTER);
        if (n == 0)
                return log_error_errno(-ENOENT, "No member of etcd cluster '%s' is known: no masters.",
                                       ETCD_MAIN_CLUSTER);
        *ret = n;
        return 0;
}

static int open_pivot(CliContext *ctx, Pass **ret_pass, PassPivot **ret) {
        size_t n = 0;
        if (!ctx->node.node_name || !ctx->node.internal_ip)
                return cli_usage_error(ctx->name, "needs --node-name and --internal-ip (this master's Node "
                                                  "and address)"),
                       -EINVAL;
        int r = pass_new(ctx->spec_path, &ctx->node, ret_pass);
        if (r < 0)
                return r;
        const ClusterSpec *spec = pass_spec(*ret_pass);
        if (spec->self_hosted.set && !spec->self_hosted.value)
                log_warning("The spec says selfHosted: false; pivoting as asked.");
        r = masters_expected(ctx, spec, &n);
        if (r < 0)
                return r;
        return pass_pivot_open(spec, &ctx->node, ctx->node.node_name, ctx->node.internal_ip, n, ret);
}

int verb_pivot_plan(CliContext *ctx, char **args) {
        _cleanup_(pass_freep) Pass *pass = NULL;
        _cleanup_(pass_pivot_freep) PassPivot *pp = NULL;
        PivotDecision d;
        if (open_pivot(ctx, &pass, &pp) < 0 || pass_pivot_step(pp, false, &d) < 0)
                return EXIT_ERROR;
        printf("%s: %s\n", pivot_step_name(d.step), d.why);
        pivot_decision_done(&d);
        return EXIT_SUCCESS;
}

static bool is_wait(PivotStep s) {
        return s == PIVOT_WAIT_API || s == PIVOT_WAIT_SELF_HOSTED || s == PIVOT_WAIT_TURN ||
               s == PIVOT_WAIT_LOCAL || s == PIVOT_WAIT_MIRRORS_GONE;
}

int verb_pivot(CliContext *ctx, char **args) {
        _cleanup_(pass_freep) Pass *pass = NULL;
        _cleanup_(pass_pivot_freep) PassPivot *pp = NULL;
        _cleanup_free_ char *last = NULL;
        usec_t start = now(CLOCK_MONOTONIC), end = start + arg_pivot.timeout;
        if (open_pivot(ctx, &pass, &pp) < 0)
                return EXIT_ERROR;
        /* Bounded: every round is one step or one wait of PIVOT_WAIT_INTERVAL, and the timeout ends it. */
        for (;;) {
                PivotDecision d;
                _cleanup_close_ int lock = -1;
                _cleanup_free_ char *lock_error = NULL;
                int r = node_lock_take(ctx->node.state_dir, NODE_LOCK_WAIT, &lock, &lock_error);
                if (r < 0) /* a pass of the daemon writes the node's state: this step waits for it */
                        return log_error_errno(r, "%s", lock_error ?: pk_strerror(r)), EXIT_ERROR;
                r = pass_pivot_step(pp, true, &d);
                lock = safe_close(lock); /* not held across the wait below */
                if (r < 0) {
                        if (arg_pivot.once || now(CLOCK_MONOTONIC) >= end)
                                return EXIT_ERROR;
                        /* a failed step (the API restarting under us) is tried again from a new observation
                         */
                        if (sleep_usec(PIVOT_WAIT_INTERVAL) < 0)
                                return EXIT_ERROR;
                        continue;
                }
                PivotStep step = d.step;
                double t = (double)(now(CLOCK_MONOTONIC) - start) / USEC_PER_SEC;
                /* every step, and a wait when what it waits for changes */
                if (!is_wait(step) || !last || !streq(last, d.why)) {
                        printf("[%6.1f s] %s: %s\n", t, pivot_step_name(step), d.why);
                        fflush(stdout);
                        free(last);
                        last = strdup(d.why);
                }
                if (step == PIVOT_FAILED) {
                        log_error("The pivot failed: %s", d.why);
                        pivot_decision_done(&d);
                        return EXIT_ERROR;
                }
                pivot_decision_done(&d);
                if (step == PIVOT_DONE)
                        return EXIT_CONVERGED;
                if (arg_pivot.once)
                        return EXIT_NOT_CONVERGED;
                if (now(CLOCK_MONOTONIC) >= end) {
                        log_error("The pivot did not finish within %.0f s; last step: %s.",
                                  (double)arg_pivot.timeout / USEC_PER_SEC, pivot_step_name(step));
                        return EXIT_NOT_CONVERGED;
                }
                if (is_wait(step) && sleep_usec(PIVOT_WAIT_INTERVAL) < 0)
                        return EXIT_ERROR;
        }
}
