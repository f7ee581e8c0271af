/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What every control-plane static pod shares (kops' and kubeadm's conventions, conventions.h): namespace
 * kube-system, hostNetwork, label k8s-app=<name>, a priority class, the CriticalAddonsOnly toleration, one
 * container running a binary with its flags, resource requests; and the pieces the builders add: health
 * probes, read-only mounts of the directories of configured files, the host's CA bundle. */

#include <stdbool.h>

#include "model/pod.h"

typedef struct StaticPodParams {
        const char *name; /* the pod, its one container and its k8s-app label */
        const char *image;
        const char *priority_class;
        const char *binary; /* file name in /usr/local/bin */
        /* Run the binary under the Kubernetes images' go-runner, which writes the log file kops users expect
         * (/var/log/<binary>.log, mounted from the host; klog's --log-file is gone since 1.26) and still
         * lets `kubectl logs` work. */
        bool go_runner;
        char *const *flags;                       /* after the binary */
        const char *cpu_request, *memory_request; /* resources.requests; NULL ones are left out */
} StaticPodParams;

int static_pod_new(const StaticPodParams *p, Pod **ret, PodContainer **ret_container);

/* Mounts, read-only, the directories holding the given files (absolute paths; NULL entries are skipped,
 * relative ones rejected): each directory once, none below another one mounted. */
int static_pod_mount_file_dirs(Pod *pod, PodContainer *c, const char *const *files, size_t n_files);

/* The ca-certificates bundle of the host (/etc/ssl/certs), read-only, as kubeadm mounts it. */
int static_pod_mount_ca_certs(Pod *pod, PodContainer *c);

/* Liveness and startup probes on live_path, a readiness probe on ready_path if given, all on 127.0.0.1
 * (kubeadm's timings). */
int static_pod_set_health_probes(PodContainer *c, const char *scheme, int port, const char *live_path,
                                 const char *ready_path);
