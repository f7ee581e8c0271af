/* SPDX-License-Identifier: Apache-2.0 */
/* The `local` volume provider: the pool directory (pool.c) plays the cloud's volume service. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/in-addr-util.h"
#include "basic/machine-id.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "cloud/node-addrs.h"
#include "cloud/pool.h"
#include "cloud/providers.h"
#include "cloud/volume-tags.h"
#include "cloud/volume.h"

#define LOCAL_DEFAULT_ZONE "local"

typedef struct LocalProvider {
        Pool *pool;
        NodeIdentity node;
} LocalProvider;

/* One address given by the operator: a literal, canonical (the CLI has already said which option was
 * wrong; this is the library's own guard). ip NULL: an empty list. */
static int one_ip(const char *ip, char ***ret) {
        _cleanup_free_ char *c = NULL;
        char **l;
        if (ip) {
                int r = in_addr_literal_parse(ip, &c);
                if (r < 0)
                        return r;
        }
        l = calloc(2, sizeof(char *));
        if (!l)
                return -ENOMEM;
        l[0] = TAKE_PTR(c);
        *ret = l;
        return 0;
}

/* machine-id(5): who this machine is, beyond a name that two machines may share. Without --node-name
 * the host name is the node name, and then the machine id is required: a host name alone is not an
 * identity. With --node-name a missing file is tolerated (name-only, as records before machine ids). */
static int identity_machine_id(const VolumeProviderConfig *cfg, char **ret, char **ret_error) {
        const char *path = cfg->machine_id_file ?: MACHINE_ID_PATH_DEFAULT;
        int r = machine_id_read(path, ret);
        if (r == -ENOENT && cfg->node_name) {
                *ret = NULL;
                return 0;
        }
        if (r == -ENOENT)
                return error_setf(ret_error, r,
                                  "machine id file '%s' does not exist: give this node a --node-name", path);
        if (r == PK_EMALFORMED)
                return error_setf(
                    ret_error, r,
                    "machine id file '%s' is not 32 lowercase hexadecimal digits (machine-id(5))", path);
        if (r < 0)
                return error_setf(ret_error, r, "machine id file '%s': %s", path, pk_strerror(r));
        return 0;
}

static int identity_ips(const VolumeProviderConfig *cfg, NodeIdentity *n, char **ret_error) {
        int r;
        if (cfg->internal_ip) {
                r = one_ip(cfg->internal_ip, &n->internal_ips);
                if (r == -EINVAL)
                        return error_setf(ret_error, r, "internal IP '%s' is not an IP address",
                                          cfg->internal_ip);
        } else {
                r = node_addrs_detect(NULL, &n->internal_ips);
                if (r == PK_ETOOBIG)
                        return error_setf(
                            ret_error, r,
                            "this machine has more than %d addresses (bridges and container "
                            "interfaces not counted): give the node's address with --internal-ip",
                            NODE_ADDRS_MAX);
                if (r < 0)
                        return error_setf(ret_error, r, "detecting this machine's addresses: %s",
                                          pk_strerror(r));
        }
        if (r < 0)
                return r;
        r = one_ip(cfg->external_ip, &n->external_ips);
        if (r == -EINVAL)
                return error_setf(ret_error, r, "external IP '%s' is not an IP address", cfg->external_ip);
        return r;
}

static int identity_from_config(const VolumeProviderConfig *cfg, NodeIdentity *ret, char **ret_error) {
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
        r = pool_node_name_valid(n.name)
                ? 0
                : error_setf(ret_error, -EINVAL, "node name '%s' is not valid", n.name);
        if (r >= 0)
                r = identity_machine_id(cfg, &n.machine_id, ret_error);
        if (r >= 0)
                r = identity_ips(cfg, &n, ret_error);
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

static int local_open(const VolumeProviderConfig *cfg, void **ret_state, char **ret_error) {
        LocalProvider *lp = new0(LocalProvider, 1);
        int r;

        if (!lp)
                return -ENOMEM;
        r = pool_open(cfg->pool_dir, cfg->lock_timeout, &lp->pool);
        if (r < 0)
                r = error_setf(ret_error, r, "pool '%s': %s", cfg->pool_dir, pk_strerror(r));
        else
                r = identity_from_config(cfg, &lp->node, ret_error);
        if (r < 0) {
                local_close(lp);
                return r;
        }
        *ret_state = lp;
        return 0;
}

static int local_node_identity(void *state, NodeIdentity *ret, char **ret_error) {
        LocalProvider *lp = state;
        return node_identity_copy(&lp->node, ret);
}

static int local_list_volumes(void *state, const char *cluster, const char *zone, VolumeList *ret,
                              char **ret_error) {
        LocalProvider *lp = state;
        VolumeList all = {}, l = {};
        int r = pool_list(lp->pool, &all);
        if (r < 0)
                return r;
        for (size_t i = 0; i < all.n; i++) {
                const Volume *v = &all.items[i];
                const char *c = volume_tag(v, VOLUME_TAG_CLUSTER);
                /* a damaged record whose tags or zone are unreadable may be this cluster's: listed */
                bool unknown = v->damaged && !c;
                if (cluster && !unknown && (!c || !streq(c, cluster)))
                        continue;
                if (zone && v->zone && !streq(v->zone, zone))
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

static int local_attach(void *state, const char *id, const NodeIdentity *node, char **ret_error) {
        LocalProvider *lp = state;
        return pool_attach(lp->pool, id, node);
}

static int local_resolve_device(void *state, const char *id, char **ret_path, dev_t *ret_devnum,
                                char **ret_error) {
        LocalProvider *lp = state;
        return pool_resolve_device(lp->pool, id, &lp->node, ret_path, ret_devnum);
}

static int local_detach(void *state, const char *id, const char *node, char **ret_error) {
        LocalProvider *lp = state;
        /* this node: by its whole identity; another node named by the caller: by name */
        NodeIdentity other = { .name = (char *)node };
        return pool_detach(lp->pool, id, !node ? NULL : streq(node, lp->node.name) ? &lp->node : &other);
}

/* Another node's claim or release rewrites a metadata file of the pool (a rename into it). */
static int local_watch_paths(void *state, char ***ret) {
        LocalProvider *lp = state;
        _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
        if (!l || strv_extend(&l, lp->pool->dir) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(l);
        return 0;
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
        .watch_paths = local_watch_paths,
};
