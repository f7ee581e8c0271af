/* SPDX-License-Identifier: Apache-2.0 */
/* A master joins the API's names when its apiserver serves (docs/dns.md, "A master joins the API's names
 * when it serves"). The observation asks /readyz of the masters that hold a main volume and are not in
 * api.<internalSuffix> yet, and, when one of them is another master, of this master's own apiserver (whether
 * leaving that one out keeps clients on a working API); the plan leaves out whom dns_api_withheld() says.
 * While every master is listed nothing is asked: an idle pass asks no apiserver. */
#include <errno.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "basic/trace.h"
#include "daemon/pass.h"
#include "kube/kube-client.h"
#include "model/cluster-view.h"
#include "model/conventions.h"
#include "model/pki-layout.h"
#include "shared/http.h"

/* One apiserver's answer. A port bound by an apiserver that does not serve yet accepts the connection and
 * never answers the TLS handshake: the probe ends here. */
#define API_PROBE_TIMEOUT (1 * USEC_PER_SEC)
/* All of a pass's probes; a master left unasked is not left out. */
#define API_PROBES_BUDGET (3 * USEC_PER_SEC)

/* protokube's client of the API's name, one try of API_PROBE_TIMEOUT; connected to address when not NULL. */
static int open_api(const char *kubeconfig, const char *host, unsigned port, const char *address,
                    KubeClient **ret, char **ret_error) {
        _cleanup_(kube_client_freep) KubeClient *c = NULL;
        _cleanup_free_ char *server = strprintf("https://%s:%u", host, port),
                            *to = address ? http_connect_to_address(host, port, address) : NULL;
        if (!server || (address && !to))
                return -ENOMEM;
        int r = kube_client_new_from_kubeconfig(kubeconfig, &c, ret_error);
        if (r >= 0)
                r = kube_client_override(c, &(KubeClientConfig){ .server = server, .connect_to = to },
                                         ret_error);
        if (r < 0)
                return r;
        kube_client_set_retry(c, &(KubeRetryPolicy){ .max_tries = 1, .request_timeout = API_PROBE_TIMEOUT });
        *ret = TAKE_PTR(c);
        return 0;
}

static int probe_readyz(const char *kubeconfig, const char *host, unsigned port, const char *address,
                        usec_t deadline, char **ret_error) {
        _cleanup_(kube_client_freep) KubeClient *c = NULL;
        int r = open_api(kubeconfig, host, port, address, &c, ret_error);
        return r < 0 ? r : kube_probe(c, "readyz", deadline, ret_error);
}

/* The masters' Nodes, through the API's name, else through a master whose apiserver just answered /readyz
 * (the names may hold only apiservers that do not serve: one that answers must not be kept out by them).
 * Each try API_PROBE_TIMEOUT; NULL when none answered. */
static json_t *list_masters(const PassObservation *o, const ClusterView *view, const char *kubeconfig,
                            const char *host, unsigned port, char **ret_error) {
        for (size_t k = 0; k <= strv_length(o->api.ready); k++) {
                const MasterNode *m = k > 0 ? cluster_view_find_master(view, o->api.ready[k - 1]) : NULL;
                const char *address = m && strv_length(m->internal_ips) > 0 ? m->internal_ips[0] : NULL;
                _cleanup_(kube_client_freep) KubeClient *c = NULL;
                json_t *list = NULL;
                if (k > 0 && !address)
                        continue;
                free(*ret_error);
                *ret_error = NULL;
                int r = open_api(kubeconfig, host, port, address, &c, ret_error);
                if (r >= 0)
                        r = kube_list(c, "v1", "Node", NULL, PIVOT_MASTER_LABEL,
                                      now(CLOCK_MONOTONIC) + API_PROBE_TIMEOUT, &list, ret_error);
                if (r >= 0)
                        return list;
        }
        return NULL;
}

/* While the self-hosted pivot is under way, the masters whose Node asks to be out of the API's names for
 * their turn (docs/pivot.md, "One apiserver starting at a time"), into o->api.out; not readable: out_unknown
 * (no master goes in meanwhile: one that asked could be starting its apiserver). */
static int observe_pivot_turns(PassObservation *o, const ClusterView *view, const char *kubeconfig,
                               const char *host, unsigned port) {
        _cleanup_free_ char *err = NULL;
        _cleanup_(json_decrefp) json_t *list = list_masters(o, view, kubeconfig, host, port, &err);
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

static int ask(PassObservation *o, const char *kubeconfig, const char *host, unsigned port,
               const MasterNode *m, usec_t budget) {
        _cleanup_free_ char *why = NULL;
        usec_t n = now(CLOCK_MONOTONIC);
        if (n >= budget || strv_length(m->internal_ips) == 0)
                return 0;
        int r = probe_readyz(kubeconfig, host, port, m->internal_ips[0], MIN(budget, n + API_PROBE_TIMEOUT),
                             &why);
        if (r == -ENOMEM)
                return r;
        /* 401/403 (RBAC may take /readyz from identities outside system:masters): the apiserver answers
         * HTTP there, past the bound-but-silent start whose handshakes hang, which is what leaving a master
         * out protects clients from; whether its checks pass, this identity cannot read. It counts. */
        if (r == -EACCES)
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

int pass_api_observe(const Pass *p, PassObservation *o, const ClusterView *view) {
        const ClusterSpec *spec = p->spec;
        const char *self = o->in.node ? o->in.node->name : NULL;
        _cleanup_free_ char *kubeconfig = NULL, *host = NULL;
        if (!o->dns || !self)
                return 0;
        kubeconfig =
            pki_layout_file(spec->pki.dir ?: PKI_DIR_DEFAULT, PKI_PROTOKUBE_DIR, PKI_KUBECONFIG_FILE);
        if (!kubeconfig)
                return -ENOMEM;
        if (access(kubeconfig, R_OK) < 0)
                return 0; /* no client of our own (no certificates managed here): nobody is left out */
        int r = api_dns_name(spec->dns.internal_suffix, &host);
        if (r < 0)
                return r == -ENOMEM ? r : 0;
        o->api_gated = true;
        const MasterNode *me = cluster_view_find_master(view, self);
        bool me_unlisted = false;
        size_t n_listed = 0;
        _cleanup_free_ const MasterNode **others = new0(const MasterNode *, view->n_masters + 1);
        size_t n_others = 0;
        if (!others)
                return -ENOMEM;
        for (size_t i = 0; i < view->n_masters; i++) {
                const MasterNode *m = &view->masters[i];
                if (dns_rrsets_hold_all(&o->dns_served, host, m->internal_ips)) {
                        n_listed++;
                        continue;
                }
                if (m == me)
                        me_unlisted = true;
                else
                        others[n_others++] = m;
        }
        unsigned port = pass_apiserver_port(spec);
        usec_t budget = now(CLOCK_MONOTONIC) + API_PROBES_BUDGET;
        if (me_unlisted || n_others > 0) {
                trace_mark("API: asking the apiservers");
                /* A master not holding its volumes yet (it claims them this pass) is not asked: its
                 * apiserver cannot serve before its etcd runs, and its pass's first volume steps wait for
                 * nothing. */
                if (me)
                        r = ask(o, kubeconfig, host, port, me, budget);
                for (size_t k = 0; r >= 0 && k < n_others; k++)
                        r = ask(o, kubeconfig, host, port, others[k], budget);
        }
        /* the turns matter only where a listed master could be taken out, or another kept from going in */
        if (r >= 0 && self_hosted_pivot_under_way(p, o) && n_listed > 0 && view->n_masters > 1) {
                trace_mark("API: reading the pivot's turns");
                r = observe_pivot_turns(o, view, kubeconfig, host, port);
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

/* "d (198.18.42.14: /readyz: 500: [-]etcd failed), e (this master: ...)" */
static char *withheld_note(const PassObservation *o, char *const *withheld, const char *self) {
        _cleanup_strv_free_ char **each = NULL;
        STRV_FOREACH (n, (char **)withheld) {
                const char *why = probe_failure(o, *n);
                char *one = strv_contains(o->api.out, *n)
                                ? strprintf("%s (its pivot turn: its self-hosted apiserver starts)", *n)
                            : why ? strprintf("%s (%s)", *n, why)
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

/* Whether every master left out is out for its pivot turn (which ends by the pivot, not by /readyz). */
static bool turns_only(const PassObservation *o, char *const *withheld) {
        STRV_FOREACH (n, (char **)withheld)
                if (!strv_contains(o->api.out, *n))
                        return false;
        return true;
}

int pass_api_plan(const Pass *p, const PassObservation *o, PassPlan *plan) {
        _cleanup_free_ char *host = NULL;
        _cleanup_strv_free_ char **withheld = NULL;
        const char *self = o->in.node ? o->in.node->name : NULL;
        if (!o->api_gated)
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
                            turns_only(o, withheld) ? "" : " until its apiserver answers /readyz")
                : NULL;
        if (!plan->api_note)
                return -ENOMEM;
        plan->api_withheld = TAKE_PTR(withheld);
        return 0;
}
