/* SPDX-License-Identifier: Apache-2.0 */
/* The helpers more than one step needs (pass-types.h). */
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "cloud/providers.h"
#include "components/etcd.h"
#include "components/kubelet.h"
#include "daemon/pass-types.h"
#include "dns/dns-wire.h"
#include "model/pki-layout.h"
#include "shared/http.h"

int pass_open_volume_provider(const ClusterSpec *spec, const NodeSettings *node, VolumeProvider **ret) {
        const char *cloud = cloud_provider_to_string(spec->cloud.value); /* defaulted by the spec */
        VolumeProviderConfig pc = {
                .pool_dir = node->pool_dir,
                .node_name = node->node_name,
                .zone = node->zone,
                .internal_ip = node->internal_ip,
                .external_ip = node->external_ip,
                .machine_id_file = node->machine_id_file,
        };
        _cleanup_free_ char *detail = NULL;
        int r = volume_provider_open(strna(cloud), &pc, ret, &detail);
        if (r < 0) {
                if (detail)
                        return log_error_errno(r, "Failed to open the '%s' volume provider: %s",
                                               strna(cloud), detail);
                return log_error_errno(r, "Failed to open the '%s' volume provider: %m", strna(cloud));
        }
        return 0;
}

Store *pass_store(PassContext *ctx, Store **owned, char **ret_error) {
        const Pass *p = ctx->pass;
        if (ctx->store && p->certs.store_url && streq(p->certs.store_url, p->spec->state_store))
                return ctx->store;
        if (store_open(p->spec->state_store, owned, ret_error) < 0)
                return NULL;
        return *owned;
}

CertsSettings pass_certs_settings(const ClusterSpec *spec, char *const *etcd_clusters) {
        const PkiSpec *pki = &spec->pki;
        /* The loaded spec holds every default (spec.c's table: ecdsa-p256, rsa-2048, 87600h, 8760h): none is
         * derived again here. SpecKeyType has PkiKeyType's values in its order (spec/spec.h). */
        return (CertsSettings){
                .store_url = spec->state_store,
                .pki_dir = pki->dir,
                .key_type = (PkiKeyType)pki->key_type.value,
                .sa_key_type = (PkiKeyType)pki->service_account_key_type.value,
                .ca_lifetime = pki->ca_lifetime.value,
                .leaf_lifetime = pki->certificate_lifetime.value,
                .cluster_name = spec->name,
                .internal_suffix = spec->dns.internal_suffix,
                .cluster_domain = spec->cluster_dns_domain,
                .service_range = cluster_spec_service_range(spec),
                .apiserver_port = (int)pass_apiserver_port(spec),
                .etcd_clusters = etcd_clusters,
                .kube_proxy = !spec->kube_proxy.enabled.set || spec->kube_proxy.enabled.value,
                .self_hosted = spec->self_hosted.set && spec->self_hosted.value,
        };
}

int pass_render_member(const Pass *pass, const VolumeEligibility *e, const char *id, bool existing,
                       const char *image, char **ret) {
        _cleanup_free_ char *mount = volume_mount_path(pass->node.mount_root, id);
        if (!mount)
                return -ENOMEM;
        EtcdMemberAssignment a = {
                .cluster = e->etcd.cluster,
                .member = e->etcd.member,
                .members = e->etcd.members,
                .mount_path = mount,
                .existing = existing,
                .image = image,
        };
        return etcd_manifest_render(pass->spec, &a, ret);
}

int pass_dns_observed(PassContext *ctx, int r, char **error) {
        PassObservation *o = ctx->obs;
        _cleanup_free_ char *note = ctx->dns ? dns_session_take_note(ctx->dns) : NULL;
        if (note)
                log_info("%s", note);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                o->dns_error = r;
                o->dns_message = TAKE_PTR(*error);
                ctx->dns = dns_session_free(ctx->dns);
        }
        o->dns_enabled = ctx->dns;
        o->dns_tracks_ttl = dns_session_tracks_ttl(ctx->dns);
        return 0;
}

void pass_dns_log_changes(const DnsRRsetList *changes, const char *provider) {
        for (size_t i = 0; i < changes->n; i++) {
                const DnsRRset *s = &changes->items[i];
                _cleanup_free_ char *addrs = s->addresses ? strv_join(s->addresses, ",") : NULL;
                if (isempty(addrs))
                        log_info("DNS (%s): deleted %s %s.", provider, s->name,
                                 s->type == DNS_TYPE_AAAA ? "AAAA" : "A");
                else
                        log_info("DNS (%s): %s %s -> %s (TTL %u).", provider, s->name,
                                 s->type == DNS_TYPE_AAAA ? "AAAA" : "A", addrs, s->ttl);
        }
}

bool pass_dns_plannable(const PassObservation *o, const PassPlan *plan) {
        return o->volumes_error >= 0 && o->dns_error >= 0 && o->dns_enabled && plan->view &&
               (plan->view->n_masters > 0 || plan->view->n_members > 0);
}

bool pass_member_existing(const PassObservation *o, const PassPlan *plan, size_t i) {
        const MemberPlan *d = plan->member_plans ? &plan->member_plans[i] : NULL;
        if (!d || !o->etcd_members || !o->etcd_members[i].observed)
                return false;
        if (d->decision != MEMBER_KEEP)
                return d->existing;
        const char *text = o->in.observed ? o->in.observed[i].manifest_text : NULL;
        return d->existing || (text && strstr(text, "--initial-cluster-state=existing"));
}

char *pass_api_kubeconfig(const ClusterSpec *spec) {
        return pki_layout_file(spec->pki.dir ?: PKI_DIR_DEFAULT, PKI_PROTOKUBE_DIR, PKI_KUBECONFIG_FILE);
}

int pass_open_api(const char *kubeconfig, const char *host, unsigned port, const char *address,
                  usec_t timeout, KubeClient **ret, char **ret_error) {
        _cleanup_(kube_client_freep) KubeClient *c = NULL;
        _cleanup_free_ char *server = host ? strprintf("https://%s:%u", host, port) : NULL,
                            *to = host && address ? http_connect_to_address(host, port, address) : NULL;
        if ((host && !server) || (host && address && !to))
                return -ENOMEM;
        int r = kube_client_new_from_kubeconfig(kubeconfig, &c, ret_error);
        if (r >= 0 && host)
                r = kube_client_override(c, &(KubeClientConfig){ .server = server, .connect_to = to },
                                         ret_error);
        if (r < 0)
                return r;
        kube_client_set_retry(c, &(KubeRetryPolicy){ .max_tries = 1, .request_timeout = timeout });
        *ret = TAKE_PTR(c);
        return 0;
}

int pass_print_status(FILE *out, const char *name, const char *cannot, int status, const char *note) {
        if (status == PK_EWAITING) { /* a code below zero too: before the failures */
                fprintf(out, "%s: waiting: %s\n", name, strna(note));
                return 1;
        }
        if (status < 0) {
                fprintf(out, "%s: %s: %s\n", name, cannot, strna(note));
                return log_error_errno(status, "%s: %s", name, strna(note));
        }
        return 0;
}

char *pass_kubelet_file(const Pass *p, const char *name) {
        return strjoin(p->node.kubelet_dir, "/", name);
}

#define KUBELET_FILE_MAX (1024U * 1024U)

int pass_kubelet_read(const Pass *p, const char *name, bool secret, char **ret, size_t *ret_len) {
        _cleanup_free_ char *path = pass_kubelet_file(p, name);
        size_t len = 0;
        if (!path)
                return -ENOMEM;
        int r = secret ? read_full_file_secret(path, KUBELET_FILE_MAX, ret, &len)
                       : read_full_file(path, KUBELET_FILE_MAX, ret, &len);
        if (r == -ENOENT) {
                *ret = NULL;
                r = 0;
        }
        if (ret_len)
                *ret_len = len;
        return r;
}

int pass_kubelet_write(PassContext *ctx, const char *name, const void *data, size_t len, mode_t mode) {
        _cleanup_free_ char *path = pass_kubelet_file(ctx->pass, name);
        int r = path ? mkdir_p(ctx->pass->node.kubelet_dir, 0755) : -ENOMEM;
        if (r >= 0)
                r = write_file_atomic(path, data, len, mode, true);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                log_error_errno(r, "kubelet: cannot write %s: %m", path);
                _cleanup_free_ char *why = strprintf("kubelet: cannot write %s: %s", path, pk_strerror(r));
                pass_report_error(ctx->rep, PASS_STAGE_KUBELET, r, why);
                return r;
        }
        if (r > 0) {
                log_info("kubelet: wrote %s.", path);
                ctx->rep->actions_applied++;
        }
        return 0;
}

int pass_kubelet_node_flags(const Pass *p, const ClusterSpec *node_spec, char ***flags) {
        _cleanup_free_ char *name = p->node.node_name ? strjoin("--hostname-override=", p->node.node_name)
                                                      : NULL,
                            *ip = p->node.internal_ip ? strjoin("--node-ip=", p->node.internal_ip) : NULL,
                            *certs = strjoin("--cert-dir=", p->node.kubelet_dir, "/" PASS_KUBELET_CERT_DIR),
                            *lock = pass_kubelet_file(p, KUBELET_LOCK_FILE);
        if ((p->node.node_name && !name) || (p->node.internal_ip && !ip) || !certs || !lock)
                return -ENOMEM;
        if (strv_extend(flags, certs) < 0)
                return -ENOMEM;
        if ((name && strv_extend(flags, name) < 0) || (ip && strv_extend(flags, ip) < 0))
                return -ENOMEM;
        return kubelet_handoff_flags(node_spec, lock, flags);
}

int pass_open_api_at(const ClusterSpec *spec, const char *kubeconfig, const char *address, usec_t timeout,
                     KubeClient **ret, char **ret_error) {
        _cleanup_free_ char *host = NULL;
        int r = api_dns_name(spec->dns.internal_suffix, &host);
        if (r < 0)
                return error_setf(ret_error, r, "the API's internal name: %s", pk_strerror(r));
        return pass_open_api(kubeconfig, host, pass_apiserver_port(spec), address, timeout, ret, ret_error);
}

int pass_open_own_api(const PassContext *ctx, usec_t timeout, KubeClient **ret, char **ret_error) {
        const Pass *p = ctx->pass;
        const NodeIdentity *self = &ctx->obs->volumes.node;
        _cleanup_free_ char *kubeconfig = pass_api_kubeconfig(p->spec);
        if (!kubeconfig)
                return -ENOMEM;
        if (strv_length(self->internal_ips) == 0 || !cluster_spec_pki_managed(p->spec))
                return error_setf(ret_error, PK_EWAITING, "this master has no address or API identity yet");
        return pass_open_api_at(p->spec, kubeconfig, self->internal_ips[0], timeout, ret, ret_error);
}

int pass_report_status(PassContext *ctx, PassStage stage, const char *name, int status, const char *note) {
        if (status == 0)
                return 0;
        if (status == PK_EWAITING)
                log_info("%s: %s.", name, strna(note));
        else
                log_error_errno(status, "%s: %s", name, strna(note));
        _cleanup_free_ char *why = strjoin(name, ": ", strna(note));
        pass_report_error(ctx->rep, stage, status, why ?: note);
        return 1;
}

int pass_view_master_address(const PassObservation *o, char **ret) {
        _cleanup_(cluster_view_freep) ClusterView *view = NULL;
        int r = o->volumes_error < 0 ? o->volumes_error : volumes_view(&o->in, NULL, &view);
        if (r == -ENOMEM)
                return r;
        for (size_t i = 0; r >= 0 && i < view->n_masters; i++)
                if (strv_length(view->masters[i].internal_ips) > 0) {
                        *ret = strdup(view->masters[i].internal_ips[0]);
                        return *ret ? 0 : -ENOMEM;
                }
        return PK_EWAITING;
}

void pass_join_statuses_done(PassJoinStatus s[static _PASS_JOIN_STAGE_MAX]) {
        for (size_t i = 0; i < _PASS_JOIN_STAGE_MAX; i++) {
                free(s[i].note);
                s[i] = (PassJoinStatus){};
        }
}

int pass_join_status_set(PassJoinStatus *s, int status, char *note) {
        s->known = true;
        s->status = status;
        free(s->note);
        s->note = note;
        return note ? 0 : -ENOMEM;
}

const char *pass_join_stage_to_string(PassJoinStage s) {
        static const char *const names[_PASS_JOIN_STAGE_MAX] = {
                [PASS_JOIN_DNS] = "dns", [PASS_JOIN_TOKEN] = "token", [PASS_JOIN_PIN] = "pin",
                [PASS_JOIN_CSR] = "csr", [PASS_JOIN_NODE] = "node",
        };
        return s >= 0 && s < _PASS_JOIN_STAGE_MAX ? names[s] : NULL;
}
