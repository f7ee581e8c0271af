/* SPDX-License-Identifier: Apache-2.0 */
#include "spec/spec.h"

#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "model/pki-layout.h"
#include "shared/yaml-tree.h"
#include "spec/field-load.h"
#include "spec/spec-check.h"
#include "spec/spec-dns.h"

static const char *const cloud_provider_table[_CLOUD_MAX + 1] = {
        [CLOUD_LOCAL] = "local",
        [CLOUD_AWS] = "aws",
        [CLOUD_GCE] = "gce",
};

const char *const dns_provider_kind_table[_DNS_PROVIDER_MAX + 1] = {
        [DNS_PROVIDER_NONE] = "none",         [DNS_PROVIDER_HOSTS] = "hosts",
        [DNS_PROVIDER_RFC2136] = "rfc2136",   [DNS_PROVIDER_ROUTE53] = "route53",
        [DNS_PROVIDER_CLOUDDNS] = "clouddns",
};

static const char *const spec_key_type_table[_SPEC_KEY_TYPE_MAX + 1] = {
        [SPEC_KEY_ECDSA_P256] = "ecdsa-p256",
        [SPEC_KEY_RSA_2048] = "rsa-2048",
};

static int lookup(const char *const *table, int n, const char *s) {
        for (int i = 0; s && i < n; i++)
                if (streq(table[i], s))
                        return i;
        return -EINVAL;
}

const char *cloud_provider_to_string(CloudProvider p) {
        return p >= 0 && p < _CLOUD_MAX ? cloud_provider_table[p] : NULL;
}

CloudProvider cloud_provider_from_string(const char *s) {
        return (CloudProvider)lookup(cloud_provider_table, _CLOUD_MAX, s);
}

const char *dns_provider_kind_to_string(DnsProviderKind k) {
        return k >= 0 && k < _DNS_PROVIDER_MAX ? dns_provider_kind_table[k] : NULL;
}

DnsProviderKind dns_provider_kind_from_string(const char *s) {
        return (DnsProviderKind)lookup(dns_provider_kind_table, _DNS_PROVIDER_MAX, s);
}

const char *spec_key_type_to_string(SpecKeyType t) {
        return t >= 0 && t < _SPEC_KEY_TYPE_MAX ? spec_key_type_table[t] : NULL;
}

SpecKeyType spec_key_type_from_string(const char *s) {
        return (SpecKeyType)lookup(spec_key_type_table, _SPEC_KEY_TYPE_MAX, s);
}

/* ---- the tables ---- */

static int spec_check_backup_interval(const void *value, char **ret_message) {
        const OptDuration *d = value;
        char b[GO_DURATION_MAX];
        if (d->value < 60 * USEC_PER_SEC || d->value > 24 * 3600 * USEC_PER_SEC)
                return spec_check_fail(ret_message, "'%s' is out of range 1m0s..24h0m0s",
                                       format_go_duration(b, d->value));
        return 0;
}

static const Field etcd_backup_fields[] = {
        { .name = "interval",
          .type = FIELD_DURATION,
          .offset = offsetof(EtcdBackupSpec, interval),
          .default_value = "15m",
          .validate = spec_check_backup_interval,
          .help = "how often the leader's master takes a snapshot (1m..24h)" },
        { .name = "keepLast",
          .type = FIELD_INT,
          .offset = offsetof(EtcdBackupSpec, keep_last),
          .default_value = "10",
          .min = 1,
          .max = 10000,
          .help = "the newest N backups are kept" },
        { .name = "keepDailyDays",
          .type = FIELD_INT,
          .offset = offsetof(EtcdBackupSpec, keep_daily_days),
          .default_value = "7",
          .min = 0,
          .max = 3650,
          .help = "and the newest backup of each of the last D days" },
        {},
};

static const Field etcd_cluster_fields[] = {
        { .name = "name",
          .type = FIELD_STRING,
          .offset = offsetof(EtcdClusterSpec, name),
          .flags = FIELD_REQUIRED,
          .validate = spec_check_dns_label,
          .help = "main, events, or another DNS label" },
        { .name = "image",
          .type = FIELD_STRING,
          .offset = offsetof(EtcdClusterSpec, image),
          .flags = FIELD_REQUIRED,
          .validate = spec_check_image,
          .help = "etcd container image; its tag (VERSION-BUILD) is the cluster's etcd version" },
        { .name = "version",
          .type = FIELD_STRING,
          .offset = offsetof(EtcdClusterSpec, version),
          .validate = spec_check_etcd_version,
          .help = "etcd version (3.4.13, 3.5.16): the wanted version; default the image's tag" },
        { .name = "allowDowngrade",
          .type = FIELD_BOOL,
          .offset = offsetof(EtcdClusterSpec, allow_downgrade),
          .default_value = "false",
          .help = "below the cluster version: restore the pre-upgrade backup, losing every later write" },
        { .name = "clientPort",
          .type = FIELD_INT,
          .offset = offsetof(EtcdClusterSpec, client_port),
          .min = 1,
          .max = 65535,
          .help = "default 4001 for main, 4002 for events" },
        { .name = "peerPort",
          .type = FIELD_INT,
          .offset = offsetof(EtcdClusterSpec, peer_port),
          .min = 1,
          .max = 65535,
          .help = "default 2380 for main, 2381 for events" },
        { .name = "tlsDir",
          .type = FIELD_STRING,
          .offset = offsetof(EtcdClusterSpec, tls_dir),
          .validate = spec_check_absolute_path,
          .help = "directory with ca.crt, server.crt/key, peer.crt/key; absent = plain http" },
        { .name = "backups",
          .type = FIELD_STRUCT,
          .offset = offsetof(EtcdClusterSpec, backups),
          .sub = etcd_backup_fields,
          .help = "snapshots into the state store (with stateStore)" },
        {},
};

static const Field pki_fields[] = {
        { .name = "dir",
          .type = FIELD_STRING,
          .offset = offsetof(PkiSpec, dir),
          .default_value = PKI_DIR_DEFAULT,
          .validate = spec_check_pki_dir,
          .help = "where the node's certificates, keys and kubeconfigs are issued" },
        { .name = "keyType",
          .type = FIELD_ENUM,
          .offset = offsetof(PkiSpec, key_type),
          .default_value = "ecdsa-p256",
          .enum_values = spec_key_type_table,
          .help = "key type of the CAs and the certificates" },
        { .name = "serviceAccountKeyType",
          .type = FIELD_ENUM,
          .offset = offsetof(PkiSpec, service_account_key_type),
          .default_value = "rsa-2048",
          .enum_values = spec_key_type_table,
          .help = "key type of the service-account signing key" },
        { .name = "caLifetime",
          .type = FIELD_DURATION,
          .offset = offsetof(PkiSpec, ca_lifetime),
          .default_value = "87600h",
          .validate = spec_check_lifetime,
          .help = "validity of a new CA (10 years)" },
        { .name = "certificateLifetime",
          .type = FIELD_DURATION,
          .offset = offsetof(PkiSpec, certificate_lifetime),
          .default_value = "8760h",
          .validate = spec_check_lifetime,
          .help = "validity of a new certificate (1 year); less than caLifetime" },
        { .name = "kubeletCertificateLifetime",
          .type = FIELD_DURATION,
          .offset = offsetof(PkiSpec, kubelet_certificate_lifetime),
          .validate = spec_check_kubelet_lifetime,
          .help = "validity of a kubelet's certificate signed from its CSR (default certificateLifetime)" },
        {},
};

static const char *const networking_provider_table[_NETWORKING_MAX + 1] = {
        [NETWORKING_NONE] = "none",
        [NETWORKING_KUBENET] = "kubenet",
};

static const Field networking_fields[] = {
        { .name = "provider",
          .type = FIELD_ENUM,
          .offset = offsetof(NetworkingSpec, provider),
          .default_value = "none",
          .enum_values = networking_provider_table,
          .help = "none (the operator's CNI) | kubenet (bridge and host-local CNI on each node's podCIDR, "
                  "routes to the other nodes' podCIDRs)" },
        { .name = "cniConfDir",
          .type = FIELD_STRING,
          .offset = offsetof(NetworkingSpec, cni_conf_dir),
          .default_value = "/etc/cni/net.d",
          .validate = spec_check_absolute_path,
          .help = "where the container runtime reads its CNI networks (kubenet)" },
        { .name = "bridge",
          .type = FIELD_STRING,
          .offset = offsetof(NetworkingSpec, bridge),
          .default_value = "cbr0",
          .validate = spec_check_ifname,
          .help = "the pods' bridge on each node (kubenet)" },
        {},
};

static const Field spec_fields[] = {
        { .name = "cloud",
          .type = FIELD_ENUM,
          .offset = offsetof(ClusterSpec, cloud),
          .default_value = "local",
          .enum_values = cloud_provider_table,
          .help = "volume and identity provider" },
        { .name = "dns",
          .type = FIELD_STRUCT,
          .offset = offsetof(ClusterSpec, dns),
          .sub = spec_dns_fields,
          .help = "discovery records" },
        { .name = "etcdClusters",
          .type = FIELD_STRUCT_LIST,
          .offset = offsetof(ClusterSpec, etcd_clusters),
          .flags = FIELD_REQUIRED,
          .sub = etcd_cluster_fields,
          .elem_size = sizeof(EtcdClusterSpec),
          .help = "etcd clusters; members come from the volume tags" },
        { .name = "kubernetesVersion",
          .type = FIELD_STRING,
          .offset = offsetof(ClusterSpec, kubernetes_version),
          .flags = FIELD_REQUIRED,
          .validate = spec_check_version,
          .help = "e.g. 1.31.2 (a leading v is dropped)" },
        { .name = "stateStore",
          .type = FIELD_STRING,
          .offset = offsetof(ClusterSpec, state_store),
          .validate = spec_check_state_store,
          .help = "file:///DIR, s3://BUCKET[/PREFIX][?region=REGION] or gs://BUCKET[/PREFIX]; absent = "
                  "protokube manages no "
                  "certificates" },
        { .name = "pki",
          .type = FIELD_STRUCT,
          .offset = offsetof(ClusterSpec, pki),
          .sub = pki_fields,
          .help = "the certificates protokube issues (with stateStore)" },
        { .name = "clusterDNSDomain",
          .type = FIELD_STRING,
          .offset = offsetof(ClusterSpec, cluster_dns_domain),
          .default_value = "cluster.local",
          .validate = spec_check_dns_name,
          .help = "the cluster's DNS domain (kubernetes.default.svc.<domain>)" },
        { .name = "selfHosted",
          .type = FIELD_BOOL,
          .offset = offsetof(ClusterSpec, self_hosted),
          .default_value = "false",
          .help = "pivot the control plane to DaemonSets and Deployments (needs stateStore)" },
        { .name = "kubeAPIServer",
          .type = FIELD_STRUCT,
          .offset = offsetof(ClusterSpec, kube_apiserver),
          .sub = kube_apiserver_config_fields },
        { .name = "kubeControllerManager",
          .type = FIELD_STRUCT,
          .offset = offsetof(ClusterSpec, kube_controller_manager),
          .sub = kube_controller_manager_config_fields },
        { .name = "kubeScheduler",
          .type = FIELD_STRUCT,
          .offset = offsetof(ClusterSpec, kube_scheduler),
          .sub = kube_scheduler_config_fields },
        { .name = "kubeProxy",
          .type = FIELD_STRUCT,
          .offset = offsetof(ClusterSpec, kube_proxy),
          .sub = kube_proxy_config_fields },
        { .name = "kubelet",
          .type = FIELD_STRUCT,
          .offset = offsetof(ClusterSpec, kubelet),
          .sub = kubelet_config_fields },
        { .name = "networking",
          .type = FIELD_STRUCT,
          .offset = offsetof(ClusterSpec, networking),
          .sub = networking_fields,
          .help = "the pods' network" },
        {},
};

/* metadata and spec are YAML levels but not C levels: their fields live directly in ClusterSpec, so these
 * two rows have offset 0 and their sub tables use offsets into ClusterSpec. */
static const Field metadata_fields[] = {
        { .name = "name",
          .type = FIELD_STRING,
          .offset = offsetof(ClusterSpec, name),
          .flags = FIELD_REQUIRED,
          .validate = spec_check_dns_name,
          .help = "cluster name; DNS names hang off it" },
        {},
};

static const Field cluster_fields[] = {
        { .name = "apiVersion",
          .type = FIELD_STRING,
          .offset = offsetof(ClusterSpec, api_version),
          .flags = FIELD_REQUIRED,
          .validate = spec_check_api_version },
        { .name = "kind",
          .type = FIELD_STRING,
          .offset = offsetof(ClusterSpec, kind),
          .flags = FIELD_REQUIRED,
          .validate = spec_check_kind },
        { .name = "metadata",
          .type = FIELD_STRUCT,
          .offset = 0,
          .flags = FIELD_REQUIRED,
          .sub = metadata_fields },
        { .name = "spec", .type = FIELD_STRUCT, .offset = 0, .flags = FIELD_REQUIRED, .sub = spec_fields },
        {},
};

const Field *cluster_spec_fields(void) {
        return cluster_fields;
}

/* ---- load ---- */

ClusterSpec *cluster_spec_free(ClusterSpec *s) {
        if (!s)
                return NULL;
        field_table_free(cluster_fields, s);
        free(s->path);
        free(s);
        return NULL;
}

const EtcdClusterSpec *cluster_spec_find_etcd(const ClusterSpec *s, const char *name) {
        for (size_t i = 0; s && name && i < s->etcd_clusters.n; i++) {
                const EtcdClusterSpec *e = cluster_spec_etcd(s, i);
                if (e->name && streq(e->name, name))
                        return e;
        }
        return NULL;
}

const char *cluster_spec_service_range(const ClusterSpec *s) {
        /* kube-apiserver 1.20's default of --service-cluster-ip-range, for a spec made in code */
        return s && !isempty(s->kube_apiserver.service_cluster_ip_range)
                   ? s->kube_apiserver.service_cluster_ip_range
                   : "10.0.0.0/24";
}

static int errors_only(const char *name, unsigned line, unsigned column, const char *message,
                       char ***ret_errors) {
        SpecErrors errs = {};
        char **l = NULL;

        spec_errors_add(&errs, line, column, "%s", message);
        if (spec_errors_finish(&errs, name, &l) < 0)
                return -ENOMEM;
        if (ret_errors)
                *ret_errors = l;
        else
                strv_free(l);
        return PK_ESPEC;
}

static int yaml_error(const char *name, const char *yaml_message, char ***ret_errors) {
        unsigned line = 1, column = 1;
        int consumed = 0;

        /* yaml-tree says "LINE:COL: message". */
        if (sscanf(yaml_message, "%u:%u: %n", &line, &column, &consumed) < 2 || consumed == 0)
                return errors_only(name, 1, 1, yaml_message, ret_errors);
        return errors_only(name, line, column, yaml_message + consumed, ret_errors);
}

int cluster_spec_load_string(const char *name, const char *text, size_t len, ClusterSpec **ret,
                             char ***ret_errors) {
        _cleanup_(yaml_tree_freep) YamlNode *root = NULL;
        _cleanup_(cluster_spec_freep) ClusterSpec *s = NULL;
        _cleanup_free_ char *yaml_message = NULL;
        SpecErrors errs = {};
        int r;

        if (!name || (!text && len > 0))
                return -EINVAL;
        r = yaml_tree_parse(text ?: "", len, 0, &root, &yaml_message);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return yaml_error(name, yaml_message ?: "malformed YAML", ret_errors);
        if (!root || yaml_tree_is_null(root))
                return errors_only(name, 1, 1, "empty document, expected a Cluster mapping", ret_errors);
        if (root->kind != YAML_TREE_MAPPING) {
                _cleanup_free_ char *m =
                    strprintf("expected a Cluster mapping, got %s", yaml_tree_describe(root));
                return m ? errors_only(name, root->line, root->column, m, ret_errors) : -ENOMEM;
        }

        s = new0(ClusterSpec, 1);
        if (!s)
                return -ENOMEM;
        s->path = strdup(name);
        if (!s->path)
                return -ENOMEM;
        r = field_table_load(cluster_fields, s, root, "", &errs);
        if (r >= 0)
                r = spec_check_cluster(s, root, &errs);
        if (r < 0 || errs.oom) {
                spec_errors_clear(&errs);
                return -ENOMEM;
        }
        if (errs.n > 0) {
                char **l = NULL;
                if (spec_errors_finish(&errs, name, &l) < 0)
                        return -ENOMEM;
                if (ret_errors)
                        *ret_errors = l;
                else
                        strv_free(l);
                return PK_ESPEC;
        }
        spec_errors_clear(&errs);
        if (ret)
                *ret = TAKE_PTR(s);
        return 0;
}

int cluster_spec_load(const char *path, ClusterSpec **ret, char ***ret_errors) {
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r;

        r = read_full_file(path, YAML_TREE_MAX_INPUT, &text, &len);
        if (r == -EFBIG)
                return errors_only(path, 1, 1, "file is larger than 1 MiB", ret_errors);
        if (r < 0)
                return r;
        return cluster_spec_load_string(path, text, len, ret, ret_errors);
}
