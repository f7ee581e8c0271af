/* SPDX-License-Identifier: Apache-2.0 */
#include "cloud/loopdev.h"
#include "shared/blockdev.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/parse-util.h"
#include "basic/stop.h"
#include "basic/string-util.h"
#include "basic/time-util.h"
#include "shared/blockdev.h"

#ifndef LOOP_CONFIGURE
#define LOOP_CONFIGURE 0x4C0A
struct loop_config {
        __u32 fd;
        __u32 block_size;
        struct loop_info64 info;
        __u64 __reserved[8];
};
#endif

/* "7:3\n" from /sys/block/loopN/dev. */
static int sysfs_devnum(const char *name, dev_t *ret) {
        _cleanup_free_ char *path = strjoin("/sys/block/", name, "/dev"), *text = NULL;
        unsigned maj, min;
        if (!path)
                return -ENOMEM;
        int r = read_full_file(path, 64, &text, NULL);
        if (r < 0)
                return r;
        char *colon = strchr(text, ':');
        if (!colon)
                return -EINVAL;
        *colon = 0;
        colon[1 + strcspn(colon + 1, "\n")] = 0;
        if (safe_atou(text, &maj) < 0 || safe_atou(colon + 1, &min) < 0)
                return -EINVAL;
        *ret = makedev(maj, min);
        return 0;
}

/* Confirms on the device itself (LOOP_GET_STATUS64: lo_device/lo_inode of the backing file) that
 * /dev/<name> is devnum and is backed by the file st describes. */
static int loop_backed_by(const char *name, dev_t devnum, const struct stat *st, char **ret_path) {
        _cleanup_free_ char *path = strjoin("/dev/", name);
        struct loop_info64 info = {};
        struct stat dst;

        if (!path)
                return -ENOMEM;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return errno == ENOENT || errno == ENXIO ? 0 : -errno;
        if (fstat(fd, &dst) < 0)
                return -errno;
        if (!S_ISBLK(dst.st_mode) || dst.st_rdev != devnum)
                return 0;
        if (ioctl(fd, LOOP_GET_STATUS64, &info) < 0)
                return errno == ENXIO ? 0 : -errno; /* ENXIO: detached meanwhile */
        if (info.lo_device != (__u64)st->st_dev || info.lo_inode != (__u64)st->st_ino)
                return 0;
        *ret_path = TAKE_PTR(path);
        return 1;
}

/* Each bound loop device (sysfs has its backing_file), compared with image by the backing file's st_dev and
 * st_ino that the device itself reports (LOOP_GET_STATUS64). Not by the sysfs path: the kernel forms it
 * from the reader's mount namespace, and when the one that bound the device is gone (a daemon in a mount
 * namespace of its own, restarted) it is a path that leads nowhere ("/pool/<id>.img"); the e2e's restarted
 * daemons then found no device, bound a second one to the same image, and a second process saw the
 * volume's mount as another device's. */
int loopdev_find_by_backing(const char *image, char **ret_path, dev_t *ret_devnum) {
        _cleanup_(closedirp) DIR *d = opendir("/sys/block");
        struct stat st;

        if (stat(image, &st) < 0)
                return -errno;
        if (!d)
                return -errno;
        for (struct dirent *de; (de = readdir(d));) {
                if (!startswith(de->d_name, "loop") || strlen(de->d_name) > 32)
                        continue;
                _cleanup_free_ char *bf = strjoin("/sys/block/", de->d_name, "/loop/backing_file"),
                                    *text = NULL;
                dev_t devnum;
                if (!bf)
                        return -ENOMEM;
                if (read_full_file(bf, 8192, &text, NULL) < 0)
                        continue; /* not bound */
                if (sysfs_devnum(de->d_name, &devnum) < 0)
                        continue;
                _cleanup_free_ char *path = NULL;
                int r = loop_backed_by(de->d_name, devnum, &st, &path);
                if (r < 0)
                        return r;
                if (r == 0)
                        continue;
                *ret_path = TAKE_PTR(path);
                if (ret_devnum)
                        *ret_devnum = devnum;
                return 1;
        }
        return 0;
}

static int loop_configure(int loop_fd, int file_fd, const char *image) {
        struct loop_config cfg = { .fd = (__u32)file_fd };
        /* lo_file_name is informational (losetup shows it); the backing file's st_dev and st_ino (as
         * LOOP_GET_STATUS64 reports them) are what loopdev_find_by_backing() compares. */
        snprintf((char *)cfg.info.lo_file_name, sizeof(cfg.info.lo_file_name), "%s", image);
        if (ioctl(loop_fd, LOOP_CONFIGURE, &cfg) >= 0)
                return 0;
        if (errno != EINVAL && errno != ENOTTY)
                return -errno;
        /* Kernels before 5.8: two steps. A crash in between leaves a bound loop device without
         * status, which loopdev_find_by_backing() still finds: the backing file is the device's from
         * LOOP_SET_FD. */
        if (ioctl(loop_fd, LOOP_SET_FD, file_fd) < 0)
                return -errno;
        if (ioctl(loop_fd, LOOP_SET_STATUS64, &cfg.info) < 0) {
                int r = -errno;
                (void)ioctl(loop_fd, LOOP_CLR_FD, 0);
                return r;
        }
        return 0;
}

int loopdev_attach(const char *image, char **ret_path, dev_t *ret_devnum) {
        _cleanup_close_ int ctl = -1, file_fd = -1;
        int r = -EBUSY;

        file_fd = open(image, O_RDWR | O_CLOEXEC | O_NOCTTY);
        if (file_fd < 0)
                return -errno;
        ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC | O_NOCTTY);
        if (ctl < 0)
                return -errno;
        /* Another process (losetup, a test) may take the free device between GET_FREE and CONFIGURE:
         * it then answers EBUSY and we ask again, a bounded number of times. */
        for (unsigned attempt = 0; attempt < 64; attempt++) {
                int n = ioctl(ctl, LOOP_CTL_GET_FREE);
                if (n < 0)
                        return -errno;
                _cleanup_free_ char *path = strprintf("/dev/loop%d", n);
                if (!path)
                        return -ENOMEM;
                _cleanup_close_ int fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY);
                if (fd < 0) {
                        r = -errno;
                        if (r == -ENOENT || r == -ENXIO) {
                                /* udev has not made the node yet */
                                r = sleep_usec(USEC_PER_MSEC);
                                if (r < 0)
                                        return r;
                                continue;
                        }
                        return r;
                }
                r = loop_configure(fd, file_fd, image);
                if (r == -EBUSY)
                        continue;
                if (r < 0)
                        return r;
                struct stat st;
                if (fstat(fd, &st) < 0)
                        return -errno;
                *ret_path = TAKE_PTR(path);
                if (ret_devnum)
                        *ret_devnum = st.st_rdev;
                return 0;
        }
        return r;
}

/* An exclusive holder can linger for a moment after it is gone (the last close of an exiting process's
 * files may be deferred by the kernel; a probing tool may hold it briefly): retry EBUSY for a bounded
 * time. A mounted filesystem keeps it busy past the deadline. */

int loopdev_detach_image(const char *image) {
        int n = 0;
        /* bounded: an image is bound to at most a handful of devices (one, unless someone else bound it) */
        for (unsigned i = 0; i < 16; i++) {
                _cleanup_free_ char *path = NULL;
                int r = loopdev_find_by_backing(image, &path, NULL);
                if (r <= 0)
                        return r < 0 ? r : n;
                /* O_EXCL on a block device fails with EBUSY while a filesystem is mounted from it (or
                 * md/dm hold it): detaching then would leave a mounted device that another node could
                 * bind a second loop device to, two filesystems on one image. Refuse instead. */
                _cleanup_close_ int fd = blockdev_open_exclusive(path, BLOCKDEV_RELEASE_TIMEOUT);
                if (fd < 0)
                        return fd;
                if (ioctl(fd, LOOP_CLR_FD, 0) < 0 && errno != ENXIO)
                        return -errno;
                n++;
        }
        return n;
}
