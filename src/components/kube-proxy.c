/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>

#include "basic/parse-util.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "components/control-plane.h"
#include "components/flags.h"
#include "components/static-pod.h"

#define NAME                 "kube-proxy"
#define DEFAULT_HEALTHZ_PORT 10256

bool kube_proxy_enabled(const ClusterSpec *spec) {
        return !spec->kube_proxy.enabled.set || spec->kube_proxy.enabled.value;
}

static int effective_config(const ClusterSpec *spec, KubeProxyConfig *c) {
        KubeControllerManagerConfig kcm = spec->kube_controller_manager;
        *c = spec->kube_proxy;
        int r = flags_fill_defaults(kube_proxy_config_fields, c);
        if (r < 0)
                return r;
        /* Pods' CIDR is the controller-manager's, which allocates it. */
        r = flags_fill_defaults(kube_controller_manager_config_fields, &kcm);
        if (r < 0)
                return r;
        c->cluster_cidr = c->cluster_cidr ?: kcm.cluster_cidr;
        return 0;
}

int kube_proxy_flags(const ClusterSpec *spec, char ***ret) {
        KubeProxyConfig c;
        if (!kube_proxy_enabled(spec)) {
                *ret = NULL;
                return 0;
        }
        int r = effective_config(spec, &c);
        if (r < 0)
                return r;
        return flags_build(kube_proxy_config_fields, &c, ret);
}

/* The port of healthzBindAddress ("0.0.0.0:10256", "[::]:10256"), or the default. */
static int healthz_port(const KubeProxyConfig *c, int *ret) {
        uint16_t port;
        if (isempty(c->healthz_bind_address)) {
                *ret = DEFAULT_HEALTHZ_PORT;
                return 0;
        }
        const char *colon = strrchr(c->healthz_bind_address, ':');
        if (!colon || safe_atou16(colon + 1, &port) < 0 || port == 0)
                return -EINVAL;
        *ret = port;
        return 0;
}

static int proxy_mounts(Pod *pod, PodContainer *ct, const KubeProxyConfig *c) {
        const char *files[] = { c->kubeconfig };
        int r = pod_mount_file_dirs(pod, ct, files, ELEMENTSOF(files));
        if (r < 0)
                return r;
        /* kernel modules for ipvs/nftables, and the lock iptables shares with the kubelet and CNI */
        r = pod_add_host_mount(pod, ct, "modules", "/lib/modules", "Directory", true);
        if (r < 0)
                return r;
        r = pod_add_host_mount(pod, ct, "iptableslock", "/run/xtables.lock", "FileOrCreate", false);
        if (r < 0)
                return r;
        return pod_mount_ca_certs(pod, ct);
}

int kube_proxy_pod_build(const ClusterSpec *spec, Pod **ret) {
        _cleanup_(pod_freep) Pod *pod = NULL;
        _cleanup_strv_free_ char **flags = NULL;
        KubeProxyConfig c;
        PodContainer *ct;
        int port;

        if (!kube_proxy_enabled(spec)) {
                *ret = NULL;
                return 0;
        }
        int r = effective_config(spec, &c);
        if (r < 0)
                return r;
        r = healthz_port(&c, &port);
        if (r < 0)
                return r;
        r = flags_build(kube_proxy_config_fields, &c, &flags);
        if (r < 0)
                return r;
        /* kube-proxy is per node, not per cluster: the node's priority class, as kops gives it. */
        ComponentPod cp = { .name = NAME,
                            .image_override = c.image,
                            .priority_class = PRIORITY_NODE_CRITICAL,
                            .flags = flags,
                            .cpu_request = c.cpu_request ?: "100m",
                            .memory_request = c.memory_request };
        r = component_pod_new(spec, &cp, &pod, &ct);
        if (r < 0)
                return r;
        /* It programs iptables/ipvs in the host's network namespace. */
        ct->privileged = true;
        r = pod_probe_http(&ct->liveness_probe, "HTTP", "127.0.0.1", "/healthz", port, 10, 15);
        if (r < 0)
                return r;
        r = proxy_mounts(pod, ct, &c);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(pod);
        return 0;
}
