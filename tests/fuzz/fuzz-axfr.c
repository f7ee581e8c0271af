/* SPDX-License-Identifier: Apache-2.0 */
/* The zone transfer parser on arbitrary TCP streams (length-prefixed messages, as a server sends them): fed
 * unsigned, and signed with the test key (the time check skipped so that captured streams verify), with and
 * without an owned set; whatever it accepted is then queried. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "dns/dns-axfr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void feed_all(DnsAxfr *x, const uint8_t *data, size_t size) {
        for (size_t off = 0; off + 2 <= size;) {
                size_t n = (size_t)data[off] << 8 | data[off + 1];
                if (n > size - off - 2)
                        return;
                if (dns_axfr_feed(x, data + off + 2, n) != 0)
                        return;
                off += 2 + n;
        }
}

static void run(const uint8_t *data, size_t size, const TsigKey *key, const uint8_t *mac, size_t mac_len,
                const DnsRRsetList *owned) {
        DnsAxfr x;
        uint16_t id = size >= 4 ? (uint16_t)(data[2] << 8 | data[3]) : 0;
        if (dns_axfr_init(&x, "k8s.test.", id, key, mac, mac_len, owned) < 0)
                return;
        x.tsig_flags = TSIG_VERIFY_SKIP_TIME;
        feed_all(&x, data, size);
        (void)dns_axfr_answers_for(&x, "api.internal.demo.k8s.test.");
        (void)dns_axfr_answers_for(&x, "a.b.c.k8s.test.");
        (void)dns_rrset_list_find(&x.records, "api.internal.demo.k8s.test.", DNS_TYPE_A);
        dns_axfr_done(&x);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        /* The key of tests/vectors/tsig, which the seed streams are signed with. */
        static const char secret[] = "secret-key-for-testing-32bytes!!";
        _cleanup_(tsig_key_freep) TsigKey *k = NULL;
        _cleanup_rrset_list_ DnsRRsetList owned = {};
        DnsRRset *s;
        uint8_t mac[CRYPTO_HMAC_MAX] = {};
        size_t mac_len = 32;

        if (tsig_key_new("protokube-key.", "hmac-sha256", (const uint8_t *)secret, strlen(secret), &k) < 0)
                return 0;
        if (dns_rrset_list_get(&owned, "api.internal.demo.k8s.test.", DNS_TYPE_A, 0, &s) < 0 ||
            dns_rrset_list_get(&owned, "api.internal.demo.k8s.test.", DNS_TYPE_AAAA, 0, &s) < 0)
                return 0;
        /* Seeds carry the request MAC they answer in a file of their own, not here: a stream signed
         * against another MAC stops at its first message, which still exercises the parser before it. */
        run(data, size, NULL, NULL, 0, NULL);
        run(data, size, NULL, NULL, 0, &owned);
        run(data, size, k, mac, mac_len, NULL);
        return 0;
}
