/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Cleanup functions for the OpenSSL types the PKI uses, named as systemd names them (EVP_PKEY_freep,
 * X509_freep...), so that they merge with src/shared/crypto.h's without renaming any caller: when both
 * exist, these definitions are deleted here. */

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "basic/macro.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(EVP_PKEY *, EVP_PKEY_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(EVP_PKEY_CTX *, EVP_PKEY_CTX_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(X509 *, X509_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(X509_NAME *, X509_NAME_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(X509_EXTENSION *, X509_EXTENSION_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(X509_STORE *, X509_STORE_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(X509_STORE_CTX *, X509_STORE_CTX_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(GENERAL_NAMES *, GENERAL_NAMES_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(GENERAL_NAME *, GENERAL_NAME_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(ASN1_OCTET_STRING *, ASN1_OCTET_STRING_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(ASN1_INTEGER *, ASN1_INTEGER_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(BIGNUM *, BN_free)

/* BIO_free returns int; the cleanup needs a void function. */
static inline void BIO_freep(BIO **p) {
        if (*p)
                BIO_free(*p);
}
