/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include "basic/time-util.h"

/* Block devices through libblkid: is a device blank, and which device is a path (by device number, never
 * by name). */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Probes dev for any signature: filesystems, partition tables, RAID/LVM/LUKS/swap members (libblkid
 * superblocks + partitions, safe probe: ambivalent results count as a signature). Returns 0 when the
 * device is provably blank, 1 when it holds a signature (*ret_what: e.g. "ext4", "gpt", "crypto_LUKS",
 * "LVM2_member", "swap", "linux_raid_member", or "ambivalent"; caller frees), -errno on error. */
int blockdev_probe_signature(const char *dev, char **ret_what);
/* The same through an open fd (e.g. one held O_EXCL); the fd stays open. */
int blockdev_probe_signature_fd(int fd, char **ret_what);

/* "Provably blank" needs more than the absence of a signature: an ext4 whose primary superblock is damaged
 * has none, yet its backup superblocks recover everything. A device is blank only when it also reads as
 * zeros at these ranges: the first and last MiB in full, BLOCKDEV_ZERO_SAMPLES evenly spaced samples of
 * BLOCKDEV_ZERO_SAMPLE_SIZE (sample k at k * size / BLOCKDEV_ZERO_SAMPLES, so the middle is always one), and
 * the ext2/3/4 superblock of every group that may hold a backup (groups 1, powers of 3, 5 and 7, and the
 * last group for sparse_super2) for block sizes 1, 2, 4 and 64 KiB. Offsets are aligned to 4 KiB (O_DIRECT).
 */
#define BLOCKDEV_ZERO_EDGE        (UINT64_C(1) << 20)
#define BLOCKDEV_ZERO_SAMPLES     128U
#define BLOCKDEV_ZERO_SAMPLE_SIZE (UINT64_C(8) << 10)
#define BLOCKDEV_ZERO_ALIGN       UINT64_C(4096)

typedef struct BlockdevRange {
        uint64_t offset;
        uint64_t length;
} BlockdevRange;

/* Pure: the ranges above for a device of size bytes, sorted, merged where they overlap or touch, within
 * [0, size). *ret: array of *ret_n ranges, caller frees. */
int blockdev_zero_ranges(uint64_t size, BlockdevRange **ret, size_t *ret_n);

/* The size of a block device (BLKGETSIZE64) or of a regular file (for tests). */
int blockdev_get_size(int fd, uint64_t *ret);

/* Reads fd at blockdev_zero_ranges() of its size (O_DIRECT where the fd allows it: what the disk holds, not
 * a cache). Returns 0 when every byte is zero, 1 with *ret_offset the first non-zero byte, -errno. Reads
 * a few MiB at most, whatever the size. */
int blockdev_prove_zero(int fd, uint64_t *ret_offset);

/* Writes zeros over blockdev_zero_ranges() of fd (opened for writing) and syncs. *ret_bytes: how much. */
int blockdev_zero_fill(int fd, uint64_t *ret_bytes);

/* Filesystem type on fd's device ("ext4", "xfs"), or 0 and NULL when none is found. */
int blockdev_probe_fstype_fd(int fd, char **ret_fstype);

/* dev opened for reading (O_NONBLOCK, O_CLOEXEC), or -errno. While one fd of a block device is open, the
 * kernel keeps what was read of it cached; the last close drops that cache. */
int blockdev_open_read(const char *dev);

/* The device number (st_rdev) of block device path. -ENOTBLK if path is not a block device. */
int blockdev_get_devnum(const char *path, dev_t *ret);

/* 1 if path is the block device devnum, 0 if it is another device, < 0 on error. */
int blockdev_is(const char *path, dev_t devnum);

/* Opens a block device O_EXCL (fails with EBUSY while it is mounted or held by md/dm), retrying EBUSY until
 * timeout: right after an unmount or a probe the kernel may hold the device for a moment. Returns the fd. */
int blockdev_open_exclusive(const char *path, usec_t timeout);
/* The same with other access flags (O_RDWR for writing); O_EXCL, O_CLOEXEC, O_NOCTTY are always added. */
int blockdev_open_exclusive_flags(const char *path, int flags, usec_t timeout);

/* Who holds the block device devnum, for error messages: "pid 123 (e2fsck), mounted on /x, held by dm-0";
 * NULL when nobody visible does (caller frees). Scans /proc/[pid]/fd, /proc/self/mountinfo and sysfs. */
char *blockdev_describe_users(dev_t devnum);

/* How long: after an ext4 on a loop device is unmounted, the kernel was seen to hold the device for up to
 * ~4 s here (tests/integration/test_volumes_race.py, kill rounds). */
#define BLOCKDEV_RELEASE_TIMEOUT (10 * USEC_PER_SEC)

/* What sysfs tells of a disk (a cloud provider proving a device is the volume it attached, where the device
 * has no identity of its own: the Xen names of EC2):
 * 1 and the whole disk holding devnum (its own number when it is no partition), 0 when sysfs does not know
 * it, -errno. */
int blockdev_whole_disk(dev_t devnum, dev_t *ret);
/* The size sysfs reports for devnum, in bytes (it counts 512-byte sectors whatever the block size). */
int blockdev_sysfs_size(dev_t devnum, uint64_t *ret);
/* 1 when devnum is the whole disk that holds the root filesystem, 0 when not (or sysfs does not know). */
int blockdev_holds_root(dev_t devnum);
