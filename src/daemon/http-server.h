/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* /healthz and /metrics over HTTP/1.1 (GET and HEAD, one request per connection, 32 connections, 5 s
 * each), driven from the daemon's own epoll loop (no threads). */

#include "daemon/report.h"

typedef struct HttpServer HttpServer;

/* listen: "127.0.0.1:9797", "[::1]:9797" (port 0 = any free port). Serves from *metrics, read at each
 * request. */
int http_server_start(const char *listen, const Metrics *metrics, HttpServer **ret);
HttpServer *http_server_stop(HttpServer *s);
/* An fd to poll for input; call http_server_dispatch() when it is readable (or the timeout expires). */
int http_server_fd(HttpServer *s);
/* Milliseconds until a connection's time is up (dispatch then closes it) or, after accept ran out of fds,
 * until the listening socket is polled again; -1 for neither. */
int http_server_timeout_ms(HttpServer *s);
void http_server_dispatch(HttpServer *s);
unsigned http_server_port(HttpServer *s);

/* Parses "host:port" / "[v6]:port" into a sockaddr; -EINVAL names nothing (the caller does). */
struct sockaddr_storage;
int parse_listen_address(const char *s, struct sockaddr_storage *ret, unsigned *ret_len);
