/* SPDX-License-Identifier: Apache-2.0 */
/* kubelet's manifest directory: links made, kept, refused over a file, and renewed (a new directory entry,
 * so that kubelet's inotify watch sees a change of the file behind the link) only when they point at the
 * file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/string-util.h"
#include "manifest/manifest-dir.h"
#include "unit-test.h"

static char dir[] = "/tmp/test-manifest-dir.XXXXXX";

static ino_t link_inode(const char *path) {
        struct stat st;
        assert_int_equal(lstat(path, &st), 0);
        assert_true(S_ISLNK(st.st_mode));
        return st.st_ino;
}

static void test_link_and_renew(void **state) {
        assert_non_null(mkdtemp(dir));
        _cleanup_free_ char *link = strprintf("%s/etcd.manifest", dir), *file = strprintf("%s/a.yaml", dir),
                            *other = strprintf("%s/b.yaml", dir), *plain = strprintf("%s/plain", dir);
        assert_int_equal(manifest_write(file, "a: 1\n"), 1);

        assert_int_equal(manifest_symlink_renew(link, file), 0); /* no link: nothing to renew */
        assert_int_equal(access(link, F_OK), -1);
        assert_int_equal(manifest_symlink(link, file), 1);
        assert_int_equal(manifest_symlink(link, file), 0); /* kept */
        ino_t before = link_inode(link);

        int ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        assert_true(ifd >= 0);
        assert_true(inotify_add_watch(ifd, dir, IN_MOVED_TO | IN_CREATE) >= 0);
        assert_int_equal(manifest_write(file, "a: 2\n"), 1);
        char ev[4096];
        assert_true(read(ifd, ev, sizeof(ev)) > 0); /* the file's own rename, in this test's one directory */
        assert_int_equal(manifest_symlink_renew(link, file), 1);
        assert_true(link_inode(link) != before); /* a new entry: kubelet reads the file again */
        assert_true(read(ifd, ev, sizeof(ev)) > 0);
        close(ifd);

        assert_int_equal(manifest_symlink_renew(link, other), 0); /* points elsewhere: left alone */
        ino_t kept = link_inode(link);
        assert_int_equal(link_inode(link), kept);
        assert_int_equal(manifest_write(plain, "x\n"), 1);
        assert_int_equal(manifest_symlink_renew(plain, file), -EEXIST);
        assert_int_equal(manifest_symlink(plain, file), -EEXIST);

        unlink(link), unlink(file), unlink(plain);
        assert_int_equal(rmdir(dir), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_link_and_renew),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
