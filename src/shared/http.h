/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* One HTTP/1.1 exchange on a connection of its own: bounded in time and in response size, http/https only
 * (TLS 1.2+ through OpenSSL, the server's name checked), no redirects. It never signs: callers sign with
 * aws/sigv4.h. */

#include <stdbool.h>
#include <stddef.h>

#include "basic/time-util.h"

#define HTTP_RESPONSE_MAX_DEFAULT (8U * 1024 * 1024)
#define HTTP_HEADERS_MAX          (64U * 1024)

typedef struct HttpRequest {
        const char *method; /* "GET", "PUT", "POST", "DELETE" */
        const char *url;
        const char *const *headers; /* "Name: value" lines */
        size_t n_headers;
        const void *body;
        size_t body_len;
        usec_t timeout;         /* whole exchange; 0 = 30 s */
        usec_t connect_timeout; /* 0 = 5 s */
        size_t max_response;    /* body cap; 0 = HTTP_RESPONSE_MAX_DEFAULT */
        /* Through the proxy the environment names (https_proxy, no_proxy...), for the cloud's APIs and the
         * state store only. Everything inside the cluster (etcd, the API server, the instance metadata
         * service) is dialled directly: a proxy outside the cluster cannot reach it, and must never see
         * its traffic (snapshots, Secrets). Off by default. */
        bool via_proxy;
        const char *ca_file; /* PEM bundle of the CAs to trust for https; NULL: the system's */
        /* The same as text, for a CA held in memory only (a worker's CA taken with its pin before it is on
         * disk); not with ca_file. */
        const char *ca_pem;
        const char *cert_file; /* PEM client certificate for https (mutual TLS); NULL: none */
        const char *key_file;  /* PEM private key of cert_file (read by OpenSSL, never copied by us) */
        /* "HOST:PORT:ADDR:PORT" (as curl's CURLOPT_CONNECT_TO): connect to ADDR:PORT when the URL names
         * HOST:PORT, while the TLS name check and the Host header keep the URL's name (one apiserver of
         * many, all with a certificate for one shared name). NULL: connect where the URL says. */
        const char *connect_to;
        /* When set, the body is not kept: each piece is handed to sink as it arrives, with the status of
         * the response (a stream larger than any buffer: an etcd snapshot, a watch). A negative return
         * ends the exchange and is http_request()'s result. The response then has an empty body. */
        int (*sink)(long status, const void *data, size_t len, void *userdata);
        void *sink_userdata;
        bool sensitive; /* the response holds a secret (IMDS token, role credentials): its buffers
                           are erased before they are freed, http_response_done() included */
        /* https whose server is not authenticated (no CA, no name check): only for a request that sends
         * nothing a stranger may not see and whose answer the caller checks by other means (a worker
         * fetches the cluster's CA this way, and trusts it only when it has the pin it was given). Such a
         * request carries no client certificate, no body, no Authorization header and no proxy. */
        bool unverified_server;
} HttpRequest;

typedef struct HttpResponse {
        long status;
        char *body; /* NUL-terminated, body_len bytes */
        size_t body_len;
        char *headers;  /* raw header block of the final response, "Name: value\r\n" lines */
        bool sensitive; /* from the request: http_response_done() erases body and headers */
} HttpResponse;

void http_response_done(HttpResponse *r);

/* Performs the request. The request headers may hold secrets (Authorization, X-Amz-Security-Token): our
 * copy in the request head is erased before it is freed. Any HTTP status is success (>= 0): the caller
 * judges it. Failures: PK_ETIMEOUT, PK_ETOOBIG (body past the cap), -ECONNREFUSED, -EHOSTUNREACH, -EINVAL
 * (bad URL, header with a line break), -EIO (other transport errors). On failure *ret_error (when not NULL)
 * gets a message for the caller to print (caller frees); it holds the URL and what failed, never a header
 * value.
 */
int http_request(const HttpRequest *req, HttpResponse *ret, char **ret_error);

/* Value of the first response header named name (case-insensitive), newly allocated; NULL when absent. */
char *http_response_header(const HttpResponse *r, const char *name);

/* The connect_to of one server among those behind host:port: "HOST:PORT:ADDR:PORT", an IPv6 address in
 * brackets. NULL on allocation failure. */
char *http_connect_to_address(const char *host, unsigned port, const char *address);
