/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "shared/yaml-tree.h"
#include "unit-test.h"

static void test_json_escape_append(void **state) {
        char b[64] = "x";
        size_t n = 1;

        assert_true(json_escape_append(b, sizeof(b), &n, "a\"b\\c\nd\te\x01\x7f"));
        assert_string_equal(b, "xa\\\"b\\\\c\\nd\\te\\u0001\\u007f");
        assert_int_equal(n, strlen(b));

        /* Into 8 bytes (7 and the NUL): an escape that does not fit whole is left out, and so is everything
         * after it; a UTF-8 character is never cut ("é" is 2 bytes, "€" 3). */
        static const struct {
                const char *in, *out;
                bool fits;
        } cases[] = {
                { "abcdef\"g", "abcdef", false },
                { "abc\x01", "abc", false },
                { "abcdef\xc3\xa9", "abcdef", false },
                { "abcde\xe2\x82\xac", "abcde", false },
                { "ab\xe2\x82\xac", "ab\xe2\x82\xac", true },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char s[8] = "";
                n = 0;
                assert_int_equal(json_escape_append(s, sizeof(s), &n, cases[i].in), cases[i].fits);
                assert_string_equal(s, cases[i].out);
        }
}

/* Logs one line with stderr on a SOCK_SEQPACKET socket, where every write is one message: what one recv
 * returns is what one write wrote. Returns the first message. */
static char *log_one_line(int error, const char *msg) {
        int sv[2], saved = dup(STDERR_FILENO);
        assert_true(saved >= 0);
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        assert_true(dup2(sv[1], STDERR_FILENO) >= 0);
        log_set_format(LOG_FORMAT_JSON);
        log_full_errno(LOG_LEVEL_WARNING, error, "%s", msg);
        log_set_format(LOG_FORMAT_TEXT);
        assert_true(dup2(saved, STDERR_FILENO) >= 0);
        close(saved);
        close(sv[1]);
        char *line = calloc(1, 64 * 1024);
        assert_non_null(line);
        ssize_t k = recv(sv[0], line, 64 * 1024 - 1, MSG_DONTWAIT);
        close(sv[0]);
        assert_true(k > 0);
        return line;
}

static const char *scalar(const YamlNode *doc, const char *key) {
        const YamlNode *v = yaml_tree_get(doc, key);
        assert_non_null(v);
        assert_int_equal(v->kind, YAML_TREE_SCALAR);
        return v->value;
}

static void test_json_line_is_one_write(void **state) {
        const char *msg = "Volume 'vol-\"a\"' (/dev/loop0)\nis\tblank \xe2\x82\xac \x01";
        _cleanup_free_ char *line = log_one_line(-EBUSY, msg);
        size_t len = strlen(line);
        assert_true(len > 2 && line[len - 1] == '\n' && line[len - 2] == '}');

        _cleanup_(yaml_tree_freep) YamlNode *doc = NULL;
        assert_int_equal(yaml_tree_parse(line, len, YAML_TREE_REJECT_DUPLICATES, &doc, NULL), 0);
        assert_string_equal(scalar(doc, "msg"), msg);
        assert_string_equal(scalar(doc, "level"), "warning");
        assert_string_equal(scalar(doc, "error"), pk_strerror(-EBUSY));
}

/* A message that escapes past the line's room is cut, says so, and the line stays whole and valid. */
static void test_long_json_line_is_cut_whole(void **state) {
        char msg[4000];
        memset(msg, '\x02', sizeof(msg) - 1); /* 6 bytes each escaped: 24,000 */
        msg[sizeof(msg) - 1] = 0;
        _cleanup_free_ char *line = log_one_line(-ENOENT, msg);
        size_t len = strlen(line);
        assert_true(len < 8192);
        assert_true(line[len - 1] == '\n');

        _cleanup_(yaml_tree_freep) YamlNode *doc = NULL;
        assert_int_equal(yaml_tree_parse(line, len, YAML_TREE_REJECT_DUPLICATES, &doc, NULL), 0);
        const char *got = scalar(doc, "msg");
        assert_true(strlen(got) > 1000);
        assert_true(endswith(got, "\x02 [truncated]"));
        assert_string_equal(scalar(doc, "error"), pk_strerror(-ENOENT));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_json_escape_append),
                cmocka_unit_test(test_json_line_is_one_write),
                cmocka_unit_test(test_long_json_line_is_cut_whole),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
