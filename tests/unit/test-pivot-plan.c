/* SPDX-License-Identifier: Apache-2.0 */
/* The pivot's pure decision: each step from an observation, the deadlines, and a whole pivot of three
 * masters played out step by step, checking that at most one master is without its bootstrap pods while
 * the others have not finished. */
#include "unit-test.h"

#include <string.h>

#include "basic/macro.h"
#include "pivot/pivot-plan.h"

#define S(n) ((usec_t)(n)*USEC_PER_SEC)

static PivotMaster ready_master(const char *node, bool bootstrap) {
        PivotMaster m = { .node = node, .apiserver_started = true };
        for (size_t c = 0; c < _PIVOT_COMPONENT_MAX; c++) {
                m.bootstrap_mirror[c] = m.bootstrap_ready[c] = bootstrap;
                m.self_hosted_ready[c] = true;
        }
        return m;
}

/* Three masters, c b a (unsorted on purpose), all self-hosted pods started and Ready, all bootstrap pods
 * still there. */
typedef struct World {
        PivotMaster m[3];
        PivotObservation obs;
} World;

static void world_init(World *w, const char *self) {
        w->m[0] = ready_master("c", true);
        w->m[1] = ready_master("b", true);
        w->m[2] = ready_master("a", true);
        w->obs = (PivotObservation){ .self = self,
                                     .api_ready = true,
                                     .local_api_ready = true,
                                     .masters = w->m,
                                     .n_masters = 3,
                                     .local_bootstrap = { true, true, true },
                                     .assets_applied_at = S(1000),
                                     .now = S(1010) };
}

static PivotStep step_of(const PivotObservation *obs, const char **ret_node, char **ret_why) {
        PivotDecision d;
        assert_int_equal(pivot_decide(obs, &d), 0);
        assert_non_null(d.why);
        PivotStep s = d.step;
        if (ret_node)
                *ret_node = d.node;
        if (ret_why)
                *ret_why = strdup(d.why);
        pivot_decision_done(&d);
        return s;
}

static void test_waits_for_api_then_applies(void **state) {
        World w;
        world_init(&w, "a");
        w.obs.api_ready = false;
        assert_int_equal(step_of(&w.obs, NULL, NULL), PIVOT_WAIT_API);
        w.obs.api_ready = true;
        w.obs.assets_stale = 4;
        w.obs.stale_asset = "ClusterRoleBinding x (no digest)";
        _cleanup_free_ char *why = NULL;
        assert_int_equal(step_of(&w.obs, NULL, &why), PIVOT_APPLY_ASSETS);
        assert_non_null(strstr(why, "4 self-hosted asset(s)"));
        assert_non_null(strstr(why, "(first: ClusterRoleBinding x (no digest))"));
}

static void test_waits_for_every_self_hosted_pod(void **state) {
        World w;
        world_init(&w, "a");
        w.m[1].self_hosted_ready[PIVOT_APISERVER] = false;
        w.m[1].self_hosted_reason = "CrashLoopBackOff: bind: address already in use";
        const char *node;
        _cleanup_free_ char *why = NULL;
        assert_int_equal(step_of(&w.obs, &node, &why), PIVOT_WAIT_SELF_HOSTED);
        assert_string_equal(node, "b");
        assert_non_null(strstr(why, "address already in use"));

        w.m[1].self_hosted_ready[PIVOT_APISERVER] = true;
        w.m[0].self_hosted_ready[PIVOT_SCHEDULER] = false;
        assert_int_equal(step_of(&w.obs, &node, NULL), PIVOT_WAIT_SELF_HOSTED);
        assert_string_equal(node, "c");
}

static void test_ready_deadline_fails_and_keeps_bootstrap(void **state) {
        World w;
        world_init(&w, "a");
        w.m[2].self_hosted_ready[PIVOT_APISERVER] = false;
        w.m[2].self_hosted_reason = "ImagePullBackOff";
        w.obs.now = w.obs.assets_applied_at + PIVOT_READY_DEADLINE + S(1);
        _cleanup_free_ char *why = NULL;
        assert_int_equal(step_of(&w.obs, NULL, &why), PIVOT_FAILED);
        assert_non_null(strstr(why, "kube-apiserver on a"));
        assert_non_null(strstr(why, "ImagePullBackOff"));
        assert_non_null(strstr(why, "bootstrap pods stay"));
        /* Once Ready after all, the pivot goes on by itself. */
        w.m[2].self_hosted_ready[PIVOT_APISERVER] = true;
        assert_int_equal(step_of(&w.obs, NULL, NULL), PIVOT_REMOVE_BOOTSTRAP);
}

/* Tests shorten the deadlines (PROTOKUBE_PIVOT_READY_DEADLINE ...): the observation carries them. A master
 * that has not labelled its Node yet holds everyone back before any removal. */
static void test_deadline_override_and_expected_masters(void **state) {
        World w;
        world_init(&w, "a");
        w.m[2].self_hosted_ready[PIVOT_CONTROLLER_MANAGER] = false;
        w.m[2].self_hosted_reasons[PIVOT_CONTROLLER_MANAGER] = "pod kcm-x: ErrImageNeverPull";
        w.obs.ready_deadline = S(5);
        w.obs.now = w.obs.assets_applied_at + S(6);
        _cleanup_free_ char *why = NULL, *why2 = NULL;
        assert_int_equal(step_of(&w.obs, NULL, &why), PIVOT_FAILED);
        assert_non_null(strstr(why, "kube-controller-manager on a"));
        assert_non_null(strstr(why, "ErrImageNeverPull"));
        w.m[2].self_hosted_ready[PIVOT_CONTROLLER_MANAGER] = true;
        w.obs.masters_expected = 4;
        assert_int_equal(step_of(&w.obs, NULL, &why2), PIVOT_WAIT_TURN);
        assert_non_null(strstr(why2, "3 of 4 Nodes"));
        w.obs.masters_expected = 3;
        assert_int_equal(step_of(&w.obs, NULL, NULL), PIVOT_REMOVE_BOOTSTRAP);
}

static void test_one_master_at_a_time_by_name(void **state) {
        World w;
        const char *node;
        world_init(&w, "b");
        assert_int_equal(step_of(&w.obs, &node, NULL), PIVOT_WAIT_TURN);
        assert_string_equal(node, "a");
        world_init(&w, "c");
        assert_int_equal(step_of(&w.obs, &node, NULL), PIVOT_WAIT_TURN);
        assert_string_equal(node, "a");
        world_init(&w, "a");
        assert_int_equal(step_of(&w.obs, &node, NULL), PIVOT_REMOVE_BOOTSTRAP);
        assert_string_equal(node, "a");
        /* a is done (its mirrors gone): b's turn; c still waits, for b now. */
        world_init(&w, "c");
        memset(w.m[2].bootstrap_mirror, 0, sizeof(w.m[2].bootstrap_mirror));
        assert_int_equal(step_of(&w.obs, &node, NULL), PIVOT_WAIT_TURN);
        assert_string_equal(node, "b");
}

static void test_after_removal(void **state) {
        World w;
        world_init(&w, "a");
        w.obs.removed_at = S(2000);
        w.obs.now = S(2001);
        /* Killed half-way through the removal: finish it. */
        w.obs.local_bootstrap[PIVOT_APISERVER] = false;
        assert_int_equal(step_of(&w.obs, NULL, NULL), PIVOT_REMOVE_BOOTSTRAP);
        /* Removed; its apiserver does not answer yet. */
        memset(w.obs.local_bootstrap, 0, sizeof(w.obs.local_bootstrap));
        w.obs.local_api_ready = false;
        assert_int_equal(step_of(&w.obs, NULL, NULL), PIVOT_WAIT_LOCAL);
        /* Nor past the deadline: roll back, saying why. */
        w.m[2].self_hosted_reason = "Readiness probe failed: HTTP probe failed with statuscode: 500";
        w.obs.now = w.obs.removed_at + PIVOT_RESTORE_DEADLINE + S(1);
        _cleanup_free_ char *why = NULL;
        assert_int_equal(step_of(&w.obs, NULL, &why), PIVOT_RESTORE_BOOTSTRAP);
        assert_non_null(strstr(why, "statuscode: 500"));
        /* It answers: kubelet has not deleted the mirrors yet. */
        w.obs.local_api_ready = true;
        assert_int_equal(step_of(&w.obs, NULL, NULL), PIVOT_WAIT_MIRRORS_GONE);
}

static void test_complete(void **state) {
        World w;
        world_init(&w, "b");
        for (size_t i = 0; i < 3; i++)
                memset(w.m[i].bootstrap_mirror, 0, sizeof(w.m[i].bootstrap_mirror));
        memset(w.obs.local_bootstrap, 0, sizeof(w.obs.local_bootstrap));
        w.obs.removed_at = S(900);
        assert_int_equal(step_of(&w.obs, NULL, NULL), PIVOT_MARK_COMPLETE);
        w.obs.complete = true;
        assert_int_equal(step_of(&w.obs, NULL, NULL), PIVOT_DONE);
        /* After a reboot the API is down for long: complete means no rollback (the checkpoint's job). */
        w.obs.api_ready = w.obs.local_api_ready = false;
        w.obs.now = w.obs.removed_at + PIVOT_RESTORE_DEADLINE * 10;
        assert_int_equal(step_of(&w.obs, NULL, NULL), PIVOT_DONE);
        /* Stale assets after completion are the cluster's: not applied again. */
        w.obs.api_ready = true;
        w.obs.assets_stale = 2;
        assert_int_equal(step_of(&w.obs, NULL, NULL), PIVOT_DONE);
        /* The certificates stay protokube's: a renewal seen by the one writer is applied ... */
        w.obs.certificates_stale = 3;
        char *why = NULL;
        assert_int_equal(step_of(&w.obs, NULL, &why), PIVOT_RENEW_CERTIFICATES);
        assert_non_null(strstr(why, "3 Secret(s) or workload(s)"));
        free(why);
        assert_string_equal(pivot_step_name(PIVOT_RENEW_CERTIFICATES), "renew-certificates");
        /* ... through the API only: with it away, nothing to do and no rollback */
        w.obs.api_ready = false;
        assert_int_equal(step_of(&w.obs, NULL, NULL), PIVOT_DONE);
        /* and not before this master retired its own bootstrap pods (a master that joins later) */
        w.obs.api_ready = true;
        w.obs.local_bootstrap[PIVOT_APISERVER] = true;
        assert_int_not_equal(step_of(&w.obs, NULL, NULL), PIVOT_RENEW_CERTIFICATES);
}

/* A master's turn before its self-hosted apiserver starts: out of the API's names, the names seen leaving
 * it out, their TTL waited for, then the label that starts it. */
static void test_turn_leaves_the_names_first(void **state) {
        World w;
        const char *node;
        world_init(&w, "a");
        for (size_t i = 0; i < 3; i++) {
                w.m[i].apiserver_started = false;
                w.m[i].self_hosted_ready[PIVOT_APISERVER] = false; /* not scheduled: no label yet */
        }
        w.obs.names_ttl = S(60);
        w.obs.names_listed = 1;
        /* c's bootstrap apiserver still starts (the cold start's tail): a stays in the names */
        w.m[0].bootstrap_ready[PIVOT_APISERVER] = false;
        assert_int_equal(step_of(&w.obs, &node, NULL), PIVOT_WAIT_TURN);
        assert_string_equal(node, "c");
        w.m[0].bootstrap_ready[PIVOT_APISERVER] = true;
        assert_int_equal(step_of(&w.obs, &node, NULL), PIVOT_LEAVE_API_NAMES);
        assert_string_equal(node, "a");
        /* b and c wait for a's whole turn */
        w.obs.self = "b";
        assert_int_equal(step_of(&w.obs, &node, NULL), PIVOT_WAIT_TURN);
        assert_string_equal(node, "a");
        w.obs.self = "a";
        w.m[2].names_out = true;
        w.obs.names_left_at = S(1010);
        _cleanup_free_ char *why = NULL, *why2 = NULL, *why3 = NULL;
        assert_int_equal(step_of(&w.obs, NULL, &why), PIVOT_WAIT_API_NAMES);
        assert_non_null(strstr(why, "waiting for the API's names to leave it out"));
        w.obs.names_listed = 0; /* seen gone: the caller records names_gone_at */
        assert_int_equal(step_of(&w.obs, NULL, NULL), PIVOT_WAIT_API_NAMES);
        w.obs.names_gone_at = S(1012);
        w.obs.now = S(1012) + S(59);
        assert_int_equal(step_of(&w.obs, NULL, &why2), PIVOT_WAIT_API_NAMES);
        assert_non_null(strstr(why2, "waiting 1 s of the names' TTL"));
        w.obs.now = S(1012) + S(60);
        assert_int_equal(step_of(&w.obs, NULL, NULL), PIVOT_START_SELF_HOSTED);
        /* without a DNS read (`protokube pivot`), PIVOT_NAMES_SETTLE after leaving stands in */
        w.obs.names_listed = -1;
        w.obs.names_gone_at = 0;
        w.obs.now = S(1010) + PIVOT_NAMES_SETTLE + S(59);
        assert_int_equal(step_of(&w.obs, NULL, NULL), PIVOT_WAIT_API_NAMES);
        w.obs.now = S(1010) + PIVOT_NAMES_SETTLE + S(60);
        assert_int_equal(step_of(&w.obs, NULL, NULL), PIVOT_START_SELF_HOSTED);
        /* started: every master waits for it; only a judges its deadline, counted from its start */
        w.m[2].apiserver_started = true;
        w.m[2].self_hosted_reason = "ImagePullBackOff";
        w.obs.started_at = S(2000);
        w.obs.now = S(2000) + PIVOT_READY_DEADLINE;
        assert_int_equal(step_of(&w.obs, &node, NULL), PIVOT_WAIT_SELF_HOSTED);
        assert_string_equal(node, "a");
        w.obs.now = S(2001) + PIVOT_READY_DEADLINE;
        assert_int_equal(step_of(&w.obs, &node, &why3), PIVOT_FAILED);
        assert_non_null(strstr(why3, "after it was started"));
        w.obs.self = "c";
        w.obs.assets_applied_at = S(1);
        assert_int_equal(step_of(&w.obs, &node, NULL), PIVOT_WAIT_SELF_HOSTED);
        assert_string_equal(node, "a");
        /* Ready: a removes its bootstrap pods; once gone, it rejoins the names; then it is b's turn */
        w.obs.self = "a";
        w.m[2].self_hosted_ready[PIVOT_APISERVER] = true;
        assert_int_equal(step_of(&w.obs, NULL, NULL), PIVOT_REMOVE_BOOTSTRAP);
        memset(w.obs.local_bootstrap, 0, sizeof(w.obs.local_bootstrap));
        memset(w.m[2].bootstrap_mirror, 0, sizeof(w.m[2].bootstrap_mirror));
        w.obs.removed_at = S(2002);
        w.obs.now = S(2003);
        assert_int_equal(step_of(&w.obs, NULL, NULL), PIVOT_REJOIN_API_NAMES);
        w.obs.self = "b";
        w.obs.removed_at = 0;
        memset(w.obs.local_bootstrap, 1, sizeof(w.obs.local_bootstrap));
        assert_int_equal(step_of(&w.obs, &node, NULL), PIVOT_WAIT_TURN);
        assert_string_equal(node, "a");
        w.m[2].names_out = false;
        assert_int_equal(step_of(&w.obs, &node, NULL), PIVOT_LEAVE_API_NAMES);
        assert_string_equal(node, "b");
}

/* One master: no other apiserver to send clients to, so it does not leave the names. */
static void test_one_master_starts_at_once(void **state) {
        PivotMaster m = ready_master("a", true);
        m.apiserver_started = false;
        m.self_hosted_ready[PIVOT_APISERVER] = false;
        PivotObservation obs = { .self = "a",
                                 .api_ready = true,
                                 .local_api_ready = true,
                                 .masters = &m,
                                 .n_masters = 1,
                                 .local_bootstrap = { true, true, true },
                                 .assets_applied_at = S(1000),
                                 .names_listed = 1,
                                 .names_ttl = S(60),
                                 .now = S(1001) };
        /* the Deployments' pods need not be Ready for the turn to start the apiserver */
        m.self_hosted_ready[PIVOT_CONTROLLER_MANAGER] = false;
        assert_int_equal(step_of(&obs, NULL, NULL), PIVOT_START_SELF_HOSTED);
        m.apiserver_started = true;
        obs.started_at = S(1002);
        _cleanup_free_ char *why = NULL, *why2 = NULL;
        assert_int_equal(step_of(&obs, NULL, &why), PIVOT_WAIT_SELF_HOSTED);
        assert_non_null(strstr(why, "kube-apiserver on a"));
        /* the apiserver is judged first, from its start: the controller-manager's deadline (from the
         * assets) passed a second before */
        obs.now = S(1002) + PIVOT_READY_DEADLINE;
        assert_int_equal(step_of(&obs, NULL, NULL), PIVOT_WAIT_SELF_HOSTED);
        obs.now = S(1003) + PIVOT_READY_DEADLINE;
        assert_int_equal(step_of(&obs, NULL, &why2), PIVOT_FAILED);
        assert_non_null(strstr(why2, "kube-apiserver on a is not Ready"));
        /* Ready: the controller-manager holds the removal back */
        m.self_hosted_ready[PIVOT_APISERVER] = true;
        assert_int_equal(step_of(&obs, NULL, NULL), PIVOT_FAILED);
        m.self_hosted_ready[PIVOT_CONTROLLER_MANAGER] = true;
        assert_int_equal(step_of(&obs, NULL, NULL), PIVOT_REMOVE_BOOTSTRAP);
}

static void test_invalid(void **state) {
        World w;
        PivotDecision d;
        world_init(&w, "z");
        assert_int_equal(pivot_decide(&w.obs, &d), -EINVAL);
        world_init(&w, "a");
        w.m[1].node = "";
        assert_int_equal(pivot_decide(&w.obs, &d), -EINVAL);
        world_init(&w, "a");
        w.obs.n_masters = 0;
        assert_int_equal(pivot_decide(&w.obs, &d), -EINVAL);
        assert_string_equal(pivot_step_name(PIVOT_WAIT_MIRRORS_GONE), "wait-mirrors-gone");
        assert_string_equal(pivot_component_name(PIVOT_SCHEDULER), "kube-scheduler");
        assert_null(pivot_step_name(_PIVOT_STEP_MAX));
}

/* Three masters each deciding on their own view of one shared world, one round (1 s) at a time. Each round,
 * after the masters: kubelet drops a mirror pod whose manifest went, the DaemonSet's pod on a labelled
 * master becomes Ready, and DNS follows the annotations (the masters' DNS passes). Never two masters in
 * their turn at once; never a self-hosted apiserver started while its master is in the names or within their
 * TTL of leaving them; ends complete, m0 first, then m1, then m2. */
static void test_whole_pivot_played_out(void **state) {
        const char *names[3] = { "m2", "m0", "m1" };
        bool local[3][_PIVOT_COMPONENT_MAX], listed[3] = { true, true, true };
        usec_t removed[3] = {}, left[3] = {}, gone[3] = {}, started[3] = {}, unlisted_since[3] = {};
        const usec_t ttl = S(5);
        PivotMaster m[3];
        bool complete = false;
        for (size_t i = 0; i < 3; i++) {
                m[i] = ready_master(names[i], true);
                m[i].apiserver_started = m[i].self_hosted_ready[PIVOT_APISERVER] = false;
                memset(local[i], 1, sizeof(local[i]));
        }
        size_t rounds = 0;
        for (; rounds < 200 && !complete; rounds++) {
                usec_t now = S(10 + rounds);
                for (size_t i = 0; i < 3; i++) {
                        PivotObservation obs = { .self = names[i],
                                                 .api_ready = true,
                                                 .local_api_ready = true,
                                                 .complete = complete,
                                                 .masters = m,
                                                 .n_masters = 3,
                                                 .assets_applied_at = S(1),
                                                 .removed_at = removed[i],
                                                 .names_left_at = left[i],
                                                 .names_gone_at = gone[i],
                                                 .started_at = started[i],
                                                 .names_listed = listed[i],
                                                 .names_ttl = ttl,
                                                 .now = now };
                        memcpy(obs.local_bootstrap, local[i], sizeof(local[i]));
                        PivotDecision d;
                        assert_int_equal(pivot_decide(&obs, &d), 0);
                        assert_int_not_equal(d.step, PIVOT_FAILED);
                        assert_int_not_equal(d.step, PIVOT_RESTORE_BOOTSTRAP);
                        switch (d.step) { /* what pivot_apply does */
                        case PIVOT_LEAVE_API_NAMES:
                                left[i] = now;
                                m[i].names_out = true;
                                break;
                        case PIVOT_WAIT_API_NAMES:
                                if (!listed[i] && !gone[i])
                                        gone[i] = now;
                                break;
                        case PIVOT_START_SELF_HOSTED:
                                assert_false(listed[i]);
                                assert_true(unlisted_since[i] && now >= unlisted_since[i] + ttl);
                                started[i] = now;
                                m[i].apiserver_started = true;
                                break;
                        case PIVOT_REMOVE_BOOTSTRAP:
                                removed[i] = now;
                                memset(local[i], 0, sizeof(local[i]));
                                break;
                        case PIVOT_REJOIN_API_NAMES:
                                m[i].names_out = false;
                                break;
                        case PIVOT_MARK_COMPLETE:
                                complete = true;
                                break;
                        default:
                                break;
                        }
                        pivot_decision_done(&d);
                }
                size_t in_turn = 0;
                for (size_t i = 0; i < 3; i++) {
                        memcpy(m[i].bootstrap_mirror, local[i], sizeof(local[i])); /* kubelet's round */
                        memcpy(m[i].bootstrap_ready, local[i], sizeof(local[i]));
                        m[i].self_hosted_ready[PIVOT_APISERVER] = m[i].apiserver_started;
                        if (listed[i] == m[i].names_out) { /* the DNS passes' round */
                                listed[i] = !m[i].names_out;
                                unlisted_since[i] = listed[i] ? 0 : now;
                        }
                        in_turn += m[i].names_out || (m[i].apiserver_started && m[i].bootstrap_mirror[0]);
                }
                assert_true(in_turn <= 1);
        }
        assert_true(complete);
        for (size_t i = 0; i < 3; i++) {
                assert_true(removed[i] > 0 && started[i] > 0);
                assert_true(listed[i] && !m[i].names_out);
        }
        assert_true(removed[1] < started[2] && removed[2] < started[0]);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_waits_for_api_then_applies),
                cmocka_unit_test(test_waits_for_every_self_hosted_pod),
                cmocka_unit_test(test_ready_deadline_fails_and_keeps_bootstrap),
                cmocka_unit_test(test_deadline_override_and_expected_masters),
                cmocka_unit_test(test_one_master_at_a_time_by_name),
                cmocka_unit_test(test_after_removal),
                cmocka_unit_test(test_complete),
                cmocka_unit_test(test_turn_leaves_the_names_first),
                cmocka_unit_test(test_one_master_starts_at_once),
                cmocka_unit_test(test_invalid),
                cmocka_unit_test(test_whole_pivot_played_out),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
