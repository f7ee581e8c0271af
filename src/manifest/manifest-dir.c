/* SPDX-License-Identifier: Apache-2.0 */
#include "manifest/manifest-dir.h"

#include <errno.h>
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

static int replace_symlink(const char *link_path, const char *target) {
        _cleanup_free_ char *d = strdup(link_path), *b = strdup(link_path), *tmp = NULL;

        if (!d || !b)
                return -ENOMEM;

        for (unsigned attempt = 0; attempt < 16; attempt++) {
                free(tmp);
                tmp = strprintf("%s/.%s.%u.%u", dirname(d), basename(b), (unsigned)getpid(), attempt);
                if (!tmp)
                        return -ENOMEM;
                free(d);
                d = strdup(link_path);
                if (!d)
                        return -ENOMEM;
                if (symlink(target, tmp) >= 0)
                        break;
                if (errno != EEXIST)
                        return -errno;
                unlink(tmp); /* a stale temp of a crashed earlier run with our pid: safe to drop */
        }
        if (rename(tmp, link_path) < 0) {
                int r = -errno;
                unlink(tmp);
                return r;
        }
        int r = fsync_parent_dir(link_path);
        return r < 0 ? r : 1;
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
