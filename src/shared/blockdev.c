/* SPDX-License-Identifier: Apache-2.0 */
#include "shared/blockdev.h"

#include <unistd.h>

#include <blkid.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/macro.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(blkid_probe, blkid_free_probe)

/* Opens dev (O_CLOEXEC, which blkid_new_probe_from_filename() does not promise) and a probe on it. Returns
 * the fd, which the caller closes after freeing the probe (libblkid never closes an fd it was given). */
static int probe_new(const char *dev, bool partitions, blkid_probe *ret) {
        _cleanup_close_ int fd = open(dev, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        blkid_probe pr = blkid_new_probe();
        if (!pr)
                return -ENOMEM;
        if (blkid_probe_set_device(pr, fd, 0, 0) < 0) {
                blkid_free_probe(pr);
                return -EIO;
        }
        blkid_probe_enable_superblocks(pr, 1);
        blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE | BLKID_SUBLKS_USAGE);
        blkid_probe_enable_partitions(pr, partitions);
        if (partitions)
                blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC);
        *ret = pr;
        return TAKE_FD(fd);
}

static int probe_value(blkid_probe pr, const char *name, char **ret) {
        const char *v = NULL;
        if (blkid_probe_lookup_value(pr, name, &v, NULL) < 0 || !v)
                return 0;
        char *s = strdup(v);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 1;
}

int blockdev_probe_signature(const char *dev, char **ret_what) {
        _cleanup_close_ int fd = -1;
        _cleanup_(blkid_free_probep) blkid_probe pr = NULL;
        _cleanup_free_ char *what = NULL;
        int r;

        fd = probe_new(dev, true, &pr);
        if (fd < 0)
                return fd;
        errno = 0;
        r = blkid_do_safeprobe(pr);
        if (r == 1) /* nothing found: no filesystem, no partition table, no RAID/LVM/LUKS/swap */
                return 0;
        if (r == -2)
                what = strdup("ambivalent");
        else if (r == 0) {
                int k = probe_value(pr, "TYPE", &what);
                if (k == 0)
                        k = probe_value(pr, "PTTYPE", &what);
                if (k < 0)
                        return k;
                if (k == 0)
                        what = strdup("unknown");
        } else
                return errno > 0 ? -errno : -EIO;
        if (!what)
                return -ENOMEM;
        if (ret_what)
                *ret_what = TAKE_PTR(what);
        return 1;
}

int blockdev_probe_fstype(const char *dev, char **ret_fstype) {
        _cleanup_close_ int fd = -1;
        _cleanup_(blkid_free_probep) blkid_probe pr = NULL;
        _cleanup_free_ char *type = NULL, *usage = NULL;

        fd = probe_new(dev, false, &pr);
        if (fd < 0)
                return fd;
        int r = blkid_do_safeprobe(pr);
        if (r < -1)
                r = 1; /* ambivalent: not a filesystem we may use */
        if (r < 0)
                return -EIO;
        if (r == 0) {
                if (probe_value(pr, "USAGE", &usage) < 0 || probe_value(pr, "TYPE", &type) < 0)
                        return -ENOMEM;
                if (!usage || !streq(usage, "filesystem")) {
                        free(type);
                        type = NULL;
                }
        }
        *ret_fstype = TAKE_PTR(type);
        return 0;
}

int blockdev_get_devnum(const char *path, dev_t *ret) {
        struct stat st;
        if (stat(path, &st) < 0)
                return -errno;
        if (!S_ISBLK(st.st_mode))
                return -ENOTBLK;
        *ret = st.st_rdev;
        return 0;
}

int blockdev_is(const char *path, dev_t devnum) {
        dev_t d;
        int r = blockdev_get_devnum(path, &d);
        if (r < 0)
                return r;
        return d == devnum;
}

int blockdev_open_exclusive(const char *path, usec_t timeout) {
        usec_t deadline = now(CLOCK_MONOTONIC) + timeout;
        for (;;) {
                int fd = open(path, O_RDONLY | O_EXCL | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
                if (fd >= 0)
                        return fd;
                int e = errno;
                if (e != EBUSY || now(CLOCK_MONOTONIC) >= deadline)
                        return -e;
                usleep(20 * 1000);
        }
}
