/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/aws-names.h"
#include "basic/backoff.h"
#include "basic/buf.h"
#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/lock-file.h"
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

/* A string from outside as one bounded line: control characters and DEL become '?', the tail "...". */
static void test_one_line(void **state) {
        static const struct {
                const char *in;
                size_t max;
                const char *out;
        } cases[] = {
                { "Ready", 10, "Ready" },
                { "a\nb\tc\x7f", 10, "a?b?c?" },
                { "0123456789", 10, "0123456789" },
                { "0123456789x", 10, "0123456789..." },
                { NULL, 10, "" },
                { "\r\n", 0, "..." },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *s = string_one_line(cases[i].in, cases[i].max);
                assert_string_equal(s, cases[i].out);
        }
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

static bool all_zero(const void *p, size_t n) {
        const uint8_t *b = p;
        for (size_t i = 0; i < n; i++)
                if (b[i] != 0)
                        return false;
        return true;
}

/* The erasing helpers every secret goes through (headers with Authorization or a session token, the
 * canonical request, IMDS documents, key files). What happens after free() cannot be observed without
 * undefined behaviour, so the in-place half is checked on live memory and the freeing half under ASan. */
static void test_erase(void **state) {
        char *s = strdup("AWS4-HMAC-SHA256 Credential=AKID/20150830, Signature=0123abcd");
        assert_non_null(s);
        size_t n = strlen(s);
        string_erase(s);
        assert_true(all_zero(s, n + 1));
        assert_null(string_free_erase(s));
        assert_null(string_free_erase(NULL));
        string_erase(NULL);

        _cleanup_strv_free_ char **l = NULL;
        assert_int_equal(strv_extend(&l, "X-Amz-Security-Token: tok/+=="), 0);
        assert_int_equal(strv_extend(&l, ""), 0);
        assert_int_equal(strv_extend(&l, "Authorization: AWS4-HMAC-SHA256 ..."), 0);
        size_t lens[3] = { strlen(l[0]), 0, strlen(l[2]) };
        strv_erase(l);
        for (size_t i = 0; i < 3; i++)
                assert_true(all_zero(l[i], lens[i] + 1));
        assert_int_equal(strv_length(l), 3); /* the vector itself is intact until freed */
        strv_erase(NULL);

        char **m = strv_copy(l);
        assert_null(strv_free_erase(m));
        assert_null(strv_free_erase(NULL));
        {
                _cleanup_strv_free_erase_ char **k = strv_copy(l);
                _cleanup_erase_free_ char *t = strdup("token");
                assert_non_null(k);
                assert_non_null(t);
        }
        uint8_t *key = malloc(32);
        assert_non_null(key);
        memset(key, 0xa5, 32);
        erase_and_free(key, 32);
        erase_and_free(NULL, 32);
}

/* A secret Buf keeps its contents through growth (copied by hand, not realloc'ed), honours its cap, and
 * zeroes what buf_reset() drops. */
static void test_buf_secret(void **state) {
        _cleanup_buf_ Buf b;
        char chunk[1000];
        memset(chunk, 'S', sizeof(chunk));
        buf_init_secret(&b, 20000);
        assert_true(b.secret);
        for (unsigned i = 0; i < 12; i++)
                assert_int_equal(buf_add(&b, chunk, sizeof(chunk)), 0);
        assert_int_equal(buf_printf(&b, "|%s|", "token"), 0);
        assert_int_equal(b.len, 12007);
        assert_true(b.alloc >= b.len + 1);
        for (size_t i = 0; i < 12000; i++)
                assert_int_equal(b.data[i], 'S');
        assert_memory_equal(b.data + 12000, "|token|", 8);
        assert_int_equal(buf_add(&b, chunk, sizeof(chunk) * 8), PK_ETOOBIG);
        assert_int_equal(b.len, 12007);

        size_t len = b.len;
        buf_reset(&b);
        assert_int_equal(b.len, 0);
        assert_true(all_zero(b.data, len));

        assert_int_equal(buf_add_str(&b, "secret"), 0);
        char *s = buf_steal_str(&b);
        assert_string_equal(s, "secret");
        assert_true(b.secret); /* still a secret buffer for what comes next */
        assert_null(b.data);
        string_free_erase(s);
        assert_int_equal(buf_add_str(&b, "again"), 0);
}

/* Key and credential files: read whole across several growths, capped, nothing left behind on failure. */
static void test_read_secret(void **state) {
        char path[] = "/tmp/test-basic-secret-XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        char *data = malloc(10000);
        assert_non_null(data);
        for (size_t i = 0; i < 10000; i++)
                data[i] = (char)('a' + i % 26);
        assert_int_equal(loop_write(fd, data, 10000), 0);
        close(fd);

        char *text = NULL;
        size_t len = 0;
        assert_int_equal(read_full_file_secret(path, 1 << 20, &text, &len), 0);
        assert_int_equal(len, 10000);
        assert_memory_equal(text, data, 10000);
        assert_int_equal(text[10000], 0);
        erase_and_free(text, len);
        text = NULL;
        assert_int_equal(read_full_file_secret(path, 9999, &text, &len), -EFBIG);
        assert_null(text);
        free(data);
        assert_int_equal(unlink(path), 0);
        assert_int_equal(read_full_file_secret(path, 1 << 20, &text, &len), -ENOENT);
        assert_null(text);
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

/* Only ENOENT is absence; a loop or a file in the way is an error, never "absent". */
static void test_dir_present(void **state) {
        char dir[] = "/tmp/pk-test-XXXXXX";
        assert_non_null(mkdtemp(dir));
        _cleanup_free_ char *sub = strjoin(dir, "/d"), *loop = strjoin(dir, "/loop"),
                            *file = strjoin(dir, "/f"), *under = strjoin(dir, "/f/x");
        assert_int_equal(dir_present(sub), 0);
        assert_int_equal(file_present(file), 0);
        assert_int_equal(mkdir(sub, 0755), 0);
        assert_int_equal(dir_present(sub), 1);
        assert_int_equal(symlink("loop", loop), 0);
        assert_int_equal(dir_present(loop), -ELOOP);
        assert_int_equal(write_file_atomic(file, "x", 1, 0644, 0), 1);
        assert_int_equal(dir_present(file), -ENOTDIR);
        assert_int_equal(dir_present(under), -ENOTDIR);
        assert_int_equal(file_present(file), 1);
        assert_int_equal(file_present(sub), -EBADFD);
        assert_int_equal(file_present(loop), -ELOOP);
        assert_int_equal(file_present(under), -ENOTDIR);
        unlink(file);
        unlink(loop);
        rmdir(sub);
        rmdir(dir);
}

/* One holder at a time: a second taker waits its bounded time, then learns who holds it; once the holder
 * exits (its fd closes with it) the lock is free. */
static void test_lock_file(void **state) {
        char dir[] = "/tmp/pk-test-XXXXXX";
        assert_non_null(mkdtemp(dir));
        _cleanup_free_ char *path = strjoin(dir, "/lock");
        int held[2], done[2]; /* child -> parent: the lock is held; parent -> child: let it go */
        assert_int_equal(pipe(held), 0);
        assert_int_equal(pipe(done), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                int fd = -1;
                char c;
                if (lock_file_take(path, 0, &fd, NULL) < 0 || write(held[1], "x", 1) != 1)
                        _exit(1);
                (void)!read(done[0], &c, 1);
                _exit(0);
        }
        char c;
        assert_int_equal(read(held[0], &c, 1), 1);
        int fd = -1;
        pid_t holder = 0;
        usec_t t0 = now(CLOCK_MONOTONIC);
        assert_int_equal(lock_file_take(path, 100 * USEC_PER_MSEC, &fd, &holder), -EBUSY);
        assert_true(now(CLOCK_MONOTONIC) - t0 >= 100 * USEC_PER_MSEC);
        assert_int_equal(holder, pid);
        assert_int_equal(write(done[1], "x", 1), 1);
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        assert_int_equal(lock_file_take(path, 0, &fd, &holder), 0);
        struct stat st;
        assert_int_equal(fstat(fd, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        close(fd);
        /* never through a symlink */
        _cleanup_free_ char *link = strjoin(dir, "/link");
        assert_int_equal(symlink(path, link), 0);
        assert_int_equal(lock_file_take(link, 0, &fd, NULL), -ELOOP);
        unlink(link);
        unlink(path);
        for (int i = 0; i < 2; i++) {
                close(held[i]);
                close(done[i]);
        }
        rmdir(dir);
}

/* The one backoff: doubling from base, capped at max; the jitter's number in [0, 1). */
static void test_backoff(void **state) {
        assert_int_equal(backoff_cap(200, 20000, 1), 200);
        assert_int_equal(backoff_cap(200, 20000, 2), 400);
        assert_int_equal(backoff_cap(200, 20000, 7), 12800);
        assert_int_equal(backoff_cap(200, 20000, 8), 20000);
        assert_int_equal(backoff_cap(200, 20000, 1000), 20000); /* no overflow: stops at the cap */
        assert_int_equal(backoff_cap(500, 100, 3), 500);        /* a cap below the base keeps the base */
        for (int i = 0; i < 1000; i++) {
                double x = backoff_random();
                assert_true(x >= 0 && x < 1);
        }
}

/* The store URL's names: one rule each for the spec's check and the store's open. */
static void test_s3_names(void **state) {
        assert_true(aws_bucket_name_valid("my.bucket-1", 11));
        assert_false(aws_bucket_name_valid("ab", 2));
        assert_false(aws_bucket_name_valid("-abc", 4));
        assert_false(aws_bucket_name_valid("abc.", 4));
        assert_false(aws_bucket_name_valid("ABC", 3));
        assert_false(aws_bucket_name_valid("a_b", 3));
        assert_true(aws_region_name_valid("eu-west-1"));
        assert_false(aws_region_name_valid("x#"));
        assert_false(aws_region_name_valid("-eu"));
        assert_false(aws_region_name_valid(""));
        assert_false(aws_region_name_valid(NULL));
}

/* RFC 3339 as Go's time.RFC3339 writes and reads it (kubeadm writes a token's expiration in local time). */
static void test_rfc3339(void **state) {
        char b[RFC3339_MAX];
        usec_t t;
        assert_string_equal(format_rfc3339(b, 1612325106ULL * USEC_PER_SEC), "2021-02-03T04:05:06Z");
        assert_int_equal(parse_rfc3339("2021-02-03T04:05:06Z", &t), 0);
        assert_int_equal(t, 1612325106ULL * USEC_PER_SEC);
        assert_int_equal(parse_rfc3339("2021-02-03t06:05:06+02:00", &t), 0);
        assert_int_equal(t, 1612325106ULL * USEC_PER_SEC);
        assert_int_equal(parse_rfc3339("2021-02-02T23:35:06-04:30", &t), 0);
        assert_int_equal(t, 1612325106ULL * USEC_PER_SEC);
        assert_int_equal(parse_rfc3339("2021-02-03T04:05:06.25z", &t), 0);
        assert_int_equal(t, 1612325106ULL * USEC_PER_SEC + 250000);
        assert_int_equal(parse_rfc3339("2024-02-29T00:00:00Z", &t), 0);
        const char *bad[] = { "2021-02-03 04:05:06Z",
                              "2021-02-03T04:05:06",
                              "2021-02-03T04:05:06+0200",
                              "2021-13-03T04:05:06Z",
                              "2021-02-30T04:05:06Z",
                              "2023-02-29T00:00:00Z",
                              "2021-02-03T24:00:00Z",
                              "2021-02-03T04:05:06.Z",
                              "1969-12-31T23:59:59Z",
                              "2021-02-03T04:05:06Zjunk",
                              "",
                              "2021-2-3T04:05:06Z" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (parse_rfc3339(bad[i], &t) != -EINVAL)
                        fail_msg("'%s' parsed", bad[i]);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_go_duration),    cmocka_unit_test(test_rfc3339),
                cmocka_unit_test(test_parse_duration), cmocka_unit_test(test_parse_numbers),
                cmocka_unit_test(test_strv),           cmocka_unit_test(test_strings),
                cmocka_unit_test(test_one_line),       cmocka_unit_test(test_buf_cap),
                cmocka_unit_test(test_atomic_write),   cmocka_unit_test(test_erase),
                cmocka_unit_test(test_buf_secret),     cmocka_unit_test(test_read_secret),
                cmocka_unit_test(test_dir_present),    cmocka_unit_test(test_lock_file),
                cmocka_unit_test(test_backoff),        cmocka_unit_test(test_s3_names),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
