/* SPDX-License-Identifier: Apache-2.0 */
/* The cluster spec loader on arbitrary bytes: it must never crash, leak or hang, whatever the input. Also
 * feeds the same bytes to the YAML tree alone, with duplicate rejection on. */
#include <stdint.h>
#include <stdlib.h>

#include "basic/errors.h"
#include "basic/strv.h"
#include "shared/yaml-tree.h"
#include "spec/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        ClusterSpec *s = NULL;
        char **errors = NULL;
        int r;

        if (size > YAML_TREE_MAX_INPUT + 1)
                return 0;
        r = cluster_spec_load_string("fuzz.yaml", (const char *)data, size, &s, &errors);
        if (r >= 0 && (!s || errors))
                abort(); /* success means a spec and no errors */
        if (r == PK_ESPEC && strv_length(errors) == 0)
                abort(); /* a spec error always says why */
        if (r >= 0 && s->etcd_clusters.n > 0 && !cluster_spec_find_etcd(s, "main"))
                abort(); /* validation guarantees a main etcd cluster */
        cluster_spec_free(s);
        strv_free(errors);

        YamlNode *root = NULL;
        char *message = NULL;
        if (yaml_tree_parse((const char *)data, size, YAML_TREE_REJECT_DUPLICATES, &root, &message) >= 0)
                yaml_tree_free(root);
        free(message);
        return 0;
}
