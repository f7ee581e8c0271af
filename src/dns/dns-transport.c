/* SPDX-License-Identifier: Apache-2.0 */
#include "dns/dns-transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "basic/buf.h"
#include "basic/errors.h"
#include "basic/macro.h"
#include "basic/parse-util.h"
#include "basic/stop.h"
#include "dns/dns-wire.h"

int dns_server_parse(const char *s, DnsServer *ret) {
        char host[INET6_ADDRSTRLEN + 1];
        const char *port_text = NULL;
        uint16_t port = 53;
        DnsServer d = {};

        if (!s || strlen(s) > 64)
                return -EINVAL;
        if (s[0] == '[') {
                const char *close = strchr(s, ']');
                if (!close || (size_t)(close - s - 1) >= sizeof(host))
                        return -EINVAL;
                memcpy(host, s + 1, (size_t)(close - s - 1));
                host[close - s - 1] = 0;
                if (close[1] == ':')
                        port_text = close + 2;
                else if (close[1] != 0)
                        return -EINVAL;
        } else {
                const char *colon = strchr(s, ':');
                /* More than one colon: a bare IPv6 address. */
                if (colon && !strchr(colon + 1, ':')) {
                        if ((size_t)(colon - s) >= sizeof(host))
                                return -EINVAL;
                        memcpy(host, s, (size_t)(colon - s));
                        host[colon - s] = 0;
                        port_text = colon + 1;
                } else {
                        if (strlen(s) >= sizeof(host))
                                return -EINVAL;
                        memcpy(host, s, strlen(s) + 1);
                }
        }
        if (port_text && (safe_atou16(port_text, &port) < 0 || port == 0))
                return -EINVAL;

        struct sockaddr_in *in = (struct sockaddr_in *)&d.addr;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&d.addr;
        if (inet_pton(AF_INET, host, &in->sin_addr) == 1) {
                in->sin_family = AF_INET;
                in->sin_port = htons(port);
                d.addr_len = sizeof(*in);
                snprintf(d.text, sizeof(d.text), "%s:%u", host, port);
        } else if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
                in6->sin6_family = AF_INET6;
                in6->sin6_port = htons(port);
                d.addr_len = sizeof(*in6);
                snprintf(d.text, sizeof(d.text), "[%s]:%u", host, port);
        } else
                return -EINVAL;
        *ret = d;
        return 0;
}

uint16_t dns_random_id(void) {
        uint16_t id = 0;
        if (getrandom(&id, sizeof(id), GRND_NONBLOCK) != (ssize_t)sizeof(id)) {
                /* Only before the kernel's pool is ready, early at boot: fall back to the clock. */
                id = (uint16_t)(now(CLOCK_MONOTONIC) ^ (uint64_t)getpid());
        }
        return id;
}

/* Waits for events on fd until deadline (CLOCK_MONOTONIC). */
static int wait_fd(int fd, short events, usec_t deadline) {
        for (;;) {
                usec_t n = now(CLOCK_MONOTONIC);
                if (n >= deadline)
                        return PK_ETIMEOUT;
                usec_t left = deadline - n;
                struct pollfd p = { .fd = fd, .events = events };
                int k = poll(&p, 1, (int)MIN(left / USEC_PER_MSEC + 1, (usec_t)INT32_MAX));
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k > 0)
                        return 0;
        }
}

static bool is_response_to(const uint8_t *p, size_t n, const uint8_t *query) {
        /* Same ID and QR set; the caller checks the rest (TSIG, question) on the parsed message. */
        return n >= DNS_HEADER_SIZE && p[0] == query[0] && p[1] == query[1] && (p[2] & 0x80);
}

static int exchange_udp(const DnsServer *server, const uint8_t *query, size_t len, usec_t deadline,
                        uint8_t **ret, size_t *ret_len) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ uint8_t *buf = NULL;

        fd = socket(server->addr.ss_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        /* connect() makes the kernel drop datagrams from any other address. */
        if (connect(fd, (const struct sockaddr *)&server->addr, server->addr_len) < 0)
                return -errno;
        if (send(fd, query, len, 0) != (ssize_t)len)
                return errno > 0 ? -errno : -EIO;
        buf = malloc(DNS_MESSAGE_MAX);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                int r = wait_fd(fd, POLLIN, deadline);
                if (r < 0)
                        return r;
                ssize_t k = recv(fd, buf, DNS_MESSAGE_MAX, 0);
                if (k < 0) {
                        /* ECONNREFUSED is an ICMP port unreachable: treat it as no answer (it may be
                         * forged, or the server restarting) and keep waiting until the deadline. */
                        if (errno == EINTR || errno == EAGAIN || errno == ECONNREFUSED) {
                                if (errno == ECONNREFUSED && sleep_usec(10 * USEC_PER_MSEC) < 0)
                                        return -ECANCELED;
                                continue;
                        }
                        return -errno;
                }
                if (!is_response_to(buf, (size_t)k, query))
                        continue;
                *ret_len = (size_t)k;
                *ret = TAKE_PTR(buf);
                return 0;
        }
}

static int io_all(int fd, void *p, size_t n, bool writing, usec_t deadline) {
        uint8_t *b = p;
        while (n > 0) {
                int r = wait_fd(fd, writing ? POLLOUT : POLLIN, deadline);
                if (r < 0)
                        return r;
                ssize_t k = writing ? send(fd, b, n, MSG_NOSIGNAL) : recv(fd, b, n, 0);
                if (k < 0) {
                        if (errno == EINTR || errno == EAGAIN)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        return -ECONNRESET;
                b += k;
                n -= (size_t)k;
        }
        return 0;
}

/* A TCP connection to server, non-blocking, connected by deadline. */
static int tcp_connect(const DnsServer *server, usec_t deadline) {
        _cleanup_close_ int fd =
            socket(server->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (const struct sockaddr *)&server->addr, server->addr_len) < 0 &&
            errno != EINPROGRESS)
                return -errno;
        int r = wait_fd(fd, POLLOUT, deadline);
        if (r < 0)
                return r;
        int error = 0;
        socklen_t elen = sizeof(error);
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &elen) < 0)
                return -errno;
        if (error != 0)
                return -error;
        /* Every message is written whole, in one send: Nagle would only hold the last segment of a large
         * one back until the server acknowledged the rest. */
        int one = 1;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        return TAKE_FD(fd);
}

/* RFC 1035 §4.2.2: a two-octet length before each message. Prefix and message go out in one send. */
static int tcp_send_message(int fd, const uint8_t *msg, size_t len, usec_t deadline) {
        _cleanup_free_ uint8_t *framed = NULL;
        if (len > DNS_MESSAGE_MAX)
                return PK_ETOOBIG;
        framed = malloc(len + 2);
        if (!framed)
                return -ENOMEM;
        framed[0] = (uint8_t)(len >> 8);
        framed[1] = (uint8_t)len;
        memcpy(framed + 2, msg, len);
        return io_all(fd, framed, len + 2, true, deadline);
}

/* The next length-prefixed message; caller frees. */
static int tcp_read_message(int fd, usec_t deadline, uint8_t **ret, size_t *ret_len) {
        uint8_t prefix[2];
        int r = io_all(fd, prefix, 2, false, deadline);
        if (r < 0)
                return r;
        size_t n = (size_t)prefix[0] << 8 | prefix[1];
        _cleanup_free_ uint8_t *buf = malloc(n ?: 1);
        if (!buf)
                return -ENOMEM;
        r = io_all(fd, buf, n, false, deadline);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(buf);
        *ret_len = n;
        return 0;
}

static int exchange_tcp(const DnsServer *server, const uint8_t *query, size_t len, usec_t deadline,
                        uint8_t **ret, size_t *ret_len) {
        if (len > DNS_MESSAGE_MAX)
                return PK_ETOOBIG;
        _cleanup_close_ int fd = tcp_connect(server, deadline);
        if (fd < 0)
                return fd;
        int r = tcp_send_message(fd, query, len, deadline);
        if (r < 0)
                return r;
        for (;;) {
                _cleanup_free_ uint8_t *buf = NULL;
                size_t n;
                r = tcp_read_message(fd, deadline, &buf, &n);
                if (r < 0)
                        return r;
                if (is_response_to(buf, n, query)) {
                        *ret_len = n;
                        *ret = TAKE_PTR(buf);
                        return 0;
                }
        }
}

int dns_exchange_stream(const DnsServer *server, const uint8_t *query, size_t len, usec_t idle_timeout,
                        usec_t total_timeout, DnsStreamFunc on_message, void *userdata) {
        usec_t start = now(CLOCK_MONOTONIC), end = start + total_timeout;
        if (len < DNS_HEADER_SIZE || len > DNS_MESSAGE_MAX)
                return -EINVAL;
        _cleanup_close_ int fd = tcp_connect(server, MIN(start + idle_timeout, end));
        if (fd < 0)
                return fd;
        int r = tcp_send_message(fd, query, len, MIN(now(CLOCK_MONOTONIC) + idle_timeout, end));
        if (r < 0)
                return r;
        for (;;) {
                _cleanup_free_ uint8_t *buf = NULL;
                size_t n;
                r = tcp_read_message(fd, MIN(now(CLOCK_MONOTONIC) + idle_timeout, end), &buf, &n);
                if (r < 0)
                        return r;
                if (!is_response_to(buf, n, query))
                        continue;
                r = on_message(buf, n, userdata);
                if (r != 0)
                        return r;
        }
}

int dns_exchange(const DnsServer *server, const uint8_t *query, size_t len, usec_t timeout, uint8_t **ret,
                 size_t *ret_len, bool *ret_tcp) {
        usec_t deadline = now(CLOCK_MONOTONIC) + timeout;
        _cleanup_free_ uint8_t *answer = NULL;
        size_t n = 0;
        int r;

        if (len < DNS_HEADER_SIZE)
                return -EINVAL;
        if (len <= DNS_UDP_PAYLOAD_MAX) {
                r = exchange_udp(server, query, len, deadline, &answer, &n);
                if (r < 0)
                        return r;
                if (!(answer[2] & (DNS_FLAG_TC >> 8))) {
                        *ret = TAKE_PTR(answer);
                        *ret_len = n;
                        if (ret_tcp)
                                *ret_tcp = false;
                        return 0;
                }
                free(answer);
                answer = NULL;
        }
        r = exchange_tcp(server, query, len, deadline, &answer, &n);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(answer);
        *ret_len = n;
        if (ret_tcp)
                *ret_tcp = true;
        return 0;
}

typedef struct IdSlot {
        uint16_t id;
        uint32_t slot;
} IdSlot;

static int id_slot_compare(const void *a, const void *b) {
        const IdSlot *x = a, *y = b;
        return (int)x->id - (int)y->id;
}

/* Takes every complete length-prefixed message off the front of in, filing it under the query with its ID.
 */
static void pipeline_take_answers(Buf *in, const IdSlot *map, size_t n, uint8_t **answers, size_t *lens,
                                  size_t *n_answered) {
        size_t off = 0;
        while (in->len - off >= 2) {
                size_t m = (size_t)in->data[off] << 8 | in->data[off + 1];
                if (in->len - off - 2 < m)
                        break;
                const uint8_t *msg = in->data + off + 2;
                if (m >= DNS_HEADER_SIZE && (msg[2] & 0x80)) { /* QR: a response */
                        IdSlot key = { .id = (uint16_t)(msg[0] << 8 | msg[1]) };
                        const IdSlot *hit = bsearch(&key, map, n, sizeof(IdSlot), id_slot_compare);
                        if (hit && !answers[hit->slot]) {
                                answers[hit->slot] = malloc(m);
                                if (answers[hit->slot]) {
                                        memcpy(answers[hit->slot], msg, m);
                                        lens[hit->slot] = m;
                                        (*n_answered)++;
                                }
                        }
                }
                off += 2 + m;
        }
        memmove(in->data, in->data + off, in->len - off);
        in->len -= off;
}

int dns_exchange_pipelined(const DnsServer *server, uint8_t *const *queries, const size_t *lens, size_t n,
                           usec_t timeout, uint8_t ***ret_answers, size_t **ret_lens) {
        usec_t deadline = now(CLOCK_MONOTONIC) + timeout;
        _cleanup_free_ IdSlot *map = new0(IdSlot, n);
        _cleanup_buf_ Buf out, in;
        uint8_t **answers = calloc(n ?: 1, sizeof(uint8_t *));
        size_t *alens = calloc(n ?: 1, sizeof(size_t)), written = 0, answered = 0;
        int r = 0;

        buf_init(&out, (size_t)n * (DNS_MESSAGE_MAX + 2));
        buf_init(&in, 2 * (DNS_MESSAGE_MAX + 2)); /* at most one partial message waits here */
        if (!map || !answers || !alens)
                r = -ENOMEM;
        for (size_t i = 0; r >= 0 && i < n; i++) {
                uint8_t prefix[2] = { (uint8_t)(lens[i] >> 8), (uint8_t)lens[i] };
                if (lens[i] < DNS_HEADER_SIZE || lens[i] > DNS_MESSAGE_MAX)
                        r = -EINVAL;
                else if ((r = buf_add(&out, prefix, 2)) >= 0)
                        r = buf_add(&out, queries[i], lens[i]);
                if (r >= 0)
                        map[i] = (IdSlot){ .id = (uint16_t)(queries[i][0] << 8 | queries[i][1]),
                                           .slot = (uint32_t)i };
        }
        if (r >= 0)
                qsort_safe(map, n, sizeof(IdSlot), id_slot_compare);
        _cleanup_close_ int fd = r >= 0 ? tcp_connect(server, deadline) : -1;
        if (r >= 0 && fd < 0)
                r = fd;
        while (r >= 0 && answered < n) {
                usec_t t = now(CLOCK_MONOTONIC);
                if (t >= deadline)
                        break;
                struct pollfd p = { .fd = fd, .events = POLLIN | (written < out.len ? POLLOUT : 0) };
                int k = poll(&p, 1, (int)((deadline - t + 999) / 1000));
                if (k < 0 && errno != EINTR)
                        r = -errno;
                if (k <= 0)
                        continue;
                if ((p.revents & POLLOUT) && written < out.len) {
                        ssize_t w = send(fd, out.data + written, out.len - written, MSG_NOSIGNAL);
                        if (w < 0 && errno != EAGAIN && errno != EINTR)
                                break; /* the server hung up: keep what was answered */
                        written += w > 0 ? (size_t)w : 0;
                }
                if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
                        uint8_t chunk[16384];
                        ssize_t got = recv(fd, chunk, sizeof(chunk), 0);
                        if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR))
                                break;
                        if (got > 0 && buf_add(&in, chunk, (size_t)got) < 0)
                                break; /* a message larger than any answer: stop, fall back */
                        pipeline_take_answers(&in, map, n, answers, alens, &answered);
                }
        }
        if (r < 0) {
                for (size_t i = 0; answers && i < n; i++)
                        free(answers[i]);
                free(answers);
                free(alens);
                return r;
        }
        *ret_answers = answers;
        *ret_lens = alens;
        return (int)answered;
}
