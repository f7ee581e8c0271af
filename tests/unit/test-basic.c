/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/parse-util.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "unit-test.h"

static void test_go_duration(void **state) {
        char b[GO_DURATION_MAX];
        assert_string_equal(format_go_duration(b, 0), "0s");
        assert_string_equal(format_go_duration(b, 60 * USEC_PER_SEC), "1m0s");
        assert_string_equal(format_go_duration(b, 10 * USEC_PER_SEC), "10s");
        assert_string_equal(format_go_duration(b, 3600 * USEC_PER_SEC), "1h0m0s");
        assert_string_equal(format_go_duration(b, 90 * USEC_PER_SEC + 500000), "1m30.5s");
        assert_string_equal(format_go_duration(b, 250 * USEC_PER_MSEC), "250ms");
        assert_string_equal(format_go_duration(b, 2 * 3600 * USEC_PER_SEC + 5 * USEC_PER_SEC), "2h0m5s");
}

static void test_parse_duration(void **state) {
        uint64_t u;
        assert_int_equal(parse_duration_usec("1m30s", &u), 0);
        assert_int_equal(u, 90 * USEC_PER_SEC);
        assert_int_equal(parse_duration_usec("250ms", &u), 0);
        assert_int_equal(u, 250 * USEC_PER_MSEC);
        assert_int_equal(parse_duration_usec("2h", &u), 0);
        assert_int_equal(u, 7200 * USEC_PER_SEC);
        assert_int_equal(parse_duration_usec("0", &u), 0);
        assert_int_equal(u, 0);
        assert_int_equal(parse_duration_usec("10", &u), -EINVAL);
        assert_int_equal(parse_duration_usec("s", &u), -EINVAL);
        assert_int_equal(parse_duration_usec("", &u), -EINVAL);
        assert_int_equal(parse_duration_usec("5x", &u), -EINVAL);
}

static void test_parse_numbers(void **state) {
        int i;
        uint16_t p;
        uint64_t s;
        assert_int_equal(safe_atoi("-42", &i), 0);
        assert_int_equal(i, -42);
        assert_int_equal(safe_atoi("42x", &i), -EINVAL);
        assert_int_equal(safe_atoi(" 1", &i), -EINVAL);
        assert_int_equal(safe_atoi("99999999999", &i), -ERANGE);
        assert_int_equal(safe_atou16("65535", &p), 0);
        assert_int_equal(safe_atou16("65536", &p), -ERANGE);
        assert_int_equal(safe_atou16("-1", &p), -EINVAL);
        assert_int_equal(parse_size("1G", &s), 0);
        assert_int_equal(s, 1024ULL * 1024 * 1024);
        assert_int_equal(parse_size("64M", &s), 0);
        assert_int_equal(s, 64ULL * 1024 * 1024);
        assert_int_equal(parse_size("12Q", &s), -EINVAL);
}

static void test_strv(void **state) {
        _cleanup_strv_free_ char **l = NULL;
        assert_int_equal(strv_split("b,,a,c", ",", &l), 0);
        assert_int_equal(strv_length(l), 3);
        strv_sort(l);
        _cleanup_free_ char *j = strv_join(l, ",");
        assert_string_equal(j, "a,b,c");
        assert_true(strv_contains(l, "b"));
        assert_false(strv_contains(l, "d"));
        char **c = strv_copy(l);
        assert_true(strv_equal(c, l));
        strv_free(c);
}

static void test_strings(void **state) {
        assert_non_null(startswith("foobar", "foo"));
        assert_null(startswith("foobar", "bar"));
        assert_non_null(endswith("foobar", "bar"));
        assert_int_equal(string_edit_distance("ttl", "tll"), 1);
        assert_int_equal(string_edit_distance("zone", "zone"), 0);
        assert_int_equal(string_edit_distance("", "abc"), 3);
        assert_string_equal(pk_strerror(PK_ETSIG), "TSIG verification failed");
        assert_string_equal(pk_strerror(-ENOENT), "No such file or directory");
}

static void test_buf_cap(void **state) {
        _cleanup_buf_ Buf b;
        buf_init(&b, 8);
        assert_int_equal(buf_add_str(&b, "1234"), 0);
        assert_int_equal(buf_add_str(&b, "5678"), 0);
        assert_int_equal(buf_add_str(&b, "9"), PK_ETOOBIG);
        assert_int_equal(b.len, 8);
        assert_string_equal((char *)b.data, "12345678");
}

static void test_atomic_write(void **state) {
        char dir[] = "/tmp/pk-test-XXXXXX";
        assert_non_null(mkdtemp(dir));
        _cleanup_free_ char *path = strjoin(dir, "/f.manifest"), *data = NULL;
        struct stat st1, st2;
        assert_int_equal(write_file_atomic(path, "abc", 3, 0644, 1), 1);
        assert_int_equal(stat(path, &st1), 0);
        usleep(20000);
        assert_int_equal(write_file_atomic(path, "abc", 3, 0644, 1), 0);
        assert_int_equal(stat(path, &st2), 0);
        assert_int_equal(st1.st_mtim.tv_nsec, st2.st_mtim.tv_nsec);
        assert_int_equal(st1.st_ino, st2.st_ino);
        assert_int_equal(write_file_atomic(path, "abcd", 4, 0600, 1), 1);
        assert_int_equal(read_full_file(path, 100, &data, NULL), 0);
        assert_string_equal(data, "abcd");
        assert_int_equal(stat(path, &st2), 0);
        assert_int_equal(st2.st_mode & 0777, 0600);
        free(data);
        data = NULL;
        assert_int_equal(read_full_file(path, 2, &data, NULL), -EFBIG);
        unlink(path);
        rmdir(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_go_duration),   cmocka_unit_test(test_parse_duration),
                cmocka_unit_test(test_parse_numbers), cmocka_unit_test(test_strv),
                cmocka_unit_test(test_strings),       cmocka_unit_test(test_buf_cap),
                cmocka_unit_test(test_atomic_write),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
