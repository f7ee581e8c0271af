/* SPDX-License-Identifier: Apache-2.0 */
/* A gRPC call over HTTP/2 (grpc.h). libnghttp2 keeps the HTTP/2 state and checks the peer's frames and
 * headers (its HTTP messaging checks stay on); the bytes move through nghttp2_session_mem_send/_mem_recv
 * over a TlsConn, so every read and write has the call's deadline. */
#include "shared/grpc.h"

#include <errno.h>
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/buf.h"
#include "basic/errors.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "shared/http-wire.h"
#include "shared/tls-conn.h"

#define GRPC_READ_CHUNK      (256U * 1024U) /* TLS hands over a record (16 KiB) per read; TCP more */
#define GRPC_MAX_FRAME       (1U << 20)     /* lets a server send DATA in frames of up to 1 MiB */
#define GRPC_REFUSAL_MAX     4096U          /* the start of a non-gRPC answer's body, for the message */
#define GRPC_PREFIX_LEN      5U             /* compressed flag, 4 bytes of length (PROTOCOL-HTTP2.md) */
#define GRPC_TIMEOUT         (30ULL * USEC_PER_SEC)
#define GRPC_CONNECT_TIMEOUT (5ULL * USEC_PER_SEC)

typedef struct GrpcExchange {
        const GrpcCall *call;
        HttpUrl url;
        TlsConn conn; /* its what: the failure, for the caller's message */
        nghttp2_session *session;
        int32_t stream_id;
        uint8_t *request; /* the framed message */
        size_t request_len, request_sent;
        unsigned status;     /* :status, 0 until the response's headers */
        int grpc_status;     /* -1 until the trailers say */
        char *grpc_message;  /* percent-decoded */
        bool closed;         /* the stream ended (on_stream_close) */
        uint32_t close_code; /* its HTTP/2 error code: non-zero for a reset */
        bool goaway;         /* the server said GOAWAY */
        uint32_t goaway_code;
        int sink_error;
        Buf refusal; /* a non-200 answer's body */
} GrpcExchange;

#define fail(x, r, ...) tls_conn_fail(&(x)->conn, r, __VA_ARGS__)

const char *grpc_status_name(int status) {
        static const char *const names[] = {
                "OK",
                "CANCELLED",
                "UNKNOWN",
                "INVALID_ARGUMENT",
                "DEADLINE_EXCEEDED",
                "NOT_FOUND",
                "ALREADY_EXISTS",
                "PERMISSION_DENIED",
                "RESOURCE_EXHAUSTED",
                "FAILED_PRECONDITION",
                "ABORTED",
                "OUT_OF_RANGE",
                "UNIMPLEMENTED",
                "INTERNAL",
                "UNAVAILABLE",
                "DATA_LOSS",
                "UNAUTHENTICATED",
        };
        return status >= 0 && (size_t)status < ELEMENTSOF(names) ? names[status] : "UNKNOWN";
}

static bool name_is(const uint8_t *name, size_t len, const char *s) {
        return len == strlen(s) && memcmp(name, s, len) == 0;
}

/* A decimal of at most max_digits digits, nothing else. */
static int parse_small_number(const uint8_t *v, size_t len, size_t max_digits) {
        int n = 0;
        if (len == 0 || len > max_digits)
                return -1;
        for (size_t i = 0; i < len; i++) {
                if (v[i] < '0' || v[i] > '9')
                        return -1;
                n = n * 10 + (v[i] - '0');
        }
        return n;
}

/* Only the trailers count for grpc-status: the HEADERS that end the stream (trailers, or a trailers-only
 * answer); nghttp2 has checked the names and values (no uppercase, no control characters). */
static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags, void *userdata) {
        GrpcExchange *x = userdata;
        bool ends = frame->hd.flags & NGHTTP2_FLAG_END_STREAM;
        if (frame->hd.type != NGHTTP2_HEADERS || frame->hd.stream_id != x->stream_id)
                return 0;
        if (name_is(name, namelen, ":status")) {
                int s = parse_small_number(value, valuelen, 3);
                x->status = s > 0 ? (unsigned)s : 0;
        } else if (ends && name_is(name, namelen, "grpc-status")) {
                int s = parse_small_number(value, valuelen, 3);
                x->grpc_status = s >= 0 ? s : 2; /* a status that does not parse: UNKNOWN */
        } else if (ends && name_is(name, namelen, "grpc-message") && !x->grpc_message) {
                x->grpc_message = uri_decode((const char *)value, MIN(valuelen, (size_t)GRPC_MESSAGE_MAX));
                if (!x->grpc_message)
                        return NGHTTP2_ERR_CALLBACK_FAILURE;
        }
        return 0;
}

static int on_data(nghttp2_session *session, uint8_t flags, int32_t stream_id, const uint8_t *data,
                   size_t len, void *userdata) {
        GrpcExchange *x = userdata;
        if (stream_id != x->stream_id)
                return 0;
        if (x->status != 200) {
                (void)buf_add(&x->refusal, data, MIN(len, x->refusal.max - x->refusal.len));
                return 0;
        }
        int r = x->call->sink(data, len, x->call->userdata);
        if (r < 0) {
                x->sink_error = r;
                return NGHTTP2_ERR_CALLBACK_FAILURE;
        }
        return 0;
}

static int on_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code,
                           void *userdata) {
        GrpcExchange *x = userdata;
        if (stream_id == x->stream_id) {
                x->closed = true;
                x->close_code = error_code;
        }
        return 0;
}

static int on_frame(nghttp2_session *session, const nghttp2_frame *frame, void *userdata) {
        GrpcExchange *x = userdata;
        if (frame->hd.type == NGHTTP2_GOAWAY) {
                x->goaway = true;
                x->goaway_code = frame->goaway.error_code;
        }
        return 0;
}

static ssize_t read_request(nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length,
                            uint32_t *flags, nghttp2_data_source *source, void *userdata) {
        GrpcExchange *x = userdata;
        size_t n = MIN(length, x->request_len - x->request_sent);
        memcpy(buf, x->request + x->request_sent, n);
        x->request_sent += n;
        if (x->request_sent == x->request_len)
                *flags |= NGHTTP2_DATA_FLAG_EOF;
        return (ssize_t)n;
}

/* The connection preface and our SETTINGS: no server push, large windows for the stream and the whole
 * connection, large frames. */
static int session_new(GrpcExchange *x) {
        nghttp2_session_callbacks *cb;
        if (nghttp2_session_callbacks_new(&cb) != 0)
                return -ENOMEM;
        nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
        nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
        nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame);
        int rv = nghttp2_session_client_new(&x->session, cb, x);
        nghttp2_session_callbacks_del(cb);
        if (rv != 0)
                return -ENOMEM;
        const nghttp2_settings_entry settings[] = {
                { NGHTTP2_SETTINGS_ENABLE_PUSH, 0 },
                { NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, GRPC_WINDOW },
                { NGHTTP2_SETTINGS_MAX_FRAME_SIZE, GRPC_MAX_FRAME },
        };
        rv = nghttp2_submit_settings(x->session, NGHTTP2_FLAG_NONE, settings, ELEMENTSOF(settings));
        if (rv == 0)
                rv = nghttp2_session_set_local_window_size(x->session, NGHTTP2_FLAG_NONE, 0, GRPC_WINDOW);
        return rv == 0 ? 0 : fail(x, -ENOMEM, "HTTP/2: %s", nghttp2_strerror(rv));
}

#define NV(n, v, vlen) \
        { (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, vlen, NGHTTP2_NV_FLAG_NO_COPY_NAME }

static int submit_call(GrpcExchange *x) {
        const GrpcCall *c = x->call;
        char authority[HTTP_HOST_MAX + 16];
        http_url_authority(&x->url, true, authority, sizeof(authority));
        const char *scheme = x->url.tls ? "https" : "http";
        const nghttp2_nv headers[] = {
                NV(":method", "POST", 4),
                NV(":scheme", scheme, strlen(scheme)),
                NV(":path", c->method, strlen(c->method)),
                NV(":authority", authority, strlen(authority)),
                NV("content-type", "application/grpc", strlen("application/grpc")),
                NV("te", "trailers", strlen("trailers")),
                NV("user-agent", "protokube", strlen("protokube")),
        };
        x->request_len = GRPC_PREFIX_LEN + c->message_len;
        x->request = malloc(x->request_len);
        if (!x->request)
                return -ENOMEM;
        /* not compressed; the length big-endian */
        x->request[0] = 0;
        for (unsigned i = 0; i < 4; i++)
                x->request[1 + i] = (uint8_t)((uint64_t)c->message_len >> (24 - 8 * i));
        if (c->message_len > 0)
                memcpy(x->request + GRPC_PREFIX_LEN, c->message, c->message_len);
        nghttp2_data_provider body = { .read_callback = read_request };
        x->stream_id = nghttp2_submit_request(x->session, NULL, headers, ELEMENTSOF(headers), &body, x);
        return x->stream_id < 0 ? fail(x, -ENOMEM, "HTTP/2: %s", nghttp2_strerror(x->stream_id)) : 0;
}

/* Sends whatever the session has to send (the preface, SETTINGS, the request, window updates, PINGs'
 * answers). */
static int flush(GrpcExchange *x) {
        for (;;) {
                const uint8_t *data;
                ssize_t n = nghttp2_session_mem_send(x->session, &data);
                if (n < 0)
                        return fail(x, -EIO, "HTTP/2: %s", nghttp2_strerror((int)n));
                if (n == 0)
                        return 0;
                int r = tls_conn_write_all(&x->conn, data, (size_t)n);
                if (r < 0)
                        return r;
        }
}

/* Reads and hands the bytes to the session until the stream is closed. */
static int pump(GrpcExchange *x) {
        uint8_t *buf = malloc(GRPC_READ_CHUNK);
        int r = buf ? 0 : -ENOMEM;
        while (r >= 0 && (r = flush(x)) >= 0 && !x->closed) {
                ssize_t n = tls_conn_read(&x->conn, buf, GRPC_READ_CHUNK);
                if (n < 0)
                        r = (int)n;
                else if (n == 0)
                        r = fail(x, -EIO, "the connection closed before the call ended%s",
                                 x->goaway ? " (the server said GOAWAY)" : "");
                else {
                        ssize_t k = nghttp2_session_mem_recv(x->session, buf, (size_t)n);
                        if (k < 0 && x->sink_error < 0)
                                r = fail(x, x->sink_error, "the response was refused by its reader");
                        else if (k < 0)
                                r = fail(x, -EIO, "HTTP/2: %s", nghttp2_strerror((int)k));
                }
        }
        /* the DATA it held may be a snapshot: the cluster's secrets */
        if (buf)
                explicit_bzero(buf, GRPC_READ_CHUNK);
        free(buf);
        return r;
}

/* How the stream ended: trailers with grpc-status 0, or why not. */
static int outcome(GrpcExchange *x) {
        if (x->status != 0 && x->status != 200)
                return fail(x, -EIO, "HTTP %u, not a gRPC answer: %.*s", x->status, (int)x->refusal.len,
                            x->refusal.len ? (const char *)x->refusal.data : "");
        if (x->close_code != NGHTTP2_NO_ERROR)
                return fail(x, -EIO, "the server reset the stream (%s)%s",
                            nghttp2_http2_strerror(x->close_code), x->goaway ? " and said GOAWAY" : "");
        if (x->grpc_status < 0)
                return fail(x, -EIO, "the stream ended without grpc-status%s",
                            x->goaway ? " (the server said GOAWAY)" : "");
        if (x->grpc_status != 0)
                return fail(x, PK_EGRPC, "grpc-status %d (%s): %s", x->grpc_status,
                            grpc_status_name(x->grpc_status), x->grpc_message ?: "(no grpc-message)");
        return 0;
}

static int exchange(GrpcExchange *x) {
        static const unsigned char alpn[] = "\x02h2";
        const GrpcCall *c = x->call;
        int r = tls_conn_open(&x->conn, x->url.host, x->url.port);
        if (r >= 0 && x->url.tls) {
                TlsConnOptions o = { .server_name = x->url.host,
                                     .ca_file = c->ca_file,
                                     .cert_file = c->cert_file,
                                     .key_file = c->key_file,
                                     .alpn = alpn,
                                     .alpn_len = sizeof(alpn) - 1 };
                size_t n;
                const char *proto;
                r = tls_conn_handshake(&x->conn, &o);
                if (r >= 0 && (!(proto = tls_conn_alpn(&x->conn, &n)) || n != 2 || memcmp(proto, "h2", 2)))
                        r = fail(x, -EIO, "the server does not speak HTTP/2 (ALPN chose %s)",
                                 proto ? "another protocol" : "nothing");
        }
        if (r >= 0)
                r = session_new(x);
        if (r >= 0)
                r = submit_call(x);
        if (r >= 0)
                r = pump(x);
        return r >= 0 ? outcome(x) : r;
}

static bool call_valid(const GrpcCall *c, HttpUrl *url) {
        return c && c->endpoint && c->method && c->method[0] == '/' && !string_has_cc(c->method) &&
               c->sink && (c->message || c->message_len == 0) && c->message_len <= UINT32_MAX &&
               !c->cert_file == !c->key_file && http_url_parse(c->endpoint, url) >= 0 &&
               (url->target_len == 0 || (url->target_len == 1 && url->target[0] == '/'));
}

int grpc_call(const GrpcCall *call, char **ret_error) {
        GrpcExchange x = { .call = call, .conn = TLS_CONN_NULL, .grpc_status = -1 };
        if (!call_valid(call, &x.url)) {
                if (ret_error)
                        *ret_error = strprintf("%s: invalid gRPC call",
                                               call && call->endpoint ? call->endpoint : "(none)");
                return -EINVAL;
        }
        usec_t start = now(CLOCK_MONOTONIC);
        x.conn.deadline = start + (call->timeout ?: GRPC_TIMEOUT);
        x.conn.connect_deadline =
            MIN(x.conn.deadline, start + (call->connect_timeout ?: GRPC_CONNECT_TIMEOUT));
        buf_init(&x.refusal, GRPC_REFUSAL_MAX);
        sigset_t old;
        bool was_pending = tls_conn_sigpipe_block(&old);
        int r = exchange(&x);
        nghttp2_session_del(x.session);
        tls_conn_close(&x.conn);
        tls_conn_sigpipe_restore(&old, was_pending);
        if (r < 0 && ret_error)
                *ret_error =
                    strprintf("%s%s: %s", call->endpoint, call->method, x.conn.what ?: pk_strerror(r));
        free(x.conn.what);
        free(x.grpc_message);
        buf_free(&x.refusal);
        free(x.request);
        return r;
}
