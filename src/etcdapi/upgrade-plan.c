/* SPDX-License-Identifier: Apache-2.0 */
#include "etcdapi/upgrade-plan.h"

#include "basic/semver.h"
#include "basic/string-util.h"

const char *upgrade_decision_to_string(UpgradeDecision d) {
        static const char *const names[_UPGRADE_DECISION_MAX] = {
                [UPGRADE_NONE] = "none", [UPGRADE_BACKUP] = "backup", [UPGRADE_MEMBER] = "upgrade-member",
                [UPGRADE_WAIT] = "wait", [UPGRADE_REFUSE] = "refuse", [UPGRADE_RESTORE] = "restore",
        };
        return d >= 0 && d < _UPGRADE_DECISION_MAX ? names[d] : "?";
}

const char *upgrade_wait_to_string(UpgradeWait w) {
        static const char *const names[_UPGRADE_WAIT_MAX] = {
                [UPGRADE_WAIT_NOTHING] = "nothing",
                [UPGRADE_WAIT_RESTORE] = "restore",
                [UPGRADE_WAIT_REPLACEMENT] = "replacement",
                [UPGRADE_WAIT_MEMBER_COUNT] = "member-count",
                [UPGRADE_WAIT_NO_LEADER] = "no-leader",
                [UPGRADE_WAIT_UNHEALTHY] = "unhealthy-member",
                [UPGRADE_WAIT_UPGRADED_UNHEALTHY] = "upgraded-member-unhealthy",
                [UPGRADE_WAIT_CATCH_UP] = "upgraded-member-catching-up",
                [UPGRADE_WAIT_LOCK] = "lock",
                [UPGRADE_WAIT_TURN] = "turn",
                [UPGRADE_WAIT_CLUSTER_VERSION] = "cluster-version",
                [UPGRADE_WAIT_CLUSTER_VERSION_UNKNOWN] = "cluster-version-unknown",
        };
        return w >= 0 && w < _UPGRADE_WAIT_MAX ? names[w] : "?";
}

const char *upgrade_refusal_to_string(UpgradeRefusal r) {
        static const char *const names[_UPGRADE_REFUSAL_MAX] = {
                [UPGRADE_REFUSE_NOTHING] = "nothing",
                [UPGRADE_REFUSE_UNKNOWN_VERSION] = "unknown-version",
                [UPGRADE_REFUSE_UNKNOWN_RUNNING] = "unknown-running-version",
                [UPGRADE_REFUSE_DOWNGRADE] = "downgrade",
                [UPGRADE_REFUSE_NO_BACKUP] = "no-backup",
                [UPGRADE_REFUSE_JUMP] = "jump",
        };
        return r >= 0 && r < _UPGRADE_REFUSAL_MAX ? names[r] : "?";
}

static void wait_for(UpgradePlan *p, UpgradeWait w, const char *subject, const char *reason) {
        *p = (UpgradePlan){ .decision = UPGRADE_WAIT, .wait = w, .subject = subject, .reason = reason };
}

static void refuse(UpgradePlan *p, UpgradeRefusal r, const char *subject, const char *reason) {
        *p = (UpgradePlan){ .decision = UPGRADE_REFUSE, .refusal = r, .subject = subject, .reason = reason };
}

/* What the plan works on: the versions parsed, and where each member stands. */
typedef struct Survey {
        Semver wanted, low, high; /* low/high: the minors that run, the cluster version among them */
        bool cluster_known;
        Semver cluster;
        const UpgradeMember *leader;
} Survey;

static bool is_known(const UpgradePlanInput *in, const char *version) {
        for (const char *const *k = in->known; k && *k; k++)
                if (streq(*k, version))
                        return true;
        return false;
}

static bool is_known_minor(const UpgradePlanInput *in, const Semver *v) {
        for (const char *const *k = in->known; k && *k; k++) {
                Semver s;
                if (semver_parse(*k, 0, &s) >= 0 && semver_same_minor(&s, v))
                        return true;
        }
        return false;
}

/* A member runs the wanted version when it runs the wanted minor at the wanted patch or a later one: etcd's
 * patch releases of a minor are interchangeable (the cluster version is MAJOR.MINOR.0), and a binary may
 * report a later patch than its image's tag (the test images carry Debian's 3.4.23 as 3.4.13-0). */
static bool at_wanted(const Survey *s, const UpgradeMember *m) {
        Semver v;
        return m->version && semver_parse(m->version, 0, &v) >= 0 && semver_same_minor(&v, &s->wanted) &&
               v.patch >= s->wanted.patch;
}

static void widen(Survey *s, const Semver *v, bool *first) {
        if (*first || semver_compare(v, &s->low) < 0)
                s->low = *v;
        if (*first || semver_compare(v, &s->high) > 0)
                s->high = *v;
        *first = false;
}

/* Parses what runs; a refusal when something runs that protokube does not know. */
static bool survey(const UpgradePlanInput *in, Survey *s, UpgradePlan *p) {
        bool first = true;
        s->wanted = (Semver){};
        if (!in->wanted || semver_parse(in->wanted, 0, &s->wanted) < 0 || !is_known(in, in->wanted)) {
                refuse(p, UPGRADE_REFUSE_UNKNOWN_VERSION, in->wanted,
                       "the wanted etcd version is not one protokube runs");
                return false;
        }
        s->cluster_known = in->cluster_version && semver_parse(in->cluster_version, 0, &s->cluster) >= 0;
        if (s->cluster_known)
                widen(s, &s->cluster, &first);
        s->leader = NULL;
        for (size_t i = 0; i < in->n_members; i++) {
                const UpgradeMember *m = &in->members[i];
                Semver v;
                if (m->is_leader && m->healthy)
                        s->leader = m;
                if (!m->version)
                        continue;
                if (semver_parse(m->version, 0, &v) < 0 || !is_known_minor(in, &v)) {
                        refuse(p, UPGRADE_REFUSE_UNKNOWN_RUNNING, m->name,
                               "a member runs an etcd version protokube does not run");
                        return false;
                }
                widen(s, &v, &first);
        }
        if (first) /* nothing answered and no cluster version: there is nothing to compare */
                s->low = s->high = s->wanted;
        return true;
}

/* More than one minor up or down, or another major: etcd supports neither in place, and the restore path
 * only goes back to the version the pre-upgrade backup was taken at. */
static bool is_jump(const Survey *s) {
        return s->low.major != s->wanted.major || s->high.major != s->wanted.major ||
               s->wanted.minor > s->low.minor + 1 || s->wanted.minor + 1 < s->high.minor;
}

/* Below the cluster version no member can run (etcd refuses to start: "cluster cannot be downgraded"): only
 * a restore of the backup taken before the upgrade goes back, and it loses every later write. */
static bool decide_downgrade(const UpgradePlanInput *in, const Survey *s, UpgradePlan *p) {
        if (!s->cluster_known) {
                if (s->high.minor > s->wanted.minor) {
                        wait_for(p, UPGRADE_WAIT_CLUSTER_VERSION_UNKNOWN, NULL,
                                 "a member runs a later minor and the cluster version is not known yet");
                        return true;
                }
                return false;
        }
        if (s->wanted.minor >= s->cluster.minor)
                return false;
        if (!in->allow_downgrade)
                refuse(p, UPGRADE_REFUSE_DOWNGRADE, in->cluster_version,
                       "a downgrade below the cluster version is refused unless asked for explicitly (it "
                       "restores the pre-upgrade backup: every later write is lost)");
        else if (!in->backup)
                refuse(p, UPGRADE_REFUSE_NO_BACKUP, NULL,
                       "a downgrade below the cluster version restores the pre-upgrade backup, and none is "
                       "recorded");
        else
                *p =
                    (UpgradePlan){ .decision = UPGRADE_RESTORE,
                                   .subject = in->backup,
                                   .backup = in->backup,
                                   .reason = "the explicit downgrade: restore the pre-upgrade backup at the "
                                             "wanted version (every write after it is lost)" };
        return true;
}

static const UpgradeMember *first_unlisted(const UpgradePlanInput *in) {
        for (size_t i = 0; i < in->n_members; i++)
                if (!in->members[i].listed)
                        return &in->members[i];
        return NULL;
}

static bool caught_up(const Survey *s, const UpgradeMember *m) {
        /* floor(leader * P / 100) without the product: raft indexes are 64-bit counters */
        uint64_t l = s->leader->raft_index;
        return m->raft_index >=
               l / 100 * UPGRADE_CAUGHT_UP_PERCENT + l % 100 * UPGRADE_CAUGHT_UP_PERCENT / 100;
}

/* A change starts or goes on only with a leader, every member healthy, and every member at the wanted
 * version caught up with the leader. */
static bool decide_health(const UpgradePlanInput *in, const Survey *s, UpgradePlan *p) {
        if (!s->leader) {
                wait_for(p, UPGRADE_WAIT_NO_LEADER, NULL, "the cluster has no leader");
                return true;
        }
        for (size_t i = 0; i < in->n_members; i++) {
                const UpgradeMember *m = &in->members[i];
                if (m->healthy)
                        continue;
                if (at_wanted(s, m))
                        wait_for(p, UPGRADE_WAIT_UPGRADED_UNHEALTHY, m->name,
                                 "a member at the wanted version is not healthy yet");
                else
                        wait_for(p, UPGRADE_WAIT_UNHEALTHY, m->name, "a member is not healthy");
                return true;
        }
        for (size_t i = 0; i < in->n_members; i++) {
                const UpgradeMember *m = &in->members[i];
                if (at_wanted(s, m) && !caught_up(s, m)) {
                        wait_for(p, UPGRADE_WAIT_CATCH_UP, m->name,
                                 "a member at the wanted version has not caught up with the leader");
                        return true;
                }
        }
        return false;
}

static const UpgradeMember *first_pending(const UpgradePlanInput *in, const Survey *s) {
        for (size_t i = 0; i < in->n_members; i++)
                if (!at_wanted(s, &in->members[i]))
                        return &in->members[i];
        return NULL;
}

/* Every member runs the wanted version: the change is over once etcd moved its cluster version. */
static void decide_done(const UpgradePlanInput *in, const Survey *s, UpgradePlan *p) {
        if (in->lock_ours && decide_health(in, s, p))
                return;
        if (s->cluster_known && s->cluster.minor < s->wanted.minor)
                wait_for(p, UPGRADE_WAIT_CLUSTER_VERSION, in->cluster_version,
                         "every member runs the wanted version; etcd has not moved the cluster version yet");
        else
                *p = (UpgradePlan){ .decision = UPGRADE_NONE,
                                    .reason = "every member runs the wanted version" };
        p->release_lock = in->lock_ours;
}

/* Some member still runs another version: this one changes when it is its turn. */
static void decide_turn(const UpgradePlanInput *in, const Survey *s, const UpgradeMember *pending,
                        UpgradePlan *p) {
        const UpgradeMember *self = &in->members[in->self];
        if (decide_health(in, s, p))
                return;
        if (at_wanted(s, self)) {
                *p =
                    (UpgradePlan){ .decision = UPGRADE_NONE,
                                   .subject = pending->name,
                                   .release_lock = in->lock_ours,
                                   .reason = "this member runs the wanted version; another member is next" };
                return;
        }
        if (in->lock_holder)
                return wait_for(p, UPGRADE_WAIT_LOCK, in->lock_holder,
                                "another master holds the upgrade lock");
        if (pending != self)
                return wait_for(p, UPGRADE_WAIT_TURN, pending->name,
                                "a member before this one changes first");
        if (!in->backup) {
                *p = (UpgradePlan){ .decision = UPGRADE_BACKUP,
                                    .reason = "a backup is taken before the first member changes" };
                return;
        }
        *p = (UpgradePlan){ .decision = UPGRADE_MEMBER,
                            .subject = self->name,
                            .backup = in->backup,
                            .reason = "every member is healthy and it is this member's turn" };
}

void upgrade_plan_decide(const UpgradePlanInput *in, UpgradePlan *ret) {
        Survey s;
        if (!survey(in, &s, ret))
                return;
        if (in->restore_under_way)
                return wait_for(ret, UPGRADE_WAIT_RESTORE, NULL, "a restore is under way");
        if (in->replacement_under_way)
                return wait_for(ret, UPGRADE_WAIT_REPLACEMENT, NULL, "a member replacement is under way");
        if (is_jump(&s))
                return refuse(ret, UPGRADE_REFUSE_JUMP, in->wanted,
                              "etcd changes one minor version at a time, within its major");
        if (decide_downgrade(in, &s, ret))
                return;
        const UpgradeMember *unlisted = first_unlisted(in);
        if (in->n_members == 0 || in->self >= in->n_members || unlisted || in->n_listed != in->n_members)
                return wait_for(ret, UPGRADE_WAIT_MEMBER_COUNT, unlisted ? unlisted->name : NULL,
                                "the cluster does not list exactly the members the volume tags name");
        const UpgradeMember *pending = first_pending(in, &s);
        if (!pending)
                return decide_done(in, &s, ret);
        decide_turn(in, &s, pending, ret);
}
