/* SPDX-License-Identifier: Apache-2.0 */
/* The state store: key rules, URLs, and the directory provider end to end in a temp dir (the S3 provider
 * runs the same scenarios in tests/integration/test_store.py, against the AWS double). */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "gce-double.h"
#include "store/store.h"
#include "unit-test.h"

static void *mfree(void *p) {
        free(p);
        return NULL;
}

typedef struct Dirs {
        char root[64];    /* the store */
        char outside[64]; /* where planted symlinks point */
        char url[96];
} Dirs;

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
        return remove(p);
}

static int setup(void **state) {
        Dirs *d = calloc(1, sizeof(Dirs));
        snprintf(d->root, sizeof(d->root), "/tmp/pk-store-XXXXXX");
        snprintf(d->outside, sizeof(d->outside), "/tmp/pk-outside-XXXXXX");
        assert_non_null(mkdtemp(d->root));
        assert_non_null(mkdtemp(d->outside));
        snprintf(d->url, sizeof(d->url), "file://%s", d->root);
        *state = d;
        return 0;
}

static int teardown(void **state) {
        Dirs *d = *state;
        assert_int_equal(nftw(d->root, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
        assert_int_equal(nftw(d->outside, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
        free(d);
        return 0;
}

static void test_key_valid(void **state) {
        const char *good[] = { "a", "pki/ca/cluster.crt", "backups/etcd-main/2026-01-01T00_00.db", "A-b_c.d",
                               "x/y..z" };
        const char *bad[] = { "",       "/abs",      "a/",      "a//b",   ".",      "..",
                              "a/../b", "a/./b",     ".hidden", "a/.tmp", "sp ace", "a\\b",
                              "a:b",    "new\nline", "ümlaut",  "a?b",    "%2e%2e" };
        for (size_t i = 0; i < ELEMENTSOF(good); i++)
                assert_true(store_key_valid(good[i]));
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                if (store_key_valid(bad[i]))
                        fail_msg("'%s' accepted", bad[i]);
        }
        char long_key[1100];
        memset(long_key, 'k', sizeof(long_key));
        long_key[1024] = 0;
        assert_true(store_key_valid(long_key));
        long_key[1024] = 'k';
        long_key[1025] = 0;
        assert_false(store_key_valid(long_key));
        assert_false(store_key_valid(NULL));
}

static void expect_open_error(const char *url, int want, const char *in_message) {
        Store *s = NULL;
        char *err = NULL;
        int r = store_open(url, &s, &err);
        if (r != want)
                fail_msg("store_open('%s') = %d, want %d (%s)", url, r, want, strnull(err));
        assert_null(s);
        assert_non_null(err);
        if (!strstr(err, url) || !strstr(err, in_message))
                fail_msg("message for '%s' is '%s', wanted the URL and '%s'", url, err, in_message);
        free(err);
}

static void test_url_parsing(void **state) {
        Dirs *d = *state;
        _cleanup_free_ char *missing = strprintf("file://%s/missing", d->root);
        _cleanup_free_ char *file_url = strprintf("file://%s/plain", d->root);
        assert_int_equal(write_file_atomic(file_url + 7, "x", 1, 0644, false), 1);

        /* refused before anything is opened or asked: -EINVAL, naming the URL and what is wrong with it */
        static const struct {
                const char *url, *in_message;
        } invalid[] = {
                { "http://example.com/x", "unknown scheme" },
                { "file://relative/dir", "ABSOLUTE" },
                { "file:///srv/../etc", "ABSOLUTE" },
                { "s3://", "bucket name" },
                { "s3://ab", "bucket name" },
                { "s3://Bucket", "bucket name" },
                { "s3://bucket_x/p", "bucket name" },
                { "s3://bucket/../p", "invalid prefix" },
                { "s3://bucket/a//b", "invalid prefix" },
                /* the bucket's region: ?region=REGION only, checked before any request */
                { "s3://bucket/p?region=EU-WEST-1", "invalid region 'EU-WEST-1'" },
                { "s3://bucket?region=", "invalid region ''" },
                { "s3://bucket/p?region=eu-west-1&x=y", "invalid region 'eu-west-1&x=y'" },
                { "s3://bucket/p?endpoint=x", "unknown parameter 'endpoint=x'" },
                { "s3://bucket/p?", "unknown parameter ''" },
                { "s3://bucket?region=eu-west-1/p", "invalid region 'eu-west-1/p'" },
                { "s3://b?region=eu-west-1", "bucket name" },
                /* gs://BUCKET[/PREFIX]: Cloud Storage's bucket names, no parameters */
                { "gs://", "bucket name" },
                { "gs://Bucket/p", "bucket name" },
                { "gs://goog-state", "bucket name" },
                { "gs://bucket?x=y", "bucket name" },
                { "gs://bucket/../p", "invalid prefix" },
                { "gs://bucket/a//b", "invalid prefix" },
        };
        for (size_t i = 0; i < ELEMENTSOF(invalid); i++)
                expect_open_error(invalid[i].url, -EINVAL, invalid[i].in_message);
        expect_open_error(missing, -ENOENT, "not created");
        expect_open_error(file_url, -ENOTDIR, "plain");

        Store *s = NULL;
        char *err = NULL;
        _cleanup_free_ char *slash = strjoin(d->url, "/");
        assert_int_equal(store_open(slash, &s, &err), 0);
        assert_string_equal(store_url(s), slash);
        store_free(s);
}

static mode_t mode_of(const Dirs *d, const char *key) {
        _cleanup_free_ char *p = strprintf("%s/%s", d->root, key);
        struct stat st;
        assert_int_equal(lstat(p, &st), 0);
        return st.st_mode & 07777;
}

static void test_file_end_to_end(void **state) {
        Dirs *d = *state;
        _cleanup_(store_freep) Store *s = NULL;
        char *err = NULL, *data = NULL;
        size_t len = 0;

        assert_int_equal(store_open(d->url, &s, &err), 0);
        assert_int_equal(store_get(s, "pki/ca/cluster.crt", &data, &len, &err), -ENOENT);
        assert_non_null(strstr(err, "pki/ca/cluster.crt"));
        err = mfree(err);

        /* put-if-absent: the first wins, the second gets -EEXIST and the first object stays; a plain
         * -EEXIST has no message (one says the store did not honour the condition) */
        assert_int_equal(store_put_if_absent(s, "pki/ca/cluster.key", "KEY1", 4, STORE_PRIVATE, &err), 0);
        assert_int_equal(store_put_if_absent(s, "pki/ca/cluster.key", "KEY2", 4, STORE_PRIVATE, &err),
                         -EEXIST);
        assert_null(err);
        assert_int_equal(store_get(s, "pki/ca/cluster.key", &data, &len, &err), 0);
        assert_int_equal(len, 4);
        assert_memory_equal(data, "KEY1", 4);
        data = mfree(data);
        assert_int_equal(mode_of(d, "pki/ca/cluster.key"), 0600);

        assert_int_equal(store_put_if_absent(s, "pki/ca/cluster.crt", "CERT", 4, 0, &err), 0);
        assert_int_equal(mode_of(d, "pki/ca/cluster.crt"), 0644);

        /* put replaces, with the mode of the new flags; empty objects are objects */
        assert_int_equal(store_put(s, "pki/ca/cluster.crt", "CERT-2", 6, 0, &err), 0);
        assert_int_equal(store_get(s, "pki/ca/cluster.crt", &data, &len, &err), 0);
        assert_int_equal(len, 6);
        assert_memory_equal(data, "CERT-2", 6);
        data = mfree(data);
        assert_int_equal(store_put(s, "pki/sa.key", "S", 1, STORE_PRIVATE, &err), 0);
        assert_int_equal(mode_of(d, "pki/sa.key"), 0600);
        assert_int_equal(store_put(s, "empty", "", 0, 0, &err), 0);
        assert_int_equal(store_get(s, "empty", &data, &len, &err), 0);
        assert_int_equal(len, 0);
        data = mfree(data);

        /* list: sorted, below the prefix, no temporaries or other files' names, nor the scratch key of the
         * open's create-if-absent probe (deleted, and its directory is the store's own) */
        _cleanup_free_ char *tmp = strprintf("%s/pki/.cluster.key.0123456789abcdef", d->root);
        assert_int_equal(write_file_atomic(tmp, "half", 4, 0600, false), 1);
        char **keys = NULL;
        assert_int_equal(store_list(s, "", &keys, &err), 0);
        _cleanup_free_ char *all = strv_join(keys, ",");
        assert_string_equal(all, "empty,pki/ca/cluster.crt,pki/ca/cluster.key,pki/sa.key");
        keys = strv_free(keys);
        assert_int_equal(store_list(s, "pki/ca/", &keys, &err), 0);
        assert_int_equal(strv_length(keys), 2);
        assert_string_equal(keys[0], "pki/ca/cluster.crt");
        keys = strv_free(keys);
        assert_int_equal(store_list(s, "pki/s", &keys, &err), 0);
        assert_int_equal(strv_length(keys), 1);
        assert_string_equal(keys[0], "pki/sa.key");
        keys = strv_free(keys);
        assert_int_equal(store_list(s, "nothing/here/", &keys, &err), 0);
        assert_int_equal(strv_length(keys), 0);
        keys = strv_free(keys);
        assert_int_equal(store_list(s, "../", &keys, &err), -EINVAL);
        err = mfree(err);

        /* delete: gone, and deleting again (or something never there) is fine */
        assert_int_equal(store_delete(s, "pki/ca/cluster.crt", &err), 0);
        assert_int_equal(store_get(s, "pki/ca/cluster.crt", &data, &len, &err), -ENOENT);
        err = mfree(err);
        assert_int_equal(store_delete(s, "pki/ca/cluster.crt", &err), 0);
        assert_int_equal(store_delete(s, "never/was", &err), 0);

        /* invalid keys are refused with the key in the message */
        assert_int_equal(store_put(s, "../escape", "x", 1, 0, &err), -EINVAL);
        assert_non_null(strstr(err, "'../escape'"));
        assert_non_null(strstr(err, d->url));
        err = mfree(err);
}

static void test_symlink_not_followed(void **state) {
        Dirs *d = *state;
        _cleanup_(store_freep) Store *s = NULL;
        char *err = NULL, *data = NULL;
        size_t len;
        _cleanup_free_ char *secret = strprintf("%s/secret", d->outside);
        _cleanup_free_ char *link_dir = strprintf("%s/pki", d->root);
        _cleanup_free_ char *link_file = strprintf("%s/top.key", d->root);
        assert_int_equal(write_file_atomic(secret, "OUTSIDE", 7, 0600, false), 1);
        assert_int_equal(symlink(d->outside, link_dir), 0);
        assert_int_equal(symlink(secret, link_file), 0);

        assert_int_equal(store_open(d->url, &s, &err), 0);
        /* a symlinked directory: neither read through nor written through */
        assert_int_equal(store_get(s, "pki/secret", &data, &len, &err), -ELOOP);
        assert_non_null(strstr(err, "symlink"));
        err = mfree(err);
        assert_int_equal(store_put(s, "pki/new.key", "x", 1, STORE_PRIVATE, &err), -ELOOP);
        err = mfree(err);
        assert_int_equal(store_put_if_absent(s, "pki/new.key", "x", 1, STORE_PRIVATE, &err), -ELOOP);
        err = mfree(err);
        _cleanup_free_ char *would = strprintf("%s/new.key", d->outside);
        assert_int_equal(access(would, F_OK), -1);
        /* a symlinked object: not read; put-if-absent sees a name taken; put replaces the link itself */
        assert_int_equal(store_get(s, "top.key", &data, &len, &err), -ELOOP);
        err = mfree(err);
        assert_int_equal(store_put_if_absent(s, "top.key", "NEW", 3, STORE_PRIVATE, &err), -EEXIST);
        err = mfree(err);
        assert_int_equal(store_put(s, "top.key", "NEW", 3, STORE_PRIVATE, &err), 0);
        assert_int_equal(store_get(s, "top.key", &data, &len, &err), 0);
        assert_memory_equal(data, "NEW", 3);
        data = mfree(data);
        _cleanup_free_ char *still = NULL;
        assert_int_equal(read_full_file(secret, 100, &still, &len), 0);
        assert_string_equal(still, "OUTSIDE");
        /* a listing does not walk into the symlinked directory */
        char **keys = NULL;
        assert_int_equal(store_list(s, "", &keys, &err), 0);
        assert_int_equal(strv_length(keys), 1);
        assert_string_equal(keys[0], "top.key");
        strv_free(keys);
}

/* The directories under a prefix, one entry each: not the objects at that level, not a directory without an
 * object below it, not a symlinked one, not a temporary's. */
static void test_file_list_dirs(void **state) {
        Dirs *d = *state;
        _cleanup_(store_freep) Store *s = NULL;
        char *err = NULL, **names = NULL;
        assert_int_equal(store_open(d->url, &s, &err), 0);
        assert_int_equal(store_list_dirs(s, "b/", &names, &err), 0); /* none yet */
        assert_null(names[0]);
        strv_free(names);
        const char *keys[] = { "b/top", "b/one/o", "b/two/x/deep", "b/two/y", "c/other/o" };
        for (size_t i = 0; i < ELEMENTSOF(keys); i++)
                assert_int_equal(store_put(s, keys[i], "x", 1, 0, &err), 0);
        _cleanup_free_ char *empty = strprintf("%s/b/empty/inner", d->root);
        _cleanup_free_ char *dot = strprintf("%s/b/.tmp", d->root);
        _cleanup_free_ char *dotfile = strprintf("%s/b/.tmp/o", d->root);
        _cleanup_free_ char *link = strprintf("%s/b/link", d->root);
        assert_int_equal(mkdir_p(empty, 0755), 0);
        assert_int_equal(mkdir(dot, 0755), 0);
        assert_int_equal(write_file_atomic(dotfile, "x", 1, 0600, false), 1);
        assert_int_equal(symlink(d->outside, link), 0);
        assert_int_equal(store_list_dirs(s, "b/", &names, &err), 0);
        assert_int_equal(strv_length(names), 2);
        assert_string_equal(names[0], "one");
        assert_string_equal(names[1], "two");
        strv_free(names);
        assert_int_equal(store_list_dirs(s, "", &names, &err), 0);
        assert_int_equal(strv_length(names), 2);
        assert_string_equal(names[0], "b");
        assert_string_equal(names[1], "c");
        strv_free(names);
        assert_int_equal(store_list_dirs(s, "b", &names, &err), -EINVAL);
        assert_non_null(strstr(err, "ending in '/'"));
        free(err);
}

/* Cloud Storage says 404 for a missing object and for a missing bucket alike: an object is absent only while
 * the bucket answers. A bucket that stops answering between the open and the read is an error, not an absent
 * key (a keystore would create a second CA over it). */
static void test_gs_absent_only_with_its_bucket(void **state) {
        Store *s = NULL;
        char *data = NULL;
        size_t len = 0;
        _cleanup_free_ char *e_open = NULL, *e_get = NULL, *e_del = NULL, *err = NULL, *err2 = NULL;
        gce_double_start(state);
        gce_double_post("/_double/config", "{\"buckets\": {\"pk-unit\": {}}}");
        assert_int_equal(store_open("gs://pk-unit/c", &s, &e_open), 0);
        assert_int_equal(store_get(s, "pki/ca.pem", &data, &len, &e_get), -ENOENT);
        assert_int_equal(store_delete(s, "pki/ca.pem", &e_del), 0);
        gce_double_post("/_double/config", "{\"deny\": [\"GET /storage/v1/b/pk-unit/o\"]}");
        int r = store_get(s, "pki/ca.pem", &data, &len, &err);
        assert_int_not_equal(r, -ENOENT);
        assert_true(r < 0);
        assert_non_null(strstr(err, "and the bucket itself"));
        r = store_delete(s, "pki/ca.pem", &err2);
        assert_true(r < 0 && r != -ENOENT);
        store_free(s);
        gce_double_stop(state);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_key_valid),
                cmocka_unit_test_setup_teardown(test_url_parsing, setup, teardown),
                cmocka_unit_test_setup_teardown(test_file_end_to_end, setup, teardown),
                cmocka_unit_test_setup_teardown(test_symlink_not_followed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_file_list_dirs, setup, teardown),
                cmocka_unit_test(test_gs_absent_only_with_its_bucket),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
