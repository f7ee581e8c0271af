/* SPDX-License-Identifier: Apache-2.0 */
/* The keystore in the state store (keystore.h, docs/pki.md): one object per CA (key PEM, then certificate
 * PEM) and one for the service-account key, created with put-if-absent so that the pair is never seen
 * half-written and exactly one of N concurrent first starts creates it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509v3.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "pki/keystore.h"
#include "pki/pki-cert.h"
#include "pki/pki-key.h"
#include "shared/openssl-util.h"
#include "store/store.h"

struct Keystore {
        KeystoreEntry *entries;
        size_t n;
};

static void keystore_entry_done(KeystoreEntry *e) {
        free(e->name);
        e->name = NULL;
        free(e->store_key);
        e->store_key = NULL;
        X509_free(e->cert);
        e->cert = NULL;
        EVP_PKEY_free(e->key); /* OpenSSL clears the private key's numbers as it frees them */
        e->key = NULL;
        free(e->store_warning);
        e->store_warning = NULL;
}

Keystore *keystore_free(Keystore *k) {
        if (!k)
                return NULL;
        for (size_t i = 0; i < k->n; i++)
                keystore_entry_done(&k->entries[i]);
        free(k->entries);
        free(k);
        return NULL;
}

bool keystore_etcd_cluster_valid(const char *name) {
        if (!name || !name[0] || strlen(name) > KEYSTORE_ETCD_CLUSTER_MAX || name[0] == '-')
                return false;
        for (const char *p = name; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-'))
                        return false;
        return true;
}

static bool key_type_valid(PkiKeyType t) {
        return t >= 0 && t < _PKI_KEY_TYPE_MAX;
}

static int spec_check(const KeystoreSpec *spec, char **ret_error) {
        size_t n = strv_length(spec->etcd_clusters);
        if (n > KEYSTORE_ETCD_CLUSTERS_MAX)
                return error_setf(ret_error, -EINVAL, "keystore: %zu etcd clusters, at most %d", n,
                                  KEYSTORE_ETCD_CLUSTERS_MAX);
        for (size_t i = 0; i < n; i++) {
                const char *c = spec->etcd_clusters[i];
                if (!keystore_etcd_cluster_valid(c))
                        return error_setf(
                            ret_error, -EINVAL,
                            "keystore: invalid etcd cluster '%s' (expected [a-z0-9][a-z0-9-]*, "
                            "at most %d characters)",
                            c, KEYSTORE_ETCD_CLUSTER_MAX);
                for (size_t j = 0; j < i; j++)
                        if (streq(spec->etcd_clusters[j], c))
                                return error_setf(ret_error, -EINVAL,
                                                  "keystore: etcd cluster '%s' given twice", c);
        }
        if (!key_type_valid(spec->ca_key_type) || !key_type_valid(spec->sa_key_type))
                return error_setf(ret_error, -EINVAL, "keystore: invalid key type");
        return 0;
}

static int entry_add(Keystore *k, size_t cap, const char *name, bool is_ca) {
        if (k->n >= cap)
                return -EINVAL;
        KeystoreEntry *e = &k->entries[k->n];
        e->name = strdup(name);
        e->store_key = strjoin(is_ca ? "pki/ca/" : "pki/keys/", name, ".pem");
        k->n++; /* counted even when half-made, so keystore_free() releases it */
        if (!e->name || !e->store_key)
                return -ENOMEM;
        return 0;
}

/* The entries of spec, in the documented order, without keys or certificates yet. */
static int keystore_new(const KeystoreSpec *spec, Keystore **ret) {
        size_t n_etcd = strv_length(spec->etcd_clusters), cap = 3 + 2 * n_etcd;
        _cleanup_(keystore_freep) Keystore *k = calloc(1, sizeof(Keystore));
        if (!k)
                return -ENOMEM;
        k->entries = calloc(cap, sizeof(KeystoreEntry));
        if (!k->entries)
                return -ENOMEM;
        int r = entry_add(k, cap, KEYSTORE_CLUSTER_CA, true);
        for (size_t i = 0; r >= 0 && i < n_etcd; i++) {
                _cleanup_free_ char *peer = keystore_etcd_peer_ca_name(spec->etcd_clusters[i]),
                                    *client = keystore_etcd_client_ca_name(spec->etcd_clusters[i]);
                if (!peer || !client)
                        return -ENOMEM;
                r = entry_add(k, cap, peer, true);
                if (r >= 0)
                        r = entry_add(k, cap, client, true);
        }
        if (r >= 0)
                r = entry_add(k, cap, KEYSTORE_FRONT_PROXY_CA, true);
        if (r >= 0)
                r = entry_add(k, cap, KEYSTORE_SERVICE_ACCOUNT, false);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(k);
        return 0;
}

static int fingerprint_compute(KeystoreEntry *e) {
        unsigned n = 0;
        if (e->cert) {
                if (X509_digest(e->cert, EVP_sha256(), e->fingerprint, &n) != 1 ||
                    n != KEYSTORE_FINGERPRINT_SIZE) {
                        ERR_clear_error();
                        return -EIO;
                }
                return 0;
        }
        unsigned char *der = NULL;
        int len = i2d_PUBKEY(e->key, &der);
        if (len <= 0) {
                ERR_clear_error();
                return -EIO;
        }
        int ok = EVP_Digest(der, (size_t)len, e->fingerprint, &n, EVP_sha256(), NULL);
        OPENSSL_free(der);
        if (ok != 1 || n != KEYSTORE_FINGERPRINT_SIZE) {
                ERR_clear_error();
                return -EIO;
        }
        return 0;
}

/* Parses a stored object into e (key and, for a CA, certificate) and checks it: exactly one key block and
 * (CA) one certificate block after it, the key is the certificate's, the certificate is a self-signed CA
 * called e->name. On failure *ret_why says what is wrong (static text). */
static int entry_parse(KeystoreEntry *e, bool is_ca, const char *data, size_t len, const char **ret_why) {
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *key = NULL;
        _cleanup_(X509_freep) X509 *cert = NULL;
        const char *c = data ? memmem(data, len, PKI_PEM_BEGIN_CERT, strlen(PKI_PEM_BEGIN_CERT)) : NULL;
        size_t key_len = c ? (size_t)(c - data) : len;

        if (!data || len == 0)
                return *ret_why = "the object is empty", PK_EMALFORMED;
        if (is_ca && !c)
                return *ret_why = "no certificate after the key", PK_EMALFORMED;
        if (!is_ca && c)
                return *ret_why = "a certificate where only a key belongs", PK_EMALFORMED;
        if (pki_pem_count(data, key_len, PKI_PEM_BEGIN) != 1 || pki_key_from_pem(data, key_len, &key) < 0)
                return *ret_why = "the private key does not parse (expected one unencrypted PEM key first)",
                       PK_EMALFORMED;
        if (is_ca) {
                _cleanup_free_ char *cn = NULL;
                size_t cert_len = len - key_len;
                if (pki_pem_count(c, cert_len, PKI_PEM_BEGIN) != 1 ||
                    pki_cert_from_pem(c, cert_len, &cert) < 0)
                        return *ret_why = "the certificate does not parse", PK_EMALFORMED;
                if (!pki_cert_matches_key(cert, key))
                        return *ret_why = "the key is not the certificate's", PK_EMALFORMED;
                int ca = X509_check_ca(cert);
                ERR_clear_error();
                if (ca != 1)
                        return *ret_why = "the certificate is not a CA", PK_EMALFORMED;
                if (pki_cert_subject_cn(cert, &cn) < 0 || !streq(cn, e->name))
                        return *ret_why = "the certificate's CN is not the CA's name", PK_EMALFORMED;
                if (pki_cert_verify(cert, cert, 0, NULL) < 0)
                        return *ret_why = "the certificate is not self-signed", PK_EMALFORMED;
        }
        e->key = TAKE_PTR(key);
        e->cert = TAKE_PTR(cert);
        return 0;
}

/* ---- the decode cache (keystore.h): what an object decoded to, by the object's version ---- */

#define KEYSTORE_PREFIX "pki/" /* every entry's store key starts with it: one listing shows them all */

typedef struct KeystoreCacheEntry {
        char *store_key;
        char *version; /* store_list_versions()' */
        EVP_PKEY *key;
        X509 *cert;
} KeystoreCacheEntry;

struct KeystoreCache {
        KeystoreCacheEntry *entries;
        size_t n;
        unsigned hits, misses;
};

#define KEYSTORE_CACHE_MAX 64 /* more entries than a keystore has */

int keystore_cache_new(KeystoreCache **ret) {
        KeystoreCache *c = new0(KeystoreCache, 1);
        if (!c)
                return -ENOMEM;
        *ret = c;
        return 0;
}

KeystoreCache *keystore_cache_free(KeystoreCache *c) {
        if (!c)
                return NULL;
        for (size_t i = 0; i < c->n; i++) {
                free(c->entries[i].store_key);
                free(c->entries[i].version);
                EVP_PKEY_free(c->entries[i].key);
                X509_free(c->entries[i].cert);
        }
        free(c->entries);
        free(c);
        return NULL;
}

void keystore_cache_stats(const KeystoreCache *c, unsigned *ret_hits, unsigned *ret_misses) {
        *ret_hits = c ? c->hits : 0;
        *ret_misses = c ? c->misses : 0;
}

static KeystoreCacheEntry *cache_find(KeystoreCache *c, const char *store_key) {
        for (size_t i = 0; c && i < c->n; i++)
                if (streq(c->entries[i].store_key, store_key))
                        return &c->entries[i];
        return NULL;
}

/* e's key and certificate, taken from the cache when the object's version is the one they were decoded
 * from: 1 (e filled), 0 (not cached). */
static int cache_take(KeystoreCache *c, KeystoreEntry *e, const char *version) {
        KeystoreCacheEntry *ce = cache_find(c, e->store_key);
        if (!ce || isempty(version) || !streq(ce->version, version))
                return 0; /* an empty version is unknown: read again */
        if (EVP_PKEY_up_ref(ce->key) != 1 || (ce->cert && X509_up_ref(ce->cert) != 1))
                return -ENOMEM;
        e->key = ce->key;
        e->cert = ce->cert;
        return 1;
}

/* Keeps what e decoded to; nothing when the cache is full (not an error). */
static int cache_put(KeystoreCache *c, const KeystoreEntry *e, const char *version) {
        KeystoreCacheEntry *ce = cache_find(c, e->store_key);
        if (!ce) {
                if (c->n >= KEYSTORE_CACHE_MAX)
                        return 0;
                _cleanup_free_ char *k = strdup(e->store_key);
                if (!k)
                        return -ENOMEM;
                KeystoreCacheEntry *n = realloc(c->entries, (c->n + 1) * sizeof(*n));
                if (!n)
                        return -ENOMEM;
                c->entries = n;
                ce = &c->entries[c->n++];
                *ce = (KeystoreCacheEntry){ .store_key = TAKE_PTR(k) };
        }
        char *v = strdup(version);
        if (!v)
                return -ENOMEM;
        if (EVP_PKEY_up_ref(e->key) != 1 || (e->cert && X509_up_ref(e->cert) != 1)) {
                free(v);
                return -ENOMEM;
        }
        EVP_PKEY_free(ce->key);
        X509_free(ce->cert);
        free(ce->version);
        ce->key = e->key;
        ce->cert = e->cert;
        ce->version = v;
        return 0;
}

/* Reads e from the store: 0, -ENOENT (absent, no message), or another error with a message. */
static int entry_read(Store *s, KeystoreEntry *e, bool is_ca, char **ret_error) {
        _cleanup_free_ char *err = NULL;
        char *data = NULL;
        size_t len = 0;
        const char *why = NULL;
        int r = store_get(s, e->store_key, &data, &len, &err);
        if (r == -ENOENT)
                return -ENOENT;
        if (r < 0) {
                if (ret_error)
                        *ret_error = TAKE_PTR(err);
                return r;
        }
        r = entry_parse(e, is_ca, data, len, &why);
        erase_and_free(data, len);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return error_setf(
                    ret_error, PK_EMALFORMED,
                    "keystore in '%s': '%s' (%s) is corrupt: %s; not replaced: restore it from a "
                    "backup or delete it to create a new one",
                    store_url(s), e->store_key, e->name, strnull(why));
        return fingerprint_compute(e);
}

/* entry_read() through the cache, with the listing of KEYSTORE_PREFIX: an object the listing does not show
 * is absent (-ENOENT); one whose version is the cached one is not read; others are read, decoded, kept. */
static int entry_read_listed(Store *s, KeystoreCache *c, char **keys, char **versions, KeystoreEntry *e,
                             bool is_ca, char **ret_error) {
        ssize_t i = -1;
        for (size_t k = 0; keys && keys[k]; k++)
                if (streq(keys[k], e->store_key))
                        i = (ssize_t)k;
        if (i < 0)
                return -ENOENT;
        int r = cache_take(c, e, versions[i]);
        if (r < 0)
                return r;
        if (r > 0) {
                c->hits++;
                return fingerprint_compute(e);
        }
        c->misses++;
        r = entry_read(s, e, is_ca, ret_error);
        if (r >= 0)
                r = cache_put(c, e, versions[i]);
        return r;
}

/* A new key (and CA certificate) for e, as the object to store: the key's PEM, then the certificate's. */
static int entry_generate(KeystoreEntry *e, bool is_ca, const KeystoreSpec *spec, usec_t at,
                          EVP_PKEY **ret_key, X509 **ret_cert, char **ret_pem, size_t *ret_len) {
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *key = NULL;
        _cleanup_(X509_freep) X509 *cert = NULL;
        _cleanup_free_ char *cert_pem = NULL;
        char *key_pem = NULL;
        size_t key_len = 0, cert_len = 0;

        int r = pki_key_generate(is_ca ? spec->ca_key_type : spec->sa_key_type, &key);
        if (r >= 0 && is_ca)
                r = pki_ca_create(e->name, key, spec->ca_lifetime, at, &cert);
        if (r >= 0 && is_ca)
                r = pki_cert_to_pem(cert, &cert_pem, &cert_len);
        if (r < 0)
                return r;
        r = pki_key_to_pem(key, &key_pem, &key_len);
        if (r < 0)
                return r;
        char *pem = malloc(key_len + cert_len + 1);
        if (!pem) {
                erase_and_free(key_pem, key_len);
                return -ENOMEM;
        }
        memcpy(pem, key_pem, key_len);
        if (cert_len > 0)
                memcpy(pem + key_len, cert_pem, cert_len);
        pem[key_len + cert_len] = 0;
        erase_and_free(key_pem, key_len);
        *ret_key = TAKE_PTR(key);
        *ret_cert = TAKE_PTR(cert);
        *ret_pem = pem;
        *ret_len = key_len + cert_len;
        return 0;
}

static int entry_get_or_create(Store *s, KeystoreEntry *e, const KeystoreSpec *spec, usec_t at,
                               char **ret_error) {
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *key = NULL;
        _cleanup_(X509_freep) X509 *cert = NULL;
        char *pem = NULL;
        size_t len = 0;
        bool is_ca = !streq(e->name, KEYSTORE_SERVICE_ACCOUNT);

        int r = entry_read(s, e, is_ca, ret_error);
        if (r != -ENOENT)
                return r;
        r = entry_generate(e, is_ca, spec, at, &key, &cert, &pem, &len);
        if (r < 0)
                return error_setf(ret_error, r, "keystore in '%s': failed to create '%s': %s", store_url(s),
                                  e->name, pk_strerror(r));
        _cleanup_free_ char *err = NULL;
        r = store_put_if_absent(s, e->store_key, pem, len, STORE_PRIVATE, &err);
        erase_and_free(pem, len + 1);
        if (r == -EEXIST) {
                /* Another master created it between our get and our put: its object is the one. With a
                 * message, the store answered "created" but kept another writer's object: that one too,
                 * and the caller says so. */
                r = entry_read(s, e, is_ca, ret_error);
                if (r == -ENOENT) /* the winner's object vanished: deleted by hand meanwhile */
                        return error_setf(ret_error, -ENOENT,
                                          "keystore in '%s': '%s' was created and removed "
                                          "while being read",
                                          store_url(s), e->store_key);
                if (r >= 0)
                        e->store_warning = TAKE_PTR(err);
                return r;
        }
        if (r < 0) {
                if (ret_error)
                        free_and_replace(*ret_error, err);
                return r;
        }
        e->key = TAKE_PTR(key);
        e->cert = TAKE_PTR(cert);
        e->created = true;
        return fingerprint_compute(e);
}

/* Every entry of spec, read; absent ones created (create) or left without a key. */
static int keystore_load(Store *s, const KeystoreSpec *spec, KeystoreCache *cache, usec_t at, bool create,
                         Keystore **ret, char **ret_error) {
        _cleanup_(keystore_freep) Keystore *k = NULL;
        int r;

        if (!s || !spec || !ret)
                return -EINVAL;
        r = spec_check(spec, ret_error);
        if (r < 0)
                return r;
        r = keystore_new(spec, &k);
        if (r < 0)
                return r;
        _cleanup_strv_free_ char **keys = NULL, **versions = NULL;
        if (cache) { /* one request for every entry, instead of one each */
                r = store_list_versions(s, KEYSTORE_PREFIX, &keys, &versions, ret_error);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < k->n; i++) {
                KeystoreEntry *e = &k->entries[i];
                if (create)
                        r = entry_get_or_create(s, e, spec, at, ret_error);
                else {
                        bool is_ca = !streq(e->name, KEYSTORE_SERVICE_ACCOUNT);
                        r = cache ? entry_read_listed(s, cache, keys, versions, e, is_ca, ret_error)
                                  : entry_read(s, e, is_ca, ret_error);
                        r = r == -ENOENT ? 0 : r;
                }
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(k);
        return 0;
}

int keystore_get_or_create(Store *s, const KeystoreSpec *spec, usec_t at, Keystore **ret, char **ret_error) {
        return keystore_load(s, spec, NULL, at, true, ret, ret_error);
}

int keystore_read(Store *s, const KeystoreSpec *spec, Keystore **ret, char **ret_error) {
        return keystore_load(s, spec, NULL, 0, false, ret, ret_error);
}

int keystore_read_cached(Store *s, const KeystoreSpec *spec, KeystoreCache *cache, Keystore **ret,
                         char **ret_error) {
        return keystore_load(s, spec, cache, 0, false, ret, ret_error);
}

int keystore_read_cluster_ca(Store *s, X509 **ret_ca, EVP_PKEY **ret_key, char **ret_error) {
        _cleanup_(keystore_freep) Keystore *k = calloc(1, sizeof(Keystore));
        if (!s || !ret_ca)
                return -EINVAL;
        if (!k || !(k->entries = calloc(1, sizeof(KeystoreEntry))))
                return -ENOMEM;
        int r = entry_add(k, 1, KEYSTORE_CLUSTER_CA, true);
        if (r < 0)
                return r;
        KeystoreEntry *e = &k->entries[0];
        r = entry_read(s, e, true, ret_error);
        if (r == -ENOENT)
                return error_setf(ret_error, -ENOENT, "the state store '%s' holds no cluster CA ('%s') yet",
                                  store_url(s), e->store_key);
        if (r < 0)
                return r;
        *ret_ca = TAKE_PTR(e->cert);
        if (ret_key)
                *ret_key = TAKE_PTR(e->key);
        return 0; /* the key not asked for is freed with k */
}

size_t keystore_missing(const Keystore *k) {
        size_t n = 0;
        for (size_t i = 0; k && i < k->n; i++)
                n += !k->entries[i].key;
        return n;
}

size_t keystore_size(const Keystore *k) {
        return k ? k->n : 0;
}

const KeystoreEntry *keystore_entry(const Keystore *k, size_t i) {
        return k && i < k->n ? &k->entries[i] : NULL;
}

const KeystoreEntry *keystore_find(const Keystore *k, const char *name) {
        for (size_t i = 0; k && name && i < k->n; i++)
                if (streq(k->entries[i].name, name))
                        return &k->entries[i];
        return NULL;
}

char *keystore_etcd_peer_ca_name(const char *cluster) {
        return strjoin("etcd-", strnull(cluster), "-peer-ca");
}

char *keystore_etcd_client_ca_name(const char *cluster) {
        return strjoin("etcd-", strnull(cluster), "-client-ca");
}

const KeystoreEntry *keystore_etcd_peer_ca(const Keystore *k, const char *cluster) {
        _cleanup_free_ char *name = keystore_etcd_peer_ca_name(cluster);
        return name ? keystore_find(k, name) : NULL;
}

const KeystoreEntry *keystore_etcd_client_ca(const Keystore *k, const char *cluster) {
        _cleanup_free_ char *name = keystore_etcd_client_ca_name(cluster);
        return name ? keystore_find(k, name) : NULL;
}

char *keystore_fingerprint_text(const KeystoreEntry *e, char buf[static KEYSTORE_FINGERPRINT_TEXT_MAX]) {
        static const char hex[] = "0123456789ABCDEF";
        for (size_t i = 0; i < KEYSTORE_FINGERPRINT_SIZE; i++) {
                buf[3 * i] = hex[e->fingerprint[i] >> 4];
                buf[3 * i + 1] = hex[e->fingerprint[i] & 15];
                buf[3 * i + 2] = i + 1 < KEYSTORE_FINGERPRINT_SIZE ? ':' : 0;
        }
        return buf;
}
