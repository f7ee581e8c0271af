/* SPDX-License-Identifier: Apache-2.0 */
#include "dns/dns-tsig.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/string-util.h"
#include "basic/time-util.h"

#define KEY_FILE_MAX (64 * 1024)

static const struct {
        const char *name; /* RFC 8945 §6 algorithm names */
        CryptoHash hash;
} algorithms[] = {
        { "hmac-sha1.", CRYPTO_HASH_SHA1 },     { "hmac-sha224.", CRYPTO_HASH_SHA224 },
        { "hmac-sha256.", CRYPTO_HASH_SHA256 }, { "hmac-sha384.", CRYPTO_HASH_SHA384 },
        { "hmac-sha512.", CRYPTO_HASH_SHA512 },
};

TsigKey *tsig_key_free(TsigKey *k) {
        if (!k)
                return NULL;
        free(k->name);
        free(k->algorithm);
        erase_and_free(k->secret, k->secret_len);
        explicit_bzero(k, sizeof(*k));
        free(k);
        return NULL;
}

int tsig_key_new(const char *name, const char *algorithm, const uint8_t *secret, size_t secret_len,
                 TsigKey **ret) {
        _cleanup_(tsig_key_freep) TsigKey *k = NULL;
        _cleanup_free_ char *alg = NULL;
        int r;

        r = dns_name_normalize(algorithm, &alg);
        if (r < 0)
                return r;
        k = new0(TsigKey, 1);
        if (!k)
                return -ENOMEM;
        k->hash = _CRYPTO_HASH_INVALID;
        for (size_t i = 0; i < ELEMENTSOF(algorithms); i++)
                if (streq(alg, algorithms[i].name)) {
                        k->hash = algorithms[i].hash;
                        break;
                }
        if (k->hash < 0)
                return -EOPNOTSUPP;
        r = dns_name_normalize(name, &k->name);
        if (r < 0)
                return r;
        k->algorithm = TAKE_PTR(alg);
        k->secret = malloc(secret_len ?: 1);
        if (!k->secret)
                return -ENOMEM;
        if (secret_len > 0)
                memcpy(k->secret, secret, secret_len);
        k->secret_len = secret_len;
        *ret = TAKE_PTR(k);
        return 0;
}

/* A tokenizer for BIND's configuration syntax, just enough for key files. */
typedef struct KeyLexer {
        const char *p, *end;
        unsigned line;
} KeyLexer;

typedef enum KeyToken {
        TOKEN_END,
        TOKEN_WORD,
        TOKEN_STRING,
        TOKEN_LBRACE,
        TOKEN_RBRACE,
        TOKEN_SEMICOLON,
        TOKEN_ERROR,
} KeyToken;

static void lexer_skip_space(KeyLexer *l) {
        while (l->p < l->end) {
                char c = *l->p;
                if (c == '\n') {
                        l->line++;
                        l->p++;
                } else if (c == ' ' || c == '\t' || c == '\r')
                        l->p++;
                else if (c == '#' || (c == '/' && l->p + 1 < l->end && l->p[1] == '/')) {
                        while (l->p < l->end && *l->p != '\n')
                                l->p++;
                } else if (c == '/' && l->p + 1 < l->end && l->p[1] == '*') {
                        l->p += 2;
                        while (l->p < l->end && !(*l->p == '*' && l->p + 1 < l->end && l->p[1] == '/')) {
                                if (*l->p == '\n')
                                        l->line++;
                                l->p++;
                        }
                        l->p = l->p < l->end ? l->p + 2 : l->end;
                } else
                        return;
        }
}

/* The token's text is [*ret_start, *ret_start + *ret_len): not NUL-terminated, points into the input. */
static KeyToken lexer_next(KeyLexer *l, const char **ret_start, size_t *ret_len) {
        lexer_skip_space(l);
        *ret_start = l->p;
        *ret_len = 0;
        if (l->p >= l->end)
                return TOKEN_END;
        char c = *l->p;
        if (c == '{' || c == '}' || c == ';') {
                l->p++;
                return c == '{' ? TOKEN_LBRACE : c == '}' ? TOKEN_RBRACE : TOKEN_SEMICOLON;
        }
        if (c == '"') {
                const char *s = ++l->p;
                while (l->p < l->end && *l->p != '"' && *l->p != '\n')
                        l->p++;
                if (l->p >= l->end || *l->p != '"')
                        return TOKEN_ERROR;
                *ret_start = s;
                *ret_len = (size_t)(l->p - s);
                l->p++;
                return TOKEN_STRING;
        }
        const char *s = l->p;
        while (l->p < l->end && !strchr(" \t\r\n{};\"#", *l->p))
                l->p++;
        *ret_start = s;
        *ret_len = (size_t)(l->p - s);
        return TOKEN_WORD;
}

static bool token_is(const char *s, size_t len, const char *word) {
        return len == strlen(word) && strncasecmp(s, word, len) == 0;
}

static int key_error(char **ret_error, unsigned line, const char *what) {
        if (ret_error)
                *ret_error = strprintf("line %u: %s", line, what);
        return PK_EMALFORMED;
}

/* The secret being read: erased and freed on every path that does not hand it on. */
typedef struct KeySecret {
        uint8_t *data;
        size_t len;
} KeySecret;

static void key_secret_erase(KeySecret *k) {
        erase_and_free(k->data, k->len);
        *k = (KeySecret){};
}

static int parse_key_body(KeyLexer *l, char **ret_alg, uint8_t **ret_secret, size_t *ret_secret_len,
                          char **ret_error) {
        _cleanup_free_ char *alg = NULL;
        _cleanup_(key_secret_erase) KeySecret secret = {};
        const char *s;
        size_t n;
        int r = 0;

        for (;;) {
                KeyToken t = lexer_next(l, &s, &n);
                if (t == TOKEN_RBRACE)
                        break;
                if (t != TOKEN_WORD)
                        return key_error(ret_error, l->line, "expected 'algorithm', 'secret' or '}'");
                bool is_alg = token_is(s, n, "algorithm"), is_secret = token_is(s, n, "secret");
                if (!is_alg && !is_secret)
                        return key_error(ret_error, l->line,
                                         "unknown statement in key (expected algorithm or secret)");
                t = lexer_next(l, &s, &n);
                if ((t != TOKEN_WORD && t != TOKEN_STRING) || n == 0 || n > 1024)
                        return key_error(ret_error, l->line,
                                         is_alg ? "expected an algorithm name" : "expected a secret");
                if (is_alg) {
                        free(alg);
                        alg = strndup(s, n);
                        if (!alg)
                                return -ENOMEM;
                } else {
                        key_secret_erase(&secret);
                        r = crypto_base64_decode(s, n, &secret.data, &secret.len);
                        if (r == PK_EMALFORMED)
                                return key_error(ret_error, l->line, "secret is not valid base64");
                        if (r < 0)
                                return r;
                }
                if (lexer_next(l, &s, &n) != TOKEN_SEMICOLON)
                        return key_error(ret_error, l->line, "expected ';'");
        }
        if (!alg || !secret.data)
                return key_error(ret_error, l->line, !alg ? "key has no algorithm" : "key has no secret");
        *ret_alg = TAKE_PTR(alg);
        *ret_secret_len = secret.len;
        *ret_secret = TAKE_PTR(secret.data);
        return 0;
}

int tsig_key_parse(const char *text, size_t len, TsigKey **ret, char **ret_error) {
        KeyLexer l = { .p = text, .end = text + len, .line = 1 };
        _cleanup_free_ char *name = NULL, *alg = NULL;
        uint8_t *secret = NULL;
        size_t secret_len = 0;
        const char *s;
        size_t n;
        KeyToken t;
        int r;

        t = lexer_next(&l, &s, &n);
        if (t != TOKEN_WORD || !token_is(s, n, "key"))
                return key_error(ret_error, l.line, "expected 'key'");
        t = lexer_next(&l, &s, &n);
        if ((t != TOKEN_WORD && t != TOKEN_STRING) || n == 0 || n >= DNS_NAME_TEXT_MAX)
                return key_error(ret_error, l.line, "expected a key name");
        name = strndup(s, n);
        if (!name)
                return -ENOMEM;
        if (lexer_next(&l, &s, &n) != TOKEN_LBRACE)
                return key_error(ret_error, l.line, "expected '{'");
        r = parse_key_body(&l, &alg, &secret, &secret_len, ret_error);
        if (r < 0)
                return r;
        t = lexer_next(&l, &s, &n);
        if (t == TOKEN_SEMICOLON)
                t = lexer_next(&l, &s, &n);
        if (t != TOKEN_END) {
                erase_and_free(secret, secret_len);
                return key_error(ret_error, l.line, "expected exactly one key");
        }
        r = tsig_key_new(name, alg, secret, secret_len, ret);
        erase_and_free(secret, secret_len);
        if (r == -EOPNOTSUPP) {
                if (ret_error)
                        *ret_error =
                            strprintf("unsupported algorithm '%s' (hmac-sha1, hmac-sha224, hmac-sha256, "
                                      "hmac-sha384, hmac-sha512)",
                                      alg);
                return PK_EMALFORMED;
        }
        if (r == PK_EMALFORMED)
                return key_error(ret_error, 1, "invalid key name");
        return r;
}

int tsig_key_load_file(const char *path, TsigKey **ret, char **ret_error) {
        _cleanup_close_ int fd = -1;
        char *text = NULL;
        size_t len = 0;
        struct stat st;
        int r;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                r = -errno;
                if (ret_error)
                        *ret_error = strprintf("cannot open TSIG key file '%s': %s", path, pk_strerror(r));
                return r;
        }
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode)) {
                if (ret_error)
                        *ret_error = strprintf("TSIG key file '%s' is not a regular file", path);
                return -EINVAL;
        }
        /* A key readable by others lets them rewrite the cluster's discovery records; a key owned by
         * another user can be replaced by that user (ssh's rule for private keys). */
        if (st.st_uid != 0 && st.st_uid != geteuid()) {
                if (ret_error)
                        *ret_error = strprintf(
                            "TSIG key file '%s' (mode %04o) is owned by uid %u: it must be "
                            "owned by root or by the user protokube runs as (uid %u)",
                            path, (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid, (unsigned)geteuid());
                return -EPERM;
        }
        if (st.st_mode & 0077) {
                if (ret_error)
                        *ret_error =
                            strprintf("TSIG key file '%s' has mode %04o (owner uid %u): it must not "
                                      "be accessible by group or others (chmod 600)",
                                      path, (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid);
                return -EPERM;
        }
        r = read_full_fd_secret(fd, KEY_FILE_MAX, &text, &len);
        if (r < 0) {
                if (ret_error)
                        *ret_error = strprintf("cannot read TSIG key file '%s': %s", path, pk_strerror(r));
                return r;
        }
        _cleanup_free_ char *msg = NULL;
        r = tsig_key_parse(text, len, ret, &msg);
        erase_and_free(text, len);
        if (r < 0 && ret_error)
                *ret_error = strprintf("TSIG key file '%s': %s", path, strna(msg));
        return r;
}

/* RFC 8945 §4.3.3: the TSIG variables, with names in canonical (lowercase, uncompressed) form. */
static int tsig_variables(const TsigKey *key, uint64_t time_signed, uint16_t fudge, uint16_t error,
                          const uint8_t *other, uint16_t other_len, DnsWriter *w) {
        dns_write_name(w, key->name, false);
        dns_write_u16(w, DNS_CLASS_ANY);
        dns_write_u32(w, 0);
        dns_write_name(w, key->algorithm, false);
        dns_write_u48(w, time_signed);
        dns_write_u16(w, fudge);
        dns_write_u16(w, error);
        dns_write_u16(w, other_len);
        dns_write_bytes(w, other, other_len);
        return dns_writer_error(w);
}

int tsig_sign(Buf *msg, const TsigKey *key, uint16_t fudge, uint8_t ret_mac[static CRYPTO_HMAC_MAX],
              size_t *ret_mac_len) {
        _cleanup_(dns_writer_freep) DnsWriter vars, rr;
        uint8_t mac[CRYPTO_HMAC_MAX];
        size_t mac_len = crypto_hash_size(key->hash);
        int r;

        dns_writer_init(&vars);
        dns_writer_init(&rr);
        if (msg->len < DNS_HEADER_SIZE)
                return -EINVAL;
        uint16_t id = (uint16_t)(msg->data[0] << 8 | msg->data[1]);
        uint16_t arcount = (uint16_t)(msg->data[10] << 8 | msg->data[11]);
        if (arcount == UINT16_MAX)
                return PK_ETOOBIG;
        uint64_t time_signed = now(CLOCK_REALTIME) / USEC_PER_SEC;

        r = tsig_variables(key, time_signed, fudge, 0, NULL, 0, &vars);
        if (r < 0)
                return r;
        CryptoPart parts[] = { { msg->data, msg->len }, { vars.buf.data, vars.buf.len } };
        r = crypto_hmac_parts(key->hash, key->secret, key->secret_len, parts, ELEMENTSOF(parts), mac);
        if (r < 0)
                return r;

        /* RFC 8945 §4.2: the TSIG RR, last in the additional section. */
        dns_write_name(&rr, key->name, false);
        dns_write_u16(&rr, DNS_TYPE_TSIG);
        dns_write_u16(&rr, DNS_CLASS_ANY);
        dns_write_u32(&rr, 0);
        size_t rdlen_at = dns_writer_len(&rr);
        dns_write_u16(&rr, 0);
        dns_write_name(&rr, key->algorithm, false);
        dns_write_u48(&rr, time_signed);
        dns_write_u16(&rr, fudge);
        dns_write_u16(&rr, (uint16_t)mac_len);
        dns_write_bytes(&rr, mac, mac_len);
        dns_write_u16(&rr, id);
        dns_write_u16(&rr, 0);
        dns_write_u16(&rr, 0);
        dns_writer_patch_u16(&rr, rdlen_at, (uint16_t)(dns_writer_len(&rr) - rdlen_at - 2));
        r = dns_writer_error(&rr);
        if (r < 0)
                return r;
        if (msg->len + rr.buf.len > DNS_MESSAGE_MAX)
                return PK_ETOOBIG;
        r = buf_add(msg, rr.buf.data, rr.buf.len);
        if (r < 0)
                return r;
        arcount++;
        msg->data[10] = (uint8_t)(arcount >> 8);
        msg->data[11] = (uint8_t)arcount;
        memcpy(ret_mac, mac, mac_len);
        *ret_mac_len = mac_len;
        return 0;
}

typedef struct TsigRdata {
        char algorithm[DNS_NAME_TEXT_MAX];
        uint64_t time_signed;
        uint16_t fudge;
        uint16_t mac_len;
        const uint8_t *mac;
        uint16_t original_id;
        uint16_t error;
        uint16_t other_len;
        const uint8_t *other;
} TsigRdata;

static int tsig_rdata_parse(const DnsMessage *m, const DnsRR *rr, TsigRdata *t) {
        DnsReader r;
        size_t end = rr->rdata_offset + rr->rdata_len;

        /* Reading stops at the end of the RDATA; the algorithm name may not point past it. */
        dns_reader_init(&r, m->wire, end);
        r.pos = rr->rdata_offset;
        dns_read_name(&r, t->algorithm);
        t->time_signed = dns_read_u48(&r);
        t->fudge = dns_read_u16(&r);
        t->mac_len = dns_read_u16(&r);
        t->mac = dns_read_bytes(&r, t->mac_len);
        t->original_id = dns_read_u16(&r);
        t->error = dns_read_u16(&r);
        t->other_len = dns_read_u16(&r);
        t->other = dns_read_bytes(&r, t->other_len);
        if (dns_reader_error(&r) < 0 || r.pos != end)
                return PK_EMALFORMED;
        return 0;
}

static int tsig_fail(TsigVerdict *v, uint16_t error) {
        v->error = error;
        return PK_ETSIG;
}

/* What the digest covers before the message itself: the request's MAC (§4.3.1) or the prior message's
 * (§5.3.1), each with its size, and for the later messages of a stream the unsigned messages received since
 * the last signed one. timers_only: the later messages of a stream digest only Time Signed and Fudge of
 * the TSIG variables (§5.3.1), not all of them. */
typedef struct TsigDigestPrefix {
        const uint8_t *mac;
        size_t mac_len;
        const uint8_t *pending;
        size_t pending_len;
        bool timers_only;
} TsigDigestPrefix;

static int tsig_check_mac(const DnsMessage *m, const DnsRR *rr, const TsigRdata *t, const TsigKey *key,
                          const TsigDigestPrefix *pre) {
        _cleanup_(dns_writer_freep) DnsWriter vars;
        uint8_t header[DNS_HEADER_SIZE], size[2], mac[CRYPTO_HMAC_MAX];
        size_t mac_len = crypto_hash_size(key->hash);
        int r;

        dns_writer_init(&vars);
        /* Truncated MACs (RFC 8945 §5.2.2.1) are not accepted: we never ask for them. */
        if (t->mac_len != mac_len)
                return DNS_RCODE_BADSIG;
        if (pre->timers_only) {
                dns_write_u48(&vars, t->time_signed);
                dns_write_u16(&vars, t->fudge);
                r = dns_writer_error(&vars);
        } else
                r = tsig_variables(key, t->time_signed, t->fudge, t->error, t->other, t->other_len, &vars);
        if (r < 0)
                return r;
        /* §4.3.2: the message as it was before the TSIG RR was added, with the original ID. */
        memcpy(header, m->wire, DNS_HEADER_SIZE);
        header[0] = (uint8_t)(t->original_id >> 8);
        header[1] = (uint8_t)t->original_id;
        uint16_t arcount = (uint16_t)(m->counts[DNS_SECTION_ADDITIONAL] - 1);
        header[10] = (uint8_t)(arcount >> 8);
        header[11] = (uint8_t)arcount;
        size[0] = (uint8_t)(pre->mac_len >> 8);
        size[1] = (uint8_t)pre->mac_len;
        CryptoPart parts[] = {
                { size, pre->mac ? 2 : 0 },
                { pre->mac, pre->mac ? pre->mac_len : 0 },
                { pre->pending, pre->pending_len },
                { header, DNS_HEADER_SIZE },
                { m->wire + DNS_HEADER_SIZE, rr->offset - DNS_HEADER_SIZE },
                { vars.buf.data, vars.buf.len },
        };
        r = crypto_hmac_parts(key->hash, key->secret, key->secret_len, parts, ELEMENTSOF(parts), mac);
        if (r < 0)
                return r;
        return crypto_memeq(mac, t->mac, mac_len) ? 0 : DNS_RCODE_BADSIG;
}

/* The verification shared by single responses and streams; ret_mac (optional) gets the message's MAC,
 * which the next message of a stream digests first. */
static int tsig_verify_one(const DnsMessage *m, const TsigKey *key, const TsigDigestPrefix *pre,
                           unsigned flags, TsigVerdict *verdict, uint8_t *ret_mac) {
        TsigRdata t;
        int r;

        *verdict = (TsigVerdict){};
        /* §5.1: the TSIG RR is the last RR of the additional section, and there is only one. */
        for (size_t i = 0; i + 1 < m->n_rrs; i++)
                if (m->rrs[i].type == DNS_TYPE_TSIG)
                        return PK_EMALFORMED;
        if (m->n_rrs == 0 || m->rrs[m->n_rrs - 1].type != DNS_TYPE_TSIG)
                return tsig_fail(verdict, DNS_RCODE_BADSIG);
        const DnsRR *rr = &m->rrs[m->n_rrs - 1];
        if (rr->section != DNS_SECTION_ADDITIONAL || rr->class != DNS_CLASS_ANY || rr->ttl != 0)
                return PK_EMALFORMED;
        r = tsig_rdata_parse(m, rr, &t);
        if (r < 0)
                return r;
        verdict->present = true;
        verdict->server_error = t.error;
        verdict->time_signed = t.time_signed;
        if (!dns_name_equal(rr->name, key->name) || !dns_name_equal(t.algorithm, key->algorithm))
                return tsig_fail(verdict, DNS_RCODE_BADKEY);
        /* §5.3.2: a server that could not verify our request answers unsigned, with the error. */
        if (t.error == DNS_RCODE_BADSIG || t.error == DNS_RCODE_BADKEY)
                return PK_ETSIG;
        r = tsig_check_mac(m, rr, &t, key, pre);
        if (r < 0)
                return r;
        if (r > 0)
                return tsig_fail(verdict, (uint16_t)r);
        /* Original ID exists for forwarders that rewrite the ID (§4.3.2). We talk to the primary directly,
         * so a different ID means the message is not the one that was signed. */
        if (t.original_id != m->id)
                return tsig_fail(verdict, DNS_RCODE_BADSIG);
        /* §5.2.3: the time window. */
        if (!(flags & TSIG_VERIFY_SKIP_TIME)) {
                uint64_t n = now(CLOCK_REALTIME) / USEC_PER_SEC;
                uint64_t delta = n > t.time_signed ? n - t.time_signed : t.time_signed - n;
                if (delta > t.fudge)
                        return tsig_fail(verdict, DNS_RCODE_BADTIME);
        }
        if (t.error != 0)
                return PK_ETSIG;
        if (ret_mac)
                memcpy(ret_mac, t.mac, t.mac_len);
        return 0;
}

int tsig_verify(const uint8_t *msg, size_t len, const TsigKey *key, const uint8_t *request_mac,
                size_t request_mac_len, unsigned flags, TsigVerdict *verdict) {
        _cleanup_(dns_message_freep) DnsMessage *m = NULL;
        TsigVerdict dummy;
        int r;

        if (!verdict)
                verdict = &dummy;
        *verdict = (TsigVerdict){};
        r = dns_message_parse(msg, len, &m);
        if (r < 0)
                return r;
        TsigDigestPrefix pre = { .mac = request_mac, .mac_len = request_mac_len };
        return tsig_verify_one(m, key, &pre, flags, verdict, NULL);
}

void tsig_stream_init(TsigStream *t, const TsigKey *key, const uint8_t *request_mac,
                      size_t request_mac_len) {
        *t = (TsigStream){ .key = key, .mac_len = MIN(request_mac_len, (size_t)CRYPTO_HMAC_MAX) };
        memcpy(t->mac, request_mac, t->mac_len);
        buf_init(&t->pending, TSIG_STREAM_UNSIGNED_MAX * DNS_MESSAGE_MAX);
}

void tsig_stream_done(TsigStream *t) {
        buf_free(&t->pending);
}

int tsig_stream_verify(TsigStream *t, const DnsMessage *m, unsigned flags, TsigVerdict *verdict) {
        TsigVerdict dummy;
        if (!verdict)
                verdict = &dummy;
        *verdict = (TsigVerdict){};
        bool has_tsig = m->n_rrs > 0 && m->rrs[m->n_rrs - 1].type == DNS_TYPE_TSIG;
        /* §5.3.1: the first message must be signed; up to 99 after it may not be, and are digested with the
         * next signed one. */
        if (!has_tsig && t->n_messages > 0) {
                if (t->n_unsigned + 1 >= TSIG_STREAM_UNSIGNED_MAX)
                        return tsig_fail(verdict, DNS_RCODE_BADSIG);
                int r = buf_add(&t->pending, m->wire, m->len);
                if (r < 0)
                        return r;
                t->n_unsigned++;
                t->n_messages++;
                return 1;
        }
        TsigDigestPrefix pre = { .mac = t->mac,
                                 .mac_len = t->mac_len,
                                 .pending = t->pending.data,
                                 .pending_len = t->pending.len,
                                 .timers_only = t->n_messages > 0 };
        uint8_t mac[CRYPTO_HMAC_MAX];
        int r = tsig_verify_one(m, t->key, &pre, flags, verdict, mac);
        if (r < 0)
                return r;
        t->mac_len = crypto_hash_size(t->key->hash);
        memcpy(t->mac, mac, t->mac_len);
        t->pending.len = 0;
        t->n_unsigned = 0;
        t->n_messages++;
        return 0;
}

int tsig_stream_finish(const TsigStream *t) {
        /* §5.3.1: the last message must be signed too. */
        return t->n_messages > 0 && t->n_unsigned == 0 ? 0 : PK_ETSIG;
}
