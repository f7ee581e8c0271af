/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include "basic/time-util.h"

/* Block devices through libblkid: is a device blank, and which device is a path (by device number, never
 * by name). */

#include <sys/types.h>

/* Probes dev for any signature: filesystems, partition tables, RAID/LVM/LUKS/swap members (libblkid
 * superblocks + partitions, safe probe: ambivalent results count as a signature). Returns 0 when the
 * device is provably blank, 1 when it holds a signature (*ret_what: e.g. "ext4", "gpt", "crypto_LUKS",
 * "LVM2_member", "swap", "linux_raid_member", or "ambivalent"; caller frees), -errno on error. */
int blockdev_probe_signature(const char *dev, char **ret_what);

/* Filesystem type on dev ("ext4", "xfs"), or 0 and NULL when none is found. */
int blockdev_probe_fstype(const char *dev, char **ret_fstype);

/* The device number (st_rdev) of block device path. -ENOTBLK if path is not a block device. */
int blockdev_get_devnum(const char *path, dev_t *ret);

/* 1 if path is the block device devnum, 0 if it is another device, < 0 on error. */
int blockdev_is(const char *path, dev_t devnum);

/* Opens a block device O_EXCL (fails with EBUSY while it is mounted or held by md/dm), retrying EBUSY until
 * timeout: right after an unmount or a probe the kernel may hold the device for a moment. Returns the fd. */
int blockdev_open_exclusive(const char *path, usec_t timeout);

/* Who holds the block device devnum, for error messages: "pid 123 (e2fsck), mounted on /x, held by dm-0";
 * NULL when nobody visible does (caller frees). Scans /proc/[pid]/fd, /proc/self/mountinfo and sysfs. */
char *blockdev_describe_users(dev_t devnum);

/* How long: after an ext4 on a loop device is unmounted, the kernel was seen to hold the device for up to
 * ~4 s here (tests/integration/test_volumes_race.py, kill rounds). */
#define BLOCKDEV_RELEASE_TIMEOUT (10 * USEC_PER_SEC)
