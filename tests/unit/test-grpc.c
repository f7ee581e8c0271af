/* SPDX-License-Identifier: Apache-2.0 */
/* grpc_call against a one-shot h2c server forked by the test (libnghttp2's server side): the request as
 * gRPC wants it, a large answer through the windows, and each way a call ends badly: a grpc-status, an
 * HTTP status, a reset, the connection closed before the trailers, no grpc-status, the sink's refusal. */
#include "unit-test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <nghttp2/nghttp2.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "shared/grpc.h"

#define ANSWER_LEN (3U * 1024U * 1024U + 7U) /* past the 64 KiB default windows and 16 KiB frames */

typedef enum Script {
        SCRIPT_OK,         /* the answer, then trailers with grpc-status 0 */
        SCRIPT_STATUS,     /* trailers-only: grpc-status 14 with a percent-encoded message */
        SCRIPT_HTTP_503,   /* not a gRPC answer */
        SCRIPT_RESET,      /* the answer, then RST_STREAM */
        SCRIPT_EOF,        /* the answer, then the connection closed */
        SCRIPT_NO_TRAILER, /* the answer ends the stream without trailers */
} Script;

typedef struct Server {
        Script script;
        bool request_ok; /* the request was gRPC's: headers and the 5-byte empty message */
        char content_type[32], te[16], path[64];
        uint8_t body[16];
        size_t body_len, sent;
        bool close_now;
} Server;

static uint8_t answer_byte(size_t i) {
        return (uint8_t)(i * 31 + (i >> 8));
}

#define NV(n, v) \
        { (uint8_t *)(n), (uint8_t *)(v), strlen(n), strlen(v), NGHTTP2_NV_FLAG_NONE }

static void copy_value(char *dst, size_t size, const uint8_t *v, size_t len) {
        snprintf(dst, size, "%.*s", (int)len, (const char *)v);
}

static int srv_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t namelen,
                      const uint8_t *value, size_t valuelen, uint8_t flags, void *ud) {
        Server *v = ud;
        if (namelen == 12 && memcmp(name, "content-type", 12) == 0)
                copy_value(v->content_type, sizeof(v->content_type), value, valuelen);
        else if (namelen == 2 && memcmp(name, "te", 2) == 0)
                copy_value(v->te, sizeof(v->te), value, valuelen);
        else if (namelen == 5 && memcmp(name, ":path", 5) == 0)
                copy_value(v->path, sizeof(v->path), value, valuelen);
        return 0;
}

static int srv_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
                    void *ud) {
        Server *v = ud;
        size_t n = MIN(len, sizeof(v->body) - v->body_len);
        memcpy(v->body + v->body_len, data, n);
        v->body_len += n;
        return 0;
}

static ssize_t srv_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t length, uint32_t *flags,
                        nghttp2_data_source *source, void *ud) {
        Server *v = ud;
        size_t n = MIN(length, ANSWER_LEN - v->sent);
        for (size_t i = 0; i < n; i++)
                buf[i] = answer_byte(v->sent + i);
        v->sent += n;
        if (v->sent < ANSWER_LEN)
                return (ssize_t)n;
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        if (v->script == SCRIPT_NO_TRAILER)
                return (ssize_t)n;
        *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
        if (v->script == SCRIPT_OK) {
                const nghttp2_nv t[] = { NV("grpc-status", v->request_ok ? "0" : "3") };
                nghttp2_submit_trailer(s, id, t, 1);
        } else if (v->script == SCRIPT_RESET)
                nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, id, NGHTTP2_INTERNAL_ERROR);
        else
                v->close_now = true;
        return (ssize_t)n;
}

static int srv_frame(nghttp2_session *s, const nghttp2_frame *f, void *ud) {
        Server *v = ud;
        if (!(f->hd.flags & NGHTTP2_FLAG_END_STREAM) || f->hd.stream_id == 0)
                return 0;
        v->request_ok = strcmp(v->content_type, "application/grpc") == 0 && strcmp(v->te, "trailers") == 0 &&
                        strcmp(v->path, "/test.Service/Stream") == 0 && v->body_len == 5 &&
                        memcmp(v->body, "\0\0\0\0\0", 5) == 0;
        nghttp2_data_provider body = { .read_callback = srv_read };
        if (v->script == SCRIPT_STATUS) {
                const nghttp2_nv h[] = { NV(":status", "200"), NV("content-type", "application/grpc"),
                                         NV("grpc-status", "14"),
                                         NV("grpc-message", "etcdserver%3A leader changed %E2%9C%93") };
                return nghttp2_submit_response(s, f->hd.stream_id, h, ELEMENTSOF(h), NULL);
        }
        if (v->script == SCRIPT_HTTP_503) {
                const nghttp2_nv h[] = { NV(":status", "503"), NV("content-type", "text/plain") };
                v->script = SCRIPT_NO_TRAILER; /* the body ends the stream */
                return nghttp2_submit_response(s, f->hd.stream_id, h, ELEMENTSOF(h), &body);
        }
        const nghttp2_nv h[] = { NV(":status", "200"), NV("content-type", "application/grpc") };
        return nghttp2_submit_response(s, f->hd.stream_id, h, ELEMENTSOF(h), &body);
}

static void serve(int c, Script script) {
        Server v = { .script = script };
        nghttp2_session_callbacks *cb;
        nghttp2_session *s;
        uint8_t buf[65536];
        nghttp2_session_callbacks_new(&cb);
        nghttp2_session_callbacks_set_on_header_callback(cb, srv_header);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, srv_data);
        nghttp2_session_callbacks_set_on_frame_recv_callback(cb, srv_frame);
        nghttp2_session_server_new(&s, cb, &v);
        nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, NULL, 0);
        for (;;) {
                const uint8_t *out;
                ssize_t n;
                while ((n = nghttp2_session_mem_send(s, &out)) > 0)
                        if (loop_write(c, out, (size_t)n) < 0)
                                _exit(1);
                if (v.close_now) { /* a clean end of the stream: no reset for what the client still sends */
                        shutdown(c, SHUT_WR);
                        while (read(c, buf, sizeof(buf)) > 0)
                                ;
                        _exit(0);
                }
                ssize_t k = read(c, buf, sizeof(buf));
                if (k <= 0 || nghttp2_session_mem_recv(s, buf, (size_t)k) < 0)
                        _exit(0);
        }
}

/* A server for one connection on a loopback port; the child dies by alarm after 20 s in any case. */
static pid_t server_start(Script script, char *endpoint, size_t size) {
        unsigned port;
        int s = loopback_listen(1, &port);
        snprintf(endpoint, size, "http://127.0.0.1:%u", port);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                alarm(20);
                int c = accept(s, NULL, NULL);
                if (c >= 0)
                        serve(c, script);
                _exit(0);
        }
        close(s);
        return pid;
}

typedef struct Received {
        size_t len;
        bool same;        /* every byte the answer's */
        int refuse_after; /* > 0: the sink fails once it has this many bytes */
} Received;

static int sink(const void *data, size_t len, void *userdata) {
        Received *got = userdata;
        const uint8_t *p = data;
        for (size_t i = 0; i < len; i++)
                got->same = got->same && p[i] == answer_byte(got->len + i);
        got->len += len;
        return got->refuse_after > 0 && got->len >= (size_t)got->refuse_after ? -EBADMSG : 0;
}

/* One call against a server playing script; its result, with *ret_error. */
static int call(Script script, Received *got, char **ret_error) {
        char endpoint[64];
        pid_t pid = server_start(script, endpoint, sizeof(endpoint));
        GrpcCall c = { .endpoint = endpoint,
                       .method = "/test.Service/Stream",
                       .timeout = 15 * USEC_PER_SEC,
                       .sink = sink,
                       .userdata = got };
        got->same = true;
        int r = grpc_call(&c, ret_error);
        int status;
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        return r;
}

static void expect_error(Script script, int expect, const char *what) {
        Received got = {};
        char *err = NULL;
        assert_int_equal(call(script, &got, &err), expect);
        assert_non_null(err);
        if (!strstr(err, what) || !strstr(err, "http://127.0.0.1:"))
                fail_msg("'%s' does not name the endpoint and say '%s'", err, what);
        free(err);
}

static void test_ok(void **state) {
        Received got = {};
        char *err = NULL;
        assert_int_equal(call(SCRIPT_OK, &got, &err), 0); /* grpc-status 3 if the request was not gRPC's */
        assert_null(err);
        assert_int_equal(got.len, ANSWER_LEN);
        assert_true(got.same);
}

static void test_failures(void **state) {
        expect_error(SCRIPT_STATUS, PK_EGRPC,
                     "grpc-status 14 (UNAVAILABLE): etcdserver: leader changed \xe2\x9c\x93");
        expect_error(SCRIPT_HTTP_503, -EIO, "HTTP 503");
        expect_error(SCRIPT_RESET, -EIO, "reset the stream (INTERNAL_ERROR)");
        expect_error(SCRIPT_EOF, -EIO, "closed before the call ended");
        expect_error(SCRIPT_NO_TRAILER, -EIO, "without grpc-status");
        Received got = { .refuse_after = 100000 };
        char *err = NULL;
        assert_int_equal(call(SCRIPT_OK, &got, &err), -EBADMSG);
        free(err);
}

static void test_bad_calls(void **state) {
        char *err = NULL;
        GrpcCall c = { .endpoint = "http://127.0.0.1:1/path", .method = "/a/b", .sink = sink };
        assert_int_equal(grpc_call(&c, &err), -EINVAL);
        free(err), err = NULL;
        c.endpoint = "ftp://127.0.0.1:1";
        assert_int_equal(grpc_call(&c, &err), -EINVAL);
        free(err), err = NULL;
        c.endpoint = "http://127.0.0.1:1";
        c.method = "no-slash";
        assert_int_equal(grpc_call(&c, &err), -EINVAL);
        free(err), err = NULL;
        c.method = "/a/b";
        c.cert_file = "/c.pem"; /* without its key */
        assert_int_equal(grpc_call(&c, &err), -EINVAL);
        free(err);
        assert_string_equal(grpc_status_name(14), "UNAVAILABLE");
        assert_string_equal(grpc_status_name(99), "UNKNOWN");
}

int main(void) {
        signal(SIGPIPE, SIG_IGN);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ok),
                cmocka_unit_test(test_failures),
                cmocka_unit_test(test_bad_calls),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
