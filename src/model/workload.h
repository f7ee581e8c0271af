/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The workloads of a self-hosted control plane (apps/v1 DaemonSet and Deployment), plain data around a pod
 * template (model/pod.h). The selector is the template's k8s-app label, so an object never selects pods it
 * did not make. */

#include <errno.h>

#include "model/pod.h"

typedef enum WorkloadKind {
        WORKLOAD_DAEMON_SET,
        WORKLOAD_DEPLOYMENT,
        _WORKLOAD_KIND_MAX,
        _WORKLOAD_KIND_INVALID = -EINVAL,
} WorkloadKind;

typedef struct Workload {
        WorkloadKind kind;
        char *name;
        char *namespace;
        char **labels;      /* the object's: key, value, ... */
        char **annotations; /* the object's */
        unsigned replicas;  /* Deployment only */
        /* RollingUpdate's maxUnavailable (both kinds); a Deployment also gets maxSurge 0: its pods use
         * host ports and anti-affinity, so a surge pod would have nowhere to go. */
        unsigned max_unavailable;
        Pod *pod; /* the template: its name, namespace and the static pod's annotations are kept out */
} Workload;

Workload *workload_free(Workload *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(Workload *, workload_free)

/* "DaemonSet", "Deployment"; NULL for others. */
const char *workload_kind_to_string(WorkloadKind k);
