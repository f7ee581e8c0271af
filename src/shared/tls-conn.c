/* SPDX-License-Identifier: Apache-2.0 */
/* Client connections with deadlines, plain or TLS (tls-conn.h). */
#include "shared/tls-conn.h"

#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/in-addr-util.h"
#include "basic/string-util.h"
#include "shared/http-wire.h"

/* Records the first failure's message (later ones are consequences) and passes r on. */
int tls_conn_fail(TlsConn *c, int r, const char *format, ...) {
        if (!c->what) {
                va_list ap;
                va_start(ap, format);
                if (vasprintf(&c->what, format, ap) < 0)
                        c->what = NULL;
                va_end(ap);
        }
        return r;
}

/* OpenSSL's reason for the last failure (never key material: its error strings name the operation). */
static const char *ssl_reason(char *buf, size_t size) {
        unsigned long e = ERR_peek_last_error();
        if (e == 0)
                return "unknown error";
        ERR_error_string_n(e, buf, size);
        ERR_clear_error();
        return buf;
}

static int conn_wait(TlsConn *c, short events, usec_t deadline) {
        for (;;) {
                usec_t t = now(CLOCK_MONOTONIC);
                if (t >= deadline)
                        return PK_ETIMEOUT;
                struct pollfd p = { .fd = c->fd, .events = events };
                int r = poll(&p, 1, (int)MIN((deadline - t + 999) / 1000, (usec_t)INT_MAX));
                if (r > 0)
                        return 0;
                if (r < 0 && errno != EINTR)
                        return -errno;
        }
}

/* After an SSL call failed with e: waits for what it wants, or says why it cannot go on. */
static int tls_want(TlsConn *c, int e, usec_t deadline) {
        if (e == SSL_ERROR_WANT_READ)
                return conn_wait(c, POLLIN, deadline);
        if (e == SSL_ERROR_WANT_WRITE)
                return conn_wait(c, POLLOUT, deadline);
        return -EIO;
}

int tls_conn_write_all(TlsConn *c, const void *data, size_t len) {
        const char *p = data;
        while (len > 0) {
                size_t n = 0;
                int r;
                if (c->ssl) {
                        ERR_clear_error();
                        if (SSL_write_ex(c->ssl, p, len, &n) <= 0) {
                                r = tls_want(c, SSL_get_error(c->ssl, 0), c->deadline);
                                if (r == -EIO) {
                                        char e[256];
                                        return tls_conn_fail(c, r, "TLS write failed: %s",
                                                             ssl_reason(e, sizeof(e)));
                                }
                                if (r < 0)
                                        return tls_conn_fail(c, r, "timed out sending the request");
                                continue;
                        }
                } else {
                        ssize_t k = send(c->fd, p, len, MSG_NOSIGNAL);
                        if (k < 0 && (errno == EAGAIN || errno == EINTR)) {
                                if ((r = conn_wait(c, POLLOUT, c->deadline)) < 0)
                                        return tls_conn_fail(c, r, "timed out sending the request");
                                continue;
                        }
                        if (k < 0)
                                return tls_conn_fail(c, -EIO, "sending the request failed: %m");
                        n = (size_t)k;
                }
                p += n;
                len -= n;
        }
        return 0;
}

ssize_t tls_conn_read(TlsConn *c, void *buf, size_t size) {
        for (;;) {
                int r;
                if (c->ssl) {
                        size_t n = 0;
                        ERR_clear_error();
                        if (SSL_read_ex(c->ssl, buf, size, &n) > 0)
                                return (ssize_t)n;
                        int e = SSL_get_error(c->ssl, 0);
                        if (e == SSL_ERROR_ZERO_RETURN)
                                return 0;
                        r = tls_want(c, e, c->deadline);
                        if (r == -EIO) {
                                char m[256];
                                return tls_conn_fail(c, r, "TLS read failed: %s", ssl_reason(m, sizeof(m)));
                        }
                } else {
                        ssize_t k = recv(c->fd, buf, size, 0);
                        if (k >= 0)
                                return k;
                        if (errno != EAGAIN && errno != EINTR)
                                return tls_conn_fail(c, errno == ECONNRESET ? -ECONNRESET : -EIO,
                                                     "receiving the response failed: %m");
                        r = conn_wait(c, POLLIN, c->deadline);
                }
                if (r < 0)
                        return tls_conn_fail(c, r, "timed out waiting for the response");
        }
}

typedef struct Lookup {
        struct gaicb cb;
        struct addrinfo hints;
        char name[HTTP_HOST_MAX];
        char service[8];
} Lookup;

/* A name's addresses within the connect deadline: getaddrinfo_a runs the lookup on glibc's helper thread
 * so that a DNS server that does not answer costs the connect timeout, not resolv.conf's retries. */
static int resolve(TlsConn *c, const char *host, uint16_t port, struct addrinfo **ret) {
        struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG };
        char service[8];
        snprintf(service, sizeof(service), "%u", port);
        if (in_addr_literal_valid(host)) {
                hints.ai_flags = AI_NUMERICSERV | AI_NUMERICHOST;
                int e = getaddrinfo(host, service, &hints, ret);
                return e == 0 ? 0
                              : tls_conn_fail(c, -EHOSTUNREACH, "bad address %s: %s", host, gai_strerror(e));
        }
        Lookup *l = calloc(1, sizeof(Lookup));
        if (!l)
                return -ENOMEM;
        l->hints = hints;
        snprintf(l->name, sizeof(l->name), "%s", host);
        memcpy(l->service, service, sizeof(service));
        l->cb = (struct gaicb){ .ar_name = l->name, .ar_service = l->service, .ar_request = &l->hints };
        struct gaicb *list[1] = { &l->cb };
        if (getaddrinfo_a(GAI_NOWAIT, list, 1, NULL) != 0) {
                free(l);
                return tls_conn_fail(c, -EHOSTUNREACH,
                                     "Could not resolve host: %s (no resources for the lookup)", host);
        }
        int e;
        while ((e = gai_error(&l->cb)) == EAI_INPROGRESS) {
                usec_t t = now(CLOCK_MONOTONIC);
                if (t >= c->connect_deadline) {
                        /* Not cancelled: glibc still writes the result into l, so it stays allocated. */
                        if (gai_cancel(&l->cb) == EAI_NOTCANCELED)
                                return tls_conn_fail(c, PK_ETIMEOUT, "Resolving timed out: %s", host);
                        continue; /* cancelled or done meanwhile: gai_error() says which */
                }
                struct timespec ts;
                usec_to_timespec(c->connect_deadline - t, &ts);
                (void)gai_suspend((const struct gaicb *const *)list, 1, &ts);
        }
        *ret = l->cb.ar_result;
        free(l);
        if (e == EAI_CANCELED)
                return tls_conn_fail(c, PK_ETIMEOUT, "Resolving timed out: %s", host);
        if (e != 0)
                return tls_conn_fail(c, -EHOSTUNREACH, "Could not resolve host: %s (%s)", host,
                                     gai_strerror(e));
        return 0;
}

static int connect_one(TlsConn *c, const struct addrinfo *ai, usec_t deadline) {
        int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
        if (fd < 0)
                return -errno;
        int one = 1;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)); /* the head and body are ours */
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS) {
                int r = -errno;
                close(fd);
                return r;
        }
        c->fd = fd;
        int r = conn_wait(c, POLLOUT, deadline), err = 0;
        socklen_t l = sizeof(err);
        if (r == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l) < 0)
                err = errno;
        if (r == 0 && err != 0)
                r = -err;
        if (r < 0)
                c->fd = safe_close(fd);
        return r;
}

int tls_conn_open(TlsConn *c, const char *host, uint16_t port) {
        struct addrinfo *res = NULL;
        int r = resolve(c, host, port, &res);
        if (r < 0)
                return r;
        size_t left = 0;
        for (struct addrinfo *ai = res; ai; ai = ai->ai_next)
                left++;
        r = -EHOSTUNREACH;
        for (struct addrinfo *ai = res; ai && r < 0; ai = ai->ai_next, left--) {
                usec_t t = now(CLOCK_MONOTONIC);
                if (t >= c->connect_deadline) {
                        r = PK_ETIMEOUT;
                        break;
                }
                r = connect_one(c, ai, t + (c->connect_deadline - t) / left);
        }
        freeaddrinfo(res);
        if (r == PK_ETIMEOUT)
                return tls_conn_fail(c, r, "Failed to connect to %s port %u: timed out", host, port);
        if (r < 0)
                return tls_conn_fail(c, -ECONNREFUSED, "Failed to connect to %s port %u: %s", host, port,
                                     strerror(-r));
        return 0;
}

/* No passphrase prompt on a terminal for an encrypted key: it simply does not load. */
static int no_passphrase(char *buf, int size, int rwflag, void *userdata) {
        (void)buf, (void)size, (void)rwflag, (void)userdata;
        return 0;
}

/* Every certificate of a PEM text into the context's trust store; none at all is an error. */
static int load_ca_pem(SSL_CTX *ctx, const char *pem) {
        BIO *bio = BIO_new_mem_buf(pem, -1);
        if (!bio)
                return -ENOMEM;
        STACK_OF(X509_INFO) *infos = PEM_X509_INFO_read_bio(bio, NULL, NULL, NULL);
        BIO_free(bio);
        if (!infos)
                return -EIO;
        X509_STORE *store = SSL_CTX_get_cert_store(ctx);
        int n = 0, r = 0;
        for (int i = 0; i < sk_X509_INFO_num(infos) && r >= 0; i++) {
                X509 *cert = sk_X509_INFO_value(infos, i)->x509;
                if (!cert)
                        continue;
                if (X509_STORE_add_cert(store, cert) != 1)
                        r = -EIO;
                n++;
        }
        sk_X509_INFO_pop_free(infos, X509_INFO_free);
        return r < 0 ? r : n > 0 ? 0 : -EIO;
}

static int tls_context(TlsConn *c, const TlsConnOptions *o) {
        char e[256];
        SSL_CTX *ctx = c->ctx = SSL_CTX_new(TLS_client_method());
        if (!ctx)
                return tls_conn_fail(c, -ENOMEM, "cannot create a TLS context: %s",
                                     ssl_reason(e, sizeof(e)));
        SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
        SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION);
        SSL_CTX_set_default_passwd_cb(ctx, no_passphrase);
        if (o->unverified_server) {
                SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
                return 0; /* and no client certificate: the caller refuses one (http_check_request()) */
        }
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        if (o->ca_pem) {
                if (load_ca_pem(ctx, o->ca_pem) < 0)
                        return tls_conn_fail(c, -EIO, "cannot read the CA certificates given as text: %s",
                                             ssl_reason(e, sizeof(e)));
        } else if (o->ca_file ? SSL_CTX_load_verify_file(ctx, o->ca_file) != 1
                              : SSL_CTX_set_default_verify_paths(ctx) != 1)
                return tls_conn_fail(c, -EIO, "cannot read the CA certificates %s: %s",
                                     o->ca_file ?: "(the system's)", ssl_reason(e, sizeof(e)));
        if (o->cert_file && SSL_CTX_use_certificate_chain_file(ctx, o->cert_file) != 1)
                return tls_conn_fail(c, -EIO, "cannot read the client certificate %s: %s", o->cert_file,
                                     ssl_reason(e, sizeof(e)));
        if (o->key_file && (SSL_CTX_use_PrivateKey_file(ctx, o->key_file, SSL_FILETYPE_PEM) != 1 ||
                            SSL_CTX_check_private_key(ctx) != 1))
                return tls_conn_fail(c, -EIO, "cannot use the client key %s with its certificate: %s",
                                     o->key_file, ssl_reason(e, sizeof(e)));
        return 0;
}

int tls_conn_handshake(TlsConn *c, const TlsConnOptions *o) {
        const char *host = o->server_name;
        char e[256];
        int r = tls_context(c, o);
        if (r < 0)
                return r;
        SSL *ssl = c->ssl = SSL_new(c->ctx);
        if (!ssl || SSL_set_fd(ssl, c->fd) != 1 ||
            (o->alpn && SSL_set_alpn_protos(ssl, o->alpn, (unsigned)o->alpn_len) != 0))
                return tls_conn_fail(c, -ENOMEM, "cannot set up TLS: %s", ssl_reason(e, sizeof(e)));
        SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        /* The name checked is the caller's (a URL's), wherever the connection went (a proxy's tunnel). */
        if (o->unverified_server ? !in_addr_literal_valid(host) && SSL_set_tlsext_host_name(ssl, host) != 1
            : in_addr_literal_valid(host)
                ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) != 1
                : SSL_set_tlsext_host_name(ssl, host) != 1 || SSL_set1_host(ssl, host) != 1)
                return tls_conn_fail(c, -EINVAL, "cannot check the server's name %s", host);
        for (;;) {
                ERR_clear_error();
                if (SSL_connect(ssl) == 1)
                        return 0;
                r = tls_want(c, SSL_get_error(ssl, 0), c->connect_deadline);
                if (r == PK_ETIMEOUT)
                        return tls_conn_fail(c, r, "TLS handshake with %s timed out", host);
                if (r < 0)
                        break;
        }
        long v = SSL_get_verify_result(ssl);
        if (v != X509_V_OK)
                return tls_conn_fail(c, -EIO, "SSL certificate problem: %s",
                                     X509_verify_cert_error_string(v));
        return tls_conn_fail(c, -EIO, "TLS handshake with %s failed: %s", host, ssl_reason(e, sizeof(e)));
}

void tls_conn_close(TlsConn *c) {
        SSL_free(c->ssl);
        SSL_CTX_free(c->ctx);
        c->ssl = NULL;
        c->ctx = NULL;
        c->fd = safe_close(c->fd);
}

const char *tls_conn_alpn(const TlsConn *c, size_t *ret_len) {
        const unsigned char *p = NULL;
        unsigned n = 0;
        if (c->ssl)
                SSL_get0_alpn_selected(c->ssl, &p, &n);
        *ret_len = n;
        return n > 0 ? (const char *)p : NULL;
}

bool tls_conn_sigpipe_block(sigset_t *old) {
        sigset_t pipe, pending;
        sigemptyset(&pipe);
        sigaddset(&pipe, SIGPIPE);
        sigpending(&pending);
        pthread_sigmask(SIG_BLOCK, &pipe, old);
        return sigismember(&pending, SIGPIPE) == 1;
}

void tls_conn_sigpipe_restore(const sigset_t *old, bool was_pending) {
        sigset_t pipe;
        struct timespec zero = {};
        sigemptyset(&pipe);
        sigaddset(&pipe, SIGPIPE);
        if (!was_pending)
                while (sigtimedwait(&pipe, NULL, &zero) > 0)
                        ;
        pthread_sigmask(SIG_SETMASK, old, NULL);
}
