/* SPDX-License-Identifier: Apache-2.0 */
#include "kube/kube-node.h"

#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/in-addr-util.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "kube/kube-name.h"
#include "shared/json-util.h"

void kube_node_networks_free(KubeNodeNetwork *l, size_t n) {
        for (size_t i = 0; l && i < n; i++) {
                free(l[i].name);
                strv_free(l[i].pod_cidrs);
                strv_free(l[i].internal_ips);
        }
        free(l);
}

static int warn(char ***warnings, const char *node, const char *what, const char *value) {
        if (!warnings)
                return 0;
        char *w = strprintf("Node %s: %s '%.64s' is not %s", node, what, strna(value),
                            streq(what, "podCIDR") ? "a network prefix" : "an IP address");
        return w ? strv_push(warnings, w) : -ENOMEM;
}

/* Appends cidr to *l when it is a network prefix and not there yet. */
static int add_cidr(char ***l, const char *node, const json_t *v, char ***warnings) {
        const char *s = json_string_value(v);
        if (!s || in_addr_prefix_parse(s, NULL, NULL) < 0)
                return warn(warnings, node, "podCIDR", s);
        return strv_contains(*l, s) ? 0 : strv_extend(l, s);
}

static int pod_cidrs(const json_t *node, const char *name, char ***ret, char ***warnings) {
        _cleanup_strv_free_ char **l = new0(char *, 1);
        const json_t *cidrs = json_get(node, "spec", "podCIDRs"), *v;
        size_t i;
        int r = 0;
        if (!l)
                return -ENOMEM;
        json_array_foreach(cidrs, i, v) {
                if (i >= KUBE_NODE_ADDRESSES_MAX)
                        break;
                if ((r = add_cidr(&l, name, v, warnings)) < 0)
                        return r;
        }
        if (json_array_size(cidrs) == 0 && json_get(node, "spec", "podCIDR"))
                r = add_cidr(&l, name, json_get(node, "spec", "podCIDR"), warnings);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(l);
        return 0;
}

static int internal_ips(const json_t *node, const char *name, char ***ret, char ***warnings) {
        _cleanup_strv_free_ char **l = new0(char *, 1);
        const json_t *a;
        size_t i;
        if (!l)
                return -ENOMEM;
        json_array_foreach(json_get(node, "status", "addresses"), i, a) {
                const char *s = json_get_string(a, "address");
                char *canonical = NULL;
                if (i >= KUBE_NODE_ADDRESSES_MAX)
                        break;
                if (!streq_ptr(json_get_string(a, "type"), "InternalIP"))
                        continue;
                if (!s || in_addr_literal_parse(s, &canonical) < 0) {
                        if (warn(warnings, name, "InternalIP", s) < 0)
                                return -ENOMEM;
                        continue;
                }
                if (strv_push(&l, canonical) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

int kube_node_networks(const json_t *list, KubeNodeNetwork **ret, size_t *ret_n, char ***ret_warnings) {
        const json_t *items = json_get(list, "items"), *node;
        size_t n = 0, i;
        if (json_array_size(items) > KUBE_NODES_MAX)
                return PK_ETOOBIG;
        KubeNodeNetwork *l = new0(KubeNodeNetwork, json_array_size(items) + 1);
        if (!l)
                return -ENOMEM;
        json_array_foreach(items, i, node) {
                const char *name = json_get_string(node, "metadata", "name");
                if (!name || !kube_name_valid(KUBE_NAME_DNS_SUBDOMAIN, name))
                        continue;
                KubeNodeNetwork *k = &l[n++];
                if (!(k->name = strdup(name)) || pod_cidrs(node, name, &k->pod_cidrs, ret_warnings) < 0 ||
                    internal_ips(node, name, &k->internal_ips, ret_warnings) < 0) {
                        kube_node_networks_free(l, n);
                        return -ENOMEM;
                }
        }
        *ret = l;
        *ret_n = n;
        return 0;
}
