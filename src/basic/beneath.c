/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/beneath.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/string-util.h"

static bool component_valid(const char *c, size_t len) {
        return len > 0 && !(len == 1 && c[0] == '.') && !(len == 2 && c[0] == '.' && c[1] == '.');
}

/* With O_DIRECTORY|O_NOFOLLOW the kernel answers ENOTDIR for a symlink too: tell the two apart. */
static int open_dir_at(int dirfd, const char *name, bool create, mode_t mode) {
        for (unsigned attempt = 0; attempt < 2; attempt++) {
                int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd >= 0)
                        return fd;
                int err = errno;
                struct stat st;
                if (err == ENOTDIR && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) >= 0 &&
                    S_ISLNK(st.st_mode))
                        return -ELOOP; /* say "a symlink", not only "not a directory" */
                if (err != ENOENT || !create)
                        return -err;
                if (mkdirat(dirfd, name, mode) < 0 && errno != EEXIST)
                        return -errno;
        }
        return -ENOENT;
}

int beneath_open_dir(int dirfd, const char *rel, bool create, mode_t mode) {
        _cleanup_close_ int cur = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
        if (cur < 0)
                return -errno;
        if (isempty(rel) || rel[0] == '/')
                return -EINVAL;
        for (const char *p = rel; *p;) {
                size_t len = strcspn(p, "/");
                if (!component_valid(p, len) || len >= 256)
                        return -EINVAL;
                char name[256];
                memcpy(name, p, len);
                name[len] = 0;
                int next = open_dir_at(cur, name, create, mode);
                if (next < 0)
                        return next;
                safe_close(cur);
                cur = next;
                p += len;
                while (*p == '/')
                        p++;
        }
        return TAKE_FD(cur);
}

static int name_check(const char *name) {
        if (isempty(name) || strchr(name, '/') || !component_valid(name, strlen(name)))
                return -EINVAL;
        return 0;
}

/* A regular file's fd, opened without following a symlink and without blocking on a FIFO. */
static int open_regular_at(int dirfd, const char *name) {
        _cleanup_close_ int fd =
            openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        struct stat st;
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        return TAKE_FD(fd);
}

static int read_at(int dirfd, const char *name, size_t max, bool secret, char **ret, size_t *ret_len) {
        int r = name_check(name);
        if (r < 0)
                return r;
        _cleanup_close_ int fd = open_regular_at(dirfd, name);
        if (fd < 0)
                return fd;
        return secret ? read_full_fd_secret(fd, max, ret, ret_len) : read_full_fd(fd, max, ret, ret_len);
}

int beneath_read_file(int dirfd, const char *name, size_t max, char **ret, size_t *ret_len) {
        return read_at(dirfd, name, max, false, ret, ret_len);
}

int beneath_read_file_secret(int dirfd, const char *name, size_t max, char **ret, size_t *ret_len) {
        return read_at(dirfd, name, max, true, ret, ret_len);
}

static bool holds_exactly(int dirfd, const char *name, const void *data, size_t len, mode_t mode) {
        _cleanup_close_ int fd = open_regular_at(dirfd, name);
        _cleanup_free_ char *old = NULL;
        struct stat st;
        size_t old_len;
        if (fd < 0 || fstat(fd, &st) < 0 || (st.st_mode & 07777) != mode || (size_t)st.st_size != len)
                return false;
        if (read_full_fd(fd, len + 1, &old, &old_len) < 0)
                return false;
        return old_len == len && memcmp(old, data, len) == 0;
}

int beneath_write_file_atomic(int dirfd, const char *name, const void *data, size_t len, mode_t mode,
                              bool only_if_changed) {
        char tmp[300];
        _cleanup_close_ int fd = -EBADF;
        int r = name_check(name);
        if (r < 0)
                return r;
        if (strlen(name) > 200)
                return -ENAMETOOLONG;
        if (only_if_changed && holds_exactly(dirfd, name, data, len, mode))
                return 0;
        for (unsigned attempt = 0; attempt < 16 && fd < 0; attempt++) {
                uint64_t rnd = 0;
                if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) < 0)
                        rnd = ((uint64_t)getpid() << 16) ^ attempt;
                snprintf(tmp, sizeof(tmp), ".%s.%016llx", name, (unsigned long long)rnd);
                fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
                if (fd < 0 && errno != EEXIST)
                        return -errno;
        }
        if (fd < 0)
                return -EEXIST;
        r = loop_write(fd, data, len);
        if (r >= 0 && fchmod(fd, mode) < 0)
                r = -errno;
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        if (r >= 0 && renameat(dirfd, tmp, dirfd, name) < 0)
                r = -errno;
        if (r < 0) {
                (void)unlinkat(dirfd, tmp, 0);
                return r;
        }
        if (fsync(dirfd) < 0)
                return -errno;
        return 1;
}
