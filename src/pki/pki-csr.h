/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Certificate signing requests (PKCS#10, RFC 2986) as a kubelet sends them to the API: parsed from PEM with
 * OpenSSL, the signature checked (the requester holds the private key of the public key it asks a
 * certificate for), the subject and the subjectAltName of the extension request read out for a decision.
 * The input comes from any client of the API: every length is bounded, and anything the decision could
 * not see (a second subjectAltName extension, a NUL in a name) is an error, never ignored. Only the public
 * key, the subject's CN and O and the SANs are read: a certificate is built from what was approved, never
 * from the request's other extensions (a requested basicConstraints CA:TRUE has no effect). Library code:
 * returns errors with a message, never logs. */

#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>

#include "basic/macro.h"
#include "pki/pki-cert.h"
#include "pki/pki-key.h"

#define PKI_CSR_PEM_MAX (64U * 1024U) /* a P-256 request with a few SANs is ~600 bytes */

typedef struct PkiCsr {
        EVP_PKEY *key;        /* the public key requested */
        PkiKeyType key_type;  /* _PKI_KEY_TYPE_INVALID for a key protokube does not sign (RSA 4096, P-384) */
        char *key_algorithm;  /* OpenSSL's name of the key's type ("EC", "RSA", "ED25519"), for messages */
        char *cn;             /* the subject's commonName, NULL when it has none */
        char **orgs;          /* its organizationName values, in order; never NULL */
        unsigned n_cn;        /* commonName attributes (more than one is for the caller to refuse) */
        unsigned n_other_rdn; /* subject attributes other than CN and O (OU, C, emailAddress...) */
        char **dns;           /* subjectAltName DNS names, as written; never NULL */
        char **ips;           /* subjectAltName IP addresses, canonical text (inet_ntop); never NULL */
        unsigned n_other_sans; /* subjectAltName entries of other kinds: email, URI, otherName... */
        /* SHA-256 of the DER SubjectPublicKeyInfo: the key's identity (kubeadm's pin format) */
        uint8_t spki_sha256[PKI_SPKI_SHA256_SIZE];
} PkiCsr;

/* The first "CERTIFICATE REQUEST" (or "NEW CERTIFICATE REQUEST") PEM block of pem (len bytes, at most
 * PKI_CSR_PEM_MAX, need not be NUL-terminated). PK_EMALFORMED with *ret_error (caller frees; may be NULL)
 * saying what is wrong: not a PEM request, a bad signature, an undecodable or repeated subjectAltName
 * extension, a name holding a NUL or control character, more than PKI_SANS_MAX names of a kind. */
int pki_csr_parse(const char *pem, size_t len, PkiCsr **ret, char **ret_error);

PkiCsr *pki_csr_free(PkiCsr *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(PkiCsr *, pki_csr_free)

/* A request for tests and tools: subject CN (and O, may be NULL), the SANs (NULL-terminated, may be NULL;
 * emails for the refusals' tests), signed with key. PEM, caller frees. */
int pki_csr_create(EVP_PKEY *key, const char *cn, const char *org, char *const *dns, char *const *ips,
                   char *const *emails, char **ret);
