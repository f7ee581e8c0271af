/* SPDX-License-Identifier: Apache-2.0 */
/* What kube-proxy needs beyond its row in the component table: a privileged pod with the iptables lock (and
 * the host's kernel modules in ipvs and nftables modes), probed on its healthz address. */
#include <string.h>

#include "basic/parse-util.h"
#include "basic/string-util.h"
#include "components/component-def.h"
#include "components/conventions.h"

/* The port of healthzBindAddress ("0.0.0.0:10256", "[::]:10256"), or the default. */
static int healthz_port(const KubeProxyConfig *c, int *ret) {
        uint16_t port;
        if (isempty(c->healthz_bind_address)) {
                *ret = KUBE_PROXY_HEALTHZ_PORT;
                return 0;
        }
        const char *colon = strrchr(c->healthz_bind_address, ':');
        if (!colon || safe_atou16(colon + 1, &port) < 0 || port == 0)
                return -EINVAL;
        *ret = port;
        return 0;
}

int kube_proxy_finish_pod(Pod *pod, PodContainer *ct, const void *config) {
        const KubeProxyConfig *c = config;
        int port;
        int r = healthz_port(c, &port);
        if (r < 0)
                return r;
        /* It programs iptables/ipvs in the host's network namespace. */
        ct->privileged = true;
        /* Plain http: kube-proxy's healthz has no TLS. */
        r = pod_probe_http(&ct->liveness_probe, "HTTP", HEALTH_PROBE_HOST, "/healthz", port, 10, 15);
        if (r < 0)
                return r;
        /* The kernel's modules only for the modes that load their own (ipvs, nftables). iptables mode (the
         * default) loads none: kube-proxy 1.20 runs without /lib/modules, and a machine without that
         * directory (a container, this project's simulation) would keep the pod Pending on a hostPath of
         * type Directory ("hostPath type check failed"). */
        if (c->proxy_mode.set && c->proxy_mode.value != PROXY_MODE_IPTABLES) {
                r = pod_add_host_mount(pod, ct, "modules", "/lib/modules", "Directory", true);
                if (r < 0)
                        return r;
        }
        /* the lock iptables shares with the kubelet and CNI */
        return pod_add_host_mount(pod, ct, "iptableslock", "/run/xtables.lock", "FileOrCreate", false);
}
