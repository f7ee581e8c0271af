/* SPDX-License-Identifier: Apache-2.0 */
/* protokube plan: what a pass would do, in order, from the same observation and plan a pass makes;
 * changes nothing. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "basic/errors.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "cli/cli.h"
#include "daemon/pass.h"

int verb_plan(CliContext *ctx, char **args) {
        _cleanup_(pass_freep) Pass *pass = NULL;
        PassObservation o = {};
        PassPlan plan = {};

        if (pass_new(ctx->spec_path, &ctx->node, &pass) < 0 || pass_observe_and_plan(pass, &o, &plan) < 0)
                return EXIT_ERROR;
        pass_plan_print(pass, &o, &plan, stdout);
        bool failed = plan.dns_status < 0 && plan.dns_status != PK_EWAITING;
        /* the pivot's step needs the API and the certificates: without them the rest of the plan stands */
        if (pass_pivot_plan_print(pass, &o, &plan, stdout) < 0)
                log_warning("The pivot's next step is not known (see above).");
        if (failed)
                log_error("DNS: %s", strna(plan.dns_note));
        pass_plan_done(&plan);
        pass_observation_done(&o);
        return failed ? EXIT_ERROR : EXIT_SUCCESS;
}
