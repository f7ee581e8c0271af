/* SPDX-License-Identifier: Apache-2.0 */
#include "spec/component-config.h"
#include "model/conventions.h"

#include <arpa/inet.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/parse-util.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "spec/kube-version.h"
#include "spec/spec-check.h"

/* One row per field: YAML key, flag, default. Paths are kops' layout (/srv/kubernetes/<component>/...,
 * /var/lib/<component>/kubeconfig) so certificates provisioned for kops clusters keep working. List and map
 * defaults, and defaults that depend on other parts of the spec, are filled by the builders
 * (src/components/), because the loader applies only scalar defaults. */

/* Values that end up in a manifest are checked here, so a bad one is a spec error with its line, not an
 * invalid pod the kubelet drops. */
static bool path_is_plain(const char *s) {
        return s[0] == '/' && !strstr(s, "/..") && !strpbrk(s, " \t\n\r");
}

static int validate_path(const void *value, char **ret_message) {
        if (path_is_plain(*(char *const *)value))
                return 0;
        *ret_message = strdup("must be an absolute path without '..' or spaces");
        return -EINVAL;
}

/* A CRI socket as the kubelet's flag takes it: unix:// and an absolute path. */
static int validate_unix_endpoint(const void *value, char **ret_message) {
        const char *s = *(char *const *)value;
        const char *path = startswith(s, "unix://");
        if (path && path_is_plain(path))
                return 0;
        *ret_message = strdup("must be unix:// and an absolute path without '..' or spaces");
        return -EINVAL;
}

/* Kubernetes resource.Quantity: a decimal number with an optional binary (Ki..Ei), decimal (n u m k M G T P
 * E) or exponent suffix: "100m", "512Mi", "1.5", "1e3". */
static int validate_quantity(const void *value, char **ret_message) {
        const char *s = *(char *const *)value, *p = s;
        size_t digits = 0;
        if (*p == '+' || *p == '-')
                p++;
        digits = strspn(p, "0123456789");
        p += digits;
        if (*p == '.') {
                size_t frac = strspn(p + 1, "0123456789");
                digits += frac;
                p += 1 + frac;
        }
        if (digits > 0 && strlen(s) < 64) {
                static const char *const suffixes[] = { "",  "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u",
                                                        "m", "k",  "M",  "G",  "T",  "P",  "E",  NULL };
                for (size_t i = 0; suffixes[i]; i++)
                        if (streq(p, suffixes[i]))
                                return 0;
                if (*p == 'e' || *p == 'E') {
                        const char *x = p + 1 + (p[1] == '+' || p[1] == '-');
                        size_t n = strspn(x, "0123456789");
                        if (n > 0 && x[n] == 0)
                                return 0;
                }
        }
        *ret_message = strdup("must be a Kubernetes quantity (e.g. 100m, 512Mi)");
        return -EINVAL;
}

/* "address:port" with a port in 1..65535 ("0.0.0.0:10256", "[::]:10256"). */
static int validate_host_port(const void *value, char **ret_message) {
        const char *s = *(char *const *)value, *colon = strrchr(s, ':');
        uint16_t port;
        if (colon && colon != s && safe_atou16(colon + 1, &port) >= 0 && port > 0)
                return 0;
        *ret_message = strdup("must be address:port");
        return -EINVAL;
}

/* validate_host_port() for a server of which every instance takes its own port (FIELD_INSTANCE_PORT). */
static int validate_instance_host_port(const void *value, char **ret_message) {
        const char *s = *(char *const *)value, *colon = strrchr(s, ':');
        uint16_t port;
        if (colon && colon != s && safe_atou16(colon + 1, &port) >= 0 && port > 0 &&
            port <= FIELD_INSTANCE_PORT_MAX)
                return 0;
        *ret_message =
            strprintf("must be address:port with a port of at most %d (the self-hosted pod takes the "
                      "port + %d, its checkpoint + %d)",
                      FIELD_INSTANCE_PORT_MAX, FIELD_INSTANCE_PORT_STEP, 2 * FIELD_INSTANCE_PORT_STEP);
        return -EINVAL;
}

/* Lists and maps are joined with ',' (and '=') into one flag, so their elements must not contain them. */
static int validate_flag_list(const void *value, char **ret_message) {
        STRV_FOREACH (e, *(char **const *)value)
                if (isempty(*e) || strchr(*e, ',')) {
                        *ret_message = strdup("elements must be non-empty and must not contain ','");
                        return -EINVAL;
                }
        return 0;
}

static int validate_flag_map(const void *value, char **ret_message) {
        char **l = *(char **const *)value;
        for (size_t i = 0; l && l[i]; i++)
                if (isempty(l[i]) || strpbrk(l[i], i % 2 == 0 ? ",=" : ",")) {
                        *ret_message =
                            strdup("keys must be non-empty without ',' or '=', values without ','");
                        return -EINVAL;
                }
        return 0;
}

/* The spellings Go's strconv.ParseBool takes, which is how the binaries read a feature gate's value (flag
 * and file alike); anything else keeps the component from starting. */
static const char *const go_bool_true[] = { "1", "t", "T", "TRUE", "true", "True", NULL };
static const char *const go_bool_false[] = { "0", "f", "F", "FALSE", "false", "False", NULL };

int component_config_parse_bool(const char *s, bool *ret) {
        if (s && strv_contains((char **)go_bool_true, s)) {
                *ret = true;
                return 0;
        }
        if (s && strv_contains((char **)go_bool_false, s)) {
                *ret = false;
                return 0;
        }
        return -EINVAL;
}

static int validate_feature_gates(const void *value, char **ret_message) {
        char **l = *(char **const *)value;
        bool b;
        int r = validate_flag_map(value, ret_message);
        if (r < 0)
                return r;
        for (size_t i = 1; l && i < strv_length(l); i += 2)
                if (component_config_parse_bool(l[i], &b) < 0) {
                        char e[SPEC_ECHO_MAX];
                        *ret_message =
                            strprintf("%s: %s is not true or false", l[i - 1], spec_echo(e, l[i]));
                        return -EINVAL;
                }
        return 0;
}

/* An IP address literal (v4 or v6): the kubelet's addresses and DNS servers. */
static int validate_ip(const char *s, char **ret_message) {
        unsigned char a[16];
        char e[SPEC_ECHO_MAX];
        if (s && (inet_pton(AF_INET, s, a) == 1 || inet_pton(AF_INET6, s, a) == 1))
                return 0;
        *ret_message = strprintf("%s is not an IP address", spec_echo(e, s ?: ""));
        return -EINVAL;
}

static int validate_ip_address(const void *value, char **ret_message) {
        return validate_ip(*(char *const *)value, ret_message);
}

static int validate_ip_list(const void *value, char **ret_message) {
        STRV_FOREACH (e, *(char **const *)value) {
                int r = validate_ip(*e, ret_message);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int validate_dns_domain(const void *value, char **ret_message) {
        return spec_check_dns_name(value, ret_message);
}

static int validate_path_list(const void *value, char **ret_message) {
        STRV_FOREACH (e, *(char **const *)value) {
                int r = validate_path(e, ret_message);
                if (r < 0)
                        return r;
        }
        return 0;
}

#define VALIDATED_STR(T, m, key, fl, def, check, h, ...)                                 \
        {                                                                                \
                .name = key, .type = FIELD_STRING, .offset = offsetof(T, m), .flag = fl, \
                .default_value = def, .validate = check, .help = h, __VA_ARGS__          \
        }
#define PATH(T, m, key, fl, def, h, ...) VALIDATED_STR(T, m, key, fl, def, validate_path, h, __VA_ARGS__)
#define QUANTITY(T, m, key, fl, def, h, ...) \
        VALIDATED_STR(T, m, key, fl, def, validate_quantity, h, __VA_ARGS__)
#define HOSTPORT(T, m, key, fl, def, h, ...) \
        VALIDATED_STR(T, m, key, fl, def, validate_host_port, h, __VA_ARGS__)

#define STR(T, m, key, fl, def, h, ...)                                                  \
        {                                                                                \
                .name = key, .type = FIELD_STRING, .offset = offsetof(T, m), .flag = fl, \
                .default_value = def, .help = h, __VA_ARGS__                             \
        }
#define BOOL(T, m, key, fl, def, h, ...)                                               \
        {                                                                              \
                .name = key, .type = FIELD_BOOL, .offset = offsetof(T, m), .flag = fl, \
                .default_value = def, .help = h, __VA_ARGS__                           \
        }
#define INT(T, m, key, fl, def, lo, hi, h, ...)                                                             \
        {                                                                                                   \
                .name = key, .type = FIELD_INT, .offset = offsetof(T, m), .flag = fl, .default_value = def, \
                .min = lo, .max = hi, .help = h, __VA_ARGS__                                                \
        }
#define DURATION(T, m, key, fl, def, h, ...)                                               \
        {                                                                                  \
                .name = key, .type = FIELD_DURATION, .offset = offsetof(T, m), .flag = fl, \
                .default_value = def, .help = h, __VA_ARGS__                               \
        }
#define LIST(T, m, key, fl, h, ...)                                                    \
        {                                                                              \
                .name = key, .type = FIELD_STRV, .offset = offsetof(T, m), .flag = fl, \
                .validate = validate_flag_list, .help = h, __VA_ARGS__                 \
        }
#define LIST_REPEAT(T, m, key, fl, h, ...)                                                         \
        {                                                                                          \
                .name = key, .type = FIELD_STRV, .offset = offsetof(T, m), .flag = fl,             \
                .flags = FIELD_FLAG_REPEAT, .validate = validate_path_list, .help = h, __VA_ARGS__ \
        }
#define MAP(T, m, key, fl, h, ...)                                                    \
        {                                                                             \
                .name = key, .type = FIELD_MAP, .offset = offsetof(T, m), .flag = fl, \
                .validate = validate_flag_map, .help = h, __VA_ARGS__                 \
        }
/* A list whose elements only some Kubernetes versions know (admission plugins). */
#define GATED_LIST(T, m, key, fl, gates, h, ...)                                             \
        {                                                                                    \
                .name = key, .type = FIELD_STRV, .offset = offsetof(T, m), .flag = fl,       \
                .validate = validate_flag_list, .k8s_values = &gates, .help = h, __VA_ARGS__ \
        }
#define PORT(T, m, key, fl, def, h, ...) INT(T, m, key, fl, def, 1, 65535, h, __VA_ARGS__)
#define LOG_LEVEL(T)                     INT(T, log_level, "logLevel", "v", "2", 0, 10, "klog verbosity")
#define IMAGE(T)                                                                                     \
        STR(T, image, "image", NULL, NULL, "container image; default from kubernetesVersion"),       \
            QUANTITY(T, cpu_request, "cpuRequest", NULL, NULL, "resources.requests.cpu (quantity)"), \
            QUANTITY(T, memory_request, "memoryRequest", NULL, NULL,                                 \
                     "resources.requests.memory (quantity)")
/* The gate names are checked against kubernetesVersion: the binaries refuse to start on a name they do not
 * know ("unrecognized feature gate"). */
#define FEATURE_GATES(T, ...)                                                                               \
        {                                                                                                   \
                .name = "featureGates", .type = FIELD_MAP, .offset = offsetof(T, feature_gates),            \
                .flag = "feature-gates", .validate = validate_feature_gates,                                \
                .k8s_values = &kube_feature_gates, .help = "feature gates: name -> true|false", __VA_ARGS__ \
        }
/* In a configuration file featureGates is a map of bools. */
#define FEATURE_GATES_IN_FILE(T) \
        FEATURE_GATES(T, .file_field = "featureGates", .flags = FIELD_FILE_BOOL_VALUES)
/* The insecure HTTP port of kube-controller-manager and kube-scheduler: 1.20 serves it on 0.0.0.0:10252 and
 * :10251 without authentication unless --port=0 (kubeadm's manifests set that); the flag is gone in 1.24. */
#define INSECURE_PORT(T)                                                                              \
        {                                                                                             \
                .name = "insecurePort", .type = FIELD_INT, .offset = offsetof(T, insecure_port),      \
                .flag = "port", .default_value = "0", .min = 0, .max = 65535, .k8s = { .until = 23 }, \
                .help = "unauthenticated HTTP port, 0 = off (Kubernetes 1.20 to 1.23)"                \
        }

#define A KubeAPIServerConfig
static const char *const endpoint_reconciler_types[] = { "lease", "none", NULL };

const Field kube_apiserver_config_fields[] = {
        IMAGE(A),
        LOG_LEVEL(A),
        STR(A, bind_address, "bindAddress", "bind-address", "0.0.0.0", "address to serve HTTPS on"),
        STR(A, advertise_address, "advertiseAddress", "advertise-address", NULL,
            "address advertised to members"),
        PORT(A, secure_port, "securePort", "secure-port", XSTRINGIFY(APISERVER_PORT_DEFAULT), "HTTPS port"),
        BOOL(A, permit_port_sharing, "permitPortSharing", "permit-port-sharing", NULL,
             "share the port with SO_REUSEPORT; default true with selfHosted"),
        LIST(A, etcd_servers, "etcdServers", "etcd-servers", "etcd URLs; default from etcdClusters main"),
        LIST(A, etcd_servers_overrides, "etcdServersOverrides", "etcd-servers-overrides",
             "per-resource etcd servers; default /events#<events cluster>"),
        PATH(A, etcd_ca_file, "etcdCAFile", "etcd-cafile", NULL, "CA of etcd; default from etcd tlsDir"),
        PATH(A, etcd_cert_file, "etcdCertFile", "etcd-certfile", NULL, "client certificate for etcd"),
        PATH(A, etcd_key_file, "etcdKeyFile", "etcd-keyfile", NULL, "client key for etcd"),
        STR(A, storage_backend, "storageBackend", "storage-backend", "etcd3", "storage backend"),
        STR(A, service_cluster_ip_range, "serviceClusterIPRange", "service-cluster-ip-range",
            "100.64.0.0/13", "CIDR of service cluster IPs"),
        STR(A, service_node_port_range, "serviceNodePortRange", "service-node-port-range", NULL,
            "port range of NodePort services"),
        STR(A, authorization_mode, "authorizationMode", "authorization-mode", "Node,RBAC",
            "comma-separated authorizers"),
        GATED_LIST(A, enable_admission_plugins, "enableAdmissionPlugins", "enable-admission-plugins",
                   kube_admission_plugins, "admission plugins to enable; default kops' list"),
        GATED_LIST(A, disable_admission_plugins, "disableAdmissionPlugins", "disable-admission-plugins",
                   kube_admission_plugins, "admission plugins to disable"),
        PATH(A, tls_cert_file, "tlsCertFile", "tls-cert-file", "/srv/kubernetes/kube-apiserver/server.crt",
             "serving certificate"),
        PATH(A, tls_private_key_file, "tlsPrivateKeyFile", "tls-private-key-file",
             "/srv/kubernetes/kube-apiserver/server.key", "serving key"),
        LIST(A, tls_cipher_suites, "tlsCipherSuites", "tls-cipher-suites", "allowed TLS cipher suites"),
        STR(A, tls_min_version, "tlsMinVersion", "tls-min-version", NULL, "VersionTLS12 | VersionTLS13"),
        PATH(A, client_ca_file, "clientCAFile", "client-ca-file", "/srv/kubernetes/ca.crt",
             "CA of client certificates"),
        PATH(A, kubelet_client_certificate, "kubeletClientCertificate", "kubelet-client-certificate",
             "/srv/kubernetes/kube-apiserver/kubelet-api.crt", "client certificate for kubelets"),
        PATH(A, kubelet_client_key, "kubeletClientKey", "kubelet-client-key",
             "/srv/kubernetes/kube-apiserver/kubelet-api.key", "client key for kubelets"),
        PATH(A, kubelet_certificate_authority, "kubeletCertificateAuthority",
             "kubelet-certificate-authority", NULL, "CA of kubelet serving certificates"),
        LIST(A, kubelet_preferred_address_types, "kubeletPreferredAddressTypes",
             "kubelet-preferred-address-types", "default InternalIP,Hostname,ExternalIP"),
        LIST_REPEAT(A, service_account_key_file, "serviceAccountKeyFile", "service-account-key-file",
                    "public keys of service-account tokens (one flag each)"),
        PATH(A, service_account_signing_key_file, "serviceAccountSigningKeyFile",
             "service-account-signing-key-file", "/srv/kubernetes/kube-apiserver/service-account.key",
             "key that signs service-account tokens"),
        STR(A, service_account_issuer, "serviceAccountIssuer", "service-account-issuer", NULL,
            "default https://api.internal.<cluster>"),
        STR(A, service_account_jwks_uri, "serviceAccountJWKSURI", "service-account-jwks-uri", NULL,
            "JWKS URI in the discovery document"),
        LIST(A, api_audiences, "apiAudiences", "api-audiences", "default kubernetes.svc.default"),
        STR(A, audit_log_path, "auditLogPath", "audit-log-path", NULL, "audit log file; - for stdout"),
        INT(A, audit_log_max_age, "auditLogMaxAge", "audit-log-maxage", NULL, 0, 100000, "days to keep"),
        INT(A, audit_log_max_backups, "auditLogMaxBackups", "audit-log-maxbackup", NULL, 0, 100000,
            "files to keep"),
        INT(A, audit_log_max_size, "auditLogMaxSize", "audit-log-maxsize", NULL, 0, 100000, "MB per file"),
        PATH(A, audit_policy_file, "auditPolicyFile", "audit-policy-file", NULL, "audit policy"),
        PATH(A, audit_webhook_config_file, "auditWebhookConfigFile", "audit-webhook-config-file", NULL,
             "audit webhook kubeconfig"),
        STR(A, oidc_issuer_url, "oidcIssuerURL", "oidc-issuer-url", NULL, "OIDC issuer (https)"),
        STR(A, oidc_client_id, "oidcClientID", "oidc-client-id", NULL, "OIDC client ID"),
        STR(A, oidc_username_claim, "oidcUsernameClaim", "oidc-username-claim", NULL,
            "JWT claim for the user"),
        STR(A, oidc_username_prefix, "oidcUsernamePrefix", "oidc-username-prefix", NULL, "user name prefix"),
        STR(A, oidc_groups_claim, "oidcGroupsClaim", "oidc-groups-claim", NULL, "JWT claim for groups"),
        STR(A, oidc_groups_prefix, "oidcGroupsPrefix", "oidc-groups-prefix", NULL, "group name prefix"),
        PATH(A, oidc_ca_file, "oidcCAFile", "oidc-ca-file", NULL, "CA of the OIDC issuer"),
        BOOL(A, allow_privileged, "allowPrivileged", "allow-privileged", "true",
             "allow privileged containers"),
        BOOL(A, anonymous_auth, "anonymousAuth", "anonymous-auth", NULL,
             "anonymous requests (the kubelet's /livez probe needs them)"),
        BOOL(A, enable_bootstrap_token_auth, "enableBootstrapTokenAuth", "enable-bootstrap-token-auth",
             "true", "bootstrap tokens authenticate (workers joining with TLS bootstrap)"),
        BOOL(A, enable_profiling, "enableProfiling", "profiling", NULL, "/debug/pprof"),
        LIST(A, requestheader_username_headers, "requestheaderUsernameHeaders",
             "requestheader-username-headers", "default X-Remote-User"),
        LIST(A, requestheader_group_headers, "requestheaderGroupHeaders", "requestheader-group-headers",
             "default X-Remote-Group"),
        LIST(A, requestheader_extra_headers_prefix, "requestheaderExtraHeaderPrefixes",
             "requestheader-extra-headers-prefix", "default X-Remote-Extra-"),
        PATH(A, requestheader_client_ca_file, "requestheaderClientCAFile", "requestheader-client-ca-file",
             "/srv/kubernetes/kube-apiserver/apiserver-aggregator-ca.crt", "CA of the front proxy"),
        LIST(A, requestheader_allowed_names, "requestheaderAllowedNames", "requestheader-allowed-names",
             "default aggregator"),
        PATH(A, proxy_client_cert_file, "proxyClientCertFile", "proxy-client-cert-file",
             "/srv/kubernetes/kube-apiserver/apiserver-aggregator.crt", "front-proxy client certificate"),
        PATH(A, proxy_client_key_file, "proxyClientKeyFile", "proxy-client-key-file",
             "/srv/kubernetes/kube-apiserver/apiserver-aggregator.key", "front-proxy client key"),
        BOOL(A, enable_aggregator_routing, "enableAggregatorRouting", "enable-aggregator-routing", NULL,
             "route aggregated API requests to endpoints"),
        PATH(A, encryption_provider_config, "encryptionProviderConfig", "encryption-provider-config", NULL,
             "encryption at rest configuration"),
        FEATURE_GATES(A),
        MAP(A, runtime_config, "runtimeConfig", "runtime-config", "API groups: group/version -> true|false"),
        DURATION(A, event_ttl, "eventTTL", "event-ttl", NULL, "how long events are kept"),
        DURATION(A, request_timeout, "requestTimeout", "request-timeout", NULL, "default request timeout"),
        INT(A, min_request_timeout, "minRequestTimeout", "min-request-timeout", NULL, 0, 86400,
            "minimum watch timeout, seconds"),
        INT(A, max_requests_inflight, "maxRequestsInflight", "max-requests-inflight", NULL, 0, 1000000,
            "non-mutating requests in flight"),
        INT(A, max_mutating_requests_inflight, "maxMutatingRequestsInflight",
            "max-mutating-requests-inflight", NULL, 0, 1000000, "mutating requests in flight"),
        { .name = "endpointReconcilerType",
          .type = FIELD_ENUM,
          .offset = offsetof(A, endpoint_reconciler_type),
          .flag = "endpoint-reconciler-type",
          .enum_values = endpoint_reconciler_types,
          .help = "lease | none" },
        {},
};
#undef A

/* The rows of DelegatedAuthentication (component-config.h), for the components that delegate to the
 * apiserver; their defaults are the pki layout's files (spec-pki.c) and kubeAPIServer's lists. */
#define DELEGATED_AUTHENTICATION(T)                                                                     \
        PATH(T, delegated_authentication.client_ca_file, "clientCAFile", "client-ca-file", NULL,        \
             "CA of client certificates; unset: read from the extension-apiserver-authentication "      \
             "ConfigMap"),                                                                              \
            PATH(T, delegated_authentication.requestheader_client_ca_file, "requestheaderClientCAFile", \
                 "requestheader-client-ca-file", NULL,                                                  \
                 "CA of the front proxy; unset: read from the extension-apiserver-authentication "      \
                 "ConfigMap"),                                                                          \
            LIST(T, delegated_authentication.requestheader_allowed_names, "requestheaderAllowedNames",  \
                 "requestheader-allowed-names", "default kubeAPIServer.requestheaderAllowedNames"),     \
            LIST(T, delegated_authentication.requestheader_username_headers,                            \
                 "requestheaderUsernameHeaders", "requestheader-username-headers",                      \
                 "default kubeAPIServer.requestheaderUsernameHeaders"),                                 \
            LIST(T, delegated_authentication.requestheader_group_headers, "requestheaderGroupHeaders",  \
                 "requestheader-group-headers", "default kubeAPIServer.requestheaderGroupHeaders"),     \
            LIST(T, delegated_authentication.requestheader_extra_headers_prefix,                        \
                 "requestheaderExtraHeaderPrefixes", "requestheader-extra-headers-prefix",              \
                 "default kubeAPIServer.requestheaderExtraHeaderPrefixes")

#define C KubeControllerManagerConfig
const Field kube_controller_manager_config_fields[] = {
        IMAGE(C),
        LOG_LEVEL(C),
        PATH(C, kubeconfig, "kubeconfig", "kubeconfig", "/var/lib/kube-controller-manager/kubeconfig",
             "kubeconfig to reach the API server"),
        PATH(C, authentication_kubeconfig, "authenticationKubeconfig", "authentication-kubeconfig",
             "/var/lib/kube-controller-manager/kubeconfig", "kubeconfig for TokenReview"),
        PATH(C, authorization_kubeconfig, "authorizationKubeconfig", "authorization-kubeconfig",
             "/var/lib/kube-controller-manager/kubeconfig", "kubeconfig for SubjectAccessReview"),
        DELEGATED_AUTHENTICATION(C),
        STR(C, bind_address, "bindAddress", "bind-address", "127.0.0.1", "address of the HTTPS endpoint"),
        PORT(C, secure_port, "securePort", "secure-port", "10257", "HTTPS port (health, metrics)"),
        BOOL(C, permit_port_sharing, "permitPortSharing", "permit-port-sharing", NULL,
             "share the port with SO_REUSEPORT; default true with selfHosted"),
        INSECURE_PORT(C),
        STR(C, cluster_name, "clusterName", "cluster-name", NULL, "default metadata.name"),
        STR(C, cluster_cidr, "clusterCIDR", "cluster-cidr", "100.96.0.0/11", "CIDR of pods"),
        BOOL(C, allocate_node_cidrs, "allocateNodeCIDRs", "allocate-node-cidrs", "true",
             "allocate pod CIDRs to nodes"),
        BOOL(C, configure_cloud_routes, "configureCloudRoutes", "configure-cloud-routes", NULL,
             "program cloud routes for pod CIDRs"),
        STR(C, service_cluster_ip_range, "serviceClusterIPRange", "service-cluster-ip-range", NULL,
            "default kubeAPIServer.serviceClusterIPRange"),
        PATH(C, cluster_signing_cert_file, "clusterSigningCertFile", "cluster-signing-cert-file",
             "/srv/kubernetes/kube-controller-manager/ca.crt", "CA certificate that signs CSRs"),
        PATH(C, cluster_signing_key_file, "clusterSigningKeyFile", "cluster-signing-key-file",
             "/srv/kubernetes/kube-controller-manager/ca.key", "CA key that signs CSRs"),
        PATH(C, root_ca_file, "rootCAFile", "root-ca-file", "/srv/kubernetes/ca.crt",
             "CA put into service-account secrets"),
        PATH(C, service_account_private_key_file, "serviceAccountPrivateKeyFile",
             "service-account-private-key-file",
             "/srv/kubernetes/kube-controller-manager/service-account.key",
             "key that signs legacy service-account tokens"),
        BOOL(C, use_service_account_credentials, "useServiceAccountCredentials",
             "use-service-account-credentials", "true", "one service account per controller"),
        BOOL(C, leader_elect, "leaderElect", "leader-elect", "true", "leader election among masters"),
        BOOL(C, enable_profiling, "enableProfiling", "profiling", NULL, "/debug/pprof"),
        LIST(C, controllers, "controllers", "controllers", "controllers to run (* = defaults)"),
        FEATURE_GATES(C),
        DURATION(C, node_monitor_grace_period, "nodeMonitorGracePeriod", "node-monitor-grace-period", NULL,
                 "time before an unresponsive node is NotReady"),
        DURATION(C, node_monitor_period, "nodeMonitorPeriod", "node-monitor-period", NULL,
                 "node status sync period"),
        DURATION(C, horizontal_pod_autoscaler_sync_period, "horizontalPodAutoscalerSyncPeriod",
                 "horizontal-pod-autoscaler-sync-period", NULL, "HPA sync period"),
        DURATION(C, attach_detach_reconcile_sync_period, "attachDetachReconcileSyncPeriod",
                 "attach-detach-reconcile-sync-period", NULL, "volume attach/detach reconcile period"),
        INT(C, terminated_pod_gc_threshold, "terminatedPodGCThreshold", "terminated-pod-gc-threshold", NULL,
            0, 10000000, "terminated pods kept before GC"),
        INT(C, concurrent_deployment_syncs, "concurrentDeploymentSyncs", "concurrent-deployment-syncs", NULL,
            1, 10000, "deployments synced concurrently"),
        INT(C, concurrent_service_syncs, "concurrentServiceSyncs", "concurrent-service-syncs", NULL, 1,
            10000, "services synced concurrently"),
        INT(C, kube_api_qps, "kubeAPIQPS", "kube-api-qps", NULL, 1, 100000, "API QPS"),
        INT(C, kube_api_burst, "kubeAPIBurst", "kube-api-burst", NULL, 1, 100000, "API burst"),
        {},
};
#undef C

#define S KubeSchedulerConfig
const Field kube_scheduler_config_fields[] = {
        IMAGE(S),
        LOG_LEVEL(S),
        PATH(S, kubeconfig, "kubeconfig", "kubeconfig", "/var/lib/kube-scheduler/kubeconfig",
             "kubeconfig to reach the API server", .file_field = "clientConnection.kubeconfig"),
        PATH(S, authentication_kubeconfig, "authenticationKubeconfig", "authentication-kubeconfig",
             "/var/lib/kube-scheduler/kubeconfig", "kubeconfig for TokenReview"),
        PATH(S, authorization_kubeconfig, "authorizationKubeconfig", "authorization-kubeconfig",
             "/var/lib/kube-scheduler/kubeconfig", "kubeconfig for SubjectAccessReview"),
        DELEGATED_AUTHENTICATION(S),
        STR(S, bind_address, "bindAddress", "bind-address", "127.0.0.1", "address of the HTTPS endpoint"),
        PORT(S, secure_port, "securePort", "secure-port", "10259", "HTTPS port (health, metrics)"),
        BOOL(S, permit_port_sharing, "permitPortSharing", "permit-port-sharing", NULL,
             "share the port with SO_REUSEPORT; default true with selfHosted"),
        { .name = "insecurePort",
          .type = FIELD_INT,
          .offset = offsetof(S, insecure_port),
          .flag = "port",
          .default_value = "0",
          .min = 0,
          .max = 65535,
          .k8s = { .until = 23 },
          .help = "unauthenticated HTTP port, 0 = off (Kubernetes 1.20 to 1.23); beside a file, 1.23 only",
          .file_instead = "healthzBindAddress",
          .file_instead_k8s = { .until = 22 } },
        /* With --config the 1.20 to 1.22 binary always serves HTTP without authentication (health,
         * metrics) on these, and the file refuses port 0 (docs/components.md): loopback only. */
        STR(S, healthz_bind_address, "healthzBindAddress", NULL, KUBE_SCHEDULER_INSECURE_DEFAULT,
            "the file's unauthenticated health server, HOST:PORT (Kubernetes 1.20 to 1.22)",
            .k8s = { .until = 22 }, .file_field = "healthzBindAddress", .file_k8s = { .until = 22 },
            .validate = validate_instance_host_port, .flags = FIELD_INSTANCE_PORT),
        STR(S, metrics_bind_address, "metricsBindAddress", NULL, KUBE_SCHEDULER_INSECURE_DEFAULT,
            "the file's unauthenticated metrics server, HOST:PORT (Kubernetes 1.20 to 1.22)",
            .k8s = { .until = 22 }, .file_field = "metricsBindAddress", .file_k8s = { .until = 22 },
            .validate = validate_instance_host_port, .flags = FIELD_INSTANCE_PORT),
        BOOL(S, leader_elect, "leaderElect", "leader-elect", "true", "leader election among masters",
             .file_field = "leaderElection.leaderElect"),
        BOOL(S, enable_profiling, "enableProfiling", "profiling", NULL, "/debug/pprof",
             .file_field = "enableProfiling"),
        PATH(S, config, "config", "config", NULL,
             "the operator's own KubeSchedulerConfiguration file, used instead of protokube's",
             .flags = FIELD_OPERATOR_FILE),
        FEATURE_GATES(S),
        {},
};
#undef S

#define P KubeProxyConfig
static const char *const proxy_modes[] = { "iptables", "ipvs", "nftables", NULL };
/* nftables is new in 1.29 (KEP-3866, alpha); 1.20's --help lists 'userspace' | 'iptables' | 'ipvs'. */
static const KubeValueGates proxy_mode_gates = {
        .what = "proxy mode",
        .values = (const KubeValueGate[]){ { "nftables", { .since = 29 } }, {} },
};

const Field kube_proxy_config_fields[] = {
        BOOL(P, enabled, "enabled", NULL, "true", "render the kube-proxy static pod"),
        IMAGE(P),
        LOG_LEVEL(P),
        PATH(P, kubeconfig, "kubeconfig", "kubeconfig", "/var/lib/kube-proxy/kubeconfig",
             "kubeconfig to reach the API server", .file_field = "clientConnection.kubeconfig"),
        STR(P, hostname_override, "hostnameOverride", "hostname-override", NULL, "node name to use",
            .file_field = "hostnameOverride"),
        STR(P, bind_address, "bindAddress", "bind-address", NULL, "address to serve on",
            .file_field = "bindAddress"),
        STR(P, cluster_cidr, "clusterCIDR", "cluster-cidr", NULL,
            "default kubeControllerManager.clusterCIDR", .file_field = "clusterCIDR"),
        { .name = "proxyMode",
          .type = FIELD_ENUM,
          .offset = offsetof(P, proxy_mode),
          .flag = "proxy-mode",
          .enum_values = proxy_modes,
          .k8s_values = &proxy_mode_gates,
          .help = "iptables | ipvs | nftables (1.29+)",
          .file_field = "mode" },
        HOSTPORT(P, metrics_bind_address, "metricsBindAddress", "metrics-bind-address", NULL,
                 "address:port of /metrics", .file_field = "metricsBindAddress"),
        HOSTPORT(P, healthz_bind_address, "healthzBindAddress", "healthz-bind-address", NULL,
                 "address:port of /healthz (default 0.0.0.0:10256)", .file_field = "healthzBindAddress"),
        INT(P, conntrack_max_per_core, "conntrackMaxPerCore", "conntrack-max-per-core", NULL, 0, 100000000,
            "conntrack entries per core", .file_field = "conntrack.maxPerCore"),
        INT(P, conntrack_min, "conntrackMin", "conntrack-min", NULL, 0, 100000000,
            "minimum conntrack entries", .file_field = "conntrack.min"),
        STR(P, ipvs_scheduler, "ipvsScheduler", "ipvs-scheduler", NULL, "IPVS scheduler (rr, lc, ...)",
            .file_field = "ipvs.scheduler"),
        LIST(P, ipvs_exclude_cidrs, "ipvsExcludeCIDRs", "ipvs-exclude-cidrs", "CIDRs IPVS leaves alone",
             .file_field = "ipvs.excludeCIDRs"),
        LIST(P, nodeport_addresses, "nodePortAddresses", "nodeport-addresses", "CIDRs that serve NodePorts",
             .file_field = "nodePortAddresses"),
        INT(P, oom_score_adj, "oomScoreAdj", "oom-score-adj", NULL, -1000, 1000, "OOM score adjustment",
            .file_field = "oomScoreAdj"),
        FEATURE_GATES_IN_FILE(P),
        {},
};
#undef P

#define K KubeletConfig
static const char *const kubelet_authorization_modes[] = { "AlwaysAllow", "Webhook", NULL };
static const char *const kubelet_cgroup_drivers[] = { "cgroupfs", "systemd", NULL };
static const char *const kubelet_container_runtimes[] = { "docker", "remote", NULL };

/* A setting of the KubeletConfiguration (kubelet.config.k8s.io/v1beta1 in 1.20 to 1.31): a file field, no
 * flag (the kubelet's flags for these are deprecated in favour of the file). */
#define KFILE(type_, m, key, field, h, ...) \
        { .name = key, .type = type_, .offset = offsetof(K, m), .file_field = field, .help = h, __VA_ARGS__ }

/* The kubelet of every node (masters and workers). Only the settings protokube has a reason to type: what a
 * node of this cluster needs, cluster-wide; a node's own facts (its name, address, the container runtime's
 * socket) are its command line's. The kubelet's own defaults (v1beta1) already refuse anonymous requests,
 * authenticate and authorize through the API and keep the read-only port closed; protokube writes them out
 * so that the file says what runs. */
const Field kubelet_config_fields[] = {
        LOG_LEVEL(K),
        PATH(K, kubeconfig, "kubeconfig", "kubeconfig", "/var/lib/kubelet/kubeconfig",
             "kubeconfig to reach the API server"),
        KFILE(FIELD_STRING, static_pod_path, "staticPodPath", "staticPodPath",
              "the static pods' directory (the node's --manifest-dir)",
              .default_value = KUBELET_STATIC_POD_PATH_DEFAULT, .validate = validate_path),
        KFILE(FIELD_DURATION, sync_frequency, "syncFrequency", "syncFrequency",
              "how often running pods are synced (kubelet's default 1m)"),
        KFILE(FIELD_DURATION, file_check_frequency, "fileCheckFrequency", "fileCheckFrequency",
              "how often the static pods' directory is read (kubelet's default 20s)"),
        KFILE(FIELD_STRING, address, "address", "address", "address of the kubelet's API (default 0.0.0.0)",
              .validate = validate_ip_address),
        KFILE(FIELD_INT, port, "port", "port", "port of the kubelet's API (default 10250)", .min = 1,
              .max = 65535),
        KFILE(FIELD_INT, read_only_port, "readOnlyPort", "readOnlyPort",
              "unauthenticated read-only port, 0 = off", .default_value = "0", .min = 0, .max = 65535),
        KFILE(FIELD_STRING, healthz_bind_address, "healthzBindAddress", "healthzBindAddress",
              "address of /healthz (default 127.0.0.1)", .validate = validate_ip_address),
        KFILE(FIELD_INT, healthz_port, "healthzPort", "healthzPort",
              "port of /healthz, 0 = off (default 10248)", .min = 0, .max = 65535),
        KFILE(FIELD_STRING, tls_cert_file, "tlsCertFile", "tlsCertFile",
              "serving certificate (else self-signed, or serverTLSBootstrap)", .validate = validate_path),
        KFILE(FIELD_STRING, tls_private_key_file, "tlsPrivateKeyFile", "tlsPrivateKeyFile", "serving key",
              .validate = validate_path),
        KFILE(FIELD_BOOL, rotate_certificates, "rotateCertificates", "rotateCertificates",
              "renew the client certificate through CSRs"),
        KFILE(FIELD_BOOL, server_tls_bootstrap, "serverTLSBootstrap", "serverTLSBootstrap",
              "get the serving certificate through CSRs"),
        KFILE(FIELD_STRING, client_ca_file, "clientCAFile", "authentication.x509.clientCAFile",
              "CA of client certificates (the API server's)", .default_value = "/srv/kubernetes/ca.crt",
              .validate = validate_path),
        KFILE(FIELD_BOOL, anonymous_auth, "anonymousAuth", "authentication.anonymous.enabled",
              "anonymous requests", .default_value = "false"),
        KFILE(FIELD_BOOL, authentication_webhook, "authenticationWebhook", "authentication.webhook.enabled",
              "bearer tokens checked by TokenReview", .default_value = "true"),
        KFILE(FIELD_DURATION, authentication_webhook_cache_ttl, "authenticationWebhookCacheTTL",
              "authentication.webhook.cacheTTL", "how long TokenReview answers are kept"),
        KFILE(FIELD_ENUM, authorization_mode, "authorizationMode", "authorization.mode",
              "AlwaysAllow | Webhook (SubjectAccessReview)", .default_value = "Webhook",
              .enum_values = kubelet_authorization_modes),
        KFILE(FIELD_ENUM, cgroup_driver, "cgroupDriver", "cgroupDriver",
              "cgroupfs | systemd: the container runtime's (kubelet's default cgroupfs)",
              .enum_values = kubelet_cgroup_drivers),
        KFILE(FIELD_STRING, cgroup_root, "cgroupRoot", "cgroupRoot", "root cgroup of the pods",
              .validate = validate_path),
        KFILE(FIELD_BOOL, fail_swap_on, "failSwapOn", "failSwapOn",
              "refuse to start with swap on (kubelet's default true)"),
        KFILE(FIELD_STRV, cluster_dns, "clusterDNS", "clusterDNS", "the pods' DNS servers (IP addresses)",
              .validate = validate_ip_list),
        KFILE(FIELD_STRING, cluster_domain, "clusterDomain", "clusterDomain",
              "default spec.clusterDNSDomain", .validate = validate_dns_domain),
        KFILE(FIELD_STRING, resolv_conf, "resolvConf", "resolvConf",
              "resolver file the pods' DNS is based on", .validate = validate_path),
        KFILE(FIELD_INT, max_pods, "maxPods", "maxPods", "pods per node (kubelet's default 110)", .min = 1,
              .max = 100000),
        KFILE(FIELD_MAP, eviction_hard, "evictionHard", "evictionHard",
              "signal -> threshold (memory.available: 100Mi)", .validate = validate_flag_map),
        KFILE(FIELD_INT, image_gc_high_threshold_percent, "imageGCHighThresholdPercent",
              "imageGCHighThresholdPercent", "disk usage that starts image GC (kubelet's default 85)",
              .min = 0, .max = 100),
        KFILE(FIELD_INT, image_gc_low_threshold_percent, "imageGCLowThresholdPercent",
              "imageGCLowThresholdPercent", "disk usage image GC frees down to (kubelet's default 80)",
              .min = 0, .max = 100),
        {
            .name = "featureGates",
            .type = FIELD_MAP,
            .offset = offsetof(K, feature_gates),
            .flags = FIELD_FILE_BOOL_VALUES,
            .validate = validate_feature_gates,
            .k8s_values = &kube_feature_gates,
            .help = "feature gates: name -> true|false",
            .file_field = "featureGates",
        },
        { .name = "containerRuntime",
          .type = FIELD_ENUM,
          .offset = offsetof(K, container_runtime),
          .flag = "container-runtime",
          .enum_values = kubelet_container_runtimes,
          .k8s = { .until = 26 },
          .help = "docker | remote (a CRI socket: containerRuntimeEndpoint)" },
        VALIDATED_STR(K, container_runtime_endpoint, "containerRuntimeEndpoint",
                      "container-runtime-endpoint", NULL, validate_unix_endpoint,
                      "the CRI socket (unix:///run/containerd/containerd.sock)"),
        STR(K, pod_infra_container_image, "podInfraContainerImage", "pod-infra-container-image", NULL,
            "the pods' sandbox image"),
        PATH(K, root_dir, "rootDir", "root-dir", NULL, "the kubelet's state (default /var/lib/kubelet)"),
        PATH(K, volume_plugin_dir, "volumePluginDir", "volume-plugin-dir", NULL,
             "flexvolume plugins' directory"),
        BOOL(K, self_hosted, "selfHosted", NULL, NULL,
             "a managed kubelet DaemonSet takes each node from the bootstrap kubelet"),
        STR(K, image, "image", NULL, NULL, "the managed kubelet's image; default from kubernetesVersion"),
        DURATION(K, rollout_deadline, "rolloutDeadline", NULL, "5m",
                 "a managed kubelet template not Ready on a node this long is rolled back"),
        {},
};
#undef K
