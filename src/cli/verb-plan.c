/* SPDX-License-Identifier: Apache-2.0 */
/* protokube plan: what a pass would do, in order, from the same observation and plan a pass makes;
 * changes nothing. protokube join plan: a worker's join stage by stage, from the same plan. */
#include <stdio.h>
#include <stdlib.h>

#include "basic/errors.h"
#include "cli/cli.h"
#include "daemon/pass.h"

int verb_plan(CliContext *ctx, char **args) {
        _cleanup_(pass_freep) Pass *pass = NULL;
        if (pass_new(ctx->spec_path, &ctx->node, &pass) < 0 || pass_print_plan(pass, stdout) < 0)
                return EXIT_ERROR;
        return EXIT_SUCCESS;
}

/* 0 joined (its Node Ready), 3 a stage waits, 1 one is refused (or the role does not join). */
int verb_join_plan(CliContext *ctx, char **args) {
        _cleanup_(pass_freep) Pass *pass = NULL;
        if (pass_new(ctx->spec_path, &ctx->node, &pass) < 0)
                return EXIT_ERROR;
        int r = pass_print_join(pass, stdout);
        return r == 0 ? EXIT_SUCCESS : r == PK_EWAITING ? EXIT_NOT_CONVERGED : EXIT_ERROR;
}
