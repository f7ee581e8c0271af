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
        [PIVOT_REMOVE_BOOTSTRAP] = "remove-bootstrap",
        [PIVOT_WAIT_LOCAL] = "wait-local",
        [PIVOT_RESTORE_BOOTSTRAP] = "restore-bootstrap",
        [PIVOT_WAIT_MIRRORS_GONE] = "wait-mirrors-gone",
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

/* Every master's self-hosted pods Ready, or the wait (or, past the deadline and before this master removed
 * anything, the failure). 1 with a decision, 0 when all are Ready. */
static int decide_self_hosted(const PivotObservation *obs, const PivotMaster *const *sorted,
                              PivotDecision *ret) {
        for (size_t i = 0; i < obs->n_masters; i++)
                for (PivotComponent c = 0; c < _PIVOT_COMPONENT_MAX; c++) {
                        if (sorted[i]->self_hosted_ready[c])
                                continue;
                        const char *reason = sorted[i]->self_hosted_reasons[c]
                                                 ?: c == PIVOT_APISERVER && sorted[i]->self_hosted_reason
                                                    ? sorted[i]->self_hosted_reason
                                                    : "not Ready";
                        usec_t waited = elapsed(obs->assets_applied_at, obs->now);
                        if (waited > ready_deadline(obs) && obs->removed_at == 0)
                                return decide(ret, PIVOT_FAILED, sorted[i]->node, c,
                                              strprintf("self-hosted %s on %s is not Ready %llu s after the "
                                                        "assets were applied (%s): the bootstrap pods stay",
                                                        component_names[c], sorted[i]->node,
                                                        (unsigned long long)(waited / USEC_PER_SEC), reason))
                                           ?: 1;
                        return decide(ret, PIVOT_WAIT_SELF_HOSTED, sorted[i]->node, c,
                                      strprintf("waiting for self-hosted %s on %s (%s)", component_names[c],
                                                sorted[i]->node, reason))
                                   ?: 1;
                }
        return 0;
}

/* Whose turn it is to retire its bootstrap pods: the first master by name that still has them. */
static int decide_turn(const PivotObservation *obs, const PivotMaster *const *sorted, size_t self,
                       PivotDecision *ret) {
        const PivotMaster *me = sorted[self];
        for (size_t i = 0; i < obs->n_masters; i++) {
                bool mine = i == self;
                if (!any(sorted[i]->bootstrap_mirror) && !(mine && any(obs->local_bootstrap)))
                        continue;
                if (!mine)
                        return decide(
                            ret, PIVOT_WAIT_TURN, sorted[i]->node, PIVOT_APISERVER,
                            strprintf("waiting for %s to retire its bootstrap pods first", sorted[i]->node));
                if (any(obs->local_bootstrap))
                        return decide(ret, PIVOT_REMOVE_BOOTSTRAP, me->node, PIVOT_APISERVER,
                                      strprintf("%s: every self-hosted pod is Ready and the API serves: "
                                                "removing its bootstrap manifests",
                                                me->node));
                return decide(ret, PIVOT_WAIT_MIRRORS_GONE, me->node, PIVOT_APISERVER,
                              strprintf("%s: waiting for kubelet to delete the mirror pods of its removed "
                                        "bootstrap pods",
                                        me->node));
        }
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
                    strprintf("%zu self-hosted asset(s) absent or different from the rendered ones",
                              obs->assets_stale));
        /* A master that has not labelled its Node yet is not listed: nobody retires anything before every
         * master takes part, or the one-at-a-time order would skip it. */
        if (obs->masters_expected > obs->n_masters)
                return decide(ret, PIVOT_WAIT_TURN, NULL, PIVOT_APISERVER,
                              strprintf("waiting for every master to register: %zu of %zu Nodes carry the "
                                        "master label",
                                        obs->n_masters, obs->masters_expected));
        r = decide_self_hosted(obs, sorted, ret);
        if (r != 0)
                return r < 0 ? r : 0;
        return decide_turn(obs, sorted, self, ret);
}
