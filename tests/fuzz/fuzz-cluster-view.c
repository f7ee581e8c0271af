/* SPDX-License-Identifier: Apache-2.0 */
/* The cluster view's JSON (`protokube dns --view FILE`): whatever parses dumps and re-parses to the same
 * text; whatever does not parse is an error with a message, never a crash. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/cluster-view.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        ClusterView *v = NULL, *w = NULL;
        char *err = NULL, *text = NULL, *text2 = NULL;

        if (cluster_view_from_json((const char *)data, size, &v, &err) < 0) {
                if (!err)
                        abort(); /* every refusal says why */
                free(err);
                return 0;
        }
        cluster_view_sort(v);
        if (cluster_view_to_json(v, &text) < 0)
                abort();
        if (cluster_view_from_json(text, strlen(text), &w, &err) < 0)
                abort();
        cluster_view_sort(w);
        if (cluster_view_to_json(w, &text2) < 0 || strcmp(text, text2) != 0)
                abort();
        free(text);
        free(text2);
        cluster_view_free(v);
        cluster_view_free(w);
        return 0;
}
