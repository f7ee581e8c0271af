/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Cleanup functions for the OpenSSL types protokube holds, so that a function releases them on every path
 * with _cleanup_ instead of a goto chain: `_cleanup_(EVP_MAC_CTX_freep) EVP_MAC_CTX *ctx = NULL;`. */

#include <openssl/bio.h>
#include <openssl/evp.h>

#include "basic/macro.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(EVP_MD_CTX *, EVP_MD_CTX_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(EVP_MAC_CTX *, EVP_MAC_CTX_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(EVP_MAC *, EVP_MAC_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(EVP_PKEY *, EVP_PKEY_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(BIO *, BIO_free_all)
