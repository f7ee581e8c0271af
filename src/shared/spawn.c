/* SPDX-License-Identifier: Apache-2.0 */
#include "shared/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/errors.h"
#include "basic/macro.h"

extern char **environ;

void spawn_result_done(SpawnResult *r) {
        free(r->output);
        *r = (SpawnResult){};
}

static int spawn_child(char *const argv[], int out_fd, pid_t *ret_pid) {
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        sigset_t none, all;
        pid_t pid;
        int r;

        r = posix_spawn_file_actions_init(&fa);
        if (r != 0)
                return -r;
        r = posix_spawnattr_init(&attr);
        if (r != 0) {
                posix_spawn_file_actions_destroy(&fa);
                return -r;
        }
        sigemptyset(&none);
        sigfillset(&all);
        /* The child starts with default signal dispositions and an empty mask, whatever the daemon uses
         * (signalfd blocks signals). */
        r = posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
        if (r == 0)
                r = posix_spawn_file_actions_adddup2(&fa, out_fd, STDOUT_FILENO);
        if (r == 0)
                r = posix_spawn_file_actions_adddup2(&fa, out_fd, STDERR_FILENO);
        if (r == 0)
                r = posix_spawnattr_setsigmask(&attr, &none);
        if (r == 0)
                r = posix_spawnattr_setsigdefault(&attr, &all);
        if (r == 0)
                r = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        if (r == 0)
                r = posix_spawnp(&pid, argv[0], &fa, &attr, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        if (r != 0)
                return -r;
        *ret_pid = pid;
        return 0;
}

/* Reads from fd until EOF or the deadline; keeps at most max bytes. Returns 0 at EOF, PK_ETIMEOUT. */
static int drain_pipe(int fd, usec_t deadline, Buf *out, int *truncated) {
        char chunk[4096];

        for (;;) {
                usec_t t = now(CLOCK_MONOTONIC);
                if (t >= deadline)
                        return PK_ETIMEOUT;
                usec_t left = deadline - t;
                int ms = (int)MIN(left / USEC_PER_MSEC + 1, (usec_t)60000);
                struct pollfd p = { .fd = fd, .events = POLLIN };
                int n = poll(&p, 1, ms);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        continue;
                ssize_t k = read(fd, chunk, sizeof(chunk));
                if (k < 0) {
                        if (errno == EINTR || errno == EAGAIN)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        return 0;
                size_t room = out->max > out->len ? out->max - out->len : 0;
                if ((size_t)k > room)
                        *truncated = 1;
                if (room > 0 && buf_add(out, chunk, MIN((size_t)k, room)) < 0)
                        return -ENOMEM;
        }
}

static int wait_child(pid_t pid, int *ret_status) {
        for (;;) {
                int st;
                if (waitpid(pid, &st, 0) < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                *ret_status = st;
                return 0;
        }
}

int spawn_run(char *const argv[], usec_t timeout, size_t output_max, SpawnResult *ret) {
        _cleanup_close_ int rfd = -1, wfd = -1;
        _cleanup_buf_ Buf out = {};
        int fds[2], truncated = 0, status = 0, r;
        pid_t pid = 0; /* spawn_child() sets it on success; GCC 12 cannot always see that */

        if (!argv || !argv[0])
                return -EINVAL;
        if (pipe2(fds, O_CLOEXEC) < 0)
                return -errno;
        rfd = fds[0];
        wfd = fds[1];
        buf_init(&out, output_max);

        r = spawn_child(argv, wfd, &pid);
        if (r < 0)
                return r;
        wfd = safe_close(wfd); /* EOF on rfd once the child (and its children) closed theirs */

        usec_t deadline = timeout == USEC_INFINITY ? USEC_INFINITY : now(CLOCK_MONOTONIC) + timeout;
        int d = drain_pipe(rfd, deadline, &out, &truncated);
        if (d < 0)
                (void)kill(pid, SIGKILL);
        r = wait_child(pid, &status);
        if (r < 0)
                return r;
        if (d < 0 && d != PK_ETIMEOUT)
                return d;

        SpawnResult res = {
                .exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                .term_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0,
                .truncated = truncated,
        };
        res.output_len = out.len;
        res.output = buf_steal_str(&out);
        if (!res.output)
                return -ENOMEM;
        *ret = res;
        if (d == 0 && !WIFEXITED(status))
                return PK_ECHILD;
        return d;
}

const char *spawn_result_describe(const SpawnResult *r, char *buf, size_t size) {
        if (r->term_signal > 0)
                snprintf(buf, size, "was killed by signal SIG%s (%s)", strna(sigabbrev_np(r->term_signal)),
                         strsignal(r->term_signal));
        else if (r->exit_status >= 0)
                snprintf(buf, size, "exited %d", r->exit_status);
        else
                snprintf(buf, size, "ended in an unknown way");
        return buf;
}
