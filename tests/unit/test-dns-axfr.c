/* SPDX-License-Identifier: Apache-2.0 */
/* The zone transfer reader: a three-message stream signed by dnspython (tests/vectors/axfr/gen.py, the
 * middle message unsigned, RFC 8945 §5.3.1) verifies and yields the owned RRsets; any changed byte, a wrong
 * request MAC, an unsigned last message or 100 unsigned in a row are refused; RFC 5936's framing (SOA first
 * and last, same serial, nothing after) is enforced; a refusal is told apart. And the owned RRsets read from
 * the transfer equal those that per-name queries of the same zone content read. A real BIND transfer parses.
 */
#include <arpa/inet.h>
#include <string.h>

#include "basic/errors.h"
#include "dns/dns-axfr.h"
#include "unit-test.h"
#include "vectors.h"

#define SECRET "secret-key-for-testing-32bytes!!"
#define ID     0x1234

typedef struct Stream {
        uint8_t *msg[3];
        size_t len[3];
        char *raw;
} Stream;

static void stream_load(Stream *s) {
        const char *names[] = { "axfr/stream.bin" };
        size_t n;
        vectors_read(names, 1, &s->raw, &n);
        size_t off = 0;
        for (size_t i = 0; i < 3; i++) {
                assert_true(off + 2 <= n);
                s->len[i] = (size_t)(uint8_t)s->raw[off] << 8 | (uint8_t)s->raw[off + 1];
                s->msg[i] = (uint8_t *)s->raw + off + 2;
                off += 2 + s->len[i];
        }
        assert_int_equal(off, n);
}

static const char *const OWNED[] = {
        "api.internal.demo.k8s.test.",
        "etcd-a.internal.demo.k8s.test.",
        "etcd-b.internal.demo.k8s.test.",
        "etcd-c.internal.demo.k8s.test.",
        "etcd-z.internal.demo.k8s.test.",
        "etcd-d.child.k8s.test.",
        "x.wild.k8s.test.",
};

static void owned_build(DnsRRsetList *l) {
        DnsRRset *s;
        for (size_t i = 0; i < ELEMENTSOF(OWNED); i++) {
                assert_int_equal(dns_rrset_list_get(l, OWNED[i], DNS_TYPE_A, 0, &s), 0);
                assert_int_equal(dns_rrset_list_get(l, OWNED[i], DNS_TYPE_AAAA, 0, &s), 0);
        }
}

static TsigKey *key_new(void) {
        TsigKey *k = NULL;
        assert_int_equal(
            tsig_key_new("protokube-key.", "hmac-sha256", (const uint8_t *)SECRET, strlen(SECRET), &k), 0);
        return k;
}

static const uint8_t ZERO_MAC[32] = {};

static void axfr_new(DnsAxfr *x, const TsigKey *k, const DnsRRsetList *owned) {
        assert_int_equal(dns_axfr_init(x, "k8s.test.", ID, k, ZERO_MAC, sizeof(ZERO_MAC), owned), 0);
        x->tsig_flags = TSIG_VERIFY_SKIP_TIME;
}

static void check_rrset(const DnsAxfr *x, const char *name, uint16_t type, const char *const *want,
                        uint32_t ttl) {
        const DnsRRset *s = dns_rrset_list_find(&x->records, name, type);
        size_t n = 0;
        while (want[n])
                n++;
        if (n == 0) {
                assert_true(!s || dns_rrset_size(s) == 0);
                return;
        }
        assert_non_null(s);
        assert_int_equal(dns_rrset_size(s), n);
        for (size_t i = 0; i < n; i++)
                assert_string_equal(s->addresses[i], want[i]);
        assert_int_equal(s->ttl, ttl);
}

static void test_signed_stream(void **state) {
        Stream s;
        stream_load(&s);
        _cleanup_(tsig_key_freep) TsigKey *k = key_new();
        _cleanup_rrset_list_ DnsRRsetList owned = {};
        DnsAxfr x;
        owned_build(&owned);
        axfr_new(&x, k, &owned);
        assert_int_equal(dns_axfr_feed(&x, s.msg[0], s.len[0]), 0);
        assert_int_equal(dns_axfr_feed(&x, s.msg[1], s.len[1]), 0);
        assert_int_equal(dns_axfr_feed(&x, s.msg[2], s.len[2]), 1);
        assert_int_equal(x.serial, 7);
        assert_int_equal(x.n_messages, 3);
        /* The owner "API.internal..." differs in case only: the same RRset. */
        check_rrset(&x, "api.internal.demo.k8s.test.", DNS_TYPE_A,
                    (const char *[]){ "10.0.0.1", "10.0.0.2", NULL }, 45);
        check_rrset(&x, "api.internal.demo.k8s.test.", DNS_TYPE_AAAA, (const char *[]){ "fd00::2", NULL },
                    45);
        check_rrset(&x, "etcd-b.internal.demo.k8s.test.", DNS_TYPE_A,
                    (const char *[]){ "10.0.0.2", "10.0.0.9", NULL }, 20);
        check_rrset(&x, "etcd-c.internal.demo.k8s.test.", DNS_TYPE_A, (const char *[]){ NULL }, 0);
        /* Not owned: not kept. */
        assert_null(dns_rrset_list_find(&x.records, "foreign.k8s.test.", DNS_TYPE_A));
        assert_null(dns_rrset_list_find(&x.records, "ns.k8s.test.", DNS_TYPE_A));
        /* Below the cut at child. (a referral) and below the wildcard's parent, queries may be answered
         * otherwise than the zone's own records say. */
        assert_true(dns_axfr_answers_for(&x, "etcd-a.internal.demo.k8s.test."));
        assert_true(dns_axfr_answers_for(&x, "wild.k8s.test."));
        assert_false(dns_axfr_answers_for(&x, "child.k8s.test."));
        assert_false(dns_axfr_answers_for(&x, "etcd-d.child.k8s.test."));
        assert_false(dns_axfr_answers_for(&x, "x.wild.k8s.test."));
        assert_false(dns_axfr_answers_for(&x, "api.other.test."));
        /* Nothing after the end. */
        assert_int_equal(dns_axfr_feed(&x, s.msg[2], s.len[2]), PK_EMALFORMED);
        dns_axfr_done(&x);

        /* With the time checked, the 2023 signature is too old. */
        assert_int_equal(dns_axfr_init(&x, "k8s.test.", ID, k, ZERO_MAC, sizeof(ZERO_MAC), &owned), 0);
        assert_int_equal(dns_axfr_feed(&x, s.msg[0], s.len[0]), PK_ETSIG);
        assert_int_equal(x.verdict.error, DNS_RCODE_BADTIME);
        dns_axfr_done(&x);
        free(s.raw);
}

/* Every byte of every message changed in turn: the stream never completes. A change in the unsigned middle
 * message is caught by the last message's MAC. */
static void test_any_change_refused(void **state) {
        Stream s;
        stream_load(&s);
        _cleanup_(tsig_key_freep) TsigKey *k = key_new();
        for (size_t m = 0; m < 3; m++)
                for (size_t i = 0; i < s.len[m]; i++) {
                        DnsAxfr x;
                        int r = 0;
                        axfr_new(&x, k, NULL);
                        s.msg[m][i] ^= 0x01;
                        for (size_t j = 0; j < 3 && r == 0; j++)
                                r = dns_axfr_feed(&x, s.msg[j], s.len[j]);
                        s.msg[m][i] ^= 0x01;
                        /* Case changes in the TSIG RR's own names are canonicalized away (§4.3.3): only
                         * those may still verify. */
                        if (r == 1) {
                                uint8_t c = s.msg[m][i];
                                assert_true((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'));
                        } else
                                assert_true(r < 0);
                        dns_axfr_done(&x);
                }
        /* Another request's MAC. */
        DnsAxfr x;
        uint8_t other[32] = { 1 };
        assert_int_equal(dns_axfr_init(&x, "k8s.test.", ID, k, other, sizeof(other), NULL), 0);
        x.tsig_flags = TSIG_VERIFY_SKIP_TIME;
        assert_int_equal(dns_axfr_feed(&x, s.msg[0], s.len[0]), PK_ETSIG);
        dns_axfr_done(&x);
        free(s.raw);
}

/* The last message without its TSIG: complete as far as RFC 5936 goes, refused by RFC 8945 §5.3.1. And 100
 * unsigned messages in a row are one too many. */
static void test_unsigned_last_and_too_many(void **state) {
        Stream s;
        stream_load(&s);
        _cleanup_(tsig_key_freep) TsigKey *k = key_new();
        _cleanup_(dns_message_freep) DnsMessage *m = NULL;
        assert_int_equal(dns_message_parse(s.msg[2], s.len[2], &m), 0);
        size_t stripped = m->rrs[m->n_rrs - 1].offset;
        uint8_t copy[512];
        assert_true(stripped <= sizeof(copy));
        memcpy(copy, s.msg[2], stripped);
        copy[11]--; /* ARCOUNT */
        DnsAxfr x;
        axfr_new(&x, k, NULL);
        assert_int_equal(dns_axfr_feed(&x, s.msg[0], s.len[0]), 0);
        assert_int_equal(dns_axfr_feed(&x, s.msg[1], s.len[1]), 0);
        assert_int_equal(dns_axfr_feed(&x, copy, stripped), PK_ETSIG);
        assert_false(dns_axfr_answers_for(&x, "etcd-a.internal.demo.k8s.test."));
        dns_axfr_done(&x);

        axfr_new(&x, k, NULL);
        assert_int_equal(dns_axfr_feed(&x, s.msg[0], s.len[0]), 0);
        for (size_t i = 0; i < TSIG_STREAM_UNSIGNED_MAX - 1; i++)
                assert_int_equal(dns_axfr_feed(&x, s.msg[1], s.len[1]), 0);
        assert_int_equal(dns_axfr_feed(&x, s.msg[1], s.len[1]), PK_ETSIG);
        dns_axfr_done(&x);
        free(s.raw);
}

/* Unsigned messages written here: a header, an optional question, answer RRs. */
typedef struct Rec {
        const char *name;
        uint16_t type;
        uint32_t ttl;
        const char *data; /* address, SOA serial as text, or CNAME target */
} Rec;

static size_t build(uint8_t *out, size_t max, uint16_t id, unsigned rcode, bool question, const Rec *recs,
                    size_t n, const char *qname, uint16_t qtype) {
        _cleanup_(dns_writer_freep) DnsWriter w;
        dns_writer_init(&w);
        dns_write_u16(&w, id);
        dns_write_u16(&w, (uint16_t)(DNS_FLAG_QR | DNS_FLAG_AA | rcode));
        dns_write_u16(&w, question ? 1 : 0);
        dns_write_u16(&w, (uint16_t)n);
        dns_write_u16(&w, 0);
        dns_write_u16(&w, 0);
        if (question) {
                dns_write_name(&w, qname, true);
                dns_write_u16(&w, qtype);
                dns_write_u16(&w, DNS_CLASS_IN);
        }
        for (size_t i = 0; i < n; i++) {
                uint8_t a[16];
                size_t alen;
                dns_write_name(&w, recs[i].name, true);
                dns_write_u16(&w, recs[i].type);
                dns_write_u16(&w, DNS_CLASS_IN);
                dns_write_u32(&w, recs[i].ttl);
                size_t at = dns_writer_len(&w);
                dns_write_u16(&w, 0);
                if (recs[i].type == DNS_TYPE_SOA) {
                        dns_write_name(&w, "ns.k8s.test.", true);
                        dns_write_name(&w, "admin.k8s.test.", true);
                        dns_write_u32(&w, (uint32_t)strtoul(recs[i].data, NULL, 10));
                        for (int j = 0; j < 4; j++)
                                dns_write_u32(&w, 60);
                } else if (recs[i].type == DNS_TYPE_CNAME)
                        dns_write_name(&w, recs[i].data, true);
                else {
                        assert_true(dns_address_parse(recs[i].data, a, &alen) >= 0);
                        dns_write_bytes(&w, a, alen);
                }
                dns_writer_patch_u16(&w, at, (uint16_t)(dns_writer_len(&w) - at - 2));
        }
        assert_int_equal(dns_writer_error(&w), 0);
        assert_true(w.buf.len <= max);
        memcpy(out, w.buf.data, w.buf.len);
        return w.buf.len;
}

static const Rec SOA7 = { "k8s.test.", DNS_TYPE_SOA, 60, "7" },
                 SOA8 = { "k8s.test.", DNS_TYPE_SOA, 60, "8" };
static const Rec A1 = { "etcd-a.k8s.test.", DNS_TYPE_A, 60, "10.0.0.1" };

static int feed_one(const Rec *recs, size_t n, uint16_t id, unsigned rcode, unsigned *ret_rcode) {
        uint8_t b[4096];
        size_t len = build(b, sizeof(b), id, rcode, true, recs, n, "k8s.test.", DNS_TYPE_AXFR);
        DnsAxfr x;
        assert_int_equal(dns_axfr_init(&x, "k8s.test.", ID, NULL, NULL, 0, NULL), 0);
        int r = dns_axfr_feed(&x, b, len);
        if (ret_rcode)
                *ret_rcode = x.rcode;
        dns_axfr_done(&x);
        return r;
}

static void test_framing(void **state) {
        unsigned rcode = 0;
        assert_int_equal(feed_one((Rec[]){ SOA7, A1, SOA7 }, 3, ID, 0, NULL), 1);
        assert_int_equal(feed_one((Rec[]){ SOA7, A1 }, 2, ID, 0, NULL), 0);
        assert_int_equal(feed_one((Rec[]){ A1, SOA7, SOA7 }, 3, ID, 0, NULL), PK_EMALFORMED);
        assert_int_equal(feed_one((Rec[]){ SOA7, SOA7, A1 }, 3, ID, 0, NULL), PK_EMALFORMED);
        assert_int_equal(feed_one((Rec[]){ SOA7, A1, SOA8 }, 3, ID, 0, NULL), PK_EMALFORMED);
        assert_int_equal(feed_one((Rec[]){ SOA7, A1, SOA7 }, 3, ID + 1, 0, NULL), PK_EMALFORMED);
        assert_int_equal(
            feed_one((Rec[]){ SOA7, { "etcd-a.other.test.", DNS_TYPE_A, 60, "10.0.0.1" }, SOA7 }, 3, ID, 0,
                     NULL),
            PK_EMALFORMED);
        assert_int_equal(feed_one(NULL, 0, ID, DNS_RCODE_REFUSED, &rcode), PK_EDNS_RCODE);
        assert_int_equal(rcode, DNS_RCODE_REFUSED);
        assert_int_equal(feed_one(NULL, 0, ID, DNS_RCODE_NOTAUTH, &rcode), PK_EDNS_RCODE);
        assert_int_equal(rcode, DNS_RCODE_NOTAUTH);
        /* Truncated anywhere: malformed, never a crash. */
        uint8_t b[4096];
        size_t len =
            build(b, sizeof(b), ID, 0, true, (Rec[]){ SOA7, A1, SOA7 }, 3, "k8s.test.", DNS_TYPE_AXFR);
        for (size_t cut = 0; cut < len; cut++) {
                DnsAxfr x;
                assert_int_equal(dns_axfr_init(&x, "k8s.test.", ID, NULL, NULL, 0, NULL), 0);
                assert_int_equal(dns_axfr_feed(&x, b, cut), PK_EMALFORMED);
                dns_axfr_done(&x);
        }
}

/* One zone's content, served both ways: as a transfer (split over two messages) and as the authoritative
 * answers to A and AAAA queries of each owned name (a CNAME answered with its target's records, a name
 * with nothing an empty answer). The RRsets filed must be the same: same addresses, same TTLs. */
static const Rec ZONE[] = {
        { "api.internal.k8s.test.", DNS_TYPE_A, 45, "10.0.0.1" },
        { "API.internal.k8s.test.", DNS_TYPE_A, 40, "10.0.0.3" },
        { "api.internal.k8s.test.", DNS_TYPE_AAAA, 45, "fd00::1" },
        { "etcd-a.internal.k8s.test.", DNS_TYPE_A, 10, "203.0.113.123" },
        { "etcd-b.internal.k8s.test.", DNS_TYPE_CNAME, 60, "api.internal.k8s.test." },
        { "etcd-c.internal.k8s.test.", DNS_TYPE_AAAA, 30, "fd00::c" },
        { "foreign.k8s.test.", DNS_TYPE_A, 60, "192.0.2.1" },
};
static const char *const ZONE_OWNED[] = { "api.internal.k8s.test.", "etcd-a.internal.k8s.test.",
                                          "etcd-b.internal.k8s.test.", "etcd-c.internal.k8s.test.",
                                          "etcd-d.internal.k8s.test." };

static void test_same_as_per_name_reads(void **state) {
        _cleanup_rrset_list_ DnsRRsetList owned = {}, per_name = {};
        DnsRRset *s;
        uint8_t b[4096];
        for (size_t i = 0; i < ELEMENTSOF(ZONE_OWNED); i++)
                for (uint16_t t = DNS_TYPE_A; t; t = t == DNS_TYPE_A ? DNS_TYPE_AAAA : 0) {
                        Rec ans[8];
                        size_t n = 0;
                        const char *name = ZONE_OWNED[i];
                        assert_int_equal(dns_rrset_list_get(&owned, name, t, 0, &s), 0);
                        /* What an authoritative server answers, CNAME chased within the zone. */
                        for (size_t j = 0; j < ELEMENTSOF(ZONE); j++)
                                if (dns_name_equal(ZONE[j].name, name) && ZONE[j].type == DNS_TYPE_CNAME) {
                                        ans[n++] = ZONE[j];
                                        name = ZONE[j].data;
                                }
                        for (size_t j = 0; j < ELEMENTSOF(ZONE); j++)
                                if (dns_name_equal(ZONE[j].name, name) && ZONE[j].type == t)
                                        ans[n++] = ZONE[j];
                        size_t len = build(b, sizeof(b), 7, 0, true, ans, n, ZONE_OWNED[i], t);
                        _cleanup_(dns_message_freep) DnsMessage *m = NULL;
                        assert_int_equal(dns_message_parse(b, len, &m), 0);
                        assert_int_equal(dns_rrset_from_answer(m, ZONE_OWNED[i], t, &per_name), 0);
                }

        DnsAxfr x;
        assert_int_equal(dns_axfr_init(&x, "k8s.test.", ID, NULL, NULL, 0, &owned), 0);
        Rec part1[8] = { SOA7 }, part2[8];
        memcpy(part1 + 1, ZONE, 3 * sizeof(Rec));
        memcpy(part2, ZONE + 3, (ELEMENTSOF(ZONE) - 3) * sizeof(Rec));
        part2[ELEMENTSOF(ZONE) - 3] = SOA7;
        size_t len = build(b, sizeof(b), ID, 0, true, part1, 4, "k8s.test.", DNS_TYPE_AXFR);
        assert_int_equal(dns_axfr_feed(&x, b, len), 0);
        len = build(b, sizeof(b), ID, 0, false, part2, ELEMENTSOF(ZONE) - 2, NULL, 0);
        assert_int_equal(dns_axfr_feed(&x, b, len), 1);

        for (size_t i = 0; i < owned.n; i++) {
                const DnsRRset *o = &owned.items[i], *q = dns_rrset_list_find(&per_name, o->name, o->type);
                const DnsRRset *a = dns_rrset_list_find(&x.records, o->name, o->type);
                DnsRRset empty = { .name = o->name, .type = o->type };
                assert_true(dns_axfr_answers_for(&x, o->name));
                assert_non_null(q);
                assert_true(dns_rrset_equal(q, a ?: &empty, true));
        }
        const DnsRRset *api = dns_rrset_list_find(&x.records, "api.internal.k8s.test.", DNS_TYPE_A);
        assert_non_null(api);
        assert_int_equal(dns_rrset_size(api), 2);
        assert_int_equal(api->ttl, 40);
        dns_axfr_done(&x);
}

/* A real server's transfer (BIND 9.18, unsigned, ID 0x4242, captured on loopback: 900 A records, a
 * delegation with glue, a wildcard, a DNAME), parsed as it arrived, several messages. */
static void test_bind_capture(void **state) {
        const char *names[] = { "axfr/bind-9.18-unsigned.bin" };
        char *raw;
        size_t n;
        vectors_read(names, 1, &raw, &n);
        _cleanup_rrset_list_ DnsRRsetList owned = {};
        DnsRRset *o;
        assert_int_equal(dns_rrset_list_get(&owned, "etcd-x123.internal.demo.k8s.test.", DNS_TYPE_A, 0, &o),
                         0);
        assert_int_equal(
            dns_rrset_list_get(&owned, "etcd-x123.internal.demo.k8s.test.", DNS_TYPE_AAAA, 0, &o), 0);
        DnsAxfr x;
        assert_int_equal(dns_axfr_init(&x, "k8s.test.", 0x4242, NULL, NULL, 0, &owned), 0);
        int r = 0;
        size_t off = 0;
        while (r == 0 && off + 2 <= n) {
                size_t len = (size_t)(uint8_t)raw[off] << 8 | (uint8_t)raw[off + 1];
                assert_true(off + 2 + len <= n);
                r = dns_axfr_feed(&x, (const uint8_t *)raw + off + 2, len);
                off += 2 + len;
        }
        assert_int_equal(r, 1);
        assert_int_equal(off, n);
        assert_true(x.n_messages > 1);
        check_rrset(&x, "etcd-x123.internal.demo.k8s.test.", DNS_TYPE_A,
                    (const char *[]){ "10.0.0.123", NULL }, 60);
        assert_int_equal(x.records.n, 1); /* only what is owned is kept */
        assert_true(dns_axfr_answers_for(&x, "etcd-x123.internal.demo.k8s.test."));
        assert_false(dns_axfr_answers_for(&x, "ns.child.k8s.test."));
        assert_false(dns_axfr_answers_for(&x, "a.wild.k8s.test."));
        assert_false(dns_axfr_answers_for(&x, "a.dn.k8s.test."));
        assert_true(dns_axfr_answers_for(&x, "dn.k8s.test."));
        dns_axfr_done(&x);
        free(raw);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_signed_stream),
                cmocka_unit_test(test_any_change_refused),
                cmocka_unit_test(test_unsigned_last_and_too_many),
                cmocka_unit_test(test_framing),
                cmocka_unit_test(test_same_as_per_name_reads),
                cmocka_unit_test(test_bind_capture),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
