/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/lock-file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/parse-util.h"
#include "basic/stop.h"

#define LOCK_POLL_INTERVAL (20 * USEC_PER_MSEC)

/* The pid the holder wrote; 0 when the file holds none (a holder between its flock and its write). */
static pid_t lock_holder(int fd) {
        char buf[32];
        ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
        unsigned pid = 0;
        if (n <= 0)
                return 0;
        buf[n] = 0;
        buf[strcspn(buf, "\n")] = 0;
        return safe_atou(buf, &pid) >= 0 && pid > 0 && pid <= INT32_MAX ? (pid_t)pid : 0;
}

static int lock_write_pid(int fd) {
        char buf[32];
        int n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
        if (ftruncate(fd, 0) < 0)
                return -errno;
        return loop_pwrite(fd, buf, (size_t)n, 0);
}

int lock_file_take(const char *path, usec_t wait, int *ret_fd, pid_t *ret_holder) {
        _cleanup_close_ int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        usec_t deadline = now(CLOCK_MONOTONIC) + wait;
        for (;;) {
                if (flock(fd, LOCK_EX | LOCK_NB) >= 0)
                        break;
                if (errno != EWOULDBLOCK && errno != EINTR)
                        return -errno;
                int r = wait > 0 ? deadline_sleep(deadline, LOCK_POLL_INTERVAL) : PK_ETIMEOUT;
                if (r == PK_ETIMEOUT) {
                        if (ret_holder)
                                *ret_holder = lock_holder(fd);
                        return -EBUSY;
                }
                if (r < 0)
                        return r;
        }
        int r = lock_write_pid(fd);
        if (r < 0)
                return r;
        *ret_fd = TAKE_FD(fd);
        return 0;
}
