/* SPDX-License-Identifier: Apache-2.0 */
/* The workload of the tests and demos (image protokube.test/podnet:1, scripts/k8s-images.sh): no registry
 * is reachable here, so the pods that prove the pods' network run this one static binary.
 *
 *   podnet serve PORT          answers every connection with "podnet NAME\n" (NAME: $POD_NAME, else the
 *                              hostname) and closes it;
 *   podnet get ADDRESS PORT    connects, prints "got: " and the answer (or why not) once a second, at most
 *                              N times ($TRIES, default 120), then sleeps so that its log stays readable;
 *                              exits 1 when no try got an answer;
 *   podnet ask ADDRESS PORT    the same, but exits 0 once answered (a command for kubectl exec).
 * IPv4 and IPv6 literals only (no resolver in the image). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static int parse_addr(const char *addr, const char *port, struct sockaddr_storage *ss, socklen_t *len) {
        struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
        long p = strtol(port, NULL, 10);
        memset(ss, 0, sizeof(*ss));
        if (p <= 0 || p > 65535)
                return -1;
        if (inet_pton(AF_INET, addr, &a4->sin_addr) == 1) {
                a4->sin_family = AF_INET;
                a4->sin_port = htons((unsigned short)p);
                *len = sizeof(*a4);
                return 0;
        }
        if (inet_pton(AF_INET6, addr, &a6->sin6_addr) == 1) {
                a6->sin6_family = AF_INET6;
                a6->sin6_port = htons((unsigned short)p);
                *len = sizeof(*a6);
                return 0;
        }
        return -1;
}

static int serve(const char *port) {
        char name[256] = "", line[320];
        const char *pod = getenv("POD_NAME");
        struct sockaddr_storage ss;
        socklen_t len;
        int one = 1;
        if (pod && *pod)
                snprintf(name, sizeof(name), "%s", pod);
        else
                gethostname(name, sizeof(name) - 1);
        if (parse_addr("::", port, &ss, &len) < 0)
                return 2;
        int fd = socket(AF_INET6, SOCK_STREAM, 0);
        if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
            bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 64) < 0) {
                perror("podnet serve");
                return 1;
        }
        int n = snprintf(line, sizeof(line), "podnet %s\n", name);
        printf("serving on port %s as %s\n", port, name);
        fflush(stdout);
        for (;;) {
                int c = accept(fd, NULL, NULL);
                if (c < 0)
                        continue;
                if (write(c, line, (size_t)n) < 0)
                        perror("podnet write");
                close(c);
        }
}

/* One try: the answer in buf, or why not. 0 when it answered. */
static int get_once(const struct sockaddr_storage *ss, socklen_t len, char *buf, size_t size) {
        struct timeval tv = { .tv_sec = 2 };
        int fd = socket(ss->ss_family, SOCK_STREAM, 0);
        if (fd < 0)
                return snprintf(buf, size, "socket: %s", strerror(errno)), -1;
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        if (connect(fd, (const struct sockaddr *)ss, len) < 0) {
                snprintf(buf, size, "connect: %s", strerror(errno));
                close(fd);
                return -1;
        }
        ssize_t n = read(fd, buf, size - 1);
        close(fd);
        if (n <= 0)
                return snprintf(buf, size, "read: %s", n < 0 ? strerror(errno) : "nothing"), -1;
        buf[n] = 0;
        buf[strcspn(buf, "\n")] = 0;
        return 0;
}

/* keep_running: after the answer, the process stays (a pod whose log says what it got); else it exits 0 (a
 * command run with kubectl exec, which returns when the command ends). */
static int get(const char *addr, const char *port, bool keep_running) {
        struct sockaddr_storage ss;
        socklen_t len;
        const char *t = getenv("TRIES");
        long tries = t ? strtol(t, NULL, 10) : 120, ok = 0;
        char buf[512];
        if (parse_addr(addr, port, &ss, &len) < 0 || tries <= 0 || tries > 100000) {
                fprintf(stderr, "podnet get: bad address '%s', port '%s' or TRIES\n", addr, port);
                return 2;
        }
        for (long i = 0; i < tries && !ok; i++) {
                ok = get_once(&ss, len, buf, sizeof(buf)) == 0;
                printf("%s: %s\n", ok ? "got" : "no answer", buf);
                fflush(stdout);
                if (!ok)
                        sleep(1);
        }
        if (!ok)
                return 1;
        while (keep_running)
                pause();
        return 0;
}

int main(int argc, char **argv) {
        signal(SIGPIPE, SIG_IGN);
        if (argc == 3 && strcmp(argv[1], "serve") == 0)
                return serve(argv[2]);
        if (argc == 4 && strcmp(argv[1], "get") == 0)
                return get(argv[2], argv[3], true);
        if (argc == 4 && strcmp(argv[1], "ask") == 0)
                return get(argv[2], argv[3], false);
        fprintf(stderr, "usage: podnet serve PORT | podnet get ADDRESS PORT | podnet ask ADDRESS PORT\n");
        return 2;
}
