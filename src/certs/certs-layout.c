/* SPDX-License-Identifier: Apache-2.0 */
/* The node's pairs and files (model/pki-layout.h), who signs each, and what each leaf certifies. */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "basic/string-util.h"
#include "basic/strv.h"
#include "certs/certs-internal.h"
#include "model/conventions.h"
#include "model/pki-layout.h"

static const char *const leaf_kind_table[_CERTS_LEAF_KIND_MAX] = {
        [CERTS_ETCD_SERVER] = "etcd-server",
        [CERTS_ETCD_PEER] = "etcd-peer",
        [CERTS_APISERVER] = "kube-apiserver",
        [CERTS_APISERVER_ETCD_CLIENT] = "kube-apiserver-etcd-client",
        [CERTS_APISERVER_KUBELET_CLIENT] = "kube-apiserver-kubelet-client",
        [CERTS_FRONT_PROXY_CLIENT] = "front-proxy-client",
        [CERTS_CONTROLLER_MANAGER] = "kube-controller-manager",
        [CERTS_SCHEDULER] = "kube-scheduler",
        [CERTS_PROXY] = "kube-proxy",
        [CERTS_ADMIN] = "admin",
        [CERTS_KUBELET] = "kubelet",
        [CERTS_PROTOKUBE] = "protokube",
};

const char *certs_leaf_kind_to_string(CertsLeafKind k) {
        return k >= 0 && k < _CERTS_LEAF_KIND_MAX ? leaf_kind_table[k] : NULL;
}

void certs_layout_done(CertsLayout *l) {
        for (size_t i = 0; i < l->n_leaves; i++) {
                free(l->leaves[i].dir);
                free(l->leaves[i].signer);
                free(l->leaves[i].etcd_cluster);
        }
        for (size_t i = 0; i < l->n_files; i++) {
                free(l->files[i].path);
                strv_free(l->files[i].cas);
                free(l->files[i].server);
                free(l->files[i].etcd_cluster);
        }
        free(l->leaves);
        free(l->files);
        *l = (CertsLayout){};
}

static int add_leaf(CertsLayout *l, CertsLeafKind kind, char *dir, const char *name, char *signer,
                    const char *etcd_cluster, bool restarts) {
        CertsLeafSlot *n = reallocarray(l->leaves, l->n_leaves + 1, sizeof(*n));
        char *cluster = etcd_cluster ? strdup(etcd_cluster) : NULL;
        if (n)
                l->leaves = n;
        if (!n || !dir || !signer || (etcd_cluster && !cluster)) {
                free(dir);
                free(signer);
                free(cluster);
                return -ENOMEM;
        }
        l->leaves[l->n_leaves++] = (CertsLeafSlot){ .kind = kind,
                                                    .dir = dir,
                                                    .name = name,
                                                    .signer = signer,
                                                    .etcd_cluster = cluster,
                                                    .restarts_components = restarts };
        return 0;
}

/* Takes path, cas and server. */
static int add_file(CertsLayout *l, CertsFileKind kind, char *path, char **cas, const char *user,
                    char *server, const char *etcd_cluster) {
        CertsFileSlot *n = reallocarray(l->files, l->n_files + 1, sizeof(*n));
        char *cluster = etcd_cluster ? strdup(etcd_cluster) : NULL;
        if (n)
                l->files = n;
        if (!n || !path || (etcd_cluster && !cluster) || (kind == CERTS_FILE_CA && !cas) ||
            (kind == CERTS_FILE_KUBECONFIG && !server)) {
                free(path);
                strv_free(cas);
                free(server);
                free(cluster);
                return -ENOMEM;
        }
        l->files[l->n_files++] = (CertsFileSlot){ .kind = kind,
                                                  .path = path,
                                                  .cas = cas,
                                                  .user = user,
                                                  .server = server,
                                                  .etcd_cluster = cluster };
        return 0;
}

static char **ca_list(const char *name) {
        return name ? strv_new(name) : NULL;
}

/* The same, taking name. */
static char **ca_list_take(char *name) {
        char **l = ca_list(name);
        free(name);
        return l;
}

/* The client CAs of every etcd cluster: each etcd trusts them all for clients, because kube-apiserver has
 * one etcd client certificate (--etcd-certfile) for all of its etcd servers. */
static char **etcd_client_cas(const CertsSettings *s) {
        _cleanup_strv_free_ char **l = strv_new(NULL);
        for (size_t i = 0; l && s->etcd_clusters && s->etcd_clusters[i]; i++) {
                _cleanup_free_ char *n = keystore_etcd_client_ca_name(s->etcd_clusters[i]);
                if (!n || strv_extend(&l, n) < 0)
                        return NULL;
        }
        return TAKE_PTR(l);
}

const char *certs_apiserver_etcd_cluster(const CertsSettings *s) {
        if (strv_contains(s->etcd_clusters, ETCD_MAIN_CLUSTER))
                return ETCD_MAIN_CLUSTER;
        return s->etcd_clusters ? s->etcd_clusters[0] : NULL;
}

static int layout_etcd(const CertsSettings *s, const char *c, CertsLayout *l) {
        _cleanup_free_ char *dir = pki_layout_etcd_dir(s->pki_dir, c);
        if (!dir)
                return -EINVAL;
        int r = add_leaf(l, CERTS_ETCD_SERVER, strdup(dir), PKI_ETCD_SERVER_PAIR,
                         keystore_etcd_client_ca_name(c), c, false);
        if (r >= 0)
                r = add_leaf(l, CERTS_ETCD_PEER, strdup(dir), PKI_ETCD_PEER_PAIR,
                             keystore_etcd_peer_ca_name(c), c, false);
        if (r >= 0)
                r = add_file(l, CERTS_FILE_CA, strjoin(dir, "/", PKI_CA_FILE), etcd_client_cas(s), NULL,
                             NULL, c);
        if (r >= 0)
                r = add_file(l, CERTS_FILE_CA, strjoin(dir, "/", PKI_ETCD_PEER_CA_FILE),
                             ca_list_take(keystore_etcd_peer_ca_name(c)), NULL, NULL, c);
        return r;
}

static int layout_apiserver(const CertsSettings *s, CertsLayout *l) {
        const char *d = PKI_APISERVER_DIR, *main_cluster = certs_apiserver_etcd_cluster(s);
        struct {
                CertsLeafKind kind;
                const char *name;
                char *signer;
        } leaves[] = {
                { CERTS_APISERVER, PKI_APISERVER_PAIR, strdup(KEYSTORE_CLUSTER_CA) },
                { CERTS_APISERVER_ETCD_CLIENT, PKI_APISERVER_ETCD_CLIENT_PAIR,
                  main_cluster ? keystore_etcd_client_ca_name(main_cluster) : NULL },
                { CERTS_APISERVER_KUBELET_CLIENT, PKI_APISERVER_KUBELET_PAIR, strdup(KEYSTORE_CLUSTER_CA) },
                { CERTS_FRONT_PROXY_CLIENT, PKI_FRONT_PROXY_CLIENT_PAIR, strdup(KEYSTORE_FRONT_PROXY_CA) },
        };
        int r = 0;
        for (size_t i = 0; i < ELEMENTSOF(leaves); i++) {
                if (leaves[i].kind == CERTS_APISERVER_ETCD_CLIENT && !main_cluster)
                        continue; /* no etcd cluster: nothing to be a client of */
                if (r >= 0)
                        r = add_leaf(l, leaves[i].kind, pki_layout_dir(s->pki_dir, d), leaves[i].name,
                                     TAKE_PTR(leaves[i].signer), NULL, true);
                free(leaves[i].signer);
        }
        if (r >= 0)
                r = add_file(l, CERTS_FILE_CA, pki_layout_file(s->pki_dir, d, PKI_CA_FILE),
                             ca_list(KEYSTORE_CLUSTER_CA), NULL, NULL, NULL);
        if (r >= 0 && main_cluster)
                r = add_file(l, CERTS_FILE_CA, pki_layout_file(s->pki_dir, d, PKI_APISERVER_ETCD_CA_FILE),
                             etcd_client_cas(s), NULL, NULL, NULL);
        if (r >= 0)
                r = add_file(l, CERTS_FILE_CA, pki_layout_file(s->pki_dir, d, PKI_FRONT_PROXY_CA_FILE),
                             ca_list(KEYSTORE_FRONT_PROXY_CA), NULL, NULL, NULL);
        if (r >= 0)
                r = add_file(l, CERTS_FILE_SA_PUBLIC, pki_layout_file(s->pki_dir, d, PKI_SA_PUBLIC_FILE),
                             NULL, NULL, NULL, NULL);
        if (r >= 0)
                r = add_file(l, CERTS_FILE_SA_KEY, pki_layout_file(s->pki_dir, d, PKI_SA_KEY_FILE), NULL,
                             NULL, NULL, NULL);
        return r;
}

/* A component with a kubeconfig: its client pair, the cluster CA, the kubeconfig naming both. */
static int layout_kubeconfig_user(const CertsSettings *s, CertsLeafKind kind, const char *dir, bool restarts,
                                  char *server, CertsLayout *l) {
        int r = add_leaf(l, kind, pki_layout_dir(s->pki_dir, dir), PKI_CLIENT_PAIR,
                         strdup(KEYSTORE_CLUSTER_CA), NULL, restarts);
        if (r >= 0)
                r = add_file(l, CERTS_FILE_CA, pki_layout_file(s->pki_dir, dir, PKI_CA_FILE),
                             ca_list(KEYSTORE_CLUSTER_CA), NULL, NULL, NULL);
        if (r >= 0)
                return add_file(l, CERTS_FILE_KUBECONFIG,
                                pki_layout_file(s->pki_dir, dir, PKI_KUBECONFIG_FILE), NULL,
                                certs_leaf_kind_to_string(kind), server, NULL);
        free(server);
        return r;
}

static char *local_server(const CertsSettings *s) {
        return strprintf("https://127.0.0.1:%d", s->apiserver_port);
}

/* A component that delegates authentication to the apiserver (controller-manager, scheduler): a kubeconfig
 * user that also holds the front-proxy CA, so that it trusts the aggregator without reading the
 * extension-apiserver-authentication ConfigMap at start (spec-pki.c). */
static int layout_delegating(const CertsSettings *s, CertsLeafKind kind, const char *dir, CertsLayout *l) {
        int r = layout_kubeconfig_user(s, kind, dir, true, local_server(s), l);
        if (r >= 0)
                r = add_file(l, CERTS_FILE_CA, pki_layout_file(s->pki_dir, dir, PKI_FRONT_PROXY_CA_FILE),
                             ca_list(KEYSTORE_FRONT_PROXY_CA), NULL, NULL, NULL);
        return r;
}

/* https://api.<domain>[:port]: a name protokube publishes. */
static char *api_server(const CertsSettings *s, const char *domain) {
        return api_server_url(domain, s->apiserver_port);
}

/* The operator's: the API's public name. */
static char *admin_server(const CertsSettings *s) {
        return api_server(s, s->cluster_name);
}

/* kubelet's API. With static pods its own apiserver at 127.0.0.1, which kubelet itself runs, as kops does.
 * Self-hosted, its own apiserver is one pod of a DaemonSet the cluster rolls: through 127.0.0.1 kubelet lost
 * the API while that pod was replaced, so it never saw the new pod, its Node went unreachable, and the
 * DaemonSet, no longer counting that master, went on to the next; the three-master demo lost every
 * apiserver at once. Through api.internal it reaches the others meanwhile. */
static char *kubelet_server(const CertsSettings *s) {
        /* api.internal.<C>: every master's apiserver (docs/pki.md) */
        return s->self_hosted && !isempty(s->internal_suffix) ? api_server(s, s->internal_suffix)
                                                              : local_server(s);
}

int certs_layout(const CertsSettings *s, CertsLayout *ret) {
        CertsLayout l = {};
        int r = 0;
        if (!s->pki_dir || s->pki_dir[0] != '/' || isempty(s->cluster_name) || s->apiserver_port <= 0)
                return -EINVAL;
        for (size_t i = 0; r >= 0 && s->etcd_clusters && s->etcd_clusters[i]; i++)
                r = layout_etcd(s, s->etcd_clusters[i], &l);
        if (r >= 0)
                r = layout_apiserver(s, &l);
        if (r >= 0)
                r = layout_delegating(s, CERTS_CONTROLLER_MANAGER, PKI_CONTROLLER_MANAGER_DIR, &l);
        if (r >= 0)
                r = add_file(&l, CERTS_FILE_SA_KEY,
                             pki_layout_file(s->pki_dir, PKI_CONTROLLER_MANAGER_DIR, PKI_SA_KEY_FILE), NULL,
                             NULL, NULL, NULL);
        if (r >= 0)
                r = layout_delegating(s, CERTS_SCHEDULER, PKI_SCHEDULER_DIR, &l);
        if (r >= 0 && s->kube_proxy)
                r = layout_kubeconfig_user(s, CERTS_PROXY, PKI_PROXY_DIR, true, local_server(s), &l);
        if (r >= 0)
                r = layout_kubeconfig_user(s, CERTS_ADMIN, PKI_ADMIN_DIR, false, admin_server(s), &l);
        /* kubelet is no static pod: it reads its certificate at start (restarted by its service manager) */
        if (r >= 0)
                r = layout_kubeconfig_user(s, CERTS_KUBELET, PKI_KUBELET_DIR, false, kubelet_server(s), &l);
        /* protokube's own API client (kube/): read at each use, so no component restarts for it */
        if (r >= 0)
                r = layout_kubeconfig_user(s, CERTS_PROTOKUBE, PKI_PROTOKUBE_DIR, false, local_server(s),
                                           &l);
        if (r < 0) {
                certs_layout_done(&l);
                return r;
        }
        *ret = l;
        return 0;
}

/* The first address of a CIDR ("100.64.0.0/13" -> "100.64.0.1"), as kube-apiserver takes it for the
 * kubernetes service. */
static int first_service_ip(const char *cidr, char **ret) {
        _cleanup_free_ char *addr = NULL;
        const char *slash = cidr ? strchr(cidr, '/') : NULL;
        if (!slash)
                return -EINVAL;
        addr = strndup(cidr, (size_t)(slash - cidr));
        if (!addr)
                return -ENOMEM;
        uint8_t b[16];
        int family = strchr(addr, ':') ? AF_INET6 : AF_INET;
        size_t n = family == AF_INET ? 4 : 16;
        char text[INET6_ADDRSTRLEN];
        if (inet_pton(family, addr, b) != 1)
                return -EINVAL;
        for (size_t i = n; i-- > 0;) /* + 1, carrying */
                if (++b[i] != 0)
                        break;
        if (!inet_ntop(family, b, text, sizeof(text)))
                return -EINVAL;
        return (*ret = strdup(text)) ? 0 : -ENOMEM;
}

static int push_all(char ***l, char *const *items) {
        for (size_t i = 0; items && items[i]; i++)
                if (strv_extend(l, items[i]) < 0)
                        return -ENOMEM;
        return 0;
}

static int etcd_sans(const CertsSettings *s, const CertsLeafSlot *slot, const char *member,
                     const CertsNode *node, CertsLeafPlan *p) {
        _cleanup_free_ char *dns = NULL;
        int r = etcd_member_name(slot->etcd_cluster, member, &p->cn);
        if (r >= 0)
                r = etcd_member_dns_name(slot->etcd_cluster, member, s->internal_suffix, &dns);
        if (r < 0)
                return r;
        p->dns = strv_new(dns, "localhost");
        p->ips = strv_new(NULL);
        if (!p->dns || !p->ips || push_all(&p->ips, node->ips) < 0 || strv_extend(&p->ips, "127.0.0.1") < 0)
                return -ENOMEM;
        p->usage = PKI_USAGE_SERVER | PKI_USAGE_CLIENT;
        return 0;
}

static int apiserver_sans(const CertsSettings *s, const CertsNode *node, CertsLeafPlan *p) {
        _cleanup_free_ char *api = NULL, *api_internal = NULL, *svc = NULL, *first = NULL;
        int r = api_dns_name(s->cluster_name, &api);
        if (r >= 0)
                r = api_dns_name(s->internal_suffix, &api_internal);
        if (r >= 0)
                r = first_service_ip(s->service_range, &first);
        if (r < 0)
                return r;
        svc = strprintf("kubernetes.default.svc.%s", s->cluster_domain);
        p->cn = strdup(KUBE_APISERVER_CN);
        p->dns =
            strv_new(api, api_internal, "kubernetes", "kubernetes.default", "kubernetes.default.svc", svc);
        p->ips = strv_new(first);
        if (!svc || !p->cn || !p->dns || !p->ips || push_all(&p->ips, node->ips) < 0 ||
            strv_extend(&p->ips, "127.0.0.1") < 0)
                return -ENOMEM;
        p->usage = PKI_USAGE_SERVER;
        return 0;
}

/* What a client certificate says: CN (the user) and O (its group). */
static int client_subject(CertsLeafKind k, CertsLeafPlan *p) {
        static const struct {
                const char *cn, *org;
        } table[_CERTS_LEAF_KIND_MAX] = {
                [CERTS_APISERVER_ETCD_CLIENT] = { "kube-apiserver-etcd-client", NULL },
                [CERTS_APISERVER_KUBELET_CLIENT] = { "kube-apiserver-kubelet-client", "system:masters" },
                [CERTS_FRONT_PROXY_CLIENT] = { "front-proxy-client", NULL },
                [CERTS_CONTROLLER_MANAGER] = { "system:kube-controller-manager", NULL },
                [CERTS_SCHEDULER] = { "system:kube-scheduler", NULL },
                [CERTS_PROXY] = { "system:kube-proxy", NULL },
                [CERTS_ADMIN] = { "kubernetes-admin", "system:masters" },
                /* it creates the RBAC and the control plane before any binding exists (docs/pki.md) */
                [CERTS_PROTOKUBE] = { "protokube", "system:masters" },
        };
        if (k < 0 || k >= _CERTS_LEAF_KIND_MAX || !table[k].cn)
                return -EINVAL;
        p->cn = strdup(table[k].cn);
        p->org = table[k].org;
        p->usage = PKI_USAGE_CLIENT;
        return p->cn ? 0 : -ENOMEM;
}

/* The node authorizer's identity: user system:node:<name> in group system:nodes. */
static int kubelet_subject(const CertsNode *node, CertsLeafPlan *p) {
        if (!node->name)
                return -EINVAL;
        p->cn = strprintf("system:node:%s", node->name);
        p->org = "system:nodes";
        p->usage = PKI_USAGE_CLIENT;
        return p->cn ? 0 : -ENOMEM;
}

int certs_leaf_request(const CertsSettings *s, const CertsLeafSlot *slot, const char *member,
                       const CertsNode *node, CertsLeafPlan *p) {
        switch (slot->kind) {
        case CERTS_KUBELET:
                return kubelet_subject(node, p);
        case CERTS_ETCD_SERVER:
        case CERTS_ETCD_PEER:
                return etcd_sans(s, slot, member, node, p);
        case CERTS_APISERVER:
                return apiserver_sans(s, node, p);
        default:
                return client_subject(slot->kind, p);
        }
}
