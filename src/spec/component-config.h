/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Typed componentconfig for the control-plane components; each struct has a field table
 * (component-config.c) that carries the YAML key (kops' name where kops has one) and the command-line flag
 * of every field. Strings and lists are owned by the ClusterSpec. Values the builders derive from the rest
 * of the spec (etcd servers, images, the service-account issuer ...) are filled at build time when unset;
 * docs/components.md lists every key. */

#include "spec/field.h"

typedef struct KubeAPIServerConfig {
        char *image;       /* default registry.k8s.io/kube-apiserver:v<kubernetesVersion> */
        char *cpu_request; /* resources.requests.cpu */
        char *memory_request;
        OptInt log_level;
        char *bind_address;
        char *advertise_address;
        OptInt secure_port;
        OptBool permit_port_sharing;   /* SO_REUSEPORT; true with selfHosted (docs/pivot.md) */
        char **etcd_servers;           /* default from etcdClusters (main) */
        char **etcd_servers_overrides; /* default /events#... from the other etcd clusters */
        char *etcd_ca_file;
        char *etcd_cert_file;
        char *etcd_key_file;
        char *storage_backend;
        char *service_cluster_ip_range;
        char *service_node_port_range;
        char *authorization_mode;
        char **enable_admission_plugins;
        char **disable_admission_plugins;
        char *tls_cert_file;
        char *tls_private_key_file;
        char **tls_cipher_suites;
        char *tls_min_version;
        char *client_ca_file;
        char *kubelet_client_certificate;
        char *kubelet_client_key;
        char *kubelet_certificate_authority;
        char **kubelet_preferred_address_types;
        char **service_account_key_file; /* repeated flag */
        char *service_account_signing_key_file;
        char *service_account_issuer;
        char *service_account_jwks_uri;
        char **api_audiences;
        char *audit_log_path;
        OptInt audit_log_max_age;
        OptInt audit_log_max_backups;
        OptInt audit_log_max_size;
        char *audit_policy_file;
        char *audit_webhook_config_file;
        char *oidc_issuer_url;
        char *oidc_client_id;
        char *oidc_username_claim;
        char *oidc_username_prefix;
        char *oidc_groups_claim;
        char *oidc_groups_prefix;
        char *oidc_ca_file;
        OptBool allow_privileged;
        OptBool anonymous_auth;
        OptBool enable_bootstrap_token_auth;
        OptBool enable_profiling;
        char **requestheader_username_headers;
        char **requestheader_group_headers;
        char **requestheader_extra_headers_prefix;
        char *requestheader_client_ca_file;
        char **requestheader_allowed_names;
        char *proxy_client_cert_file;
        char *proxy_client_key_file;
        OptBool enable_aggregator_routing;
        char *encryption_provider_config;
        char **feature_gates;  /* map */
        char **runtime_config; /* map */
        OptDuration event_ttl;
        OptDuration request_timeout;
        OptInt min_request_timeout;
        OptInt max_requests_inflight;
        OptInt max_mutating_requests_inflight;
        OptEnum endpoint_reconciler_type;
} KubeAPIServerConfig;

/* The delegated authentication of kube-controller-manager and kube-scheduler (k8s.io/apiserver's
 * DelegatingAuthenticationOptions). With both CA files set a component never reads the
 * extension-apiserver-authentication ConfigMap, so it starts before the apiserver's authorizer has synced:
 * without them kube-controller-manager exits on the ConfigMap's "forbidden" and its kubelet backs off for
 * a minute after every master lost power (docs/components.md). The lists default to kubeAPIServer's. */
typedef struct DelegatedAuthentication {
        char *client_ca_file;
        char *requestheader_client_ca_file;
        char **requestheader_allowed_names;
        char **requestheader_username_headers;
        char **requestheader_group_headers;
        char **requestheader_extra_headers_prefix;
} DelegatedAuthentication;

typedef struct KubeControllerManagerConfig {
        char *image;
        char *cpu_request;
        char *memory_request;
        OptInt log_level;
        char *kubeconfig;
        char *authentication_kubeconfig;
        char *authorization_kubeconfig;
        DelegatedAuthentication delegated_authentication;
        char *bind_address;
        OptInt secure_port;
        OptBool permit_port_sharing; /* SO_REUSEPORT; true with selfHosted (docs/pivot.md) */
        OptInt insecure_port;        /* --port, 1.20 to 1.23 only; default 0 (off) */
        char *cluster_name;          /* default metadata.name */
        char *cluster_cidr;
        OptBool allocate_node_cidrs;
        OptBool configure_cloud_routes;
        char *service_cluster_ip_range; /* default kubeAPIServer.serviceClusterIPRange */
        char *cluster_signing_cert_file;
        char *cluster_signing_key_file;
        char *root_ca_file;
        char *service_account_private_key_file;
        OptBool use_service_account_credentials;
        OptBool leader_elect;
        OptBool enable_profiling;
        char **controllers;
        char **feature_gates; /* map */
        OptDuration node_monitor_grace_period;
        OptDuration node_monitor_period;
        OptDuration horizontal_pod_autoscaler_sync_period;
        OptDuration attach_detach_reconcile_sync_period;
        OptInt terminated_pod_gc_threshold;
        OptInt concurrent_deployment_syncs;
        OptInt concurrent_service_syncs;
        OptInt kube_api_qps;
        OptInt kube_api_burst;
} KubeControllerManagerConfig;

/* kube-scheduler 1.20 to 1.22 reading a file serves HTTP without authentication there; the default keeps it
 * on loopback (its bootstrap static pod; the self-hosted pods move the port: docs/components.md). */
#define KUBE_SCHEDULER_INSECURE_DEFAULT "127.0.0.1:10251"

typedef struct KubeSchedulerConfig {
        char *image;
        char *cpu_request;
        char *memory_request;
        OptInt log_level;
        char *kubeconfig;
        char *authentication_kubeconfig;
        char *authorization_kubeconfig;
        DelegatedAuthentication delegated_authentication;
        char *bind_address;
        OptInt secure_port;
        OptBool permit_port_sharing; /* SO_REUSEPORT; true with selfHosted (docs/pivot.md) */
        OptInt insecure_port;        /* --port, 1.20 to 1.23 only; default 0 (off) */
        char *healthz_bind_address;  /* the 1.20 to 1.22 file's unauthenticated server, --port's stand-in */
        char *metrics_bind_address;
        OptBool leader_elect;
        OptBool enable_profiling;
        char *config;
        char **feature_gates; /* map */
} KubeSchedulerConfig;

typedef enum ProxyMode {
        PROXY_MODE_IPTABLES,
        PROXY_MODE_IPVS,
        PROXY_MODE_NFTABLES,
        _PROXY_MODE_MAX,
} ProxyMode;

typedef struct KubeProxyConfig {
        OptBool enabled; /* default true; false renders no kube-proxy manifest */
        char *image;
        char *cpu_request;
        char *memory_request;
        OptInt log_level;
        char *kubeconfig;
        char *hostname_override;
        char *bind_address;
        char *cluster_cidr; /* default kubeControllerManager.clusterCIDR */
        OptEnum proxy_mode; /* ProxyMode */
        char *metrics_bind_address;
        char *healthz_bind_address;
        OptInt conntrack_max_per_core;
        OptInt conntrack_min;
        char *ipvs_scheduler;
        char **ipvs_exclude_cidrs;
        char **nodeport_addresses;
        OptInt oom_score_adj;
        char **feature_gates; /* map */
} KubeProxyConfig;

/* spec.kubelet.containerRuntime: the order of its names in the field table */
typedef enum KubeletContainerRuntime {
        KUBELET_RUNTIME_DOCKER,
        KUBELET_RUNTIME_REMOTE,
} KubeletContainerRuntime;

/* spec.kubelet: the KubeletConfiguration of every node's kubelet (components/kubelet.h), and the two flags
 * it keeps. Per-node facts (the node's name and address, the container runtime) are not here. */
typedef struct KubeletConfig {
        OptInt log_level;
        char *kubeconfig;      /* default /var/lib/kubelet/kubeconfig; the pki layout's with stateStore */
        char *static_pod_path; /* default /etc/kubernetes/manifests */
        OptDuration sync_frequency;
        OptDuration file_check_frequency;
        char *address;
        OptInt port;
        OptInt read_only_port; /* default 0 (off) */
        char *healthz_bind_address;
        OptInt healthz_port;
        char *tls_cert_file;
        char *tls_private_key_file;
        OptBool rotate_certificates;
        OptBool server_tls_bootstrap;
        char *client_ca_file;   /* default /srv/kubernetes/ca.crt; the pki layout's with stateStore */
        OptBool anonymous_auth; /* default false */
        OptBool authentication_webhook; /* default true */
        OptDuration authentication_webhook_cache_ttl;
        OptEnum authorization_mode; /* AlwaysAllow | Webhook (default) */
        OptEnum cgroup_driver;      /* cgroupfs | systemd */
        char *cgroup_root;
        OptBool fail_swap_on;
        char **cluster_dns;
        char *cluster_domain; /* default spec.clusterDNSDomain */
        char *resolv_conf;
        OptInt max_pods;
        char **eviction_hard; /* map */
        OptInt image_gc_high_threshold_percent;
        OptInt image_gc_low_threshold_percent;
        char **feature_gates; /* map */
        /* The node's runtime and directories: flags (1.20 has no file field for them). A kubelet the
         * init system starts could take them from the machine's own file; a managed kubelet in a pod has
         * only what its template and the node's kubelet.env say, so they are the cluster's here. */
        OptEnum container_runtime; /* KubeletContainerRuntime (1.20 to 1.26) */
        char *container_runtime_endpoint;
        char *pod_infra_container_image;
        char *root_dir;
        char *volume_plugin_dir;
        /* The managed kubelet (docs/kubelet-handoff.md): a DaemonSet of the self-hosted assets (the
         * pivot's with selfHosted, else applied by an operator) takes every node from the bootstrap
         * kubelet the init system starts; its image (default
         * registry.k8s.io/kubelet:v<kubernetesVersion>). Neither is a flag or a file field. */
        OptBool self_hosted;
        char *image;
        /* How long a new template of the managed kubelet's DaemonSet may leave a node's pod not Ready
         * before the masters roll it back (default 5m). */
        OptDuration rollout_deadline;
} KubeletConfig;

/* A feature gate's value as the binaries read it (Go's strconv.ParseBool: "true", "True", "1", "t" ...):
 * -EINVAL for anything else. */
int component_config_parse_bool(const char *s, bool *ret);

/* The field tables (component-config.c), referenced by the spec loader's table for spec.kubeAPIServer etc.
 */
extern const Field kube_apiserver_config_fields[];
extern const Field kube_controller_manager_config_fields[];
extern const Field kube_scheduler_config_fields[];
extern const Field kube_proxy_config_fields[];
extern const Field kubelet_config_fields[];
