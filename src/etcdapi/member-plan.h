/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The pure decision for one etcd member this node holds (docs/etcd-members.md): keep its manifest as it is,
 * start it as a member of a new cluster, replace it (a volume without data while the others run), promote
 * its learner, or hold its manifest back with the reason. No I/O: the pass observes, this decides, the pass
 * applies. */

#include <stdbool.h>
#include <stddef.h>

#include "etcdapi/etcd-json.h"

typedef enum EtcdDataState {
        ETCD_DATA_UNKNOWN, /* the volume is not mounted (yet): decided after the mount */
        ETCD_DATA_BLANK,   /* no member/ directory in the data dir (a freshly formatted disk counts) */
        ETCD_DATA_PRESENT,
        /* the data dir, our replacement marker or a restore record could not be read (EIO of a failing
         * volume, ELOOP, ENOTDIR): only "absent" is blank, so the member is held, never replaced */
        ETCD_DATA_UNREADABLE,
        _ETCD_DATA_STATE_MAX,
        _ETCD_DATA_STATE_INVALID = -EINVAL,
} EtcdDataState;

typedef struct MemberPlanInput {
        const char *peer_url;          /* this member's: "https://etcd-b.internal.example.com:2380" */
        char *const *tagged_peer_urls; /* every member's of the volume tags, this one's included */
        EtcdDataState data;
        bool change_pending;       /* our marker on the volume: a replacement of this member is under way */
        unsigned promote_attempts; /* from the marker */
        int cluster_error;         /* 0: members answered; < 0: no other member answered the member list */
        const EtcdMemberList *members; /* when cluster_error == 0 */
        size_t n_others;               /* the other tagged members */
        size_t n_others_healthy;       /* of them, those whose status answered with a leader */
        const char *lock_holder; /* the membership lock's holder when another node holds it, else NULL */
} MemberPlanInput;

typedef enum MemberDecision {
        MEMBER_KEEP,    /* nothing to change: the manifest as planned */
        MEMBER_NEW,     /* a new cluster (every member blank): initial-cluster-state=new, as always */
        MEMBER_REPLACE, /* remove (remove_id, when listed), add a learner, write with state existing */
        MEMBER_JOIN,    /* the learner is added and has not started: write with state existing */
        MEMBER_PROMOTE, /* the learner runs: promote it (etcd refuses until it caught up: next pass) */
        MEMBER_DONE,    /* the replacement is complete (a voter again): clear the marker */
        MEMBER_HOLD,    /* the manifest is held back: reason */
        _MEMBER_DECISION_MAX,
        _MEMBER_DECISION_INVALID = -EINVAL,
} MemberDecision;

/* passes; a learner that has not caught up by then needs a human */
#define MEMBER_PROMOTE_ATTEMPTS_MAX 360U

typedef struct MemberPlan {
        MemberDecision decision;
        uint64_t remove_id;  /* REPLACE: the old member to remove first, 0: not listed any more */
        uint64_t promote_id; /* PROMOTE */
        bool existing;       /* the manifest says initial-cluster-state=existing */
        const char *reason;  /* static text, for the report and `plan` */
} MemberPlan;

/* Strict majority of n voters. */
size_t member_quorum(size_t n_voters);

/* Decides; never fails. */
void member_plan_decide(const MemberPlanInput *in, MemberPlan *ret);

const char *member_decision_to_string(MemberDecision d);
