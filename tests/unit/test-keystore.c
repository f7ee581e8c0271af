/* SPDX-License-Identifier: Apache-2.0 */
/* The keystore over a directory store in a temp dir: first creation, a second start reads the same CAs, a
 * corrupt object is an error naming it (and is left alone), private objects are 0600, and the CAs issue
 * leaves that verify. The race of first starts on both providers is tests/integration/test_keystore.py. */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "pki/keystore.h"
#include "pki/pki-cert.h"
#include "pki/pki-key.h"
#include "shared/openssl-util.h"
#include "store/store.h"
#include "unit-test.h"

#define T0 (1767225600ULL * USEC_PER_SEC) /* 2026-01-01 */

typedef struct Fixture {
        char root[64];
        char url[96];
        Store *store;
} Fixture;

static char *clusters[] = { (char *)"main", (char *)"events", NULL };

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
        return remove(p);
}

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(Fixture));
        char *err = NULL;
        snprintf(f->root, sizeof(f->root), "/tmp/pk-keystore-XXXXXX");
        assert_non_null(mkdtemp(f->root));
        snprintf(f->url, sizeof(f->url), "file://%s", f->root);
        assert_int_equal(store_open(f->url, &f->store, &err), 0);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;
        store_free(f->store);
        assert_int_equal(nftw(f->root, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
        free(f);
        return 0;
}

static KeystoreSpec spec_main_events(void) {
        KeystoreSpec spec = KEYSTORE_SPEC_DEFAULTS;
        spec.etcd_clusters = clusters;
        return spec;
}

static mode_t object_mode(const Fixture *f, const char *key) {
        char path[256];
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", f->root, key);
        assert_int_equal(lstat(path, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        return st.st_mode & 07777;
}

static void test_create_then_read(void **state) {
        Fixture *f = *state;
        KeystoreSpec spec = spec_main_events();
        _cleanup_(keystore_freep) Keystore *k = NULL, *again = NULL;
        _cleanup_free_ char *err = NULL;
        const char *names[] = { "kubernetes-ca",       "etcd-main-peer-ca",     "etcd-main-client-ca",
                                "etcd-events-peer-ca", "etcd-events-client-ca", "front-proxy-ca",
                                "service-account" };

        assert_int_equal(keystore_get_or_create(f->store, &spec, T0, &k, &err), 0);
        assert_null(err);
        assert_int_equal(keystore_size(k), ELEMENTSOF(names));
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                const KeystoreEntry *e = keystore_entry(k, i);
                assert_string_equal(e->name, names[i]);
                assert_true(e->created);
                assert_non_null(e->key);
                /* the key and the certificate are one object, never world-readable */
                assert_int_equal(object_mode(f, e->store_key), 0600);
                if (streq(e->name, KEYSTORE_SERVICE_ACCOUNT)) {
                        assert_null(e->cert);
                        assert_string_equal(e->store_key, "pki/keys/service-account.pem");
                        assert_int_equal(pki_key_type(e->key), PKI_KEY_RSA_2048);
                        continue;
                }
                _cleanup_free_ char *cn = NULL;
                usec_t nb, na;
                assert_non_null(e->cert);
                assert_int_equal(pki_key_type(e->key), PKI_KEY_ECDSA_P256);
                assert_true(pki_cert_matches_key(e->cert, e->key));
                assert_int_equal(pki_cert_subject_cn(e->cert, &cn), 0);
                assert_string_equal(cn, e->name);
                assert_int_equal(X509_check_ca(e->cert), 1);
                assert_int_equal(pki_cert_validity(e->cert, &nb, &na), 0);
                assert_int_equal(na - nb, PKI_CA_LIFETIME + PKI_CLOCK_SKEW);
        }
        assert_ptr_equal(keystore_etcd_peer_ca(k, "events"), keystore_find(k, "etcd-events-peer-ca"));
        assert_ptr_equal(keystore_etcd_client_ca(k, "main"), keystore_entry(k, 2));
        assert_null(keystore_etcd_peer_ca(k, "nope"));
        assert_null(keystore_find(k, "nope"));

        /* a second start reads what the first created: the same certificates and keys */
        assert_int_equal(keystore_get_or_create(f->store, &spec, T0 + 1000, &again, &err), 0);
        assert_int_equal(keystore_size(again), keystore_size(k));
        for (size_t i = 0; i < keystore_size(k); i++) {
                const KeystoreEntry *a = keystore_entry(k, i), *b = keystore_entry(again, i);
                char fa[KEYSTORE_FINGERPRINT_TEXT_MAX], fb[KEYSTORE_FINGERPRINT_TEXT_MAX];
                assert_false(b->created);
                assert_string_equal(keystore_fingerprint_text(a, fa), keystore_fingerprint_text(b, fb));
                assert_int_equal(strlen(fa), KEYSTORE_FINGERPRINT_TEXT_MAX - 1);
                assert_true(pki_key_public_equal(a->key, b->key));
        }

        /* the CAs issue leaves: an etcd peer certificate from the read copy verifies against the first */
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *leaf_key = NULL;
        _cleanup_(X509_freep) X509 *leaf = NULL;
        char *dns[] = { (char *)"etcd-a.internal.k8s.test", NULL };
        PkiCertRequest req = { .cn = "etcd-a", .dns = dns, .usage = PKI_USAGE_SERVER | PKI_USAGE_CLIENT };
        const KeystoreEntry *ca = keystore_etcd_peer_ca(again, "main");
        assert_int_equal(pki_key_generate(PKI_KEY_ECDSA_P256, &leaf_key), 0);
        assert_int_equal(pki_cert_issue(&req, leaf_key, ca->cert, ca->key, T0, &leaf, &err), 0);
        assert_int_equal(pki_cert_verify(leaf, keystore_etcd_peer_ca(k, "main")->cert, T0, NULL), 0);
        assert_int_not_equal(pki_cert_verify(leaf, keystore_etcd_peer_ca(k, "events")->cert, T0, NULL), 0);
}

/* The object at key is replaced by data; the keystore refuses it, naming it, and leaves it as it is. */
static void assert_corrupt(Fixture *f, const char *key, const char *data, size_t len) {
        KeystoreSpec spec = spec_main_events();
        _cleanup_(keystore_freep) Keystore *k = NULL;
        _cleanup_free_ char *err = NULL, *after = NULL;
        size_t after_len = 0;

        assert_int_equal(store_put(f->store, key, data, len, STORE_PRIVATE, &err), 0);
        assert_int_equal(keystore_get_or_create(f->store, &spec, T0, &k, &err), PK_EMALFORMED);
        assert_null(k);
        assert_non_null(err);
        assert_non_null(strstr(err, key));
        assert_non_null(strstr(err, f->url));
        assert_non_null(strstr(err, "corrupt"));
        assert_int_equal(store_get(f->store, key, &after, &after_len, NULL), 0);
        assert_int_equal(after_len, len);
        assert_memory_equal(after, data, len);
}

static void test_corrupt_is_an_error(void **state) {
        Fixture *f = *state;
        KeystoreSpec spec = spec_main_events();
        _cleanup_(keystore_freep) Keystore *k = NULL;
        _cleanup_free_ char *err = NULL, *fp_pem = NULL, *cl_pem = NULL, *mixed = NULL;
        size_t fp_len = 0, cl_len = 0;

        assert_int_equal(keystore_get_or_create(f->store, &spec, T0, &k, &err), 0);
        assert_int_equal(store_get(f->store, "pki/ca/front-proxy-ca.pem", &fp_pem, &fp_len, NULL), 0);
        assert_int_equal(store_get(f->store, "pki/ca/kubernetes-ca.pem", &cl_pem, &cl_len, NULL), 0);

        assert_corrupt(f, "pki/ca/front-proxy-ca.pem", "garbage", 7);
        assert_corrupt(f, "pki/ca/front-proxy-ca.pem", "", 0);
        /* the key alone: a half pair */
        const char *cert_at = strstr(fp_pem, "-----BEGIN CERTIFICATE-----");
        assert_non_null(cert_at);
        assert_corrupt(f, "pki/ca/front-proxy-ca.pem", fp_pem, (size_t)(cert_at - fp_pem));
        /* the certificate alone */
        assert_corrupt(f, "pki/ca/front-proxy-ca.pem", cert_at, strlen(cert_at));
        /* the cluster CA's key with the front-proxy CA's certificate */
        const char *cl_cert = strstr(cl_pem, "-----BEGIN CERTIFICATE-----");
        assert_non_null(cl_cert);
        mixed = calloc(1, fp_len + cl_len + 1);
        memcpy(mixed, cl_pem, (size_t)(cl_cert - cl_pem));
        memcpy(mixed + (cl_cert - cl_pem), cert_at, strlen(cert_at));
        assert_corrupt(f, "pki/ca/front-proxy-ca.pem", mixed, strlen(mixed));
        /* another CA's whole object: the CN is not this CA's */
        assert_corrupt(f, "pki/ca/front-proxy-ca.pem", cl_pem, cl_len);
        assert_int_equal(
            store_put(f->store, "pki/ca/front-proxy-ca.pem", fp_pem, fp_len, STORE_PRIVATE, NULL), 0);
        /* a certificate in the service-account key's object */
        assert_corrupt(f, "pki/keys/service-account.pem", fp_pem, fp_len);
}

static void fingerprint_of(const Keystore *k, const char *name,
                           uint8_t ret[static KEYSTORE_FINGERPRINT_SIZE]) {
        const KeystoreEntry *e = keystore_find(k, name);
        assert_non_null(e);
        assert_non_null(e->key);
        memcpy(ret, e->fingerprint, KEYSTORE_FINGERPRINT_SIZE);
}

/* The daemon's decode cache: an unchanged object is neither read nor decoded again; a replaced one
 * (another CA) is read and served; a deleted one is absent; a corrupted one is an error, whatever was
 * cached for that key before. */
static void test_read_cached(void **state) {
        Fixture *f = *state;
        KeystoreSpec spec = spec_main_events();
        _cleanup_(keystore_cache_freep) KeystoreCache *c = NULL;
        _cleanup_(keystore_freep) Keystore *k = NULL, *k1 = NULL, *k2 = NULL, *k3 = NULL, *other = NULL;
        _cleanup_free_ char *err = NULL, *pem = NULL, *other_pem = NULL;
        size_t len = 0, other_len = 0;
        unsigned hits, misses;
        uint8_t fp[KEYSTORE_FINGERPRINT_SIZE], fp_other[KEYSTORE_FINGERPRINT_SIZE];

        assert_int_equal(keystore_get_or_create(f->store, &spec, T0, &k, &err), 0);
        size_t n = keystore_size(k);
        assert_int_equal(keystore_cache_new(&c), 0);
        assert_int_equal(keystore_read_cached(f->store, &spec, c, &k1, &err), 0);
        assert_int_equal(keystore_read_cached(f->store, &spec, c, &k2, &err), 0);
        keystore_cache_stats(c, &hits, &misses);
        assert_int_equal(misses, n);
        assert_int_equal(hits, n);
        assert_int_equal(keystore_missing(k2), 0);
        fingerprint_of(k2, KEYSTORE_CLUSTER_CA, fp);
        fingerprint_of(k, KEYSTORE_CLUSTER_CA, fp_other);
        assert_memory_equal(fp, fp_other, sizeof(fp));

        /* the cluster CA replaced by another store's: decoded anew, the new CA served */
        char root2[] = "/tmp/pk-keystore-XXXXXX", url2[64];
        assert_non_null(mkdtemp(root2));
        snprintf(url2, sizeof(url2), "file://%s", root2);
        _cleanup_(store_freep) Store *s2 = NULL;
        assert_int_equal(store_open(url2, &s2, &err), 0);
        assert_int_equal(keystore_get_or_create(s2, &spec, T0, &other, &err), 0);
        assert_int_equal(store_get(s2, "pki/ca/kubernetes-ca.pem", &other_pem, &other_len, NULL), 0);
        assert_int_equal(nftw(root2, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
        assert_int_equal(store_get(f->store, "pki/ca/kubernetes-ca.pem", &pem, &len, NULL), 0);
        assert_int_equal(
            store_put(f->store, "pki/ca/kubernetes-ca.pem", other_pem, other_len, STORE_PRIVATE, NULL), 0);
        assert_int_equal(keystore_read_cached(f->store, &spec, c, &k3, &err), 0);
        keystore_cache_stats(c, &hits, &misses);
        assert_int_equal(misses, n + 1);
        assert_int_equal(hits, 2 * n - 1);
        fingerprint_of(k3, KEYSTORE_CLUSTER_CA, fp);
        fingerprint_of(other, KEYSTORE_CLUSTER_CA, fp_other);
        assert_memory_equal(fp, fp_other, sizeof(fp));

        /* deleted: absent, not the cached CA */
        _cleanup_(keystore_freep) Keystore *k4 = NULL;
        assert_int_equal(store_delete(f->store, "pki/ca/front-proxy-ca.pem", NULL), 0);
        assert_int_equal(keystore_read_cached(f->store, &spec, c, &k4, &err), 0);
        assert_int_equal(keystore_missing(k4), 1);
        assert_null(keystore_find(k4, KEYSTORE_FRONT_PROXY_CA)->key);

        /* corrupted: an error naming the object, not the cached CA */
        Keystore *bad = NULL;
        assert_int_equal(store_put(f->store, "pki/ca/kubernetes-ca.pem", pem, len / 2, STORE_PRIVATE, NULL),
                         0);
        free(err), err = NULL;
        assert_int_equal(keystore_read_cached(f->store, &spec, c, &bad, &err), PK_EMALFORMED);
        assert_null(bad);
        assert_non_null(strstr(strnull(err), "pki/ca/kubernetes-ca.pem"));
        erase_and_free(pem, len), pem = NULL;
        erase_and_free(other_pem, other_len), other_pem = NULL;
}

static void test_bad_spec(void **state) {
        Fixture *f = *state;
        _cleanup_(keystore_freep) Keystore *k = NULL;
        char *bad[] = { (char *)"Main", NULL }, *dup[] = { (char *)"main", (char *)"main", NULL };
        char *err = NULL;
        KeystoreSpec spec = KEYSTORE_SPEC_DEFAULTS;

        spec.etcd_clusters = bad;
        assert_int_equal(keystore_get_or_create(f->store, &spec, T0, &k, &err), -EINVAL);
        assert_non_null(strstr(err, "'Main'"));
        free(err);
        err = NULL;
        spec.etcd_clusters = dup;
        assert_int_equal(keystore_get_or_create(f->store, &spec, T0, &k, &err), -EINVAL);
        assert_non_null(strstr(err, "'main'"));
        free(err);
        err = NULL;
        spec.etcd_clusters = NULL;
        spec.sa_key_type = _PKI_KEY_TYPE_INVALID;
        assert_int_equal(keystore_get_or_create(f->store, &spec, T0, &k, &err), -EINVAL);
        free(err);
        assert_null(k);

        assert_true(keystore_etcd_cluster_valid("events"));
        assert_true(keystore_etcd_cluster_valid("a-1"));
        assert_false(keystore_etcd_cluster_valid(""));
        assert_false(keystore_etcd_cluster_valid("-a"));
        assert_false(keystore_etcd_cluster_valid("a.b"));
        assert_false(keystore_etcd_cluster_valid("a/b"));
        assert_false(keystore_etcd_cluster_valid("abcdefghijklmnopqrstuvwxyz0123456"));
        /* nothing was written for a refused spec */
        char **keys = NULL;
        assert_int_equal(store_list(f->store, "", &keys, NULL), 0);
        assert_int_equal(strv_length(keys), 0);
        strv_free(keys);
}

/* Without etcd clusters: the cluster CA, the front-proxy CA and the service-account key; an ECDSA
 * service-account key when the spec asks for one. */
static void test_no_etcd_ecdsa_sa(void **state) {
        Fixture *f = *state;
        _cleanup_(keystore_freep) Keystore *k = NULL;
        KeystoreSpec spec = KEYSTORE_SPEC_DEFAULTS;
        spec.sa_key_type = PKI_KEY_ECDSA_P256;
        assert_int_equal(keystore_get_or_create(f->store, &spec, T0, &k, NULL), 0);
        assert_int_equal(keystore_size(k), 3);
        assert_int_equal(pki_key_type(keystore_find(k, KEYSTORE_SERVICE_ACCOUNT)->key), PKI_KEY_ECDSA_P256);
        assert_non_null(keystore_find(k, KEYSTORE_FRONT_PROXY_CA));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_create_then_read, setup, teardown),
                cmocka_unit_test_setup_teardown(test_corrupt_is_an_error, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bad_spec, setup, teardown),
                cmocka_unit_test_setup_teardown(test_read_cached, setup, teardown),
                cmocka_unit_test_setup_teardown(test_no_etcd_ecdsa_sa, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
