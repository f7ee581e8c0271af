/* SPDX-License-Identifier: Apache-2.0 */
/* Where a worker's join stands, its step alone (daemon/step-node-join.c): the plan over observations built
 * by hand (a token the API refuses, each state of the CSR, the Node Ready or not), what `plan` prints, and
 * the stages `join plan` gets from it. The real API and kubelet are tests/integration's. */
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "daemon/pass-types.h"
#include "daemon/step-node-join.h"
#include "pass-step-test.h"
#include "unit-test.h"

#define SPEC PASS_TEST_WORKER_SPEC

static const NodeSettings worker = PASS_TEST_WORKER;

typedef struct Case {
        PassNodeJoinObserved seen;
        const char *csr_name, *csr_words, *ready_words;
        PassJoinStage stage;
        int status;
        const char *note, *printed;
} Case;

static void check(const Pass *p, const Case *c) {
        PassObservation o = { .node_join = c->seen };
        PassPlan plan = {};
        PassJoinStatus stages[_PASS_JOIN_STAGE_MAX] = {};
        assert_int_equal(join_token_parse("abcdef.0123456789abcdef", &o.kubelet.token, NULL), 0);
        o.node_join.message = c->seen.message ? strdup(c->seen.message) : NULL;
        o.node_join.csr.name = c->csr_name ? strdup(c->csr_name) : NULL;
        o.node_join.csr.words = c->csr_words ? strdup(c->csr_words) : NULL;
        o.node_join.ready_words = c->ready_words ? strdup(c->ready_words) : NULL;
        assert_int_equal(pass_step_node_join.plan(p, &o, &plan), 0);
        assert_int_equal(plan.node_join.stage, c->stage);
        assert_int_equal(plan.node_join.status, c->status);
        assert_contains(plan.node_join.note, c->note);
        int r;
        _cleanup_free_ char *text = pass_test_print(&pass_step_node_join, p, &o, &plan, &r);
        assert_int_equal(r, c->status == PK_EWAITING ? 0 : c->status);
        assert_contains(text, c->printed);
        assert_int_equal(pass_step_node_join.join(p, &o, &plan, stages), 0);
        assert_true(stages[c->stage].known);
        assert_int_equal(stages[c->stage].status, c->status);
        /* the stages before it were passed: the CSR once the kubelet has its certificate, the token once
         * the API answered to it */
        if (c->stage == PASS_JOIN_NODE)
                assert_true(stages[PASS_JOIN_CSR].known && stages[PASS_JOIN_CSR].status == 0);
        if (c->stage == PASS_JOIN_CSR && c->seen.observed)
                assert_true(stages[PASS_JOIN_TOKEN].known && stages[PASS_JOIN_TOKEN].status == 0);
        assert_false(stages[PASS_JOIN_DNS].known || stages[PASS_JOIN_PIN].known);
        pass_join_statuses_done(stages);
        pass_plan_done(&plan);
        o.kubelet.token = (JoinToken){};
        pass_observation_done(&o);
}

static void test_stages(void **state) {
        Pass *p = pass_test_new(SPEC, &worker);
        const Case cases[] = {
                { .seen = { .status = PK_EWAITING, .message = "no master with an address in the view yet" },
                  .stage = PASS_JOIN_CSR,
                  .status = PK_EWAITING,
                  .note = "no master with an address",
                  .printed = "node: waiting: no master with an address in the view yet\n" },
                { .seen = { .observed = true, .token_refused = true },
                  .stage = PASS_JOIN_TOKEN,
                  .status = -EACCES,
                  .note = "the API refuses the bootstrap token (401)",
                  .printed =
                      "node: refused: the API refuses the bootstrap token (401): it is wrong, expired "
                      "or deleted" },
                { .seen = { .observed = true, .csrs_denied = true },
                  .stage = PASS_JOIN_CSR,
                  .status = PK_EWAITING,
                  .note = "may not list CSRs yet (403)",
                  .printed = "node: waiting: the bootstrap token may not list CSRs yet" },
                { .seen = { .observed = true },
                  .stage = PASS_JOIN_CSR,
                  .status = PK_EWAITING,
                  .note = "the kubelet has asked for no certificate yet",
                  .printed = "node: waiting: the kubelet has asked for no certificate yet" },
                { .seen = { .observed = true, .csr = { .state = JOIN_CSR_STATE_PENDING } },
                  .csr_name = "csr-1",
                  .stage = PASS_JOIN_CSR,
                  .status = PK_EWAITING,
                  .note = "CSR csr-1 is pending: no master approved it yet",
                  .printed = "node: waiting: CSR csr-1 is pending" },
                { .seen = { .observed = true, .csr = { .state = JOIN_CSR_STATE_PENDING } },
                  .csr_name = "csr-1",
                  .csr_words = "node name w1 is bound to machine key:sha256:ab",
                  .stage = PASS_JOIN_CSR,
                  .status = -EACCES,
                  .note = "CSR csr-1 is refused by the masters (left pending): node name w1 is bound",
                  .printed =
                      "node: refused: CSR csr-1 is refused by the masters (left pending): node name" },
                { .seen = { .observed = true, .csr = { .state = JOIN_CSR_STATE_APPROVED } },
                  .csr_name = "csr-1",
                  .stage = PASS_JOIN_CSR,
                  .status = PK_EWAITING,
                  .note = "CSR csr-1 is approved: waiting for a master to sign it",
                  .printed = "node: waiting: CSR csr-1 is approved" },
                { .seen = { .observed = true, .csr = { .state = JOIN_CSR_STATE_DENIED } },
                  .csr_name = "csr-1",
                  .csr_words = "ProtokubeDenied: node name w1 is bound to another machine",
                  .stage = PASS_JOIN_CSR,
                  .status = -EACCES,
                  .note = "CSR csr-1 was denied: ProtokubeDenied: node name w1 is bound to another machine",
                  .printed = "node: refused: CSR csr-1 was denied: ProtokubeDenied" },
                { .seen = { .observed = true, .joined = true, .ready = -1 },
                  .stage = PASS_JOIN_NODE,
                  .status = PK_EWAITING,
                  .note = "no Node w1 yet",
                  .printed = "node: waiting: no Node w1 yet" },
                { .seen = { .observed = true, .joined = true, .ready = 0 },
                  .ready_words = "KubeletNotReady: cni config uninitialized",
                  .stage = PASS_JOIN_NODE,
                  .status = PK_EWAITING,
                  .note = "Node w1 is not Ready: KubeletNotReady: cni config uninitialized",
                  .printed = "node: waiting: Node w1 is not Ready" },
                { .seen = { .observed = true, .joined = true, .ready = 1 },
                  .stage = PASS_JOIN_NODE,
                  .status = 0,
                  .note = "Node w1 is Ready",
                  .printed = "node: Node w1 is Ready\n" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                check(p, &cases[i]);
        pass_free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_stages),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
