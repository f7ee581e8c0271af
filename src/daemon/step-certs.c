/* SPDX-License-Identifier: Apache-2.0 */
/* The node's certificates (docs/pki.md, "A pass's certificates"): the keystore read through the state store
 * and the node's pairs and files, observed once; the pure plan for this node's addresses and the members it
 * holds after the plan's claims; issued in each wave before that wave's etcd manifests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/errors.h"
#include "basic/log.h"
#include "basic/stop.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "basic/trace.h"
#include "daemon/pass-types.h"
#include "daemon/progress.h"
#include "daemon/step-certs.h"

static int certs_observe_step(PassContext *ctx) {
        Pass *p = ctx->pass;
        PassObservation *o = ctx->obs;
        trace_mark("certificates: observing");
        int r = certs_observe(&p->certs, &ctx->store, &o->certs);
        if (r < 0)
                return log_error_errno(r, "Failed to observe the node's certificates: %m");
        if (o->certs.error < 0)
                log_error_errno(o->certs.error, "Failed to read the keystore: %s", strna(o->certs.message));
        return 0;
}

/* The certificates for this node's addresses and the members it holds after the plan. */
static int certs_plan_step(const Pass *pass, const PassObservation *o, PassPlan *plan) {
        _cleanup_strv_free_ char **ips = strv_new(NULL);
        if (!ips)
                return -ENOMEM;
        if (o->volumes_error >= 0) {
                const NodeIdentity *n = &o->volumes.node;
                for (size_t i = 0; n->internal_ips && n->internal_ips[i]; i++)
                        if (!strv_contains(ips, n->internal_ips[i]) &&
                            strv_extend(&ips, n->internal_ips[i]) < 0)
                                return -ENOMEM;
                for (size_t i = 0; n->external_ips && n->external_ips[i]; i++)
                        if (!strv_contains(ips, n->external_ips[i]) &&
                            strv_extend(&ips, n->external_ips[i]) < 0)
                                return -ENOMEM;
        }
        CertsNode node = {
                .name = o->volumes_error >= 0 ? o->volumes.node.name : NULL,
                .ips = ips,
                .held_members = plan->held_members,
                .held_known = o->volumes_error >= 0,
        };
        int r = certs_plan(&pass->certs, &o->certs, &node, o->realtime, &plan->certs);
        if (r >= 0 && pass->force_renew)
                r = certs_plan_force_renewal(&o->certs, &plan->certs);
        return r;
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

/* The certificates of a wave, after the claims and before the etcd manifests of the clusters it names; a
 * member whose pair could not be issued gets no manifest this pass. */
static int certs_apply_step(PassContext *ctx, PassWave wave) {
        Pass *p = ctx->pass;
        PassObservation *o = ctx->obs;
        const PassPlan *plan = ctx->plan;
        PassReport *rep = ctx->rep;
        char **texts = ctx->etcd_texts;
        _cleanup_(certs_result_done) CertsResult res = {};
        /* one wave: all at once; two: the node's and the first wave's members', then the rest's */
        CertsPart first_part = { .first = true, .later = ctx->rest_etcd },
                  rest_part = { .later = ctx->rest_etcd };
        const CertsPart *part = !ctx->first ? NULL : wave == PASS_WAVE_REST ? &rest_part : &first_part;
        if (wave == PASS_WAVE_REST && !ctx->first)
                return 0;
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
        int r = certs_apply_part(&p->certs, ctx->store, &o->certs, &plan->certs, part, now(CLOCK_REALTIME),
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

static int certs_print(const Pass *pass, const PassObservation *o, const PassPlan *plan, FILE *out) {
        certs_plan_print(&o->certs, &plan->certs, out);
        return 0;
}

const PassStep pass_step_certs = {
        .name = "certificates",
        .stage = PASS_STAGE_CERTS,
        .roles = 1U << NODE_ROLE_MASTER,
        .observe = certs_observe_step,
        .plan = certs_plan_step,
        .apply = certs_apply_step,
        .print = certs_print,
};

static const char *format_utc(usec_t t, char buf[static 32]) {
        time_t secs = (time_t)(t / USEC_PER_SEC);
        struct tm tm;
        if (!gmtime_r(&secs, &tm) || strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
                return "?";
        return buf;
}
#define FORMAT_UTC(t) format_utc((t), (char[32]){})

/* protokube pki show: the keystore (each entry's fingerprint and expiry, or "absent") and every pair of the
 * node's layout (subject, SANs, issuer, expiry, and what the next pass would do with it). */
static void print_keystore(const char *url, const CertsObservation *o, FILE *out) {
        fprintf(out, "keystore %s\n", url);
        for (size_t i = 0; i < keystore_size(o->keystore); i++) {
                const KeystoreEntry *e = keystore_entry(o->keystore, i);
                char fp[KEYSTORE_FINGERPRINT_TEXT_MAX];
                usec_t from = 0, until = 0;
                if (!e->key) {
                        fprintf(out, "  %s: absent (the next pass creates it)\n", e->name);
                        continue;
                }
                fprintf(out, "  %s: sha256 %s", e->name, keystore_fingerprint_text(e, fp));
                if (e->cert && pki_cert_validity(e->cert, &from, &until) >= 0)
                        fprintf(out, ", expires %s", FORMAT_UTC(until));
                fprintf(out, "\n");
        }
}

static void print_leaf(const CertsLeafSlot *slot, const PkiLeafState *st, const CertsLeafPlan *p,
                       FILE *out) {
        static const char *const actions[_CERTS_LEAF_ACTION_MAX] = {
                [CERTS_KEEP] = "keep",
                [CERTS_ISSUE] = "issue",
                [CERTS_REMOVE] = "remove",
                [CERTS_ABSENT] = "none",
        };
        fprintf(out, "  %s/%s.crt (%s)\n", slot->dir, slot->name, certs_leaf_kind_to_string(slot->kind));
        if (st->status == PKI_LEAF_MISSING)
                fprintf(out, "    missing\n");
        else if (st->status == PKI_LEAF_UNREADABLE)
                fprintf(out,
                        "    unreadable (a file does not parse, or the key is not the certificate's)\n");
        else {
                _cleanup_free_ char *dns = strv_join(st->dns, ", "), *ips = strv_join(st->ips, ", ");
                fprintf(out, "    subject CN=%s, issuer CN=%s, serial %s\n", strna(st->subject_cn),
                        strna(st->issuer_cn), strna(st->serial));
                fprintf(out, "    DNS: %s\n    IP: %s\n", isempty(dns) ? "-" : dns,
                        isempty(ips) ? "-" : ips);
                fprintf(out, "    valid %s to %s\n", FORMAT_UTC(st->not_before), FORMAT_UTC(st->not_after));
        }
        if (p && p->action < _CERTS_LEAF_ACTION_MAX)
                fprintf(out, "    next pass: %s%s%s%s\n", actions[p->action],
                        p->action == CERTS_ISSUE ? " (" : "",
                        p->action == CERTS_ISSUE ? pki_renew_reason_to_string(p->reason) : "",
                        p->action == CERTS_ISSUE ? ")" : "");
}

int pass_check_certificates(const Pass *p, const char *verb) {
        return pass_require_step(p, &pass_step_certs, verb);
}

int pass_print_certificates(Pass *p, FILE *out) {
        PassObservation o = {};
        PassPlan plan = {};
        if (!p->certs.store_url)
                return log_error_errno(-EINVAL,
                                       "The spec '%s' names no stateStore: protokube manages no "
                                       "certificates.",
                                       p->spec_path);
        int r = pass_observe_and_plan(p, &o, &plan);
        if (r < 0)
                return r;
        if (o.certs.error < 0) {
                log_error("%s", strna(o.certs.message));
                r = o.certs.error;
        } else
                print_keystore(p->certs.store_url, &o.certs, out);
        fprintf(out, "node certificates in %s\n", p->certs.pki_dir);
        for (size_t i = 0; o.certs.leaves && i < o.certs.layout.n_leaves; i++)
                print_leaf(&o.certs.layout.leaves[i], &o.certs.leaves[i],
                           plan.certs.leaves ? &plan.certs.leaves[i] : NULL, out);
        pass_plan_done(&plan);
        pass_observation_done(&o);
        return r;
}
