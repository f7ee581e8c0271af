/* SPDX-License-Identifier: Apache-2.0 */
/* Child processes: capture with a cap, deadlines, and a child ended by a signal is an error with the signal
 * named, never an exit status. */
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "basic/errors.h"
#include "shared/spawn.h"
#include "unit-test.h"

static void test_spawn_status_and_output(void **state) {
        char *argv[] = { (char *)"sh", (char *)"-c", (char *)"echo out; echo err >&2; exit 3", NULL };
        SpawnResult r = {};
        assert_int_equal(spawn_run(argv, 10 * USEC_PER_SEC, 1024, &r), 0);
        assert_int_equal(r.exit_status, 3);
        assert_int_equal(r.term_signal, 0);
        assert_non_null(strstr(r.output, "out\n"));
        assert_non_null(strstr(r.output, "err\n"));
        assert_false(r.truncated);
        spawn_result_done(&r);
}

static void test_spawn_cap(void **state) {
        char *argv[] = { (char *)"head", (char *)"-c", (char *)"100000", (char *)"/dev/zero", NULL };
        SpawnResult r = {};
        assert_int_equal(spawn_run(argv, 10 * USEC_PER_SEC, 1000, &r), 0);
        assert_int_equal(r.exit_status, 0); /* the rest was read and dropped: the child never blocked */
        assert_int_equal(r.output_len, 1000);
        assert_true(r.truncated);
        spawn_result_done(&r);
}

static void test_spawn_deadline(void **state) {
        char *argv[] = { (char *)"sleep", (char *)"10", NULL };
        SpawnResult r = {};
        usec_t t0 = now(CLOCK_MONOTONIC);
        assert_int_equal(spawn_run(argv, 100 * USEC_PER_MSEC, 1000, &r), PK_ETIMEOUT);
        assert_true(now(CLOCK_MONOTONIC) - t0 < 5 * USEC_PER_SEC);
        assert_int_equal(r.term_signal, 9);
        spawn_result_done(&r);
}

static void test_spawn_missing(void **state) {
        char *argv[] = { (char *)"/nonexistent/pk-tool", NULL };
        SpawnResult r = {};
        assert_int_equal(spawn_run(argv, USEC_PER_SEC, 1000, &r), -ENOENT);
}

static void test_spawn_killed_by_signal(void **state) {
        char *argv[] = { (char *)"sh", (char *)"-c", (char *)"echo before; kill -SEGV $$", NULL };
        SpawnResult r = {};
        char how[128];
        assert_int_equal(spawn_run(argv, 10 * USEC_PER_SEC, 1024, &r), PK_ECHILD);
        assert_int_equal(r.term_signal, SIGSEGV);
        assert_int_equal(r.exit_status, -1);
        assert_non_null(strstr(r.output, "before"));
        assert_string_equal(spawn_result_describe(&r, how, sizeof(how)),
                            "was killed by signal SIGSEGV (Segmentation fault)");
        spawn_result_done(&r);
}

static void test_spawn_killed_like_oom(void **state) {
        char *argv[] = { (char *)"sh", (char *)"-c", (char *)"kill -KILL $$", NULL };
        SpawnResult r = {};
        char how[128];
        assert_int_equal(spawn_run(argv, 10 * USEC_PER_SEC, 1024, &r), PK_ECHILD);
        assert_int_equal(r.term_signal, SIGKILL);
        assert_string_equal(spawn_result_describe(&r, how, sizeof(how)),
                            "was killed by signal SIGKILL (Killed)");
        spawn_result_done(&r);
}

static void test_spawn_exit_described(void **state) {
        char *argv[] = { (char *)"sh", (char *)"-c", (char *)"exit 4", NULL };
        SpawnResult r = {};
        char how[128];
        assert_int_equal(spawn_run(argv, 10 * USEC_PER_SEC, 1024, &r), 0);
        assert_string_equal(spawn_result_describe(&r, how, sizeof(how)), "exited 4");
        spawn_result_done(&r);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_spawn_status_and_output), cmocka_unit_test(test_spawn_cap),
                cmocka_unit_test(test_spawn_deadline),          cmocka_unit_test(test_spawn_missing),
                cmocka_unit_test(test_spawn_killed_by_signal),  cmocka_unit_test(test_spawn_killed_like_oom),
                cmocka_unit_test(test_spawn_exit_described),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
