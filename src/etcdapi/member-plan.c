/* SPDX-License-Identifier: Apache-2.0 */
#include "etcdapi/member-plan.h"

#include "basic/string-util.h"
#include "basic/strv.h"

size_t member_quorum(size_t n_voters) {
        return n_voters / 2 + 1;
}

const char *member_decision_to_string(MemberDecision d) {
        static const char *const names[_MEMBER_DECISION_MAX] = {
                [MEMBER_KEEP] = "keep", [MEMBER_NEW] = "new",         [MEMBER_REPLACE] = "replace",
                [MEMBER_JOIN] = "join", [MEMBER_PROMOTE] = "promote", [MEMBER_DONE] = "done",
                [MEMBER_HOLD] = "hold",
        };
        return d >= 0 && d < _MEMBER_DECISION_MAX ? names[d] : "?";
}

static void hold(MemberPlan *p, const char *reason) {
        *p = (MemberPlan){ .decision = MEMBER_HOLD, .reason = reason };
}

/* With data on the volume nothing is ever removed: a learner of ours is promoted, else the manifest stays.
 */
static void decide_with_data(const MemberPlanInput *in, const EtcdMember *self, MemberPlan *p) {
        if (!in->change_pending) {
                *p = (MemberPlan){ .decision = MEMBER_KEEP, .reason = "the volume holds etcd data" };
                return;
        }
        /* our replacement is under way: its manifest keeps state existing */
        if (in->cluster_error < 0)
                *p = (MemberPlan){ .decision = MEMBER_KEEP,
                                   .existing = true,
                                   .reason = "no other member answers; the learner is promoted later" };
        else if (self && self->is_learner && in->promote_attempts >= MEMBER_PROMOTE_ATTEMPTS_MAX)
                *p = (MemberPlan){ .decision = MEMBER_HOLD,
                                   .existing = true,
                                   .reason = "the learner did not catch up: gave up promoting it" };
        else if (self && self->is_learner)
                *p = (MemberPlan){ .decision = MEMBER_PROMOTE,
                                   .promote_id = self->id,
                                   .existing = true,
                                   .reason = "the learner runs: promote it once it caught up" };
        else if (self)
                *p = (MemberPlan){ .decision = MEMBER_DONE,
                                   .existing = true,
                                   .reason = "the replaced member votes again" };
        else
                *p = (MemberPlan){ .decision = MEMBER_KEEP,
                                   .existing = true,
                                   .reason = "this member is not listed: waiting for the cluster" };
}

/* Every member is tagged (no stranger in the list) and no other change is in flight (no other learner). */
static const char *membership_unsafe(const MemberPlanInput *in, const EtcdMember *self) {
        for (size_t i = 0; i < in->members->n; i++) {
                const EtcdMember *m = &in->members->items[i];
                if (m == self)
                        continue;
                if (m->is_learner)
                        return "another membership change is in flight (a learner is listed)";
                bool tagged = false;
                STRV_FOREACH (u, m->peer_urls)
                        tagged = tagged || strv_contains(in->tagged_peer_urls, *u);
                if (!tagged)
                        return "the cluster lists a member the volume tags do not name";
        }
        return NULL;
}

/* A member that ever started has published its client URLs (through raft, so they stay while it is down).
 * Its name is no sign: the members of a bootstrapped cluster carry their names from initial-cluster before
 * they ever run; only a member added through the API has none. */
static bool member_started(const EtcdMember *m) {
        return strv_length(m->client_urls) > 0;
}

void member_plan_decide(const MemberPlanInput *in, MemberPlan *ret) {
        const EtcdMember *self = NULL;
        if (in->cluster_error >= 0 && in->members)
                self = etcd_member_list_find_peer(in->members, in->peer_url);

        switch (in->data) {
        case ETCD_DATA_PRESENT:
                return decide_with_data(in, self, ret);
        case ETCD_DATA_BLANK:
                break;
        case ETCD_DATA_UNREADABLE:
                return hold(ret, "its data directory or marker cannot be read: held, never taken as blank");
        default:
                return hold(ret, "the volume is not mounted yet: its data decides");
        }

        if (in->cluster_error < 0 || !in->members) {
                if (in->change_pending)
                        return hold(ret, "a replacement is under way and no other member answers");
                /* Nobody runs: a new cluster (every member blank), or one that is starting. */
                *ret = (MemberPlan){ .decision = MEMBER_NEW,
                                     .reason = "no other member answers: a new cluster" };
                return;
        }
        if (self && !self->is_learner && !member_started(self) && !in->change_pending) {
                /* listed as a voter that never started: the others bootstrapped the cluster from the same
                 * initial-cluster and wait for this one */
                *ret = (MemberPlan){ .decision = MEMBER_NEW,
                                     .reason = "the cluster is bootstrapping and waits for this member" };
                return;
        }
        const char *unsafe = membership_unsafe(in, self);
        if (unsafe)
                return hold(ret, unsafe);
        if (self && self->is_learner && !member_started(self)) {
                /* added by us (or our crashed pass) and not started yet: no change, just start it */
                *ret = (MemberPlan){ .decision = MEMBER_JOIN,
                                     .existing = true,
                                     .reason = "the learner is added: start it with state existing" };
                return;
        }
        /* A change: the others must all answer, and be a majority of the voters after the removal. */
        size_t voters_after = 0;
        for (size_t i = 0; i < in->members->n; i++)
                if (!in->members->items[i].is_learner && &in->members->items[i] != self)
                        voters_after++;
        if (in->n_others_healthy < in->n_others)
                return hold(ret, "not every other member is healthy: no quorum-safe replacement");
        if (voters_after == 0 || in->n_others_healthy < member_quorum(voters_after))
                return hold(ret, "the other members are not a majority after the removal");
        if (in->lock_holder)
                return hold(ret, "another master holds the membership lock");
        *ret = (MemberPlan){
                .decision = MEMBER_REPLACE,
                .remove_id = self ? self->id : 0,
                .existing = true,
                .reason = self ? "the volume has no etcd data and the member ran before"
                               : "the volume has no etcd data and the member was removed",
        };
}
