/* SPDX-License-Identifier: Apache-2.0 */
/* The `local` volume provider: the pool directory (pool.c) plays the cloud's volume service. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "volumes/pool.h"
#include "volumes/volume-tags.h"
#include "volumes/volume.h"

#define LOCAL_DEFAULT_ZONE "local"

typedef struct LocalProvider {
        Pool *pool;
        NodeIdentity node;
} LocalProvider;

/* Non-loopback, up IPv4 addresses of this machine, sorted: a stand-in for the cloud's metadata. */
static int detect_ips(char ***ret) {
        _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
        struct ifaddrs *ifa = NULL;

        if (!l)
                return -ENOMEM;
        if (getifaddrs(&ifa) < 0)
                return -errno;
        for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
                char buf[INET_ADDRSTRLEN];
                if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP) ||
                    (i->ifa_flags & IFF_LOOPBACK))
                        continue;
                const struct sockaddr_in *sin = (const struct sockaddr_in *)i->ifa_addr;
                if (!inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof(buf)))
                        continue;
                if (!strv_contains(l, buf) && strv_extend(&l, buf) < 0) {
                        freeifaddrs(ifa);
                        return -ENOMEM;
                }
        }
        freeifaddrs(ifa);
        strv_sort(l);
        *ret = TAKE_PTR(l);
        return 0;
}

static int one_ip(const char *ip, char ***ret) {
        char **l = calloc(2, sizeof(char *));
        if (!l)
                return -ENOMEM;
        if (ip && !(l[0] = strdup(ip))) {
                free(l);
                return -ENOMEM;
        }
        *ret = l;
        return 0;
}

static int identity_from_config(const VolumeProviderConfig *cfg, NodeIdentity *ret) {
        NodeIdentity n = {};
        char host[256] = "";
        int r;

        if (cfg->node_name)
                n.name = strdup(cfg->node_name);
        else {
                if (gethostname(host, sizeof(host) - 1) < 0)
                        return -errno;
                n.name = strdup(host);
        }
        n.zone = strdup(cfg->zone ?: LOCAL_DEFAULT_ZONE);
        if (!n.name || !n.zone) {
                node_identity_done(&n);
                return -ENOMEM;
        }
        r = cfg->internal_ip ? one_ip(cfg->internal_ip, &n.internal_ips) : detect_ips(&n.internal_ips);
        if (r >= 0)
                r = one_ip(cfg->external_ip, &n.external_ips);
        if (r < 0) {
                node_identity_done(&n);
                return r;
        }
        *ret = n;
        return 0;
}

static void local_close(void *state) {
        LocalProvider *lp = state;
        if (!lp)
                return;
        pool_free(lp->pool);
        node_identity_done(&lp->node);
        free(lp);
}

static int local_open(const VolumeProviderConfig *cfg, void **ret_state) {
        LocalProvider *lp = new0(LocalProvider, 1);
        int r;

        if (!lp)
                return -ENOMEM;
        r = pool_open(cfg->pool_dir, cfg->lock_timeout, &lp->pool);
        if (r >= 0)
                r = identity_from_config(cfg, &lp->node);
        if (r >= 0 && !pool_node_name_valid(lp->node.name))
                r = -EINVAL;
        if (r < 0) {
                local_close(lp);
                return r;
        }
        *ret_state = lp;
        return 0;
}

static int local_node_identity(void *state, NodeIdentity *ret) {
        LocalProvider *lp = state;
        return node_identity_copy(&lp->node, ret);
}

static int local_list_volumes(void *state, const char *cluster, const char *zone, VolumeList *ret) {
        LocalProvider *lp = state;
        VolumeList all = {}, l = {};
        int r = pool_list(lp->pool, &all);
        if (r < 0)
                return r;
        for (size_t i = 0; i < all.n; i++) {
                const Volume *v = &all.items[i];
                const char *c = volume_tag(v, VOLUME_TAG_CLUSTER);
                if (cluster && (!c || !streq(c, cluster)))
                        continue;
                if (zone && !streq(v->zone, zone))
                        continue;
                if (volume_list_append(&l, v) < 0) {
                        r = -ENOMEM;
                        break;
                }
        }
        l.warnings = TAKE_PTR(all.warnings);
        volume_list_done(&all);
        if (r < 0) {
                volume_list_done(&l);
                return r;
        }
        *ret = l;
        return 0;
}

static int local_attach(void *state, const char *id, const NodeIdentity *node) {
        LocalProvider *lp = state;
        return pool_attach(lp->pool, id, node);
}

static int local_resolve_device(void *state, const char *id, char **ret_path, dev_t *ret_devnum) {
        LocalProvider *lp = state;
        return pool_resolve_device(lp->pool, id, lp->node.name, ret_path, ret_devnum);
}

static int local_detach(void *state, const char *id, const char *node) {
        LocalProvider *lp = state;
        return pool_detach(lp->pool, id, node);
}

const VolumeProviderVTable volume_provider_local = {
        .name = "local",
        .open = local_open,
        .close = local_close,
        .node_identity = local_node_identity,
        .list_volumes = local_list_volumes,
        .attach = local_attach,
        .resolve_device = local_resolve_device,
        .detach = local_detach,
};
