/* SPDX-License-Identifier: Apache-2.0 */
/* etcd backups in a directory store: the snapshot check on synthetic snapshots (the real etcd's are in
 * tests/integration/test_etcd_backups.py), upload in parts, the claim, listing, download, deletion and the
 * retention plan. */
#include "unit-test.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backup/backup.h"
#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "shared/crypto.h"
#include "store/store.h"

#define DAY (86400ULL * USEC_PER_SEC)

typedef struct Fixture {
        char root[64];
        char work[64];
        Store *store;
} Fixture;

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
        (void)st, (void)flag, (void)f;
        return remove(p);
}

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(Fixture));
        char url[96];
        snprintf(f->root, sizeof(f->root), "/tmp/pk-backup-store-XXXXXX");
        snprintf(f->work, sizeof(f->work), "/tmp/pk-backup-work-XXXXXX");
        assert_non_null(mkdtemp(f->root));
        assert_non_null(mkdtemp(f->work));
        snprintf(url, sizeof(url), "file://%s", f->root);
        assert_int_equal(store_open(url, &f->store, NULL), 0);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;
        store_free(f->store);
        nftw(f->root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        nftw(f->work, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        free(f);
        return 0;
}

/* A file shaped like an etcd snapshot: pages starting with bbolt's meta page magic, then the SHA-256 of
 * the pages. Returns an fd open for reading and writing at offset 0. */
static int make_snapshot(const Fixture *f, const char *name, size_t pages, unsigned seed) {
        char path[128];
        snprintf(path, sizeof(path), "%s/%s", f->work, name);
        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        size_t len = pages * 4096;
        uint8_t *db = malloc(len), digest[32];
        for (size_t i = 0; i < len; i++)
                db[i] = (uint8_t)(i * 31 + seed);
        const uint8_t magic[4] = { 0xED, 0xDA, 0x0C, 0xED };
        memcpy(db + 16, magic, 4);
        CryptoSha256 *h;
        assert_int_equal(crypto_sha256_new(&h), 0);
        assert_int_equal(crypto_sha256_update(h, db, len), 0);
        assert_int_equal(crypto_sha256_final(h, digest), 0);
        crypto_sha256_free(h);
        assert_int_equal(loop_write(fd, db, len), 0);
        assert_int_equal(loop_write(fd, digest, sizeof(digest)), 0);
        assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
        free(db);
        return fd;
}

static void test_timestamps(void **state) {
        char ts[BACKUP_TIMESTAMP_LEN + 1];
        usec_t t;
        assert_int_equal(backup_timestamp_format(1795472100ULL * USEC_PER_SEC + 5, ts), 0);
        assert_string_equal(ts, "20261123T221500Z");
        assert_int_equal(backup_timestamp_parse(ts, &t), 0);
        assert_int_equal(t, 1795472100ULL * USEC_PER_SEC);
        assert_int_equal(backup_timestamp_parse("20261331T000000Z", &t), -EINVAL);
        assert_int_equal(backup_timestamp_parse("20261123T2215Z", &t), -EINVAL);
        assert_int_equal(backup_timestamp_parse("2026-11-23T22:15:00Z", &t), -EINVAL);
        assert_int_equal(backup_timestamp_parse("20261123t221500Z", &t), -EINVAL);
        assert_int_equal(backup_slot(1795472999ULL * USEC_PER_SEC, 900 * USEC_PER_SEC),
                         1795472100ULL * USEC_PER_SEC);
}

static void test_snapshot_check(void **state) {
        Fixture *f = *state;
        uint64_t size;
        char sha[BACKUP_SHA256_HEX], *err = NULL;
        int fd = make_snapshot(f, "good.db", 4, 1);
        assert_int_equal(backup_snapshot_check(fd, &size, sha, NULL), 0);
        assert_int_equal(size, 4 * 4096 + 32);
        assert_int_equal(strlen(sha), 64);

        /* one byte of the database changed: the trailer no longer matches */
        assert_int_equal(pwrite(fd, "x", 1, 5000), 1);
        assert_int_equal(backup_snapshot_check(fd, &size, sha, &err), PK_EMALFORMED);
        assert_non_null(strstr(err, "trailer does not match"));
        free(err), err = NULL;
        /* cut short: no trailer */
        assert_int_equal(ftruncate(fd, 4 * 4096 + 16), 0);
        assert_int_equal(backup_snapshot_check(fd, &size, sha, &err), PK_EMALFORMED);
        assert_non_null(strstr(err, "no SHA-256 trailer"));
        free(err), err = NULL;
        close(fd);

        fd = make_snapshot(f, "nomagic.db", 4, 2);
        assert_int_equal(pwrite(fd, "\0\0\0\0", 4, 16), 4);
        assert_int_equal(backup_snapshot_check(fd, &size, sha, &err), PK_EMALFORMED);
        assert_non_null(strstr(err, "bbolt"));
        free(err), err = NULL;
        assert_int_equal(ftruncate(fd, 100), 0);
        assert_int_equal(backup_snapshot_check(fd, &size, sha, &err), PK_EMALFORMED);
        free(err);
        close(fd);
}

static void test_upload_list_download(void **state) {
        Fixture *f = *state;
        char *err = NULL, path[128];
        /* two parts and a bit: 8 MiB + 3 pages */
        int fd = make_snapshot(f, "big.db", BACKUP_PART_SIZE / 4096 + 3, 3);
        assert_int_equal(backup_upload(f->store, "main", "20261123T221500Z", "master-a", fd, &err), 0);
        /* the same node again (a retry after a crash) goes on; another is refused, with the holder named */
        assert_int_equal(backup_upload(f->store, "main", "20261123T221500Z", "master-a", fd, NULL), 0);
        assert_int_equal(backup_upload(f->store, "main", "20261123T221500Z", "master-b", fd, &err), -EEXIST);
        assert_non_null(strstr(err, "taken by master-a"));
        free(err), err = NULL;

        /* an incomplete backup: its taker died after the claim */
        char *k = "backups/main/20261123T223000Z/claim";
        assert_int_equal(store_put_if_absent(f->store, k, "master-c", 8, 0, NULL), 0);

        BackupEntry *e;
        size_t n;
        assert_int_equal(backup_list(f->store, "main", &e, &n, NULL), 0);
        assert_int_equal(n, 2);
        assert_string_equal(e[0].timestamp, "20261123T221500Z");
        assert_true(e[0].complete);
        assert_int_equal(e[0].size, BACKUP_PART_SIZE + 3 * 4096 + 32);
        assert_int_equal(e[0].parts, 2);
        assert_string_equal(e[0].node, "master-a");
        assert_false(e[1].complete);
        assert_ptr_equal(backup_newest(e, n), &e[0]); /* the incomplete one is newer but not a backup */
        assert_null(backup_newest(e + 1, 1));
        backup_entries_free(e, n);

        snprintf(path, sizeof(path), "%s/restored.db", f->work);
        int out = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_int_equal(backup_download(f->store, "main", "20261123T221500Z", out, &err), 0);
        uint64_t a, b;
        char sa[BACKUP_SHA256_HEX], sb[BACKUP_SHA256_HEX];
        assert_int_equal(backup_snapshot_check(fd, &a, sa, NULL), 0);
        assert_int_equal(backup_snapshot_check(out, &b, sb, NULL), 0);
        assert_int_equal(a, b);
        assert_string_equal(sa, sb);
        close(out);
        assert_int_equal(backup_download(f->store, "main", "20261123T223000Z", out, NULL), -ENOENT);

        /* a part changed in the store: the download says so */
        assert_int_equal(store_put(f->store, "backups/main/20261123T221500Z/part-00001", "junk", 4, 0, NULL),
                         0);
        out = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_int_equal(backup_download(f->store, "main", "20261123T221500Z", out, &err), PK_EMALFORMED);
        assert_non_null(strstr(err, "do not match its manifest"));
        free(err), err = NULL;
        close(out);

        assert_int_equal(backup_delete(f->store, "main", "20261123T221500Z", NULL), 0);
        assert_int_equal(backup_list(f->store, "main", &e, &n, NULL), 0);
        assert_int_equal(n, 1);
        backup_entries_free(e, n);
        close(fd);
}

static void test_bad_snapshot_never_stored(void **state) {
        Fixture *f = *state;
        char *err = NULL, **keys = NULL;
        int fd = make_snapshot(f, "bad.db", 4, 4);
        assert_int_equal(pwrite(fd, "y", 1, 9000), 1);
        assert_int_equal(backup_upload(f->store, "main", "20261123T221500Z", "a", fd, &err), PK_EMALFORMED);
        free(err);
        assert_int_equal(store_list(f->store, "", &keys, NULL), 0);
        assert_null(keys[0]);
        free(keys);
        close(fd);
}

static BackupEntry at(usec_t t, bool complete) {
        BackupEntry e = { .time = t, .complete = complete };
        return e;
}

static void test_retention(void **state) {
        BackupRetention r = { .keep_last = 3,
                              .keep_daily_days = 3,
                              .incomplete_grace = 3600 * USEC_PER_SEC };
        usec_t now = 100 * DAY + 12 * 3600 * USEC_PER_SEC; /* noon of day 100 */
        BackupEntry e[] = {
                at(95 * DAY + 10, true),            /* 0: older than the daily window: delete */
                at(98 * DAY + 10, true),            /* 1: day 98, an older one of the day: delete */
                at(98 * DAY + 20, true),            /* 2: day 98's newest: keep (daily) */
                at(99 * DAY + 10, true),            /* 3: day 99's newest: keep (daily) */
                at(100 * DAY + 10, false),          /* 4: incomplete, 12 h old: delete */
                at(100 * DAY + 1000, true),         /* 5: keep (last 3) */
                at(100 * DAY + 2000, true),         /* 6: keep (last 3) */
                at(now - 60 * USEC_PER_SEC, false), /* 7: incomplete, a minute old: in progress, keep */
                at(100 * DAY + 3000, true),         /* 8: keep (last 3) */
        };
        bool *del;
        assert_int_equal(backup_retention_plan(e, ELEMENTSOF(e), &r, now, &del), 0);
        bool want[] = { true, true, false, false, true, false, false, false, false };
        for (size_t i = 0; i < ELEMENTSOF(e); i++)
                assert_int_equal(del[i], want[i]);
        free(del);

        /* keep nothing by count or day: the newest complete backup still stays */
        BackupRetention none = {};
        assert_int_equal(backup_retention_plan(e, ELEMENTSOF(e), &none, now, &del), 0);
        assert_false(del[8]);
        assert_true(del[6]);
        free(del);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_timestamps),
                cmocka_unit_test_setup_teardown(test_snapshot_check, setup, teardown),
                cmocka_unit_test_setup_teardown(test_upload_list_download, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bad_snapshot_never_stored, setup, teardown),
                cmocka_unit_test(test_retention),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
