/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* TSIG (RFC 8945): keys from BIND key files, signing requests, verifying responses. The secret is erased
 * when the key is freed and is never part of any message string. Library code: no logging. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/macro.h"
#include "dns/dns-wire.h"
#include "shared/crypto.h"

#define TSIG_FUDGE_DEFAULT 300 /* seconds; RFC 8945 §10 recommends 300 */

typedef struct TsigKey {
        char *name;      /* canonical: lowercase, final dot */
        char *algorithm; /* canonical algorithm name, e.g. "hmac-sha256." */
        CryptoHash hash;
        uint8_t *secret;
        size_t secret_len;
} TsigKey;

TsigKey *tsig_key_free(TsigKey *k);
DEFINE_TRIVIAL_CLEANUP_FUNC(TsigKey *, tsig_key_free)

/* algorithm: "hmac-sha256" or "hmac-sha256." (also sha1, sha224, sha384, sha512), any case. */
int tsig_key_new(const char *name, const char *algorithm, const uint8_t *secret, size_t secret_len,
                 TsigKey **ret);
/* Parses BIND key-file syntax: key "name" { algorithm hmac-sha256; secret "base64"; }; with #, // and
 * C comments. Exactly one key. On PK_EMALFORMED, a message (caller frees; never contains the secret). */
int tsig_key_parse(const char *text, size_t len, TsigKey **ret, char **ret_error);
/* Opens path, refuses it when group or others have any access (mode & 077), then parses it. The message
 * names the file and, for a permissions problem, its mode. */
int tsig_key_load_file(const char *path, TsigKey **ret, char **ret_error);

/* Signs the finished message in *msg (RFC 8945 §4.3): appends the TSIG RR and increments ARCOUNT. The
 * time signed is now(CLOCK_REALTIME) (injectable with clock_override()). The MAC is returned so the
 * response can be verified against it (§5.3). */
int tsig_sign(Buf *msg, const TsigKey *key, uint16_t fudge, uint8_t ret_mac[static CRYPTO_HMAC_MAX],
              size_t *ret_mac_len);

typedef struct TsigVerdict {
        bool present;          /* the message carried a TSIG RR */
        uint16_t error;        /* our verdict on the message: 0, BADKEY, BADSIG or BADTIME */
        uint16_t server_error; /* the Error field the signer set: the server's verdict on our request */
        uint64_t time_signed;
} TsigVerdict;

enum {
        TSIG_VERIFY_SKIP_TIME = 1 << 0, /* for captured test vectors only */
};

/* Verifies the TSIG of a message (RFC 8945 §5.2 for requests, §5.3 with request_mac for responses).
 * Returns 0 when the MAC is valid, the time within the fudge and the signer reported no error;
 * PK_ETSIG with *verdict filled otherwise (including a missing TSIG); PK_EMALFORMED for a broken message.
 * The MAC comparison is constant-time. verdict may be NULL. */
int tsig_verify(const uint8_t *msg, size_t len, const TsigKey *key, const uint8_t *request_mac,
                size_t request_mac_len, unsigned flags, TsigVerdict *verdict);

/* A multi-message response on one TCP connection (a zone transfer, RFC 8945 §5.3.1): the first message is
 * verified against the request's MAC, each later signed one against the MAC before it, over the unsigned
 * messages received in between and the Time Signed and Fudge of its own TSIG. Up to 99 messages in a row
 * may be unsigned; the first and the last must be signed. */
#define TSIG_STREAM_UNSIGNED_MAX 100

typedef struct TsigStream {
        const TsigKey *key;           /* borrowed */
        uint8_t mac[CRYPTO_HMAC_MAX]; /* the request's MAC, then the last signed message's */
        size_t mac_len;
        Buf pending; /* the unsigned messages since the last signed one */
        unsigned n_messages;
        unsigned n_unsigned;
} TsigStream;

void tsig_stream_init(TsigStream *t, const TsigKey *key, const uint8_t *request_mac, size_t request_mac_len);
void tsig_stream_done(TsigStream *t);
/* One message of the stream, in order: 0 signed and valid, 1 unsigned and held for the next signed one,
 * PK_ETSIG (verdict filled) or PK_EMALFORMED otherwise. */
int tsig_stream_verify(TsigStream *t, const DnsMessage *m, unsigned flags, TsigVerdict *verdict);
/* At the end of the stream: PK_ETSIG unless at least one message came and the last was signed. */
int tsig_stream_finish(const TsigStream *t);
