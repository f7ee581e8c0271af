/* SPDX-License-Identifier: Apache-2.0 */
/* path_canonicalize: symlinks resolved, and a tail that does not exist yet kept below its canonical prefix.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/path-util.h"
#include "basic/string-util.h"
#include "unit-test.h"

static void test_canonicalize(void **state) {
        char tmpl[] = "/tmp/pk-path-XXXXXX";
        assert_non_null(mkdtemp(tmpl));
        char *real = NULL, *base = NULL;
        assert_int_equal(path_canonicalize(tmpl, &base), 0); /* /tmp itself may be a link */
        char *dir = strjoin(tmpl, "/real"), *link = strjoin(tmpl, "/link");
        assert_int_equal(mkdir(dir, 0755), 0);
        assert_int_equal(symlink("real", link), 0);

        char *got = NULL, *want = strjoin(base, "/real");
        assert_int_equal(path_canonicalize(link, &got), 0);
        assert_string_equal(got, want);
        free(got);
        free(want);

        /* a tail that does not exist (yet) stays as written, below the resolved prefix */
        char *deep = strjoin(link, "/master-vol-1/x");
        want = strjoin(base, "/real/master-vol-1/x");
        assert_int_equal(path_canonicalize(deep, &got), 0);
        assert_string_equal(got, want);
        free(got);
        free(want);
        free(deep);

        char *dots = strjoin(link, "/../real/./");
        want = strjoin(base, "/real");
        assert_int_equal(path_canonicalize(dots, &got), 0);
        assert_string_equal(got, want);
        free(got);
        free(want);
        free(dots);

        assert_int_equal(path_canonicalize("", &got), -EINVAL);
        assert_int_equal(path_canonicalize("/", &got), 0);
        assert_string_equal(got, "/");
        free(got);

        unlink(link);
        rmdir(dir);
        rmdir(tmpl);
        free(link);
        free(dir);
        free(base);
        free(real);
}

int main(void) {
        const struct CMUnitTest tests[] = { cmocka_unit_test(test_canonicalize) };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
