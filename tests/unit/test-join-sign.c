/* SPDX-License-Identifier: Apache-2.0 */
/* The CA pin (join/join-pin.h) against kubeadm's own algorithm on a CA made by openssl, its check and
 * refusals, the keystore's cluster CA's pin; the signer (join/join-sign.h): which CSRs are due, and the
 * certificates it issues (verified against the CA, subject, SANs, usages, the request's key, a random
 * serial, the lifetime, cut at the CA's end) and its refusals. */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/x509v3.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "join/join-pin.h"
#include "join/join-sign.h"
#include "pki/keystore.h"
#include "shared/crypto.h"
#include "shared/openssl-util.h"
#include "unit-test.h"
#include "vectors.h"

#define T0           (1767225600ULL * USEC_PER_SEC) /* 2026-01-01T00:00:00Z */
#define HOUR         (3600ULL * USEC_PER_SEC)
#define V(...)       ((char *const[]){ __VA_ARGS__, NULL })
#define VECTOR_PIN   "sha256:c747f6fe6ba285846f5b1b7edc91abff21e1714948ae9f67460d93e58ff52de3"
#define TOKEN_GROUPS "[\"system:bootstrappers\",\"system:authenticated\"]"

static void test_pin(void **state) {
        const char *names[] = { "csr/ca.pem" };
        char *v[1];
        size_t len[1];
        char pin[JOIN_PIN_TEXT_MAX], *err = NULL;
        X509 *ca = NULL;
        vectors_read(names, 1, v, len);
        assert_int_equal(pki_cert_from_pem(v[0], len[0], &ca), 0);
        free(v[0]);
        assert_int_equal(join_ca_pin(ca, pin), 0);
        assert_string_equal(pin, VECTOR_PIN);
        assert_true(join_pin_valid(pin));

        assert_int_equal(join_ca_pin_check(ca, VECTOR_PIN, NULL), 0);
        /* kubeadm takes either case of hex */
        assert_int_equal(
            join_ca_pin_check(ca, "sha256:C747F6FE6BA285846F5B1B7EDC91ABFF21E1714948AE9F67460D93E58FF52DE3",
                              NULL),
            0);
        const char *other = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
        assert_int_equal(join_ca_pin_check(ca, other, &err), -EKEYREJECTED);
        assert_non_null(strstr(err, "the API server's CA 'kubernetes-ca' has pin " VECTOR_PIN));
        assert_non_null(strstr(err, other));
        free(err);
        err = NULL;
        const char *bad[] = { "c747f6fe6ba285846f5b1b7edc91abff21e1714948ae9f67460d93e58ff52de3",
                              "sha1:c747f6fe6ba285846f5b1b7edc91abff21e1714948ae9f67460d93e58ff52de3",
                              "sha256:c747f6fe6ba285846f5b1b7edc91abff21e1714948ae9f67460d93e58ff52de",
                              "sha256:g747f6fe6ba285846f5b1b7edc91abff21e1714948ae9f67460d93e58ff52de3",
                              "" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                assert_false(join_pin_valid(bad[i]));
                assert_int_equal(join_ca_pin_check(ca, bad[i], &err), -EINVAL);
                assert_non_null(strstr(err, "want sha256:<64 hex digits>"));
                free(err);
                err = NULL;
        }
        X509_free(ca);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

static void test_pin_of_keystore(void **state) {
        char root[] = "/tmp/pk-join-store-XXXXXX", url[64], pin[JOIN_PIN_TEXT_MAX],
             direct[JOIN_PIN_TEXT_MAX];
        Store *s = NULL;
        Keystore *k = NULL;
        char *err = NULL;
        assert_non_null(mkdtemp(root));
        snprintf(url, sizeof(url), "file://%s", root);
        assert_int_equal(store_open(url, &s, NULL), 0);
        KeystoreSpec spec = KEYSTORE_SPEC_DEFAULTS;
        assert_int_equal(keystore_read(s, &spec, &k, NULL), 0);
        assert_int_equal(join_ca_pin_keystore(k, pin, &err), -ENOENT);
        assert_non_null(strstr(err, "no cluster CA"));
        free(err);
        keystore_free(k);
        assert_int_equal(keystore_get_or_create(s, &spec, T0, &k, NULL), 0);
        assert_int_equal(join_ca_pin_keystore(k, pin, NULL), 0);
        assert_int_equal(join_ca_pin(keystore_find(k, KEYSTORE_CLUSTER_CA)->cert, direct), 0);
        assert_string_equal(pin, direct);
        /* another CA of the keystore has another pin */
        assert_int_equal(join_ca_pin(keystore_find(k, KEYSTORE_FRONT_PROXY_CA)->cert, direct), 0);
        assert_string_not_equal(pin, direct);
        keystore_free(k);
        store_free(s);
        assert_int_equal(nftw(root, rm_entry, 8, FTW_DEPTH | FTW_PHYS), 0);
}

typedef struct Ca {
        EVP_PKEY *key;
        X509 *cert;
} Ca;

static Ca ca_new(usec_t lifetime) {
        Ca ca = {};
        assert_int_equal(pki_key_generate(PKI_KEY_ECDSA_P256, &ca.key), 0);
        assert_int_equal(pki_ca_create("kubernetes-ca", ca.key, lifetime, T0, &ca.cert), 0);
        return ca;
}

static void ca_done(Ca *ca) {
        EVP_PKEY_free(ca->key);
        X509_free(ca->cert);
}

/* A CSR object for key, cn and SANs, of signer, with condition (NULL: pending) and a certificate or not. */
static JoinCsr *csr(EVP_PKEY *key, const char *signer, const char *usages, char *const *dns,
                    char *const *ips, const char *condition, bool with_certificate) {
        _cleanup_free_ char *pem = NULL, *b64 = NULL, *text = NULL;
        JoinCsr *c = NULL;
        assert_int_equal(pki_csr_create(key, "system:node:w1", "system:nodes", dns, ips, NULL, &pem), 0);
        assert_int_equal(crypto_base64_encode(pem, strlen(pem), &b64), 0);
        text = strprintf("{\"apiVersion\":\"certificates.k8s.io/v1\",\"kind\":\"CertificateSigningRequest\","
                         "\"metadata\":{\"name\":\"csr-1\",\"resourceVersion\":\"5\"},"
                         "\"spec\":{\"signerName\":\"%s\",\"request\":\"%s\",\"usages\":%s,"
                         "\"username\":\"system:bootstrap:abcdef\",\"groups\":" TOKEN_GROUPS "},"
                         "\"status\":{\"conditions\":[%s%s%s]%s}}",
                         signer, b64, usages, condition ? "{\"type\":\"" : "", strempty(condition),
                         condition ? "\",\"status\":\"True\"}" : "",
                         with_certificate ? ",\"certificate\":\"eA==\"" : "");
        json_t *o = json_loads(text, 0, NULL);
        assert_non_null(o);
        assert_int_equal(join_csr_from_json(o, &c, NULL), 0);
        json_decref(o);
        return c;
}

#define CLIENT_USAGES  "[\"digital signature\",\"key encipherment\",\"client auth\"]"
#define SERVING_USAGES "[\"digital signature\",\"key encipherment\",\"server auth\"]"

static void test_signable(void **state) {
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *k = NULL;
        char *why = NULL;
        assert_int_equal(pki_key_generate(PKI_KEY_ECDSA_P256, &k), 0);
        const struct {
                const char *signer, *usages, *condition;
                bool cert, signable;
                const char *why;
        } cases[] = {
                { JOIN_SIGNER_CLIENT, CLIENT_USAGES, "Approved", false, true, NULL },
                { JOIN_SIGNER_CLIENT, CLIENT_USAGES, NULL, false, false, NULL },
                { JOIN_SIGNER_CLIENT, CLIENT_USAGES, "Denied", false, false, NULL },
                { JOIN_SIGNER_CLIENT, CLIENT_USAGES, "Failed", false, false, NULL },
                { JOIN_SIGNER_CLIENT, CLIENT_USAGES, "Approved", true, false, NULL },
                { "kubernetes.io/kube-apiserver-client", CLIENT_USAGES, "Approved", false, false, NULL },
                /* approved by hand, but not a kubelet's: the signer refuses it too */
                { JOIN_SIGNER_CLIENT, SERVING_USAGES, "Approved", false, false, "not one of 'client auth'" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                JoinCsr *c =
                    csr(k, cases[i].signer, cases[i].usages, NULL, NULL, cases[i].condition, cases[i].cert);
                bool s = join_csr_signable(c, &why);
                if (s != cases[i].signable || (!why) != (!cases[i].why) ||
                    (why && !strstr(why, cases[i].why)))
                        fail_msg("case %zu: signable %d, why '%s'", i, s, strnull(why));
                free(why);
                why = NULL;
                join_csr_free(c);
        }
}

static bool has_eku(X509 *x, int nid) {
        EXTENDED_KEY_USAGE *eku = X509_get_ext_d2i(x, NID_ext_key_usage, NULL, NULL);
        bool found = false;
        for (int i = 0; eku && i < sk_ASN1_OBJECT_num(eku); i++)
                found = found || OBJ_obj2nid(sk_ASN1_OBJECT_value(eku, i)) == nid;
        EXTENDED_KEY_USAGE_free(eku);
        return found;
}

static X509 *issue(const JoinCsr *c, const Ca *ca, usec_t lifetime, usec_t at) {
        char *pem = NULL, *err = NULL;
        X509 *x = NULL;
        if (join_csr_issue(c, ca->cert, ca->key, lifetime, at, &pem, &err) < 0)
                fail_msg("issue: %s", strnull(err));
        assert_int_equal(pki_cert_from_pem(pem, strlen(pem), &x), 0);
        free(pem);
        return x;
}

static void test_issue_client(void **state) {
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *k = NULL;
        _cleanup_free_ char *cn = NULL, *s1 = NULL, *s2 = NULL;
        char **dns = NULL, **ips = NULL;
        usec_t nb, na;
        Ca ca = ca_new(0);
        assert_int_equal(pki_key_generate(PKI_KEY_ECDSA_P256, &k), 0);
        JoinCsr *c = csr(k, JOIN_SIGNER_CLIENT, CLIENT_USAGES, NULL, NULL, "Approved", false);
        X509 *x = issue(c, &ca, 2 * HOUR, T0), *y = issue(c, &ca, 2 * HOUR, T0);
        assert_int_equal(pki_cert_verify(x, ca.cert, T0 + HOUR, NULL), 0);
        assert_int_equal(pki_cert_subject_cn(x, &cn), 0);
        assert_string_equal(cn, "system:node:w1");
        X509_NAME *subject = X509_get_subject_name(x);
        int o = X509_NAME_get_index_by_NID(subject, NID_organizationName, -1);
        assert_true(o >= 0);
        assert_memory_equal(ASN1_STRING_get0_data(X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, o))),
                            "system:nodes", 12);
        assert_true(has_eku(x, NID_client_auth));
        assert_false(has_eku(x, NID_server_auth));
        assert_int_equal(pki_cert_sans(x, &dns, &ips), 0);
        assert_int_equal(strv_length(dns) + strv_length(ips), 0);
        strv_free(dns);
        strv_free(ips);
        assert_true(pki_cert_matches_key(x, k));
        assert_int_equal(pki_cert_validity(x, &nb, &na), 0);
        assert_int_equal(na, T0 + 2 * HOUR);
        assert_true(nb < T0);
        assert_int_equal(pki_cert_serial_text(x, &s1), 0);
        assert_int_equal(pki_cert_serial_text(y, &s2), 0);
        assert_string_not_equal(s1, s2);
        X509_free(x);
        X509_free(y);
        join_csr_free(c);
        ca_done(&ca);
}

static void test_issue_serving(void **state) {
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *k = NULL;
        char **dns = NULL, **ips = NULL;
        Ca ca = ca_new(0);
        assert_int_equal(pki_key_generate(PKI_KEY_RSA_2048, &k), 0);
        JoinCsr *c = csr(k, JOIN_SIGNER_SERVING, SERVING_USAGES, V("w1"), V("10.99.1.11", "fd00::11"),
                         "Approved", false);
        X509 *x = issue(c, &ca, HOUR, T0);
        assert_int_equal(pki_cert_verify(x, ca.cert, T0, NULL), 0);
        assert_true(has_eku(x, NID_server_auth));
        assert_false(has_eku(x, NID_client_auth));
        assert_int_equal(pki_cert_sans(x, &dns, &ips), 0);
        assert_int_equal(strv_length(dns), 1);
        assert_string_equal(dns[0], "w1");
        assert_int_equal(strv_length(ips), 2);
        assert_string_equal(ips[0], "10.99.1.11");
        assert_string_equal(ips[1], "fd00::11");
        strv_free(dns);
        strv_free(ips);
        X509_free(x);
        join_csr_free(c);
        ca_done(&ca);
}

static void test_issue_limits(void **state) {
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *k = NULL;
        char *pem = NULL, *err = NULL;
        usec_t nb, na;
        Ca ca = ca_new(10 * HOUR), other = ca_new(0);
        assert_int_equal(pki_key_generate(PKI_KEY_ECDSA_P256, &k), 0);
        JoinCsr *c = csr(k, JOIN_SIGNER_CLIENT, CLIENT_USAGES, NULL, NULL, "Approved", false);
        /* cut at the CA's end */
        X509 *x = issue(c, &ca, 8760 * HOUR, T0);
        assert_int_equal(pki_cert_validity(x, &nb, &na), 0);
        assert_int_equal(na, T0 + 10 * HOUR);
        X509_free(x);
        assert_int_equal(join_csr_issue(c, ca.cert, ca.key, 59 * USEC_PER_SEC, T0, &pem, &err), -EINVAL);
        assert_non_null(strstr(err, "under a minute"));
        free(err);
        err = NULL;
        assert_int_equal(join_csr_issue(c, ca.cert, ca.key, HOUR, T0 + 10 * HOUR, &pem, &err), -EKEYEXPIRED);
        assert_non_null(strstr(err, "the CA expires"));
        free(err);
        err = NULL;
        /* a CA key that is not the CA's */
        assert_int_equal(join_csr_issue(c, ca.cert, other.key, HOUR, T0, &pem, &err), -EINVAL);
        assert_non_null(strstr(err, "not the key of the CA"));
        free(err);
        err = NULL;
        join_csr_free(c);
        /* not approved */
        c = csr(k, JOIN_SIGNER_CLIENT, CLIENT_USAGES, NULL, NULL, NULL, false);
        assert_int_equal(join_csr_issue(c, ca.cert, ca.key, HOUR, T0, &pem, &err), -EINVAL);
        assert_non_null(strstr(err, "CertificateSigningRequest csr-1 is not to be signed"));
        free(err);
        err = NULL;
        join_csr_free(c);
        /* approved by hand with SANs on a client certificate: not signed, and why */
        c = csr(k, JOIN_SIGNER_CLIENT, CLIENT_USAGES, V("w1"), NULL, "Approved", false);
        assert_int_equal(join_csr_issue(c, ca.cert, ca.key, HOUR, T0, &pem, &err), -EINVAL);
        assert_non_null(strstr(err, "is not to be signed: a client certificate names no SAN"));
        free(err);
        join_csr_free(c);
        assert_null(pem);
        ca_done(&ca);
        ca_done(&other);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pin),           cmocka_unit_test(test_pin_of_keystore),
                cmocka_unit_test(test_signable),      cmocka_unit_test(test_issue_client),
                cmocka_unit_test(test_issue_serving), cmocka_unit_test(test_issue_limits),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
