/* SPDX-License-Identifier: Apache-2.0 */
#include "shared/blockdev.h"

#include <blkid.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "basic/macro.h"
#include "basic/string-util.h"

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

static void describe_processes(dev_t devnum, char **out) {
        DIR *proc = opendir("/proc");
        if (!proc)
                return;
        /* bounded: one pass over /proc; a process's fds are listed once */
        for (struct dirent *de; (de = readdir(proc));) {
                if (de->d_name[0] < '1' || de->d_name[0] > '9')
                        continue;
                char fddir[300];
                snprintf(fddir, sizeof(fddir), "/proc/%s/fd", de->d_name);
                DIR *fds = opendir(fddir);
                if (!fds)
                        continue;
                for (struct dirent *fe; (fe = readdir(fds));) {
                        struct stat st;
                        if (fe->d_name[0] == '.' || fstatat(dirfd(fds), fe->d_name, &st, 0) < 0)
                                continue;
                        if (!S_ISBLK(st.st_mode) || st.st_rdev != devnum)
                                continue;
                        char comm_path[300], comm[32] = "?";
                        snprintf(comm_path, sizeof(comm_path), "/proc/%s/comm", de->d_name);
                        FILE *f = fopen(comm_path, "re");
                        if (f) {
                                if (fgets(comm, sizeof(comm), f))
                                        comm[strcspn(comm, "\n")] = 0;
                                fclose(f);
                        }
                        strextend_printf(out, "%spid %s (%s)", *out ? ", " : "", de->d_name, comm);
                        break;
                }
                closedir(fds);
        }
        closedir(proc);
}

static bool mountinfo_has_device(const char *path, dev_t devnum, char *target, size_t size) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        char line[4096];
        while (f && fgets(line, sizeof(line), f)) {
                unsigned maj, min;
                char t[2048];
                /* "ID PARENT MAJ:MIN ROOT TARGET ..." */
                if (sscanf(line, "%*s %*s %u:%u %*s %2047s", &maj, &min, t) == 3 &&
                    makedev(maj, min) == devnum) {
                        snprintf(target, size, "%s", t);
                        return true;
                }
        }
        return false;
}

/* Mounted here, or in another mount namespace (a container, a pod that copied the mount table while the
 * volume was mounted): each namespace is reported once, through the first process found in it. */
static void describe_mounts(dev_t devnum, char **out) {
        char target[2048];
        struct stat self_ns;
        ino_t seen[64];
        size_t n_seen = 0;

        if (mountinfo_has_device("/proc/self/mountinfo", devnum, target, sizeof(target)))
                strextend_printf(out, "%smounted on %s", *out ? ", " : "", target);
        if (stat("/proc/self/ns/mnt", &self_ns) < 0)
                return;
        DIR *proc = opendir("/proc");
        if (!proc)
                return;
        for (struct dirent *de; (de = readdir(proc)) && n_seen < ELEMENTSOF(seen);) {
                char path[300];
                struct stat ns;
                bool known = false;
                if (de->d_name[0] < '1' || de->d_name[0] > '9')
                        continue;
                snprintf(path, sizeof(path), "/proc/%s/ns/mnt", de->d_name);
                if (stat(path, &ns) < 0 || ns.st_ino == self_ns.st_ino)
                        continue;
                for (size_t k = 0; k < n_seen; k++)
                        known = known || seen[k] == ns.st_ino;
                if (known)
                        continue;
                seen[n_seen++] = ns.st_ino;
                snprintf(path, sizeof(path), "/proc/%s/mountinfo", de->d_name);
                if (mountinfo_has_device(path, devnum, target, sizeof(target)))
                        strextend_printf(out, "%smounted on %s in the mount namespace of pid %s",
                                         *out ? ", " : "", target, de->d_name);
        }
        closedir(proc);
}

static void describe_holders(dev_t devnum, char **out) {
        char path[96];
        snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/holders", major(devnum), minor(devnum));
        DIR *d = opendir(path);
        if (!d)
                return;
        for (struct dirent *de; (de = readdir(d));)
                if (de->d_name[0] != '.')
                        strextend_printf(out, "%sheld by %s", *out ? ", " : "", de->d_name);
        closedir(d);
}

char *blockdev_describe_users(dev_t devnum) {
        char *out = NULL;
        describe_processes(devnum, &out);
        describe_mounts(devnum, &out);
        describe_holders(devnum, &out);
        return out;
}
