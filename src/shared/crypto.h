/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Thin wrappers over OpenSSL libcrypto: HMAC, constant-time comparison, base64. Library code: returns
 * errors, never logs. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/macro.h"

typedef enum CryptoHash {
        CRYPTO_HASH_SHA1,
        CRYPTO_HASH_SHA224,
        CRYPTO_HASH_SHA256,
        CRYPTO_HASH_SHA384,
        CRYPTO_HASH_SHA512,
        _CRYPTO_HASH_MAX,
        _CRYPTO_HASH_INVALID = -EINVAL,
} CryptoHash;

#define CRYPTO_HMAC_MAX 64 /* SHA-512 */

/* Output size in bytes of the hash (and of its HMAC). */
size_t crypto_hash_size(CryptoHash h);
const char *crypto_hash_to_string(CryptoHash h); /* "sha256" */

/* One-shot HMAC of the concatenation of n_parts (data, len) pieces, so callers need not copy a message
 * together. Writes crypto_hash_size(h) bytes to ret_mac. */
typedef struct CryptoPart {
        const void *data;
        size_t len;
} CryptoPart;
int crypto_hmac_parts(CryptoHash h, const void *key, size_t key_len, const CryptoPart *parts, size_t n_parts,
                      uint8_t ret_mac[static CRYPTO_HMAC_MAX]);
int crypto_hmac(CryptoHash h, const void *key, size_t key_len, const void *data, size_t len,
                uint8_t ret_mac[static CRYPTO_HMAC_MAX]);

/* Constant-time equality (CRYPTO_memcmp): the time taken does not depend on where the inputs differ. */
bool crypto_memeq(const void *a, const void *b, size_t len);

/* Strict base64 (RFC 4648 §4, with padding; whitespace is skipped, as in BIND key files). Caller frees
 * (with erase_and_free for secrets). PK_EMALFORMED on bad input. */
int crypto_base64_decode(const char *s, size_t len, uint8_t **ret, size_t *ret_len);
/* NUL-terminated; caller frees. */
int crypto_base64_encode(const void *data, size_t len, char **ret);

/* An incremental SHA-256, for data read in pieces (an etcd snapshot of gigabytes). */
typedef struct CryptoSha256 CryptoSha256;
int crypto_sha256_new(CryptoSha256 **ret);
int crypto_sha256_update(CryptoSha256 *s, const void *data, size_t len);
/* A second context in the state of s (caller frees): the digest of a prefix and of the whole in one pass. */
int crypto_sha256_dup(const CryptoSha256 *s, CryptoSha256 **ret);
/* The digest into ret (32 bytes); the context can then only be freed. */
int crypto_sha256_final(CryptoSha256 *s, uint8_t ret[static 32]);
CryptoSha256 *crypto_sha256_free(CryptoSha256 *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(CryptoSha256 *, crypto_sha256_free)
/* Lowercase hex of len bytes into ret (2*len+1 bytes, NUL-terminated). */
void crypto_hex(const uint8_t *data, size_t len, char *ret);
