/* SPDX-License-Identifier: Apache-2.0 */
/* A round's writes: bind, approve, sign, adopt, each a compare-and-set through the API. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "join/join-round.h"
#include "join/join-sign.h"

void join_report_done(JoinReport *r) {
        for (size_t i = 0; r->outcomes && i < r->n; i++) {
                free(r->outcomes[i].csr);
                free(r->outcomes[i].node);
                free(r->outcomes[i].message);
        }
        free(r->outcomes);
        *r = (JoinReport){};
}

/* Appends an outcome; its message is "<reason>" or "<reason>; <what happened>". */
static int report(JoinReport *rep, JoinOutcomeKind kind, const char *csr, const char *node,
                  const char *reason, const char *what) {
        JoinOutcome *l = reallocarray(rep->outcomes, rep->n + 1, sizeof(JoinOutcome));
        if (!l)
                return -ENOMEM;
        rep->outcomes = l;
        JoinOutcome *o = &l[rep->n];
        *o = (JoinOutcome){ .kind = kind,
                            .csr = csr ? strdup(csr) : NULL,
                            .node = node ? strdup(node) : NULL,
                            .message = what ? strjoin(strempty(reason), reason ? "; " : "", what)
                                            : strdup(strempty(reason)) };
        if ((csr && !o->csr) || (node && !o->node) || !o->message) {
                free(o->csr);
                free(o->node);
                free(o->message);
                return -ENOMEM;
        }
        rep->n++;
        return 0;
}

/* The outcome of a failed write: a lost race (another master wrote first) or a failure. */
static int report_write(JoinReport *rep, int r, const char *csr, const char *node, const char *reason,
                        const char *what, const char *err) {
        if (r == -ENOMEM || r == -ECANCELED)
                return r;
        bool lost = r == PK_ECONFLICT || r == -EEXIST;
        _cleanup_free_ char *m =
            strprintf("%s: %s%s%s%s", what, lost ? "another master wrote first (" : "", strna(err),
                      lost ? ")" : "", lost ? ": read again next round" : "");
        if (!m)
                return -ENOMEM;
        return report(rep, lost ? JOIN_OUTCOME_LOST_RACE : JOIN_OUTCOME_FAILED, csr, node, reason, m);
}

static int bind_name(KubeClient *c, const JoinCsr *csr, const JoinDecision *d, usec_t now, usec_t deadline,
                     char **ret_error) {
        if (d->bind == JOIN_BIND_CREATE)
                return join_binding_create(c, d->node, d->machine, csr->name, now, deadline, ret_error);
        if (d->bind == JOIN_BIND_REPLACE)
                return join_binding_replace(c, d->replaced, d->machine, csr->name, now, deadline, ret_error);
        return 0;
}

/* Signs the approved object obj: the request read from it again, the certificate written at its version. */
static int sign(KubeClient *c, const json_t *obj, const JoinSettings *s, usec_t now, usec_t deadline,
                const char *reason, JoinReport *rep) {
        _cleanup_(join_csr_freep) JoinCsr *csr = NULL;
        _cleanup_free_ char *err = NULL, *pem = NULL;
        char lifetime[GO_DURATION_MAX];
        int r = join_csr_from_json(obj, &csr, &err);
        if (r >= 0)
                r = join_csr_issue(csr, s->ca, s->ca_key, s->lifetime, now, &pem, &err);
        if (r == -ENOMEM)
                return r;
        const char *name = csr ? csr->name : NULL;
        const char *node = csr && csr->request ? join_node_of_cn(csr->request->cn) : NULL;
        if (r < 0) {
                _cleanup_free_ char *m = strprintf("not signed: %s", strna(err));
                return m ? report(rep, JOIN_OUTCOME_FAILED, name, node, reason, m) : -ENOMEM;
        }
        r = join_csr_write_certificate(c, obj, pem, deadline, NULL, &err);
        if (r < 0)
                return report_write(rep, r, name, node, reason, "writing the certificate", err);
        _cleanup_free_ char *m = strprintf("signed for %s", format_go_duration(lifetime, s->lifetime));
        return m ? report(rep, JOIN_OUTCOME_SIGNED, name, node, reason, m) : -ENOMEM;
}

/* A refusal leaves the CSR pending, and says why on it (once: only when the reason changed) for the worker
 * to read; a failed note is a failure of its own, the refusal stands. */
static int refuse(KubeClient *c, const JoinCsr *csr, const JoinDecision *d, usec_t deadline,
                  JoinReport *rep) {
        int r = report(rep, JOIN_OUTCOME_REFUSED, csr->name, d->node, d->reason, NULL);
        if (r < 0 || streq_ptr(csr->refusal, d->reason))
                return r;
        _cleanup_free_ char *err = NULL;
        r = join_csr_note_refusal(c, csr->name, d->reason, deadline, &err);
        return r < 0 ? report_write(rep, r, csr->name, d->node, d->reason, "noting the refusal on the CSR",
                                    err)
                     : 0;
}

static int apply_csr(KubeClient *c, const JoinObservation *o, const JoinCsrPlan *e, const JoinSettings *s,
                     usec_t now, usec_t deadline, JoinReport *rep) {
        const JoinCsr *csr = o->csrs[e->csr];
        const JoinDecision *d = &e->decision;
        const json_t *obj = json_array_get(o->csr_objects, e->csr);
        _cleanup_free_ char *err = NULL;
        json_t *approved = NULL;
        if (csr->approved) {
                if (e->sign)
                        return sign(c, obj, s, now, deadline, "approved before", rep);
                return e->not_signed ? report(rep, JOIN_OUTCOME_APPROVED, csr->name, d->node, e->not_signed,
                                              "approved, but not signed: not a kubelet's certificate")
                                     : 0;
        }
        if (d->verdict == JOIN_VERDICT_REFUSE)
                return refuse(c, csr, d, deadline, rep);
        if (d->verdict != JOIN_VERDICT_APPROVE)
                return 0;
        int r = bind_name(c, csr, d, now, deadline, &err);
        if (r < 0)
                return report_write(rep, r, csr->name, d->node, d->reason, "binding the name", err);
        r = join_csr_approve(c, obj, d->reason, now, deadline, &approved, &err);
        if (r < 0)
                return report_write(rep, r, csr->name, d->node, d->reason, "approving", err);
        r = e->sign ? sign(c, approved, s, now, deadline, d->reason, rep)
                    : report(rep, JOIN_OUTCOME_APPROVED, csr->name, d->node, d->reason, NULL);
        json_decref(approved);
        return r;
}

static int apply_adopt(KubeClient *c, const JoinObservation *o, size_t b, size_t n, usec_t deadline,
                       JoinReport *rep) {
        const JoinBinding *binding = &o->bindings[b];
        const JoinNode *node = &o->nodes[n];
        _cleanup_free_ char *err = NULL, *m = NULL;
        int r = join_binding_adopt(c, binding, node->uid, deadline, &err);
        if (r < 0)
                return report_write(rep, r, NULL, binding->node, NULL, "adopting the binding", err);
        m = strprintf("binding of %s (machine %s) now owned by Node %s (uid %s)", binding->node,
                      binding->machine, node->name, node->uid);
        return m ? report(rep, JOIN_OUTCOME_ADOPTED, NULL, binding->node, m, NULL) : -ENOMEM;
}

int join_apply(KubeClient *c, const JoinObservation *o, const JoinPlan *p, const JoinSettings *s, usec_t now,
               usec_t deadline, JoinReport *ret) {
        _cleanup_(join_report_done) JoinReport rep = {};
        int r = 0;
        for (size_t i = 0; r >= 0 && i < p->n_csrs; i++)
                r = apply_csr(c, o, &p->csrs[i], s, now, deadline, &rep);
        for (size_t i = 0; r >= 0 && i < p->n_adopt; i++)
                r = apply_adopt(c, o, p->adopt[i], p->adopt_nodes[i], deadline, &rep);
        if (r < 0)
                return r;
        *ret = rep;
        rep = (JoinReport){};
        return 0;
}
