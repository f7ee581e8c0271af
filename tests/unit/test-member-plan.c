/* SPDX-License-Identifier: Apache-2.0 */
/* The pure decision of a member's replacement: blank vs data, all blank, quorum arithmetic, the lock, and
 * each point a crashed pass can resume from. */
#include "unit-test.h"

#include <string.h>

#include "etcdapi/member-plan.h"

#define A "https://etcd-a.internal.x:2380"
#define B "https://etcd-b.internal.x:2380"
#define C "https://etcd-c.internal.x:2380"

static char *tagged[] = { (char *)A, (char *)B, (char *)C, NULL };
static char *url_a[] = { (char *)A, NULL }, *url_b[] = { (char *)B, NULL }, *url_c[] = { (char *)C, NULL };
static char *url_d[] = { (char *)"https://etcd-d.internal.x:2380", NULL };
static char *none[] = { NULL };
static char *client[] = { (char *)"https://10.0.0.1:4001", NULL }; /* published once a member ran */

static EtcdMember members3[] = {
        { .id = 1, .name = (char *)"etcd-a", .peer_urls = url_a, .client_urls = client },
        { .id = 2, .name = (char *)"etcd-b", .peer_urls = url_b, .client_urls = client },
        { .id = 3, .name = (char *)"etcd-c", .peer_urls = url_c, .client_urls = client },
};

static MemberPlanInput input(EtcdDataState data, const EtcdMemberList *l) {
        return (MemberPlanInput){
                .peer_url = B,
                .tagged_peer_urls = tagged,
                .data = data,
                .members = l,
                .n_others = 2,
                .n_others_healthy = 2,
        };
}

static MemberPlan decide(const MemberPlanInput *in) {
        MemberPlan p;
        memset(&p, 0xff, sizeof(p));
        member_plan_decide(in, &p);
        assert_non_null(p.reason);
        return p;
}

static void test_quorum(void **state) {
        assert_int_equal(member_quorum(1), 1);
        assert_int_equal(member_quorum(2), 2);
        assert_int_equal(member_quorum(3), 2);
        assert_int_equal(member_quorum(4), 3);
        assert_int_equal(member_quorum(5), 3);
}

static void test_blank_replaces(void **state) {
        EtcdMemberList l = { .items = members3, .n = 3 };
        MemberPlanInput in = input(ETCD_DATA_BLANK, &l);
        MemberPlan p = decide(&in);
        assert_int_equal(p.decision, MEMBER_REPLACE);
        assert_int_equal(p.remove_id, 2);
        assert_true(p.existing);
}

static void test_data_never_replaced(void **state) {
        EtcdMemberList l = { .items = members3, .n = 3 };
        MemberPlanInput in = input(ETCD_DATA_PRESENT, &l);
        MemberPlan p = decide(&in);
        assert_int_equal(p.decision, MEMBER_KEEP);
        assert_false(p.existing);
        /* not even when the others are all unhealthy or the member is missing */
        in.n_others_healthy = 0;
        in.members = NULL;
        in.cluster_error = -ECONNREFUSED;
        assert_int_equal(decide(&in).decision, MEMBER_KEEP);
}

static void test_all_blank_is_new(void **state) {
        MemberPlanInput in = input(ETCD_DATA_BLANK, NULL);
        in.cluster_error = -ECONNREFUSED;
        in.n_others_healthy = 0;
        MemberPlan p = decide(&in);
        assert_int_equal(p.decision, MEMBER_NEW);
        assert_false(p.existing);
        /* the others formed the cluster and list b as a voter that never started: new too. It has its name
         * (from initial-cluster), not its client URLs (found by the 3-master simulation) */
        EtcdMember unstarted[3];
        memcpy(unstarted, members3, sizeof(unstarted));
        unstarted[1].client_urls = none;
        EtcdMemberList l = { .items = unstarted, .n = 3 };
        in = input(ETCD_DATA_BLANK, &l);
        assert_int_equal(decide(&in).decision, MEMBER_NEW);
}

static void test_no_quorum_holds(void **state) {
        EtcdMemberList l = { .items = members3, .n = 3 };
        MemberPlanInput in = input(ETCD_DATA_BLANK, &l);
        in.n_others_healthy = 1; /* c stopped */
        MemberPlan p = decide(&in);
        assert_int_equal(p.decision, MEMBER_HOLD);
        assert_non_null(strstr(p.reason, "healthy"));
        /* a 2-member cluster: after b's removal a alone is a majority of one */
        EtcdMemberList two = { .items = members3, .n = 2 };
        in = input(ETCD_DATA_BLANK, &two);
        in.n_others = in.n_others_healthy = 1;
        assert_int_equal(decide(&in).decision, MEMBER_REPLACE);
        /* a single-member cluster has nobody to keep quorum */
        EtcdMemberList one = { .items = &members3[1], .n = 1 };
        in = input(ETCD_DATA_BLANK, &one);
        in.n_others = in.n_others_healthy = 0;
        assert_int_equal(decide(&in).decision, MEMBER_HOLD);
}

static void test_lock_held(void **state) {
        EtcdMemberList l = { .items = members3, .n = 3 };
        MemberPlanInput in = input(ETCD_DATA_BLANK, &l);
        in.lock_holder = "n3";
        MemberPlan p = decide(&in);
        assert_int_equal(p.decision, MEMBER_HOLD);
        assert_non_null(strstr(p.reason, "lock"));
}

static void test_other_change_in_flight(void **state) {
        EtcdMember m[3];
        memcpy(m, members3, sizeof(m));
        m[2].is_learner = true; /* c is being replaced by its master */
        EtcdMemberList l = { .items = m, .n = 3 };
        MemberPlanInput in = input(ETCD_DATA_BLANK, &l);
        assert_int_equal(decide(&in).decision, MEMBER_HOLD);
        /* a member no tag names */
        memcpy(m, members3, sizeof(m));
        m[2].peer_urls = url_d;
        in = input(ETCD_DATA_BLANK, &l);
        assert_int_equal(decide(&in).decision, MEMBER_HOLD);
}

static void test_resume(void **state) {
        /* crashed after the removal: b is not listed, add it */
        EtcdMember m[3];
        memcpy(m, members3, sizeof(m));
        EtcdMemberList without_b = { .items = (EtcdMember[]){ m[0], m[2] }, .n = 2 };
        MemberPlanInput in = input(ETCD_DATA_BLANK, &without_b);
        in.change_pending = true;
        MemberPlan p = decide(&in);
        assert_int_equal(p.decision, MEMBER_REPLACE);
        assert_int_equal(p.remove_id, 0);
        /* crashed after the add: b is an unstarted learner, start it */
        m[1].name = (char *)"";
        m[1].client_urls = none;
        m[1].is_learner = true;
        m[1].id = 22;
        EtcdMemberList added = { .items = m, .n = 3 };
        in = input(ETCD_DATA_BLANK, &added);
        in.change_pending = true;
        p = decide(&in);
        assert_int_equal(p.decision, MEMBER_JOIN);
        assert_true(p.existing);
        /* the learner runs (it has data): promote it */
        m[1].name = (char *)"etcd-b";
        m[1].client_urls = client;
        in = input(ETCD_DATA_PRESENT, &added);
        in.change_pending = true;
        p = decide(&in);
        assert_int_equal(p.decision, MEMBER_PROMOTE);
        assert_int_equal(p.promote_id, 22);
        assert_true(p.existing);
        /* bounded */
        in.promote_attempts = MEMBER_PROMOTE_ATTEMPTS_MAX;
        assert_int_equal(decide(&in).decision, MEMBER_HOLD);
        /* promoted: done */
        m[1].is_learner = false;
        in = input(ETCD_DATA_PRESENT, &added);
        in.change_pending = true;
        assert_int_equal(decide(&in).decision, MEMBER_DONE);
        /* a change under way while nobody answers: not a new cluster */
        in = input(ETCD_DATA_BLANK, NULL);
        in.change_pending = true;
        in.cluster_error = -ECONNREFUSED;
        assert_int_equal(decide(&in).decision, MEMBER_HOLD);
}

static void test_not_mounted(void **state) {
        MemberPlanInput in = input(ETCD_DATA_UNKNOWN, NULL);
        assert_int_equal(decide(&in).decision, MEMBER_HOLD);
}

/* A data directory that cannot be read (EIO, ELOOP) is not blank: the member is held even where a blank
 * one would be replaced (the others answer) or would start a new cluster (nobody answers). */
static void test_unreadable_holds(void **state) {
        EtcdMemberList l = { .items = members3, .n = 3 };
        MemberPlanInput in = input(ETCD_DATA_UNREADABLE, &l);
        MemberPlan p = decide(&in);
        assert_int_equal(p.decision, MEMBER_HOLD);
        assert_non_null(strstr(p.reason, "cannot be read"));
        in = input(ETCD_DATA_UNREADABLE, NULL);
        in.cluster_error = -ECONNREFUSED;
        assert_int_equal(decide(&in).decision, MEMBER_HOLD);
        in.change_pending = true;
        assert_int_equal(decide(&in).decision, MEMBER_HOLD);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_quorum),
                cmocka_unit_test(test_blank_replaces),
                cmocka_unit_test(test_data_never_replaced),
                cmocka_unit_test(test_all_blank_is_new),
                cmocka_unit_test(test_no_quorum_holds),
                cmocka_unit_test(test_lock_held),
                cmocka_unit_test(test_other_change_in_flight),
                cmocka_unit_test(test_resume),
                cmocka_unit_test(test_not_mounted),
                cmocka_unit_test(test_unreadable_holds),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
