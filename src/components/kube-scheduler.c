/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>

#include "basic/string-util.h"
#include "basic/strv.h"
#include "components/control-plane.h"
#include "components/flags.h"
#include "components/static-pod.h"

#define NAME "kube-scheduler"

static int effective_config(const ClusterSpec *spec, KubeSchedulerConfig *c) {
        *c = spec->kube_scheduler;
        return flags_fill_defaults(kube_scheduler_config_fields, c);
}

int kube_scheduler_flags(const ClusterSpec *spec, char ***ret) {
        KubeSchedulerConfig c;
        int r = effective_config(spec, &c);
        if (r < 0)
                return r;
        return flags_build(kube_scheduler_config_fields, &c, ret);
}

int kube_scheduler_pod_build(const ClusterSpec *spec, Pod **ret) {
        _cleanup_(pod_freep) Pod *pod = NULL;
        _cleanup_strv_free_ char **flags = NULL;
        KubeSchedulerConfig c;
        PodContainer *ct;

        int r = effective_config(spec, &c);
        if (r < 0)
                return r;
        r = flags_build(kube_scheduler_config_fields, &c, &flags);
        if (r < 0)
                return r;
        ComponentPod cp = { .name = NAME,
                            .image_override = c.image,
                            .priority_class = PRIORITY_CLUSTER_CRITICAL,
                            .flags = flags,
                            .cpu_request = c.cpu_request ?: "100m",
                            .memory_request = c.memory_request };
        r = component_pod_new(spec, &cp, &pod, &ct);
        if (r < 0)
                return r;
        r = container_set_health_probes(ct, "HTTPS", (int)c.secure_port.value, "/healthz", NULL);
        if (r < 0)
                return r;
        const char *files[] = { c.kubeconfig, c.authentication_kubeconfig, c.authorization_kubeconfig,
                                c.config };
        r = pod_mount_file_dirs(pod, ct, files, ELEMENTSOF(files));
        if (r < 0)
                return r;
        *ret = TAKE_PTR(pod);
        return 0;
}
