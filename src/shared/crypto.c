/* SPDX-License-Identifier: Apache-2.0 */
#include "shared/crypto.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <pthread.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "shared/openssl-util.h"

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

/* The MAC into mac; *mac_len its length. The caller erases mac whatever happens. */
static int hmac_compute(const char *digest, const void *key, size_t key_len, const CryptoPart *parts,
                        size_t n_parts, uint8_t mac[static CRYPTO_HMAC_MAX], size_t *mac_len) {
        _cleanup_(EVP_MAC_freep) EVP_MAC *m = EVP_MAC_fetch(NULL, "HMAC", NULL);
        if (!m)
                return -EIO;
        _cleanup_(EVP_MAC_CTX_freep) EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(m);
        if (!ctx)
                return -ENOMEM;
        OSSL_PARAM params[] = {
                OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)digest, 0),
                OSSL_PARAM_construct_end(),
        };
        /* EVP_MAC_init rejects a NULL key even with length 0; an empty key is a valid HMAC key. */
        static const uint8_t empty = 0;
        if (EVP_MAC_init(ctx, key_len > 0 ? key : &empty, key_len, params) != 1)
                return -EIO;
        for (size_t i = 0; i < n_parts; i++)
                if (parts[i].len > 0 && EVP_MAC_update(ctx, parts[i].data, parts[i].len) != 1)
                        return -EIO;
        if (EVP_MAC_final(ctx, mac, mac_len, CRYPTO_HMAC_MAX) != 1)
                return -EIO;
        return 0;
}

int crypto_hmac_parts(CryptoHash h, const void *key, size_t key_len, const CryptoPart *parts, size_t n_parts,
                      uint8_t ret_mac[static CRYPTO_HMAC_MAX]) {
        const char *digest = crypto_hash_to_string(h);
        uint8_t mac[CRYPTO_HMAC_MAX];
        size_t mac_len = 0;

        if (!digest)
                return -EINVAL;
        int r = hmac_compute(digest, key, key_len, parts, n_parts, mac, &mac_len);
        if (r >= 0 && mac_len != crypto_hash_size(h))
                r = -EIO;
        if (r >= 0)
                memcpy(ret_mac, mac, mac_len);
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

/* b64_value() of every byte, -1 for the others: the fast path's table. */
static int8_t b64_table[256];

static void b64_table_init(void) {
        for (unsigned c = 0; c < 256; c++)
                b64_table[c] = (int8_t)b64_value((char)c);
}

/* The whole quads at the start of s that are all alphabet (no padding, no whitespace): decoded into out four
 * characters at a time with a table, the common case of a long value (an etcd snapshot's blobs). Returns the
 * characters consumed (a multiple of 4); *n grows by the bytes written. */
static size_t base64_decode_quads(const char *s, size_t len, uint8_t *out, size_t *n) {
        static pthread_once_t once = PTHREAD_ONCE_INIT;
        const uint8_t *u = (const uint8_t *)s;
        size_t i = 0;

        (void)pthread_once(&once, b64_table_init);
        /* the last quad is left to the careful loop: it may hold the padding */
        for (; i + 4 < len; i += 4) {
                int a = b64_table[u[i]], b = b64_table[u[i + 1]], c = b64_table[u[i + 2]],
                    d = b64_table[u[i + 3]];
                if ((a | b | c | d) < 0)
                        break;
                uint32_t v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 | (uint32_t)d;
                out[(*n)++] = (uint8_t)(v >> 16);
                out[(*n)++] = (uint8_t)(v >> 8);
                out[(*n)++] = (uint8_t)v;
        }
        return i;
}

/* Decodes into out (room for len / 4 * 3 + 3 bytes); *ret_n: the bytes written. */
static int base64_decode_into(const char *s, size_t len, uint8_t *out, size_t *ret_n) {
        size_t n = 0, pad = 0, quad = 0;
        uint32_t acc = 0;

        for (size_t i = base64_decode_quads(s, len, out, &n); i < len; i++) {
                char c = s[i];
                if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
                        continue;
                if (c == '=') {
                        /* Padding only in the last quad, at positions 2 or 3. */
                        if (quad < 2)
                                return PK_EMALFORMED;
                        pad++;
                        acc <<= 6;
                } else {
                        int v = b64_value(c);
                        if (v < 0 || pad > 0)
                                return PK_EMALFORMED;
                        acc = acc << 6 | (uint32_t)v;
                }
                if (++quad == 4) {
                        if (pad > 2)
                                return PK_EMALFORMED;
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
                                                return PK_EMALFORMED;
                                break;
                        }
                }
        }
        if (quad != 0)
                return PK_EMALFORMED;
        *ret_n = n;
        return 0;
}

int crypto_base64_decode(const char *s, size_t len, uint8_t **ret, size_t *ret_len) {
        /* Written by hand rather than with EVP_DecodeBlock, which does not say how much padding it saw and
         * accepts garbage after it. */
        size_t size = len / 4 * 3 + 3, n = 0;
        uint8_t *out = malloc(size);
        if (!out)
                return -ENOMEM;
        int r = base64_decode_into(s, len, out, &n);
        if (r < 0) {
                erase_and_free(out, size);
                return r;
        }
        *ret = out;
        if (ret_len)
                *ret_len = n;
        return 0;
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

struct CryptoSha256 {
        EVP_MD_CTX *ctx;
};

int crypto_sha256_new(CryptoSha256 **ret) {
        CryptoSha256 *s = new0(CryptoSha256, 1);
        if (!s)
                return -ENOMEM;
        s->ctx = EVP_MD_CTX_new();
        if (!s->ctx || EVP_DigestInit_ex(s->ctx, EVP_sha256(), NULL) != 1) {
                crypto_sha256_free(s);
                return -EIO;
        }
        *ret = s;
        return 0;
}

int crypto_sha256_update(CryptoSha256 *s, const void *data, size_t len) {
        if (len == 0)
                return 0;
        return EVP_DigestUpdate(s->ctx, data, len) == 1 ? 0 : -EIO;
}

int crypto_sha256_dup(const CryptoSha256 *s, CryptoSha256 **ret) {
        CryptoSha256 *d = new0(CryptoSha256, 1);
        if (!d)
                return -ENOMEM;
        d->ctx = EVP_MD_CTX_new();
        if (!d->ctx || EVP_MD_CTX_copy_ex(d->ctx, s->ctx) != 1) {
                crypto_sha256_free(d);
                return -EIO;
        }
        *ret = d;
        return 0;
}

int crypto_sha256_final(CryptoSha256 *s, uint8_t ret[static 32]) {
        unsigned n = 0;
        if (EVP_DigestFinal_ex(s->ctx, ret, &n) != 1 || n != 32)
                return -EIO;
        return 0;
}

CryptoSha256 *crypto_sha256_free(CryptoSha256 *s) {
        if (!s)
                return NULL;
        EVP_MD_CTX_free(s->ctx);
        free(s);
        return NULL;
}

void crypto_hex(const uint8_t *data, size_t len, char *ret) {
        static const char digits[] = "0123456789abcdef";
        for (size_t i = 0; i < len; i++) {
                ret[2 * i] = digits[data[i] >> 4];
                ret[2 * i + 1] = digits[data[i] & 15];
        }
        ret[2 * len] = 0;
}
