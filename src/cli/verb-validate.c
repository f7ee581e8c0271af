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
        _cleanup_strv_free_ char **errors = NULL;
        int r;

        r = cluster_spec_load(ctx->spec_path, &spec, &errors);
        if (r == PK_ESPEC) {
                /* The messages are the output: printed as they are, so editors can jump to them. */
                STRV_FOREACH (e, errors)
                        fprintf(stderr, "%s\n", *e);
                return EXIT_ERROR;
        }
        if (r < 0) {
                log_error_errno(r, "Failed to load spec '%s': %m", ctx->spec_path);
                return EXIT_ERROR;
        }
        printf("%s: ok\n", ctx->spec_path);
        return EXIT_SUCCESS;
}
