/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Where a master's certificates, keys and kubeconfigs live on the node (docs/pki.md, "On the node"): the
 * spec takes its default file paths from here, the components mount these directories, and the certificate
 * planner (certs/) issues into them. One directory per consumer, so that a static pod mounts exactly the
 * files it uses and nothing else:
 *
 *   <pki dir>/etcd-<cluster>/        ca.crt (the client CAs of every etcd cluster), peer-ca.crt,
 *                                    server.{crt,key}, peer.{crt,key}  (only for a member this node holds)
 *   <pki dir>/kube-apiserver/        ca.crt (cluster CA), apiserver.{crt,key}, etcd-ca.crt,
 *                                    etcd-client.{crt,key}, kubelet-client.{crt,key}, front-proxy-ca.crt,
 *                                    front-proxy-client.{crt,key}, service-account.pub, service-account.key
 *   <pki dir>/kube-controller-manager/  kubeconfig, client.{crt,key}, ca.crt, front-proxy-ca.crt,
 *                                    service-account.key
 *   <pki dir>/kube-scheduler/        kubeconfig, client.{crt,key}, ca.crt, front-proxy-ca.crt
 *   <pki dir>/kube-proxy/            kubeconfig, client.{crt,key}, ca.crt
 *   <pki dir>/admin/                 kubeconfig, client.{crt,key}, ca.crt  (the operator's, root only)
 *   <pki dir>/kubelet/               kubeconfig, client.{crt,key}, ca.crt  (the node's: system:node:<name>)
 *   <pki dir>/protokube/             kubeconfig, client.{crt,key}, ca.crt  (protokube's own API client,
 *                                    O system:masters: docs/pki.md; root only)
 *
 * A pair NAME is NAME.crt + NAME.key, replaced as one (pki/pki-files.h): a pod must mount the directory. */

#define PKI_DIR_DEFAULT "/srv/kubernetes"

/* Directories under the pki dir; etcd's is PKI_ETCD_DIR_PREFIX + the etcd cluster's name. */
#define PKI_ETCD_DIR_PREFIX        "etcd-"
#define PKI_APISERVER_DIR          "kube-apiserver"
#define PKI_CONTROLLER_MANAGER_DIR "kube-controller-manager"
#define PKI_SCHEDULER_DIR          "kube-scheduler"
#define PKI_PROXY_DIR              "kube-proxy"
#define PKI_ADMIN_DIR              "admin"
#define PKI_KUBELET_DIR            "kubelet"
#define PKI_PROTOKUBE_DIR          "protokube"

/* Files (plain: the CA certificates, the service-account key) */
#define PKI_CA_FILE                "ca.crt" /* the signer of the dir's peers: see above */
#define PKI_ETCD_PEER_CA_FILE      "peer-ca.crt"
#define PKI_APISERVER_ETCD_CA_FILE "etcd-ca.crt"
#define PKI_FRONT_PROXY_CA_FILE    "front-proxy-ca.crt"
#define PKI_SA_PUBLIC_FILE         "service-account.pub"
#define PKI_SA_KEY_FILE            "service-account.key"
#define PKI_KUBECONFIG_FILE        "kubeconfig"

/* Pairs: NAME.crt and NAME.key */
#define PKI_CERT_SUFFIX                ".crt"
#define PKI_KEY_SUFFIX                 ".key"
#define PKI_ETCD_SERVER_PAIR           "server"
#define PKI_ETCD_PEER_PAIR             "peer"
#define PKI_APISERVER_PAIR             "apiserver"
#define PKI_APISERVER_ETCD_CLIENT_PAIR "etcd-client"
#define PKI_APISERVER_KUBELET_PAIR     "kubelet-client"
#define PKI_FRONT_PROXY_CLIENT_PAIR    "front-proxy-client"
#define PKI_CLIENT_PAIR                "client" /* a kubeconfig's client certificate */

/* "<pki dir>/<subdir>" and "<pki dir>/<subdir>/<file>" (file may be a pair's name + suffix); NULL when out
 * of memory. pki_dir is absolute; a trailing slash is tolerated. */
char *pki_layout_dir(const char *pki_dir, const char *subdir);
char *pki_layout_file(const char *pki_dir, const char *subdir, const char *file);
/* "<pki dir>/etcd-<cluster>"; NULL when out of memory or cluster is not a DNS label. */
char *pki_layout_etcd_dir(const char *pki_dir, const char *cluster);
