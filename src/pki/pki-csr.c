/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "pki/pki-cert.h"
#include "pki/pki-csr.h"
#include "shared/openssl-util.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(X509_REQ *, X509_REQ_free)

static void extensions_free(STACK_OF(X509_EXTENSION) * *p) {
        sk_X509_EXTENSION_pop_free(*p, X509_EXTENSION_free);
}

PkiCsr *pki_csr_free(PkiCsr *c) {
        if (!c)
                return NULL;
        EVP_PKEY_free(c->key);
        free(c->key_algorithm);
        free(c->cn);
        strv_free(c->orgs);
        strv_free(c->dns);
        strv_free(c->ips);
        free(c);
        return NULL;
}

static int malformed(char **ret_error, const char *why) {
        return error_setf(ret_error, PK_EMALFORMED, "certificate request: %s", why);
}

/* An ASN.1 string of a name as UTF-8 text; a NUL or a control character in it is an attack on whoever
 * prints or compares it as a C string. */
static int asn1_text(const ASN1_STRING *s, char **ret) {
        unsigned char *utf8 = NULL;
        int len = ASN1_STRING_to_UTF8(&utf8, s);
        if (len < 0 || !utf8) {
                ERR_clear_error();
                OPENSSL_free(utf8);
                return PK_EMALFORMED;
        }
        bool nul = memchr(utf8, 0, (size_t)len) != NULL;
        char *t = nul ? NULL : strndup((const char *)utf8, (size_t)len);
        OPENSSL_free(utf8);
        if (nul)
                return PK_EMALFORMED;
        if (!t)
                return -ENOMEM;
        if (string_has_cc(t)) {
                free(t);
                return PK_EMALFORMED;
        }
        *ret = t;
        return 0;
}

static int read_subject(X509_REQ *req, PkiCsr *c, char **ret_error) {
        const X509_NAME *n = X509_REQ_get_subject_name(req);
        int count = n ? X509_NAME_entry_count(n) : 0;
        for (int i = 0; i < count; i++) {
                const X509_NAME_ENTRY *e = X509_NAME_get_entry(n, i);
                int nid = OBJ_obj2nid(X509_NAME_ENTRY_get_object(e));
                char *text = NULL;
                if (nid != NID_commonName && nid != NID_organizationName) {
                        c->n_other_rdn++;
                        continue;
                }
                int r = asn1_text(X509_NAME_ENTRY_get_data(e), &text);
                if (r == PK_EMALFORMED)
                        return malformed(ret_error, "a subject attribute is not text (a NUL, a control "
                                                    "character or a bad encoding)");
                if (r < 0)
                        return r;
                if (nid == NID_commonName) {
                        if (c->n_cn++ == 0)
                                c->cn = text;
                        else
                                free(text);
                        continue;
                }
                if (strv_length(c->orgs) >= PKI_SANS_MAX) {
                        free(text);
                        return malformed(ret_error, "more than 64 organizations in the subject");
                }
                r = strv_push(&c->orgs, text);
                if (r < 0) {
                        free(text);
                        return r;
                }
        }
        return 0;
}

static int add_san(const GENERAL_NAME *gn, PkiCsr *c, char **ret_error) {
        int type;
        const ASN1_STRING *s = GENERAL_NAME_get0_value(gn, &type);
        if (type == GEN_DNS) {
                char *name = NULL;
                int r = asn1_text(s, &name);
                if (r == PK_EMALFORMED)
                        return malformed(ret_error, "a DNS name holds a NUL or control character");
                if (r < 0)
                        return r;
                if (strv_length(c->dns) >= PKI_SANS_MAX) {
                        free(name);
                        return malformed(ret_error, "more than 64 DNS names");
                }
                r = strv_push(&c->dns, name);
                if (r < 0)
                        free(name);
                return r;
        }
        if (type == GEN_IPADD) {
                char buf[INET6_ADDRSTRLEN];
                size_t len = (size_t)ASN1_STRING_length(s);
                if ((len != 4 && len != 16) ||
                    !inet_ntop(len == 4 ? AF_INET : AF_INET6, ASN1_STRING_get0_data(s), buf, sizeof(buf)))
                        return malformed(ret_error, "an IP address that is neither 4 nor 16 octets");
                if (strv_length(c->ips) >= PKI_SANS_MAX)
                        return malformed(ret_error, "more than 64 IP addresses");
                return strv_extend(&c->ips, buf);
        }
        c->n_other_sans++;
        return 0;
}

static bool has_extension_request(X509_REQ *req) {
        return X509_REQ_get_attr_by_NID(req, NID_ext_req, -1) >= 0 ||
               X509_REQ_get_attr_by_NID(req, NID_ms_ext_req, -1) >= 0;
}

static int read_sans(X509_REQ *req, PkiCsr *c, char **ret_error) {
        _cleanup_(extensions_free) STACK_OF(X509_EXTENSION) *exts = X509_REQ_get_extensions(req);
        if (!exts) {
                ERR_clear_error();
                return has_extension_request(req)
                           ? malformed(ret_error, "its extension request does not decode")
                           : 0;
        }
        bool seen = false;
        for (int i = 0; i < sk_X509_EXTENSION_num(exts); i++) {
                X509_EXTENSION *ext = sk_X509_EXTENSION_value(exts, i);
                if (OBJ_obj2nid(X509_EXTENSION_get_object(ext)) != NID_subject_alt_name)
                        continue;
                if (seen) /* which one would count? Neither: refused */
                        return malformed(ret_error, "two subjectAltName extensions");
                seen = true;
                _cleanup_(GENERAL_NAMES_freep) GENERAL_NAMES *gens = X509V3_EXT_d2i(ext);
                if (!gens) {
                        ERR_clear_error();
                        return malformed(ret_error, "its subjectAltName does not decode");
                }
                for (int j = 0; j < sk_GENERAL_NAME_num(gens); j++) {
                        int r = add_san(sk_GENERAL_NAME_value(gens, j), c, ret_error);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static int read_key(X509_REQ *req, PkiCsr *c, char **ret_error) {
        c->key = X509_REQ_get_pubkey(req);
        if (!c->key) {
                ERR_clear_error();
                return malformed(ret_error, "its public key does not decode");
        }
        /* proof of possession: the request is signed by the key it asks a certificate for */
        int ok = X509_REQ_verify(req, c->key);
        ERR_clear_error();
        if (ok != 1)
                return malformed(ret_error, "its signature does not verify with its own public key");
        c->key_type = pki_key_type(c->key);
        c->key_algorithm = strdup(strna(EVP_PKEY_get0_type_name(c->key)));
        if (!c->key_algorithm)
                return -ENOMEM;
        int r = pki_spki_sha256(X509_REQ_get_X509_PUBKEY(req), c->spki_sha256);
        return r == PK_EMALFORMED ? malformed(ret_error, "its public key does not encode") : r;
}

int pki_csr_parse(const char *pem, size_t len, PkiCsr **ret, char **ret_error) {
        if (!pem || len == 0)
                return malformed(ret_error, "empty");
        if (len > PKI_CSR_PEM_MAX)
                return malformed(ret_error, "longer than 64 KiB");
        _cleanup_(BIO_free_allp) BIO *bio = BIO_new_mem_buf(pem, (int)len);
        if (!bio)
                return -ENOMEM;
        _cleanup_(X509_REQ_freep) X509_REQ *req = PEM_read_bio_X509_REQ(bio, NULL, NULL, NULL);
        ERR_clear_error();
        if (!req)
                return malformed(ret_error, "no PEM block 'CERTIFICATE REQUEST' that decodes as PKCS#10");
        _cleanup_(pki_csr_freep) PkiCsr *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->key_type = _PKI_KEY_TYPE_INVALID;
        c->orgs = new0(char *, 1);
        c->dns = new0(char *, 1);
        c->ips = new0(char *, 1);
        if (!c->orgs || !c->dns || !c->ips)
                return -ENOMEM;
        int r = read_key(req, c, ret_error);
        if (r >= 0)
                r = read_subject(req, c, ret_error);
        if (r >= 0)
                r = read_sans(req, c, ret_error);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(c);
        return 0;
}

static int push_name(GENERAL_NAMES *gens, int type, const char *value) {
        _cleanup_(GENERAL_NAME_freep) GENERAL_NAME *gn = GENERAL_NAME_new();
        if (!gn)
                return -ENOMEM;
        ASN1_STRING *s;
        if (type == GEN_IPADD) {
                s = a2i_IPADDRESS(value);
                if (!s) {
                        ERR_clear_error();
                        return -EINVAL;
                }
        } else {
                s = ASN1_IA5STRING_new();
                if (!s || ASN1_STRING_set(s, value, -1) != 1) {
                        ASN1_STRING_free(s);
                        return -ENOMEM;
                }
        }
        GENERAL_NAME_set0_value(gn, type, s);
        if (sk_GENERAL_NAME_push(gens, gn) <= 0)
                return -ENOMEM;
        TAKE_PTR(gn);
        return 0;
}

static int add_request_sans(X509_REQ *req, char *const *dns, char *const *ips, char *const *emails) {
        if (strv_length(dns) + strv_length(ips) + strv_length(emails) == 0)
                return 0;
        _cleanup_(GENERAL_NAMES_freep) GENERAL_NAMES *gens = sk_GENERAL_NAME_new_null();
        if (!gens)
                return -ENOMEM;
        int r = 0;
        STRV_FOREACH (d, (char **)dns)
                if (r >= 0)
                        r = push_name(gens, GEN_DNS, *d);
        STRV_FOREACH (i, (char **)ips)
                if (r >= 0)
                        r = push_name(gens, GEN_IPADD, *i);
        STRV_FOREACH (e, (char **)emails)
                if (r >= 0)
                        r = push_name(gens, GEN_EMAIL, *e);
        if (r < 0)
                return r;
        _cleanup_(extensions_free) STACK_OF(X509_EXTENSION) *exts = sk_X509_EXTENSION_new_null();
        X509_EXTENSION *ext = X509V3_EXT_i2d(NID_subject_alt_name, 0, gens);
        if (!exts || !ext || sk_X509_EXTENSION_push(exts, ext) <= 0) {
                X509_EXTENSION_free(ext);
                ERR_clear_error();
                return -ENOMEM;
        }
        if (X509_REQ_add_extensions(req, exts) != 1) {
                ERR_clear_error();
                return -EIO;
        }
        return 0;
}

int pki_csr_create(EVP_PKEY *key, const char *cn, const char *org, char *const *dns, char *const *ips,
                   char *const *emails, char **ret) {
        _cleanup_(X509_REQ_freep) X509_REQ *req = X509_REQ_new();
        _cleanup_(X509_NAME_freep) X509_NAME *name = X509_NAME_new();
        _cleanup_(BIO_free_allp) BIO *bio = BIO_new(BIO_s_mem());
        if (!req || !name || !bio)
                return -ENOMEM;
        if ((org && X509_NAME_add_entry_by_NID(name, NID_organizationName, MBSTRING_UTF8,
                                               (const unsigned char *)org, -1, -1, 0) != 1) ||
            (cn && X509_NAME_add_entry_by_NID(name, NID_commonName, MBSTRING_UTF8, (const unsigned char *)cn,
                                              -1, -1, 0) != 1) ||
            X509_REQ_set_subject_name(req, name) != 1 || X509_REQ_set_pubkey(req, key) != 1) {
                ERR_clear_error();
                return -EINVAL;
        }
        int r = add_request_sans(req, dns, ips, emails);
        if (r < 0)
                return r;
        if (X509_REQ_sign(req, key, EVP_sha256()) <= 0 || PEM_write_bio_X509_REQ(bio, req) != 1) {
                ERR_clear_error();
                return -EIO;
        }
        BUF_MEM *bm = NULL;
        BIO_get_mem_ptr(bio, &bm);
        if (!bm || bm->length == 0)
                return -EIO;
        char *s = strndup(bm->data, bm->length);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}
