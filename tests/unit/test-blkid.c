/* SPDX-License-Identifier: Apache-2.0 */
/* libblkid blank/signature probing and device numbers (on regular files, so no root is needed). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "shared/blockdev.h"
#include "shared/spawn.h"
#include "unit-test.h"

static char *scratch(size_t size) {
        char tmpl[] = "/tmp/pk-blkid-XXXXXX";
        int fd = mkstemp(tmpl);
        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, (off_t)size), 0);
        close(fd);
        return strdup(tmpl);
}

static void put(const char *path, off_t off, const void *data, size_t len) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(pwrite(fd, data, len, off), (ssize_t)len);
        close(fd);
}

static int probe_fstype(const char *path, char **ret_fstype) {
        int fd = blockdev_open_read(path);
        assert_true(fd >= 0);
        int r = blockdev_probe_fstype_fd(fd, ret_fstype);
        close(fd);
        return r;
}

static void test_probe_blank_and_swap(void **state) {
        char *f = scratch(4 << 20);
        char *what = NULL, *fstype = NULL;
        assert_int_equal(blockdev_probe_signature(f, &what), 0);
        assert_null(what);
        assert_int_equal(probe_fstype(f, &fstype), 0);
        assert_null(fstype);
        /* a swap signature as mkswap writes it: version 1 and last_page after 1 KiB of boot bits, the
         * magic at the end of the first 4 KiB page */
        unsigned char v1[8] = { 1, 0, 0, 0, 0xff, 0x03, 0, 0 };
        put(f, 1024, v1, sizeof(v1));
        put(f, 4096 - 10, "SWAPSPACE2", 10);
        assert_int_equal(blockdev_probe_signature(f, &what), 1);
        assert_string_equal(what, "swap");
        free(what);
        /* swap is a signature, not a filesystem to mount */
        assert_int_equal(probe_fstype(f, &fstype), 0);
        assert_null(fstype);
        unlink(f);
        free(f);
}

/* Probes through one fd held open (as the volumes' device steps hold theirs) see what another fd wrote
 * since: the cache the held fd keeps is the file's own, never a stale copy. */
static void test_probe_through_held_fd(void **state) {
        char *f = scratch(4 << 20);
        char *what = NULL, *fstype = NULL;
        int fd = blockdev_open_read(f);
        assert_true(fd >= 0);
        assert_int_equal(blockdev_probe_fstype_fd(fd, &fstype), 0);
        assert_null(fstype);
        assert_int_equal(blockdev_probe_signature_fd(fd, &what), 0);
        unsigned char v1[8] = { 1, 0, 0, 0, 0xff, 0x03, 0, 0 };
        put(f, 1024, v1, sizeof(v1));
        put(f, 4096 - 10, "SWAPSPACE2", 10);
        assert_int_equal(blockdev_probe_signature_fd(fd, &what), 1);
        assert_string_equal(what, "swap");
        free(what);
        close(fd);
        assert_int_equal(blockdev_open_read("/nonexistent/pk-blkid"), -ENOENT);
        unlink(f);
        free(f);
}

static void test_probe_dos_partition_table(void **state) {
        char *f = scratch(4 << 20);
        char *what = NULL;
        /* one MBR partition entry (type 0x83 at LBA 2048) and the 0x55AA boot signature */
        unsigned char entry[16] = { 0, 0, 0, 0, 0x83, 0, 0, 0, 0x00, 0x08, 0, 0, 0x00, 0x10, 0, 0 };
        put(f, 446, entry, sizeof(entry));
        put(f, 510, "\x55\xaa", 2);
        assert_int_equal(blockdev_probe_signature(f, &what), 1);
        assert_string_equal(what, "dos");
        free(what);
        unlink(f);
        free(f);
}

static void test_devnum(void **state) {
        dev_t d;
        assert_int_equal(blockdev_get_devnum("/dev/null", &d), -ENOTBLK);
        assert_int_equal(blockdev_get_devnum("/nonexistent-pk", &d), -ENOENT);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_probe_blank_and_swap),
                cmocka_unit_test(test_probe_through_held_fd),
                cmocka_unit_test(test_probe_dos_partition_table),
                cmocka_unit_test(test_devnum),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
