/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What is mounted where (libmount over /proc/self/mountinfo), and mount/umount of block devices. */

#include <sys/types.h>

/* Looks up target in mountinfo (the top-most mount on exactly that path, symlinks resolved). Returns 1 and
 * the device number of what is mounted there (and, if ret_source, the source, caller frees), 0 if nothing is
 * mounted on target, -errno on error. */
int mount_find_target(const char *target, dev_t *ret_devnum, char **ret_source);

/* Mounts block device dev on target with fstype (NULL: libmount detects it with libblkid) and comma
 * separated options (may be NULL). On failure returns -errno and, if ret_message, libmount's
 * explanation (caller frees). */
int mount_block_device(const char *dev, const char *target, const char *fstype, const char *options,
                       char **ret_message);

/* Unmounts target (not lazily). 0 if it was not mounted. */
int mount_umount(const char *target);
