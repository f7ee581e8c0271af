/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/generation.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "basic/time-util.h"

#define NAME_TRIES 16
#define SWEEP_MAX  4096 /* entries of the directory looked at: bounded */

static bool hex_run(const char *s, size_t n) {
        return strspn(s, "0123456789abcdef") >= n;
}

bool generation_name_is_valid(const char *name, const char *prefix) {
        const char *rest = startswith(name, prefix);
        if (!rest || strlen(rest) < 16 || !hex_run(rest, 16))
                return false;
        rest += 16;
        return *rest == 0 || (rest[0] == '.' && strlen(rest) == 9 && hex_run(rest + 1, 8));
}

static uint32_t random_u32(unsigned attempt) {
        uint32_t rnd = 0;
        if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
                rnd = ((uint32_t)getpid() << 8) ^ attempt ^ (uint32_t)now(CLOCK_MONOTONIC);
        return rnd;
}

int generation_create(int dfd, const char *prefix, const char *fresh, mode_t mode,
                      char ret_name[static GENERATION_NAME_MAX]) {
        for (unsigned attempt = 0; attempt < NAME_TRIES; attempt++) {
                char tmp[GENERATION_NAME_MAX];
                struct stat st;
                snprintf(tmp, sizeof(tmp), "%s%08x", fresh, random_u32(attempt));
                if (mkdirat(dfd, tmp, mode) < 0) {
                        if (errno == EEXIST)
                                continue;
                        return -errno;
                }
                _cleanup_close_ int fd = openat(dfd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                /* a sweep may take a fresh directory before its lock (as if its writer had died): another */
                if (fd < 0 || flock(fd, LOCK_EX) < 0 || fstat(fd, &st) < 0 || st.st_nlink == 0)
                        continue;
                if (fchmod(fd, mode) < 0) /* the umask may have taken bits */
                        return -errno;
                int n = snprintf(ret_name, GENERATION_NAME_MAX, "%s%016llx.%08x", prefix,
                                 (unsigned long long)now(CLOCK_REALTIME) * 1000ULL, random_u32(attempt));
                if (n < 0 || n >= GENERATION_NAME_MAX)
                        return -ENAMETOOLONG;
                if (renameat2(dfd, tmp, dfd, ret_name, RENAME_NOREPLACE) < 0) {
                        int r = -errno;
                        (void)unlinkat(dfd, tmp, AT_REMOVEDIR);
                        if (r == -EEXIST)
                                continue;
                        return r;
                }
                return TAKE_FD(fd);
        }
        return -EEXIST;
}

/* Whether the entry may go: one of ours by name, old enough, not what LINK names, held by nobody. 1 with
 * the lock in *ret_fd (kept while it is removed: a writer that made it a moment ago then finds it gone and
 * makes another), 0 to leave it. */
static int sweepable(int dfd, const char *name, const char *link, const char *prefix, const char *fresh,
                     const char *own, const char *replaced, int *ret_fd) {
        bool gen = generation_name_is_valid(name, prefix), new = startswith(name, fresh);
        char cur[GENERATION_NAME_MAX];
        if ((!gen && !new) || (own && streq(name, own)))
                return 0;
        /* names of one prefix sort by time: compare the time digits only */
        if (gen && (isempty(replaced) || strncmp(name, replaced, strlen(prefix) + 16) > 0))
                return 0;
        _cleanup_close_ int g = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (g < 0 || flock(g, LOCK_EX | LOCK_NB) < 0)
                return 0; /* gone, not a directory, or a writer's */
        ssize_t n = readlinkat(dfd, link, cur, sizeof(cur) - 1);
        if (n < 0 && errno != ENOENT)
                return -errno;
        if (n >= 0 && (size_t)n == strlen(name) && memcmp(cur, name, (size_t)n) == 0)
                return 0;
        *ret_fd = TAKE_FD(g);
        return 1;
}

int generation_sweep(int dfd, const char *link, const char *prefix, const char *fresh, const char *own,
                     const char *replaced) {
        int fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return -errno;
        DIR *d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return -errno;
        }
        int r = 0;
        unsigned seen = 0;
        for (struct dirent *de; r >= 0 && seen < SWEEP_MAX && (de = readdir(d)); seen++) {
                int held = -1;
                r = sweepable(dfd, de->d_name, link, prefix, fresh, own, replaced, &held);
                if (r > 0)
                        r = rm_rf_at(dfd, de->d_name);
                safe_close(held);
        }
        closedir(d);
        return r < 0 ? r : 0;
}
