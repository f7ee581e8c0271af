/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The etcd builder: one pod for one member of one etcd cluster (ARCHITECTURE.md, kops conventions). */

#include "spec/spec.h"

typedef struct EtcdMemberAssignment {
        const char *cluster;    /* etcd cluster name from the spec: "main", "events" */
        const char *member;     /* this node's member: "a" */
        char *const *members;   /* all member names in tag order: {"a","b","c",NULL} */
        const char *mount_path; /* where the member's volume is mounted, e.g. /mnt/master-vol-1 */
} EtcdMemberAssignment;

/* Renders the etcd static pod manifest (YAML text, caller frees) for the assignment. */
int etcd_manifest_render(const ClusterSpec *spec, const EtcdMemberAssignment *m, char **ret_yaml);

/* The same as a pod model (caller frees). */
typedef struct Pod Pod;
int etcd_pod_build(const ClusterSpec *spec, const EtcdMemberAssignment *m, Pod **ret);

/* The etcd cluster called name in the spec, or NULL. */
const EtcdClusterSpec *etcd_cluster_find(const ClusterSpec *spec, const char *name);

/* The cluster's client and peer ports with kops' defaults (main 4001/2380, events 4002/2381); -EINVAL for
 * another cluster without explicit ports. */
int etcd_cluster_ports(const EtcdClusterSpec *e, int *ret_client, int *ret_peer);

/* kops naming. The kops cluster name is "etcd" for main and "etcd-<cluster>" for the others; the member
 * name is "<kops cluster name>-<member>" (etcd-a, etcd-events-a), its DNS name
 * "<member name>.<internalSuffix>". Caller frees. */
int etcd_member_name(const char *cluster, const char *member, char **ret);
int etcd_member_dns_name(const ClusterSpec *spec, const char *cluster, const char *member, char **ret);
/* "etcd.manifest" for main, "etcd-<cluster>.manifest" otherwise. Caller frees. */
int etcd_manifest_file_name(const char *cluster, char **ret);
