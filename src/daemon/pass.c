/* SPDX-License-Identifier: Apache-2.0 */
#include "daemon/pass.h"

#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/path-util.h"
#include "basic/stop.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "basic/trace.h"
#include "cloud/providers.h"
#include "daemon/loop.h"
#include "daemon/node-lock.h"
#include "daemon/progress.h"
#include "dns/dns-provider.h"
#include "dns/dns-wire.h"
#include "manifest/manifest-dir.h"
#include "model/cluster-view.h"

static void report_log(void *userdata, int level, int error, const char *message) {
        PassReport *rep = userdata;
        log_full_errno((LogLevel)level, error, "%s", message);
        if (rep && level <= LOG_LEVEL_ERROR && error < 0 && !rep->reason)
                rep->reason = strdup(message);
}

static void report_progress(void *userdata, const char *step) {
        pass_progress_step("%s", step);
}

static int load_spec(const char *path, ClusterSpec **ret, char ***ret_etcd_clusters) {
        _cleanup_strv_free_ char **errors = NULL, **names = NULL;
        _cleanup_(cluster_spec_freep) ClusterSpec *spec = NULL;
        int r = cluster_spec_load(path, &spec, &errors);
        trace_mark("spec loaded");
        if (r < 0) {
                STRV_FOREACH (e, errors)
                        log_error("%s", *e);
                return log_error_errno(r, "Failed to load the cluster spec '%s': %m", path);
        }
        names = calloc(1, sizeof(char *));
        if (!names)
                return log_oom();
        for (size_t i = 0; i < spec->etcd_clusters.n; i++)
                if (strv_extend(&names, cluster_spec_etcd(spec, i)->name) < 0)
                        return log_oom();
        *ret = TAKE_PTR(spec);
        *ret_etcd_clusters = TAKE_PTR(names);
        return 0;
}

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

Store *pass_store(const Pass *p, const PassObservation *o, Store **owned, char **ret_error) {
        if (o->certs.store && p->certs.store_url && streq(p->certs.store_url, p->spec->state_store))
                return o->certs.store;
        if (store_open(p->spec->state_store, owned, ret_error) < 0)
                return NULL;
        return *owned;
}

/* The spec's certificate settings, for the certs room (which does not know the spec). */
CertsSettings pass_certs_settings(const ClusterSpec *spec, char *const *etcd_clusters) {
        const KubeAPIServerConfig *a = &spec->kube_apiserver;
        const PkiSpec *pki = &spec->pki;
        /* SpecKeyType has PkiKeyType's values in its order (spec/spec.h) */
        return (CertsSettings){
                .store_url = spec->state_store,
                .pki_dir = pki->dir,
                .key_type = pki->key_type.set ? (PkiKeyType)pki->key_type.value : PKI_KEY_ECDSA_P256,
                .sa_key_type = pki->service_account_key_type.set
                                   ? (PkiKeyType)pki->service_account_key_type.value
                                   : PKI_KEY_RSA_2048,
                .ca_lifetime = pki->ca_lifetime.set ? pki->ca_lifetime.value : 0,
                .leaf_lifetime = pki->certificate_lifetime.set ? pki->certificate_lifetime.value : 0,
                .cluster_name = spec->name,
                .internal_suffix = spec->dns.internal_suffix,
                .cluster_domain = spec->cluster_dns_domain,
                .service_range = cluster_spec_service_range(spec),
                .apiserver_port = a->secure_port.set ? (int)a->secure_port.value : 443,
                .etcd_clusters = etcd_clusters,
                .kube_proxy = !spec->kube_proxy.enabled.set || spec->kube_proxy.enabled.value,
                .self_hosted = spec->self_hosted.set && spec->self_hosted.value,
        };
}

/* The volume steps' settings for this node and spec; reports go to the log (and, during a run, the report).
 */
static void pass_configure(Pass *p) {
        p->certs = pass_certs_settings(p->spec, p->etcd_clusters);
        p->certs.pair_cache = p->pair_cache;
        p->certs.keystore_cache = p->keystore_cache;
        p->n_backups_seen = 0; /* a reloaded spec may name another store: its backups are listed anew */
        p->cfg = (VolumesPassConfig){
                .cluster = p->spec->name,
                .etcd_clusters = p->etcd_clusters,
                .mount_root = p->node.mount_root,
                .manifest_dir = p->node.manifest_dir,
                .report = report_log,
                .progress = report_progress,
        };
}

int pass_new(const char *spec_path, const NodeSettings *node, Pass **ret) {
        _cleanup_(pass_freep) Pass *p = new0(Pass, 1);
        int r;

        if (!p || !(p->spec_path = strdup(spec_path)))
                return log_oom();
        p->node = *node;
        if (pki_pair_cache_new(&p->pair_cache) < 0 || keystore_cache_new(&p->keystore_cache) < 0)
                return log_oom();
        r = path_canonicalize(node->mount_root, &p->mount_root);
        if (r < 0)
                return log_error_errno(r, "Failed to resolve the mount root '%s': %m", node->mount_root);
        p->node.mount_root = p->mount_root;
        r = load_spec(spec_path, &p->spec, &p->etcd_clusters);
        if (r < 0)
                return r;
        r = pass_open_volume_provider(p->spec, node, &p->provider);
        if (r < 0)
                return r;
        pass_configure(p);
        *ret = TAKE_PTR(p);
        return 0;
}

Pass *pass_free(Pass *p) {
        if (!p)
                return NULL;
        volume_provider_free(p->provider);
        strv_free(p->etcd_clusters);
        cluster_spec_free(p->spec);
        free(p->spec_path);
        free(p->mount_root);
        dns_pending_done(&p->dns_pending);
        pki_pair_cache_free(p->pair_cache);
        keystore_cache_free(p->keystore_cache);
        free(p);
        return NULL;
}

int pass_reload(Pass *p) {
        ClusterSpec *spec = NULL;
        char **names = NULL;
        VolumeProvider *provider = NULL;
        int r = load_spec(p->spec_path, &spec, &names);
        if (r < 0)
                return r;
        r = pass_open_volume_provider(spec, &p->node, &provider);
        if (r < 0) {
                cluster_spec_free(spec);
                strv_free(names);
                return r;
        }
        /* changes of another DNS provider are not this one's to ask about */
        if (spec->dns.provider.value != p->spec->dns.provider.value)
                dns_pending_done(&p->dns_pending);
        volume_provider_free(p->provider);
        strv_free(p->etcd_clusters);
        cluster_spec_free(p->spec);
        p->provider = provider;
        p->etcd_clusters = names;
        p->spec = spec;
        pass_configure(p);
        log_info("Reloaded the cluster spec '%s'.", p->spec_path);
        return 0;
}

#define PASS_ROUNDS_MAX 16 /* observe and plan again after lost claims; each round some node wins one */

/* Where a failed volume action counts in the report. */
static PassStage volumes_error_stage(VolumesErrorKind k) {
        static const PassStage stages[_VOLUMES_ERROR_MAX] = {
                [VOLUMES_ERROR_CLAIM] = PASS_STAGE_CLAIM, [VOLUMES_ERROR_DEVICE] = PASS_STAGE_DEVICE,
                [VOLUMES_ERROR_FSCK] = PASS_STAGE_FSCK,   [VOLUMES_ERROR_FORMAT] = PASS_STAGE_FORMAT,
                [VOLUMES_ERROR_MOUNT] = PASS_STAGE_MOUNT, [VOLUMES_ERROR_MANIFEST] = PASS_STAGE_MANIFEST,
        };
        return stages[k];
}

static void report_volumes(PassReport *rep, const VolumesPassResult *res) {
        rep->actions_applied += res->n_changes;
        rep->volumes_held = res->n_ready;
        rep->volumes_member_conflicts = res->n_member_conflicts;
        unsigned by_action = 0;
        for (int k = 0; k < _VOLUMES_ERROR_MAX; k++)
                for (unsigned n = 0; n < res->errors[k]; n++, by_action++)
                        pass_report_error(rep, volumes_error_stage(k), -EIO,
                                          "a volume is stuck on an error (see the log)");
        /* the rest are selections stuck before any action (another device on the mount point, a duplicate
         * held mounted): they count where a volume is chosen */
        for (unsigned n = by_action; n < res->n_errors; n++)
                pass_report_error(rep, PASS_STAGE_CLAIM, -EIO,
                                  "a volume is stuck on an error (see the log)");
        if (res->n_waiting > 0) {
                _cleanup_free_ char *why =
                    strprintf("%u etcd cluster(s) have no volume for this node yet", res->n_waiting);
                pass_report_error(rep, PASS_STAGE_CLAIM, PK_EWAITING, why);
        }
}

static void log_dns_changes(const DnsRRsetList *changes, const char *provider) {
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

/* The changes earlier passes submitted: one status request each (no waiting); those served everywhere now
 * leave the list. A failed request is a warning: the records are in place, only the news is late. */
static void follow_dns_changes(Pass *p, const PassObservation *o) {
        _cleanup_dns_pending_ DnsPending settled = {};
        _cleanup_free_ char *error = NULL;
        if (!o->dns || p->dns_pending.n == 0)
                return;
        pass_progress_step("DNS: following %zu change(s)", p->dns_pending.n);
        int r = dns_session_check_pending(o->dns, &p->dns_pending, &settled, &error);
        if (r == -ENOMEM)
                log_oom();
        else if (r < 0)
                log_warning_errno(r, "%s; will ask again at the next pass.", strna(error));
        usec_t t = now(CLOCK_MONOTONIC);
        for (size_t i = 0; i < settled.n; i++)
                log_info("DNS (%s): change '%s' INSYNC: served by every name server, %.1f s after it was "
                         "submitted.",
                         dns_session_provider(o->dns), settled.items[i].id,
                         (double)(t - settled.items[i].submitted) / USEC_PER_SEC);
}

/* The changes this pass's apply submitted, to follow from the next pass on. */
static void take_dns_changes(Pass *p, const PassObservation *o) {
        size_t before = p->dns_pending.n;
        int r = dns_session_take_submitted(o->dns, &p->dns_pending, now(CLOCK_MONOTONIC));
        if (r < 0) {
                log_error_errno(r, "Failed to keep the DNS change ids: %m");
                return;
        }
        for (size_t i = before; i < p->dns_pending.n; i++)
                log_info("DNS (%s): change '%s' accepted; propagating to the name servers (not waited for: "
                         "asked about at the next passes).",
                         dns_session_provider(o->dns), p->dns_pending.items[i].id);
}

static void apply_dns(Pass *p, const PassObservation *o, const PassPlan *plan, PassReport *rep) {
        follow_dns_changes(p, o);
        if (plan->dns_status == PK_EWAITING) {
                log_info("DNS: %s", strna(plan->dns_note));
                return;
        }
        if (plan->dns_status < 0) {
                log_error_errno(plan->dns_status, "DNS publication failed: %s", strna(plan->dns_note));
                _cleanup_free_ char *why = strprintf("DNS: %s", strna(plan->dns_note));
                pass_report_error(rep, PASS_STAGE_DNS, plan->dns_status, why);
                return;
        }
        if (!o->dns)
                return;
        if (plan->dns_send) {
                _cleanup_free_ char *error = NULL;
                int r = dns_session_apply(o->dns, &plan->dns_changes, &error);
                trace_mark("DNS: UPDATE answered");
                if (r < 0) {
                        take_dns_changes(p, o); /* a zone's change accepted before another failed */
                        log_error_errno(r, "DNS publication failed: %s", strna(error));
                        _cleanup_free_ char *why = strprintf("DNS: %s", strna(error));
                        pass_report_error(rep, PASS_STAGE_DNS, r, why);
                        return;
                }
                log_dns_changes(&plan->dns_changes, dns_session_provider(o->dns));
                rep->actions_applied += (unsigned)plan->dns_changes.n;
                take_dns_changes(p, o);
        }
        /* What the provider now serves is the desired set: count its records. */
        for (size_t i = 0; i < plan->dns_desired.n; i++)
                rep->records_published += (unsigned)strv_length(plan->dns_desired.items[i].addresses);
        if (plan->api_note) { /* the names are not final yet: the pass comes again soon to ask */
                log_info("DNS: %s.", plan->api_note);
                _cleanup_free_ char *why = strprintf("DNS: %s", plan->api_note);
                pass_report_error(rep, PASS_STAGE_DNS, PK_EWAITING, why);
        }
}

static void apply_control_plane(const Pass *p, const PassPlan *plan, PassReport *rep) {
        int r;
        if (plan->render_error == PK_EWAITING) { /* the provider's failure is reported as such */
                log_info("Control-plane manifests kept as they are: %s.", strna(plan->render_failed));
                return;
        }
        if (plan->render_error < 0) {
                log_error_errno(plan->render_error, "Failed to render '%s': %m", strna(plan->render_failed));
                pass_report_error(rep, PASS_STAGE_MANIFEST, plan->render_error,
                                  "cannot render the control-plane manifests");
                return;
        }
        for (size_t i = 0; i < plan->control_plane.n; i++) {
                if (!plan->control_plane_write[i])
                        continue;
                if (stop_requested())
                        return;
                _cleanup_free_ char *path =
                    strjoin(p->node.manifest_dir, "/", plan->control_plane.items[i].file_name);
                r = path ? mkdir_p(p->node.manifest_dir, 0755) : -ENOMEM;
                if (r >= 0)
                        r = manifest_write(path, plan->control_plane.items[i].text);
                if (r < 0) {
                        log_error_errno(r, "Failed to write the manifest '%s': %m", strna(path));
                        pass_report_error(rep, PASS_STAGE_MANIFEST, r,
                                          "cannot write a control-plane manifest");
                } else if (r > 0) {
                        log_info("Wrote manifest '%s'.", path);
                        rep->actions_applied++;
                }
        }
}

/* What the node's certificates are after the pass, for /metrics and /healthz. */
static int report_certs(Pass *p, const PassObservation *o, const PassPlan *plan, PassReport *rep) {
        CertsExpiry *e = NULL;
        size_t n = 0;
        int r = certs_expiries(&p->certs, &o->certs, &plan->certs, now(CLOCK_REALTIME), &e, &n);
        if (r < 0)
                return r;
        rep->certs_known = true;
        rep->n_certs = 0;
        for (size_t i = 0; i < n && rep->n_certs < PASS_CERTS_MAX; i++) {
                PassCertExpiry *c = &rep->certs[rep->n_certs++];
                snprintf(c->name, sizeof(c->name), "%s", e[i].name);
                c->not_after = e[i].not_after;
        }
        certs_expiries_free(e, n);
        return 0;
}

static bool stop_callback(void) {
        return stop_requested();
}

/* The etcd texts to write: the plan's, less those of the members whose certificates could not be issued
 * (apply_certs() takes them out; caller frees the array, not the texts). */
static char **etcd_texts_new(const PassPlan *plan) {
        char **texts = new0(char *, plan->volumes.n_selections + 1);
        for (size_t k = 0; texts && plan->etcd_texts && k < plan->volumes.n_selections; k++)
                texts[k] = plan->etcd_texts[k];
        return texts;
}

/* Part of the certificates, after the claims and before the etcd manifests of the clusters it names
 * (part NULL: all of them at once). */
static int apply_certs(Pass *p, PassObservation *o, const PassPlan *plan, const CertsPart *part,
                       PassReport *rep, char **texts) {
        _cleanup_(certs_result_done) CertsResult res = {};
        if (!plan->certs.managed)
                return 0;
        if (plan->certs.status < 0) {
                if (!part || part->first) {
                        log_error_errno(plan->certs.status, "Certificates: %s", strna(plan->certs.note));
                        pass_report_error(rep, PASS_STAGE_CERTS, plan->certs.status, plan->certs.note);
                }
                return 0;
        }
        pass_progress_step("certificates");
        int r = certs_apply_part(&p->certs, &o->certs, &plan->certs, part, now(CLOCK_REALTIME),
                                 stop_callback, &res);
        if (r == -ECANCELED)
                return 0;
        if (r < 0)
                return r;
        STRV_FOREACH (e, res.errors) {
                log_error("Certificates: %s", *e);
                pass_report_error(rep, PASS_STAGE_CERTS, -EIO, *e);
        }
        for (size_t k = 0; k < plan->volumes.n_selections; k++)
                for (size_t c = 0; p->etcd_clusters[c]; c++)
                        if (res.etcd_failed[c] &&
                            streq(p->etcd_clusters[c], plan->volumes.selections[k].etcd_cluster))
                                texts[k] = NULL;
        if (res.changes > 0)
                log_info("Certificates: %u change(s) applied.", res.changes);
        rep->actions_applied += res.changes;
        return !part || part->first ? report_certs(p, o, plan, rep) : 0;
}

/* The etcd clusters of the rest wave's selections, as a mask over p->etcd_clusters: whose members'
 * certificates come after the first wave (NULL: out of memory). */
static bool *rest_etcd_clusters(const Pass *p, const PassPlan *plan, const bool *rest) {
        bool *mask = new0(bool, strv_length(p->etcd_clusters) + 1);
        for (size_t k = 0; mask && k < plan->volumes.n_selections; k++)
                for (size_t c = 0; rest[k] && p->etcd_clusters[c]; c++)
                        if (streq(p->etcd_clusters[c], plan->volumes.selections[k].etcd_cluster))
                                mask[c] = true;
        return mask;
}

/* One round: apply the plan. 1 when a claim was lost and the pass must observe and plan again. */
/* The selections a pass brings up first, when it has device work for the first one (the main etcd
 * cluster's: the API needs it) and for another: that member's manifest is then written before the others'
 * devices are waited for, checked and mounted (on EC2 an attachment each, seconds). NULL: one wave, every
 * selection (also when the mask cannot be allocated: the order is a matter of time only). *ret_rest: the
 * complement. */
static bool *first_wave(const PassPlan *plan, const VolumesApply *va, bool **ret_rest) {
        size_t n = plan->volumes.n_selections;
        bool others = false;
        *ret_rest = NULL;
        for (size_t k = 1; k < n && !others; k++)
                others = volumes_apply_has(va, VOLUMES_PHASE_DEVICES, k);
        if (!others || !volumes_apply_has(va, VOLUMES_PHASE_DEVICES, 0))
                return NULL;
        _cleanup_free_ bool *first = new0(bool, n), *rest = new0(bool, n);
        if (!first || !rest)
                return NULL;
        first[0] = true;
        for (size_t k = 1; k < n; k++)
                rest[k] = true;
        *ret_rest = TAKE_PTR(rest);
        return TAKE_PTR(first);
}

/* A wave's etcd steps, for the selections in only (NULL: every one): restores, members, manifests. */
static int apply_etcd_wave(Pass *p, PassObservation *o, const PassPlan *plan, VolumesApply *va,
                           const bool *only, char **etcd_texts, char ***etcd_owned, bool *interrupted,
                           PassReport *rep) {
        int r = 0;
        if (!stop_requested()) {
                pass_progress_step("etcd restore");
                r = pass_restore_apply(p, o, plan, only, etcd_texts, etcd_owned, rep);
        }
        if (r >= 0 && !stop_requested()) {
                pass_progress_step("etcd members");
                r = pass_etcd_apply(p, o, plan, only, etcd_texts, etcd_owned, rep);
        }
        if (r >= 0 && !stop_requested()) {
                pass_progress_step("etcd manifests");
                r = volumes_apply_run(va, VOLUMES_PHASE_MANIFESTS, only, etcd_texts);
                *interrupted = *interrupted || r > 0;
        }
        return r;
}

static int apply_round(Pass *p, PassObservation *o, const PassPlan *plan, bool last, PassReport *rep) {
        _cleanup_(volumes_apply_freep) VolumesApply *va = NULL;
        _cleanup_free_ char **etcd_texts = NULL;
        _cleanup_strv_free_ char **etcd_owned = NULL; /* texts rendered anew by the membership step */
        _cleanup_free_ bool *first = NULL, *rest = NULL, *rest_etcd = NULL;
        VolumesPassResult res = {};
        int r;
        etcd_texts = etcd_texts_new(plan);
        if (!etcd_texts)
                return -ENOMEM;
        if (o->volumes_error < 0) { /* nothing to do with volumes or DNS: the rest still is kept */
                apply_dns(p, o, plan, rep);
                r = apply_certs(p, o, plan, NULL, rep, etcd_texts);
                if (r < 0)
                        return r;
                apply_control_plane(p, plan, rep);
                return 0;
        }
        r = volumes_apply_new(p->provider, &p->cfg, &plan->in, &plan->volumes, &va);
        if (r < 0)
                return r;
        pass_progress_step("volumes");
        r = volumes_apply_run(va, VOLUMES_PHASE_CLAIMS, NULL, NULL);
        if (r > 0 && !last)
                return 1;
        bool interrupted = r > 0;
        /* Every claim is made (a lost one was seen above); then the first wave's devices, the names of
         * every member held, the node's certificates and the first wave's members', and the first wave's
         * etcd steps; then the rest's devices, certificates and etcd steps. */
        first = first_wave(plan, va, &rest);
        if (first && !(rest_etcd = rest_etcd_clusters(p, plan, rest)))
                return -ENOMEM;
        CertsPart first_part = { .first = true, .later = rest_etcd }, rest_part = { .later = rest_etcd };
        bool certs_done = false;
        if (r >= 0 && !stop_requested())
                r = volumes_apply_run(va, VOLUMES_PHASE_DEVICES, first, NULL);
        if (r >= 0 && !stop_requested()) {
                pass_progress_step("DNS: publishing");
                apply_dns(p, o, plan, rep);
        }
        if (r >= 0 && !stop_requested()) {
                r = apply_certs(p, o, plan, first ? &first_part : NULL, rep, etcd_texts);
                certs_done = true;
        }
        if (r >= 0 && plan->etcd_render_error)
                log_error("Failed to render the etcd manifest: %s", plan->etcd_render_error);
        if (r >= 0 && certs_done) /* not: a stop came before the certificates */
                r = apply_etcd_wave(p, o, plan, va, first, etcd_texts, &etcd_owned, &interrupted, rep);
        if (r >= 0 && certs_done && first && !stop_requested()) {
                pass_progress_step("volumes");
                r = volumes_apply_run(va, VOLUMES_PHASE_DEVICES, rest, NULL);
                if (r >= 0 && !stop_requested())
                        r = apply_certs(p, o, plan, &rest_part, rep, etcd_texts);
                if (r >= 0)
                        r = apply_etcd_wave(p, o, plan, va, rest, etcd_texts, &etcd_owned, &interrupted,
                                            rep);
        }
        if (r >= 0 && !stop_requested()) {
                pass_progress_step("control-plane manifests");
                apply_control_plane(p, plan, rep);
        }
        if (r >= 0 && !stop_requested())
                pass_backups_run(p, o, plan, rep);
        if (r == -ECANCELED || stop_requested()) {
                pass_report_error(rep, PASS_STAGE_SPEC, PK_EWAITING, "stopping");
                return 0;
        }
        if (r < 0)
                return r;
        volumes_apply_finish(va, interrupted, &res);
        report_volumes(rep, &res);
        return 0;
}

/* What is still propagating after the pass, for /metrics and /healthz. */
static void report_dns_pending(const Pass *p, PassReport *rep) {
        const DnsPendingChange *o = dns_pending_oldest(&p->dns_pending);
        rep->dns_pending_known = true;
        rep->dns_pending = (unsigned)p->dns_pending.n;
        rep->dns_pending_oldest = o ? o->submitted : 0;
        snprintf(rep->dns_pending_oldest_id, sizeof(rep->dns_pending_oldest_id), "%s", o ? o->id : "");
}

/* The masters the cluster has: the main etcd cluster's members in the view. */
static size_t main_members(const ClusterView *v) {
        size_t n = 0;
        for (size_t i = 0; v && i < v->n_members; i++)
                n += streq(v->members[i].cluster, ETCD_MAIN_CLUSTER);
        return n;
}

/* The pivot of this node, from the pass's observation (its name and address) and plan (the masters). 0
 * with *ret, 1 when those are not known this pass, < 0 (logged) on failure. */
static int pivot_for_pass(const Pass *p, const PassObservation *o, const PassPlan *plan, PassPivot **ret) {
        const char *ip = o->volumes_error < 0                            ? NULL
                         : strv_length(o->volumes.node.internal_ips) > 0 ? o->volumes.node.internal_ips[0]
                                                                         : NULL;
        const char *name = o->volumes_error < 0 ? NULL : o->volumes.node.name;
        if (!ip || !name || main_members(plan->view) == 0)
                return 1;
        int r = pass_pivot_open(p->spec, &p->node, name, ip, main_members(plan->view), ret);
        _cleanup_free_ char *host = NULL;
        if (r >= 0 && o->dns_error >= 0 && o->dns && api_dns_name(p->spec->dns.internal_suffix, &host) >= 0)
                pass_pivot_set_names_listed(
                    *ret, dns_rrsets_hold_all(&o->dns_served, host, o->volumes.node.internal_ips));
        return r;
}

/* spec selfHosted: true, each pass after the control-plane manifests (docs/pivot.md): the checkpoint's step,
 * then one pivot step. Not done yet is PK_EWAITING with the step's why; a failure is the stage's error. The
 * checkpoint comes first and also after a failed apply round (apply_ok false: no pivot step then): when the
 * API is down at boot it is what brings the API back, and nothing before it needs the API. */
static void pivot_pass(Pass *p, const PassObservation *o, const PassPlan *plan, bool apply_ok,
                       PassReport *rep) {
        _cleanup_(pass_pivot_freep) PassPivot *pp = NULL;
        PivotDecision d = {};
        pass_progress_step("pivot");
        int r = pivot_for_pass(p, o, plan, &pp);
        if (r > 0) {
                pass_report_error(rep, PASS_STAGE_PIVOT, PK_EWAITING,
                                  "pivot: waiting for this node's name and address and the masters");
                return;
        }
        if (r >= 0) {
                pass_progress_step("checkpoint");
                pass_checkpoint_run(pp, rep);
        }
        if (!apply_ok || stop_requested())
                return;
        pass_progress_step("pivot");
        if (r < 0 || pass_pivot_step(pp, true, &d) < 0) {
                pass_report_error(rep, PASS_STAGE_PIVOT, -EIO, "pivot: a step failed (see the log)");
                rep->repass_soon = true;
                return;
        }
        _cleanup_free_ char *why = strprintf("pivot: %s: %s", pivot_step_name(d.step), d.why);
        if (d.step == PIVOT_FAILED) {
                log_error("The pivot failed: %s", d.why);
                pass_report_error(rep, PASS_STAGE_PIVOT, -ETIMEDOUT, why ?: "pivot failed");
        } else if (d.step != PIVOT_DONE) {
                log_info("Pivot: %s: %s", pivot_step_name(d.step), d.why);
                pass_report_error(rep, PASS_STAGE_PIVOT, PK_EWAITING, why ?: "pivot under way");
                rep->repass_soon = true;
        }
        pivot_decision_done(&d);
}

int pass_pivot_plan_print(Pass *p, const PassObservation *o, const PassPlan *plan, FILE *out) {
        _cleanup_(pass_pivot_freep) PassPivot *pp = NULL;
        PivotDecision d = {};
        if (!p->spec->self_hosted.set || !p->spec->self_hosted.value)
                return 0;
        int r = pivot_for_pass(p, o, plan, &pp);
        if (r > 0) {
                fprintf(out, "pivot wait: this node's name and address and the masters are not known\n");
                return 0;
        }
        if (r < 0 || (r = pass_pivot_step(pp, false, &d)) < 0)
                return r;
        fprintf(out, "pivot %s: %s\n", pivot_step_name(d.step), d.why);
        pivot_decision_done(&d);
        return 0;
}

static bool self_hosted(const Pass *p) {
        return p->spec->self_hosted.set && p->spec->self_hosted.value;
}

void pass_run(Pass *p, PassReport *rep) {
        _cleanup_close_ int lock = -1;
        _cleanup_free_ char *lock_error = NULL;
        int l = node_lock_take(p->node.state_dir, NODE_LOCK_WAIT, &lock, &lock_error);
        if (l < 0) { /* nothing written: another protokube writes the node's state now */
                pass_report_error(rep, PASS_STAGE_DISCOVER, l, lock_error ?: pk_strerror(l));
                return;
        }
        p->cfg.report_userdata = rep;
        for (unsigned round = 0; round < PASS_ROUNDS_MAX; round++) {
                PassObservation o = {};
                PassPlan plan = {};
                pass_progress_step("observing");
                int r = pass_observe(p, &o);
                if (r >= 0 && o.volumes_error < 0) {
                        _cleanup_free_ char *why =
                            strprintf("the volume provider failed: %s",
                                      o.volumes_message ?: pk_strerror(o.volumes_error));
                        pass_report_error(rep, PASS_STAGE_DISCOVER, o.volumes_error, why);
                }
                if (r >= 0)
                        r = pass_plan(p, &o, &plan);
                if (r >= 0)
                        r = apply_round(p, &o, &plan, round + 1 == PASS_ROUNDS_MAX, rep);
                if (r <= 0 && self_hosted(p) && !stop_requested())
                        pivot_pass(p, &o, &plan, r == 0, rep);
                pass_plan_done(&plan);
                pass_observation_done(&o);
                if (r < 0)
                        pass_report_error(rep, PASS_STAGE_DISCOVER, r, "out of memory");
                if (r <= 0)
                        break;
        }
        report_dns_pending(p, rep);
        p->cfg.report_userdata = NULL;
        trace_mark("pass end");
}

int pass_dns_wait(Pass *p, usec_t timeout) {
        _cleanup_(dns_session_freep) DnsSession *s = NULL;
        _cleanup_free_ char *error = NULL;
        if (p->dns_pending.n == 0)
                return 0;
        int r = dns_session_open(p->spec, &s, &error);
        if (r < 0)
                return log_error_errno(r, "%s", strna(error));
        if (!s)
                return 0;
        usec_t start = now(CLOCK_MONOTONIC);
        log_info("DNS (%s): waiting up to %llu s for %zu change(s) to reach every name server (--no-wait: "
                 "do not wait).",
                 dns_session_provider(s), (unsigned long long)(timeout / USEC_PER_SEC), p->dns_pending.n);
        r = dns_session_wait_pending(s, &p->dns_pending, timeout, DNS_PENDING_POLL, &error);
        if (r < 0)
                return log_error_errno(r, "%s", error ? error : pk_strerror(r));
        log_info("DNS (%s): every change INSYNC after %.1f s.", dns_session_provider(s),
                 (double)(now(CLOCK_MONOTONIC) - start) / USEC_PER_SEC);
        return 0;
}
