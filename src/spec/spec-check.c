/* SPDX-License-Identifier: Apache-2.0 */
#include "spec/spec-check.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/dns-name.h"
#include "basic/parse-util.h"
#include "basic/semver.h"
#include "basic/string-util.h"
#include "model/conventions.h"
#include "model/etcd-versions.h"
#include "spec/kube-version.h"

#define SPEC_API_VERSION  "protokube/v1alpha1"
#define SPEC_KIND         "Cluster"
#define PATH_MAX_LEN      4096U
#define ETCD_CLUSTERS_MAX 16U

int spec_check_fail(char **ret_message, const char *format, ...) {
        va_list ap;
        char *m = NULL;

        va_start(ap, format);
        if (vasprintf(&m, format, ap) < 0)
                m = NULL;
        va_end(ap);
        if (ret_message)
                *ret_message = m;
        else
                free(m);
        return -EINVAL;
}

static const char *string_of(const void *value) {
        return *(const char *const *)value;
}

int spec_check_api_version(const void *value, char **ret_message) {
        char b[SPEC_ECHO_MAX];
        const char *s = string_of(value);

        if (streq(s, SPEC_API_VERSION))
                return 0;
        return spec_check_fail(ret_message, "%s is not supported, expected '%s'", spec_echo(b, s),
                               SPEC_API_VERSION);
}

int spec_check_kind(const void *value, char **ret_message) {
        char b[SPEC_ECHO_MAX];
        const char *s = string_of(value);

        if (streq(s, SPEC_KIND))
                return 0;
        return spec_check_fail(ret_message, "%s is not supported, expected '%s'", spec_echo(b, s),
                               SPEC_KIND);
}

int spec_check_dns_name(const void *value, char **ret_message) {
        char b[SPEC_ECHO_MAX];
        const char *s = string_of(value);

        if (endswith(s, "."))
                return spec_check_fail(ret_message, "%s must not end with a dot", spec_echo(b, s));
        if (!dns_hostname_is_valid(s))
                return spec_check_fail(
                    ret_message,
                    "%s is not a valid DNS name (lowercase letters, digits and '-', labels of 1 to 63 "
                    "characters separated by dots)",
                    spec_echo(b, s));
        return 0;
}

int spec_check_ifname(const void *value, char **ret_message) {
        char b[SPEC_ECHO_MAX];
        const char *s = string_of(value);
        size_t n = strlen(s);
        if (n == 0 || n > 15 ||
            strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != n ||
            streq(s, ".") || streq(s, ".."))
                return spec_check_fail(ret_message,
                                       "%s is not an interface name (1 to 15 letters, digits and . _ -)",
                                       spec_echo(b, s));
        return 0;
}

int spec_check_dns_label(const void *value, char **ret_message) {
        char b[SPEC_ECHO_MAX];
        const char *s = string_of(value);

        if (!dns_label_is_valid(s, strlen(s)) || strlen(s) > 32)
                return spec_check_fail(
                    ret_message,
                    "%s is not a valid name (1 to 32 lowercase letters, digits and '-', not starting "
                    "or ending with '-')",
                    spec_echo(b, s));
        return 0;
}

int spec_check_zone(const void *value, char **ret_message) {
        char b[SPEC_ECHO_MAX];
        const char *s = string_of(value);
        size_t len = strlen(s);

        if (len == 0 || s[len - 1] != '.')
                return spec_check_fail(ret_message, "%s must be absolute (end with a dot), e.g. '%s.'",
                                       spec_echo(b, s), len > 0 && len < 64 ? s : "k8s.test");
        _cleanup_free_ char *name = strndup(s, len - 1);
        if (!name)
                return -ENOMEM;
        if (!dns_hostname_is_valid(name))
                return spec_check_fail(ret_message, "%s is not a valid DNS zone name", spec_echo(b, s));
        return 0;
}

int spec_check_absolute_path(const void *value, char **ret_message) {
        char b[SPEC_ECHO_MAX];
        const char *s = string_of(value);

        if (s[0] != '/' || strlen(s) > PATH_MAX_LEN)
                return spec_check_fail(ret_message, "%s is not an absolute path", spec_echo(b, s));
        return 0;
}

/* "host", "host:port", "[v6]" or "[v6]:port"; host is an IP address or a DNS name. */
int spec_check_server(const void *value, char **ret_message) {
        char b[SPEC_ECHO_MAX];
        const char *s = string_of(value), *port = NULL;
        _cleanup_free_ char *host = NULL;
        unsigned char addr[16];

        if (s[0] == '[') {
                const char *close = strchr(s, ']');
                if (!close || (close[1] && close[1] != ':'))
                        return spec_check_fail(ret_message, "%s is not address, address:port or [IPv6]:port",
                                               spec_echo(b, s));
                host = strndup(s + 1, close - s - 1);
                if (!host)
                        return -ENOMEM;
                if (inet_pton(AF_INET6, host, addr) != 1)
                        return spec_check_fail(ret_message, "%s holds no valid IPv6 address",
                                               spec_echo(b, s));
                port = close[1] ? close + 2 : NULL;
        } else {
                const char *colon = strchr(s, ':');
                if (colon && strchr(colon + 1, ':'))
                        return spec_check_fail(ret_message, "%s: write an IPv6 address as [address]:port",
                                               spec_echo(b, s));
                host = colon ? strndup(s, colon - s) : strdup(s);
                if (!host)
                        return -ENOMEM;
                /* An address, not a name: resolving the DNS server's own name would need a resolver with a
                 * deadline, and DNS that depends on DNS fails exactly when it is needed. */
                if (inet_pton(AF_INET, host, addr) != 1)
                        return spec_check_fail(ret_message,
                                               "%s holds no IPv4 address (give the server as an IP address)",
                                               spec_echo(b, s));
                port = colon ? colon + 1 : NULL;
        }
        if (port) {
                uint16_t p;
                if (strspn(port, "0123456789") != strlen(port) || safe_atou16(port, &p) < 0 || p == 0)
                        return spec_check_fail(ret_message, "%s has an invalid port (1..65535)",
                                               spec_echo(b, s));
        }
        return 0;
}

int spec_check_timeout(const void *value, char **ret_message) {
        const OptDuration *d = value;

        if (d->value == 0 || d->value > 60 * USEC_PER_SEC)
                return spec_check_fail(ret_message, "must be more than 0s and at most 1m0s");
        return 0;
}

int spec_check_image(const void *value, char **ret_message) {
        char b[SPEC_ECHO_MAX];
        const char *s = string_of(value);

        if (isempty(s) || strlen(s) > 255 || strpbrk(s, " \t"))
                return spec_check_fail(ret_message, "%s is not a container image reference",
                                       spec_echo(b, s));
        return 0;
}

/* MAJOR.MINOR.PATCH with an optional leading 'v' and pre-release ("-rc.1"), as Kubernetes tags releases, and
 * one of the versions protokube knows the flags of. */
int spec_check_version(const void *value, char **ret_message) {
        char b[SPEC_ECHO_MAX];
        const char *s = string_of(value);
        KubeVersion v;

        if (kube_version_parse(s, &v) < 0)
                return spec_check_fail(ret_message, "%s is not a Kubernetes version like 1.31.2",
                                       spec_echo(b, s));
        if (!kube_version_supported(&v))
                return spec_check_fail(
                    ret_message,
                    "%s is not supported: protokube renders the flags of Kubernetes 1.%u to "
                    "1.%u",
                    spec_echo(b, s), KUBE_MINOR_MIN, KUBE_MINOR_MAX);
        return 0;
}

/* One of the etcd versions protokube runs (model/etcd-versions.h): a version it has no row for would get a
 * manifest whose flags nobody checked against its binary. */
int spec_check_etcd_version(const void *value, char **ret_message) {
        char b[SPEC_ECHO_MAX];
        const char *s = string_of(value);
        Semver v;

        if (semver_parse(s, 0, &v) < 0)
                return spec_check_fail(ret_message, "%s is not an etcd version like 3.5.16",
                                       spec_echo(b, s));
        if (!etcd_version_find(s))
                return spec_check_fail(ret_message, "etcd %s is not a version protokube runs (%s)",
                                       spec_echo(b, s), etcd_versions_text());
        return 0;
}

/* ---- cross-field rules ---- */

/* The deepest node along the keys (NULL-terminated), for placing an error; root if none exists. */
static const YamlNode *node_at(const YamlNode *root, ...) {
        const YamlNode *n = root;
        va_list ap;

        va_start(ap, root);
        for (const char *k; (k = va_arg(ap, const char *));) {
                const YamlNode *c = yaml_tree_get(n, k);
                if (!c || yaml_tree_is_null(c))
                        break;
                n = c;
        }
        va_end(ap);
        return n;
}

static const YamlNode *etcd_node(const YamlNode *root, size_t i, const char *key) {
        const YamlNode *list = yaml_tree_get(yaml_tree_get(root, "spec"), "etcdClusters");
        const YamlNode *item = yaml_tree_item(list, i);
        const YamlNode *v = key ? yaml_tree_get(item, key) : NULL;

        return v ?: item ?: list ?: root;
}

static int check_dns(ClusterSpec *s, const YamlNode *root, SpecErrors *errs) {
        DnsSpec *d = &s->dns;
        bool name_ok = s->name && dns_hostname_is_valid(s->name);
        DnsProviderKind provider = d->provider.set ? (DnsProviderKind)d->provider.value : DNS_PROVIDER_NONE;

        if (!d->internal_suffix && name_ok) {
                d->internal_suffix = strjoin(INTERNAL_SUFFIX_PREFIX, s->name);
                if (!d->internal_suffix)
                        return -ENOMEM;
                if (!dns_hostname_is_valid(d->internal_suffix))
                        spec_errors_add_at(errs, node_at(root, "metadata", "name", NULL),
                                           "metadata.name: too long for the default spec.dns.internalSuffix "
                                           "'internal.<name>'");
        }
        if (provider == DNS_PROVIDER_HOSTS && !d->hosts.file) {
                d->hosts.file = strdup("/etc/hosts");
                if (!d->hosts.file)
                        return -ENOMEM;
        }
        if (provider == DNS_PROVIDER_RFC2136) {
                const YamlNode *at = node_at(root, "spec", "dns", "rfc2136", NULL);
                if (!d->rfc2136.server)
                        spec_errors_add_at(
                            errs, at, "spec.dns.rfc2136.server: required when spec.dns.provider is rfc2136");
                if (!d->rfc2136.tsig_key_file)
                        spec_errors_add_at(errs, at,
                                           "spec.dns.rfc2136.tsigKeyFile: required when "
                                           "spec.dns.provider is rfc2136");
        }
        if (d->zone && spec_check_zone(&d->zone, NULL) >= 0) {
                char b[SPEC_ECHO_MAX], z[SPEC_ECHO_MAX];
                if (name_ok && !dns_name_in_zone(s->name, d->zone))
                        spec_errors_add_at(errs, node_at(root, "spec", "dns", "zone", NULL),
                                           "spec.dns.zone: cluster name %s is not inside zone %s",
                                           spec_echo(b, s->name), spec_echo(z, d->zone));
                const YamlNode *suffix =
                    yaml_tree_get(yaml_tree_get(yaml_tree_get(root, "spec"), "dns"), "internalSuffix");
                if (suffix && d->internal_suffix && dns_hostname_is_valid(d->internal_suffix) &&
                    !dns_name_in_zone(d->internal_suffix, d->zone))
                        spec_errors_add_at(errs, suffix, "spec.dns.internalSuffix: %s is not inside zone %s",
                                           spec_echo(b, d->internal_suffix), spec_echo(z, d->zone));
        }
        return 0;
}

static void etcd_apply_port_defaults(EtcdClusterSpec *e, size_t i, const YamlNode *root, SpecErrors *errs) {
        char b[SPEC_ECHO_MAX];

        int client, peer;
        /* kops' ports for main and events (model/conventions.h) */
        if (etcd_default_ports(e->name, &client, &peer) >= 0) {
                if (!e->client_port.set)
                        e->client_port = (OptInt){ .set = true, .value = client };
                if (!e->peer_port.set)
                        e->peer_port = (OptInt){ .set = true, .value = peer };
                return;
        }
        if (!e->client_port.set)
                spec_errors_add_at(
                    errs, etcd_node(root, i, NULL),
                    "spec.etcdClusters[%zu].clientPort: required for etcd cluster %s (only main "
                    "and events have default ports)",
                    i, spec_echo(b, e->name));
        if (!e->peer_port.set)
                spec_errors_add_at(
                    errs, etcd_node(root, i, NULL),
                    "spec.etcdClusters[%zu].peerPort: required for etcd cluster %s (only main and "
                    "events have default ports)",
                    i, spec_echo(b, e->name));
}

typedef struct PortUse {
        int64_t port;
        size_t cluster;
        const char *key;
} PortUse;

static void etcd_check_ports(const ClusterSpec *s, const YamlNode *root, SpecErrors *errs) {
        PortUse used[2 * ETCD_CLUSTERS_MAX];
        size_t n = 0;

        for (size_t i = 0; i < s->etcd_clusters.n && n + 2 <= ELEMENTSOF(used); i++) {
                const EtcdClusterSpec *e = cluster_spec_etcd(s, i);
                const PortUse mine[] = {
                        { e->client_port.value, i, "clientPort" },
                        { e->peer_port.value, i, "peerPort" },
                };
                const OptInt *set[] = { &e->client_port, &e->peer_port };
                for (size_t k = 0; k < ELEMENTSOF(mine); k++) {
                        if (!set[k]->set)
                                continue;
                        for (size_t j = 0; j < n; j++)
                                if (used[j].port == mine[k].port) {
                                        spec_errors_add_at(
                                            errs, etcd_node(root, i, mine[k].key),
                                            "spec.etcdClusters[%zu].%s: port %lld is already used "
                                            "by spec.etcdClusters[%zu].%s",
                                            i, mine[k].key, (long long)mine[k].port, used[j].cluster,
                                            used[j].key);
                                        break;
                                }
                        used[n++] = mine[k];
                }
        }
}

/* The wanted version: the version key, else the image's tag; the two agree when both name one. An image
 * already refused, or a version key already refused, is not reported again. */
static int etcd_resolve_version(EtcdClusterSpec *e, size_t i, const YamlNode *root, SpecErrors *errs) {
        char tag[ETCD_VERSION_MAX], b[SPEC_ECHO_MAX], v[SPEC_ECHO_MAX];
        bool image_ok = e->image && spec_check_image(&e->image, NULL) >= 0;
        bool tagged = image_ok && etcd_version_of_image(e->image, tag) >= 0;

        if (e->version) {
                if (tagged && spec_check_etcd_version(&e->version, NULL) >= 0 && !streq(tag, e->version))
                        spec_errors_add_at(errs, etcd_node(root, i, "version"),
                                           "spec.etcdClusters[%zu].version: %s is not the version of image "
                                           "%s (%s)",
                                           i, spec_echo(v, e->version), spec_echo(b, e->image), tag);
                return 0;
        }
        if (!image_ok)
                return 0;
        if (!tagged) {
                spec_errors_add_at(errs, etcd_node(root, i, "image"),
                                   "spec.etcdClusters[%zu].image: the tag of %s names no etcd version (like "
                                   "3.5.16-0): set spec.etcdClusters[%zu].version",
                                   i, spec_echo(b, e->image), i);
                return 0;
        }
        if (!etcd_version_find(tag)) {
                spec_errors_add_at(errs, etcd_node(root, i, "image"),
                                   "spec.etcdClusters[%zu].image: etcd %s of %s is not a version protokube "
                                   "runs (%s)",
                                   i, tag, spec_echo(b, e->image), etcd_versions_text());
                return 0;
        }
        e->version = strdup(tag);
        return e->version ? 0 : -ENOMEM;
}

static int check_etcd(ClusterSpec *s, const YamlNode *root, SpecErrors *errs) {
        const YamlNode *list = node_at(root, "spec", "etcdClusters", NULL);
        bool has_main = false, names_ok = true;
        char b[SPEC_ECHO_MAX];

        if (!s->etcd_clusters.items)
                return 0; /* absent or not a sequence: already reported */
        if (s->etcd_clusters.n == 0) {
                spec_errors_add_at(errs, list, "spec.etcdClusters: at least one etcd cluster is required");
                return 0;
        }
        /* The checks below compare clusters pairwise; a real cluster has two or three. */
        if (s->etcd_clusters.n > ETCD_CLUSTERS_MAX) {
                spec_errors_add_at(errs, list, "spec.etcdClusters: at most %u etcd clusters are supported",
                                   ETCD_CLUSTERS_MAX);
                return 0;
        }
        for (size_t i = 0; i < s->etcd_clusters.n; i++) {
                EtcdClusterSpec *e = &((EtcdClusterSpec *)s->etcd_clusters.items)[i];
                int r = etcd_resolve_version(e, i, root, errs);
                if (r < 0)
                        return r;
                /* A missing or invalid name is reported already; more about it would be noise. */
                if (!e->name || spec_check_dns_label(&e->name, NULL) < 0) {
                        names_ok = false;
                        continue;
                }
                has_main = has_main || etcd_cluster_is_main(e->name);
                bool dup = false;
                for (size_t j = 0; j < i && !dup; j++) {
                        const EtcdClusterSpec *o = cluster_spec_etcd(s, j);
                        if (o->name && streq(o->name, e->name)) {
                                const YamlNode *first = etcd_node(root, j, "name");
                                spec_errors_add_at(errs, etcd_node(root, i, "name"),
                                                   "spec.etcdClusters[%zu].name: duplicate etcd cluster %s "
                                                   "(first at %u:%u)",
                                                   i, spec_echo(b, e->name), first->line, first->column);
                                dup = true;
                        }
                }
                if (!dup)
                        etcd_apply_port_defaults(e, i, root, errs);
        }
        if (!has_main && names_ok)
                spec_errors_add_at(
                    errs, list,
                    "spec.etcdClusters: an etcd cluster named 'main' is required (the API server "
                    "stores the cluster state there)");
        etcd_check_ports(s, root, errs);
        return 0;
}

/* selfHosted makes the bootstrap and the self-hosted servers share their ports (docs/pivot.md, "Two
 * apiservers on one port"). A master's pivot also needs the store (step-pivot.c), a worker's spec has none.
 */
static void check_self_hosted(ClusterSpec *s) {
        OptBool *sharing[] = { &s->kube_apiserver.permit_port_sharing,
                               &s->kube_controller_manager.permit_port_sharing,
                               &s->kube_scheduler.permit_port_sharing };
        if (!s->self_hosted.value)
                return;
        for (size_t i = 0; i < ELEMENTSOF(sharing); i++)
                if (!sharing[i]->set)
                        *sharing[i] = (OptBool){ .set = true, .value = true };
}

/* The kubelet refuses to start unless image GC frees down to less than where it starts (its defaults: 85
 * and 80, for the one the spec leaves unset). */
static void check_kubelet_gc(const ClusterSpec *s, const YamlNode *root, SpecErrors *errs) {
        const KubeletConfig *k = &s->kubelet;
        int64_t high =
            k->image_gc_high_threshold_percent.set ? k->image_gc_high_threshold_percent.value : 85;
        int64_t low = k->image_gc_low_threshold_percent.set ? k->image_gc_low_threshold_percent.value : 80;
        if (low < high)
                return;
        bool low_given = k->image_gc_low_threshold_percent.set;
        spec_errors_add_at(errs,
                           node_at(root, "spec", "kubelet",
                                   low_given ? "imageGCLowThresholdPercent" : "imageGCHighThresholdPercent",
                                   NULL),
                           "spec.kubelet.imageGCLowThresholdPercent: %lld must be less than "
                           "imageGCHighThresholdPercent %lld (the kubelet's defaults: 80 and 85)",
                           (long long)low, (long long)high);
}

/* A CRI socket needs the remote runtime where the kubelet still has dockershim (1.20 to 1.26), which it
 * would otherwise start silently. */
static void check_kubelet_runtime(const ClusterSpec *s, const YamlNode *root, SpecErrors *errs) {
        const KubeletConfig *k = &s->kubelet;
        KubeVersion v;
        bool dockershim = kube_version_parse(s->kubernetes_version, &v) >= 0 && v.minor <= 26;
        if (k->container_runtime_endpoint && dockershim &&
            !(k->container_runtime.set && k->container_runtime.value == KUBELET_RUNTIME_REMOTE))
                spec_errors_add_at(errs, node_at(root, "spec", "kubelet", "containerRuntimeEndpoint", NULL),
                                   "spec.kubelet.containerRuntimeEndpoint: needs containerRuntime: remote "
                                   "(kubelet %s would start dockershim)",
                                   s->kubernetes_version);
}

static void check_kubelet(const ClusterSpec *s, const YamlNode *root, SpecErrors *errs) {
        check_kubelet_gc(s, root, errs);
        check_kubelet_runtime(s, root, errs);
}

int spec_check_cluster(ClusterSpec *s, const YamlNode *root, SpecErrors *errs) {
        int r;

        /* Kubernetes tags releases "v1.31.2"; keep the bare form so every user formats it one way. */
        if (s->kubernetes_version && s->kubernetes_version[0] == 'v')
                memmove(s->kubernetes_version, s->kubernetes_version + 1, strlen(s->kubernetes_version));
        r = check_dns(s, root, errs);
        if (r < 0)
                return r;
        r = check_etcd(s, root, errs);
        if (r < 0)
                return r;
        r = spec_check_kube_gates(s, root, errs);
        if (r < 0)
                return r;
        check_self_hosted(s);
        check_kubelet(s, root, errs);
        return spec_check_pki(s, root, errs);
}
