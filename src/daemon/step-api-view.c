/* SPDX-License-Identifier: Apache-2.0 */
/* A worker's view of the API (docs/workers.md, "protokube on a worker: the pass"): the masters are learnt
 * as the masters learn them (ARCHITECTURE.md, "Who knows the masters": the nodes holding etcd main volumes,
 * from the volume provider's listing), read only: a worker holds no volume, so it never claims, attaches or
 * mounts one. With dns.provider hosts the node's hosts file gets api.<internalSuffix> with their internal
 * addresses, so a cluster needs no DNS server at all; every other record and line of the file stays as it
 * is. The records of rfc2136 and route53 are the masters' to write: a worker only compares what they serve
 * with the masters' addresses and says whether the name answers with them. */
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "basic/trace.h"
#include "daemon/pass-types.h"
#include "daemon/progress.h"
#include "daemon/step-api-view.h"
#include "dns/dns-wire.h"
#include "model/cluster-view.h"

/* What the DNS provider serves for api.<internalSuffix> (A and AAAA); nothing without a provider. */
static int observe_served(PassContext *ctx) {
        const ClusterSpec *spec = ctx->pass->spec;
        PassObservation *o = ctx->obs;
        _cleanup_rrset_list_ DnsRRsetList names = {};
        _cleanup_free_ char *error = NULL;
        trace_mark("API view: reading DNS");
        int r = dns_session_open(spec, &ctx->dns, &error);
        if (r >= 0 && ctx->dns)
                r = dns_api_internal_records(spec, NULL, &names, &error);
        if (r >= 0 && ctx->dns)
                r = dns_session_read(ctx->dns, &names, &o->dns_served, &o->dns_repair, &error);
        return pass_dns_observed(ctx, r, &error);
}

/* The provider's volumes of the cluster, as listed (the masters' view is made from them in the plan), and
 * what DNS serves for the API's internal name. */
static int api_view_observe(PassContext *ctx) {
        const Pass *p = ctx->pass;
        PassObservation *o = ctx->obs;
        _cleanup_free_ char *detail = NULL;
        trace_mark("API view: listing the volumes");
        int r = volumes_list(p->provider, p->spec->name, &o->volumes.volumes, &detail);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                log_error_errno(r, "Failed to list the volumes of cluster '%s': %s", p->spec->name,
                                detail ?: pk_strerror(r));
                o->volumes_error = r;
                o->volumes_message = TAKE_PTR(detail);
                return 0;
        }
        STRV_FOREACH (w, o->volumes.volumes.warnings)
                log_warning("Unreadable volume: %s", *w);
        o->in = (VolumesInput){ .cluster = p->spec->name,
                                .etcd_clusters = p->etcd_clusters,
                                .volumes = o->volumes.volumes.items,
                                .n_volumes = o->volumes.volumes.n };
        return observe_served(ctx);
}

/* The addresses of every RRset of l, "10.0.0.1,fd00::1"; "nothing" when there is none. NULL: no memory. */
static char *rrsets_addresses(const DnsRRsetList *l) {
        _cleanup_strv_free_ char **all = strv_new(NULL);
        for (size_t i = 0; all && i < l->n; i++)
                STRV_FOREACH (a, l->items[i].addresses)
                        if (strv_extend(&all, *a) < 0)
                                return NULL;
        if (!all)
                return NULL;
        return strv_length(all) == 0 ? strdup("nothing") : strv_join(all, ",");
}

static size_t rrsets_n_addresses(const DnsRRsetList *l) {
        size_t n = 0;
        for (size_t i = 0; i < l->n; i++)
                n += dns_rrset_size(&l->items[i]);
        return n;
}

/* Sets the plan's status and its words (note NULL: out of memory). */
static int plan_status(PassPlan *plan, int status, char *note) {
        plan->dns_status = status;
        plan->dns_note = note;
        return note ? 0 : -ENOMEM;
}

/* rfc2136, route53: whether the name answers with exactly the masters' internal addresses (TTLs are the
 * masters' business); the plan sends nothing. */
static int plan_check(const PassObservation *o, PassPlan *plan) {
        _cleanup_rrset_list_ DnsRRsetList differ = {};
        int r = dns_rrsets_diff(&plan->dns_desired, &o->dns_served, false, &differ);
        if (r < 0)
                return r;
        plan->api_view_check = true;
        plan->api_view_answers = differ.n == 0;
        if (plan->api_view_answers)
                return 0;
        _cleanup_free_ char *served = rrsets_addresses(&o->dns_served),
                            *masters = rrsets_addresses(&plan->dns_desired);
        if (!served || !masters)
                return -ENOMEM;
        return plan_status(plan, PK_EWAITING,
                           strprintf("%s answers with %s, not the masters' internal addresses %s",
                                     plan->dns_desired.items[0].name, served, masters));
}

/* Pure over (spec, observation): the masters' view as observed (a worker claims nothing), then the API's
 * internal name with their internal addresses: the RRsets that differ from the hosts file, or whether the
 * name already answers with them. A view without a master (or without an address) writes nothing: an
 * empty listing is likelier a failed one than a cluster without masters, and must not erase the name. */
static int api_view_plan(const Pass *pass, const PassObservation *o, PassPlan *plan) {
        const char *suffix = pass->spec->dns.internal_suffix;
        _cleanup_free_ char *error = NULL;
        if (o->volumes_error < 0)
                return plan_status(plan, o->volumes_error,
                                   strprintf("cannot list the masters: %s",
                                             o->volumes_message ?: pk_strerror(o->volumes_error)));
        int r = volumes_view(&o->in, NULL, &plan->view);
        if (r < 0)
                return r;
        if (o->dns_error < 0)
                return plan_status(plan, o->dns_error, strdup(strna(o->dns_message)));
        if (!o->dns_enabled) /* dns.provider none: the node's resolver is the operator's */
                return 0;
        if (plan->view->n_masters == 0)
                return plan_status(plan, PK_EWAITING,
                                   strprintf("no master holds an etcd main volume yet: api.%s waits for one",
                                             strna(suffix)));
        r = dns_api_internal_records(pass->spec, plan->view, &plan->dns_desired, &error);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return plan_status(plan, r,
                                   strprintf("cannot name the masters: %s", error ?: pk_strerror(r)));
        if (rrsets_n_addresses(&plan->dns_desired) == 0)
                return plan_status(
                    plan, PK_EWAITING,
                    strprintf("the masters have no internal address yet: api.%s waits for one",
                              strna(suffix)));
        if (pass->spec->dns.provider.value != DNS_PROVIDER_HOSTS)
                return plan_check(o, plan);
        r = dns_rrsets_diff(&plan->dns_desired, &o->dns_served, o->dns_tracks_ttl, &plan->dns_changes);
        if (r < 0)
                return r;
        plan->dns_send = plan->dns_changes.n > 0 || o->dns_repair;
        return 0;
}

static int api_view_apply(PassContext *ctx, PassWave wave) {
        const PassPlan *plan = ctx->plan;
        PassReport *rep = ctx->rep;
        _cleanup_free_ char *error = NULL;
        pass_progress_step("API view");
        if (pass_report_status(ctx, PASS_STAGE_DNS, "API view", plan->dns_status, plan->dns_note) ||
            !ctx->dns || plan->api_view_check)
                return 0;
        if (plan->dns_send) {
                int r = dns_session_apply(ctx->dns, &plan->dns_changes, &error);
                if (r < 0) {
                        log_error_errno(r, "API view: writing api.%s failed: %s",
                                        strna(ctx->pass->spec->dns.internal_suffix), strna(error));
                        _cleanup_free_ char *why = strprintf("API view: %s", strna(error));
                        pass_report_error(rep, PASS_STAGE_DNS, r, why);
                        return 0;
                }
                pass_dns_log_changes(&plan->dns_changes, dns_session_provider(ctx->dns));
                rep->actions_applied += (unsigned)plan->dns_changes.n;
        }
        rep->records_published += (unsigned)rrsets_n_addresses(&plan->dns_desired);
        return 0;
}

static int api_view_print(const Pass *pass, const PassObservation *o, const PassPlan *plan, FILE *out) {
        int r = pass_print_status(out, "api-view", "cannot plan", plan->dns_status, plan->dns_note);
        if (r != 0)
                return MIN(r, 0);
        if (!o->dns_enabled) {
                fprintf(out, "api-view: dns.provider is none: nothing to do\n");
                return 0;
        }
        _cleanup_free_ char *masters = rrsets_addresses(&plan->dns_desired);
        const char *name = plan->dns_desired.n > 0 ? plan->dns_desired.items[0].name : "?";
        if (plan->api_view_check)
                fprintf(out, "api-view: %s answers with the masters' internal addresses %s\n", name,
                        strna(masters));
        for (size_t i = 0; i < plan->dns_changes.n; i++) {
                const DnsRRset *s = &plan->dns_changes.items[i];
                _cleanup_free_ char *a = s->addresses ? strv_join(s->addresses, ",") : NULL;
                fprintf(out, "api-view-replace %s %s %s\n", s->name, s->type == DNS_TYPE_AAAA ? "AAAA" : "A",
                        isempty(a) ? "(delete)" : a);
        }
        if (!plan->api_view_check && plan->dns_changes.n == 0)
                fprintf(out, "api-view: the hosts file names %s for %s%s\n", strna(masters), name,
                        plan->dns_send ? " (its interrupted rewrite is repaired)" : "");
        return 0;
}

/* `join plan`: the API's internal name, as the plan sees it. */
static int api_view_stages(const Pass *pass, const PassObservation *o, const PassPlan *plan,
                           PassJoinStatus stages[static _PASS_JOIN_STAGE_MAX]) {
        PassJoinStatus *s = &stages[PASS_JOIN_DNS];
        if (plan->dns_status != 0)
                return pass_join_status_set(s, plan->dns_status, strdup(strna(plan->dns_note)));
        if (!o->dns_enabled)
                return pass_join_status_set(
                    s, 0, strdup("dns.provider is none: the node's resolver names the API (not checked)"));
        _cleanup_free_ char *masters = rrsets_addresses(&plan->dns_desired);
        const char *name = plan->dns_desired.n > 0 ? plan->dns_desired.items[0].name : "?";
        if (!masters)
                return -ENOMEM;
        if (plan->dns_send)
                return pass_join_status_set(
                    s, PK_EWAITING,
                    strprintf("the next pass writes %s for %s into the hosts file", masters, name));
        return pass_join_status_set(s, 0,
                                    strprintf("%s names the masters' internal addresses %s", name, masters));
}

const PassStep pass_step_api_view = {
        .name = "API view",
        .stage = PASS_STAGE_DNS,
        .roles = 1U << NODE_ROLE_WORKER,
        .observe = api_view_observe,
        .plan = api_view_plan,
        .apply = api_view_apply,
        .print = api_view_print,
        .join = api_view_stages,
};
