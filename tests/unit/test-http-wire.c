/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP client's pure parsers: URLs, response heads, chunked bodies, no_proxy lists. */
#include "unit-test.h"

#include <errno.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "shared/http-wire.h"

static void test_url(void **state) {
        HttpUrl u;
        char a[300];
        assert_int_equal(http_url_parse("https://api.internal.c.example:8443/readyz?verbose#x", &u), 0);
        assert_true(u.tls);
        assert_string_equal(u.host, "api.internal.c.example");
        assert_int_equal(u.port, 8443);
        assert_false(u.port_is_default);
        assert_int_equal(u.target_len, strlen("/readyz?verbose"));
        http_url_authority(&u, false, a, sizeof(a));
        assert_string_equal(a, "api.internal.c.example:8443");

        assert_int_equal(http_url_parse("http://[fd00::1]/", &u), 0);
        assert_true(strchr(u.host, ':') && !u.tls && u.port == 80 && u.port_is_default && !u.port_given);
        http_url_authority(&u, false, a, sizeof(a));
        assert_string_equal(a, "[fd00::1]");
        http_url_authority(&u, true, a, sizeof(a));
        assert_string_equal(a, "[fd00::1]:80");

        assert_int_equal(http_url_parse("https://ec2.us-east-1.amazonaws.com:443", &u), 0);
        assert_true(u.port_is_default && u.port_given);
        assert_int_equal(u.target_len, 0);

        const char *bad[] = {
                "ftp://x/",           "http://",         "http://user:pw@host/", "http://host:0/",
                "http://host:65536/", "http://host:8x/", "http://[::1/",         "http://[zz]/",
                "http://ho st/",      "http://host/a b", "http://host/a\"b",     "http://host?q=1",
                "http://host/\x7f"
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_int_equal(http_url_parse(bad[i], &u), -EINVAL);
}

static int parse(const char *s, const char *method, HttpResponseHead *h) {
        const char *what;
        size_t end = http_head_end(s, strlen(s));
        if (end == 0)
                return -EAGAIN;
        int r = http_parse_response_head(s, end, method, h, &what);
        assert_true(r == 0 ? what == NULL : what != NULL);
        return r;
}

static void test_head(void **state) {
        HttpResponseHead h;
        assert_int_equal(parse("HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\nbody", "GET", &h), 0);
        assert_int_equal(h.status, 200);
        assert_int_equal(h.framing, HTTP_FRAMING_LENGTH);
        assert_int_equal(h.content_length, 12);
        assert_int_equal(h.head_len, strlen("HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n"));

        assert_int_equal(
            parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\nContent-Length: 3\r\n\r\n", "GET", &h),
            0);
        assert_int_equal(h.framing, HTTP_FRAMING_CHUNKED);
        assert_int_equal(parse("HTTP/1.0 200\n\n", "GET", &h), 0);
        assert_int_equal(h.framing, HTTP_FRAMING_CLOSE);
        assert_int_equal(h.head_len, strlen("HTTP/1.0 200\n\n"));
        assert_int_equal(parse("HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n", "DELETE", &h), 0);
        assert_int_equal(h.framing, HTTP_FRAMING_NONE);
        assert_int_equal(parse("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", "HEAD", &h), 0);
        assert_int_equal(h.framing, HTTP_FRAMING_NONE);
        assert_int_equal(parse("HTTP/1.1 100 Continue\r\n\r\n", "PUT", &h), 0);
        assert_int_equal(h.status, 100);
        assert_int_equal(
            parse("HTTP/1.1 200 OK\r\nContent-Length: 7\r\nContent-Length: 7\r\n\r\n", "GET", &h), 0);
        assert_int_equal(parse("HTTP/1.1 200 OK\r\nContent-Length: 7", "GET", &h), -EAGAIN);

        const char *bad[] = {
                "HTTP/2 200 OK\r\n\r\n",
                "HTTP/1.1 20 OK\r\n\r\n",
                "HTTP/1.1 099 x\r\n\r\n",
                "HTTP/1.1 200OK\r\n\r\n",
                "ICY 200 OK\r\n\r\n",
                "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
                "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
                "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
                "HTTP/1.1 200 OK\r\nX: a\r\n folded\r\n\r\n",
                "HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n",
                "HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
                "HTTP/1.1 200 OK\r\nX: a\x01z\r\n\r\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_int_equal(parse(bad[i], "GET", &h), -EPROTO);
}

typedef struct Collect {
        char out[256];
        size_t len;
        int fail_at; /* call number that fails (1-based); 0 = never */
        int calls;
} Collect;

static int collect(const char *d, size_t n, void *userdata) {
        Collect *c = userdata;
        if (++c->calls == c->fail_at)
                return -ECANCELED;
        assert_true(c->len + n < sizeof(c->out));
        memcpy(c->out + c->len, d, n);
        c->len += n;
        return 0;
}

/* The body decoded whole and fed in pieces of every size from 1 to 7 gives the same data and end. */
static void test_chunked(void **state) {
        const char *body = "4\r\nwiki\r\n5;name=value\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\n"
                           "Trailer: x\r\n\r\nNEXT";
        size_t n = strlen(body);
        const char *what;
        for (size_t step = 1; step <= 7; step++) {
                HttpChunked c = {};
                Collect got = {};
                size_t used = 0;
                for (size_t i = 0; i < n && !http_chunked_done(&c); i += step) {
                        int64_t k = http_chunked_feed(&c, body + i, MIN(step, n - i), collect, &got, &what);
                        assert_true(k >= 0);
                        used += (size_t)k;
                }
                assert_true(http_chunked_done(&c));
                assert_int_equal(used, n - strlen("NEXT"));
                got.out[got.len] = 0;
                assert_string_equal(got.out, "wikipedia in\r\n\r\nchunks.");
        }

        HttpChunked lf = {};
        Collect got = {};
        assert_int_equal(http_chunked_feed(&lf, "3\nabc\n0\n\n", 9, collect, &got, &what), 9);
        assert_true(http_chunked_done(&lf));

        const char *bad[] = { "x\r\n",   "\r\n", "3\r\nabcX", "3\r\nabc\rX", "ffffffffffffffffff\r\n",
                              ";ext\r\n" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                HttpChunked c = {};
                Collect g = {};
                assert_int_equal(http_chunked_feed(&c, bad[i], strlen(bad[i]), collect, &g, &what), -EPROTO);
                assert_non_null(what);
        }

        /* A size line past its bound, and the data callback's error passed on. */
        char longline[HTTP_CHUNK_LINE_MAX + 8];
        memset(longline, '0', sizeof(longline));
        HttpChunked c = {};
        assert_int_equal(http_chunked_feed(&c, longline, sizeof(longline), collect, &got, &what), -EPROTO);
        HttpChunked d = {};
        Collect refuse = { .fail_at = 1 };
        assert_int_equal(http_chunked_feed(&d, "3\r\nabc\r\n0\r\n\r\n", 13, collect, &refuse, &what),
                         -ECANCELED);
}

static void test_no_proxy(void **state) {
        const char *list = " 127.0.0.1, localhost ,.example.com,10.0.0.0/8 ,fd00::/8,::1";
        const char *yes[] = { "127.0.0.1",       "localhost",  "LOCALHOST", "example.com",
                              "api.example.com", "10.200.0.7", "fd00::1",   "::1" };
        const char *no[] = { "127.0.0.2", "notexample.com", "example.com.evil",
                             "11.0.0.1",  "fe80::1",        "localhost2",
                             "host" };
        for (size_t i = 0; i < ELEMENTSOF(yes); i++)
                assert_true(http_no_proxy_matches(list, yes[i]));
        for (size_t i = 0; i < ELEMENTSOF(no); i++)
                assert_false(http_no_proxy_matches(list, no[i]));
        assert_true(http_no_proxy_matches("*", "anything.example"));
        assert_false(http_no_proxy_matches("", "anything.example"));
        assert_false(http_no_proxy_matches("10.0.0.0/33", "10.0.0.1"));
        assert_true(http_no_proxy_matches("192.168.0.0/17", "192.168.127.1"));
        assert_false(http_no_proxy_matches("192.168.0.0/17", "192.168.128.1"));
}

static void test_request_line(void **state) {
        char m[16], p[32];
        assert_int_equal(http_parse_request_line("GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\n", 36, m,
                                                 sizeof(m), p, sizeof(p)),
                         0);
        assert_string_equal(m, "GET");
        assert_string_equal(p, "/metrics");
        const char *ok = "HEAD / HTTP/1.0\n";
        assert_int_equal(http_parse_request_line(ok, strlen(ok), m, sizeof(m), p, sizeof(p)), 0);
        assert_string_equal(m, "HEAD");
        const char *bad[] = { "GET /x HTTP/1.1",     "GET /x\r\n",
                              "GET x HTTP/1.1\r\n",  " /x HTTP/1.1\r\n",
                              "GET /x HTTP/2.0\r\n", "GET /x HTTP/1.1 \r\n",
                              "G(T /x HTTP/1.1\r\n", "GET /a\"b HTTP/1.1\r\n",
                              "GET  /x HTTP/1.1\r\n" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_int_equal(http_parse_request_line(bad[i], strlen(bad[i]), m, sizeof(m), p, sizeof(p)),
                                 -EPROTO);
        const char *longpath = "GET /0123456789012345678901234567890123456789 HTTP/1.1\r\n";
        assert_int_equal(http_parse_request_line(longpath, strlen(longpath), m, sizeof(m), p, sizeof(p)),
                         -ENAMETOOLONG);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_url),          cmocka_unit_test(test_head),
                cmocka_unit_test(test_chunked),      cmocka_unit_test(test_no_proxy),
                cmocka_unit_test(test_request_line),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
