/* SPDX-License-Identifier: Apache-2.0 */
#include "fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "beneath.h"
#include "macro.h"
#include "string-util.h"

/* Grows buf from cap to ncap bytes; for a secret, by copy and erase, so no copy is left in freed memory. */
static char *read_grow(char *buf, size_t cap, size_t ncap, bool secret) {
        if (!secret)
                return realloc(buf, ncap);
        char *n = malloc(ncap);
        if (n && buf) {
                memcpy(n, buf, cap);
                erase_and_free(buf, cap);
        }
        return n;
}

static int read_full_fd_impl(int fd, size_t max, bool secret, char **ret, size_t *ret_len) {
        char *buf = NULL;
        size_t len = 0, cap = 0;
        int r = 0;

        for (;;) {
                if (len + 1 >= cap) {
                        size_t ncap = cap ? cap * 2 : 4096;
                        if (ncap > max + 1)
                                ncap = max + 1;
                        if (ncap <= len + 1) {
                                r = -EFBIG;
                                break;
                        }
                        char *n = read_grow(buf, cap, ncap, secret);
                        if (!n) {
                                r = -ENOMEM;
                                break;
                        }
                        buf = n;
                        cap = ncap;
                }
                ssize_t k = read(fd, buf + len, cap - 1 - len);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        r = -errno;
                        break;
                }
                if (k == 0)
                        break;
                len += (size_t)k;
        }
        if (r < 0) {
                if (secret)
                        erase_and_free(buf, cap);
                else
                        free(buf);
                return r;
        }
        if (!buf) {
                buf = strdup("");
                if (!buf)
                        return -ENOMEM;
        }
        buf[len] = 0;
        *ret = buf;
        if (ret_len)
                *ret_len = len;
        return 0;
}

int read_full_fd(int fd, size_t max, char **ret, size_t *ret_len) {
        return read_full_fd_impl(fd, max, false, ret, ret_len);
}

int read_full_fd_secret(int fd, size_t max, char **ret, size_t *ret_len) {
        return read_full_fd_impl(fd, max, true, ret, ret_len);
}

int read_full_file(const char *path, size_t max, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        return read_full_fd(fd, max, ret, ret_len);
}

int read_full_file_secret(const char *path, size_t max, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        return read_full_fd_secret(fd, max, ret, ret_len);
}

/* offset < 0: write() at the file position (pipes, sockets); else pwrite() at offset. */
static int write_all(int fd, const void *buf, size_t len, off_t offset) {
        const char *p = buf;
        while (len > 0) {
                ssize_t k = offset < 0 ? write(fd, p, len) : pwrite(fd, p, len, offset);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += k;
                len -= (size_t)k;
                if (offset >= 0)
                        offset += k;
        }
        return 0;
}

int loop_write(int fd, const void *buf, size_t len) {
        return write_all(fd, buf, len, -1);
}

int loop_pwrite(int fd, const void *buf, size_t len, size_t offset) {
        return write_all(fd, buf, len, (off_t)offset);
}

int fsync_parent_dir(const char *path) {
        _cleanup_free_ char *copy = strdup(path);
        if (!copy)
                return -ENOMEM;
        _cleanup_close_ int dfd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        if (fsync(dfd) < 0)
                return -errno;
        return 0;
}

int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode, int only_if_changed) {
        _cleanup_free_ char *copy_dir = strdup(path), *copy_base = strdup(path);
        if (!copy_dir || !copy_base)
                return -ENOMEM;
        /* the directory is the caller's (a path it chose); only the final name is replaced, never followed
         */
        _cleanup_close_ int dfd = open(dirname(copy_dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        return beneath_write_file_atomic(dfd, basename(copy_base), data, len, mode, only_if_changed);
}

static int symlink_temp_at(int dfd, const char *target, const char *link, char **ret_tmp) {
        for (unsigned attempt = 0; attempt < 8; attempt++) {
                uint8_t rnd[8];
                char hex[2 * sizeof(rnd) + 1];
                if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
                        return -EIO;
                for (size_t i = 0; i < sizeof(rnd); i++)
                        snprintf(hex + 2 * i, 3, "%02x", rnd[i]);
                _cleanup_free_ char *tmp = strjoin(".", link, ".tmp-", hex);
                if (!tmp)
                        return -ENOMEM;
                if (symlinkat(target, dfd, tmp) >= 0) {
                        *ret_tmp = TAKE_PTR(tmp);
                        return 0;
                }
                if (errno != EEXIST)
                        return -errno;
        }
        return -EEXIST;
}

static int symlink_swap_at(int dfd, const char *target, const char *link, bool always, char **ret_old) {
        char buf[PATH_MAX];
        _cleanup_free_ char *tmp = NULL, *old = NULL;
        ssize_t n = readlinkat(dfd, link, buf, sizeof(buf) - 1);
        if (n >= 0) {
                buf[n] = 0;
                if (streq(buf, target) && !always)
                        return ret_old && !(*ret_old = strdup(buf)) ? -ENOMEM : 0;
                if (!(old = strdup(buf)))
                        return -ENOMEM;
        }
        int r = symlink_temp_at(dfd, target, link, &tmp);
        if (r < 0)
                return r;
        if (renameat(dfd, tmp, dfd, link) < 0) {
                r = -errno;
                (void)unlinkat(dfd, tmp, 0);
                return r;
        }
        if (ret_old)
                *ret_old = TAKE_PTR(old);
        return 1;
}

int symlink_replace_at(int dfd, const char *target, const char *link, char **ret_old) {
        return symlink_swap_at(dfd, target, link, false, ret_old);
}

int symlink_renew_at(int dfd, const char *target, const char *link) {
        return symlink_swap_at(dfd, target, link, true, NULL);
}

#define RM_RF_DEPTH_MAX   32
#define RM_RF_ENTRIES_MAX 65536U

static int rm_rf_level(int dfd, const char *name, unsigned depth, unsigned *budget) {
        if (unlinkat(dfd, name, 0) >= 0 || errno == ENOENT)
                return 0;
        if (errno != EISDIR && errno != EPERM) /* EPERM: Linux's answer for a directory */
                return -errno;
        if (depth >= RM_RF_DEPTH_MAX)
                return -E2BIG;
        int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        DIR *d = fdopendir(fd);
        if (!d) {
                int r = -errno;
                close(fd);
                return r;
        }
        int r = 0;
        for (struct dirent *de; r >= 0 && (de = readdir(d));) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if ((*budget)-- == 0)
                        r = -E2BIG;
                else
                        r = rm_rf_level(dirfd(d), de->d_name, depth + 1, budget);
        }
        closedir(d);
        if (r >= 0 && unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                r = -errno;
        return r;
}

int rm_rf_at(int dfd, const char *name) {
        unsigned budget = RM_RF_ENTRIES_MAX;
        return rm_rf_level(dfd, name, 0, &budget);
}

int dir_present(const char *path) {
        struct stat st;
        if (stat(path, &st) < 0)
                return errno == ENOENT ? 0 : -errno;
        return S_ISDIR(st.st_mode) ? 1 : -ENOTDIR;
}

int file_present(const char *path) {
        struct stat st;
        if (stat(path, &st) < 0)
                return errno == ENOENT ? 0 : -errno;
        return S_ISREG(st.st_mode) ? 1 : -EBADFD;
}

int mkdir_p(const char *path, mode_t mode) {
        _cleanup_free_ char *p = strdup(path);
        if (!p)
                return -ENOMEM;
        for (char *s = p + 1; *s; s++) {
                if (*s != '/')
                        continue;
                *s = 0;
                if (mkdir(p, mode) < 0 && errno != EEXIST)
                        return -errno;
                *s = '/';
        }
        if (mkdir(p, mode) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}
