/* SPDX-License-Identifier: Apache-2.0 */
/* DNS for discovery (docs/dns.md): what the provider serves for the names we own, read once; the desired
 * records from the cluster view with this pass's claims folded in; one batch of the RRsets that differ; the
 * changes a provider accepted but does not serve everywhere yet, followed from pass to pass. */
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "basic/trace.h"
#include "daemon/pass-types.h"
#include "daemon/progress.h"
#include "daemon/step-dns.h"
#include "dns/dns-wire.h"
#include "model/cluster-view.h"

/* What DNS serves for the names we own. The names come from the view as observed: claims this pass makes
 * change addresses, not names. */
static int dns_observe(PassContext *ctx) {
        const Pass *p = ctx->pass;
        PassObservation *o = ctx->obs;
        _cleanup_(cluster_view_freep) ClusterView *view = NULL;
        _cleanup_(dns_rrset_list_donep) DnsRRsetList owned = {};
        _cleanup_free_ char *error = NULL;
        if (o->volumes_error < 0)
                return 0; /* nothing to name: no DNS this pass */
        trace_mark("DNS: reading");
        int r = dns_session_open(p->spec, &ctx->dns, &error);
        if (r >= 0 && ctx->dns)
                r = volumes_view(&o->in, NULL, &view);
        if (r >= 0 && ctx->dns)
                r = dns_desired_records(p->spec, view, &owned, &error);
        if (r >= 0 && ctx->dns)
                r = dns_session_read(ctx->dns, &owned, &o->dns_served, &o->dns_repair, &error);
        trace_mark("DNS: read");
        return pass_dns_observed(ctx, r, &error);
}

static int dns_plan(const Pass *pass, const PassObservation *o, PassPlan *plan) {
        _cleanup_free_ char *error = NULL;
        int r;
        if (o->volumes_error < 0) {
                plan->dns_status = o->volumes_error;
                plan->dns_note = strdup("cannot observe the masters for DNS");
                return plan->dns_note ? 0 : -ENOMEM;
        }
        if (o->dns_error < 0) {
                plan->dns_status = o->dns_error;
                plan->dns_note = strdup(strna(o->dns_message));
                return plan->dns_note ? 0 : -ENOMEM;
        }
        if (!o->dns_enabled)
                return 0;
        if (!pass_dns_plannable(o, plan)) { /* the view is empty (pass_dns_plannable()) */
                plan->dns_status = PK_EWAITING;
                plan->dns_note = strdup("the view has no masters and no etcd members; not publishing");
                return plan->dns_note ? 0 : -ENOMEM;
        }
        /* the API's names leave out plan->api_withheld: the api-names step planned them before */
        r = dns_desired_records_except(pass->spec, plan->view, plan->api_withheld, &plan->dns_desired,
                                       &error);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                plan->dns_status = r;
                plan->dns_note =
                    strprintf("cannot compute the desired records: %s", error ?: pk_strerror(r));
                return plan->dns_note ? 0 : -ENOMEM;
        }
        r = dns_rrsets_diff(&plan->dns_desired, &o->dns_served, o->dns_tracks_ttl, &plan->dns_changes);
        if (r < 0)
                return r;
        plan->dns_send = plan->dns_changes.n > 0 || o->dns_repair;
        return 0;
}

/* The changes earlier passes submitted: one status request each (no waiting); those served everywhere now
 * leave the list. A failed request is a warning: the records are in place, only the news is late. */
static void follow_dns_changes(Pass *p, DnsSession *dns) {
        _cleanup_dns_pending_ DnsPending settled = {};
        _cleanup_free_ char *error = NULL;
        if (!dns || p->dns_pending.n == 0)
                return;
        pass_progress_step("DNS: following %zu change(s)", p->dns_pending.n);
        int r = dns_session_check_pending(dns, &p->dns_pending, &settled, &error);
        if (r == -ENOMEM)
                log_oom();
        else if (r < 0)
                log_warning_errno(r, "%s; will ask again at the next pass.", strna(error));
        usec_t t = now(CLOCK_MONOTONIC);
        for (size_t i = 0; i < settled.n; i++)
                log_info("DNS (%s): change '%s' INSYNC: served by every name server, %.1f s after it was "
                         "submitted.",
                         dns_session_provider(dns), settled.items[i].id,
                         (double)(t - settled.items[i].submitted) / USEC_PER_SEC);
}

/* The changes this pass's apply submitted, to follow from the next pass on. */
static void take_dns_changes(Pass *p, DnsSession *dns) {
        size_t before = p->dns_pending.n;
        int r = dns_session_take_submitted(dns, &p->dns_pending, now(CLOCK_MONOTONIC));
        if (r < 0) {
                log_error_errno(r, "Failed to keep the DNS change ids: %m");
                return;
        }
        for (size_t i = before; i < p->dns_pending.n; i++)
                log_info("DNS (%s): change '%s' accepted; propagating to the name servers (not waited for: "
                         "asked about at the next passes).",
                         dns_session_provider(dns), p->dns_pending.items[i].id);
}

static int dns_apply(PassContext *ctx, PassWave wave) {
        Pass *p = ctx->pass;
        const PassPlan *plan = ctx->plan;
        PassReport *rep = ctx->rep;
        DnsSession *dns = ctx->dns;
        pass_progress_step("DNS: publishing");
        follow_dns_changes(p, dns);
        if (plan->dns_status == PK_EWAITING) {
                log_info("DNS: %s", strna(plan->dns_note));
                return 0;
        }
        if (plan->dns_status < 0) {
                log_error_errno(plan->dns_status, "DNS publication failed: %s", strna(plan->dns_note));
                _cleanup_free_ char *why = strprintf("DNS: %s", strna(plan->dns_note));
                pass_report_error(rep, PASS_STAGE_DNS, plan->dns_status, why);
                return 0;
        }
        if (!dns)
                return 0;
        if (plan->dns_send) {
                _cleanup_free_ char *error = NULL;
                int r = dns_session_apply(dns, &plan->dns_changes, &error);
                trace_mark("DNS: UPDATE answered");
                if (r < 0) {
                        take_dns_changes(p, dns); /* a zone's change accepted before another failed */
                        log_error_errno(r, "DNS publication failed: %s", strna(error));
                        _cleanup_free_ char *why = strprintf("DNS: %s", strna(error));
                        pass_report_error(rep, PASS_STAGE_DNS, r, why);
                        return 0;
                }
                pass_dns_log_changes(&plan->dns_changes, dns_session_provider(dns));
                rep->actions_applied += (unsigned)plan->dns_changes.n;
                take_dns_changes(p, dns);
        }
        /* What the provider now serves is the desired set: count its records. */
        for (size_t i = 0; i < plan->dns_desired.n; i++)
                rep->records_published += (unsigned)strv_length(plan->dns_desired.items[i].addresses);
        if (plan->api_note) { /* the names are not final yet: the pass comes again soon to ask */
                log_info("DNS: %s.", plan->api_note);
                _cleanup_free_ char *why = strprintf("DNS: %s", plan->api_note);
                pass_report_error(rep, PASS_STAGE_DNS, PK_EWAITING, why);
        }
        return 0;
}

static int dns_print(const Pass *pass, const PassObservation *o, const PassPlan *plan, FILE *out) {
        /* waiting is a status below zero too: it is asked first, and is no failure of `plan` */
        bool failed = plan->dns_status < 0 && plan->dns_status != PK_EWAITING;
        if (plan->dns_status == PK_EWAITING)
                fprintf(out, "dns: waiting: %s\n", strna(plan->dns_note));
        else if (failed)
                fprintf(out, "dns: cannot plan: %s\n", strna(plan->dns_note));
        if (plan->api_note)
                fprintf(out, "dns: waiting: %s\n", plan->api_note);
        for (size_t i = 0; i < plan->dns_changes.n; i++) {
                const DnsRRset *s = &plan->dns_changes.items[i];
                _cleanup_free_ char *a = s->addresses ? strv_join(s->addresses, ",") : NULL;
                fprintf(out, "dns-replace %s %s %s\n", s->name, s->type == DNS_TYPE_AAAA ? "AAAA" : "A",
                        isempty(a) ? "(delete)" : a);
        }
        if (failed) /* the plan prints whole; `plan` fails for it */
                return log_error_errno(plan->dns_status, "DNS: %s", strna(plan->dns_note));
        return 0;
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

size_t pass_dns_pending(const Pass *p, const char **ret_oldest_id) {
        const DnsPendingChange *o = dns_pending_oldest(&p->dns_pending);
        if (ret_oldest_id)
                *ret_oldest_id = o ? o->id : NULL;
        return p->dns_pending.n;
}

/* What is still propagating after the pass, for /metrics and /healthz. */
static int dns_finish(PassContext *ctx) {
        const DnsPendingChange *o = dns_pending_oldest(&ctx->pass->dns_pending);
        PassReport *rep = ctx->rep;
        rep->dns_pending_known = true;
        rep->dns_pending = (unsigned)ctx->pass->dns_pending.n;
        rep->dns_pending_oldest = o ? o->submitted : 0;
        snprintf(rep->dns_pending_oldest_id, sizeof(rep->dns_pending_oldest_id), "%s", o ? o->id : "");
        return 0;
}

const PassStep pass_step_dns = {
        .name = "DNS",
        .stage = PASS_STAGE_DNS,
        .roles = 1U << NODE_ROLE_MASTER,
        .observe = dns_observe,
        .plan = dns_plan,
        .apply = dns_apply,
        .finish = dns_finish,
        .print = dns_print,
};
