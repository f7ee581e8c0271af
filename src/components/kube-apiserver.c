/* SPDX-License-Identifier: Apache-2.0 */
/* What kube-apiserver needs beyond its row in the component table: defaults derived from the etcd clusters
 * and the DNS suffix, kops' default lists, and a writable audit log directory. */
#include <string.h>

#include "basic/string-util.h"
#include "basic/strv.h"
#include "components/component-def.h"
#include "components/conventions.h"
#include "components/etcd.h"
#include "model/pki-layout.h"

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

/* The servers of main and the /events override, unless the spec names them. */
static int derive_etcd_servers(const ClusterSpec *spec, KubeAPIServerConfig *c, ComponentScratch *scratch) {
        const EtcdClusterSpec *main_cluster = cluster_spec_find_etcd(spec, ETCD_MAIN_CLUSTER);
        const EtcdClusterSpec *events = cluster_spec_find_etcd(spec, ETCD_EVENTS_CLUSTER);
        int r;

        if (!c->etcd_servers) {
                char *url = NULL;
                if (!main_cluster)
                        return -EINVAL;
                r = etcd_local_url(main_cluster, &url);
                if (r < 0)
                        return r;
                c->etcd_servers = component_scratch_list1(scratch, url);
                if (!c->etcd_servers)
                        return -ENOMEM;
        }
        if (!c->etcd_servers_overrides && events) {
                _cleanup_free_ char *url = NULL;
                r = etcd_local_url(events, &url);
                if (r < 0)
                        return r;
                c->etcd_servers_overrides = component_scratch_list1(scratch, strjoin("/events#", url));
                if (!c->etcd_servers_overrides)
                        return -ENOMEM;
        }
        return 0;
}

/* With TLS on main and certificates of the user's own, the client files default to the member's own files
 * in its tlsDir (the server certificate must then allow client auth). When protokube issues the
 * certificates, the loader has already set them to the apiserver's own etcd client pair (spec/spec-pki.c),
 * and this gives way. */
static int derive_etcd_tls(const ClusterSpec *spec, KubeAPIServerConfig *c, ComponentScratch *scratch) {
        const EtcdClusterSpec *main_cluster = cluster_spec_find_etcd(spec, ETCD_MAIN_CLUSTER);
        if (cluster_spec_pki_managed(spec) || !main_cluster || isempty(main_cluster->tls_dir))
                return 0;
        const char *t = main_cluster->tls_dir, *sep = endswith(t, "/") ? "" : "/";
        char *ca = component_scratch_keep(scratch, strjoin(t, sep, PKI_CA_FILE));
        char *cert = component_scratch_keep(scratch, strjoin(t, sep, PKI_ETCD_SERVER_PAIR PKI_CERT_SUFFIX));
        char *key = component_scratch_keep(scratch, strjoin(t, sep, PKI_ETCD_SERVER_PAIR PKI_KEY_SUFFIX));
        if (!ca || !cert || !key)
                return -ENOMEM;
        c->etcd_ca_file = c->etcd_ca_file ?: ca;
        c->etcd_cert_file = c->etcd_cert_file ?: cert;
        c->etcd_key_file = c->etcd_key_file ?: key;
        return 0;
}

static int derive_issuer(const ClusterSpec *spec, KubeAPIServerConfig *c, ComponentScratch *scratch) {
        _cleanup_free_ char *api = NULL;
        if (c->service_account_issuer)
                return 0;
        int r = api_dns_name(spec->dns.internal_suffix, &api);
        if (r < 0)
                return r;
        c->service_account_issuer = component_scratch_keep(scratch, strjoin("https://", api));
        return c->service_account_issuer ? 0 : -ENOMEM;
}

int kube_apiserver_derive(const ClusterSpec *spec, void *config, ComponentScratch *scratch) {
        KubeAPIServerConfig *c = config;
        int r = derive_etcd_servers(spec, c, scratch);
        if (r < 0)
                return r;
        r = derive_etcd_tls(spec, c, scratch);
        if (r < 0)
                return r;
        r = derive_issuer(spec, c, scratch);
        if (r < 0)
                return r;
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

/* The audit log directory is written to, so it is mounted on its own, writable (the other files' directories
 * are mounted read-only from the table's file keys). */
int kube_apiserver_finish_pod(Pod *pod, PodContainer *ct, const void *config) {
        const KubeAPIServerConfig *c = config;
        if (isempty(c->audit_log_path) || streq(c->audit_log_path, "-"))
                return 0;
        const char *slash = strrchr(c->audit_log_path, '/');
        if (c->audit_log_path[0] != '/' || !slash || slash == c->audit_log_path)
                return -EINVAL;
        _cleanup_free_ char *dir = strndup(c->audit_log_path, (size_t)(slash - c->audit_log_path));
        if (!dir)
                return -ENOMEM;
        return pod_add_host_mount(pod, ct, "audit-logs", dir, "DirectoryOrCreate", false);
}
