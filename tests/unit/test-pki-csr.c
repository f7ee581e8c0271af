/* SPDX-License-Identifier: Apache-2.0 */
/* Certificate requests (pki/pki-csr.h) made by other encoders: Go's crypto/x509 as kubelet 1.20 uses it,
 * and `openssl req` (tests/vectors/csr/, README there): their keys, subjects and SANs read out; and each
 * refusal: a bad signature, no request, an oversized input, two subjectAltName extensions, a NUL or a
 * control character in a name. */
#include <string.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "pki/pki-csr.h"
#include "shared/crypto.h"
#include "shared/openssl-util.h"
#include "unit-test.h"
#include "vectors.h"

/* the SHA-256 of the request's SubjectPublicKeyInfo as `openssl req -pubkey | openssl pkey -pubin
 * -outform DER | sha256sum` computes it */
#define GO_CLIENT_SPKI_SHA256 "b32ba7ff1825807df847e09f2d2b4fac356b929241ca714ea3f3512772f60df0"

static PkiCsr *parse_vector(const char *name) {
        const char *names[] = { name };
        char *text[1];
        size_t len[1];
        PkiCsr *c = NULL;
        char *err = NULL;
        vectors_read(names, 1, text, len);
        int r = pki_csr_parse(text[0], len[0], &c, &err);
        free(text[0]);
        if (r < 0) {
                print_error("%s: %s\n", name, strnull(err));
                free(err);
                fail();
        }
        return c;
}

static void assert_strv(char **l, const char *const *want, size_t n) {
        assert_int_equal(strv_length(l), n);
        for (size_t i = 0; i < n; i++)
                assert_string_equal(l[i], want[i]);
}

static void test_go_kubelet_client(void **state) {
        _cleanup_(pki_csr_freep) PkiCsr *c = parse_vector("csr/go-kubelet-client.pem");
        char hex[65];
        assert_int_equal(c->key_type, PKI_KEY_ECDSA_P256);
        assert_string_equal(c->key_algorithm, "EC");
        assert_string_equal(c->cn, "system:node:w1");
        assert_int_equal(c->n_cn, 1);
        assert_strv(c->orgs, (const char *[]){ "system:nodes" }, 1);
        assert_int_equal(c->n_other_rdn, 0);
        assert_int_equal(strv_length(c->dns) + strv_length(c->ips) + c->n_other_sans, 0);
        crypto_hex(c->spki_sha256, sizeof(c->spki_sha256), hex);
        assert_string_equal(hex, GO_CLIENT_SPKI_SHA256);
}

static void test_go_kubelet_serving(void **state) {
        _cleanup_(pki_csr_freep) PkiCsr *c = parse_vector("csr/go-kubelet-serving.pem");
        assert_string_equal(c->cn, "system:node:w1");
        assert_strv(c->dns, (const char *[]){ "w1" }, 1);
        /* canonical text: Go wrote fd00::11 as 16 octets */
        assert_strv(c->ips, (const char *[]){ "10.99.1.11", "fd00::11" }, 2);
        assert_int_equal(c->n_other_sans, 0);
}

static void test_openssl_requests(void **state) {
        PkiCsr *c = parse_vector("csr/openssl-rsa2048-client.pem");
        assert_int_equal(c->key_type, PKI_KEY_RSA_2048);
        assert_string_equal(c->cn, "system:node:w2");
        pki_csr_free(c);

        /* keys protokube does not sign still parse: the approver says why it refuses them */
        c = parse_vector("csr/openssl-p384.pem");
        assert_int_equal(c->key_type, _PKI_KEY_TYPE_INVALID);
        assert_string_equal(c->key_algorithm, "EC");
        pki_csr_free(c);
        c = parse_vector("csr/openssl-ed25519.pem");
        assert_int_equal(c->key_type, _PKI_KEY_TYPE_INVALID);
        assert_string_equal(c->key_algorithm, "ED25519");
        pki_csr_free(c);

        c = parse_vector("csr/openssl-ou.pem");
        assert_int_equal(c->n_other_rdn, 1);
        pki_csr_free(c);

        c = parse_vector("csr/openssl-two-cn.pem");
        assert_int_equal(c->n_cn, 2);
        assert_string_equal(c->cn, "system:node:w2");
        pki_csr_free(c);

        c = parse_vector("csr/openssl-email-uri.pem");
        assert_strv(c->dns, (const char *[]){ "w2" }, 1);
        assert_int_equal(c->n_other_sans, 2);
        pki_csr_free(c);

        /* another extension is not read (a certificate is built from what was approved) */
        c = parse_vector("csr/openssl-other-ext.pem");
        assert_strv(c->dns, (const char *[]){ "w2" }, 1);
        assert_int_equal(c->n_other_sans, 0);
        pki_csr_free(c);
}

static void expect_malformed(const char *pem, size_t len, const char *why) {
        PkiCsr *c = NULL;
        char *err = NULL;
        assert_int_equal(pki_csr_parse(pem, len, &c, &err), PK_EMALFORMED);
        assert_null(c);
        assert_non_null(err);
        if (!strstr(err, why)) {
                print_error("'%s' does not say '%s'\n", err, why);
                free(err);
                fail();
        }
        free(err);
}

static void test_refused(void **state) {
        const char *names[] = { "csr/bad-signature.pem" };
        char *text[1];
        size_t len[1];
        vectors_read(names, 1, text, len);
        expect_malformed(text[0], len[0], "signature does not verify");
        /* a request behind another PEM block is found; one cut short is not */
        expect_malformed(text[0], len[0] / 2, "no PEM block");
        free(text[0]);
        expect_malformed("junk", 4, "no PEM block");
        expect_malformed("", 0, "empty");
        char *big = malloc(PKI_CSR_PEM_MAX + 1);
        assert_non_null(big);
        memset(big, 'A', PKI_CSR_PEM_MAX + 1);
        expect_malformed(big, PKI_CSR_PEM_MAX + 1, "longer than 64 KiB");
        free(big);
}

/* A request built with OpenSSL directly, for what no encoder writes on purpose. */
static char *craft(EVP_PKEY *key, const char *cn, int n_san_exts, const char *dns, size_t dns_len) {
        X509_REQ *req = X509_REQ_new();
        X509_NAME *name = X509_NAME_new();
        STACK_OF(X509_EXTENSION) *exts = sk_X509_EXTENSION_new_null();
        assert_true(req && name && exts);
        assert_int_equal(X509_NAME_add_entry_by_NID(name, NID_commonName, MBSTRING_UTF8,
                                                    (const unsigned char *)cn, -1, -1, 0),
                         1);
        assert_int_equal(X509_REQ_set_subject_name(req, name), 1);
        assert_int_equal(X509_REQ_set_pubkey(req, key), 1);
        for (int i = 0; i < n_san_exts; i++) {
                GENERAL_NAMES *gens = sk_GENERAL_NAME_new_null();
                GENERAL_NAME *gn = GENERAL_NAME_new();
                ASN1_IA5STRING *s = ASN1_IA5STRING_new();
                assert_int_equal(ASN1_STRING_set(s, dns, (int)dns_len), 1);
                GENERAL_NAME_set0_value(gn, GEN_DNS, s);
                assert_true(sk_GENERAL_NAME_push(gens, gn) > 0);
                X509_EXTENSION *ext = X509V3_EXT_i2d(NID_subject_alt_name, 0, gens);
                assert_non_null(ext);
                assert_true(sk_X509_EXTENSION_push(exts, ext) > 0);
                GENERAL_NAMES_free(gens);
        }
        if (n_san_exts > 0)
                assert_int_equal(X509_REQ_add_extensions(req, exts), 1);
        assert_true(X509_REQ_sign(req, key, EVP_sha256()) > 0);
        BIO *bio = BIO_new(BIO_s_mem());
        BUF_MEM *bm = NULL;
        assert_int_equal(PEM_write_bio_X509_REQ(bio, req), 1);
        BIO_get_mem_ptr(bio, &bm);
        char *pem = strndup(bm->data, bm->length);
        BIO_free(bio);
        sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
        X509_NAME_free(name);
        X509_REQ_free(req);
        return pem;
}

static void test_crafted(void **state) {
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *key = NULL;
        assert_int_equal(pki_key_generate(PKI_KEY_ECDSA_P256, &key), 0);
        char *pem = craft(key, "system:node:w1", 2, "w1", 2);
        expect_malformed(pem, strlen(pem), "two subjectAltName extensions");
        free(pem);
        pem = craft(key, "system:node:w1", 1, "w1\0.evil", 8);
        expect_malformed(pem, strlen(pem), "NUL or control character");
        free(pem);
        pem = craft(key, "system:node:w1\n", 0, NULL, 0);
        expect_malformed(pem, strlen(pem), "subject attribute is not text");
        free(pem);
        /* the crafted shape itself parses */
        pem = craft(key, "system:node:w1", 1, "w1", 2);
        PkiCsr *c = NULL;
        assert_int_equal(pki_csr_parse(pem, strlen(pem), &c, NULL), 0);
        assert_strv(c->dns, (const char *[]){ "w1" }, 1);
        pki_csr_free(c);
        free(pem);
}

static void test_create_round_trip(void **state) {
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *key = NULL;
        _cleanup_free_ char *pem = NULL;
        _cleanup_(pki_csr_freep) PkiCsr *c = NULL;
        assert_int_equal(pki_key_generate(PKI_KEY_RSA_2048, &key), 0);
        assert_int_equal(
            pki_csr_create(key, "system:node:w9", "system:nodes", ((char *const[]){ "w9", NULL }),
                           ((char *const[]){ "10.0.0.9", NULL }), ((char *const[]){ "a@b.c", NULL }), &pem),
            0);
        assert_int_equal(pki_csr_parse(pem, strlen(pem), &c, NULL), 0);
        assert_int_equal(c->key_type, PKI_KEY_RSA_2048);
        assert_true(pki_key_public_equal(c->key, key));
        assert_string_equal(c->cn, "system:node:w9");
        assert_strv(c->orgs, (const char *[]){ "system:nodes" }, 1);
        assert_strv(c->dns, (const char *[]){ "w9" }, 1);
        assert_strv(c->ips, (const char *[]){ "10.0.0.9" }, 1);
        assert_int_equal(c->n_other_sans, 1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_go_kubelet_client), cmocka_unit_test(test_go_kubelet_serving),
                cmocka_unit_test(test_openssl_requests),  cmocka_unit_test(test_refused),
                cmocka_unit_test(test_crafted),           cmocka_unit_test(test_create_round_trip),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
