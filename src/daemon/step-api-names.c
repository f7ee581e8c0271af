/* SPDX-License-Identifier: Apache-2.0 */
/* A master joins the API's names when its apiserver serves (docs/dns.md, "A master joins the API's names
 * when it serves"). The observation asks /readyz of the masters that hold a main volume and are not in
 * api.<internalSuffix> yet, and, when one of them is another master, of this master's own apiserver (whether
 * leaving that one out keeps clients on a working API); while the masters' apiservers come up (until this
 * process has seen every master's apiserver pod Ready in the API), it reads those pods; the plan leaves out
 * whom dns_api_withheld() says. Once every master is listed and seen, nothing is asked: an idle pass asks
 * no apiserver. */
#include <errno.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "basic/trace.h"
#include "daemon/pass-types.h"
#include "daemon/step-api-names.h"
#include "kube/kube-client.h"
#include "model/cluster-view.h"
#include "model/conventions.h"

/* One apiserver's answer. A port bound by an apiserver that does not serve yet accepts the connection and
 * never answers the TLS handshake: the probe ends here. */
#define API_PROBE_TIMEOUT (1 * USEC_PER_SEC)
/* All of a pass's probes; a master left unasked is not left out. */
#define API_PROBES_BUDGET (3 * USEC_PER_SEC)

/* How this master reaches the API: protokube's own kubeconfig, the API's name and port. */
typedef struct ApiClientConfig {
        const char *kubeconfig, *host;
        unsigned port;
} ApiClientConfig;

static int probe_readyz(const char *kubeconfig, const char *host, unsigned port, const char *address,
                        usec_t deadline, char **ret_error) {
        _cleanup_(kube_client_freep) KubeClient *c = NULL;
        int r = pass_open_api(kubeconfig, host, port, address, API_PROBE_TIMEOUT, &c, ret_error);
        return r < 0 ? r : kube_probe(c, "readyz", deadline, ret_error);
}

/* Appends s to *l unless it holds it. */
static int extend_unique(char ***l, const char *s) {
        return strv_contains(*l, s) ? 0 : strv_extend(l, s);
}

/* One LIST (v1 kind in namespace, with selector) through the first of through that answers: a master's
 * name (at its own first address), or "" for the API's name. Each try API_PROBE_TIMEOUT, none begun after
 * deadline; NULL when none answered. *ret_through (may be NULL): the one that answered. */
static json_t *list_through(const ClusterView *view, const ApiClientConfig *cfg, char *const *through,
                            const char *kind, const char *namespace, const char *selector, usec_t deadline,
                            const char **ret_through, char **ret_error) {
        STRV_FOREACH (t, (char **)through) {
                const MasterNode *m = isempty(*t) ? NULL : cluster_view_find_master(view, *t);
                const char *address = m && strv_length(m->internal_ips) > 0 ? m->internal_ips[0] : NULL;
                _cleanup_(kube_client_freep) KubeClient *c = NULL;
                json_t *list = NULL;
                if ((!isempty(*t) && !address) || now(CLOCK_MONOTONIC) >= deadline)
                        continue;
                free(*ret_error);
                *ret_error = NULL;
                int r = pass_open_api(cfg->kubeconfig, cfg->host, cfg->port, address, API_PROBE_TIMEOUT, &c,
                                      ret_error);
                if (r >= 0)
                        r = kube_list(c, "v1", kind, namespace, selector,
                                      now(CLOCK_MONOTONIC) + API_PROBE_TIMEOUT, &list, ret_error);
                if (r >= 0) {
                        if (ret_through)
                                *ret_through = *t;
                        return list;
                }
        }
        return NULL;
}

/* While the self-hosted pivot is under way, the masters whose Node asks to be out of the API's names for
 * their turn (docs/pivot.md, "One apiserver starting at a time"), into o->api.out; not readable: out_unknown
 * (no master goes in meanwhile: one that asked could be starting its apiserver). */
static int observe_pivot_turns(PassObservation *o, const ClusterView *view, const ApiClientConfig *cfg) {
        _cleanup_free_ char *err = NULL;
        _cleanup_strv_free_ char **through = strv_new("");
        /* through the API's name, else a master that has just answered /readyz (the names may hold only
         * apiservers that do not serve: one that answers must not be kept out by them) */
        if (!through)
                return -ENOMEM;
        STRV_FOREACH (n, o->api.ready)
                if (extend_unique(&through, *n) < 0)
                        return -ENOMEM;
        _cleanup_(json_decrefp) json_t *list =
            list_through(view, cfg, through, "Node", NULL, PIVOT_MASTER_LABEL, USEC_INFINITY, NULL, &err);
        if (!list) {
                log_debug("API: the masters' pivot turns not read: %s", strna(err));
                o->api.out_unknown = true;
                return 0;
        }
        json_t *node;
        size_t i;
        json_array_foreach(json_object_get(list, "items"), i, node) {
                const char *name =
                    json_string_value(json_object_get(json_object_get(node, "metadata"), "name"));
                if (name && pivot_node_names_out(node) && strv_extend(&o->api.out, name) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* The masters whose apiserver pod the API reports Ready (docs/dns.md, "While the apiservers come up"), into
 * o->api.pods_ready; not readable: pods_read stays false and the rule goes without them. Read through a
 * master's own address, not the API's name: the one that answers is known to serve now
 * (o->api.pods_through), where a pod's Ready can be stale (every master powered off at once). Once every
 * master of the view has been seen with one, this process reads them no more (p->api_pods_all_seen). */
static int observe_apiserver_pods(Pass *p, PassObservation *o, const ClusterView *view, const bool *listed,
                                  const MasterNode *me, const ApiClientConfig *cfg) {
        _cleanup_free_ char *err = NULL;
        /* The listed masters first (this one's own first), whose answer vouches (dns_api_withheld()), so
         * that an unlisted master that answers hears from one as the listed masters do; then the others
         * that have just answered /readyz. */
        _cleanup_strv_free_ char **through = strv_new(listed[me - view->masters] ? me->name : NULL);
        if (!through)
                return -ENOMEM;
        for (size_t k = 0; k < view->n_masters; k++)
                if (listed[k] && extend_unique(&through, view->masters[k].name) < 0)
                        return -ENOMEM;
        STRV_FOREACH (n, o->api.ready)
                if (extend_unique(&through, *n) < 0)
                        return -ENOMEM;
        const char *answered = NULL;
        _cleanup_(json_decrefp) json_t *list =
            list_through(view, cfg, through, "Pod", "kube-system", NULL,
                         now(CLOCK_MONOTONIC) + API_PROBES_BUDGET, &answered, &err);
        if (!list) {
                log_debug("API: the apiserver pods not read: %s", strna(err));
                return 0;
        }
        o->api.pods_through = strdup(answered);
        if (!o->api.pods_through)
                return -ENOMEM;
        o->api.pods_read = true;
        json_t *pod;
        size_t i;
        json_array_foreach(json_object_get(list, "items"), i, pod) {
                const char *node = pivot_apiserver_pod_ready_on(pod);
                if (node && !strv_contains(o->api.pods_ready, node) &&
                    strv_extend(&o->api.pods_ready, node) < 0)
                        return -ENOMEM;
        }
        bool all = true;
        for (size_t k = 0; k < view->n_masters; k++)
                all = all && strv_contains(o->api.pods_ready, view->masters[k].name);
        if (all && !p->api_pods_all_seen) {
                log_info("API: every master's apiserver pod is Ready: the passes stop reading them");
                p->api_pods_all_seen = true;
        }
        return 0;
}

static int ask(PassObservation *o, const ApiClientConfig *cfg, const MasterNode *m, usec_t budget) {
        _cleanup_free_ char *why = NULL;
        usec_t n = now(CLOCK_MONOTONIC);
        if (n >= budget || strv_length(m->internal_ips) == 0)
                return 0;
        int r = probe_readyz(cfg->kubeconfig, cfg->host, cfg->port, m->internal_ips[0],
                             MIN(budget, n + API_PROBE_TIMEOUT), &why);
        if (r == -ENOMEM)
                return r;
        /* 401/403 (RBAC may take /readyz from identities outside system:masters): the apiserver answers
         * HTTP there, past the bound-but-silent start whose handshakes hang, which is what leaving a master
         * out protects clients from; whether its checks pass, this identity cannot read. It counts. */
        if (r == -EACCES || r == -EKEYREJECTED)
                r = 0;
        _cleanup_free_ char *said =
            r >= 0 ? strdup("") : strprintf("%s: %s", m->internal_ips[0], why ?: pk_strerror(r));
        if (!said || strv_push(&o->api_why, said) < 0)
                return -ENOMEM;
        said = NULL; /* the vector holds it */
        if (strv_extend(&o->api.probed, m->name) < 0 || (r >= 0 && strv_extend(&o->api.ready, m->name) < 0))
                return -ENOMEM;
        return 0;
}

static bool self_hosted_pivot_under_way(const Pass *p, const PassObservation *o) {
        return p->spec->self_hosted.set && p->spec->self_hosted.value && o->pivot_record.complete_at == 0;
}

/* Whether a master not listed answered /readyz: it goes in now unless the API's pods say otherwise, so
 * every master asks them then (a master that has stopped reading them would otherwise let it in, and one
 * still reading take it out again). */
static bool unlisted_answered(const PassObservation *o, const ClusterView *view, const bool *listed) {
        for (size_t i = 0; i < view->n_masters; i++)
                if (!listed[i] && strv_contains(o->api.ready, view->masters[i].name))
                        return true;
        return false;
}

static int observe_view(Pass *p, PassObservation *o, const ClusterView *view) {
        const ClusterSpec *spec = p->spec;
        const char *self = o->in.node ? o->in.node->name : NULL;
        _cleanup_free_ char *kubeconfig = NULL, *host = NULL;
        if (!self)
                return 0;
        kubeconfig = pass_api_kubeconfig(spec);
        if (!kubeconfig)
                return -ENOMEM;
        if (access(kubeconfig, R_OK) < 0)
                return 0; /* no client of our own (no certificates managed here): nobody is left out */
        int r = api_dns_name(spec->dns.internal_suffix, &host);
        if (r < 0)
                return r == -ENOMEM ? r : 0;
        o->api_gated = true;
        const ApiClientConfig cfg = { .kubeconfig = kubeconfig,
                                      .host = host,
                                      .port = pass_apiserver_port(spec) };
        const MasterNode *me = cluster_view_find_master(view, self);
        bool me_unlisted = false;
        size_t n_listed = 0;
        _cleanup_free_ bool *listed = new0(bool, view->n_masters + 1);
        _cleanup_free_ const MasterNode **others = new0(const MasterNode *, view->n_masters + 1);
        size_t n_others = 0;
        if (!others || !listed)
                return -ENOMEM;
        for (size_t i = 0; i < view->n_masters; i++) {
                const MasterNode *m = &view->masters[i];
                listed[i] = dns_rrsets_hold_all(&o->dns_served, host, m->internal_ips);
                if (listed[i])
                        n_listed++;
                else if (m == me)
                        me_unlisted = true;
                else
                        others[n_others++] = m;
        }
        usec_t budget = now(CLOCK_MONOTONIC) + API_PROBES_BUDGET;
        if (me_unlisted || n_others > 0) {
                trace_mark("API: asking the apiservers");
                /* A master not holding its volumes yet (it claims them this pass) is not asked: its
                 * apiserver cannot serve before its etcd runs, and its pass's first volume steps wait for
                 * nothing. */
                if (me)
                        r = ask(o, &cfg, me, budget);
                for (size_t k = 0; r >= 0 && k < n_others; k++)
                        r = ask(o, &cfg, others[k], budget);
        }
        bool several = n_listed > 0 && view->n_masters > 1;
        /* the turns matter only where a listed master could be taken out, or another kept from going in */
        if (r >= 0 && several && self_hosted_pivot_under_way(p, o)) {
                trace_mark("API: reading the pivot's turns");
                r = observe_pivot_turns(o, view, &cfg);
        }
        /* not in a takeover's first pass (this master claims its volumes now): it waits for no apiserver */
        if (r >= 0 && several && me && (!p->api_pods_all_seen || unlisted_answered(o, view, listed))) {
                trace_mark("API: reading the apiserver pods");
                r = observe_apiserver_pods(p, o, view, listed, me, &cfg);
        }
        trace_mark("API: answers");
        return r;
}

/* Why the asked master named is not ready; NULL when it was not asked (or answered). */
static const char *probe_failure(const PassObservation *o, const char *name) {
        for (size_t k = 0; o->api.probed && o->api.probed[k]; k++)
                if (streq(o->api.probed[k], name))
                        return isempty(o->api_why[k]) ? NULL : o->api_why[k];
        return NULL;
}

/* Whether the API's pods are why a master is left out (and no failed probe). */
static bool out_for_its_pod(const PassObservation *o, const char *name) {
        return o->api.pods_read && !strv_contains(o->api.pods_ready, name) && !probe_failure(o, name);
}

/* "d (198.18.42.14: /readyz: 500: [-]etcd failed), e (this master: ...)" */
static char *withheld_note(const PassObservation *o, char *const *withheld, const char *self) {
        _cleanup_strv_free_ char **each = NULL;
        STRV_FOREACH (n, (char **)withheld) {
                const char *why = probe_failure(o, *n);
                char *one =
                    strv_contains(o->api.out, *n)
                        ? strprintf("%s (its pivot turn: its self-hosted apiserver starts)", *n)
                    : why ? strprintf("%s (%s)", *n, why)
                    : out_for_its_pod(o, *n)
                        ? strprintf("%s (the API shows no Ready apiserver pod on it: its kubelet has "
                                    "not started or reported it yet)",
                                    *n)
                    : self && streq(*n, self)
                        ? strprintf("%s (this master: its apiserver does not serve yet; the other "
                                    "masters add it when it answers)",
                                    *n)
                        : strdup(*n);
                if (!one || strv_push(&each, one) < 0) {
                        free(one);
                        return NULL;
                }
        }
        return strv_join(each, ", ");
}

/* Whether a master left out waits for its apiserver's answer; the others wait for their pivot turn's end
 * or their pod, as their reasons say. */
static bool waits_for_answer(const PassObservation *o, char *const *withheld) {
        STRV_FOREACH (n, (char **)withheld)
                if (!strv_contains(o->api.out, *n) && !out_for_its_pod(o, *n))
                        return true;
        return false;
}

/* Whom the API's names leave out this pass, and why (plan->api_withheld, plan->api_note); planned before
 * DNS, whose desired records leave them out. */
static int api_names_plan(const Pass *p, const PassObservation *o, PassPlan *plan) {
        _cleanup_free_ char *host = NULL;
        _cleanup_strv_free_ char **withheld = NULL;
        const char *self = o->in.node ? o->in.node->name : NULL;
        if (!o->api_gated || !pass_dns_plannable(o, plan))
                return 0;
        int r = api_dns_name(p->spec->dns.internal_suffix, &host);
        if (r >= 0)
                r = dns_api_withheld(plan->view, &o->dns_served, host, self, &o->api, &withheld);
        if (r < 0)
                return r == -ENOMEM ? r : 0;
        if (strv_length(withheld) == 0)
                return 0;
        _cleanup_free_ char *who = withheld_note(o, withheld, self);
        plan->api_note =
            who ? strprintf("%s leaves out %s%s", host, who,
                            waits_for_answer(o, withheld) ? " until its apiserver answers /readyz" : "")
                : NULL;
        if (!plan->api_note)
                return -ENOMEM;
        plan->api_withheld = TAKE_PTR(withheld);
        return 0;
}

/* After the DNS step read what is served, with the view as observed (the names come from it; claims this
 * pass makes change addresses, not names): only the failures that stop the pass count. */
static int api_names_observe(PassContext *ctx) {
        PassObservation *o = ctx->obs;
        _cleanup_(cluster_view_freep) ClusterView *view = NULL;
        if (o->volumes_error < 0 || !o->dns_enabled)
                return 0;
        int r = volumes_view(&o->in, NULL, &view);
        if (r >= 0)
                r = observe_view(ctx->pass, o, view);
        return r == -ENOMEM ? r : 0;
}

const PassStep pass_step_api_names = {
        .name = "API names",
        .stage = PASS_STAGE_DNS,
        .roles = 1U << NODE_ROLE_MASTER,
        .observe = api_names_observe,
        .plan = api_names_plan,
};
