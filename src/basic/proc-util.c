/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/proc-util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/macro.h"
#include "basic/parse-util.h"

#define PROC_FDS_MAX 1048576U /* the kernel's default nr_open: a bound on one process's table */

/* 1 when one of pid's open files lives on dev; 0 otherwise (also when it ended or is not ours to see). */
static int pid_has_file_on(int proc_fd, const char *pid, dev_t dev) {
        char path[300]; /* a d_name is at most 255 bytes */
        snprintf(path, sizeof(path), "%s/fd", pid);
        int fd = openat(proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        DIR *d = fdopendir(fd);
        if (!d) {
                close(fd);
                return 0;
        }
        int found = 0;
        unsigned n = 0;
        struct dirent *de;
        while (!found && n++ < PROC_FDS_MAX && (de = readdir(d))) {
                struct stat st;
                if (de->d_name[0] == '.')
                        continue;
                /* follows the magic link: the open file itself, whatever path it was opened under */
                if (fstatat(dirfd(d), de->d_name, &st, 0) >= 0 && st.st_dev == dev)
                        found = 1;
        }
        closedir(d);
        return found;
}

int proc_files_open_on(dev_t dev, pid_t *ret_pid) {
        DIR *d = opendir("/proc");
        if (!d)
                return -errno;
        int r = 0;
        struct dirent *de;
        while (r == 0 && (de = readdir(d))) {
                unsigned pid;
                if (safe_atou(de->d_name, &pid) < 0 || pid == 0)
                        continue;
                if (pid_has_file_on(dirfd(d), de->d_name, dev) > 0) {
                        if (ret_pid)
                                *ret_pid = (pid_t)pid;
                        r = 1;
                }
        }
        closedir(d);
        return r;
}
