/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's /healthz and /metrics server, driven as the loop drives it (poll its fd, dispatch), with
 * real sockets on loopback. */
#include "unit-test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "daemon/http-server.h"

static Metrics metrics;

static int client(HttpServer *s) {
        struct sockaddr_in a = { .sin_family = AF_INET,
                                 .sin_port = htons((uint16_t)http_server_port(s)),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
        return fd;
}

/* Runs the server until fd has its whole answer (the server closes after it); returns it. */
static char *answer(HttpServer *s, int fd) {
        static char buf[1 << 16];
        size_t got = 0;
        for (unsigned i = 0; i < 2000; i++) {
                struct pollfd p[2] = { { .fd = http_server_fd(s), .events = POLLIN },
                                       { .fd = fd, .events = POLLIN } };
                assert_true(poll(p, 2, 10) >= 0);
                if (p[0].revents)
                        http_server_dispatch(s);
                if (p[1].revents) {
                        ssize_t n = read(fd, buf + got, sizeof(buf) - 1 - got);
                        assert_true(n >= 0);
                        if (n == 0)
                                break;
                        got += (size_t)n;
                }
        }
        buf[got] = 0;
        close(fd);
        return buf;
}

static char *ask(HttpServer *s, const char *request) {
        int fd = client(s);
        assert_int_equal(loop_write(fd, request, strlen(request)), 0);
        return answer(s, fd);
}

static void test_requests(void **state) {
        HttpServer *s = NULL;
        assert_int_equal(http_server_start("127.0.0.1:0", &metrics, &s), 0);
        assert_true(http_server_port(s) > 0);
        assert_int_equal(http_server_timeout_ms(s), -1);

        char *r = ask(s, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_true(startswith(r, "HTTP/1.1 503 Service Unavailable\r\n")); /* no pass yet: "starting" */
        assert_non_null(strstr(r, "Connection: close\r\n"));
        assert_non_null(strstr(r, "\r\n\r\nstarting"));

        metrics.passes = 7;
        r = ask(s, "GET /metrics?x=1 HTTP/1.0\r\n\r\n");
        assert_true(startswith(r, "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4"));
        char *body = strstr(r, "\r\n\r\n") + 4;
        unsigned len;
        assert_int_equal(sscanf(strstr(r, "Content-Length: "), "Content-Length: %u", &len), 1);
        assert_int_equal(strlen(body), len);
        assert_non_null(strstr(body, "protokube_passes_total 7\n"));

        r = ask(s, "HEAD /metrics HTTP/1.1\r\n\r\n");
        assert_true(startswith(r, "HTTP/1.1 200 OK\r\n"));
        assert_string_equal(strstr(r, "\r\n\r\n"), "\r\n\r\n"); /* the length, not the body */

        assert_true(startswith(ask(s, "GET /nope HTTP/1.1\r\n\r\n"), "HTTP/1.1 404 "));
        assert_true(
            startswith(ask(s, "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n"), "HTTP/1.1 405 "));
        assert_true(startswith(ask(s, "hello\r\n\r\n"), "HTTP/1.1 400 "));
        assert_true(startswith(ask(s, "GET metrics HTTP/1.1\r\n\r\n"), "HTTP/1.1 400 "));

        char big[5000];
        memset(big, 'a', sizeof(big) - 1);
        big[sizeof(big) - 1] = 0;
        memcpy(big, "GET /", 5);
        assert_true(startswith(ask(s, big), "HTTP/1.1 431 "));

        /* A head that comes in pieces. */
        int fd = client(s);
        assert_int_equal(loop_write(fd, "GET /heal", 9), 0);
        struct pollfd p = { .fd = http_server_fd(s), .events = POLLIN };
        assert_int_equal(poll(&p, 1, 1000), 1);
        http_server_dispatch(s);
        assert_true(http_server_timeout_ms(s) > 0); /* a connection open: its time runs */
        assert_int_equal(loop_write(fd, "thz HTTP/1.1\r\n\r\n", 17), 0);
        assert_true(startswith(answer(s, fd), "HTTP/1.1 503 "));
        assert_int_equal(http_server_timeout_ms(s), -1);
        http_server_stop(s);
}

/* Past 32 connections the next is closed at once; the 32 still get their answers. */
static void test_connection_limit(void **state) {
        HttpServer *s = NULL, *v6 = NULL;
        int fds[33];
        if (http_server_start("[::1]:0", &metrics, &v6) == 0) { /* where the machine has IPv6 loopback */
                assert_true(http_server_port(v6) > 0);
                http_server_stop(v6);
        }
        assert_int_equal(http_server_start("127.0.0.1:0", &metrics, &s), 0);
        for (size_t i = 0; i < ELEMENTSOF(fds); i++) {
                fds[i] = client(s);
                struct pollfd p = { .fd = http_server_fd(s), .events = POLLIN };
                if (poll(&p, 1, 1000) == 1)
                        http_server_dispatch(s);
        }
        char c;
        struct pollfd last = { .fd = fds[32], .events = POLLIN };
        assert_int_equal(poll(&last, 1, 1000), 1);
        assert_true(read(fds[32], &c, 1) <= 0);
        close(fds[32]);
        for (size_t i = 0; i < 32; i++) {
                assert_int_equal(loop_write(fds[i], "GET /nope HTTP/1.1\r\n\r\n", 22), 0);
                assert_true(startswith(answer(s, fds[i]), "HTTP/1.1 404 "));
        }
        assert_int_equal(http_server_start("127.0.0.1:99999", &metrics, &s), -EINVAL);
        http_server_stop(s);
}

/* Out of fds, a waiting connection cannot be accepted: the listening socket leaves the poll for a while
 * (instead of waking the loop at once, again and again), then the connection is taken and answered. */
static void test_fd_exhaustion_pauses_the_listener(void **state) {
        HttpServer *s = NULL;
        struct rlimit old, low;
        int fillers[64], n_fillers = 0;

        assert_int_equal(http_server_start("127.0.0.1:0", &metrics, &s), 0);
        int fd = client(s);
        assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
        low = (struct rlimit){ .rlim_cur = 64, .rlim_max = old.rlim_max };
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
        for (int f;
             n_fillers < (int)ELEMENTSOF(fillers) && (f = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;)
                fillers[n_fillers++] = f;
        assert_int_equal(errno, EMFILE);

        struct pollfd p = { .fd = http_server_fd(s), .events = POLLIN };
        assert_int_equal(poll(&p, 1, 1000), 1);
        http_server_dispatch(s); /* accept: EMFILE */
        assert_int_equal(poll(&p, 1, 0), 0);
        int wait_ms = http_server_timeout_ms(s);
        assert_true(wait_ms > 0 && wait_ms <= 1000);

        while (n_fillers > 0)
                close(fillers[--n_fillers]);
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
        assert_int_equal(poll(NULL, 0, wait_ms), 0);
        http_server_dispatch(s); /* the listening socket is polled again */
        assert_int_equal(http_server_timeout_ms(s), -1);
        assert_int_equal(loop_write(fd, "GET /nope HTTP/1.1\r\n\r\n", 22), 0);
        assert_true(startswith(answer(s, fd), "HTTP/1.1 404 "));
        http_server_stop(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_requests),
                cmocka_unit_test(test_connection_limit),
                cmocka_unit_test(test_fd_exhaustion_pauses_the_listener),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
