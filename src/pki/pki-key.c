/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "pki/pki-key.h"
#include "shared/openssl-util.h"

#define PKI_PEM_MAX (64U * 1024U) /* far above an RSA-4096 key: a bigger "key" is not one */

static const char *const key_type_table[_PKI_KEY_TYPE_MAX] = {
        [PKI_KEY_ECDSA_P256] = "ecdsa-p256",
        [PKI_KEY_RSA_2048] = "rsa-2048",
};

const char *pki_key_type_to_string(PkiKeyType t) {
        return t >= 0 && t < _PKI_KEY_TYPE_MAX ? key_type_table[t] : NULL;
}

PkiKeyType pki_key_type_from_string(const char *s) {
        for (PkiKeyType t = 0; s && t < _PKI_KEY_TYPE_MAX; t++)
                if (streq(s, key_type_table[t]))
                        return t;
        return _PKI_KEY_TYPE_INVALID;
}

PkiKeyType pki_key_type(EVP_PKEY *key) {
        char group[64];
        if (!key)
                return _PKI_KEY_TYPE_INVALID;
        if (EVP_PKEY_is_a(key, "RSA"))
                return EVP_PKEY_get_bits(key) == 2048 ? PKI_KEY_RSA_2048 : _PKI_KEY_TYPE_INVALID;
        if (!EVP_PKEY_is_a(key, "EC"))
                return _PKI_KEY_TYPE_INVALID;
        if (EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof(group), NULL) !=
            1) {
                ERR_clear_error();
                return _PKI_KEY_TYPE_INVALID;
        }
        /* OpenSSL names the curve by its short name; "P-256" is the NIST alias */
        return streq(group, "prime256v1") || streq(group, "P-256") ? PKI_KEY_ECDSA_P256
                                                                   : _PKI_KEY_TYPE_INVALID;
}

int pki_key_generate(PkiKeyType t, EVP_PKEY **ret) {
        EVP_PKEY *key;
        switch (t) {
        case PKI_KEY_ECDSA_P256:
                key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
                break;
        case PKI_KEY_RSA_2048:
                key = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
                break;
        default:
                return -EINVAL;
        }
        if (!key) {
                ERR_clear_error();
                return -EIO;
        }
        *ret = key;
        return 0;
}

/* Copies a memory BIO's contents out as a string and cleanses OpenSSL's copy: for private keys. */
static int bio_take_string(BIO *bio, bool secret, char **ret, size_t *ret_len) {
        BUF_MEM *bm = NULL;
        BIO_get_mem_ptr(bio, &bm);
        if (!bm || bm->length == 0)
                return -EIO;
        char *s = malloc(bm->length + 1);
        if (s) {
                memcpy(s, bm->data, bm->length);
                s[bm->length] = 0;
        }
        size_t len = bm->length;
        if (secret)
                OPENSSL_cleanse(bm->data, bm->max);
        if (!s)
                return -ENOMEM;
        *ret = s;
        if (ret_len)
                *ret_len = len;
        return 0;
}

int pki_key_to_pem(EVP_PKEY *key, char **ret, size_t *ret_len) {
        _cleanup_(BIO_free_allp) BIO *bio = BIO_new(BIO_s_secmem());
        if (!bio)
                return -ENOMEM;
        if (PEM_write_bio_PKCS8PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL) != 1) {
                ERR_clear_error();
                BUF_MEM *bm = NULL;
                BIO_get_mem_ptr(bio, &bm);
                if (bm && bm->data)
                        OPENSSL_cleanse(bm->data, bm->max);
                return -EIO;
        }
        return bio_take_string(bio, true, ret, ret_len);
}

/* Never prompts on a terminal for a passphrase (OpenSSL's default): an encrypted key is an error. */
static int no_passphrase(char *buf, int size, int rwflag, void *u) {
        return -1;
}

int pki_key_from_pem(const char *pem, size_t len, EVP_PKEY **ret) {
        if (!pem || len == 0 || len > PKI_PEM_MAX)
                return PK_EMALFORMED;
        _cleanup_(BIO_free_allp) BIO *bio = BIO_new_mem_buf(pem, (int)len);
        if (!bio)
                return -ENOMEM;
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *key = PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL);
        ERR_clear_error();
        if (!key || pki_key_type(key) < 0)
                return PK_EMALFORMED;
        *ret = TAKE_PTR(key);
        return 0;
}

int pki_key_public_to_pem(EVP_PKEY *key, char **ret) {
        _cleanup_(BIO_free_allp) BIO *bio = BIO_new(BIO_s_mem());
        if (!bio)
                return -ENOMEM;
        if (PEM_write_bio_PUBKEY(bio, key) != 1) {
                ERR_clear_error();
                return -EIO;
        }
        return bio_take_string(bio, false, ret, NULL);
}

bool pki_key_public_equal(EVP_PKEY *a, EVP_PKEY *b) {
        if (!a || !b)
                return false;
        int r = EVP_PKEY_eq(a, b);
        ERR_clear_error();
        return r == 1;
}
