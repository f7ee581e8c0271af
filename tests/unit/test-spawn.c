/* SPDX-License-Identifier: Apache-2.0 */
/* Child processes ended by a signal: an error with the signal named, never an exit status. */
#include <signal.h>
#include <string.h>

#include "basic/errors.h"
#include "shared/spawn.h"
#include "unit-test.h"

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
                cmocka_unit_test(test_spawn_killed_by_signal),
                cmocka_unit_test(test_spawn_killed_like_oom),
                cmocka_unit_test(test_spawn_exit_described),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
