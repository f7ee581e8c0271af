/* SPDX-License-Identifier: Apache-2.0 */
/* DNS wire format: names, compression (RFC 1035 §4.1.4), bounds and loop checks, message parsing. */
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "dns/dns-transport.h"
#include "dns/dns-update.h"
#include "dns/dns-wire.h"
#include "unit-test.h"

static void test_compression_roundtrip(void **state) {
        _cleanup_(dns_writer_freep) DnsWriter w;
        char name[DNS_NAME_TEXT_MAX];
        dns_writer_init(&w);
        dns_write_u16(&w, 0);
        dns_write_name(&w, "k8s.test", true);
        dns_write_name(&w, "api.K8S.test", true); /* compresses case-insensitively */
        dns_write_name(&w, "x.api.k8s.test", true);
        dns_write_name(&w, "other.example", true);
        dns_write_name(&w, "k8s.test", false);
        assert_int_equal(dns_writer_error(&w), 0);
        /* 2 + 10 + (4 + 2) + (2 + 2) + 15 + 10 */
        assert_int_equal(dns_writer_len(&w), 47);

        DnsReader r;
        dns_reader_init(&r, w.buf.data, w.buf.len);
        assert_int_equal(dns_read_u16(&r), 0);
        const char *want[] = { "k8s.test.", "api.k8s.test.", "x.api.k8s.test.", "other.example.",
                               "k8s.test." };
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                dns_read_name(&r, name);
                assert_true(dns_name_equal(name, want[i]));
        }
        assert_int_equal(dns_reader_error(&r), 0);
        assert_int_equal(r.pos, r.len);
        /* Reading past the end sticks. */
        (void)dns_read_u32(&r);
        assert_int_equal(dns_reader_error(&r), PK_EMALFORMED);
        (void)dns_read_u8(&r);
        assert_int_equal(dns_reader_error(&r), PK_EMALFORMED);
}

static void test_name_attacks(void **state) {
        char name[DNS_NAME_TEXT_MAX];
        DnsReader r;
        /* A pointer to itself, a forward pointer, a two-pointer loop, a truncated pointer, a label past the
         * end, an extended label type. */
        static const struct {
                uint8_t data[8];
                size_t len, start;
        } bad[] = {
                { { 0xc0, 0x00 }, 2, 0 },
                { { 0xc0, 0x02, 0x00 }, 3, 0 },
                { { 0x01, 'a', 0xc0, 0x04, 0xc0, 0x00 }, 6, 4 },
                { { 0x01, 'a', 0xc0 }, 3, 0 },
                { { 0x05, 'a', 'b' }, 3, 0 },
                { { 0x41, 'a', 0x00 }, 3, 0 },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                dns_reader_init(&r, bad[i].data, bad[i].len);
                r.pos = bad[i].start;
                dns_read_name(&r, name);
                assert_int_equal(dns_reader_error(&r), PK_EMALFORMED);
        }
        /* A legal backward chain: "b" -> "a" -> root. */
        static const uint8_t ok[] = { 0x01, 'a', 0x00, 0x01, 'b', 0xc0, 0x00 };
        dns_reader_init(&r, ok, sizeof(ok));
        r.pos = 3;
        dns_read_name(&r, name);
        assert_int_equal(dns_reader_error(&r), 0);
        assert_string_equal(name, "b.a.");
        assert_int_equal(r.pos, sizeof(ok));
        /* A long chain of pointers each one back: expanded name too long, not a hang. */
        uint8_t chain[1 + 150 * 4];
        size_t o = 0;
        chain[o++] = 0;
        for (size_t i = 0; i < 150; i++) {
                size_t prev = i == 0 ? 0 : o - 4;
                chain[o++] = 1;
                chain[o++] = 'x';
                chain[o++] = (uint8_t)(0xc0 | prev >> 8);
                chain[o++] = (uint8_t)prev;
        }
        dns_reader_init(&r, chain, o);
        r.pos = o - 4;
        dns_read_name(&r, name);
        assert_int_equal(dns_reader_error(&r), PK_EMALFORMED);
}

static void test_message_parse(void **state) {
        _cleanup_(dns_writer_freep) DnsWriter w;
        _cleanup_(dns_message_freep) DnsMessage *m = NULL;
        char a[46];
        DnsUpdate u;

        dns_writer_init(&w);
        assert_int_equal(dns_query_build(0x1234, "api.k8s.test", DNS_TYPE_AAAA, &w), 0);
        assert_int_equal(dns_message_parse(w.buf.data, w.buf.len, &m), 0);
        assert_int_equal(m->id, 0x1234);
        assert_int_equal(m->flags & DNS_FLAG_RD, 0);
        assert_int_equal(m->n_rrs, 1);
        assert_string_equal(m->rrs[0].name, "api.k8s.test.");
        assert_int_equal(m->rrs[0].type, DNS_TYPE_AAAA);
        m = dns_message_free(m);
        /* Trailing garbage and short headers are errors. */
        assert_int_equal(buf_add(&w.buf, "x", 1), 0);
        assert_int_equal(dns_message_parse(w.buf.data, w.buf.len, &m), PK_EMALFORMED);
        assert_int_equal(dns_message_parse(w.buf.data, 11, &m), PK_EMALFORMED);
        /* Counts that cannot fit the message are rejected before allocating. */
        static const uint8_t huge[] = { 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0 };
        assert_int_equal(dns_message_parse(huge, sizeof(huge), &m), PK_EMALFORMED);

        dns_update_init(&u, 7, "k8s.test");
        dns_update_delete_rrset(&u, "api.k8s.test", DNS_TYPE_A);
        dns_update_add_address(&u, "api.k8s.test", 60, "10.0.0.1");
        dns_update_add_address(&u, "api.k8s.test", 60, "fd00::1");
        assert_int_equal(dns_update_finish(&u), 0);
        assert_int_equal(dns_message_parse(u.w.buf.data, u.w.buf.len, &m), 0);
        assert_int_equal(DNS_FLAGS_OPCODE(m->flags), DNS_OPCODE_UPDATE);
        assert_int_equal(m->counts[DNS_SECTION_AUTHORITY], 3);
        assert_int_equal(m->rrs[1].class, DNS_CLASS_ANY);
        assert_int_equal(m->rrs[1].rdata_len, 0);
        assert_int_equal(dns_rr_address(m, &m->rrs[2], a), 0);
        assert_string_equal(a, "10.0.0.1");
        assert_int_equal(dns_rr_address(m, &m->rrs[3], a), 0);
        assert_string_equal(a, "fd00::1");
        assert_int_equal(dns_rr_address(m, &m->rrs[1], a), PK_EMALFORMED);
        dns_update_done(&u);
        dns_update_init(&u, 7, "k8s.test");
        dns_update_add_address(&u, "api.k8s.test", 60, "10.0.0.300");
        assert_int_equal(dns_update_finish(&u), PK_EMALFORMED);
        dns_update_done(&u);
}

static void test_server_parse(void **state) {
        DnsServer s;
        assert_int_equal(dns_server_parse("127.0.0.1:15353", &s), 0);
        assert_string_equal(s.text, "127.0.0.1:15353");
        assert_int_equal(dns_server_parse("192.0.2.1", &s), 0);
        assert_string_equal(s.text, "192.0.2.1:53");
        assert_int_equal(dns_server_parse("[::1]:5353", &s), 0);
        assert_string_equal(s.text, "[::1]:5353");
        assert_int_equal(dns_server_parse("2001:db8::1", &s), 0);
        assert_string_equal(s.text, "[2001:db8::1]:53");
        static const char *const bad[] = { "",     "ns1.example:53", "1.2.3.4:0", "1.2.3.4:70000",
                                           "[::1", "[::1]x",         "1.2.3.4:",  "1.2.3.4:53x" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_int_equal(dns_server_parse(bad[i], &s), -EINVAL);
}

static void test_strings(void **state) {
        char b[16];
        assert_string_equal(dns_rcode_to_string(DNS_RCODE_NOTAUTH, b), "NOTAUTH");
        assert_string_equal(dns_rcode_to_string(DNS_RCODE_BADTIME, b), "BADTIME");
        assert_string_equal(dns_rcode_to_string(12, b), "RCODE12");
        assert_string_equal(dns_type_to_string(DNS_TYPE_AAAA, b), "AAAA");
        assert_string_equal(dns_type_to_string(99, b), "TYPE99");
        char a[46];
        uint16_t t;
        assert_int_equal(dns_address_normalize("2001:DB8:0::0001", a, &t), 0);
        assert_string_equal(a, "2001:db8::1");
        assert_int_equal(t, DNS_TYPE_AAAA);
        assert_int_equal(dns_address_normalize("010.0.0.1", a, &t), PK_EMALFORMED);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_compression_roundtrip),
                cmocka_unit_test(test_name_attacks),
                cmocka_unit_test(test_message_parse),
                cmocka_unit_test(test_server_parse),
                cmocka_unit_test(test_strings),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
