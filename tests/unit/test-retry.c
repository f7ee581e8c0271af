/* SPDX-License-Identifier: Apache-2.0 */
/* The cloud clients' retry loop: what each verdict leads to, the attempt cap, the deadline, the one
 * immediate try after a refused token, and the message that says why no further try was made. */
#include "unit-test.h"

#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "shared/retry.h"

typedef struct Script {
        const RetryVerdict *verdicts; /* one per try; the last repeats */
        size_t n;
        unsigned tries;
} Script;

static int scripted(void *userdata, usec_t deadline, RetryVerdict *ret_verdict, char **ret_error) {
        Script *s = userdata;
        size_t i = s->tries < s->n ? s->tries : s->n - 1;
        s->tries++;
        *ret_verdict = s->verdicts[i];
        if (*ret_verdict == RETRY_DONE)
                return 0;
        return error_setf(ret_error, PK_ECLOUD, "try %u: HTTP 503", s->tries);
}

static const RetryPolicy fast = {
        .max_attempts = 5, .backoff_base = 1000, .backoff_max = 2000, .call_timeout = 10 * USEC_PER_SEC
};

static void test_again_then_done(void **state) {
        const RetryVerdict v[] = { RETRY_AGAIN, RETRY_AGAIN, RETRY_DONE };
        Script s = { v, ELEMENTSOF(v), 0 };
        unsigned retries = 0;
        _cleanup_free_ char *err = NULL;
        assert_int_equal(retry_call(&fast, scripted, &s, &retries, &err), 0);
        assert_int_equal(s.tries, 3);
        assert_int_equal(retries, 2);
        assert_null(err);
}

static void test_fail_at_once(void **state) {
        const RetryVerdict v[] = { RETRY_FAIL };
        Script s = { v, 1, 0 };
        _cleanup_free_ char *err = NULL;
        assert_int_equal(retry_call(&fast, scripted, &s, NULL, &err), PK_ECLOUD);
        assert_int_equal(s.tries, 1);
        assert_string_equal(err, "try 1: HTTP 503");
}

static void test_gives_up_after_max_attempts(void **state) {
        const RetryVerdict v[] = { RETRY_AGAIN };
        Script s = { v, 1, 0 };
        _cleanup_free_ char *err = NULL;
        assert_int_equal(retry_call(&fast, scripted, &s, NULL, &err), PK_ECLOUD);
        assert_int_equal(s.tries, 5);
        assert_string_equal(err, "try 5: HTTP 503 (gave up after 5 attempts)");
}

static void test_deadline(void **state) {
        const RetryVerdict v[] = { RETRY_AGAIN };
        Script s = { v, 1, 0 };
        RetryPolicy p = { .max_attempts = 100,
                          .backoff_base = 50 * USEC_PER_MSEC,
                          .backoff_max = 50 * USEC_PER_MSEC,
                          .call_timeout = 0 };
        _cleanup_free_ char *err = NULL;
        /* no time left for any pause: the first AGAIN ends the call */
        assert_int_equal(retry_call(&p, scripted, &s, NULL, &err), PK_ETIMEOUT);
        assert_int_equal(s.tries, 1);
        assert_non_null(strstr(err, "gave up at the call's deadline after 1 attempts"));
}

static void test_again_now_once(void **state) {
        const RetryVerdict v[] = { RETRY_AGAIN_NOW };
        Script s = { v, 1, 0 };
        unsigned retries = 0;
        _cleanup_free_ char *err = NULL;
        /* a new token once, at once; refused again, it is the call's failure */
        assert_int_equal(retry_call(&fast, scripted, &s, &retries, &err), PK_ECLOUD);
        assert_int_equal(s.tries, 2);
        assert_int_equal(retries, 0);
        const RetryVerdict w[] = { RETRY_AGAIN_NOW, RETRY_DONE };
        Script t = { w, 2, 0 };
        assert_int_equal(retry_call(&fast, scripted, &t, NULL, NULL), 0);
        assert_int_equal(t.tries, 2);
}

static void test_transport_errors(void **state) {
        assert_true(retry_transport_error(-ECONNREFUSED));
        assert_true(retry_transport_error(PK_ETIMEOUT));
        assert_false(retry_transport_error(-EINVAL));
        assert_false(retry_transport_error(-ENOMEM));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_again_then_done),
                cmocka_unit_test(test_fail_at_once),
                cmocka_unit_test(test_gives_up_after_max_attempts),
                cmocka_unit_test(test_deadline),
                cmocka_unit_test(test_again_now_once),
                cmocka_unit_test(test_transport_errors),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
