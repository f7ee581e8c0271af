/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* kops' names and ports for etcd and the master volumes, each derived here and nowhere else: the spec takes
 * its port defaults from here, components/ its flags and pod names, dns/ the member names it publishes,
 * volumes/ the mount points and manifest paths. docs/components.md ("etcd (kops naming)") lists them.
 *
 * "main" is kops' "etcd", any other cluster X is "etcd-X": members etcd-a / etcd-X-a, pods etcd-server /
 * etcd-server-X, manifests etcd.manifest / etcd-X.manifest, data /var/etcd/data / /var/etcd/data-X. */

#include <stdbool.h>

#define ETCD_MAIN_CLUSTER       "main"
#define ETCD_EVENTS_CLUSTER     "events"
#define ETCD_BINARY             "etcd"
#define ETCD_KOPS_NAME          "etcd"
#define ETCD_POD_NAME           "etcd-server"
#define ETCD_DATA_DIR           "/var/etcd/data"
#define ETCD_RESTORE_DIR        "/var/etcd/restore"
#define ETCD_TOKEN_PREFIX       "etcd-cluster-token-"
#define ETCD_MAIN_CLIENT_PORT   4001
#define ETCD_MAIN_PEER_PORT     2380
#define ETCD_EVENTS_CLIENT_PORT 4002
#define ETCD_EVENTS_PEER_PORT   2381
#define ETCD_METRICS_PORT_SHIFT 4080 /* metrics on client port + 4080: 8081 main, 8082 events */
#define MANIFEST_SUFFIX         ".manifest"
#define MASTER_MOUNT_PREFIX     "master-"          /* a volume mounts at <mount root>/master-<volume id> */
#define VOLUME_MANIFEST_SUBDIR  "k8s.io/manifests" /* where a member's manifest lives on its volume */
#define INTERNAL_SUFFIX_PREFIX  "internal." /* dns.internalSuffix defaults to internal.<cluster name> */
#define API_LABEL               "api"
/* kube-apiserver's secure port unless kubeAPIServer.securePort says otherwise (kops' and kubeadm's 443,
 * https's default: the URLs leave it out) */
#define APISERVER_PORT_DEFAULT 443
/* The kubelet's directory (kubeadm's and kops': its state, its files) and static pods' directory */
#define KUBELET_DIR_DEFAULT             "/var/lib/kubelet"
#define KUBELET_STATIC_POD_PATH_DEFAULT "/etc/kubernetes/manifests"

bool etcd_cluster_is_main(const char *cluster);

/* kops' default client and peer ports: main 4001/2380, events 4002/2381; -ENOENT for any other cluster
 * (it must name its ports). */
int etcd_default_ports(const char *cluster, int *ret_client, int *ret_peer);

/* The functions below take cluster and member names that are RFC 1123 labels (else -EINVAL) and return a
 * new string (caller frees). */

/* "etcd" for main, "etcd-<cluster>" otherwise: the stem of member names and of the cluster token. */
int etcd_kops_cluster_name(const char *cluster, char **ret);
/* "<kops cluster name>-<member>" (etcd-a, etcd-events-a); -EINVAL if longer than one DNS label. */
int etcd_member_name(const char *cluster, const char *member, char **ret);
/* "<member name>.<internal suffix>" (the suffix a host name without the final dot). */
int etcd_member_dns_name(const char *cluster, const char *member, const char *internal_suffix, char **ret);
/* "etcd.manifest" for main, "etcd-<cluster>.manifest" otherwise. */
int etcd_manifest_file_name(const char *cluster, char **ret);
/* "etcd-server" for main, "etcd-server-<cluster>" otherwise. */
int etcd_pod_name(const char *cluster, char **ret);
/* "/var/etcd/data" for main, "/var/etcd/data-<cluster>" otherwise (in the container). */
int etcd_data_dir(const char *cluster, char **ret);
/* "/var/etcd/restore" for main, "/var/etcd/restore-<cluster>" otherwise: where a restore's snapshot waits,
 * on the volume (under its mount) and in the restore's init container alike (docs/etcd-restore.md). */
int etcd_restore_dir(const char *cluster, char **ret);
/* "etcd-cluster-token-<kops cluster name>". */
int etcd_cluster_token(const char *cluster, char **ret);

/* "api.<domain>": the API server's name, below the internal suffix and below the cluster name (domain a
 * host name without the final dot). */
int api_dns_name(const char *domain, char **ret);
/* "https://api.<domain>", with ":<port>" unless it is https's own (APISERVER_PORT_DEFAULT). NULL when out
 * of memory. */
char *api_server_url(const char *domain, int port);

/* "<mount_root>/master-<volume id>" and "<mount path>/k8s.io/manifests/<manifest file name>": NULL when out
 * of memory or the cluster name is not a label. */
char *master_mount_path(const char *mount_root, const char *volume_id);
char *etcd_volume_manifest_path(const char *mount_path, const char *cluster);
