/* SPDX-License-Identifier: Apache-2.0 */
/* The HMAC layer against RFC 4231 §4 (tests/vectors/hmac) and FIPS 198 style known answers for
 * SHA-1 and SHA-512 (RFC 2202 §3 case 1, RFC 4231 §4.2 SHA-512); base64 against RFC 4648 §10. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/string-util.h"
#include "shared/crypto.h"
#include "unit-test.h"
#include "vectors.h"

static size_t hex_decode(const char *hex, size_t n, uint8_t *out) {
        size_t o = 0;
        for (size_t i = 0; i + 1 < n; i += 2) {
                unsigned v;
                char tmp[3] = { hex[i], hex[i + 1], 0 };
                assert_int_equal(sscanf(tmp, "%02x", &v), 1);
                out[o++] = (uint8_t)v;
        }
        return o;
}

/* "0b0b", "aa*131", "\"text\"" -> bytes */
static size_t decode_field(const char *s, size_t n, uint8_t *out) {
        if (s[0] == '"') {
                memcpy(out, s + 1, n - 2);
                return n - 2;
        }
        const char *star = memchr(s, '*', n);
        if (star) {
                uint8_t b;
                hex_decode(s, 2, &b);
                unsigned count = 0;
                char tmp[16] = {};
                memcpy(tmp, star + 1, MIN((size_t)(s + n - star - 1), sizeof(tmp) - 1));
                assert_int_equal(sscanf(tmp, "%u", &count), 1);
                memset(out, b, count);
                return count;
        }
        return hex_decode(s, n, out);
}

/* Finds "key=" in line and returns the value's extent (quoted values may hold spaces). */
static const char *field(const char *line, const char *key, size_t *ret_len) {
        _cleanup_free_ char *k = strjoin(" ", key, "=");
        const char *p = strstr(line, k);
        assert_non_null(p);
        p += strlen(k);
        const char *e = p[0] == '"' ? strchr(p + 1, '"') + 1 : p + strcspn(p, " \n");
        *ret_len = (size_t)(e - p);
        return p;
}

static void test_vectors(void **state) {
        size_t len;
        _cleanup_free_ char *text = vector_read("hmac/rfc4231-hmac-sha256.txt", &len);
        unsigned cases = 0;
        char *save = NULL;
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                if (line[0] != 't')
                        continue;
                _cleanup_free_ char *l = strjoin(" ", line);
                uint8_t key[256], data[512], want[64], mac[CRYPTO_HMAC_MAX];
                size_t kn, dn, mn, n;
                const char *k = field(l, "key", &n);
                kn = decode_field(k, n, key);
                const char *d = field(l, "data", &n);
                dn = decode_field(d, n, data);
                const char *m = strstr(l, " mac=") ? field(l, "mac", &n) : field(l, "mac128", &n);
                mn = hex_decode(m, n, want);
                assert_int_equal(crypto_hmac(CRYPTO_HASH_SHA256, key, kn, data, dn, mac), 0);
                assert_memory_equal(mac, want, mn);
                cases++;
        }
        assert_int_equal(cases, 7);
}

static void test_other_hashes(void **state) {
        uint8_t key[20], mac[CRYPTO_HMAC_MAX], want[64];
        memset(key, 0x0b, sizeof(key));
        /* RFC 2202 §3 test case 1 (HMAC-SHA-1). */
        assert_int_equal(crypto_hmac(CRYPTO_HASH_SHA1, key, 20, "Hi There", 8, mac), 0);
        hex_decode("b617318655057264e28bc0b6fb378c8ef146be00", 40, want);
        assert_memory_equal(mac, want, 20);
        /* RFC 4231 §4.2 (HMAC-SHA-512). */
        assert_int_equal(crypto_hmac(CRYPTO_HASH_SHA512, key, 20, "Hi There", 8, mac), 0);
        hex_decode("87aa7cdea5ef619d4ff0b4241a1d6cb02379f4e2ce4ec2787ad0b30545e17cde"
                   "daa833b7d6b8a702038b274eaea3f4e4be9d914eeb61f1702e696c203a126854",
                   128, want);
        assert_memory_equal(mac, want, 64);
        assert_int_equal(crypto_hash_size(CRYPTO_HASH_SHA512), 64);
        assert_int_equal(crypto_hmac((CryptoHash)99, key, 20, "x", 1, mac), -EINVAL);
        /* Split input gives the same MAC as one piece. */
        uint8_t mac2[CRYPTO_HMAC_MAX];
        CryptoPart parts[] = { { "Hi ", 3 }, { NULL, 0 }, { "There", 5 } };
        assert_int_equal(crypto_hmac_parts(CRYPTO_HASH_SHA512, key, 20, parts, 3, mac2), 0);
        assert_memory_equal(mac, mac2, 64);
}

static void test_memeq(void **state) {
        assert_true(crypto_memeq("abc", "abc", 3));
        assert_false(crypto_memeq("abc", "abd", 3));
        assert_true(crypto_memeq("", "", 0));
}

static void test_base64(void **state) {
        static const char *const plain[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
        static const char *const enc[] = { "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy" };
        for (size_t i = 0; i < ELEMENTSOF(plain); i++) {
                _cleanup_free_ char *e = NULL;
                _cleanup_free_ uint8_t *d = NULL;
                size_t n;
                assert_int_equal(crypto_base64_encode(plain[i], strlen(plain[i]), &e), 0);
                assert_string_equal(e, enc[i]);
                assert_int_equal(crypto_base64_decode(enc[i], strlen(enc[i]), &d, &n), 0);
                assert_int_equal(n, strlen(plain[i]));
                assert_memory_equal(d, plain[i], n);
        }
        static const char *const bad[] = { "Zg=", "Z===", "Zm9v!", "Zg==Zg==", "=Zg=", "Zm9vY", "Zg==x" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                uint8_t *d = NULL;
                size_t n;
                assert_int_equal(crypto_base64_decode(bad[i], strlen(bad[i]), &d, &n), PK_EMALFORMED);
                assert_null(d);
        }
        _cleanup_free_ uint8_t *d = NULL;
        size_t n;
        assert_int_equal(crypto_base64_decode(" Zm9v\n YmFy ", 12, &d, &n), 0);
        assert_int_equal(n, 6);
}

/* Long values take the table's fast path for their whole quads: every byte value, every length mod 3, a
 * line break in the middle (the careful loop takes over there) and garbage at the end all decode as the
 * careful loop alone would. */
static void test_base64_long(void **state) {
        uint8_t plain[1000];
        for (size_t i = 0; i < sizeof(plain); i++)
                plain[i] = (uint8_t)(i * 7 + 3);
        for (size_t len = 995; len <= sizeof(plain); len++) {
                _cleanup_free_ char *e = NULL, *broken = NULL, *junk = NULL;
                _cleanup_free_ uint8_t *d = NULL, *d2 = NULL;
                size_t n, n2;
                assert_int_equal(crypto_base64_encode(plain, len, &e), 0);
                assert_int_equal(crypto_base64_decode(e, strlen(e), &d, &n), 0);
                assert_int_equal(n, len);
                assert_memory_equal(d, plain, len);
                size_t elen = strlen(e);
                broken = malloc(elen + 2);
                memcpy(broken, e, 401);
                broken[401] = '\n'; /* not on a quad boundary */
                memcpy(broken + 402, e + 401, elen - 401 + 1);
                assert_int_equal(crypto_base64_decode(broken, elen + 1, &d2, &n2), 0);
                assert_int_equal(n2, len);
                assert_memory_equal(d2, plain, len);
                junk = strdup(e);
                junk[elen / 2] = '"';
                uint8_t *d3 = NULL;
                assert_int_equal(crypto_base64_decode(junk, elen, &d3, &n), PK_EMALFORMED);
                assert_null(d3);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_vectors),     cmocka_unit_test(test_other_hashes),
                cmocka_unit_test(test_memeq),       cmocka_unit_test(test_base64),
                cmocka_unit_test(test_base64_long),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
