/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The pure parts of the HTTP/1.1 client (RFC 9110, 9112): the URL, the response head, the chunked body,
 * the proxy environment's no_proxy list. No I/O: each function takes bytes and returns what they say, so
 * the fuzz target (tests/fuzz/fuzz-http-response.c) reaches all of it. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HTTP_HOST_MAX 256

typedef struct HttpUrl {
        bool tls;                 /* https */
        char host[HTTP_HOST_MAX]; /* a name or an address, without an IPv6 literal's brackets (it has a
                                     colon) */
        uint16_t port;            /* the URL's, or the scheme's default */
        bool port_is_default;     /* the Host header then names no port (as curl sends it) */
        bool port_given;          /* the URL named a port */
        const char *target;       /* points into the URL: the path and query, "" for none ("/" is sent) */
        size_t target_len;        /* without a fragment */
} HttpUrl;

/* http:// or https://, a host (name, IPv4, [IPv6]), an optional port (1-65535), a path that starts with
 * '/'. No user information, no spaces or control characters. -EINVAL otherwise. */
int http_url_parse(const char *url, HttpUrl *ret);

/* "host", or "[host]" for an IPv6 address (a host with a colon), then ":port" unless port is 0. */
void http_authority(const char *host, unsigned port, char *buf, size_t size);
/* The URL's http_authority(), with no port when it is the scheme's default unless with_default_port (the
 * Host header names none, as curl sends it; a CONNECT target always has one). */
void http_url_authority(const HttpUrl *u, bool with_default_port, char *buf, size_t size);

/* Checks a cloud API's base URL read from variable: http:// or https://HOST[:PORT][/PATH], no user info,
 * query or fragment, and plain http only when HOST is loopback (127.0.0.0/8, [::1], localhost), since the
 * request headers carry a signature, a session token or a bearer token. -EINVAL with *ret_error naming
 * variable and url. */
int http_endpoint_check(const char *variable, const char *url, char **ret_error);
/* The same check, then a copy of url without trailing slashes in *ret (caller frees). */
int http_endpoint_copy(const char *variable, const char *url, char **ret, char **ret_error);

typedef enum HttpFraming {
        HTTP_FRAMING_NONE,   /* no body: 1xx, 204, 304, or a HEAD request */
        HTTP_FRAMING_LENGTH, /* Content-Length */
        HTTP_FRAMING_CHUNKED,
        HTTP_FRAMING_CLOSE, /* until the server closes the connection */
} HttpFraming;

typedef struct HttpResponseHead {
        unsigned status;
        HttpFraming framing;
        uint64_t content_length;
        size_t head_len; /* bytes of the head, its empty line included */
} HttpResponseHead;

/* Finds the end of a response head in data (the empty line: CRLF CRLF, or LF LF). Returns its length, 0
 * when more is needed. */
size_t http_head_end(const char *data, size_t len);

/* Parses a complete head (http_head_end()'s length) of a response to method: the status line
 * "HTTP/1.x SSS reason", header lines "Name: value" (no obsolete line folding), Content-Length (digits,
 * several only when equal) and Transfer-Encoding (chunked last; any other coding is -EPROTO). Returns 0 or
 * -EPROTO, with *ret_what naming what is wrong (static text). */
int http_parse_response_head(const char *head, size_t len, const char *method, HttpResponseHead *ret,
                             const char **ret_what);

/* The chunked body (RFC 9112 §7.1): sizes in hex with optional extensions, each chunk's data followed by
 * CRLF, a last chunk of size 0, then optional trailer lines and an empty line. Bounded: a size line or the
 * trailers past HTTP_CHUNK_LINE_MAX / HTTP_CHUNK_TRAILERS_MAX bytes is an error. */
#define HTTP_CHUNK_LINE_MAX     4096
#define HTTP_CHUNK_TRAILERS_MAX (64U * 1024)

typedef struct HttpChunked {
        int state;
        uint64_t remaining; /* of the current chunk's data */
        size_t line;        /* bytes of the current size or trailer line */
        size_t trailers;    /* bytes of the trailers so far */
        bool digits;        /* the size line has a digit */
} HttpChunked;

/* Feeds in[0..len): each piece of body data goes to data_cb (a negative return stops and is returned).
 * Returns the bytes consumed (less than len only once the body is complete: the rest is not the body's),
 * or -EPROTO (*ret_what says why). */
typedef int (*HttpDataFunc)(const char *data, size_t len, void *userdata);
int64_t http_chunked_feed(HttpChunked *c, const char *in, size_t len, HttpDataFunc data_cb, void *userdata,
                          const char **ret_what);
bool http_chunked_done(const HttpChunked *c);

/* A request's first line, "METHOD SP request-target SP HTTP/1.x" (a server's side: the daemon's /healthz
 * and /metrics): the method (a token) and the target's path without its query, each into a buffer of its
 * size. The path must start with '/'. -EPROTO for anything else, -ENAMETOOLONG for a part too long. */
int http_parse_request_line(const char *head, size_t len, char *method, size_t method_size, char *path,
                            size_t path_size);

/* Whether host is exempt from the proxy by a no_proxy list as curl reads it: "*" for every host, else
 * comma-separated entries, each a name (matching itself and its subdomains; a leading '.' is ignored), an
 * address, or an address/prefix. Names compare without case; spaces around entries are ignored. */
bool http_no_proxy_matches(const char *list, const char *host);
