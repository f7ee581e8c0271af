/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP/1.1 client: one connection per exchange (closed after it), dialled through tls-conn.c (name
 * lookups bounded by the connect timeout, TLS through OpenSSL's libssl), an http:// proxy from the
 * environment as curl reads it. The wire format's parsers are in http-wire.c. */
#include "shared/http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "basic/buf.h"
#include "basic/errors.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "shared/crypto.h"
#include "shared/http-wire.h"
#include "shared/tls-conn.h"

#define HTTP_IO_CHUNK         (16U * 1024)
#define HTTP_NO_PROXY_DEFAULT "127.0.0.1,localhost,::1,169.254.169.254"

typedef struct HttpProxy {
        HttpUrl url;
        const char *var; /* the environment variable it came from, for messages */
        char *auth;      /* "Basic ..." from the URL's user information: a secret */
} HttpProxy;

typedef struct HttpExchange {
        const HttpRequest *req;
        HttpUrl url;
        HttpProxy proxy;
        bool use_proxy;
        TlsConn conn; /* its what: the failure, for the caller's message */
        long status;
        Buf body, headers;
        int sink_error;
} HttpExchange;

/* Records the first failure's message (later ones are consequences) and passes r on. */
#define fail(x, r, ...) tls_conn_fail(&(x)->conn, r, __VA_ARGS__)

/* The name checked is the URL's, also through connect_to or a proxy's tunnel. */
static int tls_handshake(HttpExchange *x) {
        static const unsigned char alpn[] = "\x08http/1.1";
        const HttpRequest *req = x->req;
        TlsConnOptions o = { .server_name = x->url.host,
                             .ca_file = req->ca_file,
                             .ca_pem = req->ca_pem,
                             .cert_file = req->cert_file,
                             .key_file = req->key_file,
                             .unverified_server = req->unverified_server,
                             .alpn = alpn,
                             .alpn_len = sizeof(alpn) - 1 };
        return tls_conn_handshake(&x->conn, &o);
}

static bool request_has_header(const HttpRequest *req, const char *name) {
        size_t n = strlen(name);
        for (size_t i = 0; i < req->n_headers; i++)
                if (strncasecmp(req->headers[i], name, n) == 0 && req->headers[i][n] == ':')
                        return true;
        return false;
}

static bool request_sends_body(const HttpRequest *req) {
        return req->body_len > 0 || (!streq(req->method, "GET") && !streq(req->method, "DELETE"));
}

/* The request head: ours first (each unless the caller gave its own), then the caller's; a caller's
 * "Name:" with no value only removes ours (curl's convention). */
static int request_head(HttpExchange *x, Buf *b) {
        const HttpRequest *req = x->req;
        char authority[HTTP_HOST_MAX + 16];
        http_url_authority(&x->url, false, authority, sizeof(authority));
        const char *target = x->url.target_len > 0 ? x->url.target : "/";
        int target_len = x->url.target_len > 0 ? (int)x->url.target_len : 1;
        bool absolute = x->use_proxy && !x->url.tls; /* a plain request through a proxy names the URL */
        int r = buf_printf(b, "%s %s%s%.*s HTTP/1.1\r\n", req->method, absolute ? "http://" : "",
                           absolute ? authority : "", target_len, target);
        if (r >= 0 && !request_has_header(req, "Host"))
                r = buf_printf(b, "Host: %s\r\n", authority);
        if (r >= 0 && !request_has_header(req, "User-Agent"))
                r = buf_add_str(b, "User-Agent: protokube\r\n");
        if (r >= 0 && !request_has_header(req, "Accept"))
                r = buf_add_str(b, "Accept: */*\r\n");
        if (r >= 0 && request_sends_body(req) && !request_has_header(req, "Content-Length"))
                r = buf_printf(b, "Content-Length: %zu\r\n", req->body_len);
        if (r >= 0 && absolute && x->proxy.auth)
                r = buf_printf(b, "Proxy-Authorization: %s\r\n", x->proxy.auth);
        if (r >= 0)
                r = buf_add_str(b, "Connection: close\r\n");
        for (size_t i = 0; r >= 0 && i < req->n_headers; i++) {
                const char *v = strchr(req->headers[i], ':') + 1;
                if (v[strspn(v, " \t")] != 0)
                        r = buf_printf(b, "%s\r\n", req->headers[i]);
        }
        if (r >= 0)
                r = buf_add_str(b, "\r\n");
        return r < 0 ? fail(x, r, "the request head is too large") : 0;
}

static int send_request(HttpExchange *x) {
        Buf head;
        buf_init_secret(&head, HTTP_HEADERS_MAX); /* Authorization, X-Amz-Security-Token */
        int r = request_head(x, &head);
        if (r >= 0)
                r = tls_conn_write_all(&x->conn, head.data, head.len);
        buf_free(&head);
        if (r >= 0 && x->req->body_len > 0)
                r = tls_conn_write_all(&x->conn, x->req->body, x->req->body_len);
        return r;
}

static int deliver(HttpExchange *x, const char *data, size_t len) {
        if (len == 0)
                return 0;
        if (x->req->sink) {
                int r = x->req->sink(x->status, data, len, x->req->sink_userdata);
                if (r < 0) {
                        x->sink_error = r;
                        return fail(x, r, "the response was refused by its reader");
                }
                return 0;
        }
        if (buf_add(&x->body, data, len) < 0)
                return fail(x, PK_ETOOBIG, "response exceeds its size cap");
        return 0;
}

static int deliver_cb(const char *data, size_t len, void *userdata) {
        return deliver(userdata, data, len);
}

/* Reads until head holds a complete response head; returns its length. */
static int read_head(HttpExchange *x, Buf *head, char *buf, size_t *ret_len) {
        size_t end;
        while ((end = http_head_end((const char *)head->data, head->len)) == 0) {
                ssize_t n = tls_conn_read(&x->conn, buf, HTTP_IO_CHUNK);
                if (n < 0)
                        return (int)n;
                if (n == 0)
                        return fail(x, -EIO,
                                    head->len ? "the connection closed inside the response head"
                                              : "empty reply from server");
                if (buf_add(head, buf, (size_t)n) < 0)
                        return fail(x, PK_ETOOBIG, "the response head exceeds %u bytes", HTTP_HEADERS_MAX);
        }
        *ret_len = end;
        return 0;
}

/* The final response's head, past any 1xx interim ones; leaves what followed it at the start of pending. */
static int receive_head(HttpExchange *x, Buf *pending, char *buf, HttpResponseHead *ret,
                        const char *method) {
        for (;;) {
                size_t len;
                const char *what;
                int r = read_head(x, pending, buf, &len);
                if (r < 0)
                        return r;
                if (http_parse_response_head((const char *)pending->data, len, method, ret, &what) < 0)
                        return fail(x, -EIO, "bad response: %s", what);
                bool interim = ret->status < 200;
                if (ret->status == 101)
                        return fail(x, -EIO, "bad response: an unrequested protocol switch");
                if (!interim && (r = buf_add(&x->headers, pending->data, len)) < 0)
                        return fail(x, PK_ETOOBIG, "the response head exceeds its cap");
                memmove(pending->data, pending->data + len, pending->len - len);
                pending->len -= len;
                if (!interim)
                        return 0;
        }
}

static int receive_body(HttpExchange *x, const HttpResponseHead *h, const char *first, size_t first_len,
                        char *buf) {
        HttpChunked chunked = {};
        uint64_t left = h->content_length;
        const char *p = first;
        size_t n = first_len;
        const char *what;

        if (h->framing == HTTP_FRAMING_NONE)
                return 0;
        if (h->framing == HTTP_FRAMING_LENGTH && !x->req->sink &&
            h->content_length > (x->req->max_response ?: HTTP_RESPONSE_MAX_DEFAULT))
                return fail(x, PK_ETOOBIG, "response exceeds its size cap");
        for (;;) {
                int r = 0;
                if (h->framing == HTTP_FRAMING_LENGTH) {
                        size_t take = (size_t)MIN((uint64_t)n, left);
                        r = deliver(x, p, take);
                        left -= take;
                        if (r >= 0 && left == 0)
                                return 0;
                } else if (h->framing == HTTP_FRAMING_CHUNKED) {
                        int64_t k = http_chunked_feed(&chunked, p, n, deliver_cb, x, &what);
                        if (k == -EPROTO)
                                return fail(x, -EIO, "bad response: %s", what);
                        r = k < 0 ? (int)k : 0;
                        if (r >= 0 && http_chunked_done(&chunked))
                                return 0;
                } else
                        r = deliver(x, p, n);
                if (r < 0)
                        return r;
                ssize_t got = tls_conn_read(&x->conn, buf, HTTP_IO_CHUNK);
                if (got < 0)
                        return (int)got;
                if (got == 0)
                        return h->framing == HTTP_FRAMING_CLOSE
                                   ? 0
                                   : fail(x, -EIO, "the connection closed before the end of the body");
                p = buf;
                n = (size_t)got;
        }
}

static int receive_response(HttpExchange *x) {
        char *buf = malloc(HTTP_IO_CHUNK);
        Buf pending;
        HttpResponseHead h;
        int r;

        if (!buf)
                return -ENOMEM;
        if (x->req->sensitive)
                buf_init_secret(&pending, HTTP_HEADERS_MAX + HTTP_IO_CHUNK);
        else
                buf_init(&pending, HTTP_HEADERS_MAX + HTTP_IO_CHUNK);
        r = receive_head(x, &pending, buf, &h, x->req->method);
        if (r >= 0) {
                x->status = h.status;
                r = receive_body(x, &h, (const char *)pending.data, pending.len, buf);
        }
        buf_free(&pending);
        if (x->req->sensitive)
                explicit_bzero(buf, HTTP_IO_CHUNK);
        free(buf);
        return r;
}

/* "user:password@" of a proxy URL -> "Basic base64(user:password)" (both percent-decoded). */
static int proxy_auth(HttpExchange *x, const char *userinfo, size_t n) {
        _cleanup_erase_free_ char *plain = uri_decode(userinfo, n);
        _cleanup_erase_free_ char *b64 = NULL;
        if (!plain || crypto_base64_encode(plain, strlen(plain), &b64) < 0)
                return -ENOMEM;
        x->proxy.auth = strprintf("Basic %s", b64);
        return x->proxy.auth ? 0 : -ENOMEM;
}

static const char *proxy_variable(const HttpUrl *u, const char **ret_value) {
        static const char *const https[] = { "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY" };
        /* Only the lower-case http_proxy: HTTP_PROXY may come from a CGI request's "Proxy:" header. */
        static const char *const http[] = { "http_proxy", "all_proxy", "ALL_PROXY" };
        const char *const *names = u->tls ? https : http;
        size_t n = u->tls ? ELEMENTSOF(https) : ELEMENTSOF(http);
        for (size_t i = 0; i < n; i++) {
                const char *v = getenv(names[i]);
                if (!isempty(v)) {
                        *ret_value = v;
                        return names[i];
                }
        }
        return NULL;
}

/* The proxy the environment names for this URL, if any and unless no_proxy exempts the URL's host. */
static int proxy_setup(HttpExchange *x) {
        const char *value = NULL, *var = !x->req->via_proxy ? NULL : proxy_variable(&x->url, &value);
        if (!var)
                return 0;
        const char *np = getenv("no_proxy") ?: getenv("NO_PROXY") ?: HTTP_NO_PROXY_DEFAULT;
        if (http_no_proxy_matches(np, x->url.host))
                return 0;
        const char *rest = strstr(value, "://") ? startswith(value, "http://") : value;
        if (!rest) /* the value may hold credentials: name the variable only */
                return fail(x, -EINVAL, "%s: only an http:// proxy is supported", var);
        const char *at = NULL;
        for (const char *p = rest; *p && *p != '/'; p++)
                if (*p == '@')
                        at = p;
        if (at && proxy_auth(x, rest, (size_t)(at - rest)) < 0)
                return -ENOMEM;
        _cleanup_free_ char *url = strprintf("http://%s", at ? at + 1 : rest);
        if (!url)
                return -ENOMEM;
        if (http_url_parse(url, &x->proxy.url) < 0)
                return fail(x, -EINVAL, "%s is not a proxy URL (http://[user:password@]host[:port])", var);
        if (!x->proxy.url.port_given)
                x->proxy.url.port = 1080; /* curl's default proxy port */
        x->proxy.var = var;
        x->use_proxy = true;
        return 0;
}

/* CONNECT host:port through the proxy, for a TLS session with the server inside the tunnel. */
static int proxy_tunnel(HttpExchange *x, const char *host, uint16_t port) {
        char target[HTTP_HOST_MAX + 16], *buf = NULL;
        http_authority(host, port, target, sizeof(target));
        Buf req, reply;
        buf_init_secret(&req, HTTP_HEADERS_MAX);
        buf_init(&reply, HTTP_HEADERS_MAX);
        int r =
            buf_printf(&req, "CONNECT %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: protokube\r\n", target, target);
        if (r >= 0 && x->proxy.auth)
                r = buf_printf(&req, "Proxy-Authorization: %s\r\n", x->proxy.auth);
        if (r >= 0)
                r = buf_add_str(&req, "\r\n");
        if (r >= 0)
                r = tls_conn_write_all(&x->conn, req.data, req.len);
        HttpResponseHead h;
        size_t len = 0;
        const char *what;
        if (r >= 0)
                r = (buf = malloc(HTTP_IO_CHUNK)) ? read_head(x, &reply, buf, &len) : -ENOMEM;
        if (r >= 0 && http_parse_response_head((const char *)reply.data, len, "CONNECT", &h, &what) < 0)
                r = fail(x, -EIO, "bad answer from the proxy (%s): %s", x->proxy.var, what);
        else if (r >= 0 && (h.status < 200 || h.status > 299))
                r = fail(x, -EIO, "the proxy (%s) answered CONNECT with %u%s", x->proxy.var, h.status,
                         h.status == 407 ? " (proxy authentication required)" : "");
        else if (r >= 0 && reply.len != len)
                r = fail(x, -EIO, "the proxy (%s) sent data before the tunnel was used", x->proxy.var);
        buf_free(&req);
        buf_free(&reply);
        free(buf);
        return r;
}

/* Splits "HOST:PORT:ADDR:PORT" at the colons outside brackets: f[i] and n[i] for the four fields. */
static bool connect_to_split(const char *s, const char *f[4], size_t n[4]) {
        size_t i = 0;
        bool bracket = false;
        f[0] = s;
        for (const char *p = s;; p++) {
                if (*p == '[')
                        bracket = true;
                else if (*p == ']')
                        bracket = false;
                else if ((*p == ':' && !bracket) || *p == 0) {
                        if (i >= 4)
                                return false;
                        n[i] = (size_t)(p - f[i]);
                        if (*p == 0)
                                return i == 3;
                        f[++i] = p + 1;
                }
        }
}

static bool field_is(const char *f, size_t n, const char *s) {
        return strlen(s) == n && strncasecmp(f, s, n) == 0;
}

/* connect_to (curl's CONNECT_TO): when the URL's host and port match HOST and PORT (an empty field matches
 * any), the connection goes to ADDR:PORT (empty: the URL's) instead. */
static int connect_target(HttpExchange *x, char *addr, size_t size, uint16_t *port) {
        const char *f[4];
        size_t n[4];
        char url_port[8];
        snprintf(addr, size, "%s", x->url.host);
        *port = x->url.port;
        if (!x->req->connect_to)
                return 0;
        if (!connect_to_split(x->req->connect_to, f, n))
                return fail(x, -EINVAL, "bad connect_to");
        snprintf(url_port, sizeof(url_port), "%u", x->url.port);
        char host[HTTP_HOST_MAX + 2];
        http_authority(x->url.host, 0, host, sizeof(host));
        if ((n[0] > 0 && !field_is(f[0], n[0], host)) || (n[1] > 0 && !field_is(f[1], n[1], url_port)))
                return 0; /* for another host: connect where the URL says */
        const char *a = f[2];
        size_t al = n[2];
        if (al >= 2 && a[0] == '[' && a[al - 1] == ']')
                a++, al -= 2;
        if (al >= size)
                return fail(x, -EINVAL, "bad connect_to address");
        if (al > 0) {
                memcpy(addr, a, al);
                addr[al] = 0;
        }
        if (n[3] > 0)
                *port = (uint16_t)strtoul(f[3], NULL, 10);
        return 0;
}

static int exchange(HttpExchange *x) {
        char host[HTTP_HOST_MAX];
        uint16_t port;
        int r = proxy_setup(x);
        if (r >= 0)
                r = connect_target(x, host, sizeof(host), &port);
        if (r < 0)
                return r;
        r = x->use_proxy ? tls_conn_open(&x->conn, x->proxy.url.host, x->proxy.url.port)
                         : tls_conn_open(&x->conn, host, port);
        if (r >= 0 && x->use_proxy && x->url.tls)
                r = proxy_tunnel(x, host, port);
        if (r >= 0 && x->url.tls)
                r = tls_handshake(x);
        if (r >= 0)
                r = send_request(x);
        if (r >= 0)
                r = receive_response(x);
        return r;
}

char *http_connect_to_address(const char *host, unsigned port, const char *address) {
        bool v6 = strchr(address, ':');
        return strprintf("%s:%u:%s%s%s:%u", host, port, v6 ? "[" : "", address, v6 ? "]" : "", port);
}

/* "HOST:PORT:ADDR:PORT": four fields, the ports numbers or empty (an IPv6 ADDR in brackets may hold
 * colons). */
static bool http_connect_to_valid(const char *s) {
        const char *f[4];
        size_t n[4];
        if (strchr(s, ' ') || !connect_to_split(s, f, n))
                return false;
        for (size_t i = 1; i < 4; i += 2)
                if (n[i] > 5 || strspn(f[i], "0123456789") < n[i])
                        return false;
        return n[3] > 0;
}

/* A request to a server it does not authenticate sends nothing that a stranger may not see: https (it is
 * no request for plain http), no client certificate, no body, no credentials in a header, no proxy. */
static bool http_unverified_request_valid(const HttpRequest *req, const HttpUrl *url) {
        if (!url->tls || req->cert_file || req->key_file || req->ca_file || req->ca_pem ||
            req->body_len > 0 || req->via_proxy)
                return false;
        for (size_t i = 0; i < req->n_headers; i++)
                if (startswith_no_case(req->headers[i], "Authorization:") ||
                    startswith_no_case(req->headers[i], "Proxy-Authorization:") ||
                    startswith_no_case(req->headers[i], "Cookie:"))
                        return false;
        return true;
}

static int http_check_request(const HttpRequest *req, HttpUrl *url) {
        if (!req || isempty(req->method) || isempty(req->url) || string_has_cc(req->url) ||
            string_has_cc(req->method) || strpbrk(req->method, " \t"))
                return -EINVAL;
        if (http_url_parse(req->url, url) < 0)
                return -EINVAL;
        if (req->body_len > 0 && !req->body)
                return -EINVAL;
        if (!req->cert_file != !req->key_file)
                return -EINVAL; /* a client certificate needs its key and the other way round */
        if (req->ca_file && req->ca_pem)
                return -EINVAL; /* the CAs to trust from one place */
        if (req->connect_to && (string_has_cc(req->connect_to) || !http_connect_to_valid(req->connect_to)))
                return -EINVAL;
        for (size_t i = 0; i < req->n_headers; i++)
                if (!req->headers[i] || string_has_cc(req->headers[i]) || !strchr(req->headers[i], ':'))
                        return -EINVAL; /* a CR or LF would inject headers */
        if (req->unverified_server && !http_unverified_request_valid(req, url))
                return -EINVAL;
        return 0;
}

int http_request(const HttpRequest *req, HttpResponse *ret, char **ret_error) {
        HttpExchange x = { .req = req, .conn = TLS_CONN_NULL };
        int r = http_check_request(req, &x.url);
        if (r < 0) {
                if (ret_error)
                        *ret_error = strprintf("%s: invalid request", req && req->url ? req->url : "(none)");
                return r;
        }
        usec_t start = now(CLOCK_MONOTONIC);
        x.conn.deadline = start + (req->timeout ?: 30 * USEC_PER_SEC);
        x.conn.connect_deadline = MIN(x.conn.deadline, start + (req->connect_timeout ?: 5 * USEC_PER_SEC));
        if (req->sensitive) {
                buf_init_secret(&x.body, req->max_response ?: HTTP_RESPONSE_MAX_DEFAULT);
                buf_init_secret(&x.headers, HTTP_HEADERS_MAX);
        } else {
                buf_init(&x.body, req->max_response ?: HTTP_RESPONSE_MAX_DEFAULT);
                buf_init(&x.headers, HTTP_HEADERS_MAX);
        }
        sigset_t old;
        bool was_pending = tls_conn_sigpipe_block(&old);
        r = exchange(&x);
        tls_conn_close(&x.conn);
        tls_conn_sigpipe_restore(&old, was_pending);
        string_free_erase(x.proxy.auth);
        if (r >= 0) {
                size_t body_len = x.body.len;
                HttpResponse resp = { .status = x.status,
                                      .body = buf_steal_str(&x.body),
                                      .body_len = body_len,
                                      .headers = buf_steal_str(&x.headers),
                                      .sensitive = req->sensitive };
                if (resp.body && resp.headers)
                        *ret = resp;
                else {
                        http_response_done(&resp);
                        r = fail(&x, -ENOMEM, "out of memory");
                }
        }
        if (r < 0 && ret_error)
                *ret_error = strprintf("%s: %s", req->url, x.conn.what ?: strerror(-r));
        free(x.conn.what);
        buf_free(&x.body);
        buf_free(&x.headers);
        return r;
}

void http_response_done(HttpResponse *r) {
        if (r->sensitive) {
                if (r->body)
                        erase_and_free(r->body, r->body_len + 1); /* a body may hold NULs */
                string_free_erase(r->headers);
        } else {
                free(r->body);
                free(r->headers);
        }
        *r = (HttpResponse){};
}

char *http_response_header(const HttpResponse *r, const char *name) {
        size_t nl = strlen(name);
        for (const char *p = r->headers; p && *p;) {
                const char *e = strstr(p, "\r\n");
                size_t l = e ? (size_t)(e - p) : strlen(p);
                if (l > nl && p[nl] == ':' && strncasecmp(p, name, nl) == 0) {
                        const char *v = p + nl + 1;
                        while (v < p + l && (*v == ' ' || *v == '\t'))
                                v++;
                        size_t vl = (size_t)(p + l - v);
                        while (vl > 0 && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
                                vl--;
                        return strndup(v, vl);
                }
                p = e ? e + 2 : p + l;
        }
        return NULL;
}
