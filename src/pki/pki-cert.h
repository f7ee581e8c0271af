/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Certificates of the cluster's PKI: self-signed CAs, leaf certificates signed by them, PEM, inspection and
 * chain verification (OpenSSL 3, X509_* and EVP only). Times are usec_t on CLOCK_REALTIME and passed in,
 * so tests choose "now". Library code: returns errors (and, where a code is not enough, a message for the
 * caller to print), never logs. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "basic/macro.h"
#include "basic/time-util.h"

#define PKI_USEC_PER_DAY    (24ULL * 3600ULL * USEC_PER_SEC)
#define PKI_CA_LIFETIME     (3650ULL * PKI_USEC_PER_DAY)  /* 10 years, as kubeadm's CAs */
#define PKI_LEAF_LIFETIME   (365ULL * PKI_USEC_PER_DAY)   /* 1 year */
#define PKI_CLOCK_SKEW      (5ULL * 60ULL * USEC_PER_SEC) /* notBefore is backdated by this much */
#define PKI_CN_MAX          64                            /* ub-common-name, RFC 5280 Appendix A */
#define PKI_SANS_MAX        64                            /* per kind: far above what a master needs */
#define PKI_SERIAL_BYTES    16 /* 128 bits; RFC 5280 4.1.2.2 allows up to 20 octets */
#define PKI_SERIAL_TEXT_MAX (PKI_SERIAL_BYTES * 2 + 1) /* lowercase hex, with its NUL */

typedef enum PkiUsage {
        PKI_USAGE_SERVER = 1 << 0, /* extKeyUsage serverAuth */
        PKI_USAGE_CLIENT = 1 << 1, /* extKeyUsage clientAuth */
} PkiUsage;

typedef struct PkiCertRequest {
        const char *cn;   /* required, 1..64 characters, no control characters */
        const char *org;  /* NULL, or O= ("system:masters" for the admin) */
        char *const *dns; /* NULL-terminated, may be NULL: RFC 1123 host names, lowercase */
        char *const *ips; /* NULL-terminated, may be NULL: IPv4 or IPv6 literals */
        PkiUsage usage;   /* at least one */
        usec_t lifetime;  /* 0: PKI_LEAF_LIFETIME */
        /* NULL: random. Else PKI_SERIAL_BYTES chosen by the caller (a pass plans its certificates' serials
         * so that a manifest can name the certificates it will run with); the first octet's top bit is
         * cleared and the next set, as for a random one. */
        const uint8_t *serial;
} PkiCertRequest;

/* Checks a request; on -EINVAL, *ret_error (if not NULL) names the field and the value. Caller frees. */
int pki_cert_request_check(const PkiCertRequest *req, char **ret_error);

/* A self-signed CA for key: CN=cn, valid from at - PKI_CLOCK_SKEW for lifetime (0: PKI_CA_LIFETIME),
 * basicConstraints CA:TRUE and keyUsage keyCertSign, cRLSign (both critical), subjectKeyIdentifier. Caller
 * frees. */
int pki_ca_create(const char *cn, EVP_PKEY *key, usec_t lifetime, usec_t at, X509 **ret);

/* A leaf for leaf_key, signed by ca/ca_key: the request's subject and SANs, keyUsage digitalSignature
 * (+ keyEncipherment for an RSA key), its extKeyUsage, authorityKeyIdentifier, a random 128-bit serial.
 * -EINVAL with *ret_error for a bad request; -EINVAL if ca_key is not the key of ca. Caller frees. */
int pki_cert_issue(const PkiCertRequest *req, EVP_PKEY *leaf_key, X509 *ca, EVP_PKEY *ca_key, usec_t at,
                   X509 **ret, char **ret_error);

/* PEM ("-----BEGIN CERTIFICATE-----"), NUL-terminated; caller frees. */
int pki_cert_to_pem(X509 *cert, char **ret, size_t *ret_len);
/* The first certificate in the PEM; PK_EMALFORMED if there is none. Caller frees. */
int pki_cert_from_pem(const char *pem, size_t len, X509 **ret);
/* How many PEM blocks of pem begin with begin: PKI_PEM_BEGIN (any block) or PKI_PEM_BEGIN_CERT. */
#define PKI_PEM_BEGIN      "-----BEGIN "
#define PKI_PEM_BEGIN_CERT "-----BEGIN CERTIFICATE-----"
size_t pki_pem_count(const char *pem, size_t len, const char *begin);

/* Inspection. Strings and vectors: caller frees. -ENOENT if the certificate has no CN. */
int pki_cert_subject_cn(X509 *cert, char **ret);
int pki_cert_issuer_cn(X509 *cert, char **ret);
/* The DNS names and IP addresses (canonical text, as inet_ntop writes them) of the SAN extension; empty
 * vectors (not NULL) if it has none. */
int pki_cert_sans(X509 *cert, char ***ret_dns, char ***ret_ips);
int pki_cert_validity(X509 *cert, usec_t *ret_not_before, usec_t *ret_not_after);
/* The serial number as lowercase hex without leading zeros ("4f2a..."), as `openssl x509 -serial` prints it
 * but lowercase. */
int pki_cert_serial_text(X509 *cert, char **ret);
/* The serial that set_serial() writes for chosen bytes, as pki_cert_serial_text() prints it. Returns buf. */
char *pki_serial_bytes_text(const uint8_t serial[static PKI_SERIAL_BYTES],
                            char buf[static PKI_SERIAL_TEXT_MAX]);
/* SHA-256 of the certificate's DER SubjectPublicKeyInfo, as encoded in it (kubeadm's CA pin hashes the
 * same bytes). */
#define PKI_SPKI_SHA256_SIZE 32
int pki_cert_spki_sha256(X509 *cert, uint8_t ret[static PKI_SPKI_SHA256_SIZE]);
/* The same of a decoded SubjectPublicKeyInfo (a certificate's, a request's). */
int pki_spki_sha256(const X509_PUBKEY *spki, uint8_t ret[static PKI_SPKI_SHA256_SIZE]);
/* True if cert certifies key's public half. */
bool pki_cert_matches_key(X509 *cert, EVP_PKEY *key);

/* Verifies leaf against the one trusted ca at time at (X509_STORE, strict; at 0: the signatures and
 * extensions only, not the validity periods). 0 if it chains; -EKEYREJECTED
 * with *ret_error (OpenSSL's reason, if ret_error is not NULL; caller frees) if not. */
int pki_cert_verify(X509 *leaf, X509 *ca, usec_t at, char **ret_error);
