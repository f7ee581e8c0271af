/* SPDX-License-Identifier: Apache-2.0 */
/* TSIG (RFC 8945) against external vectors (tests/vectors/tsig) and against libldns as an oracle. */
#include <ldns/ldns.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/string-util.h"
#include "basic/time-util.h"
#include "dns/dns-records.h"
#include "dns/dns-tsig.h"
#include "dns/dns-update.h"
#include "unit-test.h"
#include "vectors.h"

#define FIXED_SECRET "c2VjcmV0LWtleS1mb3ItdGVzdGluZy0zMmJ5dGVzISE="
#define FIXED_TIME   1700000000ULL

static usec_t fake_clock_value;
static usec_t fake_clock(clockid_t clock, void *userdata) {
        return fake_clock_value;
}

static void set_time(uint64_t seconds) {
        fake_clock_value = seconds * USEC_PER_SEC;
        clock_override(fake_clock, NULL);
}

static TsigKey *make_key(const char *name, const char *alg, const char *b64) {
        _cleanup_free_ uint8_t *secret = NULL;
        size_t n;
        TsigKey *k = NULL;
        assert_int_equal(crypto_base64_decode(b64, strlen(b64), &secret, &n), 0);
        assert_int_equal(tsig_key_new(name, alg, secret, n, &k), 0);
        return k;
}

/* The dnspython fixed-time message, rebuilt with our writer and signer, byte for byte. */
static void test_fixed_vector(void **state) {
        size_t want_len, mac_len;
        _cleanup_free_ char *want = vector_read("tsig/dnspython-tsig-hmac-sha256-fixedtime.bin", &want_len);
        _cleanup_(tsig_key_freep) TsigKey *k = make_key("protokube-key", "hmac-sha256", FIXED_SECRET);
        uint8_t mac[CRYPTO_HMAC_MAX];
        DnsUpdate u;

        set_time(FIXED_TIME);
        dns_update_init(&u, 0x1234, "cluster.example.");
        dns_update_add_address(&u, "api.cluster.example.", 60, "10.0.0.5");
        assert_int_equal(dns_update_finish(&u), 0);
        assert_int_equal(tsig_sign(&u.w.buf, k, 300, mac, &mac_len), 0);
        assert_int_equal(mac_len, 32);
        assert_int_equal(u.w.buf.len, want_len);
        assert_memory_equal(u.w.buf.data, want, want_len);
        static const uint8_t want_mac[] = { 0x83, 0xbf, 0x31, 0x9f, 0x6a, 0x8b, 0xb6, 0xa8, 0xc0, 0xc9, 0xfd,
                                            0x5c, 0xd4, 0x58, 0xd6, 0x6b, 0xa4, 0x04, 0x6c, 0xd6, 0x64, 0xfe,
                                            0x05, 0x71, 0xac, 0xde, 0xdd, 0xb1, 0x57, 0x4a, 0x09, 0xb0 };
        assert_memory_equal(mac, want_mac, 32);
        /* And it verifies with us, at its time and within the fudge, not outside it. */
        assert_int_equal(tsig_verify((uint8_t *)want, want_len, k, NULL, 0, 0, NULL), 0);
        set_time(FIXED_TIME + 300);
        assert_int_equal(tsig_verify((uint8_t *)want, want_len, k, NULL, 0, 0, NULL), 0);
        TsigVerdict v;
        set_time(FIXED_TIME + 301);
        assert_int_equal(tsig_verify((uint8_t *)want, want_len, k, NULL, 0, 0, &v), PK_ETSIG);
        assert_int_equal(v.error, DNS_RCODE_BADTIME);
        set_time(FIXED_TIME - 301);
        assert_int_equal(tsig_verify((uint8_t *)want, want_len, k, NULL, 0, 0, &v), PK_ETSIG);
        assert_int_equal(v.error, DNS_RCODE_BADTIME);
        dns_update_done(&u);
        clock_override(NULL, NULL);
}

/* Flips each bit of a signed message: verification must fail, with one exception by design. RFC 8945
 * §4.3.3 digests the TSIG RR's own owner and algorithm names in canonical (lowercase) form, so changing
 * the case of a letter there is no change to the message (names compare case-insensitively, RFC 4343). */
static void flip_every_bit(const uint8_t *msg, size_t len, const TsigKey *k) {
        _cleanup_free_ uint8_t *copy = malloc(len);
        const uint8_t *tsig = memmem(msg, len, "\x0dprotokube-key\x00\x00\xfa", 17);
        unsigned case_flips = 0;
        assert_non_null(copy);
        assert_non_null(tsig);
        size_t name_at = (size_t)(tsig - msg), alg_at = name_at + 15 + 10;
        for (size_t bit = 0; bit < len * 8; bit++) {
                size_t i = bit / 8;
                memcpy(copy, msg, len);
                copy[i] ^= (uint8_t)(1u << (bit % 8));
                int r = tsig_verify(copy, len, k, NULL, 0, TSIG_VERIFY_SKIP_TIME, NULL);
                bool in_names = (i > name_at && i < name_at + 14) || (i > alg_at && i < alg_at + 12);
                bool letter = (msg[i] | 0x20) >= 'a' && (msg[i] | 0x20) <= 'z';
                if (r == 0 && in_names && letter && bit % 8 == 5) {
                        case_flips++;
                        continue;
                }
                if (r == 0)
                        fail_msg("bit %zu flipped still verifies", bit);
                assert_true(r == PK_ETSIG || r == PK_EMALFORMED);
        }
        /* "protokubekey" and "hmacsha" are the letters. */
        assert_int_equal(case_flips, 12 + 7);
}

/* The real nsupdate capture verifies (its time is the capture time: window check skipped). */
static void test_nsupdate_capture(void **state) {
        _cleanup_free_ char *keytext = NULL, *msg = NULL, *error = NULL;
        _cleanup_(tsig_key_freep) TsigKey *k = NULL;
        size_t keylen, len;
        TsigVerdict v;

        static const char *const names[] = { "tsig/nsupdate-tsig-hmac-sha256.key",
                                             "tsig/nsupdate-tsig-hmac-sha256.bin" };
        char *text[2];
        size_t sizes[2];
        vectors_read(names, 2, text, sizes);
        keytext = text[0];
        keylen = sizes[0];
        msg = text[1];
        len = sizes[1];
        assert_int_equal(tsig_key_parse(keytext, keylen, &k, &error), 0);
        assert_string_equal(k->name, "protokube-key.");
        assert_string_equal(k->algorithm, "hmac-sha256.");
        assert_int_equal(tsig_verify((uint8_t *)msg, len, k, NULL, 0, TSIG_VERIFY_SKIP_TIME, &v), 0);
        assert_true(v.present);
        /* The window check is on by default, and this capture is old. */
        assert_int_equal(tsig_verify((uint8_t *)msg, len, k, NULL, 0, 0, &v), PK_ETSIG);
        assert_int_equal(v.error, DNS_RCODE_BADTIME);
        flip_every_bit((uint8_t *)msg, len, k);

        /* Another key name or algorithm: BADKEY; another secret: BADSIG. */
        _cleanup_(tsig_key_freep) TsigKey *other = make_key("other-key", "hmac-sha256", FIXED_SECRET);
        assert_int_equal(tsig_verify((uint8_t *)msg, len, other, NULL, 0, TSIG_VERIFY_SKIP_TIME, &v),
                         PK_ETSIG);
        assert_int_equal(v.error, DNS_RCODE_BADKEY);
        _cleanup_(tsig_key_freep) TsigKey *wrong = make_key("protokube-key", "hmac-sha256", FIXED_SECRET);
        assert_int_equal(tsig_verify((uint8_t *)msg, len, wrong, NULL, 0, TSIG_VERIFY_SKIP_TIME, &v),
                         PK_ETSIG);
        assert_int_equal(v.error, DNS_RCODE_BADSIG);
        _cleanup_(tsig_key_freep) TsigKey *sha1 = make_key("protokube-key", "hmac-sha1", FIXED_SECRET);
        assert_int_equal(tsig_verify((uint8_t *)msg, len, sha1, NULL, 0, TSIG_VERIFY_SKIP_TIME, &v),
                         PK_ETSIG);
        assert_int_equal(v.error, DNS_RCODE_BADKEY);
        /* Without a TSIG at all. */
        uint8_t header[12] = { 0x12, 0x34, 0x28, 0 };
        assert_int_equal(tsig_verify(header, sizeof(header), k, NULL, 0, 0, &v), PK_ETSIG);
        assert_false(v.present);
}

static void test_fixed_vector_bits(void **state) {
        size_t len;
        _cleanup_free_ char *msg = vector_read("tsig/dnspython-tsig-hmac-sha256-fixedtime.bin", &len);
        _cleanup_(tsig_key_freep) TsigKey *k = make_key("protokube-key", "hmac-sha256", FIXED_SECRET);
        flip_every_bit((uint8_t *)msg, len, k);
}

/* Every UPDATE we build verifies under libldns, for each algorithm we support. */
static void test_ldns_oracle(void **state) {
        static const struct {
                const char *alg;
                const char *secret;
        } algs[] = {
                { "hmac-sha256", FIXED_SECRET },
                { "hmac-sha1", "c2hhMS1rZXk=" },
                { "hmac-sha512", "c2hhNTEyLWtleS1mb3ItdGVzdGluZy0wMTIzNDU2Nzg5YWJjZGVmMDEyMzQ1Njc4OQ==" },
        };
        _cleanup_rrset_list_ DnsRRsetList changes = {};
        assert_int_equal(dns_rrset_list_add_address(&changes, "api.internal.demo.k8s.test", 60, "10.0.0.1"),
                         0);
        assert_int_equal(dns_rrset_list_add_address(&changes, "api.internal.demo.k8s.test", 60, "10.0.0.2"),
                         0);
        assert_int_equal(dns_rrset_list_add_address(&changes, "api.internal.demo.k8s.test", 60, "fd00::1"),
                         0);
        assert_int_equal(
            dns_rrset_list_add_address(&changes, "etcd-a.internal.demo.k8s.test", 60, "10.0.0.1"), 0);
        assert_int_equal(dns_rrset_list_get(&changes, "api.demo.k8s.test", 1, 60, NULL), 0); /* a delete */
        dns_rrset_list_sort(&changes);

        for (size_t i = 0; i < ELEMENTSOF(algs); i++) {
                _cleanup_(tsig_key_freep) TsigKey *k =
                    make_key("protokube-key", algs[i].alg, algs[i].secret);
                uint8_t mac[CRYPTO_HMAC_MAX];
                size_t mac_len;
                DnsUpdate u;
                ldns_pkt *pkt = NULL;

                assert_int_equal(dns_update_build(0xbeef, "k8s.test.", &changes, &u), 4);
                assert_int_equal(tsig_sign(&u.w.buf, k, 300, mac, &mac_len), 0);
                assert_int_equal(mac_len, crypto_hash_size(k->hash));
                assert_int_equal(ldns_wire2pkt(&pkt, u.w.buf.data, u.w.buf.len), LDNS_STATUS_OK);
                assert_int_equal(ldns_pkt_get_opcode(pkt), LDNS_PACKET_UPDATE);
                /* ZOCOUNT 1, UPCOUNT: 4 deletes + 4 adds, ADCOUNT 1 (the TSIG, which ldns takes out). */
                assert_int_equal(ldns_pkt_qdcount(pkt), 1);
                assert_int_equal(ldns_pkt_nscount(pkt), 8);
                assert_true(ldns_pkt_tsig_verify(pkt, u.w.buf.data, u.w.buf.len, "protokube-key.",
                                                 algs[i].secret, NULL));
                assert_false(ldns_pkt_tsig_verify(pkt, u.w.buf.data, u.w.buf.len, "protokube-key.",
                                                  "d3Jvbmctc2VjcmV0", NULL));
                ldns_pkt_free(pkt);
                /* The tampered message no longer verifies under ldns. */
                u.w.buf.data[u.w.buf.len / 2] ^= 1;
                pkt = NULL;
                if (ldns_wire2pkt(&pkt, u.w.buf.data, u.w.buf.len) == LDNS_STATUS_OK) {
                        assert_false(ldns_pkt_tsig_verify(pkt, u.w.buf.data, u.w.buf.len, "protokube-key.",
                                                          algs[i].secret, NULL));
                        ldns_pkt_free(pkt);
                }
                dns_update_done(&u);
        }
}

/* A response signed by ldns with our request's MAC (RFC 8945 §4.3.1) verifies with that MAC only. */
static void test_ldns_response(void **state) {
        _cleanup_(tsig_key_freep) TsigKey *k = make_key("protokube-key", "hmac-sha256", FIXED_SECRET);
        _cleanup_(dns_writer_freep) DnsWriter q;
        uint8_t mac[CRYPTO_HMAC_MAX], req[2 + CRYPTO_HMAC_MAX];
        size_t mac_len, wire_len;
        uint8_t *wire = NULL;
        ldns_pkt *pkt = NULL;

        dns_writer_init(&q);
        assert_int_equal(dns_query_build(0x4242, "api.k8s.test", DNS_TYPE_A, &q), 0);
        assert_int_equal(tsig_sign(&q.buf, k, 300, mac, &mac_len), 0);
        assert_int_equal(ldns_wire2pkt(&pkt, q.buf.data, q.buf.len), LDNS_STATUS_OK);
        ldns_pkt_set_qr(pkt, true);
        ldns_rr_free(ldns_pkt_tsig(pkt));
        ldns_pkt_set_tsig(pkt, NULL);
        ldns_pkt_set_arcount(pkt, 0);
        req[0] = (uint8_t)(mac_len >> 8);
        req[1] = (uint8_t)mac_len;
        memcpy(req + 2, mac, mac_len);
        ldns_rdf *req_mac = ldns_rdf_new_frm_data(LDNS_RDF_TYPE_INT16_DATA, 2 + mac_len, req);
        assert_int_equal(
            ldns_pkt_tsig_sign(pkt, "protokube-key.", FIXED_SECRET, 300, "hmac-sha256.", req_mac),
            LDNS_STATUS_OK);
        assert_int_equal(ldns_pkt2wire(&wire, pkt, &wire_len), LDNS_STATUS_OK);
        assert_int_equal(tsig_verify(wire, wire_len, k, mac, mac_len, 0, NULL), 0);
        /* Without the request MAC, or with another one, it does not verify. */
        assert_int_equal(tsig_verify(wire, wire_len, k, NULL, 0, 0, NULL), PK_ETSIG);
        mac[0] ^= 1;
        assert_int_equal(tsig_verify(wire, wire_len, k, mac, mac_len, 0, NULL), PK_ETSIG);
        free(wire);
        ldns_rdf_deep_free(req_mac);
        ldns_pkt_free(pkt);
}

static void test_key_parse(void **state) {
        static const char *const good[] = {
                "key \"protokube-key\" {\n\talgorithm hmac-sha256;\n\tsecret \"" FIXED_SECRET "\";\n};\n",
                "# comment\nkey protokube-key { algorithm \"HMAC-SHA256\"; secret " FIXED_SECRET "; } ;",
                "/* c */ key \"protokube-key.\" { // x\n secret \"" FIXED_SECRET
                "\"; algorithm hmac-sha256; };",
        };
        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                _cleanup_(tsig_key_freep) TsigKey *k = NULL;
                _cleanup_free_ char *e = NULL;
                assert_int_equal(tsig_key_parse(good[i], strlen(good[i]), &k, &e), 0);
                assert_string_equal(k->name, "protokube-key.");
                assert_int_equal(k->hash, CRYPTO_HASH_SHA256);
                assert_int_equal(k->secret_len, 32);
                assert_memory_equal(k->secret, "secret-key-for-testing-32bytes!!", 32);
        }
        static const char *const bad[] = {
                "",
                "key",
                "key \"k\" { algorithm hmac-sha256; };",
                "key \"k\" { secret \"" FIXED_SECRET "\"; };",
                "key \"k\" { algorithm hmac-md5; secret \"" FIXED_SECRET "\"; };",
                "key \"k\" { algorithm hmac-sha256; secret \"not base64!\"; };",
                "key \"k\" { algorithm hmac-sha256; secret \"" FIXED_SECRET "\" };",
                "key \"k\" { algorithm hmac-sha256; secret \"" FIXED_SECRET "\"; }; key \"j\" { };",
                "key \"k\" { algorithm hmac-sha256; secret \"" FIXED_SECRET "\"; colour blue; };",
                "key \"k\" { algorithm hmac-sha256; secret \"" FIXED_SECRET,
                "key \"a..b\" { algorithm hmac-sha256; secret \"" FIXED_SECRET "\"; };",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                TsigKey *k = NULL;
                _cleanup_free_ char *e = NULL;
                assert_int_equal(tsig_key_parse(bad[i], strlen(bad[i]), &k, &e), PK_EMALFORMED);
                assert_null(k);
                assert_non_null(e);
                /* The secret never appears in a message. */
                assert_null(strstr(e, FIXED_SECRET));
        }
}

static void test_key_file_mode(void **state) {
        char path[] = "/tmp/test-dns-tsig-XXXXXX";
        const char *text = "key \"k\" { algorithm hmac-sha512; secret \"" FIXED_SECRET "\"; };\n";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        assert_int_equal(loop_write(fd, text, strlen(text)), 0);
        close(fd);

        TsigKey *k = NULL;
        _cleanup_free_ char *e = NULL;
        assert_int_equal(chmod(path, 0644), 0);
        assert_int_equal(tsig_key_load_file(path, &k, &e), -EPERM);
        assert_null(k);
        assert_non_null(strstr(e, path));
        assert_non_null(strstr(e, "0644"));
        free(e);
        e = NULL;
        assert_int_equal(chmod(path, 0640), 0);
        assert_int_equal(tsig_key_load_file(path, &k, &e), -EPERM);
        free(e);
        e = NULL;
        assert_int_equal(chmod(path, 0600), 0);
        assert_int_equal(tsig_key_load_file(path, &k, &e), 0);
        assert_int_equal(k->hash, CRYPTO_HASH_SHA512);
        tsig_key_free(k);
        k = NULL;

        /* Owned by another user (here nobody, 65534), even 0600: that user could swap the key. Only root
         * can give a file away, so this part needs root (make check runs as root). */
        if (geteuid() == 0) {
                assert_int_equal(chown(path, 65534, 65534), 0);
                assert_int_equal(tsig_key_load_file(path, &k, &e), -EPERM);
                assert_null(k);
                print_message("%s\n", e);
                assert_non_null(strstr(e, path));
                assert_non_null(strstr(e, "0600"));
                assert_non_null(strstr(e, "uid 65534"));
                free(e);
                e = NULL;
                assert_int_equal(chown(path, 0, 0), 0);
                assert_int_equal(tsig_key_load_file(path, &k, &e), 0);
                tsig_key_free(k);
                k = NULL;
        } else
                print_message("not root: the other-owner case is covered by tests/integration\n");
        unlink(path);
        assert_int_equal(tsig_key_load_file(path, &k, &e), -ENOENT);
        assert_non_null(strstr(e, path));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fixed_vector),      cmocka_unit_test(test_nsupdate_capture),
                cmocka_unit_test(test_fixed_vector_bits), cmocka_unit_test(test_ldns_oracle),
                cmocka_unit_test(test_ldns_response),     cmocka_unit_test(test_key_parse),
                cmocka_unit_test(test_key_file_mode),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
