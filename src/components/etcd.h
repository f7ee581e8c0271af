/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The etcd builder: one pod for one member of one etcd cluster (ARCHITECTURE.md, kops conventions). */

#include "spec/spec.h"

typedef struct EtcdMemberAssignment {
        const char *cluster;    /* etcd cluster name from the spec: "main", "events" */
        const char *member;     /* this node's member: "a" */
        char *const *members;   /* all member names in tag order: {"a","b","c",NULL} */
        const char *mount_path; /* where the member's volume is mounted, e.g. /mnt/master-vol-1 */
        bool existing; /* joins a running cluster (initial-cluster-state=existing): a replaced member, added
                          to the cluster through the etcd API first (docs/etcd-members.md) */
        /* A restore under way (docs/etcd-restore.md): an init container restores the snapshot
         * <restore dir>/<id>.db into the data dir, as a new cluster "<cluster>-<id>" of the same members,
         * unless the data dir holds data already. NULL: no init container. */
        const char *restore_id;
        /* The image this member keeps while an upgrade holds it at the version it runs
         * (docs/etcd-versions.md): its tag names the version whose flags it gets. NULL: the spec's. */
        const char *image;
} EtcdMemberAssignment;

/* Renders the etcd static pod manifest (YAML text, caller frees) for the assignment. */
int etcd_manifest_render(const ClusterSpec *spec, const EtcdMemberAssignment *m, char **ret_yaml);

/* The image of the first container of an etcd manifest (caller frees): the version a member's manifest on
 * its volume holds. PK_EMALFORMED for a text that is no pod with a container image. */
int etcd_manifest_image(const char *yaml, char **ret);

/* The same as a pod model (caller frees). */
typedef struct Pod Pod;
int etcd_pod_build(const ClusterSpec *spec, const EtcdMemberAssignment *m, Pod **ret);

/* The cluster's client and peer ports as the spec holds them (with kops' defaults applied when it was
 * loaded); -EINVAL if unset, out of range or equal. */
int etcd_cluster_ports(const EtcdClusterSpec *e, int *ret_client, int *ret_peer);
