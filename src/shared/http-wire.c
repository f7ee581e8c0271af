/* SPDX-License-Identifier: Apache-2.0 */
#include "shared/http-wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "basic/errors.h"
#include "basic/in-addr-util.h"
#include "basic/macro.h"
#include "basic/string-util.h"

/* RFC 3986 unreserved, sub-delims, ':' '@' '/' '?' '%' and '[' ']' (some servers' query strings): what a
 * request target may hold. Anything else (space, '"', '<', '\\', '^', '`', '{', '|', '}', controls, bytes
 * past ASCII) would have to be percent-encoded by the caller. */
static bool target_char_ok(unsigned char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               strchr("-._~!$&'()*+,;=:@/?%[]", c);
}

static int url_parse_host(const char *p, const char *end, HttpUrl *u) {
        size_t n = (size_t)(end - p);
        if (n == 0)
                return -EINVAL;
        if (*p == '[') {
                if (n < 3 || end[-1] != ']' || n - 2 >= sizeof(u->host))
                        return -EINVAL;
                memcpy(u->host, p + 1, n - 2);
                u->host[n - 2] = 0;
                return in_addr_literal_parse(u->host, NULL) == AF_INET6 ? 0 : -EINVAL;
        }
        if (n >= sizeof(u->host))
                return -EINVAL;
        for (const char *q = p; q < end; q++)
                if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') ||
                      *q == '-' || *q == '.' || *q == '_'))
                        return -EINVAL;
        memcpy(u->host, p, n);
        u->host[n] = 0;
        return 0;
}

static int url_parse_port(const char *p, const char *end, HttpUrl *u) {
        unsigned v = 0;
        if (p == end || end - p > 5)
                return -EINVAL;
        for (const char *q = p; q < end; q++) {
                if (*q < '0' || *q > '9')
                        return -EINVAL;
                v = v * 10 + (unsigned)(*q - '0');
        }
        if (v == 0 || v > 65535)
                return -EINVAL;
        u->port_is_default = v == (u->tls ? 443U : 80U);
        u->port_given = true;
        u->port = (uint16_t)v;
        return 0;
}

int http_url_parse(const char *url, HttpUrl *ret) {
        HttpUrl u = {};
        const char *p;

        if ((p = startswith(url, "https://")))
                u.tls = true;
        else if (!(p = startswith(url, "http://")))
                return -EINVAL;
        u.port = u.tls ? 443 : 80;
        u.port_is_default = true;
        const char *auth_end = p + strcspn(p, "/?#");
        if (memchr(p, '@', (size_t)(auth_end - p)))
                return -EINVAL; /* user information: never sent by us */
        /* The port's colon is the last one outside an IPv6 literal's brackets. */
        const char *bracket = memchr(p, ']', (size_t)(auth_end - p));
        const char *colon = NULL;
        for (const char *q = bracket ? bracket : p; q < auth_end; q++)
                if (*q == ':')
                        colon = q;
        int r = url_parse_host(p, colon ?: auth_end, &u);
        if (r < 0)
                return r;
        if (colon && (r = url_parse_port(colon + 1, auth_end, &u)) < 0)
                return r;
        if (*auth_end == '?')
                return -EINVAL; /* a query needs a path before it */
        u.target = auth_end;
        u.target_len = strcspn(auth_end, "#");
        for (size_t i = 0; i < u.target_len; i++)
                if (!target_char_ok((unsigned char)u.target[i]))
                        return -EINVAL;
        *ret = u;
        return 0;
}

void http_authority(const char *host, unsigned port, char *buf, size_t size) {
        bool v6 = strchr(host, ':');
        if (port == 0)
                snprintf(buf, size, v6 ? "[%s]" : "%s", host);
        else
                snprintf(buf, size, v6 ? "[%s]:%u" : "%s:%u", host, port);
}

void http_url_authority(const HttpUrl *u, bool with_default_port, char *buf, size_t size) {
        http_authority(u->host, u->port_is_default && !with_default_port ? 0U : u->port, buf, size);
}

size_t http_head_end(const char *data, size_t len) {
        for (size_t i = 0; i + 1 < len; i++) {
                if (data[i] != '\n')
                        continue;
                if (data[i + 1] == '\n')
                        return i + 2;
                if (data[i + 1] == '\r' && i + 2 < len && data[i + 2] == '\n')
                        return i + 3;
        }
        return 0;
}

static bool token_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               (c && strchr("!#$%&'*+-.^_`|~", c));
}

static int parse_status_line(const char *p, size_t n, unsigned *ret) {
        /* "HTTP/1.x SSS" then a space and a reason, possibly empty, or nothing (RFC 9112 §4). */
        if (n < 12 || memcmp(p, "HTTP/1.", 7) != 0 || (p[7] != '0' && p[7] != '1') || p[8] != ' ')
                return -EPROTO;
        unsigned s = 0;
        for (size_t i = 9; i < 12; i++) {
                if (p[i] < '0' || p[i] > '9')
                        return -EPROTO;
                s = s * 10 + (unsigned)(p[i] - '0');
        }
        if (s < 100 || (n > 12 && p[12] != ' '))
                return -EPROTO;
        *ret = s;
        return 0;
}

static int parse_content_length(const char *v, size_t n, bool *seen, uint64_t *len) {
        uint64_t x = 0;
        if (n == 0 || n > 19)
                return -EPROTO;
        for (size_t i = 0; i < n; i++) {
                if (v[i] < '0' || v[i] > '9')
                        return -EPROTO;
                x = x * 10 + (uint64_t)(v[i] - '0');
        }
        if (*seen && *len != x)
                return -EPROTO; /* two different lengths: a smuggling attempt or a broken server */
        *seen = true;
        *len = x;
        return 0;
}

/* Transfer-Encoding: a list of codings; chunked must be the last, and we decode no other. */
static int parse_transfer_encoding(const char *v, size_t n, bool *chunked) {
        while (n > 0 && (*v == ' ' || *v == '\t' || *v == ','))
                v++, n--;
        if (n == 7 && strncasecmp(v, "chunked", 7) == 0 && !*chunked) {
                *chunked = true;
                return 0;
        }
        return -EPROTO;
}

typedef struct HeadFields {
        bool have_length, chunked;
        uint64_t length;
} HeadFields;

static int parse_header_line(const char *p, size_t n, HeadFields *f, const char **ret_what) {
        size_t name = 0;
        while (name < n && token_char(p[name]))
                name++;
        if (name == 0 || name >= n || p[name] != ':') {
                *ret_what = "a header line is not 'Name: value'";
                return -EPROTO;
        }
        const char *v = p + name + 1;
        size_t vn = n - name - 1;
        while (vn > 0 && (*v == ' ' || *v == '\t'))
                v++, vn--;
        while (vn > 0 && (v[vn - 1] == ' ' || v[vn - 1] == '\t'))
                vn--;
        for (size_t i = 0; i < vn; i++)
                if ((unsigned char)v[i] < 0x20 && v[i] != '\t') {
                        *ret_what = "a header value holds a control character";
                        return -EPROTO;
                }
        if (name == 14 && strncasecmp(p, "Content-Length", 14) == 0 &&
            parse_content_length(v, vn, &f->have_length, &f->length) < 0) {
                *ret_what = "bad Content-Length";
                return -EPROTO;
        }
        if (name == 17 && strncasecmp(p, "Transfer-Encoding", 17) == 0 &&
            parse_transfer_encoding(v, vn, &f->chunked) < 0) {
                *ret_what = "a Transfer-Encoding other than chunked";
                return -EPROTO;
        }
        return 0;
}

static HttpFraming framing_of(unsigned status, const char *method, const HeadFields *f) {
        if (status < 200 || status == 204 || status == 304 || (method && streq(method, "HEAD")))
                return HTTP_FRAMING_NONE;
        if (f->chunked)
                return HTTP_FRAMING_CHUNKED; /* it wins over a Content-Length (RFC 9112 §6.3) */
        return f->have_length ? HTTP_FRAMING_LENGTH : HTTP_FRAMING_CLOSE;
}

int http_parse_response_head(const char *head, size_t len, const char *method, HttpResponseHead *ret,
                             const char **ret_what) {
        HeadFields f = {};
        unsigned status = 0;
        const char *p = head, *end = head + len;
        bool first = true;

        *ret_what = "malformed response head";
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t)(end - p));
                if (!nl)
                        return -EPROTO;
                size_t n = (size_t)(nl - p);
                if (n > 0 && p[n - 1] == '\r')
                        n--;
                if (n == 0)
                        break; /* the empty line */
                if (first) {
                        if (parse_status_line(p, n, &status) < 0) {
                                *ret_what = "the status line is not 'HTTP/1.x NNN reason'";
                                return -EPROTO;
                        }
                        first = false;
                } else if (*p == ' ' || *p == '\t') {
                        *ret_what = "a folded header line";
                        return -EPROTO;
                } else if (parse_header_line(p, n, &f, ret_what) < 0)
                        return -EPROTO;
                p = nl + 1;
        }
        if (first || p >= end) {
                *ret_what = first ? "no status line" : "the head has no end";
                return -EPROTO;
        }
        *ret = (HttpResponseHead){ .status = status,
                                   .framing = framing_of(status, method, &f),
                                   .content_length = f.have_length ? f.length : 0,
                                   .head_len = (size_t)(p - head) + (*p == '\r' ? 2 : 1) };
        *ret_what = NULL;
        return 0;
}

enum {
        CHUNK_SIZE,     /* hex digits of a size line */
        CHUNK_EXT,      /* after ';' up to the line's end */
        CHUNK_SIZE_LF,  /* after the size line's CR */
        CHUNK_DATA,     /* remaining bytes of data */
        CHUNK_DATA_CR,  /* the CRLF after the data */
        CHUNK_DATA_LF,  /* the LF after the data's CR */
        CHUNK_TRAILER,  /* a trailer line, or the empty line that ends the body */
        CHUNK_TRAIL_LF, /* after a trailer line's CR */
        CHUNK_DONE,
};

static int chunk_size_char(HttpChunked *c, char ch, const char **ret_what) {
        int d = ch >= '0' && ch <= '9'   ? ch - '0'
                : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                         : -1;
        if (d >= 0 && c->state == CHUNK_SIZE) {
                if (c->remaining >> 58) {
                        *ret_what = "a chunk size too large";
                        return -EPROTO;
                }
                c->remaining = c->remaining * 16 + (uint64_t)d;
                c->digits = true;
                return 0;
        }
        if (ch == ';' || ch == ' ' || ch == '\t' || c->state == CHUNK_EXT) {
                c->state = CHUNK_EXT; /* extensions (and the whitespace before them): ignored */
                if (ch != '\r' && ch != '\n')
                        return 0;
        }
        if ((ch == '\r' || ch == '\n') && c->digits) {
                bool last = c->remaining == 0;
                c->state = ch == '\r' ? CHUNK_SIZE_LF : last ? CHUNK_TRAILER : CHUNK_DATA;
                c->line = 0;
                return 0;
        }
        *ret_what = "a chunk size line is not hex digits";
        return -EPROTO;
}

/* One byte of the framing (everything but the data). */
static int chunk_frame_char(HttpChunked *c, char ch, const char **ret_what) {
        switch (c->state) {
        case CHUNK_SIZE:
        case CHUNK_EXT:
                if (++c->line > HTTP_CHUNK_LINE_MAX) {
                        *ret_what = "a chunk size line too long";
                        return -EPROTO;
                }
                return chunk_size_char(c, ch, ret_what);
        case CHUNK_SIZE_LF:
                if (ch != '\n')
                        break;
                c->state = c->remaining == 0 ? CHUNK_TRAILER : CHUNK_DATA;
                return 0;
        case CHUNK_DATA_CR:
                if (ch == '\n' || ch == '\r') {
                        c->state = ch == '\r' ? CHUNK_DATA_LF : CHUNK_SIZE;
                        c->digits = false;
                        return 0;
                }
                break;
        case CHUNK_DATA_LF:
                if (ch != '\n')
                        break;
                c->state = CHUNK_SIZE;
                c->digits = false;
                return 0;
        case CHUNK_TRAILER:
        case CHUNK_TRAIL_LF:
                if (++c->trailers > HTTP_CHUNK_TRAILERS_MAX) {
                        *ret_what = "the trailers are too long";
                        return -EPROTO;
                }
                if (ch == '\r' && c->state == CHUNK_TRAILER) {
                        c->state = CHUNK_TRAIL_LF;
                        return 0;
                }
                if (ch == '\n') {
                        c->state = c->line == 0 ? CHUNK_DONE : CHUNK_TRAILER;
                        c->line = 0;
                        return 0;
                }
                if (c->state == CHUNK_TRAIL_LF)
                        break;
                c->line++;
                return 0;
        }
        *ret_what = "a chunk is not followed by CRLF";
        return -EPROTO;
}

int64_t http_chunked_feed(HttpChunked *c, const char *in, size_t len, HttpDataFunc data_cb, void *userdata,
                          const char **ret_what) {
        size_t i = 0;
        *ret_what = NULL;
        while (i < len && c->state != CHUNK_DONE) {
                if (c->state == CHUNK_DATA) {
                        size_t n = (size_t)MIN((uint64_t)(len - i), c->remaining);
                        int r = data_cb(in + i, n, userdata);
                        if (r < 0)
                                return r;
                        i += n;
                        c->remaining -= n;
                        if (c->remaining == 0)
                                c->state = CHUNK_DATA_CR;
                        continue;
                }
                if (chunk_frame_char(c, in[i], ret_what) < 0)
                        return -EPROTO;
                i++;
        }
        return (int64_t)i;
}

bool http_chunked_done(const HttpChunked *c) {
        return c->state == CHUNK_DONE;
}

int http_parse_request_line(const char *head, size_t len, char *method, size_t method_size, char *path,
                            size_t path_size) {
        const char *nl = memchr(head, '\n', len);
        if (!nl)
                return -EPROTO;
        size_t n = (size_t)(nl - head);
        if (n > 0 && head[n - 1] == '\r')
                n--;
        const char *sp1 = memchr(head, ' ', n);
        if (!sp1 || sp1 == head)
                return -EPROTO;
        const char *target = sp1 + 1, *sp2 = memchr(target, ' ', n - (size_t)(target - head));
        if (!sp2 || sp2 == target || *target != '/')
                return -EPROTO;
        size_t vlen = n - (size_t)(sp2 + 1 - head);
        if (vlen != 8 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0 || (sp2[8] != '0' && sp2[8] != '1'))
                return -EPROTO;
        for (const char *p = head; p < sp1; p++)
                if (!token_char(*p))
                        return -EPROTO;
        for (const char *p = target; p < sp2; p++)
                if (!target_char_ok((unsigned char)*p))
                        return -EPROTO;
        size_t ml = (size_t)(sp1 - head), pl = strcspn(target, "? ");
        pl = MIN(pl, (size_t)(sp2 - target));
        if (ml >= method_size || pl >= path_size)
                return -ENAMETOOLONG;
        memcpy(method, head, ml);
        method[ml] = 0;
        memcpy(path, target, pl);
        path[pl] = 0;
        return 0;
}

static bool prefix_matches(const uint8_t *a, const uint8_t *b, unsigned bits) {
        size_t bytes = bits / 8;
        if (memcmp(a, b, bytes) != 0)
                return false;
        unsigned rest = bits % 8;
        if (rest == 0)
                return true;
        uint8_t mask = (uint8_t)(0xffU << (8 - rest));
        return (a[bytes] & mask) == (b[bytes] & mask);
}

/* An address entry ("10.0.0.0/8", "::1", "192.0.2.7") against a host that is an address. */
static bool no_proxy_address_matches(const char *entry, size_t n, const char *host) {
        char buf[64];
        uint8_t want[16], have[16];
        unsigned bits = 0;
        if (n >= sizeof(buf))
                return false;
        memcpy(buf, entry, n);
        buf[n] = 0;
        char *slash = strchr(buf, '/');
        if (slash) {
                *slash = 0;
                char *e;
                unsigned long b = strtoul(slash + 1, &e, 10);
                if (*e || e == slash + 1 || b > 128)
                        return false;
                bits = (unsigned)b;
        }
        int family = strchr(buf, ':') ? AF_INET6 : AF_INET;
        unsigned max = family == AF_INET6 ? 128 : 32;
        if (inet_pton(family, buf, want) != 1 || inet_pton(family, host, have) != 1 || bits > max)
                return false;
        return prefix_matches(want, have, slash ? bits : max);
}

bool http_no_proxy_matches(const char *list, const char *host) {
        size_t hl = strlen(host);
        bool host_is_address = in_addr_literal_valid(host);

        for (const char *p = list; p && *p;) {
                size_t n = strcspn(p, ",");
                const char *e = p, *next = p[n] ? p + n + 1 : p + n;
                while (n > 0 && (*e == ' ' || *e == '\t'))
                        e++, n--;
                while (n > 0 && (e[n - 1] == ' ' || e[n - 1] == '\t'))
                        n--;
                if (n == 1 && *e == '*')
                        return true;
                if (host_is_address) {
                        if (n > 0 && no_proxy_address_matches(e, n, host))
                                return true;
                } else {
                        if (n > 0 && *e == '.')
                                e++, n--;
                        if (n > 0 && hl >= n && strncasecmp(host + hl - n, e, n) == 0 &&
                            (hl == n || host[hl - n - 1] == '.'))
                                return true;
                }
                p = next;
        }
        return false;
}

/* Finds the host in the authority of an http(s) URL; refuses a port that is not a number, so that what we
 * judge is what shared/http.c connects to. */
static int endpoint_authority(const char *authority, size_t len, size_t *ret_host_len) {
        const char *a = authority, *e = authority + len, *colon;
        if (len == 0)
                return -EINVAL;
        if (a[0] == '[') {
                const char *close = memchr(a, ']', len);
                if (!close)
                        return -EINVAL;
                colon = close + 1 < e ? close + 1 : NULL;
                if (colon && *colon != ':')
                        return -EINVAL;
        } else
                colon = memchr(a, ':', len);
        if (colon) {
                size_t digits = (size_t)(e - colon - 1);
                if (digits == 0 || digits > 5 || strspn(colon + 1, "0123456789") < digits)
                        return -EINVAL;
        }
        *ret_host_len = (size_t)((colon ?: e) - a);
        return 0;
}

int http_endpoint_check(const char *variable, const char *url, char **ret_error) {
        const char *rest = startswith(url, "https://");
        bool https = rest;
        size_t host_len;
        const char *why = NULL;

        if (!rest)
                rest = startswith(url, "http://");
        if (!rest)
                why = "must start with https:// (or http:// for a loopback host)";
        else if (string_has_cc(url) || strlen(url) >= 1024 || strpbrk(url, "?# "))
                why =
                    "must be a base URL shorter than 1024 bytes, without query, fragment, spaces or control "
                    "characters";
        else if (memchr(rest, '@', strcspn(rest, "/")))
                why = "must not contain user info (credentials come from the credential chain)";
        else if (endpoint_authority(rest, strcspn(rest, "/"), &host_len) < 0)
                why = "must be http(s)://HOST[:PORT][/PATH]";
        /* The signature and the session token travel in the headers: only TLS may carry them off this
         * machine. Plain http is for local doubles and proxies on loopback. */
        else if (!https && !in_addr_host_is_loopback(rest, host_len))
                why = "plain http is allowed only for a loopback host (127.0.0.0/8, ::1, localhost): use "
                      "https";
        if (!why)
                return 0;
        return error_setf(ret_error, -EINVAL, "%s='%s': %s", variable, url, why);
}

int http_endpoint_copy(const char *variable, const char *e, char **ret, char **ret_error) {
        int r = http_endpoint_check(variable, e, ret_error);
        if (r < 0)
                return r;
        char *s = strdup(e);
        if (!s)
                return -ENOMEM;
        size_t l = strlen(s);
        while (l > 0 && s[l - 1] == '/')
                s[--l] = 0;
        *ret = s;
        return 0;
}
