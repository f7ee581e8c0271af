/* SPDX-License-Identifier: Apache-2.0 */
/* A fault-injecting shim for the integration tests (LD_PRELOAD): every stat and open of a path that ends
 * in one of the suffixes of PK_FAULT_EIO (":"-separated, e.g. "/member:/member-change-main") fails with
 * EIO, as on a volume whose disk returns read errors. Nothing else changes. The machines that run the tests
 * have no device-mapper (its "error" target would be the other way to get a real EIO). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static bool faulty(const char *path) {
        const char *list = getenv("PK_FAULT_EIO");
        size_t pl = path ? strlen(path) : 0;
        for (const char *p = list; p && *p;) {
                size_t n = strcspn(p, ":");
                if (n > 0 && pl >= n && memcmp(path + pl - n, p, n) == 0)
                        return true;
                p += n + (p[n] == ':');
        }
        return false;
}

#define REAL(name, type) ((type)dlsym(RTLD_NEXT, name))

int stat(const char *path, struct stat *st) {
        if (faulty(path))
                return errno = EIO, -1;
        return REAL("stat", int (*)(const char *, struct stat *))(path, st);
}

int lstat(const char *path, struct stat *st) {
        if (faulty(path))
                return errno = EIO, -1;
        return REAL("lstat", int (*)(const char *, struct stat *))(path, st);
}

int fstatat(int dfd, const char *path, struct stat *st, int flags) {
        if (faulty(path))
                return errno = EIO, -1;
        return REAL("fstatat", int (*)(int, const char *, struct stat *, int))(dfd, path, st, flags);
}

int statx(int dfd, const char *path, int flags, unsigned mask, struct statx *st) {
        if (faulty(path))
                return errno = EIO, -1;
        return REAL("statx", int (*)(int, const char *, int, unsigned, struct statx *))(dfd, path, flags,
                                                                                        mask, st);
}

/* open() is openat(AT_FDCWD): one way in, so a path is judged once whichever the program calls. */
static int open_at(int dfd, const char *path, int flags, va_list ap) {
        mode_t mode = flags & (O_CREAT | O_TMPFILE) ? va_arg(ap, mode_t) : 0;
        if (faulty(path))
                return errno = EIO, -1;
        return REAL("openat", int (*)(int, const char *, int, ...))(dfd, path, flags, mode);
}

int open(const char *path, int flags, ...) {
        va_list ap;
        va_start(ap, flags);
        int r = open_at(AT_FDCWD, path, flags, ap);
        va_end(ap);
        return r;
}

int openat(int dfd, const char *path, int flags, ...) {
        va_list ap;
        va_start(ap, flags);
        int r = open_at(dfd, path, flags, ap);
        va_end(ap);
        return r;
}
