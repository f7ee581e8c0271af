/* SPDX-License-Identifier: Apache-2.0 */
/* The snapshot stream of etcd's JSON gateway, decoded from a recorded body of etcd 3.4.23
 * (tests/vectors/etcd-snapshot) fed in pieces of every awkward size; etcd's refusals; a broken stream. */
#include "unit-test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backup/backup-snapshot.h"
#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "vectors.h"

static char *vector(const char *name, size_t *ret_len) {
        const char *names[] = { name };
        char *text;
        vectors_read(names, 1, &text, ret_len);
        return text;
}

/* Decodes text fed in pieces of step bytes into a memory file; returns the file. */
static int decode(const char *text, size_t len, size_t step, int expect, char **ret_error) {
        int fd = memfd_create("snap", MFD_CLOEXEC);
        BackupStream *s;
        uint64_t written;
        int r = 0;
        assert_true(fd >= 0);
        assert_int_equal(backup_stream_new(fd, &s), 0);
        for (size_t off = 0; off < len && r >= 0; off += step)
                r = backup_stream_feed(s, text + off, len - off < step ? len - off : step, ret_error);
        if (r >= 0)
                r = backup_stream_finish(s, &written, ret_error);
        backup_stream_free(s);
        assert_int_equal(r, expect);
        return fd;
}

static void test_recorded_stream(void **state) {
        size_t len;
        _cleanup_free_ char *text = vector("etcd-snapshot/stream-3.4.23.jsonl", &len);
        const size_t steps[] = { 1, 7, 4096, 44000, len };
        for (size_t i = 0; i < ELEMENTSOF(steps); i++) {
                int fd = decode(text, len, steps[i], 0, NULL);
                uint64_t size;
                char sha[BACKUP_SHA256_HEX];
                assert_int_equal(backup_snapshot_check(fd, &size, sha, NULL), 0);
                assert_int_equal(size, 24608);
                close(fd);
        }
        /* without its final newline the last message still counts */
        int fd = decode(text, len - 1, 1000, 0, NULL);
        close(fd);
}

static void test_refusals(void **state) {
        size_t len;
        char *err = NULL;
        _cleanup_free_ char *text = vector("etcd-snapshot/refused-3.4.23.json", &len);
        close(decode(text, len, 5, -EIO, &err));
        assert_non_null(strstr(err, "etcd refused the snapshot: unexpected EOF"));
        free(err), err = NULL;

        const char *mid =
            "{\"result\":{\"blob\":\"AAAA\"}}\n{\"error\":{\"grpc_code\":14,\"message\":\"etcdserver: "
            "leader changed\"}}\n";
        close(decode(mid, strlen(mid), 3, -EIO, &err));
        assert_non_null(strstr(err, "leader changed"));
        free(err), err = NULL;

        /* the blob cut out of the text must be result's: a blob elsewhere, a quote in it, a broken rest */
        const char *junk[] = { "{\"result\":{\"blob\":\"!!!\"}}\n",
                               "{\"result\":{\"blob\":7}}\n",
                               "[1,2]\n",
                               "not json\n",
                               "",
                               "{\"result\":{},\"x\":{\"blob\":\"AAAA\"}}\n",
                               "{\"result\":{\"blob\":\"AA\"AA\"}}\n",
                               "{\"result\":{\"blob\":\"AAAA\"}\n",
                               "{\"result\":{\"blob\":\"AAAA" };
        for (size_t i = 0; i < ELEMENTSOF(junk); i++) {
                close(decode(junk[i], strlen(junk[i]), 2, PK_EMALFORMED, &err));
                assert_non_null(strstr(err, "snapshot stream"));
                free(err), err = NULL;
        }
}

static void test_message_cap(void **state) {
        size_t len = BACKUP_STREAM_LINE_MAX + 10;
        char *big = malloc(len), *err = NULL;
        memset(big, 'A', len);
        close(decode(big, len, 1U << 20, PK_ETOOBIG, &err));
        assert_non_null(strstr(err, "exceeds"));
        free(err);
        free(big);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_recorded_stream),
                cmocka_unit_test(test_refusals),
                cmocka_unit_test(test_message_cap),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
