/* SPDX-License-Identifier: Apache-2.0 */
/* protokube validate: load the spec with every check and report all errors as FILE:LINE:COL: message. */
#include <stdio.h>

#include "basic/errors.h"
#include "basic/log.h"
#include "basic/strv.h"
#include "cli/cli.h"
#include "spec/spec.h"

int verb_validate(CliContext *ctx, char **args) {
        _cleanup_(cluster_spec_freep) ClusterSpec *spec = NULL;
        /* The messages are the output: printed as they are, so editors can jump to them. */
        if (cli_load_spec(ctx, &spec) < 0)
                return EXIT_ERROR;
        printf("%s: ok\n", ctx->spec_path);
        return EXIT_SUCCESS;
}
