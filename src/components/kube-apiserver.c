/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <string.h>

#include "basic/string-util.h"
#include "basic/strv.h"
#include "components/control-plane.h"
#include "components/flags.h"
#include "components/static-pod.h"

#define NAME "kube-apiserver"

/* kops' defaults for the lists (pkg/model/components/apiserver.go); the loader has no list defaults. */
static char *const default_admission_plugins[] = {
        "NamespaceLifecycle",
        "LimitRanger",
        "ServiceAccount",
        "DefaultStorageClass",
        "DefaultTolerationSeconds",
        "MutatingAdmissionWebhook",
        "ValidatingAdmissionWebhook",
        "NodeRestriction",
        "ResourceQuota",
        NULL,
};
static char *const default_address_types[] = { "InternalIP", "Hostname", "ExternalIP", NULL };
static char *const default_audiences[] = { "kubernetes.svc.default", NULL };
static char *const default_sa_key_files[] = { "/srv/kubernetes/kube-apiserver/service-account.pub", NULL };
static char *const default_username_headers[] = { "X-Remote-User", NULL };
static char *const default_group_headers[] = { "X-Remote-Group", NULL };
static char *const default_extra_prefixes[] = { "X-Remote-Extra-", NULL };
static char *const default_allowed_names[] = { "aggregator", NULL };

/* Strings made for the scratch copy; freed together. */
typedef struct Derived {
        char **etcd_servers;
        char **etcd_overrides;
        char *etcd_ca, *etcd_cert, *etcd_key;
        char *issuer;
} Derived;

static void derived_done(Derived *d) {
        strv_free(d->etcd_servers);
        strv_free(d->etcd_overrides);
        free(d->etcd_ca);
        free(d->etcd_cert);
        free(d->etcd_key);
        free(d->issuer);
}

/* The apiserver runs next to an etcd member of every cluster, so it talks to them on loopback (kops). */
static int etcd_local_url(const EtcdClusterSpec *e, char **ret) {
        int client, peer;
        int r = etcd_cluster_ports(e, &client, &peer);
        if (r < 0)
                return r;
        char *s = strprintf("%s://127.0.0.1:%d", isempty(e->tls_dir) ? "http" : "https", client);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static int derive_etcd(const ClusterSpec *spec, KubeAPIServerConfig *c, Derived *d) {
        const EtcdClusterSpec *main_cluster = spec_find_etcd_cluster(spec, "main");
        const EtcdClusterSpec *events = spec_find_etcd_cluster(spec, "events");
        int r;

        if (!c->etcd_servers) {
                _cleanup_free_ char *url = NULL;
                if (!main_cluster)
                        return -EINVAL;
                r = etcd_local_url(main_cluster, &url);
                if (r < 0)
                        return r;
                if (strv_extend(&d->etcd_servers, url) < 0)
                        return -ENOMEM;
                c->etcd_servers = d->etcd_servers;
        }
        if (!c->etcd_servers_overrides && events) {
                _cleanup_free_ char *url = NULL, *o = NULL;
                r = etcd_local_url(events, &url);
                if (r < 0)
                        return r;
                o = strjoin("/events#", url);
                if (!o || strv_extend(&d->etcd_overrides, o) < 0)
                        return -ENOMEM;
                c->etcd_servers_overrides = d->etcd_overrides;
        }
        /* With TLS on main, the client files default to the member's own files in its tlsDir. */
        if (main_cluster && !isempty(main_cluster->tls_dir)) {
                const char *t = main_cluster->tls_dir, *sep = endswith(t, "/") ? "" : "/";
                d->etcd_ca = strjoin(t, sep, "ca.crt");
                d->etcd_cert = strjoin(t, sep, "server.crt");
                d->etcd_key = strjoin(t, sep, "server.key");
                if (!d->etcd_ca || !d->etcd_cert || !d->etcd_key)
                        return -ENOMEM;
                c->etcd_ca_file = c->etcd_ca_file ?: d->etcd_ca;
                c->etcd_cert_file = c->etcd_cert_file ?: d->etcd_cert;
                c->etcd_key_file = c->etcd_key_file ?: d->etcd_key;
        }
        return 0;
}

static int effective_config(const ClusterSpec *spec, KubeAPIServerConfig *c, Derived *d) {
        *c = spec->kube_apiserver;
        int r = flags_fill_defaults(kube_apiserver_config_fields, c);
        if (r < 0)
                return r;
        r = derive_etcd(spec, c, d);
        if (r < 0)
                return r;
        if (!c->service_account_issuer) {
                _cleanup_free_ char *suffix = NULL;
                r = spec_internal_suffix(spec, &suffix);
                if (r < 0)
                        return r;
                d->issuer = strjoin("https://api.", suffix);
                if (!d->issuer)
                        return -ENOMEM;
                c->service_account_issuer = d->issuer;
        }
#define DEFAULT_LIST(field, list) c->field = c->field ?: (char **)list
        DEFAULT_LIST(enable_admission_plugins, default_admission_plugins);
        DEFAULT_LIST(kubelet_preferred_address_types, default_address_types);
        DEFAULT_LIST(api_audiences, default_audiences);
        DEFAULT_LIST(service_account_key_file, default_sa_key_files);
        DEFAULT_LIST(requestheader_username_headers, default_username_headers);
        DEFAULT_LIST(requestheader_group_headers, default_group_headers);
        DEFAULT_LIST(requestheader_extra_headers_prefix, default_extra_prefixes);
        DEFAULT_LIST(requestheader_allowed_names, default_allowed_names);
#undef DEFAULT_LIST
        return 0;
}

int kube_apiserver_flags(const ClusterSpec *spec, char ***ret) {
        _cleanup_(derived_done) Derived d = {};
        KubeAPIServerConfig c;
        int r = effective_config(spec, &c, &d);
        if (r < 0)
                return r;
        return flags_build(kube_apiserver_config_fields, &c, ret);
}

static int mount_files(Pod *pod, PodContainer *ct, const KubeAPIServerConfig *c) {
        const char *files[64];
        size_t n = 0;
        const char *single[] = {
                c->tls_cert_file,
                c->tls_private_key_file,
                c->client_ca_file,
                c->kubelet_client_certificate,
                c->kubelet_client_key,
                c->kubelet_certificate_authority,
                c->service_account_signing_key_file,
                c->requestheader_client_ca_file,
                c->proxy_client_cert_file,
                c->proxy_client_key_file,
                c->etcd_ca_file,
                c->etcd_cert_file,
                c->etcd_key_file,
                c->audit_policy_file,
                c->audit_webhook_config_file,
                c->oidc_ca_file,
                c->encryption_provider_config,
        };
        for (size_t i = 0; i < ELEMENTSOF(single); i++)
                files[n++] = single[i];
        STRV_FOREACH (k, c->service_account_key_file) {
                if (n >= ELEMENTSOF(files))
                        return -E2BIG;
                files[n++] = *k;
        }
        int r = pod_mount_file_dirs(pod, ct, files, n);
        if (r < 0)
                return r;
        /* The audit log directory is written to, so it is mounted on its own, writable. */
        if (!isempty(c->audit_log_path) && !streq(c->audit_log_path, "-")) {
                const char *slash = strrchr(c->audit_log_path, '/');
                if (c->audit_log_path[0] != '/' || !slash || slash == c->audit_log_path)
                        return -EINVAL;
                _cleanup_free_ char *dir = strndup(c->audit_log_path, (size_t)(slash - c->audit_log_path));
                if (!dir)
                        return -ENOMEM;
                r = pod_add_host_mount(pod, ct, "audit-logs", dir, "DirectoryOrCreate", false);
                if (r < 0)
                        return r;
        }
        return pod_mount_ca_certs(pod, ct);
}

int kube_apiserver_pod_build(const ClusterSpec *spec, Pod **ret) {
        _cleanup_(derived_done) Derived d = {};
        _cleanup_(pod_freep) Pod *pod = NULL;
        _cleanup_strv_free_ char **flags = NULL;
        KubeAPIServerConfig c;
        PodContainer *ct;

        int r = effective_config(spec, &c, &d);
        if (r < 0)
                return r;
        r = flags_build(kube_apiserver_config_fields, &c, &flags);
        if (r < 0)
                return r;
        ComponentPod cp = { .name = NAME,
                            .image_override = c.image,
                            .priority_class = PRIORITY_CLUSTER_CRITICAL,
                            .flags = flags,
                            .cpu_request = c.cpu_request ?: "150m",
                            .memory_request = c.memory_request };
        r = component_pod_new(spec, &cp, &pod, &ct);
        if (r < 0)
                return r;
        int port = (int)c.secure_port.value;
        if (pod_container_add_port(ct, "https", port, port) < 0)
                return -ENOMEM;
        r = container_set_health_probes(ct, "HTTPS", port, "/livez", "/readyz");
        if (r < 0)
                return r;
        r = mount_files(pod, ct, &c);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(pod);
        return 0;
}
