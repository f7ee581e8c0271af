/* SPDX-License-Identifier: Apache-2.0 */
/*
 * go-runner for the test images (scripts/k8s-images.sh): the official kube-* images start their binary
 * through /go-runner, and protokube's manifests do the same (`/go-runner --log-file=PATH --also-stdout CMD
 * ARGS...`). This is a small equivalent of our own, built static: it runs CMD with its stdout and stderr on
 * a pipe, appends everything read from the pipe to the log file and, with --also-stdout, copies it to its
 * own stdout (which the container runtime keeps as the container's log). SIGTERM and SIGINT are forwarded to
 * the child, so kubelet's stop reaches the component; it exits with the child's status (128 + N when the
 * child died of signal N).
 *
 * Flags end at the first argument that does not start with '-' (or after `--`), as Go's flag package does;
 * `-flag` and `--flag` are the same. --redirect-stderr=false leaves the child's stderr alone.
 */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static volatile sig_atomic_t child_pid = 0;

static void forward_signal(int sig) {
        if (child_pid > 0)
                (void)kill((pid_t)child_pid, sig);
}

static int write_all(int fd, const char *buf, size_t n) {
        while (n > 0) {
                ssize_t k = write(fd, buf, n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                buf += k;
                n -= (size_t)k;
        }
        return 0;
}

static const char *flag_value(const char *arg, const char *name) {
        size_t n = strlen(name);

        while (*arg == '-')
                arg++;
        if (strncmp(arg, name, n) != 0)
                return NULL;
        if (arg[n] == '\0')
                return "";
        if (arg[n] == '=')
                return arg + n + 1;
        return NULL;
}

static int usage(void) {
        fputs("usage: go-runner [--log-file=PATH] [--also-stdout] [--redirect-stderr=BOOL] CMD [ARGS...]\n",
              stderr);
        return 2;
}

int main(int argc, char *argv[]) {
        const char *log_file = NULL, *v;
        bool also_stdout = false, redirect_stderr = true;
        int i, log_fd = -1, p[2], r, status;
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        sigset_t block, old, deflt;
        struct sigaction sa = { .sa_handler = forward_signal };
        pid_t pid;

        for (i = 1; i < argc && argv[i][0] == '-'; i++) {
                if (strcmp(argv[i], "--") == 0) {
                        i++;
                        break;
                }
                if ((v = flag_value(argv[i], "log-file")) && *v)
                        log_file = v;
                else if ((v = flag_value(argv[i], "also-stdout")))
                        also_stdout = *v == '\0' || strcmp(v, "true") == 0;
                else if ((v = flag_value(argv[i], "redirect-stderr")))
                        redirect_stderr = *v == '\0' || strcmp(v, "true") == 0;
                else {
                        fprintf(stderr, "go-runner: unknown flag '%s'\n", argv[i]);
                        return usage();
                }
        }
        if (i >= argc)
                return usage();

        if (log_file) {
                log_fd = open(log_file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
                if (log_fd < 0) {
                        fprintf(stderr, "go-runner: cannot open log file '%s': %m\n", log_file);
                        return 1;
                }
        } else
                also_stdout = true; /* nowhere else to go */

        if (pipe2(p, O_CLOEXEC) < 0) {
                perror("go-runner: pipe");
                return 1;
        }

        /* Signals are blocked until the child's pid is known, so none is lost between spawn and forwarding.
         */
        sigemptyset(&block);
        sigaddset(&block, SIGTERM);
        sigaddset(&block, SIGINT);
        sigprocmask(SIG_BLOCK, &block, &old);
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        signal(SIGPIPE, SIG_IGN);

        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
        if (redirect_stderr)
                posix_spawn_file_actions_adddup2(&fa, p[1], STDERR_FILENO);
        posix_spawnattr_init(&attr);
        sigemptyset(&deflt);
        sigaddset(&deflt, SIGTERM);
        sigaddset(&deflt, SIGINT);
        sigaddset(&deflt, SIGPIPE);
        posix_spawnattr_setsigdefault(&attr, &deflt);
        posix_spawnattr_setsigmask(&attr, &old);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
        r = posix_spawnp(&pid, argv[i], &fa, &attr, argv + i, environ);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        close(p[1]);
        if (r != 0) {
                fprintf(stderr, "go-runner: cannot run '%s': %s\n", argv[i], strerror(r));
                return 127;
        }
        child_pid = pid;
        sigprocmask(SIG_SETMASK, &old, NULL);

        for (;;) {
                char buf[8192];
                ssize_t n = read(p[0], buf, sizeof buf);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break; /* EOF: the child and everything that inherited the pipe closed it */
                if (log_fd >= 0)
                        (void)write_all(log_fd, buf, (size_t)n);
                if (also_stdout)
                        (void)write_all(STDOUT_FILENO, buf, (size_t)n);
        }

        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR) {
                        perror("go-runner: waitpid");
                        return 1;
                }
        if (WIFSIGNALED(status))
                return 128 + WTERMSIG(status);
        return WEXITSTATUS(status);
}
