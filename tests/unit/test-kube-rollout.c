/* SPDX-License-Identifier: Apache-2.0 */
/* Where a DaemonSet's rollout stands (kube/kube-rollout.h): complete, under way, stuck past the deadline;
 * the revision to roll back to (never one rolled back from, never another DaemonSet's); since when. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/macro.h"
#include "kube/kube-rollout.h"
#include "shared/json-util.h"
#include "unit-test.h"

#define T(image)                                                                               \
        "{\"metadata\": {\"labels\": {\"k8s-app\": \"kubelet\"}}, \"spec\": {\"containers\": " \
        "[{\"name\": \"kubelet\", \"image\": \"" image "\"}]}}"
#define REV(name, hash, n, created, owner, image)                                                          \
        "{\"metadata\": {\"name\": \"" name "\", \"creationTimestamp\": \"" created "\", \"labels\": "     \
        "{\"controller-revision-hash\": \"" hash "\"}, \"ownerReferences\": [{\"uid\": \"" owner "\"}]}, " \
        "\"revision\": " #n ", \"data\": {\"spec\": {\"template\": {\"$patch\": \"replace\", "             \
        "\"metadata\": {\"labels\": {\"k8s-app\": \"kubelet\"}}, \"spec\": {\"containers\": "              \
        "[{\"name\": \"kubelet\", \"image\": \"" image "\"}]}}}}}"
#define REVISIONS                                                                                         \
        "{\"items\": [" REV("kubelet-aaa", "aaa", 1, "2026-11-29T10:00:00Z", "u1", "kubelet:v1") "," REV( \
            "kubelet-bbb", "bbb", 2, "2026-11-29T11:00:00Z", "u1",                                        \
            "kubelet:broken") "," REV("other-ccc", "ccc", 3, "2026-11-29T11:30:00Z", "u2",                \
                                      "kubelet:v1") "]}"

static json_t *ds(const char *image, const char *status, const char *annotations) {
        char text[2048];
        json_error_t e;
        snprintf(text, sizeof(text),
                 "{\"metadata\": {\"name\": \"kubelet\", \"uid\": \"u1\", \"generation\": 2, "
                 "\"annotations\": {%s}}, \"spec\": {\"template\": %s}, \"status\": {%s}}",
                 annotations, image, status);
        json_t *j = json_loads(text, 0, &e);
        if (!j)
                fail_msg("%s: %s", e.text, text);
        return j;
}

#define STUCK                                                                                       \
        "\"observedGeneration\": 2, \"desiredNumberScheduled\": 3, \"updatedNumberScheduled\": 1, " \
        "\"numberAvailable\": 2"
#define DONE                                                                                        \
        "\"observedGeneration\": 2, \"desiredNumberScheduled\": 3, \"updatedNumberScheduled\": 3, " \
        "\"numberAvailable\": 3"

static usec_t at(const char *rfc3339) {
        usec_t t;
        assert_int_equal(parse_rfc3339(rfc3339, &t), 0);
        return t;
}

static void test_stuck_past_the_deadline(void **state) {
        json_error_t e;
        _cleanup_(json_decrefp) json_t *revs = json_loads(REVISIONS, 0, &e),
                                       *d = ds(T("kubelet:broken"), STUCK, "");
        _cleanup_(json_decrefp) json_t *want = json_loads(T("kubelet:v1"), 0, &e);
        KubeRollout r;
        assert_non_null(revs);
        /* within the deadline: under way */
        assert_int_equal(
            kube_daemonset_rollout(d, revs, NULL, at("2026-11-29T11:04:00Z"), 300 * USEC_PER_SEC, &r), 0);
        assert_false(r.complete);
        assert_false(r.stuck);
        assert_int_equal(r.current, 2);
        assert_string_equal(r.hash, "bbb");
        assert_int_equal(r.since, at("2026-11-29T11:00:00Z"));
        assert_string_equal(r.why, "1 of 3 node(s) run the current template, 2 available");
        kube_rollout_done(&r);
        /* past it: stuck, back to revision 1 (not the other DaemonSet's newer one) */
        assert_int_equal(
            kube_daemonset_rollout(d, revs, NULL, at("2026-11-29T11:06:00Z"), 300 * USEC_PER_SEC, &r), 0);
        assert_true(r.stuck);
        assert_int_equal(r.previous, 1);
        assert_string_equal(r.previous_hash, "aaa");
        assert_non_null(r.previous_template);
        assert_true(json_equal(r.previous_template, want)); /* without "$patch" */
        kube_rollout_done(&r);
}

static void test_complete_is_never_stuck(void **state) {
        json_error_t e;
        _cleanup_(json_decrefp) json_t *revs = json_loads(REVISIONS, 0, &e),
                                       *d = ds(T("kubelet:broken"), DONE, "");
        KubeRollout r;
        assert_int_equal(
            kube_daemonset_rollout(d, revs, NULL, at("2026-11-29T12:00:00Z"), 300 * USEC_PER_SEC, &r), 0);
        assert_true(r.complete);
        assert_false(r.stuck);
        kube_rollout_done(&r);
        /* the DaemonSet alone says it is complete: no revisions needed */
        assert_int_equal(kube_daemonset_rollout(d, NULL, NULL, 0, 300 * USEC_PER_SEC, &r), 0);
        assert_true(r.complete);
        assert_int_equal(r.current, 0);
        kube_rollout_done(&r);
        /* a change the controller has not seen yet is not complete */
        json_decref(d);
        d = ds(T("kubelet:broken"),
               "\"observedGeneration\": 1, \"desiredNumberScheduled\": 3, "
               "\"updatedNumberScheduled\": 3, \"numberAvailable\": 3",
               "");
        assert_int_equal(
            kube_daemonset_rollout(d, revs, NULL, at("2026-11-29T11:01:00Z"), 300 * USEC_PER_SEC, &r), 0);
        assert_false(r.complete);
        assert_non_null(strstr(r.why, "has not seen the change yet"));
        kube_rollout_done(&r);
}

/* After a rollback the good template is current again (its revision renumbered by the controller, its
 * creation old): its rollout counts from the rollback, and the template rolled back from is never the
 * way back. */
static void test_after_a_rollback(void **state) {
        json_error_t e;
        _cleanup_(json_decrefp) json_t *revs = json_loads(
            "{\"items\": [" REV("kubelet-aaa", "aaa", 3, "2026-11-29T10:00:00Z", "u1", "kubelet:v1") "," REV(
                "kubelet-bbb", "bbb", 2, "2026-11-29T11:00:00Z", "u1", "kubelet:broken") "]}",
            0, &e);
        _cleanup_(json_decrefp) json_t *d =
            ds(T("kubelet:v1"), STUCK,
               "\"" KUBE_ROLLED_BACK_AT_ANNOTATION
               "\": \"2026-11-29T11:06:00Z\", \"" KUBE_ROLLED_BACK_FROM_ANNOTATION "\": \"bbb\"");
        KubeRollout r;
        assert_non_null(revs);
        assert_int_equal(
            kube_daemonset_rollout(d, revs, NULL, at("2026-11-29T11:08:00Z"), 300 * USEC_PER_SEC, &r), 0);
        assert_int_equal(r.current, 3);
        assert_int_equal(r.since, at("2026-11-29T11:06:00Z"));
        assert_false(r.stuck);
        assert_int_equal(r.previous, 0); /* bbb was rolled back from */
        assert_null(r.previous_template);
        kube_rollout_done(&r);
}

#define POD(hash, ready, when)                                                                    \
        "{\"metadata\": {\"labels\": {\"controller-revision-hash\": \"" hash "\"}}, \"status\": " \
        "{\"conditions\": [{\"type\": \"Ready\", \"status\": \"" ready                            \
        "\", \"lastTransitionTime\": \"" when "\"}]}}"

/* The deadline runs per node: a pod of the current revision that became Ready is progress, one of
 * another revision or not Ready is not; a list that is not one is refused. */
static void test_progress_by_node(void **state) {
        json_error_t e;
        _cleanup_(json_decrefp) json_t *revs = json_loads(REVISIONS, 0, &e),
                                       *d = ds(T("kubelet:broken"), STUCK, "");
        _cleanup_(json_decrefp) json_t *pods = json_loads(
            "{\"items\": [" POD("bbb", "True", "2026-11-29T11:04:00Z") "," POD(
                "bbb", "False", "2026-11-29T11:05:00Z") "," POD("aaa", "True", "2026-11-29T11:07:00Z") "]}",
            0, &e);
        _cleanup_(json_decrefp) json_t *bad = json_loads("{\"items\": {}}", 0, &e);
        KubeRollout r;
        assert_non_null(pods);
        assert_int_equal(
            kube_daemonset_rollout(d, revs, pods, at("2026-11-29T11:06:00Z"), 300 * USEC_PER_SEC, &r), 0);
        assert_int_equal(r.since, at("2026-11-29T11:04:00Z"));
        assert_false(r.stuck);
        kube_rollout_done(&r);
        assert_int_equal(
            kube_daemonset_rollout(d, revs, pods, at("2026-11-29T11:09:01Z"), 300 * USEC_PER_SEC, &r), 0);
        assert_true(r.stuck);
        kube_rollout_done(&r);
        assert_int_equal(kube_daemonset_rollout(d, revs, bad, 0, 0, &r), PK_EMALFORMED);
}

static void test_malformed(void **state) {
        json_error_t e;
        _cleanup_(json_decrefp) json_t *revs = json_loads("{\"items\": []}", 0, &e),
                                       *bad = json_loads("{}", 0, &e);
        KubeRollout r;
        assert_int_equal(kube_daemonset_rollout(bad, revs, NULL, 0, 0, &r), PK_EMALFORMED);
        assert_int_equal(kube_daemonset_rollout(revs, bad, NULL, 0, 0, &r), PK_EMALFORMED);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_stuck_past_the_deadline),
                cmocka_unit_test(test_complete_is_never_stuck),
                cmocka_unit_test(test_after_a_rollback),
                cmocka_unit_test(test_progress_by_node),
                cmocka_unit_test(test_malformed),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
