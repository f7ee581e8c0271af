/* SPDX-License-Identifier: Apache-2.0 */
/* protokube plan: what a pass would do, in order, from the same observation and plan a pass makes;
 * changes nothing. */
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "daemon/pass.h"

int verb_plan(CliContext *ctx, char **args) {
        _cleanup_(pass_freep) Pass *pass = NULL;
        if (pass_new(ctx->spec_path, &ctx->node, &pass) < 0 || pass_print_plan(pass, stdout) < 0)
                return EXIT_ERROR;
        return EXIT_SUCCESS;
}
