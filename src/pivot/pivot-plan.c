/* SPDX-License-Identifier: Apache-2.0 */
#include "pivot/pivot-plan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/string-util.h"

#define PIVOT_MASTERS_MAX 64

static const char *const component_names[_PIVOT_COMPONENT_MAX] = {
        [PIVOT_APISERVER] = "kube-apiserver",
        [PIVOT_CONTROLLER_MANAGER] = "kube-controller-manager",
        [PIVOT_SCHEDULER] = "kube-scheduler",
};

static const char *const step_names[_PIVOT_STEP_MAX] = {
        [PIVOT_WAIT_API] = "wait-api",
        [PIVOT_APPLY_ASSETS] = "apply-assets",
        [PIVOT_WAIT_SELF_HOSTED] = "wait-self-hosted",
        [PIVOT_WAIT_TURN] = "wait-turn",
        [PIVOT_LEAVE_API_NAMES] = "leave-api-names",
        [PIVOT_WAIT_API_NAMES] = "wait-api-names",
        [PIVOT_START_SELF_HOSTED] = "start-self-hosted",
        [PIVOT_REMOVE_BOOTSTRAP] = "remove-bootstrap",
        [PIVOT_WAIT_LOCAL] = "wait-local",
        [PIVOT_RESTORE_BOOTSTRAP] = "restore-bootstrap",
        [PIVOT_WAIT_MIRRORS_GONE] = "wait-mirrors-gone",
        [PIVOT_REJOIN_API_NAMES] = "rejoin-api-names",
        [PIVOT_MARK_COMPLETE] = "mark-complete",
        [PIVOT_RENEW_CERTIFICATES] = "renew-certificates",
        [PIVOT_DONE] = "done",
        [PIVOT_FAILED] = "failed",
};

const char *pivot_component_name(PivotComponent c) {
        return c >= 0 && c < _PIVOT_COMPONENT_MAX ? component_names[c] : NULL;
}

const char *pivot_step_name(PivotStep s) {
        return s >= 0 && s < _PIVOT_STEP_MAX ? step_names[s] : NULL;
}

void pivot_decision_done(PivotDecision *d) {
        free(d->why);
        *d = (PivotDecision){};
}

static int by_node_name(const void *a, const void *b) {
        const PivotMaster *const *x = a, *const *y = b;
        return strcmp((*x)->node, (*y)->node);
}

static bool any(const bool v[static _PIVOT_COMPONENT_MAX]) {
        for (size_t c = 0; c < _PIVOT_COMPONENT_MAX; c++)
                if (v[c])
                        return true;
        return false;
}

static usec_t ready_deadline(const PivotObservation *obs) {
        return obs->ready_deadline ?: PIVOT_READY_DEADLINE;
}

static usec_t restore_deadline(const PivotObservation *obs) {
        return obs->restore_deadline ?: PIVOT_RESTORE_DEADLINE;
}

static usec_t elapsed(usec_t since, usec_t now) {
        return since && now > since ? now - since : 0;
}

/* The decision with its sentence; the sentence's allocation is the only way this fails. */
static int decide(PivotDecision *ret, PivotStep step, const char *node, PivotComponent c, char *why) {
        if (!why)
                return -ENOMEM;
        *ret = (PivotDecision){ .step = step, .node = node, .component = c, .why = why };
        return 0;
}

/* The masters sorted by node name, into sorted[]; the index of self in *ret_self. */
static int sort_masters(const PivotObservation *obs, const PivotMaster **sorted, size_t *ret_self) {
        if (!obs->self || obs->n_masters == 0 || obs->n_masters > PIVOT_MASTERS_MAX)
                return -EINVAL;
        for (size_t i = 0; i < obs->n_masters; i++) {
                if (isempty(obs->masters[i].node))
                        return -EINVAL;
                sorted[i] = &obs->masters[i];
        }
        qsort_safe(sorted, obs->n_masters, sizeof(*sorted), by_node_name);
        for (size_t i = 0; i < obs->n_masters; i++)
                if (streq(sorted[i]->node, obs->self)) {
                        *ret_self = i;
                        return 0;
                }
        return -EINVAL;
}

/* This master removed its bootstrap manifests: finish the removal, wait for its self-hosted apiserver to
 * serve, or roll back when it did not within PIVOT_RESTORE_DEADLINE. 1 with a decision, 0 to go on. */
static int decide_after_removal(const PivotObservation *obs, const PivotMaster *me, PivotDecision *ret) {
        if (any(obs->local_bootstrap))
                return decide(ret, PIVOT_REMOVE_BOOTSTRAP, me->node, PIVOT_APISERVER,
                              strprintf("%s: finishing the removal of its bootstrap manifests", me->node))
                           ?: 1;
        if (obs->local_api_ready && me->self_hosted_ready[PIVOT_APISERVER])
                return 0;
        usec_t waited = elapsed(obs->removed_at, obs->now);
        if (waited > restore_deadline(obs))
                return decide(ret, PIVOT_RESTORE_BOOTSTRAP, me->node, PIVOT_APISERVER,
                              strprintf("%s: its self-hosted kube-apiserver did not serve within %llu s of "
                                        "the bootstrap pods' removal (%s): the bootstrap pods come back",
                                        me->node, (unsigned long long)(restore_deadline(obs) / USEC_PER_SEC),
                                        me->self_hosted_reason ?: "not Ready"))
                           ?: 1;
        return decide(ret, PIVOT_WAIT_LOCAL, me->node, PIVOT_APISERVER,
                      strprintf("%s: waiting for its self-hosted kube-apiserver to serve (%llu s of %llu)",
                                me->node, (unsigned long long)(waited / USEC_PER_SEC),
                                (unsigned long long)(restore_deadline(obs) / USEC_PER_SEC)))
                   ?: 1;
}

/* The deadline of a self-hosted pod that is not Ready, or 0 when this master does not judge it: its own
 * self-hosted apiserver from its start (its turn), the other components from the assets' application.
 * Another master's apiserver is that master's to judge: it started at its own turn, which this one did not
 * see. */
static usec_t not_ready_since(const PivotObservation *obs, const PivotMaster *m, PivotComponent c) {
        if (c != PIVOT_APISERVER)
                return obs->assets_applied_at;
        if (!streq(m->node, obs->self))
                return 0;
        return MAX(obs->assets_applied_at, obs->started_at);
}

/* Every master's self-hosted pods Ready (a master's apiserver once its turn started it; only the apiservers
 * with apiservers_only), or the wait (or, past the deadline and before this master removed anything, the
 * failure). 1 with a decision, 0 when all are Ready. A turn starts its apiserver whatever the Deployments
 * do; the bootstrap pods go, and the pivot completes, only with every self-hosted pod Ready. */
static int decide_self_hosted(const PivotObservation *obs, const PivotMaster *const *sorted,
                              bool apiservers_only, PivotDecision *ret) {
        for (size_t i = 0; i < obs->n_masters; i++)
                for (PivotComponent c = 0; c < _PIVOT_COMPONENT_MAX; c++) {
                        if (sorted[i]->self_hosted_ready[c] || (apiservers_only && c != PIVOT_APISERVER) ||
                            (c == PIVOT_APISERVER && !sorted[i]->apiserver_started))
                                continue;
                        const char *reason = sorted[i]->self_hosted_reasons[c]
                                                 ?: c == PIVOT_APISERVER && sorted[i]->self_hosted_reason
                                                    ? sorted[i]->self_hosted_reason
                                                    : "not Ready";
                        usec_t since = not_ready_since(obs, sorted[i], c), waited = elapsed(since, obs->now);
                        if (since && waited > ready_deadline(obs) && obs->removed_at == 0)
                                return decide(ret, PIVOT_FAILED, sorted[i]->node, c,
                                              strprintf("self-hosted %s on %s is not Ready %llu s after %s "
                                                        "(%s): the bootstrap pods stay",
                                                        component_names[c], sorted[i]->node,
                                                        (unsigned long long)(waited / USEC_PER_SEC),
                                                        c == PIVOT_APISERVER ? "it was started"
                                                                             : "the assets were applied",
                                                        reason))
                                           ?: 1;
                        return decide(ret, PIVOT_WAIT_SELF_HOSTED, sorted[i]->node, c,
                                      strprintf("waiting for self-hosted %s on %s (%s)", component_names[c],
                                                sorted[i]->node, reason))
                                   ?: 1;
                }
        return 0;
}

/* This master's turn while its bootstrap pods run: out of the API's names (with more than one master: the
 * others serve meanwhile), the clients' caches drained, then its self-hosted apiserver started; once that is
 * Ready (decide_self_hosted), the bootstrap manifests go. */
static int decide_own_start(const PivotObservation *obs, const PivotMaster *const *sorted, size_t self,
                            PivotDecision *ret) {
        const PivotMaster *me = sorted[self];
        if (me->apiserver_started) {
                int r = decide_self_hosted(obs, sorted, false, ret);
                if (r != 0)
                        return r < 0 ? r : 0;
                return decide(ret, PIVOT_REMOVE_BOOTSTRAP, me->node, PIVOT_APISERVER,
                              strprintf("%s: every self-hosted pod is Ready and the API serves: "
                                        "removing its bootstrap manifests",
                                        me->node));
        }
        /* out of the names, the others carry every client: each of them must serve (a master still
         * starting its bootstrap apiserver at the cold start would leave the clients fewer) */
        for (size_t i = 0; !me->names_out && i < obs->n_masters; i++)
                if (i != self && !sorted[i]->bootstrap_ready[PIVOT_APISERVER] &&
                    !sorted[i]->self_hosted_ready[PIVOT_APISERVER])
                        return decide(
                            ret, PIVOT_WAIT_TURN, sorted[i]->node, PIVOT_APISERVER,
                            strprintf("%s: waiting for the kube-apiserver on %s to be Ready before "
                                      "leaving the API's names to it",
                                      me->node, sorted[i]->node));
        if (obs->n_masters > 1 && !me->names_out)
                return decide(ret, PIVOT_LEAVE_API_NAMES, me->node, PIVOT_APISERVER,
                              strprintf("%s: its turn: leaving the API's names before its self-hosted "
                                        "kube-apiserver binds the port",
                                        me->node));
        if (obs->n_masters > 1) {
                usec_t gone = obs->names_gone_at;
                if (!gone && obs->names_listed < 0 && obs->names_left_at)
                        gone = obs->names_left_at + PIVOT_NAMES_SETTLE;
                if (obs->names_listed > 0 || !gone || obs->now < gone + obs->names_ttl)
                        return decide(
                            ret, PIVOT_WAIT_API_NAMES, me->node, PIVOT_APISERVER,
                            obs->names_listed > 0 || !gone
                                ? strprintf("%s: waiting for the API's names to leave it out", me->node)
                                : strprintf("%s: out of the API's names: waiting %llu s of the "
                                            "names' TTL for clients' caches",
                                            me->node,
                                            (unsigned long long)((gone + obs->names_ttl - obs->now) /
                                                                 USEC_PER_SEC)));
        }
        return decide(ret, PIVOT_START_SELF_HOSTED, me->node, PIVOT_APISERVER,
                      strprintf("%s: %s: starting its self-hosted kube-apiserver", me->node,
                                obs->n_masters > 1 ? "no client is sent to it" : "the only master"));
}

/* A master whose turn is not over: it has bootstrap pods (mirrors, or manifests on this master's disk), it
 * has not started its self-hosted apiserver, or it is still out of the API's names. */
static bool turn_open(const PivotObservation *obs, const PivotMaster *m, bool mine) {
        return any(m->bootstrap_mirror) || (mine && any(obs->local_bootstrap)) || !m->apiserver_started ||
               m->names_out;
}

/* Whose turn it is: the first master by name whose turn is not over. */
static int decide_turn(const PivotObservation *obs, const PivotMaster *const *sorted, size_t self,
                       PivotDecision *ret) {
        const PivotMaster *me = sorted[self];
        for (size_t i = 0; i < obs->n_masters; i++) {
                bool mine = i == self;
                if (!turn_open(obs, sorted[i], mine))
                        continue;
                if (!mine)
                        return decide(ret, PIVOT_WAIT_TURN, sorted[i]->node, PIVOT_APISERVER,
                                      strprintf("waiting for %s to take its turn first (self-hosted "
                                                "kube-apiserver, bootstrap pods retired, back in the "
                                                "API's names)",
                                                sorted[i]->node));
                if (any(obs->local_bootstrap) || !me->apiserver_started)
                        return decide_own_start(obs, sorted, self, ret);
                if (any(me->bootstrap_mirror))
                        return decide(ret, PIVOT_WAIT_MIRRORS_GONE, me->node, PIVOT_APISERVER,
                                      strprintf("%s: waiting for kubelet to delete the mirror pods of its "
                                                "removed bootstrap pods",
                                                me->node));
                return decide(ret, PIVOT_REJOIN_API_NAMES, me->node, PIVOT_APISERVER,
                              strprintf("%s: its self-hosted kube-apiserver serves alone: back into the "
                                        "API's names",
                                        me->node));
        }
        int r = decide_self_hosted(obs, sorted, false, ret);
        if (r != 0)
                return r < 0 ? r : 0;
        if (obs->complete)
                return decide(ret, PIVOT_DONE, NULL, PIVOT_APISERVER,
                              strdup("the control plane is self-hosted"));
        return decide(ret, PIVOT_MARK_COMPLETE, NULL, PIVOT_APISERVER,
                      strdup("every master runs its self-hosted pods and no bootstrap pod is left"));
}

int pivot_decide(const PivotObservation *obs, PivotDecision *ret) {
        const PivotMaster *sorted[PIVOT_MASTERS_MAX];
        size_t self;
        int r;

        r = sort_masters(obs, sorted, &self);
        if (r < 0)
                return r;
        /* Once complete, the cluster owns its control plane: no rollback to the bootstrap pods (an upgrade
         * made through the API would be undone), and a reboot is the checkpoint's business. The certificates
         * stay protokube's: a renewal reaches the Secrets, and the workloads roll to read it. */
        if (obs->complete && !any(obs->local_bootstrap)) {
                if (obs->api_ready && obs->certificates_stale > 0)
                        return decide(ret, PIVOT_RENEW_CERTIFICATES, NULL, PIVOT_APISERVER,
                                      strprintf("%zu Secret(s) or workload(s) hold other certificates than "
                                                "this master's: applying the renewed ones",
                                                obs->certificates_stale));
                return decide(ret, PIVOT_DONE, NULL, PIVOT_APISERVER,
                              strdup("the control plane is self-hosted"));
        }
        if (obs->removed_at != 0) {
                r = decide_after_removal(obs, sorted[self], ret);
                if (r != 0)
                        return r < 0 ? r : 0;
        }
        if (!obs->api_ready)
                return decide(ret, PIVOT_WAIT_API, NULL, PIVOT_APISERVER,
                              strdup("waiting for the API to answer /readyz through api.internal"));
        if (!obs->complete && obs->assets_stale > 0)
                return decide(
                    ret, PIVOT_APPLY_ASSETS, NULL, PIVOT_APISERVER,
                    strprintf("%zu self-hosted asset(s) absent or different from the rendered ones "
                              "(first: %s)",
                              obs->assets_stale, strna(obs->stale_asset)));
        /* A master that has not labelled its Node yet is not listed: nobody retires anything before every
         * master takes part, or the one-at-a-time order would skip it. */
        if (obs->masters_expected > obs->n_masters)
                return decide(ret, PIVOT_WAIT_TURN, NULL, PIVOT_APISERVER,
                              strprintf("waiting for every master to register: %zu of %zu Nodes carry the "
                                        "master label",
                                        obs->n_masters, obs->masters_expected));
        r = decide_self_hosted(obs, sorted, true, ret);
        if (r != 0)
                return r < 0 ? r : 0;
        return decide_turn(obs, sorted, self, ret);
}
