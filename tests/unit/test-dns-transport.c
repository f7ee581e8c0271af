/* SPDX-License-Identifier: Apache-2.0 */
/* dns_exchange() against a scripted server on loopback (a thread): answers with another ID are ignored, TC
 * switches to TCP, a big query goes straight to TCP, silence ends at the deadline. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/time-util.h"
#include "dns/dns-transport.h"
#include "dns/dns-wire.h"
#include "unit-test.h"

typedef enum Script {
        SCRIPT_WRONG_ID_THEN_ANSWER,
        SCRIPT_TRUNCATED_THEN_TCP,
        SCRIPT_TCP_ONLY,
        SCRIPT_SILENT,
} Script;

typedef struct Fake {
        int udp, tcp;
        uint16_t port;
        Script script;
        bool saw_tcp;
        pthread_t thread;
} Fake;

static void answer_to(uint8_t *msg, size_t len, uint16_t flags_or) {
        assert_true(len >= DNS_HEADER_SIZE);
        msg[2] |= (uint8_t)((DNS_FLAG_QR | flags_or) >> 8);
}

static void *fake_run(void *userdata) {
        Fake *f = userdata;
        uint8_t buf[4096];
        struct sockaddr_storage peer;
        socklen_t plen = sizeof(peer);

        if (f->script != SCRIPT_TCP_ONLY) {
                struct pollfd p = { .fd = f->udp, .events = POLLIN };
                if (poll(&p, 1, 5000) != 1)
                        return NULL;
                ssize_t n = recvfrom(f->udp, buf, sizeof(buf), 0, (struct sockaddr *)&peer, &plen);
                if (n < DNS_HEADER_SIZE || f->script == SCRIPT_SILENT)
                        return NULL;
                if (f->script == SCRIPT_WRONG_ID_THEN_ANSWER) {
                        uint8_t other[DNS_HEADER_SIZE];
                        memcpy(other, buf, sizeof(other));
                        other[0] ^= 0xff;
                        answer_to(other, sizeof(other), 0);
                        sendto(f->udp, other, sizeof(other), 0, (struct sockaddr *)&peer, plen);
                        answer_to(buf, (size_t)n, 0);
                        sendto(f->udp, buf, (size_t)n, 0, (struct sockaddr *)&peer, plen);
                        return NULL;
                }
                answer_to(buf, (size_t)n, DNS_FLAG_TC);
                sendto(f->udp, buf, DNS_HEADER_SIZE, 0, (struct sockaddr *)&peer, plen);
        }
        struct pollfd p = { .fd = f->tcp, .events = POLLIN };
        if (poll(&p, 1, 5000) != 1)
                return NULL;
        int c = accept4(f->tcp, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
                return NULL;
        uint8_t prefix[2];
        if (recv(c, prefix, 2, MSG_WAITALL) == 2) {
                size_t len = (size_t)prefix[0] << 8 | prefix[1];
                uint8_t *q = malloc(len);
                if (q && recv(c, q, len, MSG_WAITALL) == (ssize_t)len) {
                        f->saw_tcp = true;
                        answer_to(q, len, 0);
                        send(c, prefix, 2, 0);
                        send(c, q, len, 0);
                }
                free(q);
        }
        close(c);
        return NULL;
}

static void fake_start(Fake *f, Script script) {
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t alen = sizeof(a);
        *f = (Fake){ .script = script };
        /* Bounded: find a port free for both UDP and TCP. */
        for (int i = 0; i < 50; i++) {
                f->udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
                a.sin_port = 0;
                assert_int_equal(bind(f->udp, (struct sockaddr *)&a, sizeof(a)), 0);
                assert_int_equal(getsockname(f->udp, (struct sockaddr *)&a, &alen), 0);
                f->tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (bind(f->tcp, (struct sockaddr *)&a, sizeof(a)) == 0)
                        break;
                close(f->udp);
                close(f->tcp);
                f->udp = f->tcp = -1;
        }
        assert_true(f->tcp >= 0);
        assert_int_equal(listen(f->tcp, 4), 0);
        f->port = ntohs(a.sin_port);
        assert_int_equal(pthread_create(&f->thread, NULL, fake_run, f), 0);
}

static void fake_stop(Fake *f) {
        pthread_join(f->thread, NULL);
        close(f->udp);
        close(f->tcp);
}

static void exchange(Fake *f, size_t query_len, usec_t timeout, int want, bool want_tcp) {
        DnsServer s;
        char addr[32];
        uint8_t q[1024] = { 0x12, 0x34 };
        uint8_t *answer = NULL;
        size_t len = 0;
        bool tcp = false;

        snprintf(addr, sizeof(addr), "127.0.0.1:%u", f->port);
        assert_int_equal(dns_server_parse(addr, &s), 0);
        assert_true(query_len <= sizeof(q));
        int r = dns_exchange(&s, q, query_len, timeout, &answer, &len, &tcp);
        assert_int_equal(r, want);
        if (r == 0) {
                assert_int_equal(len, query_len); /* the fake echoes the query as its answer */
                assert_int_equal(answer[0], 0x12);
                assert_int_equal(answer[1], 0x34);
                assert_true(answer[2] & 0x80);
                assert_int_equal(tcp, want_tcp);
        }
        free(answer);
}

static void test_wrong_id_ignored(void **state) {
        Fake f;
        fake_start(&f, SCRIPT_WRONG_ID_THEN_ANSWER);
        exchange(&f, 40, 2 * USEC_PER_SEC, 0, false);
        fake_stop(&f);
}

static void test_truncated_goes_tcp(void **state) {
        Fake f;
        fake_start(&f, SCRIPT_TRUNCATED_THEN_TCP);
        exchange(&f, 40, 2 * USEC_PER_SEC, 0, true);
        fake_stop(&f);
        assert_true(f.saw_tcp);
}

static void test_big_query_goes_tcp(void **state) {
        Fake f;
        fake_start(&f, SCRIPT_TCP_ONLY);
        exchange(&f, 600, 2 * USEC_PER_SEC, 0, true);
        fake_stop(&f);
        assert_true(f.saw_tcp);
}

static void test_silence_times_out(void **state) {
        Fake f;
        fake_start(&f, SCRIPT_SILENT);
        usec_t start = now(CLOCK_MONOTONIC);
        exchange(&f, 40, 300 * USEC_PER_MSEC, PK_ETIMEOUT, false);
        usec_t took = now(CLOCK_MONOTONIC) - start;
        assert_true(took >= 300 * USEC_PER_MSEC && took < 2 * USEC_PER_SEC);
        fake_stop(&f);
}

static void test_refused_waits_for_deadline(void **state) {
        /* Nothing listens: the ICMP "port unreachable" does not end the wait early. */
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t alen = sizeof(a);
        Fake f = { .script = SCRIPT_SILENT };
        int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
        assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
        close(fd);
        f.port = ntohs(a.sin_port);
        usec_t start = now(CLOCK_MONOTONIC);
        exchange(&f, 40, 300 * USEC_PER_MSEC, PK_ETIMEOUT, false);
        assert_true(now(CLOCK_MONOTONIC) - start >= 300 * USEC_PER_MSEC);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_wrong_id_ignored),           cmocka_unit_test(test_truncated_goes_tcp),
                cmocka_unit_test(test_big_query_goes_tcp),         cmocka_unit_test(test_silence_times_out),
                cmocka_unit_test(test_refused_waits_for_deadline),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
