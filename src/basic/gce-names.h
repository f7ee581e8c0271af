/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Google Cloud's names and kops' encodings of them: one rule each, here, for the spec's check, the gs://
 * store, the GCE client and the volume provider (the spec's room cannot include the client's). */

#include <stdbool.h>
#include <stddef.h>

/* The labels kops puts on a master's etcd disks (kops, upup/pkg/fi/cloudup/gce): the cluster's name with
 * every '.' made '-' (SafeClusterName: not encoded, since Kubernetes' own GCE code reads this label too), a
 * role label per role, and per etcd cluster "k8s-io-etcd-<name>" = gce_label_encode("<me>/<m1>,<m2>,...").
 */
#define GCE_LABEL_CLUSTER     "k8s-io-cluster-name"
#define GCE_LABEL_ROLE_PREFIX "k8s-io-role-"
#define GCE_LABEL_ETCD_PREFIX "k8s-io-etcd-"
#define GCE_LABEL_MAX         63

/* kops' EncodeGCELabel: [a-z0-9] kept, every other byte as '-' and two lowercase hex digits ("a/a,b" ->
 * "a-2fa-2cb"). *ret: caller frees. */
int gce_label_encode(const char *s, char **ret);
/* kops' DecodeGCELabel: '-' and two hex digits back to the byte, everything else as it is. PK_EMALFORMED for
 * a '-' not followed by two hex digits, a NUL byte or '+' (Go's QueryUnescape would read it as a space;
 * GCE's label alphabet has none). */
int gce_label_decode(const char *s, char **ret);
/* kops' SafeClusterName: '.' -> '-' ("test.example.com" -> "test-example-com"). */
int gce_safe_cluster_name(const char *cluster, char **ret);

/* A resource name (disk, instance, device, managed zone, operation): RFC 1035, [a-z]([-a-z0-9]*[a-z0-9])?,
 * at most 63. These become URL path segments and /dev/disk/by-id names, so nothing else is accepted. */
bool gce_name_valid(const char *s);
/* A project id: 6-30 of [a-z0-9-], starting with a letter, not ending with '-' (Resource Manager's rule). */
bool gce_project_valid(const char *s);
/* A zone: "<region>-<letter>" as "europe-west1-b"; a region is a name without the last "-<x>". */
bool gce_zone_valid(const char *s);
/* A label key (1-63 of [a-z0-9_-], starting with a letter) or value (0-63 of [a-z0-9_-]): the lowercase
 * ASCII part of GCE's label alphabet, the only one kops writes. */
bool gce_label_key_valid(const char *s);
bool gce_label_value_valid(const char *s);
/* A Cloud Storage bucket name (Cloud Storage, "Bucket naming"): 3-63 of [a-z0-9_.-] (up to 222 with dots,
 * each dot-separated part at most 63), starting and ending with a letter or digit, not an IPv4 address, not
 * starting with "goog". len: the name's length in b. */
bool gce_bucket_name_valid(const char *b, size_t len);
