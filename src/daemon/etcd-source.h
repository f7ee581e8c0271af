/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* How protokube reaches etcd: this node's own member (for a backup's snapshot, a restore's health, `etcd
 * backup`), the other members at their holders' addresses, and a lock held in the cluster itself (one
 * membership change, one member's upgrade at a time). The helpers the steps and the CLI share. */

#include "backup/backup-snapshot.h"
#include "etcdapi/etcd-client.h"
#include "model/cluster-view.h"
#include "spec/spec.h"

/* Where this node's member of e answers at address (NULL: 127.0.0.1): its endpoint, newly allocated, and
 * the client pair to use. */
int etcd_member_source(const ClusterSpec *spec, const EtcdClusterSpec *e, const char *address,
                       char **ret_endpoint, BackupEtcdSource *ret);

/* The client URL of a member another master holds: its holder's address as the provider recorded it (the
 * source of truth, and no resolver in the way; the server certificates name it). NULL in *ret for a member
 * nobody holds: it cannot answer, and asking its DNS name would only wait on the placeholder address
 * (docs/etcd-dns.md). */
int etcd_holder_client_url(const ClusterView *view, const char *scheme, const char *cluster,
                           const char *member, int port, char **ret);

/* A client of the endpoints with the apiserver's etcd client pair: every etcd cluster's client CA trusts
 * it, and it is on every master (docs/etcd-members.md, "Which certificate"). */
int etcd_cluster_client_open(const ClusterSpec *spec, const char *cluster, char *const *endpoints,
                             usec_t timeout, EtcdClient **ret, char **ret_error);

/* A lock in the etcd cluster it guards: the key, created only if absent (a txn on create_revision 0) with
 * the node's name as its value, on a lease of ttl seconds that ends it after a holder that died. 1 taken
 * (the lease into *ret_lease), 0 another holds it (its name into *ret_holder), < 0 on failure. */
int etcd_lock_take(EtcdClient *c, const char *key, const char *node, int64_t ttl, uint64_t *ret_lease,
                   char **ret_holder, char **ret_error);

/* Who holds the lock: *ret_holder the holder's name when another node holds it, else NULL; *ret_ours when
 * node holds it. A name longer than a DNS name is cut there. */
int etcd_lock_read(EtcdClient *c, const char *key, const char *node, char **ret_holder, bool *ret_ours,
                   char **ret_error);

/* Releases the lock when node holds it: its lease revoked (which deletes the key). 1 released, 0 not ours
 * or not held. */
int etcd_lock_release(EtcdClient *c, const char *key, const char *node, char **ret_error);
