/* SPDX-License-Identifier: Apache-2.0 */
/* What a worker reads of its join from the API (join/join-progress.h): any JSON is a CSR state with its
 * name and words as one bounded line, or an error; any object a Node Ready or not with one bounded line;
 * never a crash. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/string-util.h"
#include "join/join-progress.h"

#define SHOWN_LINE_MAX 256U /* the module's bound (200) and "..." */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_line(const char *s) {
        if (s && (string_has_cc(s) || strlen(s) > SHOWN_LINE_MAX))
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        json_t *j = json_loadb((const char *)data, size, 0, NULL);
        if (!j)
                return 0;
        JoinCsrProgress p = {};
        char *err = NULL, *words = NULL;
        int r = join_csr_progress(j, "w1", "abcdef", &p, &err);
        if (r >= 0) {
                if (!join_csr_state_to_string(p.state) || (p.state == JOIN_CSR_STATE_NONE) != !p.name)
                        abort();
                check_line(p.name);
                check_line(p.words);
        } else if (r != -ENOMEM && !err)
                abort();
        join_csr_progress_done(&p);
        free(err);
        r = join_node_ready(j, &words);
        if ((r == 1) != !words || (r == 0 && !words))
                abort();
        check_line(words);
        free(words);
        json_decref(j);
        return 0;
}
