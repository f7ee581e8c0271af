/* SPDX-License-Identifier: Apache-2.0 */
#include "daemon/etcd-source.h"

#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "components/etcd.h"

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

/* 1 when the member at endpoint is its cluster's leader, 0 when not, < 0 when it does not answer. */
