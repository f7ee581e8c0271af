/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>

#include "basic/dns-name.h"
#include "basic/errors.h"
#include "basic/in-addr-util.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "pki/pki-cert.h"
#include "pki/pki-key.h"
#include "shared/openssl-util.h"

#define PKI_CERT_PEM_MAX (64U * 1024U)
#define PKI_LIFETIME_MAX (100ULL * 366ULL * PKI_USEC_PER_DAY)

static int field_error(char **ret_error, const char *field, const char *value, const char *why) {
        if (ret_error)
                *ret_error = strprintf("invalid %s '%s': %s", field, strnull(value), why);
        return -EINVAL;
}

static int check_name_text(const char *field, const char *s, char **ret_error) {
        if (isempty(s))
                return field_error(ret_error, field, s, "must not be empty");
        if (strlen(s) > PKI_CN_MAX)
                return field_error(ret_error, field, s, "longer than 64 characters (RFC 5280 ub-name)");
        if (string_has_cc(s))
                return field_error(ret_error, field, s, "contains control characters");
        return 0;
}

int pki_cert_request_check(const PkiCertRequest *req, char **ret_error) {
        int r = check_name_text("cn", req->cn, ret_error);
        if (r < 0)
                return r;
        if (req->org && (r = check_name_text("org", req->org, ret_error)) < 0)
                return r;
        if (strv_length(req->dns) > PKI_SANS_MAX || strv_length(req->ips) > PKI_SANS_MAX)
                return field_error(ret_error, "sans", req->cn, "more than 64 DNS names or IP addresses");
        STRV_FOREACH (d, (char **)req->dns)
                if (!dns_hostname_is_valid(*d))
                        return field_error(ret_error, "dns", *d, "not a lowercase RFC 1123 host name");
        STRV_FOREACH (ip, (char **)req->ips)
                if (!in_addr_literal_valid(*ip))
                        return field_error(ret_error, "ip", *ip, "not an IPv4 or IPv6 address literal");
        if (req->usage == 0 || (req->usage & ~(PKI_USAGE_SERVER | PKI_USAGE_CLIENT)))
                return field_error(ret_error, "usage", req->cn, "needs serverAuth and/or clientAuth");
        if (req->lifetime > PKI_LIFETIME_MAX)
                return field_error(ret_error, "lifetime", req->cn, "longer than 100 years");
        return 0;
}

/* A positive, non-zero serial of 128 bits, random unless chosen (the top bit cleared so that its DER needs
 * no sign byte, the next one set so that it is never zero and always 16 octets). */
static int set_serial(X509 *x, const uint8_t *chosen) {
        unsigned char b[PKI_SERIAL_BYTES];
        if (chosen)
                memcpy(b, chosen, sizeof(b));
        else if (RAND_bytes(b, sizeof(b)) != 1)
                return -EIO;
        b[0] = (unsigned char)((b[0] & 0x7f) | 0x40);
        _cleanup_(BN_freep) BIGNUM *bn = BN_bin2bn(b, sizeof(b), NULL);
        if (!bn)
                return -ENOMEM;
        _cleanup_(ASN1_INTEGER_freep) ASN1_INTEGER *serial = BN_to_ASN1_INTEGER(bn, NULL);
        if (!serial || X509_set_serialNumber(x, serial) != 1)
                return -ENOMEM;
        return 0;
}

static int name_new(const char *cn, const char *org, X509_NAME **ret) {
        _cleanup_(X509_NAME_freep) X509_NAME *n = X509_NAME_new();
        if (!n)
                return -ENOMEM;
        if (org && X509_NAME_add_entry_by_NID(n, NID_organizationName, MBSTRING_UTF8,
                                              (const unsigned char *)org, -1, -1, 0) != 1)
                return -ENOMEM;
        if (X509_NAME_add_entry_by_NID(n, NID_commonName, MBSTRING_UTF8, (const unsigned char *)cn, -1, -1,
                                       0) != 1)
                return -ENOMEM;
        *ret = TAKE_PTR(n);
        return 0;
}

/* The body every certificate shares: v3, serial, names, public key, validity from at - skew. */
static int cert_new(const X509_NAME *subject, const X509_NAME *issuer, EVP_PKEY *key, usec_t lifetime,
                    usec_t at, const uint8_t *serial, X509 **ret) {
        _cleanup_(X509_freep) X509 *x = X509_new();
        if (!x)
                return -ENOMEM;
        int r = set_serial(x, serial);
        if (r < 0)
                return r;
        time_t from = (time_t)((at - MIN(at, PKI_CLOCK_SKEW)) / USEC_PER_SEC);
        time_t until = (time_t)((at + lifetime) / USEC_PER_SEC);
        if (X509_set_version(x, X509_VERSION_3) != 1 || X509_set_subject_name(x, subject) != 1 ||
            X509_set_issuer_name(x, issuer) != 1 || X509_set_pubkey(x, key) != 1 ||
            !ASN1_TIME_set(X509_getm_notBefore(x), from) || !ASN1_TIME_set(X509_getm_notAfter(x), until))
                return -ENOMEM;
        *ret = TAKE_PTR(x);
        return 0;
}

/* Extensions from OpenSSL's configuration syntax; only fixed strings are passed here, never input. */
static int add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value) {
        _cleanup_(X509_EXTENSION_freep) X509_EXTENSION *ext = X509V3_EXT_nconf_nid(NULL, ctx, nid, value);
        if (!ext || X509_add_ext(x, ext, -1) != 1) {
                ERR_clear_error();
                return -EIO;
        }
        return 0;
}

static int sign(X509 *x, EVP_PKEY *key) {
        if (X509_sign(x, key, EVP_sha256()) <= 0) {
                ERR_clear_error();
                return -EIO;
        }
        return 0;
}

int pki_ca_create(const char *cn, EVP_PKEY *key, usec_t lifetime, usec_t at, X509 **ret) {
        _cleanup_(X509_NAME_freep) X509_NAME *name = NULL;
        _cleanup_(X509_freep) X509 *x = NULL;
        X509V3_CTX ctx;
        if (check_name_text("cn", cn, NULL) < 0 || lifetime > PKI_LIFETIME_MAX || pki_key_type(key) < 0)
                return -EINVAL;
        int r = name_new(cn, NULL, &name);
        if (r < 0)
                return r;
        r = cert_new(name, name, key, lifetime ?: PKI_CA_LIFETIME, at, NULL, &x);
        if (r < 0)
                return r;
        X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
        if ((r = add_ext(x, &ctx, NID_basic_constraints, "critical,CA:TRUE")) < 0 ||
            (r = add_ext(x, &ctx, NID_key_usage, "critical,keyCertSign,cRLSign")) < 0 ||
            (r = add_ext(x, &ctx, NID_subject_key_identifier, "hash")) < 0 || (r = sign(x, key)) < 0)
                return r;
        *ret = TAKE_PTR(x);
        return 0;
}

/* The SAN extension built from GENERAL_NAMEs, not from a configuration string: a name with a comma in it
 * can then never add an entry of its own. */
static int add_sans(X509 *x, char *const *dns, char *const *ips) {
        if (strv_length(dns) + strv_length(ips) == 0)
                return 0;
        _cleanup_(GENERAL_NAMES_freep) GENERAL_NAMES *gens = sk_GENERAL_NAME_new_null();
        if (!gens)
                return -ENOMEM;
        STRV_FOREACH (d, (char **)dns) {
                _cleanup_(GENERAL_NAME_freep) GENERAL_NAME *gn = GENERAL_NAME_new();
                ASN1_IA5STRING *ia5 = ASN1_IA5STRING_new();
                if (!gn || !ia5 || ASN1_STRING_set(ia5, *d, -1) != 1) {
                        ASN1_IA5STRING_free(ia5);
                        return -ENOMEM;
                }
                GENERAL_NAME_set0_value(gn, GEN_DNS, ia5);
                if (sk_GENERAL_NAME_push(gens, gn) <= 0)
                        return -ENOMEM;
                TAKE_PTR(gn);
        }
        STRV_FOREACH (ip, (char **)ips) {
                _cleanup_(GENERAL_NAME_freep) GENERAL_NAME *gn = GENERAL_NAME_new();
                if (!gn)
                        return -ENOMEM;
                ASN1_OCTET_STRING *oct = a2i_IPADDRESS(*ip); /* both families, from the literal */
                if (!oct) {
                        ERR_clear_error();
                        return -EINVAL;
                }
                GENERAL_NAME_set0_value(gn, GEN_IPADD, oct);
                if (sk_GENERAL_NAME_push(gens, gn) <= 0)
                        return -ENOMEM;
                TAKE_PTR(gn);
        }
        if (X509_add1_ext_i2d(x, NID_subject_alt_name, gens, 0, X509V3_ADD_DEFAULT) != 1) {
                ERR_clear_error();
                return -EIO;
        }
        return 0;
}

static const char *ext_key_usage(PkiUsage u) {
        switch ((int)u) {
        case PKI_USAGE_SERVER:
                return "serverAuth";
        case PKI_USAGE_CLIENT:
                return "clientAuth";
        default:
                return "serverAuth,clientAuth";
        }
}

static int leaf_extensions(X509 *x, X509 *ca, const PkiCertRequest *req, EVP_PKEY *leaf_key) {
        X509V3_CTX ctx;
        int r;
        X509V3_set_ctx(&ctx, ca, x, NULL, NULL, 0);
        /* keyEncipherment only where the key can do it: RSA key transport; an EC key cannot encipher */
        const char *ku = pki_key_type(leaf_key) == PKI_KEY_RSA_2048
                             ? "critical,digitalSignature,keyEncipherment"
                             : "critical,digitalSignature";
        if ((r = add_ext(x, &ctx, NID_basic_constraints, "critical,CA:FALSE")) < 0 ||
            (r = add_ext(x, &ctx, NID_key_usage, ku)) < 0 ||
            (r = add_ext(x, &ctx, NID_ext_key_usage, ext_key_usage(req->usage))) < 0 ||
            (r = add_ext(x, &ctx, NID_subject_key_identifier, "hash")) < 0 ||
            (r = add_ext(x, &ctx, NID_authority_key_identifier, "keyid:always")) < 0)
                return r;
        return add_sans(x, req->dns, req->ips);
}

int pki_cert_issue(const PkiCertRequest *req, EVP_PKEY *leaf_key, X509 *ca, EVP_PKEY *ca_key, usec_t at,
                   X509 **ret, char **ret_error) {
        _cleanup_(X509_NAME_freep) X509_NAME *name = NULL;
        _cleanup_(X509_freep) X509 *x = NULL;
        int r = pki_cert_request_check(req, ret_error);
        if (r < 0)
                return r;
        if (pki_key_type(leaf_key) < 0)
                return field_error(ret_error, "key", req->cn, "neither ECDSA P-256 nor RSA 2048");
        if (X509_check_private_key(ca, ca_key) != 1) {
                ERR_clear_error();
                return field_error(ret_error, "ca key", req->cn, "is not the key of the CA certificate");
        }
        r = name_new(req->cn, req->org, &name);
        if (r < 0)
                return r;
        r = cert_new(name, X509_get_subject_name(ca), leaf_key, req->lifetime ?: PKI_LEAF_LIFETIME, at,
                     req->serial, &x);
        if (r < 0)
                return r;
        if ((r = leaf_extensions(x, ca, req, leaf_key)) < 0 || (r = sign(x, ca_key)) < 0)
                return r;
        *ret = TAKE_PTR(x);
        return 0;
}

int pki_cert_to_pem(X509 *cert, char **ret, size_t *ret_len) {
        _cleanup_(BIO_free_allp) BIO *bio = BIO_new(BIO_s_mem());
        BUF_MEM *bm = NULL;
        if (!bio)
                return -ENOMEM;
        if (PEM_write_bio_X509(bio, cert) != 1) {
                ERR_clear_error();
                return -EIO;
        }
        BIO_get_mem_ptr(bio, &bm);
        if (!bm || bm->length == 0)
                return -EIO;
        char *s = strndup(bm->data, bm->length);
        if (!s)
                return -ENOMEM;
        if (ret_len)
                *ret_len = bm->length;
        *ret = s;
        return 0;
}

size_t pki_pem_count(const char *pem, size_t len, const char *begin) {
        size_t n = 0, skip = strlen(begin);
        const char *end = pem + len;
        /* bounded: each hit moves p forward by skip bytes */
        for (const char *p = pem, *q; p && p < end && (q = memmem(p, (size_t)(end - p), begin, skip));
             p = q + skip)
                n++;
        return n;
}

int pki_cert_from_pem(const char *pem, size_t len, X509 **ret) {
        if (!pem || len == 0 || len > PKI_CERT_PEM_MAX)
                return PK_EMALFORMED;
        _cleanup_(BIO_free_allp) BIO *bio = BIO_new_mem_buf(pem, (int)len);
        if (!bio)
                return -ENOMEM;
        X509 *x = PEM_read_bio_X509(bio, NULL, NULL, NULL);
        ERR_clear_error();
        if (!x)
                return PK_EMALFORMED;
        *ret = x;
        return 0;
}

static int name_cn(const X509_NAME *n, char **ret) {
        int i = X509_NAME_get_index_by_NID(n, NID_commonName, -1);
        if (i < 0)
                return -ENOENT;
        unsigned char *utf8 = NULL;
        int len = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(n, i)));
        if (len < 0) {
                ERR_clear_error();
                return PK_EMALFORMED;
        }
        char *s = strndup((const char *)utf8, (size_t)len);
        OPENSSL_free(utf8);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int pki_cert_subject_cn(X509 *cert, char **ret) {
        return name_cn(X509_get_subject_name(cert), ret);
}

int pki_cert_issuer_cn(X509 *cert, char **ret) {
        return name_cn(X509_get_issuer_name(cert), ret);
}

/* One GENERAL_NAME to text into *dns or *ips; other kinds (email, URI) are not ours and are skipped. */
static int san_to_text(const GENERAL_NAME *gn, char ***dns, char ***ips) {
        int type;
        const ASN1_STRING *s = GENERAL_NAME_get0_value(gn, &type);
        const unsigned char *d = ASN1_STRING_get0_data(s);
        size_t len = (size_t)ASN1_STRING_length(s);
        if (type == GEN_DNS) {
                if (memchr(d, 0, len)) /* a NUL inside a name is an attack on C strings */
                        return PK_EMALFORMED;
                _cleanup_free_ char *name = strndup((const char *)d, len);
                if (!name)
                        return -ENOMEM;
                int r = strv_push(dns, name);
                if (r >= 0)
                        TAKE_PTR(name);
                return r;
        }
        if (type == GEN_IPADD) {
                char buf[INET6_ADDRSTRLEN];
                if ((len != 4 && len != 16) ||
                    !inet_ntop(len == 4 ? AF_INET : AF_INET6, d, buf, sizeof(buf)))
                        return PK_EMALFORMED;
                return strv_extend(ips, buf);
        }
        return 0;
}

int pki_cert_sans(X509 *cert, char ***ret_dns, char ***ret_ips) {
        _cleanup_strv_free_ char **dns = new0(char *, 1), **ips = new0(char *, 1);
        if (!dns || !ips)
                return -ENOMEM;
        int crit = 0;
        _cleanup_(GENERAL_NAMES_freep) GENERAL_NAMES *gens =
            X509_get_ext_d2i(cert, NID_subject_alt_name, &crit, NULL);
        if (!gens && crit != -1) { /* -1: absent; else present but undecodable, or twice */
                ERR_clear_error();
                return PK_EMALFORMED;
        }
        for (int i = 0; gens && i < sk_GENERAL_NAME_num(gens); i++) {
                int r = san_to_text(sk_GENERAL_NAME_value(gens, i), &dns, &ips);
                if (r < 0)
                        return r;
        }
        *ret_dns = TAKE_PTR(dns);
        *ret_ips = TAKE_PTR(ips);
        return 0;
}

static int asn1_time_to_usec(const ASN1_TIME *t, usec_t *ret) {
        struct tm tm = {};
        if (!t || ASN1_TIME_to_tm(t, &tm) != 1) {
                ERR_clear_error();
                return PK_EMALFORMED;
        }
        time_t s = timegm(&tm);
        if (s < 0)
                return PK_EMALFORMED;
        *ret = (usec_t)s * USEC_PER_SEC;
        return 0;
}

int pki_cert_validity(X509 *cert, usec_t *ret_not_before, usec_t *ret_not_after) {
        usec_t nb, na;
        int r = asn1_time_to_usec(X509_get0_notBefore(cert), &nb);
        if (r < 0)
                return r;
        r = asn1_time_to_usec(X509_get0_notAfter(cert), &na);
        if (r < 0)
                return r;
        *ret_not_before = nb;
        *ret_not_after = na;
        return 0;
}

int pki_cert_spki_sha256(X509 *cert, uint8_t ret[static PKI_SPKI_SHA256_SIZE]) {
        return pki_spki_sha256(X509_get_X509_PUBKEY(cert), ret);
}

int pki_spki_sha256(const X509_PUBKEY *spki, uint8_t ret[static PKI_SPKI_SHA256_SIZE]) {
        unsigned char *der = NULL;
        /* an X509_PUBKEY keeps the algorithm and key bits as decoded: its DER is the encoded one */
        int len = spki ? i2d_X509_PUBKEY(spki, &der) : -1;
        if (len <= 0) {
                ERR_clear_error();
                return PK_EMALFORMED;
        }
        unsigned int md_len = 0;
        int ok = EVP_Digest(der, (size_t)len, ret, &md_len, EVP_sha256(), NULL);
        OPENSSL_free(der);
        if (ok != 1 || md_len != PKI_SPKI_SHA256_SIZE) {
                ERR_clear_error();
                return -EIO;
        }
        return 0;
}

bool pki_cert_matches_key(X509 *cert, EVP_PKEY *key) {
        EVP_PKEY *pub = X509_get0_pubkey(cert);
        ERR_clear_error();
        return pub && pki_key_public_equal(pub, key);
}

int pki_cert_verify(X509 *leaf, X509 *ca, usec_t at, char **ret_error) {
        _cleanup_(X509_STORE_freep) X509_STORE *store = X509_STORE_new();
        _cleanup_(X509_STORE_CTX_freep) X509_STORE_CTX *ctx = X509_STORE_CTX_new();
        if (!store || !ctx)
                return -ENOMEM;
        if (X509_STORE_add_cert(store, ca) != 1 || X509_STORE_CTX_init(ctx, store, leaf, NULL) != 1) {
                ERR_clear_error();
                return -ENOMEM;
        }
        if (at > 0)
                X509_STORE_CTX_set_time(ctx, 0, (time_t)(at / USEC_PER_SEC));
        X509_STORE_CTX_set_flags(ctx, X509_V_FLAG_X509_STRICT | (at > 0 ? 0 : X509_V_FLAG_NO_CHECK_TIME));
        int ok = X509_verify_cert(ctx);
        ERR_clear_error();
        if (ok == 1)
                return 0;
        if (ret_error)
                *ret_error = strprintf("%s (at depth %d)",
                                       X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)),
                                       X509_STORE_CTX_get_error_depth(ctx));
        return -EKEYREJECTED;
}

char *pki_serial_bytes_text(const uint8_t serial[static PKI_SERIAL_BYTES],
                            char buf[static PKI_SERIAL_TEXT_MAX]) {
        static const char hex[] = "0123456789abcdef";
        for (size_t i = 0; i < PKI_SERIAL_BYTES; i++) {
                uint8_t v = i == 0 ? (uint8_t)((serial[0] & 0x7f) | 0x40) : serial[i];
                buf[2 * i] = hex[v >> 4];
                buf[2 * i + 1] = hex[v & 15];
        }
        buf[2 * PKI_SERIAL_BYTES] = 0;
        return buf;
}

int pki_cert_serial_text(X509 *cert, char **ret) {
        _cleanup_(BN_freep) BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), NULL);
        if (!bn)
                return -ENOMEM;
        char *hex = BN_bn2hex(bn);
        if (!hex)
                return -ENOMEM;
        char *s = strdup(hex);
        OPENSSL_free(hex);
        if (!s)
                return -ENOMEM;
        for (char *p = s; *p; p++)
                *p = (char)(*p >= 'A' && *p <= 'F' ? *p - 'A' + 'a' : *p);
        *ret = s;
        return 0;
}
