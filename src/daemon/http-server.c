/* SPDX-License-Identifier: Apache-2.0 */
#include "daemon/http-server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "basic/macro.h"
#include "basic/parse-util.h"

struct HttpServer {
        struct MHD_Daemon *mhd;
        const Metrics *metrics;
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

static enum MHD_Result respond(struct MHD_Connection *c, unsigned status, const char *type, char *body,
                               size_t len) {
        struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
        if (!resp) {
                free(body);
                return MHD_NO;
        }
        MHD_add_response_header(resp, "Content-Type", type);
        enum MHD_Result r = MHD_queue_response(c, status, resp);
        MHD_destroy_response(resp);
        return r;
}

static enum MHD_Result handle_request(void *cls, struct MHD_Connection *c, const char *url,
                                      const char *method, const char *version, const char *upload_data,
                                      size_t *upload_size, void **req_cls) {
        HttpServer *s = cls;

        if (!streq(method, "GET") && !streq(method, "HEAD"))
                return respond(c, 405, "text/plain", strdup("method not allowed\n"), 19);
        if (streq(url, "/healthz")) {
                char body[600];
                unsigned status = (unsigned)health_status(s->metrics, body, sizeof(body));
                char *copy = strdup(body);
                return copy ? respond(c, status, "text/plain; charset=utf-8", copy, strlen(copy)) : MHD_NO;
        }
        if (streq(url, "/metrics")) {
                Buf b;
                buf_init(&b, 1 << 20);
                if (metrics_format(s->metrics, &b) < 0) {
                        buf_free(&b);
                        return MHD_NO;
                }
                size_t len = b.len;
                return respond(c, 200, "text/plain; version=0.0.4; charset=utf-8", buf_steal_str(&b), len);
        }
        return respond(c, 404, "text/plain", strdup("not found\n"), 10);
}

int http_server_start(const char *listen, const Metrics *metrics, HttpServer **ret) {
        struct sockaddr_storage sa;
        unsigned salen;
        _cleanup_free_ HttpServer *s = new0(HttpServer, 1);

        if (!s)
                return -ENOMEM;
        if (parse_listen_address(listen, &sa, &salen) < 0)
                return -EINVAL;
        s->metrics = metrics;
        unsigned flags = MHD_USE_EPOLL | (sa.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
        s->mhd =
            MHD_start_daemon(flags, ntohs(((struct sockaddr_in *)&sa)->sin_port), NULL, NULL, handle_request,
                             s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_CONNECTION_TIMEOUT,
                             (unsigned)5, MHD_OPTION_CONNECTION_LIMIT, (unsigned)32, MHD_OPTION_END);
        if (!s->mhd)
                return -EADDRNOTAVAIL;
        *ret = TAKE_PTR(s);
        return 0;
}

HttpServer *http_server_stop(HttpServer *s) {
        if (!s)
                return NULL;
        if (s->mhd)
                MHD_stop_daemon(s->mhd);
        free(s);
        return NULL;
}

int http_server_fd(HttpServer *s) {
        const union MHD_DaemonInfo *i = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_EPOLL_FD);
        return i ? i->epoll_fd : -1;
}

int http_server_timeout_ms(HttpServer *s) {
        MHD_UNSIGNED_LONG_LONG t;
        if (MHD_get_timeout(s->mhd, &t) != MHD_YES)
                return -1;
        return t > 60000 ? 60000 : (int)t;
}

void http_server_dispatch(HttpServer *s) {
        MHD_run(s->mhd);
}

unsigned http_server_port(HttpServer *s) {
        const union MHD_DaemonInfo *i = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);
        return i ? i->port : 0;
}
