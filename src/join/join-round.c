/* SPDX-License-Identifier: Apache-2.0 */
/* A round of the approver and signer: observe through the API, plan (pure), apply. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "join/join-round.h"
#include "join/join-sign.h"
#include "kube/kube-name.h"
#include "shared/json-util.h"

#define NODE_ADDRESSES_MAX 64

static const char *const outcome_table[_JOIN_OUTCOME_KIND_MAX] = {
        [JOIN_OUTCOME_APPROVED] = "approved", [JOIN_OUTCOME_SIGNED] = "signed",
        [JOIN_OUTCOME_REFUSED] = "refused",   [JOIN_OUTCOME_LOST_RACE] = "lost-race",
        [JOIN_OUTCOME_FAILED] = "failed",     [JOIN_OUTCOME_ADOPTED] = "adopted",
};

const char *join_outcome_kind_to_string(JoinOutcomeKind k) {
        return k >= 0 && k < _JOIN_OUTCOME_KIND_MAX ? outcome_table[k] : NULL;
}

void join_observation_done(JoinObservation *o) {
        for (size_t i = 0; o->csrs && i < o->n_csrs; i++)
                join_csr_free(o->csrs[i]);
        free(o->csrs);
        json_decref(o->csr_objects);
        join_bindings_free(o->bindings, o->n_bindings);
        for (size_t i = 0; o->nodes && i < o->n_nodes; i++) {
                free((char *)o->nodes[i].name);
                free((char *)o->nodes[i].uid);
                strv_free((char **)o->nodes[i].addresses);
        }
        free(o->nodes);
        *o = (JoinObservation){};
}

/* A CSR the round works on: a kubelet signer's, not finished. */
static bool csr_open(const JoinCsr *c) {
        return c && c->kind != JOIN_CSR_OTHER && !c->has_certificate && !c->denied && !c->failed;
}

static int read_csrs(KubeClient *c, usec_t deadline, JoinObservation *o, char **ret_error) {
        json_t *list = NULL, *item;
        size_t i;
        int r = kube_list(c, JOIN_CSR_API_VERSION, JOIN_CSR_KIND, NULL, NULL, deadline, &list, ret_error);
        if (r < 0)
                return r;
        o->csr_objects = json_incref(json_object_get(list, "items"));
        json_decref(list);
        o->n_csrs = json_array_size(o->csr_objects);
        if (o->n_csrs > JOIN_CSRS_MAX)
                return error_setf(ret_error, PK_ETOOBIG, "more than %u CertificateSigningRequests",
                                  JOIN_CSRS_MAX);
        o->csrs = new0(JoinCsr *, o->n_csrs);
        if (!o->csrs)
                return -ENOMEM;
        json_array_foreach(o->csr_objects, i, item) {
                /* a list's items come without their type: each is written back as an object of its own */
                if (json_object_set_new(item, "apiVersion", json_string(JOIN_CSR_API_VERSION)) < 0 ||
                    json_object_set_new(item, "kind", json_string(JOIN_CSR_KIND)) < 0)
                        return -ENOMEM;
                r = join_csr_from_json(item, &o->csrs[i], NULL);
                if (r == -ENOMEM)
                        return r;
        }
        return 0;
}

/* The names whose Node the round needs: those of the open CSRs, and of the bindings no Node owns yet. */
static int wanted_nodes(const JoinObservation *o, char ***ret) {
        _cleanup_strv_free_ char **names = new0(char *, 1);
        if (!names)
                return -ENOMEM;
        for (size_t i = 0; i < o->n_csrs; i++) {
                const JoinCsr *c = o->csrs[i];
                const char *node = csr_open(c) && c->request ? join_node_of_cn(c->request->cn) : NULL;
                if (node && kube_name_valid(KUBE_NAME_DNS_SUBDOMAIN, node) && !strv_contains(names, node) &&
                    strv_extend(&names, node) < 0)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < o->n_bindings; i++) {
                const JoinBinding *b = &o->bindings[i];
                if (!b->invalid && !b->node_uid && !strv_contains(names, b->node) &&
                    strv_extend(&names, b->node) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(names);
        return 0;
}

static int node_from_json(const json_t *obj, JoinNode *ret) {
        _cleanup_strv_free_ char **addrs = new0(char *, 1);
        const json_t *a;
        size_t i;
        if (!addrs)
                return -ENOMEM;
        json_array_foreach(json_get(obj, "status", "addresses"), i, a) {
                const char *s = json_get_string(a, "address");
                if (i >= NODE_ADDRESSES_MAX)
                        break;
                if (s && !string_has_cc(s) && strv_extend(&addrs, s) < 0)
                        return -ENOMEM;
        }
        char *name = strdup(strempty(json_get_string(obj, "metadata", "name")));
        char *uid = strdup(strempty(json_get_string(obj, "metadata", "uid")));
        if (!name || !uid) {
                free(name);
                free(uid);
                return -ENOMEM;
        }
        *ret = (JoinNode){ .name = name, .uid = uid, .addresses = TAKE_PTR(addrs) };
        return 0;
}

static int read_nodes(KubeClient *c, usec_t deadline, JoinObservation *o, char **ret_error) {
        _cleanup_strv_free_ char **names = NULL;
        int r = wanted_nodes(o, &names);
        if (r < 0)
                return r;
        o->nodes = new0(JoinNode, strv_length(names));
        if (!o->nodes)
                return -ENOMEM;
        STRV_FOREACH (n, names) {
                json_t *obj = NULL;
                r = kube_get(c, "v1", "Node", NULL, *n, deadline, &obj, ret_error);
                if (r == -ENOENT) {
                        free(*ret_error);
                        *ret_error = NULL;
                        continue;
                }
                if (r < 0)
                        return r;
                r = node_from_json(obj, &o->nodes[o->n_nodes]);
                json_decref(obj);
                if (r < 0)
                        return r;
                o->n_nodes++;
        }
        return 0;
}

int join_observe(KubeClient *c, usec_t deadline, JoinObservation *ret, char **ret_error) {
        _cleanup_(join_observation_done) JoinObservation o = {};
        _cleanup_free_ char *err = NULL;
        int r = read_csrs(c, deadline, &o, &err);
        if (r >= 0)
                r = join_binding_list(c, deadline, &o.bindings, &o.n_bindings, &err);
        if (r >= 0)
                r = read_nodes(c, deadline, &o, &err);
        if (r < 0)
                return err ? error_setf(ret_error, r, "%s", err) : r;
        *ret = o;
        o = (JoinObservation){};
        return 0;
}

JoinCluster join_observation_cluster(const JoinObservation *o, const JoinSettings *s) {
        return (JoinCluster){ .bindings = o->bindings,
                              .n_bindings = o->n_bindings,
                              .nodes = o->nodes,
                              .n_nodes = o->n_nodes,
                              .machines_known = s->machines_known,
                              .machines = s->machines,
                              .n_machines = s->n_machines };
}

void join_plan_done(JoinPlan *p) {
        for (size_t i = 0; p->csrs && i < p->n_csrs; i++) {
                join_decision_done(&p->csrs[i].decision);
                free(p->csrs[i].not_signed);
        }
        free(p->csrs);
        free(p->adopt);
        free(p->adopt_nodes);
        *p = (JoinPlan){};
}

static bool binds(const JoinCsrPlan *e) {
        return e->decision.verdict == JOIN_VERDICT_APPROVE && e->decision.bind != JOIN_BIND_NONE;
}

/* Whether another request binds e's node to another machine, and the names of all that bind it. */
static int contest(const JoinObservation *o, const JoinPlan *p, size_t i, bool *ret, char **ret_names) {
        const JoinDecision *d = &p->csrs[i].decision;
        for (size_t j = 0; j < p->n_csrs; j++) {
                const JoinDecision *e = &p->csrs[j].decision;
                if (!binds(&p->csrs[j]) || !streq(e->node, d->node))
                        continue;
                *ret = *ret || !streq(e->machine, d->machine);
                if (strextend_printf(ret_names, "%s%s", *ret_names ? ", " : "",
                                     o->csrs[p->csrs[j].csr]->name) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* A free name asked for by several machines in one round (a released name, and a request refused while
 * it was taken still pending beside its replacement's): which one gets it must not depend on the order
 * of a list, so none does, and the reason says which requests compete. */
static int refuse_contested(const JoinObservation *o, JoinPlan *p) {
        _cleanup_free_ char **why = new0(char *, p->n_csrs);
        int r = 0;
        if (!why)
                return -ENOMEM;
        for (size_t i = 0; r >= 0 && i < p->n_csrs; i++) {
                _cleanup_free_ char *names = NULL;
                bool contested = false;
                if (!binds(&p->csrs[i]))
                        continue;
                r = contest(o, p, i, &contested, &names);
                if (r >= 0 && contested &&
                    !(why[i] = strprintf("several machines ask for the free node name %s at once (requests "
                                         "%s): none gets it until the others' requests are deleted",
                                         p->csrs[i].decision.node, names)))
                        r = -ENOMEM;
        }
        for (size_t i = 0; i < p->n_csrs; i++) {
                JoinDecision *d = &p->csrs[i].decision;
                if (!why[i])
                        continue;
                if (r >= 0) {
                        free(d->reason);
                        d->reason = TAKE_PTR(why[i]);
                        d->verdict = JOIN_VERDICT_REFUSE;
                        d->bind = JOIN_BIND_NONE;
                        d->replaced = NULL;
                        free(d->machine);
                        d->machine = NULL;
                        p->csrs[i].sign = false;
                }
                free(why[i]);
        }
        return r;
}

int join_plan(const JoinObservation *o, const JoinSettings *s, JoinPlan *ret) {
        _cleanup_(join_plan_done) JoinPlan p = {};
        JoinCluster cl = join_observation_cluster(o, s);
        p.csrs = new0(JoinCsrPlan, o->n_csrs);
        if (!p.csrs)
                return -ENOMEM;
        for (size_t i = 0; i < o->n_csrs; i++) {
                const JoinCsr *c = o->csrs[i];
                if (!csr_open(c))
                        continue;
                JoinCsrPlan *e = &p.csrs[p.n_csrs++];
                e->csr = i;
                int r = join_csr_decide(c, &cl, &e->decision);
                if (r < 0)
                        return r;
                if (c->approved)
                        e->sign = join_csr_signable(c, &e->not_signed) && s->ca;
                else /* approved by this round: its shape was checked by the decision */
                        e->sign = e->decision.verdict == JOIN_VERDICT_APPROVE && s->ca;
        }
        int r = refuse_contested(o, &p);
        if (r < 0)
                return r;
        r = join_bindings_to_adopt(&cl, &p.adopt, &p.adopt_nodes, &p.n_adopt);
        if (r < 0)
                return r;
        *ret = p;
        p = (JoinPlan){};
        return 0;
}

static const char *kind_text(JoinCsrKind k) {
        return k == JOIN_CSR_CLIENT ? "client" : k == JOIN_CSR_SERVING ? "serving" : "other";
}

void join_plan_print(const JoinObservation *o, const JoinPlan *p, const char *prefix, FILE *out) {
        if (p->n_csrs == 0)
                fprintf(out, "%sno open kubelet CSR\n", prefix);
        for (size_t i = 0; i < p->n_csrs; i++) {
                const JoinCsrPlan *e = &p->csrs[i];
                const JoinCsr *c = o->csrs[e->csr];
                const char *what = c->approved ? (e->not_signed ? "not signed" : "sign")
                                               : join_verdict_to_string(e->decision.verdict);
                fprintf(out, "%s%s  node %s  %s  by %s  %s: %s\n", prefix, c->name, strna(e->decision.node),
                        kind_text(c->kind), strna(c->username), what,
                        c->approved ? (e->not_signed ?: "approved before") : e->decision.reason);
        }
        for (size_t i = 0; i < p->n_adopt; i++)
                fprintf(out, "%sbinding of %s: to be owned by Node %s\n", prefix,
                        o->bindings[p->adopt[i]].node, o->nodes[p->adopt_nodes[i]].name);
}
