/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* One client connection, plain TCP or TLS (1.2+, through OpenSSL's libssl), every step bounded by a
 * deadline: the name looked up (getaddrinfo_a), the addresses tried in turn, the handshake (the server's
 * name or address checked, a client certificate, ALPN), each read and write. The one home of protokube's
 * connections and TLS setup: the HTTP/1.1 client (http.c) and the gRPC client (grpc.c) both dial through it.
 * No proxy here: a caller that wants one dials the proxy and tunnels. */

#include <openssl/types.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "basic/macro.h"
#include "basic/time-util.h"

typedef struct TlsConn {
        int fd;
        SSL_CTX *ctx;
        SSL *ssl;
        usec_t deadline;         /* of every read and write */
        usec_t connect_deadline; /* of the lookup, the connect and the handshake */
        char *what;              /* the first failure, for the caller's message; the caller frees it */
} TlsConn;

#define TLS_CONN_NULL ((TlsConn){ .fd = -1 })

typedef struct TlsConnOptions {
        const char *server_name;   /* checked in the certificate (a name, or an address literal) and sent
                                      as SNI (a name only) */
        const char *ca_file;       /* PEM bundle of the CAs to trust; NULL: the system's (or ca_pem) */
        const char *ca_pem;        /* the same as text; not with ca_file */
        const char *cert_file;     /* PEM client certificate (mutual TLS); NULL: none */
        const char *key_file;      /* its PEM private key (read by OpenSSL, never copied by us) */
        bool unverified_server;    /* no CA, no name check, no client certificate (http.h says when) */
        const unsigned char *alpn; /* the protocols offered, in ALPN's wire format ("\x02h2") */
        size_t alpn_len;
} TlsConnOptions;

/* Records the first failure's message (later ones are consequences) and passes r on. */
int tls_conn_fail(TlsConn *c, int r, const char *format, ...) _printf_(3, 4);

/* Resolves host and connects to port, each address in turn with an equal share of what is left of
 * connect_deadline. -ECONNREFUSED, -EHOSTUNREACH or PK_ETIMEOUT, with c->what. */
int tls_conn_open(TlsConn *c, const char *host, uint16_t port);
/* The TLS handshake on the open connection, within connect_deadline. -EIO (with OpenSSL's reason or the
 * certificate problem), -EINVAL, PK_ETIMEOUT. */
int tls_conn_handshake(TlsConn *c, const TlsConnOptions *o);
/* The protocol the server chose by ALPN ("h2"), NULL when none; valid while the connection is. */
const char *tls_conn_alpn(const TlsConn *c, size_t *ret_len);

int tls_conn_write_all(TlsConn *c, const void *data, size_t len);
/* What is there, at least one byte, or 0 at the end of the stream; < 0 on failure or past the deadline. */
ssize_t tls_conn_read(TlsConn *c, void *buf, size_t size);
/* Releases the connection; c->what stays for the caller. */
void tls_conn_close(TlsConn *c);

/* OpenSSL's socket writes are write(2): a peer that closed would raise SIGPIPE. It is blocked for the
 * exchange, and one it raised is taken before the mask is restored. */
bool tls_conn_sigpipe_block(sigset_t *old);
void tls_conn_sigpipe_restore(const sigset_t *old, bool was_pending);
