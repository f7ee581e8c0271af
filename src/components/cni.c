/* SPDX-License-Identifier: Apache-2.0 */
#include "components/cni.h"

#include <jansson.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "basic/in-addr-util.h"
#include "basic/macro.h"
#include "basic/string-util.h"

/* The bridge plugin: the node's pods on spec.networking.bridge, which gets the subnet's first address and is
 * their default gateway; hairpin so a pod reaches itself through a Service. No masquerade: a pod's address
 * is seen as it is by the other nodes' pods (the flat network); traffic leaving the cluster is the
 * operator's to masquerade (kops runs ip-masq-agent for it). */
static json_t *bridge_plugin(const ClusterSpec *spec, const char *pod_cidr, int family) {
        return json_pack("{s:s, s:s, s:b, s:b, s:b, s:{s:s, s:[[{s:s}]], s:[{s:s}]}}", "type", "bridge",
                         "bridge", spec->networking.bridge, "isGateway", 1, "ipMasq", 0, "hairpinMode", 1,
                         "ipam", "type", "host-local", "ranges", "subnet", pod_cidr, "routes", "dst",
                         family == AF_INET6 ? "::/0" : "0.0.0.0/0");
}

int cni_kubenet_conflist(const ClusterSpec *spec, const char *pod_cidr, char **ret, char **ret_error) {
        int family = in_addr_prefix_parse(pod_cidr, NULL, NULL);
        if (family < 0) {
                *ret_error = strprintf("the Node's podCIDR '%s' is not a network prefix", strna(pod_cidr));
                return -EINVAL;
        }
        json_t *conf = json_pack("{s:s, s:s, s:[o, {s:s, s:{s:b}}]}", "cniVersion", "0.4.0", "name",
                                 CNI_KUBENET_NETWORK, "plugins", bridge_plugin(spec, pod_cidr, family),
                                 "type", "portmap", "capabilities", "portMappings", 1);
        if (!conf)
                return -ENOMEM;
        char *text = json_dumps(conf, JSON_SORT_KEYS | JSON_INDENT(1));
        json_decref(conf);
        if (!text)
                return -ENOMEM;
        *ret = strjoin(text, "\n");
        free(text);
        return *ret ? 0 : -ENOMEM;
}
