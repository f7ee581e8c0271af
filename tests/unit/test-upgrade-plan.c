/* SPDX-License-Identifier: Apache-2.0 */
/* The pure decision of an etcd version change (etcdapi/upgrade-plan.h): every refusal, every wait, the
 * backup first, one member at a time in tag order, the end (the cluster version moved, the lock released),
 * the rolling back of a member while the cluster version has not moved, and the explicit downgrade through
 * the pre-upgrade backup. The running versions are what real etcd reported (Debian's 3.4.23 in the 3.4.13-0
 * image, trixie's 3.5.16; tests/vectors/etcd/README.md). */
#include "unit-test.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/string-util.h"
#include "basic/strv.h"
#include "etcdapi/etcd-client.h"
#include "etcdapi/upgrade-plan.h"
#include "etcdapi/upgrade-survey.h"
#include "model/etcd-versions.h"

static const char *const known[] = { "3.4.13", "3.5.16", NULL };

#define V34 "3.4.23"
#define V35 "3.5.16"

/* A healthy cluster of three on 3.4, b leading; this node holds b. */
static UpgradeMember m[3];

static UpgradePlanInput input(void) {
        static const char *const names[] = { "etcd-a", "etcd-b", "etcd-c" };
        for (size_t i = 0; i < 3; i++)
                m[i] = (UpgradeMember){ .name = names[i],
                                        .listed = true,
                                        .version = V34,
                                        .healthy = true,
                                        .is_leader = i == 1,
                                        .raft_index = 1000 };
        return (UpgradePlanInput){
                .wanted = "3.5.16",
                .known = known,
                .members = m,
                .n_members = 3,
                .n_listed = 3,
                .self = 1,
                .cluster_version = "3.4.0",
                .backup = "20261128T090000Z-1a2b3c4d",
        };
}

static UpgradePlan decide(const UpgradePlanInput *in) {
        UpgradePlan p;
        memset(&p, 0xff, sizeof(p));
        upgrade_plan_decide(in, &p);
        assert_non_null(p.reason);
        assert_string_not_equal(upgrade_decision_to_string(p.decision), "?");
        assert_string_not_equal(upgrade_wait_to_string(p.wait), "?");
        assert_string_not_equal(upgrade_refusal_to_string(p.refusal), "?");
        return p;
}

static void expect_wait(const UpgradePlanInput *in, UpgradeWait w, const char *subject) {
        UpgradePlan p = decide(in);
        if (p.decision != UPGRADE_WAIT || p.wait != w)
                fail_msg("wanted wait %s, got %s/%s (%s)", upgrade_wait_to_string(w),
                         upgrade_decision_to_string(p.decision), upgrade_wait_to_string(p.wait), p.reason);
        if (subject)
                assert_string_equal(p.subject, subject);
        else
                assert_null(p.subject);
        assert_int_equal(p.refusal, UPGRADE_REFUSE_NOTHING);
}

static void expect_refusal(const UpgradePlanInput *in, UpgradeRefusal r, const char *subject) {
        UpgradePlan p = decide(in);
        if (p.decision != UPGRADE_REFUSE || p.refusal != r)
                fail_msg("wanted refusal %s, got %s/%s (%s)", upgrade_refusal_to_string(r),
                         upgrade_decision_to_string(p.decision), upgrade_refusal_to_string(p.refusal),
                         p.reason);
        if (subject)
                assert_string_equal(p.subject, subject);
        else
                assert_null(p.subject);
        assert_int_equal(p.wait, UPGRADE_WAIT_NOTHING);
}

static UpgradeDecision decision(const UpgradePlanInput *in) {
        return decide(in).decision;
}

/* The happy path, as the masters see it pass by pass: backup, a, b, c, the cluster version, the end. */
static void test_rolling_upgrade(void **state) {
        UpgradePlanInput in = input();
        in.backup = NULL;
        in.self = 0;
        assert_int_equal(decision(&in), UPGRADE_BACKUP); /* a's master: a backup before anything changes */
        in.self = 1;
        expect_wait(&in, UPGRADE_WAIT_TURN, "etcd-a"); /* b waits for a, backup or not */
        in.backup = "20261128T090000Z-1a2b3c4d";
        in.self = 0;
        UpgradePlan p = decide(&in);
        assert_int_equal(p.decision, UPGRADE_MEMBER);
        assert_string_equal(p.subject, "etcd-a");
        assert_string_equal(p.backup, in.backup);
        assert_false(p.release_lock);

        /* a restarted on 3.5.16 and caught up: a's master releases the lock, b's goes */
        m[0].version = V35;
        in.lock_ours = true;
        p = decide(&in);
        assert_int_equal(p.decision, UPGRADE_NONE);
        assert_true(p.release_lock);
        assert_string_equal(p.subject, "etcd-b"); /* who is next */
        in.lock_ours = false;
        in.self = 1;
        assert_int_equal(decision(&in), UPGRADE_MEMBER);
        in.self = 2;
        expect_wait(&in, UPGRADE_WAIT_TURN, "etcd-b");

        /* b, the leader, restarted: c leads now */
        m[1].version = V35;
        m[1].is_leader = false;
        m[2].is_leader = true;
        assert_int_equal(decision(&in), UPGRADE_MEMBER);

        /* all on 3.5: etcd moves the cluster version a few seconds later */
        m[2].version = V35;
        expect_wait(&in, UPGRADE_WAIT_CLUSTER_VERSION, "3.4.0");
        in.lock_ours = true;
        p = decide(&in);
        assert_int_equal(p.wait, UPGRADE_WAIT_CLUSTER_VERSION);
        assert_true(p.release_lock);
        in.lock_ours = false;
        in.cluster_version = "3.5.0";
        p = decide(&in);
        assert_int_equal(p.decision, UPGRADE_NONE);
        assert_false(p.release_lock);
        /* nothing was asked: a cluster at the wanted version stays (a later patch counts as the version) */
        in = input();
        in.wanted = "3.4.13";
        assert_int_equal(decision(&in), UPGRADE_NONE);
        /* a patch release is rolled out the same way, one member at a time */
        static const char *const known_patch[] = { "3.5.16", "3.5.17", NULL };
        in = input();
        in.known = known_patch;
        for (size_t i = 0; i < 3; i++)
                m[i].version = V35;
        in.cluster_version = "3.5.0";
        in.wanted = "3.5.17";
        expect_wait(&in, UPGRADE_WAIT_TURN, "etcd-a");
        m[0].version = "3.5.17";
        assert_int_equal(decision(&in), UPGRADE_MEMBER);
}

/* A master that restarts in the middle decides the same step again: its member still runs 3.4 and it holds
 * the lock (the manifest may be written already, kubelet may not have restarted etcd yet). */
static void test_resume(void **state) {
        UpgradePlanInput in = input();
        in.self = 0;
        in.lock_ours = true;
        assert_int_equal(decision(&in), UPGRADE_MEMBER);
        /* the others see the lock and wait for it, whatever the order says */
        in.lock_ours = false;
        in.lock_holder = "n1";
        in.self = 1;
        expect_wait(&in, UPGRADE_WAIT_LOCK, "n1");
        in.self = 0;
        expect_wait(&in, UPGRADE_WAIT_LOCK, "n1");
}

static void test_refusals(void **state) {
        UpgradePlanInput in = input();
        in.wanted = "3.5.2";
        expect_refusal(&in, UPGRADE_REFUSE_UNKNOWN_VERSION, "3.5.2");
        in.wanted = "3.5";
        expect_refusal(&in, UPGRADE_REFUSE_UNKNOWN_VERSION, "3.5");
        in.wanted = NULL;
        expect_refusal(&in, UPGRADE_REFUSE_UNKNOWN_VERSION, NULL);

        /* a member runs a minor protokube does not run, or something that is no version */
        in = input();
        m[2].version = "3.6.0";
        expect_refusal(&in, UPGRADE_REFUSE_UNKNOWN_RUNNING, "etcd-c");
        m[2].version = "garbage";
        expect_refusal(&in, UPGRADE_REFUSE_UNKNOWN_RUNNING, "etcd-c");

        /* a jump: 3.3 to 3.5 (a 3.3 member in a table that knew 3.3), another major */
        static const char *const known33[] = { "3.3.27", "3.4.13", "3.5.16", NULL };
        in = input();
        in.known = known33;
        m[0].version = "3.3.27";
        in.cluster_version = "3.3.0";
        expect_refusal(&in, UPGRADE_REFUSE_JUMP, "3.5.16");
        static const char *const known4[] = { "3.5.16", "4.0.0", NULL };
        in = input();
        in.known = known4;
        for (size_t i = 0; i < 3; i++)
                m[i].version = V35;
        in.cluster_version = "3.5.0";
        in.wanted = "4.0.0";
        expect_refusal(&in, UPGRADE_REFUSE_JUMP, "4.0.0");
        /* down by two minors, even when asked for */
        in = input();
        in.known = known33;
        for (size_t i = 0; i < 3; i++)
                m[i].version = V35;
        in.cluster_version = "3.5.0";
        in.wanted = "3.3.27";
        in.allow_downgrade = true;
        expect_refusal(&in, UPGRADE_REFUSE_JUMP, "3.3.27");
}

/* Back to 3.4 once the cluster version is 3.5: refused unless asked for; asked for, the restore of the
 * pre-upgrade backup, which must be recorded. */
static void test_downgrade(void **state) {
        UpgradePlanInput in = input();
        for (size_t i = 0; i < 3; i++)
                m[i].version = V35;
        in.cluster_version = "3.5.0";
        in.wanted = "3.4.13";
        expect_refusal(&in, UPGRADE_REFUSE_DOWNGRADE, "3.5.0");
        in.allow_downgrade = true;
        UpgradePlan p = decide(&in);
        assert_int_equal(p.decision, UPGRADE_RESTORE);
        assert_string_equal(p.backup, "20261128T090000Z-1a2b3c4d");
        assert_non_null(strstr(p.reason, "lost"));
        /* whatever the members' health: the restore path takes the whole cluster */
        m[0].healthy = false;
        assert_int_equal(decision(&in), UPGRADE_RESTORE);
        in.backup = NULL;
        expect_refusal(&in, UPGRADE_REFUSE_NO_BACKUP, NULL);
        /* the restore under way: wait for it */
        in.backup = "20261128T090000Z-1a2b3c4d";
        in.restore_under_way = true;
        expect_wait(&in, UPGRADE_WAIT_RESTORE, NULL);
        /* the cluster version unknown while a member runs 3.5: no way to tell a downgrade */
        in = input();
        m[0].version = V35;
        in.cluster_version = NULL;
        in.wanted = "3.4.13";
        expect_wait(&in, UPGRADE_WAIT_CLUSTER_VERSION_UNKNOWN, NULL);
        in.cluster_version = "not a version";
        expect_wait(&in, UPGRADE_WAIT_CLUSTER_VERSION_UNKNOWN, NULL);
}

/* While the cluster version is still 3.4, a member on 3.5 goes back to 3.4 in place, one at a time (checked
 * with real etcd: 3.4.23 starts on the data dir 3.5.16 ran on; once the cluster version is 3.5 it exits with
 * "cluster cannot be downgraded"). No explicit ask is needed: nothing is lost. */
static void test_roll_back_in_place(void **state) {
        UpgradePlanInput in = input();
        in.wanted = "3.4.13";
        m[0].version = V35;
        in.self = 0;
        assert_int_equal(decision(&in), UPGRADE_MEMBER);
        in.self = 1;
        assert_int_equal(decision(&in), UPGRADE_NONE);
}

static void test_waits_for_the_cluster(void **state) {
        UpgradePlanInput in = input();
        in.replacement_under_way = true;
        expect_wait(&in, UPGRADE_WAIT_REPLACEMENT, NULL);
        in = input();
        in.restore_under_way = true;
        expect_wait(&in, UPGRADE_WAIT_RESTORE, NULL);

        /* a short member count: a tagged member is not listed, or the list has a stranger */
        in = input();
        m[2].listed = false;
        in.n_listed = 2;
        expect_wait(&in, UPGRADE_WAIT_MEMBER_COUNT, "etcd-c");
        in = input();
        in.n_listed = 4;
        expect_wait(&in, UPGRADE_WAIT_MEMBER_COUNT, NULL);
        in = input();
        in.n_members = 2; /* a tag missing: the cluster lists three */
        expect_wait(&in, UPGRADE_WAIT_MEMBER_COUNT, NULL);

        /* an unhealthy member, a silent one, no leader */
        in = input();
        m[2].healthy = false;
        expect_wait(&in, UPGRADE_WAIT_UNHEALTHY, "etcd-c");
        m[2].version = NULL;
        expect_wait(&in, UPGRADE_WAIT_UNHEALTHY, "etcd-c");
        in = input();
        for (size_t i = 0; i < 3; i++)
                m[i].healthy = false;
        expect_wait(&in, UPGRADE_WAIT_NO_LEADER, NULL);
        in = input();
        m[1].is_leader = false;
        expect_wait(&in, UPGRADE_WAIT_NO_LEADER, NULL);
        /* the backup waits as well: none is taken from an unhealthy cluster */
        in = input();
        in.backup = NULL;
        in.self = 0;
        m[2].healthy = false;
        expect_wait(&in, UPGRADE_WAIT_UNHEALTHY, "etcd-c");
}

/* The member just changed: not healthy yet, behind the leader; the next one waits, its own master keeps the
 * lock. */
static void test_waits_for_the_upgraded_member(void **state) {
        UpgradePlanInput in = input();
        m[0].version = V35;
        m[0].healthy = false;
        expect_wait(&in, UPGRADE_WAIT_UPGRADED_UNHEALTHY, "etcd-a");
        in.self = 0;
        in.lock_ours = true;
        UpgradePlan p = decide(&in);
        assert_int_equal(p.wait, UPGRADE_WAIT_UPGRADED_UNHEALTHY);
        assert_false(p.release_lock);
        /* silent: etcd not started yet on the new image */
        m[0].version = NULL;
        in.self = 1;
        in.lock_ours = false;
        expect_wait(&in, UPGRADE_WAIT_UNHEALTHY, "etcd-a");

        /* healthy but behind: 899 of the leader's 1000 is below etcd's 90 %, 900 is not */
        in = input();
        m[0].version = V35;
        m[0].raft_index = 899;
        expect_wait(&in, UPGRADE_WAIT_CATCH_UP, "etcd-a");
        m[0].raft_index = 900;
        assert_int_equal(decision(&in), UPGRADE_MEMBER);
        /* the rule holds at raft indexes near 2^64 */
        m[1].raft_index = UINT64_MAX;
        m[0].raft_index = UINT64_MAX / 10 * 9;
        expect_wait(&in, UPGRADE_WAIT_CATCH_UP, "etcd-a");
        m[0].raft_index = UINT64_MAX - 1;
        assert_int_equal(decision(&in), UPGRADE_MEMBER);
        /* the last member changed: the end waits for it too when its master holds the lock */
        in = input();
        for (size_t i = 0; i < 3; i++)
                m[i].version = V35;
        m[2].raft_index = 10;
        in.self = 2;
        in.lock_ours = true;
        expect_wait(&in, UPGRADE_WAIT_CATCH_UP, "etcd-c");
}

/* Run by tests/integration/test_etcd_upgrade.py against a real cluster in the middle of a rolling upgrade:
 * UPGRADE_LIVE_MEMBERS="etcd-a=http://127.0.0.2:4001,..." in tag order, UPGRADE_LIVE_WANTED, and optionally
 * UPGRADE_LIVE_BACKUP and UPGRADE_LIVE_ALLOW_DOWNGRADE=1. What the plan reads is read as the pass would read
 * it (the member list, each member's status, the cluster version from GET /version), and the decision for
 * each member is printed: "live-plan NAME DECISION WAIT REFUSAL SUBJECT". */
#define LIVE_MEMBERS_MAX 8

static void test_live(void **state) {
        const char *members = getenv("UPGRADE_LIVE_MEMBERS"), *wanted = getenv("UPGRADE_LIVE_WANTED");
        if (!members || !wanted) {
                print_message(
                    "not run here: tests/integration/test_etcd_upgrade.py runs it against real etcd\n");
                skip();
        }
        char **pairs = NULL, *names[LIVE_MEMBERS_MAX + 1] = {}, *urls[LIVE_MEMBERS_MAX + 1] = {};
        const char *allow = getenv("UPGRADE_LIVE_ALLOW_DOWNGRADE");
        assert_int_equal(strv_split(members, ",", &pairs), 0);
        size_t n = strv_length(pairs);
        assert_true(n > 0 && n <= LIVE_MEMBERS_MAX);
        for (size_t i = 0; i < n; i++) {
                char *eq = strchr(pairs[i], '=');
                assert_non_null(eq);
                *eq = 0;
                names[i] = pairs[i];
                urls[i] = eq + 1;
        }
        EtcdClient *c = NULL;
        EtcdClientConfig cfg = { .endpoints = urls, .timeout = 2 * USEC_PER_SEC };
        assert_int_equal(etcd_client_new(&cfg, &c), 0);
        UpgradeSurvey sv = {};
        assert_int_equal(upgrade_survey(c, names, (const char *const *)urls, n, &sv), 0);
        const UpgradeMember *ms = sv.members;
        print_message("live-versions cluster=%s listed=%zu\n", strna(sv.cluster_version), sv.n_listed);
        for (size_t self = 0; self < n; self++) {
                UpgradePlanInput in = {
                        .wanted = wanted,
                        .known = etcd_versions_list(),
                        .members = ms,
                        .n_members = n,
                        .n_listed = sv.n_listed,
                        .self = self,
                        .cluster_version = sv.cluster_version,
                        .backup = getenv("UPGRADE_LIVE_BACKUP"),
                        .allow_downgrade = allow && streq(allow, "1"),
                };
                UpgradePlan p;
                upgrade_plan_decide(&in, &p);
                print_message("live-plan %s %s %s %s %s version=%s healthy=%d leader=%d index=%" PRIu64 "\n",
                              names[self], upgrade_decision_to_string(p.decision),
                              upgrade_wait_to_string(p.wait), upgrade_refusal_to_string(p.refusal),
                              strna(p.subject), strna(ms[self].version), ms[self].healthy,
                              ms[self].is_leader, ms[self].raft_index);
        }
        upgrade_survey_done(&sv);
        etcd_client_free(c);
        strv_free(pairs);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rolling_upgrade),
                cmocka_unit_test(test_resume),
                cmocka_unit_test(test_refusals),
                cmocka_unit_test(test_downgrade),
                cmocka_unit_test(test_roll_back_in_place),
                cmocka_unit_test(test_waits_for_the_cluster),
                cmocka_unit_test(test_waits_for_the_upgraded_member),
                cmocka_unit_test(test_live),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
