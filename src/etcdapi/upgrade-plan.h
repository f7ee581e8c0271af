/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The pure decision of an etcd version change for one member this node holds (docs/etcd-versions.md):
 * nothing, a backup first, change this member now, wait (naming for what), refuse (naming why), or the
 * explicit downgrade through a restore of the pre-upgrade backup. No I/O: the pass observes (each member's
 * status and /version, the lock, its records), this decides, the pass applies.
 *
 * One member changes at a time: the members change in their given order (the volume tags'), each only
 * once every member before it runs the wanted version, every member is healthy, the changed ones have caught
 * up and the cluster has a leader; the pass takes the upgrade lock before it writes a manifest and releases
 * it when this decision says so. Every decision follows from what runs, so a master that restarts mid-way
 * decides the same step again. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/macro.h"

typedef struct UpgradeMember {
        const char *name;    /* "etcd-b": what the reasons name */
        bool listed;         /* the cluster's member list names it as a voter */
        const char *version; /* the version it runs (its status or GET /version); NULL: it did not answer */
        bool healthy;        /* its status answered, without errors, naming a leader */
        bool is_leader;
        uint64_t raft_index;
} UpgradeMember;

typedef struct UpgradePlanInput {
        const char *wanted;       /* the spec's version: "3.5.16" */
        const char *const *known; /* the versions protokube runs (model/etcd-versions.h), NULL-terminated */
        const UpgradeMember *members; /* every member the volume tags name, in tag order */
        size_t n_members;             /* the tags' count */
        size_t n_listed;              /* the voters the cluster lists, tagged or not */
        size_t self;                  /* the member this node holds, an index into members */
        const char *cluster_version;  /* GET /version's etcdcluster ("3.4.0"); NULL: not known */
        bool restore_under_way;       /* a whole cluster's restore (docs/etcd-restore.md) */
        bool replacement_under_way;   /* a member's replacement (docs/etcd-members.md) */
        const char *lock_holder;      /* the upgrade lock's holder when another master holds it, else NULL */
        bool lock_ours;               /* this node holds the upgrade lock */
        const char *backup;           /* the pre-upgrade backup recorded for this change; NULL: none yet */
        bool allow_downgrade;         /* a downgrade below the cluster version was asked for explicitly */
} UpgradePlanInput;

typedef enum UpgradeDecision {
        UPGRADE_NONE,    /* nothing to change for this member */
        UPGRADE_BACKUP,  /* take the pre-upgrade backup and record its name, then decide again */
        UPGRADE_MEMBER,  /* take the lock and write this member's manifest at the wanted version */
        UPGRADE_WAIT,    /* wait: .wait says for what, .subject names whom */
        UPGRADE_REFUSE,  /* refused: .refusal says why, .subject names what */
        UPGRADE_RESTORE, /* the explicit downgrade: restore .backup at the wanted version (later writes lost)
                          */
        _UPGRADE_DECISION_MAX,
        _UPGRADE_DECISION_INVALID = -EINVAL,
} UpgradeDecision;

typedef enum UpgradeWait {
        UPGRADE_WAIT_NOTHING,
        UPGRADE_WAIT_RESTORE,                 /* a restore is under way */
        UPGRADE_WAIT_REPLACEMENT,             /* a member replacement is under way */
        UPGRADE_WAIT_MEMBER_COUNT,            /* the cluster does not list exactly the tagged members */
        UPGRADE_WAIT_NO_LEADER,               /* no member names a leader */
        UPGRADE_WAIT_UNHEALTHY,               /* a member not changed yet is unhealthy or silent */
        UPGRADE_WAIT_UPGRADED_UNHEALTHY,      /* a member at the wanted version is not healthy (yet) */
        UPGRADE_WAIT_CATCH_UP,                /* a member at the wanted version is behind the leader */
        UPGRADE_WAIT_LOCK,                    /* another master holds the upgrade lock */
        UPGRADE_WAIT_TURN,                    /* a member before this one changes first */
        UPGRADE_WAIT_CLUSTER_VERSION,         /* every member runs the wanted version; etcd has not moved its
                                                 cluster version yet */
        UPGRADE_WAIT_CLUSTER_VERSION_UNKNOWN, /* whether this is a downgrade depends on it, and it is not
                                                 known */
        _UPGRADE_WAIT_MAX,
        _UPGRADE_WAIT_INVALID = -EINVAL,
} UpgradeWait;

typedef enum UpgradeRefusal {
        UPGRADE_REFUSE_NOTHING,
        UPGRADE_REFUSE_UNKNOWN_VERSION, /* the wanted version is not one protokube runs */
        UPGRADE_REFUSE_UNKNOWN_RUNNING, /* a member runs a minor protokube does not run */
        UPGRADE_REFUSE_DOWNGRADE,       /* below the cluster version, not asked for */
        UPGRADE_REFUSE_NO_BACKUP, /* the downgrade was asked for, and no pre-upgrade backup is recorded */
        UPGRADE_REFUSE_JUMP,      /* more than one minor, or another major */
        _UPGRADE_REFUSAL_MAX,
        _UPGRADE_REFUSAL_INVALID = -EINVAL,
} UpgradeRefusal;

typedef struct UpgradePlan {
        UpgradeDecision decision;
        UpgradeWait wait;
        UpgradeRefusal refusal;
        /* the member, lock holder, version or backup the decision names (points into the input), or NULL */
        const char *subject;
        const char *backup; /* RESTORE: the backup to restore */
        bool release_lock;  /* this node holds the lock and its member's change is complete */
        const char *reason; /* static text, for the report and `plan` */
} UpgradePlan;

/* A follower has caught up when its raft index is at least this share of the leader's: etcd's own rule for
 * a learner it will promote (server.go's readyPercent, 0.9). */
#define UPGRADE_CAUGHT_UP_PERCENT 90U

/* Decides; never fails. */
void upgrade_plan_decide(const UpgradePlanInput *in, UpgradePlan *ret);

const char *upgrade_decision_to_string(UpgradeDecision d);
const char *upgrade_wait_to_string(UpgradeWait w);
const char *upgrade_refusal_to_string(UpgradeRefusal r);
