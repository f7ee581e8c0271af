/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The kops volume tags (ARCHITECTURE.md, "Conventions kept from kops"): KubernetesCluster=<C>,
 * k8s.io/role/master=1, k8s.io/etcd/<cluster>=<me>/<all>. A tag that does not parse makes the volume
 * ineligible: fail safe, never guess a member. */

#include <stdbool.h>

#include "cloud/volume.h"

#define VOLUME_TAG_CLUSTER     "KubernetesCluster"
#define VOLUME_TAG_ROLE_MASTER "k8s.io/role/master"
#define VOLUME_TAG_ETCD_PREFIX "k8s.io/etcd/"
#define VOLUME_NAME_MAX        63

typedef struct EtcdTag {
        char *cluster;  /* "main" */
        char *member;   /* "a" */
        char **members; /* {"a","b","c"} in tag order */
} EtcdTag;

void etcd_tag_done(EtcdTag *t);

/* Parses key "k8s.io/etcd/<cluster>" and value "<me>/<m1>,<m2>,...". Names are RFC 1123 labels
 * ([a-z0-9-], 1-63); me must be one of the members, members unique. On PK_EMALFORMED, *ret_error says why
 * (caller frees). */
int etcd_tag_parse(const char *key, const char *value, EtcdTag *ret, char **ret_error);

typedef struct VolumeEligibility {
        bool eligible;
        bool malformed; /* ineligible because a tag did not parse: worth a warning */
        char *reason;   /* why not, NULL when eligible */
        EtcdTag etcd;   /* when a single etcd tag parsed */
        /* Set by volume_resolve_members(); both point into the caller's volumes. */
        const char *held_through;      /* ineligible: its member is held through this other volume */
        const char *sibling_with_data; /* another volume names the same member and may hold its data */
} VolumeEligibility;

void volume_eligibility_done(VolumeEligibility *e);

/* Can this node use v for etcd: tagged for cluster, a master volume, in zone (NULL: any zone), exactly
 * one well-formed etcd tag naming one of etcd_clusters (NULL: any). Fills ret in every case (eligible or
 * not); returns -ENOMEM only. */
int volume_classify(const Volume *v, const char *cluster, const char *zone, char *const *etcd_clusters,
                    VolumeEligibility *ret);

/* One member, one holder. Two volumes can name the same member (a snapshot restored with its tags, a
 * volume tagged by hand); whoever held the member first keeps it. Among the volumes naming an (etcd
 * cluster, member) of cluster, in any zone, the holder is the attached one claimed first (attachment
 * .since, then id); every other volume naming that member becomes ineligible, with held_through and a
 * reason naming the holder. Whether held or not, each volume learns of a sibling that may hold data
 * (content not provably blank): such a volume is never formatted. -ENOMEM only. */
int volume_resolve_members(const Volume *v, size_t n, const char *cluster, char *const *etcd_clusters,
                           VolumeEligibility *e);

/* True when a and b are different volumes naming the same (etcd cluster, member) of the same
 * KubernetesCluster. */
bool volume_same_member(const Volume *a, const Volume *b);

/* Claims in the order they were made: earlier attachment.since (0 = unknown sorts last), then id. */
bool volume_claimed_before(const Volume *a, const Volume *b);
