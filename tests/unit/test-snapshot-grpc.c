/* SPDX-License-Identifier: Apache-2.0 */
/* etcd's gRPC snapshot stream decoded: recorded answers of etcd 3.4.23 and 3.5.16 (tests/vectors/
 * etcd-snapshot) in pieces of awkward sizes; a small stream with every kind of field split at every byte
 * boundary, in two and in three pieces; and each way a stream is refused. The recorded answers are also
 * checked as they pass (on_blob, backup_snapshot_sum_update()) against backup_snapshot_check(). */
#include "unit-test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backup/backup.h"
#include "backup/snapshot-grpc.h"
#include "basic/errors.h"
#include "basic/macro.h"
#include "vectors.h"

/* Decodes data fed at the cut points cuts[0..n) (ascending) into a memory file; returns the file, its
 * offset at the end of what was written. */
static int decode_cuts(const void *data, size_t len, const size_t *cuts, size_t n, int expect,
                       char **ret_error) {
        int fd = memfd_create("snap", MFD_CLOEXEC);
        SnapshotGrpc d;
        uint64_t written = 0;
        size_t at = 0;
        int r = 0;
        assert_true(fd >= 0);
        snapshot_grpc_init(&d, fd);
        for (size_t i = 0; i <= n && r >= 0; i++) {
                size_t end = i < n ? cuts[i] : len;
                r = snapshot_grpc_feed(&d, (const uint8_t *)data + at, end - at, ret_error);
                at = end;
        }
        if (r >= 0)
                r = snapshot_grpc_finish(&d, &written, ret_error);
        assert_int_equal(r, expect);
        if (r >= 0)
                assert_int_equal(lseek(fd, 0, SEEK_CUR), (off_t)written);
        return fd;
}

static int sum_blob(const void *data, size_t len, void *userdata) {
        return backup_snapshot_sum_update(userdata, data, len);
}

/* Decodes data fed in pieces of step bytes into a memory file (returned), the blobs also into sum unless
 * it is NULL. */
static int decode_sum(const void *data, size_t len, size_t step, BackupSnapshotSum *sum, int expect,
                      char **ret_error) {
        int fd = memfd_create("snap", MFD_CLOEXEC);
        SnapshotGrpc d;
        uint64_t written;
        int r = 0;
        assert_true(fd >= 0);
        snapshot_grpc_init(&d, fd);
        d.on_blob = sum ? sum_blob : NULL;
        d.userdata = sum;
        for (size_t off = 0; off < len && r >= 0; off += step)
                r = snapshot_grpc_feed(&d, (const uint8_t *)data + off, MIN(step, len - off), ret_error);
        if (r >= 0)
                r = snapshot_grpc_finish(&d, &written, ret_error);
        assert_int_equal(r, expect);
        return fd;
}

static int decode(const void *data, size_t len, size_t step, int expect, char **ret_error) {
        return decode_sum(data, len, step, NULL, expect, ret_error);
}

/* The recorded answers, and the check as their blobs pass (backup_snapshot_sum_update()), which must say
 * what backup_snapshot_check() says of the file written. */
static void test_recorded(void **state) {
        const char *names[] = { "etcd-snapshot/grpc-3.4.23.bin", "etcd-snapshot/grpc-3.5.16.bin" };
        char *data[2];
        size_t len[2];
        vectors_read(names, 2, data, len);
        for (size_t v = 0; v < 2; v++) {
                const size_t steps[] = { 1, 3, 7, 31, 33, 4096, 4097, 16384, len[v] };
                for (size_t i = 0; i < ELEMENTSOF(steps); i++) {
                        BackupSnapshotSum sum;
                        assert_int_equal(backup_snapshot_sum_init(&sum), 0);
                        int fd = decode_sum(data[v], len[v], steps[i], &sum, 0, NULL);
                        uint64_t size, sum_size;
                        char sha[BACKUP_SHA256_HEX], sum_sha[BACKUP_SHA256_HEX];
                        assert_int_equal(backup_snapshot_check(fd, &size, sha, NULL), 0);
                        assert_int_equal(size, 20512);
                        assert_int_equal(backup_snapshot_sum_finish(&sum, &sum_size, sum_sha, NULL), 0);
                        assert_int_equal(sum_size, size);
                        assert_string_equal(sum_sha, sha);
                        backup_snapshot_sum_done(&sum);
                        close(fd);
                }
        }
        free(data[0]);
        free(data[1]);
}

/* Two messages with every kind of field: header (skipped), remaining_bytes, blob, version (3.5), and
 * unknown fields of wire types 0, 1, 2 and 5 (a later etcd's); blobs "abc" and "defg". */
static const uint8_t small[] = {
        0,    0,    0,    0,    30,                 /* message 1: 30 bytes */
        0x0a, 3,    0x08, 0x96, 0x01,               /* header {cluster_id: 150}, skipped */
        0x10, 0xe7, 0x07,                           /* remaining_bytes: 999 */
        0x1a, 3,    'a',  'b',  'c',                /* blob */
        0x22, 3,    '3',  '.',  '5',                /* version */
        0x28, 0xff, 0x01,                           /* field 5, varint */
        0x31, 1,    2,    3,    4,    5,   6, 7, 8, /* field 6, fixed64 */
        0,    0,    0,    0,    0,                  /* an empty message */
        0,    0,    0,    0,    19,                 /* message 3 */
        0x3a, 2,    'x',  'y',                      /* field 7, bytes */
        0x45, 1,    2,    3,    4,                  /* field 8, fixed32 */
        0x1a, 4,    'd',  'e',  'f',  'g',          /* blob */
        0x10, 0x00,                                 /* remaining_bytes: 0, written out */
        0x1a, 0,                                    /* an empty blob */
};

static void check_small(int fd) {
        char got[16] = {};
        assert_int_equal(pread(fd, got, sizeof(got), 0), 7);
        assert_memory_equal(got, "abcdefg", 7);
        close(fd);
}

static void test_every_split(void **state) {
        assert_int_equal(sizeof(small), 5 + 30 + 5 + 5 + 19); /* the table's lengths add up */
        for (size_t a = 0; a <= sizeof(small); a++) {
                size_t cut[1] = { a };
                check_small(decode_cuts(small, sizeof(small), cut, 1, 0, NULL));
                for (size_t b = a; b <= sizeof(small); b++) {
                        size_t cuts[2] = { a, b };
                        check_small(decode_cuts(small, sizeof(small), cuts, 2, 0, NULL));
                }
        }
        check_small(decode(small, sizeof(small), 1, 0, NULL));
}

/* data (a whole stream) must fail with expect and a message holding what. */
static void refused(const uint8_t *data, size_t len, int expect, const char *what) {
        const size_t steps[] = { 1, len ?: 1 };
        for (size_t i = 0; i < ELEMENTSOF(steps); i++) {
                char *err = NULL;
                close(decode(data, len, steps[i], expect, &err));
                assert_non_null(err);
                if (!strstr(err, what))
                        fail_msg("'%s' does not say '%s'", err, what);
                free(err);
        }
}

static void test_refusals(void **state) {
        refused((const uint8_t[]){ 1, 0, 0, 0, 2, 0x10, 0 }, 7, PK_EMALFORMED, "compressed");
        refused((const uint8_t[]){ 2, 0, 0, 0, 2, 0x10, 0 }, 7, PK_EMALFORMED, "compressed flag");
        refused((const uint8_t[]){ 0, 0, 0x40, 0, 1, 0 }, 6, PK_ETOOBIG, "exceeds");
        refused((const uint8_t[]){ 0, 0xff, 0xff, 0xff, 0xff }, 5, PK_ETOOBIG, "exceeds");
        /* a varint cut by its message's end, and one of 11 bytes */
        refused((const uint8_t[]){ 0, 0, 0, 0, 2, 0x10, 0x80, 0, 0, 0, 0, 0 }, 12, PK_EMALFORMED,
                "truncated varint");
        refused((const uint8_t[]){ 0, 0, 0, 0, 12, 0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                   0xff, 0x7f, 0 },
                17, PK_EMALFORMED, "overflows");
        /* a tag past 64 bits */
        refused(
            (const uint8_t[]){ 0, 0, 0, 0, 10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02 },
            15, PK_EMALFORMED, "overflows");
        /* blob as a varint, remaining_bytes as bytes, header as fixed32 */
        refused((const uint8_t[]){ 0, 0, 0, 0, 2, 0x18, 1 }, 7, PK_EMALFORMED, "wrong type");
        refused((const uint8_t[]){ 0, 0, 0, 0, 3, 0x12, 1, 1 }, 8, PK_EMALFORMED, "wrong type");
        refused((const uint8_t[]){ 0, 0, 0, 0, 5, 0x0d, 1, 2, 3, 4 }, 10, PK_EMALFORMED, "wrong type");
        /* groups, wire types that do not exist, field 0 */
        refused((const uint8_t[]){ 0, 0, 0, 0, 1, 0x2b }, 6, PK_EMALFORMED, "unknown wire type");
        refused((const uint8_t[]){ 0, 0, 0, 0, 1, 0x2e }, 6, PK_EMALFORMED, "unknown wire type");
        refused((const uint8_t[]){ 0, 0, 0, 0, 2, 0x00, 0 }, 7, PK_EMALFORMED, "bad field number");
        /* fields past their message's end */
        refused((const uint8_t[]){ 0, 0, 0, 0, 3, 0x1a, 5, 'a', 'b', 'c', 'd', 'e' }, 12, PK_EMALFORMED,
                "runs past");
        refused((const uint8_t[]){ 0, 0, 0, 0, 3, 0x31, 1, 2, 0, 0, 0, 0, 0, 0 }, 14, PK_EMALFORMED,
                "truncated fixed-size");
        refused((const uint8_t[]){ 0, 0, 0, 0, 1, 0x10, 0, 0, 0, 0, 0 }, 11, PK_EMALFORMED,
                "without its value");
        /* ends: inside a prefix, inside a message, before any, with bytes still to come */
        refused((const uint8_t[]){ 0, 0, 0, 0, 2, 0x10, 0, 0, 0 }, 9, PK_EMALFORMED, "ends inside");
        refused((const uint8_t[]){ 0, 0, 0, 0, 5, 0x1a, 3, 'a' }, 8, PK_EMALFORMED, "ends inside");
        refused((const uint8_t[]){ 0 }, 0, PK_EMALFORMED, "empty");
        refused((const uint8_t[]){ 0, 0, 0, 0, 5, 0x10, 7, 0x1a, 1, 'a' }, 10, PK_EMALFORMED,
                "7 bytes still");
}

static int refuse_blob(const void *data, size_t len, void *userdata) {
        (void)data, (void)len, (void)userdata;
        return -EIO;
}

/* After an error the decoder stays failed, and writes nothing more; an error of on_blob is one too. */
static void test_sticky_error(void **state) {
        int fd = memfd_create("snap", MFD_CLOEXEC);
        SnapshotGrpc d;
        char *err = NULL;
        uint64_t written;
        snapshot_grpc_init(&d, fd);
        assert_int_equal(snapshot_grpc_feed(&d, (const uint8_t[]){ 1, 0, 0, 0, 0 }, 5, &err), PK_EMALFORMED);
        free(err), err = NULL;
        assert_int_equal(snapshot_grpc_feed(&d, small, sizeof(small), &err), PK_EMALFORMED);
        free(err), err = NULL;
        assert_int_equal(snapshot_grpc_finish(&d, &written, &err), PK_EMALFORMED);
        free(err), err = NULL;
        assert_int_equal(lseek(fd, 0, SEEK_CUR), 0);

        snapshot_grpc_init(&d, fd);
        d.on_blob = refuse_blob;
        assert_int_equal(snapshot_grpc_feed(&d, small, sizeof(small), &err), -EIO);
        assert_non_null(strstr(err, "checking the snapshot"));
        free(err), err = NULL;
        assert_int_equal(snapshot_grpc_finish(&d, &written, &err), -EIO);
        free(err);
        close(fd);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_recorded),
                cmocka_unit_test(test_every_split),
                cmocka_unit_test(test_refusals),
                cmocka_unit_test(test_sticky_error),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
