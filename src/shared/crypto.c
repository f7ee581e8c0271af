/* SPDX-License-Identifier: Apache-2.0 */
#include "shared/crypto.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"

static const struct {
        const char *name;
        size_t size;
} hash_table[_CRYPTO_HASH_MAX] = {
        [CRYPTO_HASH_SHA1] = { "sha1", 20 },     [CRYPTO_HASH_SHA224] = { "sha224", 28 },
        [CRYPTO_HASH_SHA256] = { "sha256", 32 }, [CRYPTO_HASH_SHA384] = { "sha384", 48 },
        [CRYPTO_HASH_SHA512] = { "sha512", 64 },
};

size_t crypto_hash_size(CryptoHash h) {
        if (h < 0 || h >= _CRYPTO_HASH_MAX)
                return 0;
        return hash_table[h].size;
}

const char *crypto_hash_to_string(CryptoHash h) {
        if (h < 0 || h >= _CRYPTO_HASH_MAX)
                return NULL;
        return hash_table[h].name;
}

int crypto_hmac_parts(CryptoHash h, const void *key, size_t key_len, const CryptoPart *parts, size_t n_parts,
                      uint8_t ret_mac[static CRYPTO_HMAC_MAX]) {
        const char *digest = crypto_hash_to_string(h);
        uint8_t mac[CRYPTO_HMAC_MAX];
        size_t mac_len = 0;
        EVP_MAC_CTX *ctx = NULL;
        int r = -EIO;

        if (!digest)
                return -EINVAL;
        EVP_MAC *m = EVP_MAC_fetch(NULL, "HMAC", NULL);
        if (!m)
                return -EIO;
        ctx = EVP_MAC_CTX_new(m);
        if (!ctx) {
                r = -ENOMEM;
                goto finish;
        }
        OSSL_PARAM params[] = {
                OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)digest, 0),
                OSSL_PARAM_construct_end(),
        };
        /* EVP_MAC_init rejects a NULL key even with length 0; an empty key is a valid HMAC key. */
        static const uint8_t empty = 0;
        if (EVP_MAC_init(ctx, key_len > 0 ? key : &empty, key_len, params) != 1)
                goto finish;
        for (size_t i = 0; i < n_parts; i++)
                if (parts[i].len > 0 && EVP_MAC_update(ctx, parts[i].data, parts[i].len) != 1)
                        goto finish;
        if (EVP_MAC_final(ctx, mac, &mac_len, sizeof(mac)) != 1 || mac_len != crypto_hash_size(h))
                goto finish;
        memcpy(ret_mac, mac, mac_len);
        r = 0;
finish:
        EVP_MAC_CTX_free(ctx);
        EVP_MAC_free(m);
        OPENSSL_cleanse(mac, sizeof(mac));
        return r;
}

int crypto_hmac(CryptoHash h, const void *key, size_t key_len, const void *data, size_t len,
                uint8_t ret_mac[static CRYPTO_HMAC_MAX]) {
        CryptoPart part = { data, len };
        return crypto_hmac_parts(h, key, key_len, &part, 1, ret_mac);
}

bool crypto_memeq(const void *a, const void *b, size_t len) {
        return CRYPTO_memcmp(a, b, len) == 0;
}

static int b64_value(char c) {
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        if (c == '+')
                return 62;
        if (c == '/')
                return 63;
        return -1;
}

int crypto_base64_decode(const char *s, size_t len, uint8_t **ret, size_t *ret_len) {
        /* Written by hand rather than with EVP_DecodeBlock, which does not say how much padding it saw and
         * accepts garbage after it. */
        uint8_t *out = malloc(len / 4 * 3 + 3);
        size_t n = 0, pad = 0, quad = 0;
        uint32_t acc = 0;

        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < len; i++) {
                char c = s[i];
                if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
                        continue;
                if (c == '=') {
                        /* Padding only in the last quad, at positions 2 or 3. */
                        if (quad < 2)
                                goto bad;
                        pad++;
                        acc <<= 6;
                } else {
                        int v = b64_value(c);
                        if (v < 0 || pad > 0)
                                goto bad;
                        acc = acc << 6 | (uint32_t)v;
                }
                if (++quad == 4) {
                        if (pad > 2)
                                goto bad;
                        out[n++] = (uint8_t)(acc >> 16);
                        if (pad < 2)
                                out[n++] = (uint8_t)(acc >> 8);
                        if (pad < 1)
                                out[n++] = (uint8_t)acc;
                        quad = 0;
                        acc = 0;
                        if (pad > 0) {
                                /* Nothing but whitespace may follow padding. */
                                for (size_t j = i + 1; j < len; j++)
                                        if (!strchr(" \t\r\n", s[j]))
                                                goto bad;
                                break;
                        }
                }
        }
        if (quad != 0)
                goto bad;
        *ret = out;
        if (ret_len)
                *ret_len = n;
        return 0;
bad:
        erase_and_free(out, len / 4 * 3 + 3);
        return PK_EMALFORMED;
}

int crypto_base64_encode(const void *data, size_t len, char **ret) {
        static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        const uint8_t *p = data;
        size_t o = 0;

        if (len > (SIZE_MAX - 1) / 4 * 3 - 3)
                return -ENOMEM;
        char *s = malloc((len + 2) / 3 * 4 + 1);
        if (!s)
                return -ENOMEM;
        for (size_t i = 0; i < len; i += 3) {
                uint32_t v = (uint32_t)p[i] << 16;
                if (i + 1 < len)
                        v |= (uint32_t)p[i + 1] << 8;
                if (i + 2 < len)
                        v |= p[i + 2];
                s[o++] = alphabet[v >> 18 & 63];
                s[o++] = alphabet[v >> 12 & 63];
                s[o++] = i + 1 < len ? alphabet[v >> 6 & 63] : '=';
                s[o++] = i + 2 < len ? alphabet[v & 63] : '=';
        }
        s[o] = 0;
        *ret = s;
        return 0;
}
