/* SPDX-License-Identifier: Apache-2.0 */
#include "daemon/http-server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "basic/macro.h"
#include "basic/parse-util.h"
#include "basic/string-util.h"
#include "shared/http-wire.h"

#define SERVER_CONNECTIONS 32
#define REQUEST_HEAD_MAX   4096
#define CONNECTION_TIMEOUT (5 * USEC_PER_SEC)
#define EPOLL_LISTEN       UINT64_MAX /* the listening socket's tag; a connection's is its slot */
/* Out of fds (or memory), a waiting connection cannot be taken and keeps the listening socket readable:
 * polling it then would wake the loop at once, again and again. It is left out of the poll this long. */
#define LISTEN_PAUSE (1 * USEC_PER_SEC)

/* A connection reads one request head, then writes one response and is closed (Connection: close). */
typedef struct ServerConn {
        int fd;         /* -1: the slot is free */
        usec_t expires; /* CLOCK_MONOTONIC: closed then, whatever its state */
        char *in;       /* REQUEST_HEAD_MAX bytes while reading; NULL afterwards */
        size_t in_len;
        char *out; /* the whole response while writing */
        size_t out_len, out_done;
} ServerConn;

struct HttpServer {
        int listen_fd;
        int epoll_fd; /* the listening socket and every connection; the daemon's loop polls this one fd */
        unsigned port;
        usec_t listen_paused_until; /* CLOCK_MONOTONIC; 0: the listening socket is polled */
        const Metrics *metrics;
        ServerConn conns[SERVER_CONNECTIONS];
};

int parse_listen_address(const char *s, struct sockaddr_storage *ret, unsigned *ret_len) {
        char host[64];
        const char *port_str;
        uint16_t port;

        if (isempty(s) || strlen(s) >= sizeof(host))
                return -EINVAL;
        if (s[0] == '[') {
                const char *end = strchr(s, ']');
                if (!end || end[1] != ':')
                        return -EINVAL;
                memcpy(host, s + 1, (size_t)(end - s - 1));
                host[end - s - 1] = 0;
                port_str = end + 2;
        } else {
                const char *colon = strrchr(s, ':');
                if (!colon)
                        return -EINVAL;
                memcpy(host, s, (size_t)(colon - s));
                host[colon - s] = 0;
                port_str = colon + 1;
        }
        if (safe_atou16(port_str, &port) < 0)
                return -EINVAL;
        memset(ret, 0, sizeof(*ret));
        struct sockaddr_in *in4 = (struct sockaddr_in *)ret;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ret;
        if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
                in4->sin_family = AF_INET;
                in4->sin_port = htons(port);
                *ret_len = sizeof(*in4);
                return 0;
        }
        if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
                in6->sin6_family = AF_INET6;
                in6->sin6_port = htons(port);
                *ret_len = sizeof(*in6);
                return 0;
        }
        return -EINVAL;
}

static void conn_close(HttpServer *s, ServerConn *c) {
        if (c->fd < 0)
                return;
        /* Input left unread at close() makes the kernel reset the connection, and a reset can destroy the
         * response still on its way (a request head past the cap, a body we ignore): drain what is there. */
        char sink[1024];
        for (unsigned i = 0; i < 64 && recv(c->fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; i++)
                ;
        (void)epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
        safe_close(c->fd);
        free(c->in);
        free(c->out);
        *c = (ServerConn){ .fd = -1 };
}

static const char *reason(unsigned status) {
        switch (status) {
        case 200:
                return "OK";
        case 400:
                return "Bad Request";
        case 404:
                return "Not Found";
        case 405:
                return "Method Not Allowed";
        case 431:
                return "Request Header Fields Too Large";
        case 503:
                return "Service Unavailable";
        default:
                return "Error";
        }
}

/* The response to a request (method and path parsed; status 400/431 when it could not be). */
static int build_response(HttpServer *s, ServerConn *c, unsigned status, const char *method,
                          const char *path) {
        _cleanup_buf_ Buf body = {};
        const char *type = "text/plain";
        buf_init(&body, 1 << 20);
        if (status != 200)
                (void)buf_printf(&body, "%s\n", status == 431 ? "request head too large" : "bad request");
        else if (!streq(method, "GET") && !streq(method, "HEAD"))
                status = 405, (void)buf_add_str(&body, "method not allowed\n");
        else if (streq(path, "/healthz")) {
                char text[600];
                status = (unsigned)health_status(s->metrics, text, sizeof(text));
                type = "text/plain; charset=utf-8";
                (void)buf_add_str(&body, text);
        } else if (streq(path, "/metrics")) {
                type = "text/plain; version=0.0.4; charset=utf-8";
                if (metrics_format(s->metrics, &body) < 0)
                        return -ENOMEM;
        } else
                status = 404, (void)buf_add_str(&body, "not found\n");
        bool head_only = status != 400 && status != 431 && streq(method, "HEAD");
        _cleanup_buf_ Buf out = {};
        buf_init(&out, (1 << 20) + 512);
        int r =
            buf_printf(&out,
                       "HTTP/1.1 %u %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n"
                       "\r\n",
                       status, reason(status), type, body.len);
        if (r >= 0 && !head_only && body.len > 0)
                r = buf_add(&out, body.data, body.len);
        if (r < 0)
                return r;
        c->out_len = out.len;
        c->out = buf_steal_str(&out);
        return c->out ? 0 : -ENOMEM;
}

/* Reads what the client sent; once the head is complete (or cannot be), the response is ready to write. */
static int conn_read(HttpServer *s, ServerConn *c) {
        for (;;) {
                ssize_t n = recv(c->fd, c->in + c->in_len, REQUEST_HEAD_MAX - c->in_len, 0);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return errno == EAGAIN ? 0 : -errno;
                if (n == 0)
                        return -ECONNRESET; /* gone before its request was whole */
                c->in_len += (size_t)n;
                char method[16] = "", path[256] = "";
                unsigned status = 200;
                if (http_head_end(c->in, c->in_len) > 0) {
                        int r = http_parse_request_line(c->in, c->in_len, method, sizeof(method), path,
                                                        sizeof(path));
                        status = r == 0 ? 200 : r == -ENAMETOOLONG ? 431 : 400;
                } else if (c->in_len == REQUEST_HEAD_MAX)
                        status = 431;
                else
                        continue;
                free(c->in);
                c->in = NULL;
                int r = build_response(s, c, status, method, path);
                if (r < 0)
                        return r;
                struct epoll_event ev = { .events = EPOLLOUT, .data.u64 = (uint64_t)(c - s->conns) };
                return epoll_ctl(s->epoll_fd, EPOLL_CTL_MOD, c->fd, &ev) < 0 ? -errno : 0;
        }
}

static int conn_write(ServerConn *c) {
        while (c->out_done < c->out_len) {
                ssize_t n = send(c->fd, c->out + c->out_done, c->out_len - c->out_done, MSG_NOSIGNAL);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return errno == EAGAIN ? 0 : -errno;
                c->out_done += (size_t)n;
        }
        return 1; /* all written */
}

static void listen_pause(HttpServer *s) {
        if (epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, s->listen_fd, NULL) == 0)
                s->listen_paused_until = now(CLOCK_MONOTONIC) + LISTEN_PAUSE;
}

static void listen_resume_when_due(HttpServer *s, usec_t t) {
        struct epoll_event ev = { .events = EPOLLIN, .data.u64 = EPOLL_LISTEN };
        if (s->listen_paused_until == 0 || t < s->listen_paused_until)
                return;
        if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->listen_fd, &ev) == 0)
                s->listen_paused_until = 0;
        else
                s->listen_paused_until = t + LISTEN_PAUSE; /* still short of memory: later */
}

static void accept_all(HttpServer *s) {
        for (;;) {
                int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (fd < 0) {
                        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                                listen_pause(s);
                        return; /* else EAGAIN, or a client that left: nothing more to take now */
                }
                ServerConn *c = NULL;
                for (size_t i = 0; i < SERVER_CONNECTIONS && !c; i++)
                        if (s->conns[i].fd < 0)
                                c = &s->conns[i];
                struct epoll_event ev = { .events = EPOLLIN };
                if (!c || !(c->in = malloc(REQUEST_HEAD_MAX))) {
                        safe_close(fd); /* at the limit: the client sees the connection closed */
                        continue;
                }
                ev.data.u64 = (uint64_t)(c - s->conns);
                if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0) {
                        free(c->in);
                        c->in = NULL;
                        safe_close(fd);
                        continue;
                }
                c->fd = fd;
                c->in_len = 0;
                c->expires = now(CLOCK_MONOTONIC) + CONNECTION_TIMEOUT;
        }
}

static int listen_on(const struct sockaddr_storage *sa, unsigned salen) {
        int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
        if (fd < 0)
                return -errno;
        (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (sa->ss_family == AF_INET6)
                (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
        if (bind(fd, (const struct sockaddr *)sa, salen) < 0 || listen(fd, SERVER_CONNECTIONS) < 0) {
                int r = -errno;
                safe_close(fd);
                return r;
        }
        return fd;
}

int http_server_start(const char *listen, const Metrics *metrics, HttpServer **ret) {
        struct sockaddr_storage sa;
        unsigned salen;
        HttpServer *s = new0(HttpServer, 1);

        if (!s)
                return -ENOMEM;
        s->listen_fd = s->epoll_fd = -1;
        for (size_t i = 0; i < SERVER_CONNECTIONS; i++)
                s->conns[i].fd = -1;
        s->metrics = metrics;
        int r = parse_listen_address(listen, &sa, &salen) < 0 ? -EINVAL : listen_on(&sa, salen);
        if (r >= 0) {
                s->listen_fd = r;
                r = s->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
                if (r < 0)
                        r = -EADDRNOTAVAIL;
        }
        struct epoll_event ev = { .events = EPOLLIN, .data.u64 = EPOLL_LISTEN };
        socklen_t l = sizeof(sa);
        if (r >= 0 && (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->listen_fd, &ev) < 0 ||
                       getsockname(s->listen_fd, (struct sockaddr *)&sa, &l) < 0))
                r = -errno;
        if (r < 0) {
                http_server_stop(s);
                return r == -EINVAL ? r : -EADDRNOTAVAIL;
        }
        s->port = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
                                                 : ((struct sockaddr_in *)&sa)->sin_port);
        *ret = s;
        return 0;
}

HttpServer *http_server_stop(HttpServer *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < SERVER_CONNECTIONS; i++)
                conn_close(s, &s->conns[i]);
        safe_close(s->listen_fd);
        safe_close(s->epoll_fd);
        free(s);
        return NULL;
}

int http_server_fd(HttpServer *s) {
        return s->epoll_fd;
}

int http_server_timeout_ms(HttpServer *s) {
        usec_t t = now(CLOCK_MONOTONIC), first = s->listen_paused_until ?: USEC_INFINITY;
        for (size_t i = 0; i < SERVER_CONNECTIONS; i++)
                if (s->conns[i].fd >= 0)
                        first = MIN(first, s->conns[i].expires);
        if (first == USEC_INFINITY)
                return -1;
        return first <= t ? 0 : (int)MIN((first - t + 999) / 1000, (usec_t)60000);
}

void http_server_dispatch(HttpServer *s) {
        struct epoll_event ev[16];
        int n = epoll_wait(s->epoll_fd, ev, ELEMENTSOF(ev), 0);
        for (int i = 0; i < n; i++) {
                if (ev[i].data.u64 == EPOLL_LISTEN) {
                        accept_all(s);
                        continue;
                }
                ServerConn *c = &s->conns[ev[i].data.u64];
                if (c->fd < 0)
                        continue;
                int r = c->in ? conn_read(s, c) : 0;
                if (r == 0 && !c->in)
                        r = conn_write(c); /* the response is ready: what fits is written now */
                if (r != 0)
                        conn_close(s, c); /* answered, failed, or gone */
        }
        usec_t t = now(CLOCK_MONOTONIC);
        for (size_t i = 0; i < SERVER_CONNECTIONS; i++)
                if (s->conns[i].fd >= 0 && s->conns[i].expires <= t)
                        conn_close(s, &s->conns[i]);
        listen_resume_when_due(s, t);
}

unsigned http_server_port(HttpServer *s) {
        return s->port;
}
