/* SPDX-License-Identifier: Apache-2.0 */
#include "dns/dns-transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "basic/errors.h"
#include "basic/macro.h"
#include "basic/parse-util.h"
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
                                if (errno == ECONNREFUSED)
                                        nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
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

static int exchange_tcp(const DnsServer *server, const uint8_t *query, size_t len, usec_t deadline,
                        uint8_t **ret, size_t *ret_len) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ uint8_t *buf = NULL;
        uint8_t prefix[2];
        int r;

        if (len > DNS_MESSAGE_MAX)
                return PK_ETOOBIG;
        fd = socket(server->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (const struct sockaddr *)&server->addr, server->addr_len) < 0 &&
            errno != EINPROGRESS)
                return -errno;
        r = wait_fd(fd, POLLOUT, deadline);
        if (r < 0)
                return r;
        int error = 0;
        socklen_t elen = sizeof(error);
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &elen) < 0)
                return -errno;
        if (error != 0)
                return -error;
        /* RFC 1035 §4.2.2: a two-octet length before each message. */
        prefix[0] = (uint8_t)(len >> 8);
        prefix[1] = (uint8_t)len;
        r = io_all(fd, prefix, 2, true, deadline);
        if (r >= 0)
                r = io_all(fd, (void *)query, len, true, deadline);
        if (r < 0)
                return r;
        for (;;) {
                r = io_all(fd, prefix, 2, false, deadline);
                if (r < 0)
                        return r;
                size_t n = (size_t)prefix[0] << 8 | prefix[1];
                free(buf);
                buf = malloc(n ?: 1);
                if (!buf)
                        return -ENOMEM;
                r = io_all(fd, buf, n, false, deadline);
                if (r < 0)
                        return r;
                if (is_response_to(buf, n, query)) {
                        *ret_len = n;
                        *ret = TAKE_PTR(buf);
                        return 0;
                }
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
