/* SPDX-License-Identifier: Apache-2.0 */
#include "shared/http.h"

#include <curl/curl.h>
#include <string.h>
#include <strings.h>

#include "basic/buf.h"
#include "basic/errors.h"
#include "basic/string-util.h"

typedef struct HttpExchange {
        Buf body;
        Buf headers;
        bool too_big;
        const HttpRequest *req;
        CURL *curl;
        int sink_error; /* the sink's negative return, which ended the exchange */
} HttpExchange;

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata) {
        HttpExchange *x = userdata;
        size_t n = size * nmemb;
        if (x->req->sink) {
                long status = 0;
                curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &status);
                int r = x->req->sink(status, ptr, n, x->req->sink_userdata);
                if (r < 0) {
                        x->sink_error = r;
                        return 0;
                }
                return n;
        }
        if (buf_add(&x->body, ptr, n) < 0) {
                x->too_big = true;
                return 0; /* makes curl fail with CURLE_WRITE_ERROR */
        }
        return n;
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *userdata) {
        HttpExchange *x = userdata;
        size_t n = size * nmemb;
        /* A new status line (after a 100 Continue or a proxy CONNECT) starts the final header block again.
         */
        if (n >= 5 && memcmp(ptr, "HTTP/", 5) == 0)
                buf_reset(&x->headers);
        if (buf_add(&x->headers, ptr, n) < 0) {
                x->too_big = true;
                return 0;
        }
        return n;
}

/* curl_slist_append() copies each header: the copies of Authorization and X-Amz-Security-Token lines are
 * ours to erase. */
static void slist_free_erase(struct curl_slist *l) {
        for (struct curl_slist *i = l; i; i = i->next)
                if (i->data)
                        explicit_bzero(i->data, strlen(i->data));
        curl_slist_free_all(l);
}

static int curl_to_errno(CURLcode c, bool too_big) {
        if (too_big)
                return PK_ETOOBIG;
        switch (c) {
        case CURLE_OPERATION_TIMEDOUT:
                return PK_ETIMEOUT;
        case CURLE_COULDNT_CONNECT:
                return -ECONNREFUSED;
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
                return -EHOSTUNREACH;
        case CURLE_URL_MALFORMAT:
        case CURLE_UNSUPPORTED_PROTOCOL:
                return -EINVAL;
        case CURLE_OUT_OF_MEMORY:
                return -ENOMEM;
        default:
                return -EIO;
        }
}

static int http_global_init(void) {
        static bool done;
        /* The daemon is single-threaded; curl_global_init runs once before any handle exists. */
        if (!done) {
                if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
                        return -EIO;
                done = true;
        }
        return 0;
}

/* "HOST:PORT:ADDR:PORT": four fields, the ports numbers (an IPv6 ADDR in brackets may hold colons). */
static bool http_connect_to_valid(const char *s) {
        size_t colons = 0;
        bool bracket = false;
        for (const char *p = s; *p; p++) {
                if (*p == '[')
                        bracket = true;
                else if (*p == ']')
                        bracket = false;
                else if (*p == ':' && !bracket)
                        colons++;
                else if (*p == ' ')
                        return false;
        }
        const char *port = strrchr(s, ':');
        return colons == 3 && port && port[1] && strspn(port + 1, "0123456789") == strlen(port + 1);
}

static int http_check_request(const HttpRequest *req) {
        if (!req || isempty(req->method) || isempty(req->url) || string_has_cc(req->url) ||
            string_has_cc(req->method))
                return -EINVAL;
        if (!startswith(req->url, "http://") && !startswith(req->url, "https://"))
                return -EINVAL;
        if (req->body_len > 0 && !req->body)
                return -EINVAL;
        if (!req->cert_file != !req->key_file)
                return -EINVAL; /* a client certificate needs its key and the other way round */
        if (req->connect_to && (string_has_cc(req->connect_to) || !http_connect_to_valid(req->connect_to)))
                return -EINVAL;
        for (size_t i = 0; i < req->n_headers; i++)
                if (!req->headers[i] || string_has_cc(req->headers[i]) || !strchr(req->headers[i], ':'))
                        return -EINVAL; /* a CR or LF would inject headers */
        return 0;
}

static void set_error(char **ret_error, const char *url, const char *what) {
        if (ret_error)
                *ret_error = strprintf("%s: %s", url, what);
}

static int http_setup(CURL *curl, const HttpRequest *req, struct curl_slist *hdrs,
                      struct curl_slist *connect_to, HttpExchange *x, char *errbuf) {
        usec_t timeout = req->timeout ?: 30 * USEC_PER_SEC,
               ctimeout = req->connect_timeout ?: 5 * USEC_PER_SEC;
        bool fail = false;
#define SET(opt, val) fail = fail || curl_easy_setopt(curl, opt, val) != CURLE_OK
        SET(CURLOPT_URL, req->url);
        SET(CURLOPT_PROTOCOLS_STR, "http,https");
        SET(CURLOPT_FOLLOWLOCATION, 0L);
        SET(CURLOPT_NOSIGNAL, 1L);
        SET(CURLOPT_TIMEOUT_MS, (long)(timeout / USEC_PER_MSEC));
        SET(CURLOPT_CONNECTTIMEOUT_MS, (long)(ctimeout / USEC_PER_MSEC));
        SET(CURLOPT_ERRORBUFFER, errbuf);
        SET(CURLOPT_WRITEFUNCTION, on_body);
        SET(CURLOPT_WRITEDATA, x);
        SET(CURLOPT_HEADERFUNCTION, on_header);
        SET(CURLOPT_HEADERDATA, x);
        SET(CURLOPT_HTTPHEADER, hdrs);
        SET(CURLOPT_USERAGENT, "protokube");
        if (connect_to)
                SET(CURLOPT_CONNECT_TO, connect_to);
        if (req->ca_file)
                SET(CURLOPT_CAINFO, req->ca_file);
        if (req->cert_file) {
                SET(CURLOPT_SSLCERT, req->cert_file);
                SET(CURLOPT_SSLCERTTYPE, "PEM");
        }
        if (req->key_file) {
                SET(CURLOPT_SSLKEY, req->key_file);
                SET(CURLOPT_SSLKEYTYPE, "PEM");
        }
        /* Loopback and link-local never go through a proxy (the metadata service, local test doubles). */
        if (req->no_proxy)
                SET(CURLOPT_NOPROXY, "*");
        else if (!getenv("no_proxy") && !getenv("NO_PROXY"))
                SET(CURLOPT_NOPROXY, "127.0.0.1,localhost,::1,169.254.169.254");
        if (streq(req->method, "GET"))
                SET(CURLOPT_HTTPGET, 1L);
        else {
                SET(CURLOPT_CUSTOMREQUEST, req->method);
                if (req->body_len > 0 || !streq(req->method, "DELETE")) {
                        SET(CURLOPT_POSTFIELDS, req->body ?: "");
                        SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
                }
        }
#undef SET
        return fail ? -EINVAL : 0;
}

int http_request(const HttpRequest *req, HttpResponse *ret, char **ret_error) {
        char errbuf[CURL_ERROR_SIZE] = "";
        struct curl_slist *hdrs = NULL, *connect_to = NULL;
        HttpExchange x = { .req = req };
        CURL *curl = NULL;
        long status = 0;
        int r;

        r = http_check_request(req);
        if (r < 0) {
                set_error(ret_error, req && req->url ? req->url : "(none)", "invalid request");
                return r;
        }
        r = http_global_init();
        if (r < 0)
                return r;
        if (req->sensitive) {
                buf_init_secret(&x.body, req->max_response ?: HTTP_RESPONSE_MAX_DEFAULT);
                buf_init_secret(&x.headers, HTTP_HEADERS_MAX);
        } else {
                buf_init(&x.body, req->max_response ?: HTTP_RESPONSE_MAX_DEFAULT);
                buf_init(&x.headers, HTTP_HEADERS_MAX);
        }

        /* "Expect:" turns off curl's 100-continue wait on large POST bodies. */
        hdrs = curl_slist_append(hdrs, "Expect:");
        for (size_t i = 0; hdrs && i < req->n_headers; i++) {
                struct curl_slist *n = curl_slist_append(hdrs, req->headers[i]);
                if (!n) {
                        slist_free_erase(hdrs);
                        hdrs = NULL;
                } else
                        hdrs = n;
        }
        if (req->connect_to) {
                connect_to = curl_slist_append(NULL, req->connect_to);
                if (!connect_to) {
                        r = -ENOMEM;
                        goto finish;
                }
        }
        curl = curl_easy_init();
        if (!hdrs || !curl) {
                r = -ENOMEM;
                goto finish;
        }
        x.curl = curl;
        r = http_setup(curl, req, hdrs, connect_to, &x, errbuf);
        if (r < 0) {
                set_error(ret_error, req->url, "cannot configure the request");
                goto finish;
        }
        CURLcode c = curl_easy_perform(curl);
        if (c != CURLE_OK && x.sink_error < 0) {
                r = x.sink_error;
                set_error(ret_error, req->url, "the response was refused by its reader");
                goto finish;
        }
        if (c != CURLE_OK) {
                r = curl_to_errno(c, x.too_big);
                set_error(ret_error, req->url,
                          x.too_big ? "response exceeds its size cap"
                                    : (*errbuf ? errbuf : curl_easy_strerror(c)));
                goto finish;
        }
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
        size_t body_len = x.body.len;
        char *body = buf_steal_str(&x.body), *headers = buf_steal_str(&x.headers);
        HttpResponse resp = { .status = status,
                              .body = body,
                              .body_len = body_len,
                              .headers = headers,
                              .sensitive = req->sensitive };
        if (!body || !headers) {
                http_response_done(&resp);
                r = -ENOMEM;
                goto finish;
        }
        *ret = resp;
        r = 0;
finish:
        if (curl)
                curl_easy_cleanup(curl);
        slist_free_erase(hdrs);
        curl_slist_free_all(connect_to);
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
