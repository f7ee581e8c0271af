/* SPDX-License-Identifier: Apache-2.0 */
#include "shared/blockdev.h"

#include <blkid.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/parse-util.h"
#include "basic/stop.h"
#include "basic/string-util.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(blkid_probe, blkid_free_probe)

/* A probe reading through fd (libblkid never closes an fd it was given). */
static int probe_on_fd(int fd, bool partitions, blkid_probe *ret) {
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
        return 0;
}

int blockdev_open_read(const char *dev) {
        int fd = open(dev, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        return fd < 0 ? -errno : fd;
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

int blockdev_probe_signature_fd(int fd, char **ret_what) {
        _cleanup_(blkid_free_probep) blkid_probe pr = NULL;
        _cleanup_free_ char *what = NULL;
        int r = probe_on_fd(fd, true, &pr);
        if (r < 0)
                return r;
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

int blockdev_probe_signature(const char *dev, char **ret_what) {
        _cleanup_close_ int fd = blockdev_open_read(dev);
        if (fd < 0)
                return fd;
        return blockdev_probe_signature_fd(fd, ret_what);
}

int blockdev_probe_fstype_fd(int fd, char **ret_fstype) {
        _cleanup_(blkid_free_probep) blkid_probe pr = NULL;
        _cleanup_free_ char *type = NULL, *usage = NULL;
        int r = probe_on_fd(fd, false, &pr);
        if (r < 0)
                return r;
        r = blkid_do_safeprobe(pr);
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

/* ext2/3/4 (e2fsprogs lib/ext2fs/closefs.c, ext2fs_bg_has_super()): a group holds 8 * block size blocks;
 * with 1 KiB blocks block 0 is the boot block and group 0 starts at block 1. Without sparse_super every
 * group has a backup, with it groups 1 and the powers of 3, 5 and 7, with sparse_super2 at most two
 * (normally group 1 and the last). Reading the powers and the last group covers all three well enough:
 * one surviving backup is what e2fsck -b needs. */
static const uint64_t ext_block_sizes[] = { 1024, 2048, 4096, 65536 };
#define EXT_SUPERBLOCK_READ \
        UINT64_C(4096) /* the superblock, and with 1 KiB blocks the descriptors after it */
#define ZERO_RANGES_MAX (2 + BLOCKDEV_ZERO_SAMPLES + ELEMENTSOF(ext_block_sizes) * (3 * 64 + 2))
/* One read or write of the proof and the wipe; each worker has a buffer this size (eight: 512 KiB, a
 * moment). */
#define ZERO_IO_CHUNK (UINT64_C(64) << 10)

static void range_add(BlockdevRange *l, size_t *n, uint64_t size, uint64_t offset, uint64_t length) {
        if (offset >= size || *n >= ZERO_RANGES_MAX)
                return;
        uint64_t end = offset + MIN(length, size - offset);
        offset -= offset % BLOCKDEV_ZERO_ALIGN;
        end = MIN(size, (end + BLOCKDEV_ZERO_ALIGN - 1) / BLOCKDEV_ZERO_ALIGN * BLOCKDEV_ZERO_ALIGN);
        l[(*n)++] = (BlockdevRange){ offset, end - offset };
}

static void ext_backups_add(BlockdevRange *l, size_t *n, uint64_t size, uint64_t bs) {
        uint64_t first = bs == 1024 ? 1 : 0, per_group = 8 * bs, blocks = size / bs;
        if (blocks <= first)
                return;
        uint64_t groups = (blocks - first + per_group - 1) / per_group;
        static const uint64_t bases[] = { 3, 5, 7 };
        range_add(l, n, size, (first + per_group) * bs, EXT_SUPERBLOCK_READ);
        for (size_t b = 0; b < ELEMENTSOF(bases); b++)
                for (uint64_t g = bases[b]; g < groups; g *= bases[b])
                        range_add(l, n, size, (first + g * per_group) * bs, EXT_SUPERBLOCK_READ);
        if (groups > 1)
                range_add(l, n, size, (first + (groups - 1) * per_group) * bs, EXT_SUPERBLOCK_READ);
}

static int range_cmp(const void *a, const void *b) {
        const BlockdevRange *x = a, *y = b;
        return x->offset < y->offset ? -1 : x->offset > y->offset;
}

int blockdev_zero_ranges(uint64_t size, BlockdevRange **ret, size_t *ret_n) {
        _cleanup_free_ BlockdevRange *l = new0(BlockdevRange, ZERO_RANGES_MAX);
        size_t n = 0, m = 0;
        if (!l)
                return -ENOMEM;
        range_add(l, &n, size, 0, BLOCKDEV_ZERO_EDGE);
        range_add(l, &n, size, size > BLOCKDEV_ZERO_EDGE ? size - BLOCKDEV_ZERO_EDGE : 0,
                  BLOCKDEV_ZERO_EDGE);
        for (unsigned k = 1; k < BLOCKDEV_ZERO_SAMPLES; k++)
                range_add(l, &n, size, size / BLOCKDEV_ZERO_SAMPLES * k, BLOCKDEV_ZERO_SAMPLE_SIZE);
        for (size_t b = 0; b < ELEMENTSOF(ext_block_sizes); b++)
                ext_backups_add(l, &n, size, ext_block_sizes[b]);
        qsort_safe(l, n, sizeof(BlockdevRange), range_cmp);
        for (size_t i = 0; i < n; i++) {
                if (m > 0 && l[i].offset <= l[m - 1].offset + l[m - 1].length) {
                        uint64_t end = MAX(l[m - 1].offset + l[m - 1].length, l[i].offset + l[i].length);
                        l[m - 1].length = end - l[m - 1].offset;
                } else
                        l[m++] = l[i];
        }
        *ret = TAKE_PTR(l);
        *ret_n = m;
        return 0;
}

int blockdev_get_size(int fd, uint64_t *ret) {
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISREG(st.st_mode)) {
                *ret = (uint64_t)st.st_size;
                return 0;
        }
        if (!S_ISBLK(st.st_mode))
                return -ENOTBLK;
        uint64_t size;
        if (ioctl(fd, BLKGETSIZE64, &size) < 0)
                return -errno;
        *ret = size;
        return 0;
}

/* O_DIRECT on fd for the duration of a proof: the disk's content, not pages cached before someone wrote
 * to it behind our back. Returns the flags to restore, or -1 when nothing is to be restored. */
static int direct_io_begin(int fd) {
        int flags = fcntl(fd, F_GETFL);
        if (flags < 0 || (flags & O_DIRECT))
                return -1;
        if (fcntl(fd, F_SETFL, flags | O_DIRECT) < 0)
                return -1; /* not supported here (tmpfs): buffered it is */
        return flags;
}

static void direct_io_end(int fd, int flags) {
        if (flags >= 0)
                (void)fcntl(fd, F_SETFL, flags);
}

/* pread/pwrite of the whole length; an O_DIRECT refusal (EINVAL) falls back to buffered I/O once (for every
 * worker on the fd: another may have turned O_DIRECT off already). */
static int io_full(int fd, bool write, void *buf, size_t length, uint64_t offset) {
        size_t done = 0;
        bool fell_back = false;
        while (done < length) {
                ssize_t k = write ? pwrite(fd, (char *)buf + done, length - done, (off_t)(offset + done))
                                  : pread(fd, (char *)buf + done, length - done, (off_t)(offset + done));
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0 && errno == EINVAL) {
                        int flags = fcntl(fd, F_GETFL);
                        if (fell_back || flags < 0 ||
                            ((flags & O_DIRECT) && fcntl(fd, F_SETFL, flags & ~O_DIRECT) < 0))
                                return -EINVAL;
                        fell_back = true;
                        continue;
                }
                if (k < 0)
                        return -errno;
                if (k == 0)
                        return -EIO; /* the device shrank under us */
                done += (size_t)k;
        }
        return 0;
}

static bool find_nonzero(const unsigned char *p, size_t n, size_t *ret) {
        for (size_t i = 0; i < n; i++)
                if (p[i] != 0) {
                        *ret = i;
                        return true;
                }
        return false;
}

/* The proof's reads and the wipe's writes go ZERO_IO_WORKERS at a time: a disk serves many requests at once,
 * and one after another the proof would wait out ~150-200 round trips (on EBS each is ~0.5 ms away). The
 * work is the ranges cut at ZERO_IO_CHUNK, taken in offset order; the caller's thread is one of the
 * workers, and a worker that cannot be started only makes it slower. */
#define ZERO_IO_WORKERS 8
/* Each worker's memory, one mapping for all and gone with the call (glibc would keep a thread stack it
 * allocated, and the pages it touched, for the next thread): a guard page, the stack, the buffer. */
#define ZERO_IO_GUARD UINT64_C(4096)
#define ZERO_IO_STACK (UINT64_C(128) << 10)
#define ZERO_IO_SLOT  (ZERO_IO_GUARD + ZERO_IO_STACK + ZERO_IO_CHUNK)

typedef struct ZeroIo {
        int fd;
        bool fill;
        const BlockdevRange *items; /* sorted, each at most ZERO_IO_CHUNK */
        size_t n_items;
        pthread_mutex_t lock; /* guards what follows */
        size_t next;          /* the next item to take */
        int error;            /* the first error */
        uint64_t found;       /* the lowest non-zero byte found so far; UINT64_MAX: none */
} ZeroIo;

typedef struct ZeroIoWorker {
        ZeroIo *io;
        unsigned char *buf; /* ZERO_IO_CHUNK, aligned for O_DIRECT; zeros for fill */
        pthread_t thread;
} ZeroIoWorker;

/* After an error nothing more is read; after a non-zero byte only what lies before it still matters, so
 * the offset reported is the first one, as reading in order would find it. */
static bool zero_io_take(ZeroIo *z, size_t *ret) {
        pthread_mutex_lock(&z->lock);
        bool take = z->next < z->n_items && z->error == 0 && z->items[z->next].offset <= z->found;
        if (take)
                *ret = z->next++;
        pthread_mutex_unlock(&z->lock);
        return take;
}

static void *zero_io_work(void *userdata) {
        ZeroIoWorker *w = userdata;
        ZeroIo *z = w->io;
        size_t i, at = 0;
        while (zero_io_take(z, &i)) {
                const BlockdevRange *it = &z->items[i];
                int r = io_full(z->fd, z->fill, w->buf, (size_t)it->length, it->offset);
                bool nonzero = r == 0 && !z->fill && find_nonzero(w->buf, (size_t)it->length, &at);
                if (r == 0 && !nonzero)
                        continue;
                pthread_mutex_lock(&z->lock);
                if (r < 0 && z->error == 0)
                        z->error = r;
                if (nonzero)
                        z->found = MIN(z->found, it->offset + at);
                pthread_mutex_unlock(&z->lock);
        }
        return NULL;
}

/* The ranges cut into items of at most ZERO_IO_CHUNK. */
static int zero_io_items(const BlockdevRange *l, size_t n, BlockdevRange **ret, size_t *ret_n) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
                m += (size_t)((l[i].length + ZERO_IO_CHUNK - 1) / ZERO_IO_CHUNK);
        BlockdevRange *items = new0(BlockdevRange, MAX(m, (size_t)1));
        if (!items)
                return -ENOMEM;
        m = 0;
        for (size_t i = 0; i < n; i++)
                for (uint64_t off = 0; off < l[i].length; off += ZERO_IO_CHUNK)
                        items[m++] =
                            (BlockdevRange){ l[i].offset + off, MIN(ZERO_IO_CHUNK, l[i].length - off) };
        *ret = items;
        *ret_n = m;
        return 0;
}

/* Runs the workers over z's items. The buffers are zeros (fresh anonymous pages) and page-aligned. */
static int zero_io_run(ZeroIo *z) {
        size_t n = MIN((size_t)ZERO_IO_WORKERS, MAX(z->n_items, (size_t)1)), started = 0;
        ZeroIoWorker w[ZERO_IO_WORKERS];
        unsigned char *mem =
            mmap(NULL, n * ZERO_IO_SLOT, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED)
                return -errno;
        for (size_t i = 0; i < n; i++)
                w[i] =
                    (ZeroIoWorker){ .io = z, .buf = mem + i * ZERO_IO_SLOT + ZERO_IO_GUARD + ZERO_IO_STACK };
        for (size_t i = 1; i < n; i++, started++) {
                unsigned char *slot = mem + i * ZERO_IO_SLOT;
                pthread_attr_t attr;
                if (mprotect(slot, ZERO_IO_GUARD, PROT_NONE) < 0 || pthread_attr_init(&attr) != 0)
                        break;
                bool ok = pthread_attr_setstack(&attr, slot + ZERO_IO_GUARD, ZERO_IO_STACK) == 0 &&
                          pthread_create(&w[i].thread, &attr, zero_io_work, &w[i]) == 0;
                (void)pthread_attr_destroy(&attr);
                if (!ok)
                        break;
        }
        (void)zero_io_work(&w[0]);
        for (size_t i = 1; i <= started; i++)
                (void)pthread_join(w[i].thread, NULL);
        (void)munmap(mem, n * ZERO_IO_SLOT);
        return 0;
}

/* Reads (or, fill, writes zeros over) every range. Returns 1 with the first non-zero offset when reading
 * finds one. */
static int zero_ranges_io(int fd, bool fill, uint64_t *ret_offset, uint64_t *ret_bytes) {
        _cleanup_free_ BlockdevRange *l = NULL, *items = NULL;
        uint64_t size, bytes = 0;
        size_t n, n_items;
        int r = blockdev_get_size(fd, &size);
        if (r < 0)
                return r;
        r = blockdev_zero_ranges(size, &l, &n);
        if (r < 0)
                return r;
        r = zero_io_items(l, n, &items, &n_items);
        if (r < 0)
                return r;
        ZeroIo z = { .fd = fd, .fill = fill, .items = items, .n_items = n_items, .found = UINT64_MAX };
        if (pthread_mutex_init(&z.lock, NULL) != 0)
                return -ENOMEM;
        int saved = direct_io_begin(fd);
        r = zero_io_run(&z);
        direct_io_end(fd, saved);
        (void)pthread_mutex_destroy(&z.lock);
        if (r < 0)
                return r;
        if (z.found != UINT64_MAX) {
                *ret_offset = z.found;
                return 1;
        }
        if (z.error < 0)
                return z.error;
        if (fill && fsync(fd) < 0)
                return -errno;
        for (size_t i = 0; i < n_items; i++)
                bytes += items[i].length;
        if (ret_bytes)
                *ret_bytes = bytes;
        return 0;
}

int blockdev_prove_zero(int fd, uint64_t *ret_offset) {
        uint64_t off = 0;
        int r = zero_ranges_io(fd, false, &off, NULL);
        if (r == 1)
                *ret_offset = off;
        return r;
}

int blockdev_zero_fill(int fd, uint64_t *ret_bytes) {
        return zero_ranges_io(fd, true, NULL, ret_bytes);
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

int blockdev_open_exclusive_flags(const char *path, int flags, usec_t timeout) {
        usec_t deadline = now(CLOCK_MONOTONIC) + timeout;
        for (;;) {
                int fd = open(path, flags | O_EXCL | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
                if (fd >= 0)
                        return fd;
                int e = errno;
                if (e != EBUSY)
                        return -e;
                /* still held when the time is up: EBUSY, as the open said */
                int r = deadline_sleep(deadline, 20 * USEC_PER_MSEC);
                if (r < 0)
                        return r == PK_ETIMEOUT ? -e : r;
        }
}

int blockdev_open_exclusive(const char *path, usec_t timeout) {
        return blockdev_open_exclusive_flags(path, O_RDONLY, timeout);
}

static void describe_processes(dev_t devnum, char **out) {
        DIR *proc = opendir("/proc");
        if (!proc)
                return;
        char self[16];
        snprintf(self, sizeof(self), "%d", (int)getpid());
        /* bounded: one pass over /proc; a process's fds are listed once. Not this process: what it holds
         * there is read-only and shared, never what makes an exclusive open fail. */
        for (struct dirent *de; (de = readdir(proc));) {
                if (de->d_name[0] < '1' || de->d_name[0] > '9' || streq(de->d_name, self))
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

/* The first line of a small sysfs file, without its newline. */
static int read_one_line(const char *path, char *buf, size_t size) {
        _cleanup_free_ char *s = NULL;
        size_t len;
        int r = read_full_file(path, size - 1, &s, &len);
        if (r < 0)
                return r;
        s[strcspn(s, "\n")] = 0;
        snprintf(buf, size, "%s", s);
        return 0;
}

int blockdev_whole_disk(dev_t devnum, dev_t *ret) {
        char path[96], buf[32];
        unsigned maj, min;
        snprintf(path, sizeof(path), "/sys/dev/block/%u:%u", major(devnum), minor(devnum));
        if (access(path, F_OK) < 0)
                return errno == ENOENT ? 0 : -errno;
        snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/partition", major(devnum), minor(devnum));
        if (access(path, F_OK) < 0) {
                *ret = devnum;
                return 1;
        }
        snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/../dev", major(devnum), minor(devnum));
        int r = read_one_line(path, buf, sizeof(buf));
        if (r < 0)
                return r == -ENOENT ? 0 : r;
        if (sscanf(buf, "%u:%u", &maj, &min) != 2)
                return -EIO;
        *ret = makedev(maj, min);
        return 1;
}

int blockdev_sysfs_size(dev_t devnum, uint64_t *ret) {
        char path[96], buf[32];
        snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/size", major(devnum), minor(devnum));
        int r = read_one_line(path, buf, sizeof(buf));
        if (r < 0)
                return r;
        uint64_t sectors;
        if (safe_atou64(buf, &sectors) < 0 || sectors > UINT64_MAX / 512)
                return -EIO;
        *ret = sectors * 512;
        return 0;
}

int blockdev_holds_root(dev_t devnum) {
        struct stat root;
        dev_t root_disk;
        if (stat("/", &root) < 0)
                return -errno;
        int r = blockdev_whole_disk(root.st_dev, &root_disk);
        return r <= 0 ? r : root_disk == devnum;
}
