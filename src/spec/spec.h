/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The typed cluster spec (ARCHITECTURE.md, "The cluster spec"). Loaded by spec_load(); every string is
 * owned by the spec and freed by cluster_spec_free(). */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "basic/macro.h"
#include "spec/component-config.h"
#include "spec/field.h"

/* The providers that exist: the spec accepts exactly these, and each has its table in a registry indexed by
 * this enum (cloud/providers.h, dns/dns-provider.h; a static assertion there ties each registry to its
 * enum). A new one is a value here, its name in spec.c, and its table. */
typedef enum CloudProvider {
        CLOUD_LOCAL,
        CLOUD_AWS,
        CLOUD_GCE,
        _CLOUD_MAX,
        _CLOUD_INVALID = -EINVAL,
} CloudProvider;

typedef enum DnsProviderKind {
        DNS_PROVIDER_NONE,
        DNS_PROVIDER_HOSTS,
        DNS_PROVIDER_RFC2136,
        DNS_PROVIDER_ROUTE53,
        DNS_PROVIDER_CLOUDDNS,
        _DNS_PROVIDER_MAX,
        _DNS_PROVIDER_INVALID = -EINVAL,
} DnsProviderKind;

#include "spec/spec-dns.h"

/* spec.networking.provider: who gives pods their network. kubenet: protokube, on every node
 * (docs/workers.md, "Pod networking"): the standard bridge and host-local CNI plugins on the node's podCIDR,
 * and a route to every other node's podCIDR via its internal address. none: the operator's CNI (nothing is
 * written). */
typedef enum NetworkingProvider {
        NETWORKING_NONE,
        NETWORKING_KUBENET,
        _NETWORKING_MAX,
        _NETWORKING_INVALID = -EINVAL,
} NetworkingProvider;

typedef struct NetworkingSpec {
        OptEnum provider;   /* NetworkingProvider, default none */
        char *cni_conf_dir; /* where the container runtime reads CNI networks; default /etc/cni/net.d */
        char *bridge;       /* the pods' bridge on each node; default cbr0 (kubenet's) */
} NetworkingSpec;

/* The key types of spec.pki: the same two values, in the same order and with the same names, as pki's
 * PkiKeyType (pki/pki-key.h), which the spec cannot include (layers); the pass maps one onto the other. */
typedef enum SpecKeyType {
        SPEC_KEY_ECDSA_P256,
        SPEC_KEY_RSA_2048,
        _SPEC_KEY_TYPE_MAX,
        _SPEC_KEY_TYPE_INVALID = -EINVAL,
} SpecKeyType;

/* The CN of the front-proxy client certificate, which the PKI-managed default of
 * kubeAPIServer.requestheaderAllowedNames names (kubeadm's). */
#define SPEC_FRONT_PROXY_CLIENT_CN "front-proxy-client"

/* spec.pki: how protokube issues the node's certificates; used only when spec.stateStore is set. */
typedef struct PkiSpec {
        char *dir;                        /* absolute; default PKI_DIR_DEFAULT (model/pki-layout.h) */
        OptEnum key_type;                 /* SpecKeyType of the CAs and leaves, default ecdsa-p256 */
        OptEnum service_account_key_type; /* SpecKeyType, default rsa-2048 */
        OptDuration ca_lifetime;          /* default 87600h (10 years) */
        OptDuration certificate_lifetime; /* default 8760h (1 year); >= 1h and < ca_lifetime */
        /* The kubelets' certificates signed from their CSRs (the join step): unset, certificate_lifetime;
         * 5m..876000h (a kubelet renews at 70-90% of it: short ones show a renewal in a demo). */
        OptDuration kubelet_certificate_lifetime;
} PkiSpec;

/* The lifetime of a kubelet's certificate signed from its CSR (spec.pki). */
usec_t spec_pki_kubelet_lifetime(const PkiSpec *p);

/* Snapshots of an etcd cluster into the state store (docs/etcd-backups.md); only with spec.stateStore. */
typedef struct EtcdBackupSpec {
        OptDuration interval;   /* default 15m, 1m..24h */
        OptInt keep_last;       /* the newest N; default 10 */
        OptInt keep_daily_days; /* and the newest of each of the last D days; default 7 */
} EtcdBackupSpec;

typedef struct EtcdClusterSpec {
        char *name;  /* "main", "events" */
        char *image; /* container image */
        /* The wanted etcd version, one of model/etcd-versions.h's: the version key, else the image's tag
         * ("registry.k8s.io/etcd:3.5.16-0" -> "3.5.16"); always set in a loaded spec. */
        char *version;
        /* A version below the cluster version etcd runs may be wanted: the masters restore the backup taken
         * before the upgrade (every later write lost); otherwise refused (docs/etcd-versions.md) */
        OptBool allow_downgrade;
        OptInt client_port; /* default 4001 main, 4002 events, else required */
        OptInt peer_port;   /* default 2380 main, 2381 events, else required */
        /* NULL = plain http; else ca.crt (client CAs), peer-ca.crt, server.crt/key, peer.crt/key live there
         * (model/pki-layout.h); defaults to the pki layout's etcd-<name> when spec.stateStore is set */
        char *tls_dir;
        EtcdBackupSpec backups;
} EtcdClusterSpec;

typedef struct ClusterSpec {
        char *path; /* file it was loaded from, for messages */
        char *api_version;
        char *kind;
        char *name;    /* metadata.name: the cluster name, DNS names hang off it */
        OptEnum cloud; /* CloudProvider */
        DnsSpec dns;
        StructList etcd_clusters; /* of EtcdClusterSpec */
        char *kubernetes_version;
        /* "file:///ABS/DIR", "s3://BUCKET[/PREFIX][?region=REGION]" or "gs://BUCKET[/PREFIX]"; NULL =
         * protokube manages no certificates. When set, the loader points every certificate, key and
         * kubeconfig path the user left unset (and each etcd cluster's tlsDir) into the pki layout under
         * pki.dir (docs/spec.md, "Certificates"). */
        char *state_store;
        PkiSpec pki;
        char *cluster_dns_domain; /* default cluster.local */
        /* Kubernetes deploys Kubernetes (docs/pivot.md): protokube pivots the control plane from static pods
         * to DaemonSets and Deployments. Needs stateStore; defaults permitPortSharing to true. */
        OptBool self_hosted;
        KubeAPIServerConfig kube_apiserver;
        KubeControllerManagerConfig kube_controller_manager;
        KubeSchedulerConfig kube_scheduler;
        KubeProxyConfig kube_proxy;
        KubeletConfig kubelet;
        NetworkingSpec networking;
        /* A node's copy only (no key of the YAML, never freed with the spec): the directory the node's
         * components' configuration files go under (--config-dir; NULL: /var/lib), as a node's copy carries
         * its manifest directory in kubelet.staticPodPath. */
        const char *node_config_dir;
} ClusterSpec;

/* Loads and validates path. On a spec error returns PK_ESPEC and, if ret_errors, every error as
 * "FILE:LINE:COL: message" (caller frees with strv_free). I/O errors return -errno. */
int cluster_spec_load(const char *path, ClusterSpec **ret, char ***ret_errors);
/* Same, from memory; name is used in messages in place of a file name. */
int cluster_spec_load_string(const char *name, const char *text, size_t len, ClusterSpec **ret,
                             char ***ret_errors);
ClusterSpec *cluster_spec_free(ClusterSpec *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(ClusterSpec *, cluster_spec_free)

/* Convenience accessors with the defaults applied. */
static inline const EtcdClusterSpec *cluster_spec_etcd(const ClusterSpec *s, size_t i) {
        return &((const EtcdClusterSpec *)s->etcd_clusters.items)[i];
}
const EtcdClusterSpec *cluster_spec_find_etcd(const ClusterSpec *s, const char *name);

/* protokube issues the node's certificates (spec.stateStore is set). */
static inline bool cluster_spec_pki_managed(const ClusterSpec *s) {
        return s && s->state_store;
}
/* kubeAPIServer.serviceClusterIPRange as set (the loader's default is kops' 100.64.0.0/13), else
 * "10.0.0.0/24", kube-apiserver 1.20's own default when the flag is absent (a spec made in code). The first
 * address of the range is the kubernetes service's, which the apiserver's certificate must name. */
const char *cluster_spec_service_range(const ClusterSpec *s);

const char *cloud_provider_to_string(CloudProvider p);
CloudProvider cloud_provider_from_string(const char *s);
const char *dns_provider_kind_to_string(DnsProviderKind k);
DnsProviderKind dns_provider_kind_from_string(const char *s);
/* "ecdsa-p256", "rsa-2048": the names pki_key_type_to_string() uses. */
const char *spec_key_type_to_string(SpecKeyType t);
SpecKeyType spec_key_type_from_string(const char *s);
