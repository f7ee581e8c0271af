/* SPDX-License-Identifier: Apache-2.0 */
/* Scaffold: replaced by the verb's real implementation. */
#include <stdio.h>

#include "cli/cli.h"

VERB(volumes) {
        (void)argc;
        (void)argv;
        (void)ctx;
        fprintf(stderr, "protokube volumes: not built yet\n");
        return EXIT_ERROR;
}
