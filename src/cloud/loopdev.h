/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Loop devices for image-backed pool volumes: found by identity (the backing file's st_dev/st_ino as
 * the kernel reports it), never by guessing a name. */

#include <sys/types.h>

/* Finds a loop device whose backing file is image. 1 and its path (/dev/loopN, caller frees) and
 * device number; 0 if none. */
int loopdev_find_by_backing(const char *image, char **ret_path, dev_t *ret_devnum);

/* Attaches image to a free loop device (LOOP_CTL_GET_FREE + LOOP_CONFIGURE, or LOOP_SET_FD +
 * LOOP_SET_STATUS64 on older kernels), autoclear off, the image path recorded as lo_file_name.
 * Returns the path and device number. */
int loopdev_attach(const char *image, char **ret_path, dev_t *ret_devnum);

/* Detaches every loop device backed by image. Returns how many. -EBUSY while one is mounted. */
int loopdev_detach_image(const char *image);
