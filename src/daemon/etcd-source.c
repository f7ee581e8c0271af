/* SPDX-License-Identifier: Apache-2.0 */
#include "daemon/etcd-source.h"

#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "components/etcd.h"

#define LOCK_HOLDER_MAX 253U /* a node's name is a DNS name */

/* This node's member of the cluster at this node's address (NULL: 127.0.0.1): etcd listens on every
 * address (components/etcd.c) and its server certificate names the node's addresses and 127.0.0.1, so this
 * is the member itself, whatever DNS says. The client pair is kube-apiserver's etcd client pair: every etcd
 * cluster's client CA trusts it (docs/etcd-members.md). */
int etcd_member_source(const ClusterSpec *spec, const EtcdClusterSpec *e, const char *address,
                       char **ret_endpoint, BackupEtcdSource *ret) {
        const KubeAPIServerConfig *a = &spec->kube_apiserver;
        int client, peer;
        if (etcd_cluster_ports(e, &client, &peer) < 0)
                return -EINVAL;
        address = address ?: "127.0.0.1";
        char *endpoint = strprintf(strchr(address, ':') ? "%s://[%s]:%d" : "%s://%s:%d",
                                   isempty(e->tls_dir) ? "http" : "https", address, client);
        if (!endpoint)
                return -ENOMEM;
        *ret = (BackupEtcdSource){ .endpoint = endpoint };
        if (!isempty(e->tls_dir)) {
                ret->ca_file = a->etcd_ca_file;
                ret->cert_file = a->etcd_cert_file;
                ret->key_file = a->etcd_key_file;
        }
        *ret_endpoint = endpoint;
        return 0;
}

int etcd_holder_client_url(const ClusterView *view, const char *scheme, const char *cluster,
                           const char *member, int port, char **ret) {
        *ret = NULL;
        for (size_t i = 0; view && i < view->n_members; i++) {
                const EtcdMemberHolder *h = &view->members[i];
                if (!streq(h->cluster, cluster) || !streq(h->member, member) || !h->node)
                        continue;
                const MasterNode *n = cluster_view_find_master(view, h->node);
                if (!n || strv_length(n->internal_ips) == 0)
                        return 0;
                *ret = strchr(n->internal_ips[0], ':')
                           ? strprintf("%s://[%s]:%d", scheme, n->internal_ips[0], port)
                           : strprintf("%s://%s:%d", scheme, n->internal_ips[0], port);
                return *ret ? 0 : -ENOMEM;
        }
        return 0;
}

int etcd_cluster_client_open(const ClusterSpec *spec, const char *cluster, char *const *endpoints,
                             usec_t timeout, EtcdClient **ret, char **ret_error) {
        const EtcdClusterSpec *e = cluster_spec_find_etcd(spec, cluster);
        const KubeAPIServerConfig *a = &spec->kube_apiserver;
        EtcdClientConfig cfg = { .endpoints = endpoints, .timeout = timeout };
        if (e && !isempty(e->tls_dir)) {
                if (!a->etcd_cert_file || !a->etcd_key_file || !a->etcd_ca_file)
                        return error_setf(ret_error, -ENOENT,
                                          "etcd cluster '%s' uses TLS but kubeAPIServer has no etcd client "
                                          "certificate (etcdCertFile, etcdKeyFile, etcdCaFile)",
                                          cluster);
                cfg.ca_file = a->etcd_ca_file;
                cfg.cert_file = a->etcd_cert_file;
                cfg.key_file = a->etcd_key_file;
        }
        int r = etcd_client_new(&cfg, ret);
        return r < 0 ? error_setf(ret_error, r, "cannot set up an etcd client: %s", pk_strerror(r)) : 0;
}

static int holder_of(const EtcdKvList *kv, char **ret) {
        *ret = kv->n > 0 ? strndup((char *)kv->items[0].value, MIN(kv->items[0].value_len, LOCK_HOLDER_MAX))
                         : strdup("?");
        return *ret ? 0 : -ENOMEM;
}

int etcd_lock_take(EtcdClient *c, const char *key, const char *node, int64_t ttl, uint64_t *ret_lease,
                   char **ret_holder, char **ret_error) {
        uint64_t lease;
        bool won = false;
        EtcdKvList kv = {};
        int r = etcd_lease_grant(c, ttl, &lease, ret_error);
        if (r < 0)
                return r;
        EtcdCompare cmp = { .key = key,
                            .key_len = strlen(key),
                            .target = ETCD_COMPARE_CREATE,
                            .result = ETCD_COMPARE_EQUAL,
                            .number = 0 };
        EtcdOp put = { .type = ETCD_OP_PUT,
                       .key = key,
                       .key_len = strlen(key),
                       .value = node,
                       .value_len = strlen(node),
                       .lease = lease };
        EtcdOp get = { .type = ETCD_OP_RANGE, .key = key, .key_len = strlen(key) };
        EtcdTxn t = { .compares = &cmp,
                      .n_compares = 1,
                      .success = &put,
                      .n_success = 1,
                      .failure = &get,
                      .n_failure = 1 };
        r = etcd_kv_txn(c, &t, &won, &kv, ret_error);
        if (r >= 0 && !won)
                r = holder_of(&kv, ret_holder);
        etcd_kv_list_done(&kv);
        if (r < 0 || !won) {
                (void)etcd_lease_revoke(c, lease, NULL);
                return r < 0 ? r : 0;
        }
        *ret_lease = lease;
        return 1;
}

static bool held_by(const EtcdKvList *kv, const char *node) {
        return kv->n > 0 && kv->items[0].value_len == strlen(node) &&
               memcmp(kv->items[0].value, node, kv->items[0].value_len) == 0;
}

int etcd_lock_read(EtcdClient *c, const char *key, const char *node, char **ret_holder, bool *ret_ours,
                   char **ret_error) {
        EtcdKvList kv = {};
        *ret_holder = NULL;
        *ret_ours = false;
        int r = etcd_kv_range(c, key, strlen(key), NULL, 0, &kv, ret_error);
        if (r < 0)
                return r;
        if (held_by(&kv, node))
                *ret_ours = true;
        else if (kv.n > 0)
                r = holder_of(&kv, ret_holder);
        etcd_kv_list_done(&kv);
        return r;
}

int etcd_lock_release(EtcdClient *c, const char *key, const char *node, char **ret_error) {
        EtcdKvList kv = {};
        int r = etcd_kv_range(c, key, strlen(key), NULL, 0, &kv, ret_error);
        if (r < 0)
                return r;
        uint64_t lease = held_by(&kv, node) ? kv.items[0].lease : 0;
        etcd_kv_list_done(&kv);
        if (lease == 0)
                return 0;
        r = etcd_lease_revoke(c, lease, ret_error);
        return r < 0 ? r : 1;
}
