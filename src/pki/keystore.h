/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The keystore: the cluster's CAs and the service-account key pair, kept in the state store and created
 * once, by whichever master needs them first; every other master reads the ones that won (docs/pki.md, "The
 * keystore in the state store").
 *
 * Each entry is ONE store object holding the private key's PEM and then, for a CA, the certificate's PEM,
 * written with store_put_if_absent() and STORE_PRIVATE: the pair appears complete or not at all, and of N
 * masters creating it at once exactly one wins; the others read the winner's object. An object that does
 * not parse, or whose key is not its certificate's, is an error naming it, never replaced.
 *
 *   pki/ca/kubernetes-ca.pem            the cluster CA
 *   pki/ca/etcd-<cluster>-peer-ca.pem   per etcd cluster (main, events): the peer CA
 *   pki/ca/etcd-<cluster>-client-ca.pem   and the client CA
 *   pki/ca/front-proxy-ca.pem           the front-proxy (aggregation layer) CA
 *   pki/keys/service-account.pem        the service-account signing key (no certificate)
 *
 * Library code: returns errors with a message (caller frees), never logs. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "pki/pki-key.h"
#include "store/store.h"

#define KEYSTORE_CLUSTER_CA        "kubernetes-ca"
#define KEYSTORE_FRONT_PROXY_CA    "front-proxy-ca"
#define KEYSTORE_SERVICE_ACCOUNT   "service-account"
#define KEYSTORE_ETCD_CLUSTERS_MAX 8
#define KEYSTORE_ETCD_CLUSTER_MAX  32 /* characters of an etcd cluster's name */
#define KEYSTORE_FINGERPRINT_SIZE  32 /* SHA-256 */
/* "AB:CD:...", as `openssl x509 -fingerprint -sha256` prints it, with its NUL */
#define KEYSTORE_FINGERPRINT_TEXT_MAX (KEYSTORE_FINGERPRINT_SIZE * 3)

typedef struct KeystoreSpec {
        char *const *etcd_clusters; /* NULL-terminated, may be NULL: "main", "events"; [a-z0-9-], 1-32 */
        PkiKeyType ca_key_type;     /* the CAs' keys */
        PkiKeyType sa_key_type;     /* the service-account key: Kubernetes requires RSA by default */
        usec_t ca_lifetime;         /* 0: PKI_CA_LIFETIME (10 years) */
} KeystoreSpec;

/* The defaults: ECDSA P-256 CAs for 10 years, an RSA 2048 service-account key. */
#define KEYSTORE_SPEC_DEFAULTS \
        ((KeystoreSpec){ .ca_key_type = PKI_KEY_ECDSA_P256, .sa_key_type = PKI_KEY_RSA_2048 })

typedef struct KeystoreEntry {
        char *name;      /* "kubernetes-ca", "etcd-main-peer-ca", ..., "service-account" */
        char *store_key; /* "pki/ca/kubernetes-ca.pem" */
        X509 *cert;      /* the CA's certificate; NULL for the service-account key */
        EVP_PKEY *key;   /* the private key */
        bool created;    /* this process won put-if-absent; false: read the stored one */
        /* set when the store answered "created" but kept another writer's object, which this entry is:
         * the store did not honour create-if-absent (its message, for the caller to print) */
        char *store_warning;
        /* SHA-256 of the certificate's DER (of the public key's SubjectPublicKeyInfo DER for the
         * service-account key) */
        uint8_t fingerprint[KEYSTORE_FINGERPRINT_SIZE];
} KeystoreEntry;

typedef struct Keystore Keystore;

/* Reads every entry of spec from the store and creates (key, self-signed certificate, put-if-absent) the
 * ones that are absent; on -EEXIST reads the winner's. A corrupt object is PK_EMALFORMED with a message
 * naming the store and the key; -EINVAL with a message for a bad spec. "at" is now (the CAs' notBefore).
 * Caller frees *ret and *ret_error. */
int keystore_get_or_create(Store *s, const KeystoreSpec *spec, usec_t at, Keystore **ret, char **ret_error);

/* Reads the entries of spec and creates nothing: an absent entry keeps key and cert NULL (a pass observes
 * with this and creates in its apply step; `protokube plan` shows what would be created). Errors as above.
 */
int keystore_read(Store *s, const KeystoreSpec *spec, Keystore **ret, char **ret_error);

/* Only the cluster CA (KEYSTORE_CLUSTER_CA), for its signers outside a pass's certificates (the masters'
 * signer of kubelet CSRs, `protokube csr approve`): its certificate and, when ret_key is not NULL, its
 * private key (the caller frees it at once after use: EVP_PKEY_free() clears its numbers). -ENOENT with a
 * message naming the store when it holds none yet; a corrupt object as keystore_read(). */
int keystore_read_cluster_ca(Store *s, X509 **ret_ca, EVP_PKEY **ret_key, char **ret_error);

/* What keystore_read_cached() decoded, kept across calls (a daemon's passes). The store is listed once
 * per read (one request, however many entries: an entry created or replaced by another master is seen at
 * once, a deleted one is absent); only an object whose version (store_list_versions) changed is read and
 * decoded again. It holds the decoded keys (as each pass's keystore does), never the objects' bytes. */
typedef struct KeystoreCache KeystoreCache;
int keystore_cache_new(KeystoreCache **ret);
KeystoreCache *keystore_cache_free(KeystoreCache *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(KeystoreCache *, keystore_cache_free)
/* Entries served from the cache and entries decoded (for tests and diagnostics). */
void keystore_cache_stats(const KeystoreCache *c, unsigned *ret_hits, unsigned *ret_misses);
/* keystore_read() through cache (NULL: none). */
int keystore_read_cached(Store *s, const KeystoreSpec *spec, KeystoreCache *cache, Keystore **ret,
                         char **ret_error);
/* How many entries are absent (key NULL). */
size_t keystore_missing(const Keystore *k);

Keystore *keystore_free(Keystore *k);
DEFINE_TRIVIAL_CLEANUP_FUNC(Keystore *, keystore_free)

/* The entries in a fixed order: the cluster CA, per etcd cluster its peer and client CAs, the front-proxy
 * CA, the service-account key. Valid while k is. */
size_t keystore_size(const Keystore *k);
const KeystoreEntry *keystore_entry(const Keystore *k, size_t i);
/* The entry called name, or NULL. */
const KeystoreEntry *keystore_find(const Keystore *k, const char *name);
/* The keystore's names of an etcd cluster's two CAs: "etcd-<cluster>-peer-ca" (its members' peer
 * certificates) and "etcd-<cluster>-client-ca" (its server certificates and its clients). Caller frees; NULL
 * on allocation failure. */
char *keystore_etcd_peer_ca_name(const char *cluster);
char *keystore_etcd_client_ca_name(const char *cluster);

/* The etcd cluster's CAs (cluster "main" → "etcd-main-peer-ca"), or NULL. */
const KeystoreEntry *keystore_etcd_peer_ca(const Keystore *k, const char *cluster);
const KeystoreEntry *keystore_etcd_client_ca(const Keystore *k, const char *cluster);

/* The entry's fingerprint as uppercase hex pairs joined by ':'. Returns buf. */
char *keystore_fingerprint_text(const KeystoreEntry *e, char buf[static KEYSTORE_FINGERPRINT_TEXT_MAX]);

/* True for a valid etcd cluster name: [a-z0-9][a-z0-9-]*, at most 32 characters. */
bool keystore_etcd_cluster_valid(const char *name);
