/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Private keys of the cluster's PKI: generation and PEM (PKCS#8, unencrypted: the key files are protected by
 * their mode, 0600, as kubeadm's are). Library code: returns errors, never logs. */

#include <stdbool.h>
#include <stddef.h>

#include <openssl/evp.h>

#include "basic/macro.h"

typedef enum PkiKeyType {
        PKI_KEY_ECDSA_P256, /* the default: small keys, fast handshakes */
        PKI_KEY_RSA_2048,   /* the service-account key: Kubernetes requires RSA there */
        _PKI_KEY_TYPE_MAX,
        _PKI_KEY_TYPE_INVALID = -EINVAL,
} PkiKeyType;

/* "ecdsa-p256", "rsa-2048" */
const char *pki_key_type_to_string(PkiKeyType t);
PkiKeyType pki_key_type_from_string(const char *s);

/* The type of an existing key; _PKI_KEY_TYPE_INVALID for any other algorithm or size. */
PkiKeyType pki_key_type(EVP_PKEY *key);

/* A new key of type t. Caller frees (EVP_PKEY_free). */
int pki_key_generate(PkiKeyType t, EVP_PKEY **ret);

/* PKCS#8 PEM ("-----BEGIN PRIVATE KEY-----"), NUL-terminated. The buffer holds a secret: the caller erases
 * it (erase_and_free(*ret, *ret_len) or _cleanup_erase_free_). OpenSSL's own copy is cleansed here. */
int pki_key_to_pem(EVP_PKEY *key, char **ret, size_t *ret_len);

/* The private key in the PEM (PKCS#8 or the traditional forms); PK_EMALFORMED if there is none, if it is
 * encrypted, or if it is not of a type above. Caller frees; the caller erases its pem buffer. */
int pki_key_from_pem(const char *pem, size_t len, EVP_PKEY **ret);

/* The public half in PEM (SubjectPublicKeyInfo), for display and comparison. Caller frees. */
int pki_key_public_to_pem(EVP_PKEY *key, char **ret);

/* True if a and b have the same public key. */
bool pki_key_public_equal(EVP_PKEY *a, EVP_PKEY *b);
