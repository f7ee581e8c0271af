/* SPDX-License-Identifier: Apache-2.0 */
/* The zero proof behind "provably blank": which ranges are read for a device size (pure), and the reading
 * and zero-filling itself on a sparse regular file (no root needed; the loop-device version of the same is
 * tests/integration/test_blank.py). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "basic/macro.h"
#include "shared/blockdev.h"
#include "unit-test.h"

#define KIB (UINT64_C(1) << 10)
#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)
#define TIB (UINT64_C(1) << 40)

static bool covered(const BlockdevRange *l, size_t n, uint64_t offset, uint64_t length) {
        for (size_t i = 0; i < n; i++)
                if (l[i].offset <= offset && offset + length <= l[i].offset + l[i].length)
                        return true;
        return false;
}

/* Sorted, disjoint, aligned, inside the device, the edges in full, and a few MiB whatever the size. */
static void check_shape(uint64_t size, const BlockdevRange *l, size_t n) {
        uint64_t total = 0;
        for (size_t i = 0; i < n; i++) {
                assert_true(l[i].length > 0);
                assert_true(l[i].offset + l[i].length <= size);
                assert_int_equal(l[i].offset % BLOCKDEV_ZERO_ALIGN, 0);
                assert_true(l[i].length % BLOCKDEV_ZERO_ALIGN == 0 || l[i].offset + l[i].length == size);
                if (i > 0)
                        assert_true(l[i - 1].offset + l[i - 1].length < l[i].offset);
                total += l[i].length;
        }
        assert_true(total <= 6 * MIB);
        if (size == 0)
                return;
        assert_true(covered(l, n, 0, MIN(size, BLOCKDEV_ZERO_EDGE)));
        uint64_t tail = MIN(size, BLOCKDEV_ZERO_EDGE);
        assert_true(covered(l, n, size - tail, tail));
}

static void test_ranges_shape(void **state) {
        static const uint64_t sizes[] = {
                0,        512, 4095,      4096, MIB,      2 * MIB + 512,    3 * MIB,
                64 * MIB, GIB, GIB + 512, TIB,  16 * TIB, UINT64_C(1) << 60
        };
        for (size_t k = 0; k < ELEMENTSOF(sizes); k++) {
                _cleanup_free_ BlockdevRange *l = NULL;
                size_t n = 99;
                assert_int_equal(blockdev_zero_ranges(sizes[k], &l, &n), 0);
                check_shape(sizes[k], l, n);
                if (sizes[k] <= 2 * BLOCKDEV_ZERO_EDGE) /* small: all of it */
                        assert_int_equal(n, sizes[k] ? 1 : 0);
        }
}

static void test_ranges_backup_superblocks(void **state) {
        _cleanup_free_ BlockdevRange *l = NULL;
        size_t n;
        uint64_t size = GIB;
        assert_int_equal(blockdev_zero_ranges(size, &l, &n), 0);
        /* 4 KiB blocks: 32768 per group, 8 groups; backups in 1, 3, 5, 7 (e2fsck -b 32768) */
        static const uint64_t g4[] = { 1, 3, 5, 7 };
        for (size_t i = 0; i < ELEMENTSOF(g4); i++)
                assert_true(covered(l, n, g4[i] * 32768 * 4096, 1024));
        /* 1 KiB blocks: group 0 starts at block 1, 8192 blocks per group, 128 groups */
        static const uint64_t g1[] = { 1, 3, 5, 7, 9, 25, 27, 49, 81, 125, 127 };
        for (size_t i = 0; i < ELEMENTSOF(g1); i++)
                assert_true(covered(l, n, (1 + g1[i] * 8192) * 1024, 1024));
        /* 2 KiB blocks: 16384 per group, 32 groups (the last one too: sparse_super2) */
        static const uint64_t g2[] = { 1, 3, 5, 7, 9, 25, 27, 31 };
        for (size_t i = 0; i < ELEMENTSOF(g2); i++)
                assert_true(covered(l, n, g2[i] * 16384 * 2048, 1024));
        /* the evenly spaced samples: the middle is one of them */
        assert_true(covered(l, n, size / 2, BLOCKDEV_ZERO_SAMPLE_SIZE));
        assert_true(covered(l, n, size / BLOCKDEV_ZERO_SAMPLES * 3, BLOCKDEV_ZERO_SAMPLE_SIZE));
        /* and it is sampling: between two samples nothing is read */
        assert_false(covered(l, n, 200 * MIB + 100 * KIB, 1));

        /* 64 KiB blocks: 32 GiB groups; on 1 TiB, groups 1, 3, 5, 7, 9, 25, 27 and the last, 31 */
        _cleanup_free_ BlockdevRange *big = NULL;
        size_t nb;
        assert_int_equal(blockdev_zero_ranges(TIB, &big, &nb), 0);
        static const uint64_t g64[] = { 1, 3, 5, 7, 9, 25, 27, 31 };
        for (size_t i = 0; i < ELEMENTSOF(g64); i++)
                assert_true(covered(big, nb, g64[i] * 32 * GIB, 1024));
        assert_true(covered(big, nb, UINT64_C(6561) * 32768 * 4096, 1024)); /* 4 KiB: 3^8 */
        /* 1 KiB: 7^6 */
        assert_true(covered(big, nb, (1 + UINT64_C(117649) * 8192) * 1024, 1024));
}

static int scratch(uint64_t size, char path[static 32]) {
        static const char tmpl[] = "/tmp/pk-zero-XXXXXX";
        memcpy(path, tmpl, sizeof(tmpl));
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, (off_t)size), 0);
        return fd;
}

static void put(int fd, uint64_t off, unsigned char byte) {
        assert_int_equal(pwrite(fd, &byte, 1, (off_t)off), 1);
}

static void test_prove_and_fill(void **state) {
        char path[32];
        uint64_t size = 64 * MIB, off = 0, bytes = 0;
        int fd = scratch(size, path);

        assert_int_equal(blockdev_prove_zero(fd, &off), 0); /* sparse: all zeros */
        put(fd, size / 2 + 5, 0x5a);
        assert_int_equal(blockdev_prove_zero(fd, &off), 1);
        assert_int_equal(off, size / 2 + 5);
        put(fd, size - 1, 1);                  /* the first non-zero byte is the one reported */
        put(fd, (1 + 3 * 8192) * 1024 + 7, 2); /* a 1 KiB-block backup superblock (group 3) */
        assert_int_equal(blockdev_prove_zero(fd, &off), 1);
        assert_int_equal(off, (1 + 3 * 8192) * 1024 + 7);

        assert_int_equal(blockdev_zero_fill(fd, &bytes), 0);
        assert_true(bytes >= 2 * MIB && bytes <= 6 * MIB);
        assert_int_equal(blockdev_prove_zero(fd, &off), 0);

        /* what the proof does not read, it does not see: bytes between samples stay (wipe adds wipefs) */
        uint64_t between = size / BLOCKDEV_ZERO_SAMPLES * 3 + 100 * KIB;
        put(fd, between, 3);
        assert_int_equal(blockdev_prove_zero(fd, &off), 0);
        assert_int_equal(blockdev_zero_fill(fd, &bytes), 0);
        unsigned char b = 0;
        assert_int_equal(pread(fd, &b, 1, (off_t)between), 1);
        assert_int_equal(b, 3);

        close(fd);
        unlink(path);
}

/* The reads go several at a time; the offset reported is still the lowest non-zero byte, whichever read
 * finishes first. */
static void test_prove_reports_the_lowest_offset(void **state) {
        char path[32];
        uint64_t size = 256 * MIB, off = 0;
        int fd = scratch(size, path);
        for (int round = 0; round < 20; round++) {
                uint64_t lowest =
                    size / BLOCKDEV_ZERO_SAMPLES * (uint64_t)(BLOCKDEV_ZERO_SAMPLES - 1 - round);
                for (unsigned k = BLOCKDEV_ZERO_SAMPLES - 1 - (unsigned)round; k < BLOCKDEV_ZERO_SAMPLES;
                     k++)
                        put(fd, size / BLOCKDEV_ZERO_SAMPLES * k + 11, 0x7e);
                put(fd, size - 1, 1);
                assert_int_equal(blockdev_prove_zero(fd, &off), 1);
                assert_int_equal(off, lowest + 11);
        }
        put(fd, 4097, 9); /* now the first MiB holds one too */
        assert_int_equal(blockdev_prove_zero(fd, &off), 1);
        assert_int_equal(off, 4097);
        close(fd);
        unlink(path);
}

static void test_size(void **state) {
        char path[32];
        uint64_t size = 0;
        int fd = scratch(12345, path);
        assert_int_equal(blockdev_get_size(fd, &size), 0);
        assert_int_equal(size, 12345);
        close(fd);
        unlink(path);
        fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        assert_int_equal(blockdev_get_size(fd, &size), -ENOTBLK);
        assert_int_equal(blockdev_prove_zero(fd, &size), -ENOTBLK);
        close(fd);
}

/* sysfs's view of the disk holding the root filesystem, where it is a block device (an overlay root has
 * none: then sysfs knows nothing and the helpers say so): its whole disk holds the root, its size is its
 * sectors', and a number sysfs has never seen holds nothing. */
static void test_sysfs_disk(void **state) {
        struct stat root;
        dev_t disk = 0;
        uint64_t size = 0;
        assert_int_equal(stat("/", &root), 0);
        int r = blockdev_whole_disk(root.st_dev, &disk);
        assert_true(r >= 0);
        if (r > 0 && blockdev_sysfs_size(disk, &size) >= 0) {
                assert_true(size > 0 && size % 512 == 0);
                assert_int_equal(blockdev_holds_root(disk), 1);
        }
        assert_int_equal(blockdev_whole_disk(makedev(4095, 1048575), &disk), 0);
        assert_int_equal(blockdev_holds_root(makedev(4095, 1048575)), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ranges_shape),
                cmocka_unit_test(test_ranges_backup_superblocks),
                cmocka_unit_test(test_prove_and_fill),
                cmocka_unit_test(test_prove_reports_the_lowest_offset),
                cmocka_unit_test(test_size),
                cmocka_unit_test(test_sysfs_disk),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
