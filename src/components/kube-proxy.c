/* SPDX-License-Identifier: Apache-2.0 */
/* What kube-proxy needs beyond its row in the component table: a privileged pod with the host's kernel
 * modules and iptables lock, probed on its healthz address. */
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
        /* kernel modules for ipvs/nftables, and the lock iptables shares with the kubelet and CNI */
        r = pod_add_host_mount(pod, ct, "modules", "/lib/modules", "Directory", true);
        if (r < 0)
                return r;
        return pod_add_host_mount(pod, ct, "iptableslock", "/run/xtables.lock", "FileOrCreate", false);
}
