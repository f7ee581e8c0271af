/* SPDX-License-Identifier: Apache-2.0 */
#include "manifest/manifest-dir.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/string-util.h"

int manifest_write(const char *path, const char *text) {
        return write_file_atomic(path, text, strlen(text), 0644, 1);
}

int manifest_write_file(const char *path, const char *text) {
        const char *slash = strrchr(path, '/');
        if (slash && slash != path) {
                _cleanup_free_ char *dir = strndup(path, (size_t)(slash - path));
                int r = dir ? mkdir_p(dir, 0755) : -ENOMEM;
                if (r < 0)
                        return r;
        }
        return manifest_write(path, text);
}

/* 1: link_path is a symlink to target; 0: it is absent or points elsewhere; -EEXIST: not a symlink. */
static int symlink_points_at(const char *link_path, const char *target) {
        char cur[4096];
        struct stat st;

        if (lstat(link_path, &st) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISLNK(st.st_mode))
                return -EEXIST;
        ssize_t n = readlink(link_path, cur, sizeof(cur) - 1);
        if (n < 0)
                return 0;
        cur[n] = 0;
        return streq(cur, target);
}

/* The link replaced atomically by a new entry (basic/fileio.h's symlink_renew_at: a temporary link of its
 * own renamed over it), then the directory made durable. */
static int replace_symlink(const char *link_path, const char *target) {
        _cleanup_free_ char *d = strdup(link_path), *b = strdup(link_path);
        if (!d || !b)
                return -ENOMEM;
        _cleanup_close_ int dfd = open(dirname(d), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        int r = symlink_renew_at(dfd, target, basename(b));
        if (r < 0)
                return r;
        return fsync(dfd) < 0 ? -errno : 1;
}

int manifest_symlink(const char *link_path, const char *target) {
        int r = symlink_points_at(link_path, target);
        if (r != 0)
                return r < 0 ? r : 0;
        return replace_symlink(link_path, target);
}

int manifest_symlink_renew(const char *link_path, const char *target) {
        int r = symlink_points_at(link_path, target);
        if (r <= 0)
                return r;
        r = replace_symlink(link_path, target);
        return r < 0 ? r : 1;
}
