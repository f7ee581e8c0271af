/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>

#include "basic/string-util.h"
#include "basic/strv.h"
#include "components/control-plane.h"
#include "components/flags.h"
#include "components/static-pod.h"

#define NAME "kube-controller-manager"

static int effective_config(const ClusterSpec *spec, KubeControllerManagerConfig *c) {
        KubeAPIServerConfig api = spec->kube_apiserver;
        *c = spec->kube_controller_manager;
        int r = flags_fill_defaults(kube_controller_manager_config_fields, c);
        if (r < 0)
                return r;
        /* The service range must be the apiserver's; the cluster name is the spec's. Both alias the spec or
         * the tables, nothing to free. */
        r = flags_fill_defaults(kube_apiserver_config_fields, &api);
        if (r < 0)
                return r;
        c->service_cluster_ip_range = c->service_cluster_ip_range ?: api.service_cluster_ip_range;
        c->cluster_name = c->cluster_name ?: spec->name;
        return 0;
}

int kube_controller_manager_flags(const ClusterSpec *spec, char ***ret) {
        KubeControllerManagerConfig c;
        int r = effective_config(spec, &c);
        if (r < 0)
                return r;
        return flags_build(kube_controller_manager_config_fields, &c, ret);
}

int kube_controller_manager_pod_build(const ClusterSpec *spec, Pod **ret) {
        _cleanup_(pod_freep) Pod *pod = NULL;
        _cleanup_strv_free_ char **flags = NULL;
        KubeControllerManagerConfig c;
        PodContainer *ct;

        int r = effective_config(spec, &c);
        if (r < 0)
                return r;
        r = flags_build(kube_controller_manager_config_fields, &c, &flags);
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
        const char *files[] = {
                c.kubeconfig,
                c.authentication_kubeconfig,
                c.authorization_kubeconfig,
                c.cluster_signing_cert_file,
                c.cluster_signing_key_file,
                c.root_ca_file,
                c.service_account_private_key_file,
        };
        r = pod_mount_file_dirs(pod, ct, files, ELEMENTSOF(files));
        if (r < 0)
                return r;
        r = pod_mount_ca_certs(pod, ct);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(pod);
        return 0;
}
