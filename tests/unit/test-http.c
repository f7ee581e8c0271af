/* SPDX-License-Identifier: Apache-2.0 */
/* http_request against a one-shot loopback server forked by the test: caps, timeouts, refusals. */
#include "unit-test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/string-util.h"
#include "shared/http.h"

/* When set, the one-shot server answers 400 unless the request head holds this text (set it before
 * oneshot_start(): the server is a forked child). */
static const char *expect_in_request;

typedef struct OneShot {
        pid_t pid;
        char url[64];
} OneShot;

/* Serves one connection: reads the request head, then writes reply (or nothing for NULL, holding the
 * connection open until killed). The child dies by alarm after 10 s in any case. */
static void oneshot_start(OneShot *o, const char *reply, size_t reply_len) {
        unsigned port;
        int s = loopback_listen(1, &port);
        snprintf(o->url, sizeof(o->url), "http://127.0.0.1:%u/path", port);
        o->pid = fork();
        assert_true(o->pid >= 0);
        if (o->pid == 0) {
                alarm(10);
                int c = accept(s, NULL, NULL);
                char buf[4096];
                size_t got = 0;
                while (c >= 0 && got < sizeof(buf) - 1) {
                        ssize_t k = read(c, buf + got, sizeof(buf) - 1 - got);
                        if (k <= 0)
                                break;
                        got += (size_t)k;
                        buf[got] = 0;
                        if (strstr(buf, "\r\n\r\n"))
                                break;
                }
                static const char bad[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
                if (reply && expect_in_request && !strstr(buf, expect_in_request))
                        (void)loop_write(c, bad, strlen(bad));
                else if (reply)
                        (void)loop_write(c, reply, reply_len);
                else
                        pause();
                _exit(0);
        }
        close(s);
}

static void oneshot_stop(OneShot *o) {
        int status;
        kill(o->pid, SIGKILL);
        waitpid(o->pid, &status, 0);
}

static void test_ok_and_headers(void **state) {
        OneShot o;
        const char *reply = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Amzn-RequestId: abc-1 \r\n"
                            "Connection: close\r\n\r\nhello";
        oneshot_start(&o, reply, strlen(reply));
        const char *hdr[] = { "X-Test: 1" };
        HttpRequest req = { .method = "GET", .url = o.url, .headers = hdr, .n_headers = 1 };
        HttpResponse resp;
        assert_int_equal(http_request(&req, &resp, NULL), 0);
        assert_int_equal(resp.status, 200);
        assert_int_equal(resp.body_len, 5);
        assert_string_equal(resp.body, "hello");
        _cleanup_free_ char *id = http_response_header(&resp, "x-amzn-requestid");
        assert_string_equal(id, "abc-1");
        assert_null(http_response_header(&resp, "X-Missing"));
        http_response_done(&resp);
        oneshot_stop(&o);
}

static void test_cap(void **state) {
        OneShot o;
        _cleanup_free_ char *reply =
            strdup("HTTP/1.1 200 OK\r\nContent-Length: 4096\r\nConnection: close\r\n\r\n");
        for (unsigned i = 0; i < 64; i++)
                assert_int_equal(strextend_printf(&reply, "%064u", i), 0);
        oneshot_start(&o, reply, strlen(reply));
        HttpRequest req = { .method = "GET", .url = o.url, .max_response = 1000 };
        HttpResponse resp;
        char *err = NULL;
        assert_int_equal(http_request(&req, &resp, &err), PK_ETOOBIG);
        assert_non_null(strstr(err, "size cap"));
        free(err);
        oneshot_stop(&o);
}

static void test_timeout(void **state) {
        OneShot o;
        oneshot_start(&o, NULL, 0);
        HttpRequest req = {
                .method = "POST", .url = o.url, .body = "x", .body_len = 1, .timeout = 300 * USEC_PER_MSEC
        };
        HttpResponse resp;
        char *err = NULL;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        assert_int_equal(http_request(&req, &resp, &err), PK_ETIMEOUT);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        assert_true(t1.tv_sec - t0.tv_sec < 3);
        free(err);
        oneshot_stop(&o);
}

typedef struct Sunk {
        long status;
        size_t len;
        size_t calls;
        int fail_after; /* calls before the sink refuses; 0 = never */
} Sunk;

static int sink_count(long status, const void *data, size_t len, void *userdata) {
        Sunk *s = userdata;
        assert_non_null(data);
        s->status = status;
        s->len += len;
        s->calls++;
        if (s->fail_after > 0 && s->calls >= (size_t)s->fail_after)
                return -EBADMSG;
        return 0;
}

/* A body past the buffer cap streams through a sink with its status; a sink's error ends the exchange. */
static void test_sink(void **state) {
        OneShot o;
        _cleanup_free_ char *reply =
            strdup("HTTP/1.1 201 Created\r\nContent-Length: 4096\r\nConnection: close\r\n\r\n");
        for (unsigned i = 0; i < 64; i++)
                assert_int_equal(strextend_printf(&reply, "%064u", i), 0);
        oneshot_start(&o, reply, strlen(reply));
        Sunk s = {};
        HttpRequest req = {
                .method = "GET", .url = o.url, .max_response = 100, .sink = sink_count, .sink_userdata = &s
        };
        HttpResponse resp;
        assert_int_equal(http_request(&req, &resp, NULL), 0);
        assert_int_equal(resp.status, 201);
        assert_int_equal(resp.body_len, 0);
        assert_int_equal(s.status, 201);
        assert_int_equal(s.len, 4096);
        http_response_done(&resp);
        oneshot_stop(&o);

        oneshot_start(&o, reply, strlen(reply));
        s = (Sunk){ .fail_after = 1 };
        char *err = NULL;
        assert_int_equal(http_request(&req, &resp, &err), -EBADMSG);
        assert_non_null(strstr(err, "refused by its reader"));
        free(err);
        oneshot_stop(&o);

        HttpRequest half = { .method = "GET", .url = o.url, .cert_file = "/nonexistent.crt" };
        assert_int_equal(http_request(&half, &resp, NULL), -EINVAL);
}

static void test_refused_and_invalid(void **state) {
        OneShot o;
        const char *reply = "HTTP/1.1 204 No Content\r\n\r\n";
        oneshot_start(&o, reply, strlen(reply));
        oneshot_stop(&o); /* nothing listens on that port any more */
        HttpRequest req = { .method = "GET", .url = o.url };
        HttpResponse resp;
        assert_int_equal(http_request(&req, &resp, NULL), -ECONNREFUSED);

        const char *bad[] = { "X-Evil: a\r\nInjected: 1" };
        req.headers = bad;
        req.n_headers = 1;
        assert_int_equal(http_request(&req, &resp, NULL), -EINVAL);
        HttpRequest file = { .method = "GET", .url = "file:///etc/passwd" };
        assert_int_equal(http_request(&file, &resp, NULL), -EINVAL);
}

/* A request to a server it does not authenticate is refused before any connection when it would send
 * anything a stranger may not see: a client certificate, a body, credentials in a header, through a proxy,
 * or in plain http (where "unverified" means nothing). The refused URLs name a host nobody resolves: a
 * request that went out would fail otherwise than -EINVAL. */
static void test_unverified_server_sends_nothing_secret(void **state) {
        HttpResponse resp;
        const char *auth[] = { "authorization: Bearer abcdef.0123456789abcdef" };
        const char *cookie[] = { "Cookie: a=b" };
        const char *accept[] = { "Accept: application/json" };
        const HttpRequest refused[] = {
                { .method = "GET", .url = "http://api.pk.invalid/", .unverified_server = true },
                { .method = "GET",
                  .url = "https://api.pk.invalid/",
                  .unverified_server = true,
                  .cert_file = "/c.crt",
                  .key_file = "/c.key" },
                { .method = "POST",
                  .url = "https://api.pk.invalid/",
                  .unverified_server = true,
                  .body = "x",
                  .body_len = 1 },
                { .method = "GET",
                  .url = "https://api.pk.invalid/",
                  .unverified_server = true,
                  .headers = auth,
                  .n_headers = 1 },
                { .method = "GET",
                  .url = "https://api.pk.invalid/",
                  .unverified_server = true,
                  .headers = cookie,
                  .n_headers = 1 },
                { .method = "GET",
                  .url = "https://api.pk.invalid/",
                  .unverified_server = true,
                  .via_proxy = true },
                { .method = "GET",
                  .url = "https://api.pk.invalid/",
                  .unverified_server = true,
                  .ca_file = "/ca.crt" },
                { .method = "GET",
                  .url = "https://api.pk.invalid/",
                  .unverified_server = true,
                  .ca_pem = "-----BEGIN CERTIFICATE-----" },
                { .method = "GET", .url = "https://api.pk.invalid/", .ca_file = "/ca.crt", .ca_pem = "x" },
        };
        for (size_t i = 0; i < ELEMENTSOF(refused); i++) {
                _cleanup_free_ char *err = NULL;
                assert_int_equal(http_request(&refused[i], &resp, &err), -EINVAL);
                assert_non_null(strstr(err, "invalid request"));
                assert_null(strstr(err, "abcdef")); /* never a header's value */
        }
        /* an innocent header passes the check: the request goes out (and cannot connect) */
        HttpRequest ok = { .method = "GET",
                           .url = "https://127.0.0.1:1/",
                           .unverified_server = true,
                           .headers = accept,
                           .n_headers = 1,
                           .connect_timeout = USEC_PER_SEC };
        _cleanup_free_ char *err = NULL;
        assert_int_equal(http_request(&ok, &resp, &err), -ECONNREFUSED);
}

/* connect_to: the URL names a host nobody resolves; the connection goes to the loopback server, and the
 * request still carries the URL's name (Host), as the TLS name check would. A malformed value is refused. */
static void test_connect_to(void **state) {
        OneShot o;
        const char *reply = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
        expect_in_request = "GET /readyz HTTP/1.1\r\nHost: api.internal.pk.invalid:8443\r\n";
        oneshot_start(&o, reply, strlen(reply));
        const char *port = strrchr(o.url + strlen("http://"), ':') + 1;
        char to[128];
        snprintf(to, sizeof(to), "api.internal.pk.invalid:8443:127.0.0.1:%.*s", (int)strcspn(port, "/"),
                 port);
        HttpRequest req = { .method = "GET",
                            .url = "http://api.internal.pk.invalid:8443/readyz",
                            .connect_to = to };
        HttpResponse resp;
        char *err = NULL;
        assert_int_equal(http_request(&req, &resp, &err), 0);
        expect_in_request = NULL;
        assert_int_equal(resp.status, 200);
        assert_string_equal(resp.body, "ok");
        http_response_done(&resp);
        oneshot_stop(&o);

        const char *bad[] = { "127.0.0.1:80", "a:1:b:c", "a:1:b:2\r\nX: y", "a: 1:b:2" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                HttpRequest b = { .method = "GET", .url = "http://a:1/", .connect_to = bad[i] };
                assert_int_equal(http_request(&b, &resp, NULL), -EINVAL);
        }
}

/* An interim 100 is skipped, a chunked body decoded; a body cut short is an error, not a short answer. */
static void test_chunked_interim_and_short(void **state) {
        OneShot o;
        const char *reply =
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            "3\r\nabc\r\n4;x=y\r\ndefg\r\n0\r\n\r\n";
        oneshot_start(&o, reply, strlen(reply));
        HttpRequest req = { .method = "PUT", .url = o.url, .body = "{}", .body_len = 2 };
        HttpResponse resp;
        assert_int_equal(http_request(&req, &resp, NULL), 0);
        assert_int_equal(resp.status, 200);
        assert_string_equal(resp.body, "abcdefg");
        assert_non_null(strstr(resp.headers, "Transfer-Encoding"));
        assert_null(strstr(resp.headers, "100 Continue"));
        http_response_done(&resp);
        oneshot_stop(&o);

        const char *cut[] = { "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
                              "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n",
                              "HTTP/1.1 200 OK\r\nContent-Le", "" };
        for (size_t i = 0; i < ELEMENTSOF(cut); i++) {
                char *err = NULL;
                oneshot_start(&o, cut[i], strlen(cut[i]));
                HttpRequest get = { .method = "GET", .url = o.url };
                assert_int_equal(http_request(&get, &resp, &err), -EIO);
                assert_non_null(strstr(err, o.url));
                free(err);
                oneshot_stop(&o);
        }
}

/* The proxy from the environment, for a request that asks for it (via_proxy): a plain request names the
 * whole URL and carries the URL's credentials as Proxy-Authorization; a CONNECT the proxy refuses is an
 * error that names the variable and never the password; no_proxy (and by default loopback) goes direct. */
static void test_proxy(void **state) {
        OneShot o;
        const char *reply = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        expect_in_request =
            "GET http://target.pk.invalid:81/x?y=1 HTTP/1.1\r\nHost: target.pk.invalid:81\r\n";
        oneshot_start(&o, reply, strlen(reply));
        const char *port = strrchr(o.url + strlen("http://"), ':') + 1;
        char proxy[128];
        snprintf(proxy, sizeof(proxy), "http://us%%65r:s3cr%%40t@127.0.0.1:%.*s", (int)strcspn(port, "/"),
                 port);
        assert_int_equal(setenv("http_proxy", proxy, 1), 0);
        HttpRequest req = { .method = "GET", .url = "http://target.pk.invalid:81/x?y=1", .via_proxy = true };
        HttpResponse resp;
        assert_int_equal(http_request(&req, &resp, NULL), 0);
        assert_int_equal(resp.status, 200);
        http_response_done(&resp);
        oneshot_stop(&o);

        expect_in_request = "Proxy-Authorization: Basic dXNlcjpzM2NyQHQlNA==\r\n"; /* "user:s3cr@t%4" */
        oneshot_start(&o, reply, strlen(reply));
        port = strrchr(o.url + strlen("http://"), ':') + 1;
        snprintf(proxy, sizeof(proxy), "us%%65r:s3cr%%40t%%4@127.0.0.1:%.*s", (int)strcspn(port, "/"), port);
        assert_int_equal(setenv("http_proxy", proxy, 1), 0);
        assert_int_equal(http_request(&req, &resp, NULL), 0);
        assert_int_equal(resp.status, 200);
        http_response_done(&resp);
        oneshot_stop(&o);

        const char *refuse = "HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n";
        expect_in_request = "CONNECT target.pk.invalid:443 HTTP/1.1\r\n";
        oneshot_start(&o, refuse, strlen(refuse));
        port = strrchr(o.url + strlen("http://"), ':') + 1;
        snprintf(proxy, sizeof(proxy), "http://user:s3cret@127.0.0.1:%.*s", (int)strcspn(port, "/"), port);
        assert_int_equal(setenv("HTTPS_PROXY", proxy, 1), 0);
        HttpRequest tls = { .method = "GET", .url = "https://target.pk.invalid/", .via_proxy = true };
        char *err = NULL;
        assert_int_equal(http_request(&tls, &resp, &err), -EIO);
        assert_non_null(strstr(err, "HTTPS_PROXY"));
        assert_non_null(strstr(err, "407"));
        assert_null(strstr(err, "s3cret"));
        free(err);
        oneshot_stop(&o);

        assert_int_equal(setenv("HTTPS_PROXY", "socks5://user:s3cret@127.0.0.1:1", 1), 0);
        assert_int_equal(http_request(&tls, &resp, &err), -EINVAL);
        assert_non_null(strstr(err, "HTTPS_PROXY"));
        assert_null(strstr(err, "s3cret"));
        free(err);

        /* Loopback is exempt by default; NO_PROXY replaces the default. */
        expect_in_request = "GET /path HTTP/1.1\r\n";
        oneshot_start(&o, reply, strlen(reply));
        assert_int_equal(setenv("http_proxy", "http://127.0.0.1:1", 1), 0);
        HttpRequest direct = { .method = "GET", .url = o.url, .via_proxy = true };
        assert_int_equal(http_request(&direct, &resp, NULL), 0);
        http_response_done(&resp);
        oneshot_stop(&o);
        assert_int_equal(setenv("NO_PROXY", "example.com", 1), 0);
        assert_int_equal(http_request(&direct, &resp, NULL), -ECONNREFUSED); /* to the proxy on port 1 */
        expect_in_request = NULL;
        unsetenv("http_proxy");
        unsetenv("HTTPS_PROXY");
        unsetenv("NO_PROXY");
}

/* A request that does not ask for the proxy (everything inside the cluster: etcd, the API server) is
 * dialled directly whatever the environment says, no_proxy included. */
static void test_proxy_only_when_asked(void **state) {
        OneShot o;
        HttpResponse resp;
        const char *reply = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        expect_in_request = "GET /path HTTP/1.1\r\n";
        oneshot_start(&o, reply, strlen(reply));
        assert_int_equal(setenv("http_proxy", "http://127.0.0.1:1", 1), 0);
        assert_int_equal(setenv("https_proxy", "http://127.0.0.1:1", 1), 0);
        assert_int_equal(setenv("all_proxy", "http://127.0.0.1:1", 1), 0);
        assert_int_equal(setenv("NO_PROXY", "example.com", 1), 0); /* loopback is not exempt */
        HttpRequest direct = { .method = "GET", .url = o.url };
        assert_int_equal(http_request(&direct, &resp, NULL), 0);
        assert_int_equal(resp.status, 200);
        http_response_done(&resp);
        oneshot_stop(&o);
        expect_in_request = NULL;
        unsetenv("https_proxy");
        unsetenv("all_proxy");
        unsetenv("http_proxy");
        unsetenv("HTTPS_PROXY");
        unsetenv("NO_PROXY");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ok_and_headers),
                cmocka_unit_test(test_cap),
                cmocka_unit_test(test_timeout),
                cmocka_unit_test(test_sink),
                cmocka_unit_test(test_refused_and_invalid),
                cmocka_unit_test(test_unverified_server_sends_nothing_secret),
                cmocka_unit_test(test_connect_to),
                cmocka_unit_test(test_chunked_interim_and_short),
                cmocka_unit_test(test_proxy),
                cmocka_unit_test(test_proxy_only_when_asked),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
