/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* One gRPC call over HTTP/2 (RFC 9113, gRPC's PROTOCOL-HTTP2.md) through Debian's libnghttp2, on a
 * connection of its own dialled through tls-conn.h and never through a proxy (what goes to etcd is a
 * cluster's secrets): https with ALPN "h2", or http with prior knowledge (h2c), the way etcd serves gRPC
 * beside its HTTP API on one client port. The request is one message, framed here (uncompressed); the
 * response's DATA (gRPC's length-prefixed messages, still framed) go to the sink as they arrive, so a
 * server stream of any size passes in bounded memory and its messages are the caller's to decode. The call
 * succeeds when the trailers (or a trailers-only answer) say grpc-status 0. */

#include <stddef.h>

#include "basic/time-util.h"

/* The stream's and the connection's receive windows: a server stream is not held back by window updates
 * (a 65,535-byte window would be one round trip every 64 KiB). */
#define GRPC_WINDOW (16U * 1024U * 1024U)
/* A grpc-message is kept up to this many bytes (percent-decoded). */
#define GRPC_MESSAGE_MAX 1024U

typedef struct GrpcCall {
        const char *endpoint; /* "https://10.0.0.1:4001", "http://127.0.0.1:2379": no path */
        const char *method;   /* "/etcdserverpb.Maintenance/Snapshot" */
        const void *message;  /* the request message, serialized; NULL for an empty one */
        size_t message_len;
        usec_t timeout;         /* the whole call; 0: 30 s */
        usec_t connect_timeout; /* 0: 5 s */
        const char *ca_file;    /* https: PEM bundle of the CAs to trust; NULL: the system's */
        const char *cert_file;  /* https: PEM client certificate; NULL: none */
        const char *key_file;   /* its key */
        /* Each piece of the response's DATA as it arrives, in order. A negative return ends the call and is
         * grpc_call()'s result (the sink keeps its own message). */
        int (*sink)(const void *data, size_t len, void *userdata);
        void *userdata;
} GrpcCall;

/* Performs the call. 0: grpc-status 0. Failures, with *ret_error (caller frees) naming the endpoint:
 * PK_EGRPC for another grpc-status (its number, name and percent-decoded grpc-message in the text); -EIO for
 * an HTTP status other than 200, a stream reset, GOAWAY or the end of the connection before the trailers, or
 * a broken HTTP/2 peer; the connection's own (tls-conn.h: -ECONNREFUSED, -EHOSTUNREACH, PK_ETIMEOUT, -EIO
 * for TLS); -EINVAL for a bad endpoint; the sink's error (*ret_error then says only where). */
int grpc_call(const GrpcCall *call, char **ret_error);

/* gRPC's name of a status code ("UNAVAILABLE"), "UNKNOWN" past the table. */
const char *grpc_status_name(int status);
