/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What a pass observed about the cluster's masters, in plain data: filled from the volume provider
 * (volumes/), consumed by the desired DNS records (dns/) and the report. "Who knows the masters" in
 * ARCHITECTURE.md: the masters are the nodes holding etcd-main volumes, with the addresses the provider
 * recorded for them. Also loadable from / dumpable to JSON, for `protokube dns --view FILE` and tests. */

#include <stddef.h>

#include "basic/macro.h"

typedef struct MasterNode {
        char *name;          /* node name (instance id on a cloud) */
        char **internal_ips; /* IPv4 and/or IPv6 literals, sorted */
        char **external_ips; /* may be empty */
} MasterNode;

typedef struct EtcdMemberHolder {
        char *cluster; /* etcd cluster: "main", "events" */
        char *member;  /* "a" */
        char *node;    /* name of the MasterNode holding the member's volume; NULL when nobody holds it
                        * (every member named in the volume tags is listed, held or not: docs/etcd-dns.md) */
} EtcdMemberHolder;

typedef struct ClusterView {
        MasterNode *masters; /* sorted by name */
        size_t n_masters;
        EtcdMemberHolder *members; /* sorted by cluster, member */
        size_t n_members;
} ClusterView;

ClusterView *cluster_view_free(ClusterView *v);
DEFINE_TRIVIAL_CLEANUP_FUNC(ClusterView *, cluster_view_free)

/* Adds a master (copies the strings; merges IPs if the name exists). */
int cluster_view_add_master(ClusterView *v, const char *name, char *const *internal_ips,
                            char *const *external_ips);
/* node may be NULL (member known from the tags, volume not held). */
int cluster_view_add_member(ClusterView *v, const char *cluster, const char *member, const char *node);
const MasterNode *cluster_view_find_master(const ClusterView *v, const char *name);
/* Sorts masters and members into their canonical order. */
void cluster_view_sort(ClusterView *v);
/* Sorts, then drops each unheld entry (node NULL) of a member listed again, held or not: a caller adds every
 * member some tag names without searching the view for each (n log n for 10,000 volumes). Held entries stay.
 */
void cluster_view_sort_unique(ClusterView *v);

/* JSON: {"masters":[{"name":..,"internalIPs":[..],"externalIPs":[..]}],"members":[{"cluster":..,
 * "member":..,"node":..|null}]}. Load returns PK_EMALFORMED with a message (caller frees) on bad input. */
int cluster_view_from_json(const char *text, size_t len, ClusterView **ret, char **ret_error);
int cluster_view_to_json(const ClusterView *v, char **ret);
