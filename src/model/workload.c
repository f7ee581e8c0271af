/* SPDX-License-Identifier: Apache-2.0 */
#include "model/workload.h"

#include <stdlib.h>

#include "basic/strv.h"

Workload *workload_free(Workload *w) {
        if (!w)
                return NULL;
        free(w->name);
        free(w->namespace);
        strv_free(w->labels);
        strv_free(w->annotations);
        pod_free(w->pod);
        free(w);
        return NULL;
}

const char *workload_kind_to_string(WorkloadKind k) {
        static const char *const table[_WORKLOAD_KIND_MAX] = {
                [WORKLOAD_DAEMON_SET] = "DaemonSet",
                [WORKLOAD_DEPLOYMENT] = "Deployment",
        };
        return k >= 0 && k < _WORKLOAD_KIND_MAX ? table[k] : NULL;
}
