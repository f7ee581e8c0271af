/* SPDX-License-Identifier: Apache-2.0 */
/* The pivot's local record (pivot/pivot-record.h) in a real directory: absent is all zeros, a save and a
 * load agree, the file is 0600 and replaced atomically, a malformed value names the file, line and value;
 * and which bootstrap manifests a pass must then leave away. */
#include "unit-test.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/string-util.h"
#include "pivot/pivot.h"

static void test_round_trip(void **state) {
        char dir[] = "/tmp/pk-pivot-record-XXXXXX";
        assert_non_null(mkdtemp(dir));
        _cleanup_free_ char *sub = strjoin(dir, "/state"), *path = strjoin(dir, "/state/pivot");
        PivotRecord r = { .removed_at = 1 };
        char *err = NULL;
        assert_int_equal(pivot_record_load(sub, &r, &err), 0);
        assert_true(r.assets_applied_at == 0 && r.removed_at == 0 && r.complete_at == 0);

        r = (PivotRecord){ .assets_applied_at = 1700000000000001ULL,
                           .removed_at = 1700000000000002ULL,
                           .names_left_at = 1700000000000003ULL,
                           .names_gone_at = 1700000000000004ULL,
                           .started_at = 1700000000000005ULL };
        assert_int_equal(pivot_record_save(sub, &r, &err), 0);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        PivotRecord back;
        assert_int_equal(pivot_record_load(sub, &back, &err), 0);
        assert_memory_equal(&back, &r, sizeof(r));
        /* a record of the version before the turns (three keys) reads with the turn's times 0 */
        const char *old = "assets_applied_at=5\nremoved_at=6\ncomplete_at=0\n";
        assert_int_equal(write_file_atomic(path, old, strlen(old), 0600, false), 1);
        assert_int_equal(pivot_record_load(sub, &back, &err), 0);
        assert_true(back.assets_applied_at == 5 && back.removed_at == 6 && back.names_left_at == 0 &&
                    back.names_gone_at == 0 && back.started_at == 0);

        assert_int_equal(write_file_atomic(path, "removed_at=12x\n", 15, 0600, false), 1);
        assert_int_equal(pivot_record_load(sub, &back, &err), -EINVAL);
        assert_non_null(strstr(err, "/state/pivot:1: removed_at"));
        assert_non_null(strstr(err, "'12x'"));
        free(err);
        unlink(path);
        rmdir(sub);
        rmdir(dir);
}

static void test_keeps_bootstrap_away(void **state) {
        PivotRecord r = {};
        assert_false(pivot_record_keeps_bootstrap_away(&r, "kube-apiserver.manifest"));
        r.removed_at = 5;
        assert_true(pivot_record_keeps_bootstrap_away(&r, "kube-apiserver.manifest"));
        assert_true(pivot_record_keeps_bootstrap_away(&r, "kube-proxy.manifest"));
        assert_false(pivot_record_keeps_bootstrap_away(&r, "etcd.manifest")); /* etcd stays static */
        r = (PivotRecord){ .complete_at = 7 };
        assert_true(pivot_record_keeps_bootstrap_away(&r, "kube-scheduler.manifest"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_round_trip),
                cmocka_unit_test(test_keeps_bootstrap_away),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
