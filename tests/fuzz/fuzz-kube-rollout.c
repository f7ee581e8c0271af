/* SPDX-License-Identifier: Apache-2.0 */
/* Where a DaemonSet's rollout stands (kube/kube-rollout.h), over objects read from the API: any JSON as
 * {"ds": ..., "revisions": ..., "pods": ...} gives an answer or PK_EMALFORMED, never a crash; a template to
 * roll back to is an object, and the "why" a line. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube-rollout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        json_error_t e;
        json_t *doc = json_loadb((const char *)data, size, 0, &e);
        KubeRollout r;
        if (!doc)
                return 0;
        const json_t *ds = json_object_get(doc, "ds"), *revs = json_object_get(doc, "revisions"),
                     *pods = json_object_get(doc, "pods");
        for (usec_t now = 0; now < 3; now++) {
                if (kube_daemonset_rollout(ds, revs, pods, now * 1000000000000000ULL, 60000000ULL, &r) < 0)
                        continue;
                if (!r.why || strchr(r.why, '\n') ||
                    (r.previous_template && !json_is_object(r.previous_template)))
                        abort();
                if (r.stuck && r.complete)
                        abort();
                kube_rollout_done(&r);
        }
        json_decref(doc);
        return 0;
}
