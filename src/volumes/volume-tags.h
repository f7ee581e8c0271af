/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The kops volume tags (ARCHITECTURE.md, "Conventions kept from kops"): KubernetesCluster=<C>,
 * k8s.io/role/master=1, k8s.io/etcd/<cluster>=<me>/<all>. A tag that does not parse makes the volume
 * ineligible: fail safe, never guess a member. */

#include <stdbool.h>

#include "volumes/volume.h"

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
} VolumeEligibility;

void volume_eligibility_done(VolumeEligibility *e);

/* Can this node use v for etcd: tagged for cluster, a master volume, in zone (NULL: any zone), exactly
 * one well-formed etcd tag naming one of etcd_clusters (NULL: any). Fills ret in every case (eligible or
 * not); returns -ENOMEM only. */
int volume_classify(const Volume *v, const char *cluster, const char *zone, char *const *etcd_clusters,
                    VolumeEligibility *ret);
