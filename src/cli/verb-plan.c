/* SPDX-License-Identifier: Apache-2.0 */
/* Scaffold: replaced by the verb's real implementation. */
#include <stdio.h>

#include "cli/cli.h"

VERB(plan) {
        (void)argc;
        (void)argv;
        (void)ctx;
        fprintf(stderr, "protokube plan: not built yet\n");
        return EXIT_ERROR;
}
