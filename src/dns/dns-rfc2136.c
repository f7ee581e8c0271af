/* SPDX-License-Identifier: Apache-2.0 */
/* The rfc2136 provider: reads owned names by querying the primary server, writes them with one TSIG-signed
 * DNS UPDATE per zone per pass (RFC 2136, RFC 8945). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "basic/errors.h"
#include "basic/stop.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "dns/dns-axfr.h"
#include "dns/dns-provider.h"
#include "dns/dns-transport.h"
#include "dns/dns-tsig.h"
#include "dns/dns-update.h"
#include "dns/dns-wire.h"
#include "spec/spec.h"

#define RFC2136_TIMEOUT_DEFAULT (2 * USEC_PER_SEC)
#define RFC2136_ATTEMPTS        3
#define RFC2136_BACKOFF_FIRST   (200 * USEC_PER_MSEC)

struct DnsProviderState {
        DnsServer server;
        TsigKey
            *key; /* NULL: unsigned (a server accepting that is misconfigured, but it is the user's call) */
        usec_t timeout;
        char *zone;        /* from the spec; NULL: found by SOA lookup */
        char **zone_cache; /* alternating name, zone */
        char *note;        /* what the last read did differently than planned (a transfer not used) */
};

static int rfc2136_open(const ClusterSpec *spec, DnsProviderState **ret, char **ret_error) {
        const Rfc2136Spec *rs = &spec->dns.rfc2136;
        DnsProviderState *s;
        int r;

        s = new0(DnsProviderState, 1);
        if (!s)
                return -ENOMEM;
        s->timeout = rs->timeout.set && rs->timeout.value > 0 ? rs->timeout.value : RFC2136_TIMEOUT_DEFAULT;
        if (!rs->server || dns_server_parse(rs->server, &s->server) < 0) {
                *ret_error = rs->server ? strprintf("dns.rfc2136.server '%s' is not an address[:port] (a "
                                                    "literal IPv4 or [IPv6] address)",
                                                    rs->server)
                                        : strdup("dns.rfc2136.server is required for the rfc2136 provider");
                r = PK_ESPEC;
                goto fail;
        }
        if (spec->dns.zone) {
                r = dns_name_normalize(spec->dns.zone, &s->zone);
                if (r < 0) {
                        *ret_error = strprintf("dns.zone '%s' is not a valid DNS name", spec->dns.zone);
                        r = PK_ESPEC;
                        goto fail;
                }
        }
        if (rs->tsig_key_file) {
                r = tsig_key_load_file(rs->tsig_key_file, &s->key, ret_error);
                if (r < 0)
                        goto fail;
        }
        *ret = s;
        return 0;
fail:
        free(s->zone);
        free(s);
        return r;
}

static void rfc2136_close(DnsProviderState *s) {
        if (!s)
                return;
        tsig_key_free(s->key);
        free(s->zone);
        strv_free(s->zone_cache);
        free(s->note);
        free(s);
}

static char *rfc2136_take_note(DnsProviderState *s) {
        return TAKE_PTR(s->note);
}

/* Why a server rejected us, in words a user can act on. */
static char *describe_rcode(const DnsProviderState *s, unsigned rcode, const TsigVerdict *v) {
        char b1[16], b2[16];
        const char *name = dns_rcode_to_string(rcode, b1);
        if (v && v->present && v->server_error != 0) {
                const char *hint = v->server_error == DNS_RCODE_BADSIG
                                       ? "the server does not accept our signature: wrong secret?"
                                   : v->server_error == DNS_RCODE_BADKEY
                                       ? "the server does not know key or algorithm"
                                   : v->server_error == DNS_RCODE_BADTIME
                                       ? "our clock and the server's differ by more than the fudge"
                                       : "TSIG rejected";
                return strprintf("%s, TSIG error %s (key '%s': %s)", name,
                                 dns_rcode_to_string(v->server_error, b2), s->key ? s->key->name : "-",
                                 hint);
        }
        switch (rcode) {
        case DNS_RCODE_REFUSED:
                return strprintf("%s (the server does not serve this zone, or does not let %s change it)",
                                 name, s->key ? "our key" : "unsigned requests");
        case DNS_RCODE_NOTAUTH:
                return strprintf("%s (the server is not authoritative for the zone, or rejected our key)",
                                 name);
        case DNS_RCODE_NOTZONE:
                return strprintf("%s (a name is outside the zone)", name);
        case DNS_RCODE_SERVFAIL:
                return strprintf("%s (the server failed to process the request)", name);
        default:
                return strdup(name);
        }
}

/* RFC 8945 §5.3: the answer must carry a valid TSIG over our request's MAC. */
static int verify_answer(DnsProviderState *s, const uint8_t *answer, size_t len, const uint8_t *mac,
                         size_t mac_len, const char *what, char **ret_error) {
        TsigVerdict v = {};
        char b[16];
        int r = tsig_verify(answer, len, s->key, mac, mac_len, 0, &v);
        if (r >= 0)
                return 0;
        if (r != PK_ETSIG) {
                *ret_error = strprintf("%s at %s failed: malformed response", what, s->server.text);
                return r;
        }
        unsigned rcode = len >= 4 ? answer[3] & 0xf : 0;
        if (v.present && v.server_error != 0) {
                _cleanup_free_ char *d = describe_rcode(s, rcode, &v);
                *ret_error = strprintf("%s at %s failed: %s", what, s->server.text, strna(d));
        } else if (!v.present && rcode != DNS_RCODE_NOERROR) {
                /* Servers answer some errors unsigned (Knot: REFUSED for a zone it does not serve). The
                 * answer is not trusted for data, but its rcode is the best cause we have. */
                _cleanup_free_ char *d = describe_rcode(s, rcode, NULL);
                *ret_error = strprintf("%s at %s failed: %s; the answer was not signed", what,
                                       s->server.text, strna(d));
                return PK_EDNS_RCODE;
        } else if (!v.present)
                *ret_error = strprintf("%s at %s failed: the response (%s) is not signed with our key '%s'",
                                       what, s->server.text, dns_rcode_to_string(rcode, b), s->key->name);
        else
                *ret_error = strprintf("%s at %s failed: the response's TSIG does not verify (%s)", what,
                                       s->server.text, dns_rcode_to_string(v.error, b));
        return PK_ETSIG;
}

/* Signs (when there is a key), sends, verifies the TSIG of the answer. Retries timeouts and SERVFAIL with
 * backoff, so one exchange takes at most RFC2136_ATTEMPTS * timeout + the backoff. A fresh ID and time
 * for every attempt. what: e.g. "UPDATE of zone 'k8s.test.'", for messages. */
static int client_exchange(DnsProviderState *s, const DnsWriter *msg, const char *what, DnsMessage **ret,
                           char **ret_error) {
        usec_t start = now(CLOCK_MONOTONIC);
        int r = 0;

        for (unsigned attempt = 0; attempt < RFC2136_ATTEMPTS; attempt++) {
                _cleanup_buf_ Buf q;
                _cleanup_free_ uint8_t *answer = NULL;
                _cleanup_(dns_message_freep) DnsMessage *m = NULL;
                uint8_t mac[CRYPTO_HMAC_MAX];
                size_t mac_len = 0, len;

                if (attempt > 0 && sleep_usec(RFC2136_BACKOFF_FIRST << (attempt - 1)) < 0) {
                        *ret_error = strprintf("%s at %s: stopping", what, s->server.text);
                        return -ECANCELED;
                }
                buf_init(&q, DNS_MESSAGE_MAX);
                r = buf_add(&q, msg->buf.data, msg->buf.len);
                if (r < 0)
                        return r;
                uint16_t id = dns_random_id();
                q.data[0] = (uint8_t)(id >> 8);
                q.data[1] = (uint8_t)id;
                if (s->key) {
                        r = tsig_sign(&q, s->key, TSIG_FUDGE_DEFAULT, mac, &mac_len);
                        if (r < 0)
                                return r;
                }
                r = dns_exchange(&s->server, q.data, q.len, s->timeout, &answer, &len, NULL);
                if (r == PK_ETIMEOUT || r == -ECONNRESET || r == -ECONNREFUSED || r == -EPIPE)
                        continue;
                if (r < 0) {
                        *ret_error = strprintf("%s at %s failed: %s", what, s->server.text, pk_strerror(r));
                        return r;
                }
                if (s->key) {
                        r = verify_answer(s, answer, len, mac, mac_len, what, ret_error);
                        if (r < 0)
                                return r;
                }
                r = dns_message_parse(answer, len, &m);
                if (r < 0) {
                        *ret_error = strprintf("%s at %s failed: malformed response", what, s->server.text);
                        return r;
                }
                if (dns_message_rcode(m) == DNS_RCODE_SERVFAIL && attempt + 1 < RFC2136_ATTEMPTS) {
                        r = PK_EDNS_RCODE;
                        continue;
                }
                *ret = TAKE_PTR(m);
                return 0;
        }
        char b1[GO_DURATION_MAX], b2[GO_DURATION_MAX];
        if (r == PK_EDNS_RCODE)
                *ret_error = strprintf("%s at %s failed: SERVFAIL (%u attempts)", what, s->server.text,
                                       RFC2136_ATTEMPTS);
        else
                *ret_error = strprintf("%s at %s failed: no response within %s (%u attempts in %s%s)", what,
                                       s->server.text, format_go_duration(b1, s->timeout), RFC2136_ATTEMPTS,
                                       format_go_duration(b2, now(CLOCK_MONOTONIC) - start),
                                       r == -ECONNREFUSED ? ", connection refused" : "");
        return r == PK_EDNS_RCODE ? PK_EDNS_RCODE : PK_ETIMEOUT;
}

static int client_query(DnsProviderState *s, const char *name, uint16_t type, const char *what,
                        DnsMessage **ret, char **ret_error) {
        _cleanup_(dns_writer_freep) DnsWriter w;
        dns_writer_init(&w);
        int r = dns_query_build(0, name, type, &w);
        if (r < 0) {
                *ret_error = strprintf("cannot build a query for '%s'", name);
                return r;
        }
        _cleanup_(dns_message_freep) DnsMessage *m = NULL;
        r = client_exchange(s, &w, what, &m, ret_error);
        if (r < 0)
                return r;
        /* The answer must be to our question (RFC 5452 §4.2), not just carry our ID. */
        if (m->counts[DNS_SECTION_QUESTION] != 1 || m->rrs[0].type != type ||
            !dns_name_equal(m->rrs[0].name, name)) {
                *ret_error =
                    strprintf("%s at %s failed: the answer is for another question", what, s->server.text);
                return PK_EMALFORMED;
        }
        *ret = TAKE_PTR(m);
        return 0;
}

/* The SOA owner that answers for name, from the answer (the zone apex itself) or the authority section
 * (a negative answer within the zone, RFC 2308 §3). */
static const char *soa_owner(const DnsMessage *m, const char *name) {
        for (size_t i = 0; i < m->n_rrs; i++) {
                const DnsRR *rr = &m->rrs[i];
                if (rr->type != DNS_TYPE_SOA || rr->section == DNS_SECTION_QUESTION)
                        continue;
                if (rr->section == DNS_SECTION_ANSWER && dns_name_equal(rr->name, name))
                        return rr->name;
                if (rr->section == DNS_SECTION_AUTHORITY && dns_name_in_zone(name, rr->name))
                        return rr->name;
        }
        return NULL;
}

static int find_zone_by_soa(DnsProviderState *s, const char *name, char **ret, char **ret_error) {
        uint8_t wire[DNS_WIRE_NAME_MAX];
        size_t len;
        int r = dns_name_to_wire(name, wire, &len);
        if (r < 0)
                return r;
        /* Walk up one label at a time; the name has at most 127 labels, and the root is never our zone. */
        const char *candidate = name;
        for (size_t i = 0; wire[i] != 0; i += 1 + wire[i]) {
                _cleanup_(dns_message_freep) DnsMessage *m = NULL;
                _cleanup_free_ char *what =
                    strprintf("SOA query for '%s' (finding the zone of '%s')", candidate, name);
                if (!what)
                        return -ENOMEM;
                r = client_query(s, candidate, DNS_TYPE_SOA, what, &m, ret_error);
                if (r < 0)
                        return r;
                unsigned rcode = dns_message_rcode(m);
                const char *owner = rcode == DNS_RCODE_NOERROR || rcode == DNS_RCODE_NXDOMAIN
                                        ? soa_owner(m, candidate)
                                        : NULL;
                if (owner)
                        return dns_name_normalize(owner, ret);
                candidate = strchr(candidate, '.');
                if (!candidate || streq(candidate, ".") || candidate[1] == 0)
                        break;
                candidate++;
        }
        *ret_error =
            strprintf("no zone containing '%s' found at %s (set dns.zone, or check that the server is "
                      "authoritative for it)",
                      name, s->server.text);
        return PK_EDNS_RCODE;
}

static int client_zone(DnsProviderState *s, const char *name, const char **ret, char **ret_error) {
        if (s->zone) {
                if (!dns_name_in_zone(name, s->zone)) {
                        *ret_error = strprintf("'%s' is outside dns.zone '%s'", name, s->zone);
                        return PK_ESPEC;
                }
                *ret = s->zone;
                return 0;
        }
        for (size_t i = 0; s->zone_cache && s->zone_cache[i]; i += 2)
                if (streq(s->zone_cache[i], name)) {
                        *ret = s->zone_cache[i + 1];
                        return 0;
                }
        _cleanup_free_ char *zone = NULL;
        int r = find_zone_by_soa(s, name, &zone, ret_error);
        if (r < 0)
                return r;
        if (strv_extend(&s->zone_cache, name) < 0 || strv_extend(&s->zone_cache, zone) < 0)
                return -ENOMEM;
        *ret = s->zone_cache[strv_length(s->zone_cache) - 1];
        return 0;
}

/* Files the answer m to the question (owned->name, owned->type) under l. */
static int collect_rrset(DnsProviderState *s, const DnsRRset *owned, const DnsMessage *m, const char *what,
                         DnsRRsetList *l, char **ret_error) {
        unsigned rcode = dns_message_rcode(m);
        if (rcode != DNS_RCODE_NOERROR && rcode != DNS_RCODE_NXDOMAIN) {
                _cleanup_free_ char *d = describe_rcode(s, rcode, NULL);
                *ret_error = strprintf("%s at %s failed: %s", what, s->server.text, strna(d));
                return PK_EDNS_RCODE;
        }
        int r = dns_rrset_from_answer(m, owned->name, owned->type, l);
        if (r == PK_EMALFORMED)
                *ret_error = strprintf("%s at %s failed: malformed address record", what, s->server.text);
        return r;
}

static char *query_what(const DnsRRset *owned, const char *zone) {
        char tb[16];
        return strprintf("query for '%s' %s (zone '%s')", owned->name, dns_type_to_string(owned->type, tb),
                         zone);
}

static int read_rrset(DnsProviderState *s, const DnsRRset *owned, const char *zone, DnsRRsetList *l,
                      char **ret_error) {
        _cleanup_(dns_message_freep) DnsMessage *m = NULL;
        _cleanup_free_ char *what = query_what(owned, zone);
        if (!what)
                return -ENOMEM;
        int r = client_query(s, owned->name, owned->type, what, &m, ret_error);
        if (r < 0)
                return r;
        return collect_rrset(s, owned, m, what, l, ret_error);
}

/* The reads of a pass, pipelined over one TCP connection (RFC 7766 §6.2.1.1): one round trip instead of one
 * per name and type. Each query is signed on its own and each answer verified against its query's MAC (RFC
 * 8945 §5.3). Sets done[i] for every RRset it filed; the rest (no answer, a bad one) go the sequential way,
 * with its retries and messages. */
#define PIPELINE_MIN 8

typedef struct PipelinedQuery {
        uint8_t *wire;
        size_t len;
        uint8_t mac[CRYPTO_HMAC_MAX];
        size_t mac_len;
} PipelinedQuery;

/* IDs run on from a random base: unique within the batch with no table of used ones. Their guessability
 * does not matter on this path: a TCP connection cannot be answered blind, and every answer is signed. */
static int pipeline_build(DnsProviderState *s, const DnsRRsetList *owned, PipelinedQuery *q) {
        uint16_t base = dns_random_id();
        for (size_t i = 0; i < owned->n; i++) {
                _cleanup_(dns_writer_freep) DnsWriter w;
                _cleanup_buf_ Buf b;
                uint16_t id = (uint16_t)(base + i);
                dns_writer_init(&w);
                buf_init(&b, DNS_MESSAGE_MAX);
                int r = dns_query_build(id, owned->items[i].name, owned->items[i].type, &w);
                if (r >= 0)
                        r = buf_add(&b, w.buf.data, w.buf.len);
                if (r >= 0 && s->key)
                        r = tsig_sign(&b, s->key, TSIG_FUDGE_DEFAULT, q[i].mac, &q[i].mac_len);
                if (r < 0)
                        return r;
                q[i].len = b.len;
                q[i].wire = (uint8_t *)buf_steal_str(&b);
                if (!q[i].wire)
                        return -ENOMEM;
        }
        return 0;
}

static int pipeline_accept(DnsProviderState *s, const DnsRRset *owned, const char *zone,
                           const PipelinedQuery *q, const uint8_t *answer, size_t len, DnsRRsetList *l) {
        _cleanup_(dns_message_freep) DnsMessage *m = NULL;
        _cleanup_free_ char *what = query_what(owned, zone), *err = NULL;
        if (!what)
                return -ENOMEM;
        if (s->key && verify_answer(s, answer, len, q->mac, q->mac_len, what, &err) < 0)
                return PK_ETSIG;
        if (dns_message_parse(answer, len, &m) < 0 || m->counts[DNS_SECTION_QUESTION] != 1 ||
            m->rrs[0].type != owned->type || !dns_name_equal(m->rrs[0].name, owned->name))
                return PK_EMALFORMED;
        if (dns_message_rcode(m) == DNS_RCODE_SERVFAIL)
                return PK_EDNS_RCODE; /* the sequential path retries it */
        return collect_rrset(s, owned, m, what, l, &err);
}

static void read_pipelined(DnsProviderState *s, const DnsRRsetList *owned, const char *const *zones,
                           DnsRRsetList *l, bool *done) {
        _cleanup_free_ PipelinedQuery *q = new0(PipelinedQuery, owned->n);
        _cleanup_free_ uint8_t **wires = new0(uint8_t *, owned->n);
        _cleanup_free_ size_t *lens = new0(size_t, owned->n);
        uint8_t **answers = NULL;
        size_t *alens = NULL;

        if (!q || !wires || !lens || owned->n > 65536)
                return;
        if (pipeline_build(s, owned, q) >= 0) {
                for (size_t i = 0; i < owned->n; i++) {
                        wires[i] = q[i].wire;
                        lens[i] = q[i].len;
                }
                if (dns_exchange_pipelined(&s->server, wires, lens, owned->n, s->timeout, &answers, &alens) >
                    0)
                        for (size_t i = 0; i < owned->n; i++)
                                done[i] = answers[i] && pipeline_accept(s, &owned->items[i], zones[i], &q[i],
                                                                        answers[i], alens[i], l) >= 0;
        }
        for (size_t i = 0; i < owned->n; i++) {
                free(q[i].wire);
                if (answers)
                        free(answers[i]);
        }
        free(answers);
        free(alens);
}

/* The per-name reads: pipelined when there are enough of them, then one by one for whatever that left. */
static int read_names(DnsProviderState *s, const DnsRRsetList *owned, const char *const *zones,
                      DnsRRsetList *l, char **ret_error) {
        _cleanup_free_ bool *done = new0(bool, owned->n ?: 1);
        if (!done)
                return -ENOMEM;
        if (owned->n >= PIPELINE_MIN)
                read_pipelined(s, owned, zones, l, done);
        for (size_t i = 0; i < owned->n; i++) {
                if (done[i])
                        continue;
                int r = read_rrset(s, &owned->items[i], zones[i], l, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* A zone transfer instead of the per-name reads once a zone holds this many owned names (each an A and an
 * AAAA RRset). Measured against BIND 9.18 on loopback (docs/dns.md): a signed query costs BIND ~50-250 us,
 * a transfer ~1-4 ms plus ~8 us per record of the whole zone; with 64 names (128 queries) the transfer wins
 * unless the zone holds a few thousand records besides ours, and below that the reads cost little anyway. */
#define AXFR_MIN_NAMES 64

static int axfr_on_message(const uint8_t *msg, size_t len, void *userdata) {
        return dns_axfr_feed(userdata, msg, len);
}

static char *axfr_failure(DnsProviderState *s, const DnsAxfr *x, int r) {
        char b[16];
        if (r == PK_EDNS_RCODE && (x->rcode == DNS_RCODE_REFUSED || x->rcode == DNS_RCODE_NOTAUTH))
                return strprintf("%s: the server does not let %s transfer the zone (allow-transfer)",
                                 dns_rcode_to_string(x->rcode, b), s->key ? "our key" : "us");
        if (r == PK_EDNS_RCODE)
                return strdup(dns_rcode_to_string(x->rcode, b));
        if (r == PK_ETSIG)
                return strprintf("TSIG of message %zu does not verify (%s)", x->n_messages + 1,
                                 dns_rcode_to_string(x->verdict.error ?: x->verdict.server_error, b));
        if (r == -ECONNRESET)
                return strprintf("the server closed the connection after %zu messages", x->n_messages);
        return strdup(pk_strerror(r));
}

/* Reads the owned RRsets of zone from one signed AXFR (RFC 5936, TSIG per RFC 8945 §5.3.1) and sets done[i]
 * for those it answers. Any failure leaves them to the per-name reads: a note says why, never an error. */
static int read_axfr(DnsProviderState *s, const char *zone, const DnsRRsetList *owned,
                     const char *const *zones, DnsRRsetList *l, bool *done) {
        _cleanup_(dns_writer_freep) DnsWriter w;
        _cleanup_buf_ Buf q;
        uint8_t mac[CRYPTO_HMAC_MAX];
        size_t mac_len = 0;
        uint16_t id = dns_random_id();
        DnsAxfr x;
        int r;

        dns_writer_init(&w);
        buf_init(&q, DNS_MESSAGE_MAX);
        r = dns_query_build(id, zone, DNS_TYPE_AXFR, &w);
        if (r >= 0)
                r = buf_add(&q, w.buf.data, w.buf.len);
        if (r >= 0 && s->key)
                r = tsig_sign(&q, s->key, TSIG_FUDGE_DEFAULT, mac, &mac_len);
        if (r < 0)
                return r;
        r = dns_axfr_init(&x, zone, id, s->key, mac, mac_len, owned);
        if (r < 0)
                return r;
        r = dns_exchange_stream(&s->server, q.data, q.len, s->timeout, 5 * s->timeout, axfr_on_message, &x);
        if (r == 1) {
                for (size_t i = 0; r >= 0 && i < owned->n; i++) {
                        const DnsRRset *o = &owned->items[i];
                        if (!streq(zones[i], zone) || !dns_axfr_answers_for(&x, o->name))
                                continue;
                        const DnsRRset *got = dns_rrset_list_find(&x.records, o->name, o->type);
                        DnsRRset *cur;
                        r = got ? dns_rrset_list_copy_entry(l, got)
                                : dns_rrset_list_get(l, o->name, o->type, 0, &cur);
                        done[i] = r >= 0;
                }
        } else if (r != -ENOMEM) {
                _cleanup_free_ char *why = axfr_failure(s, &x, r);
                char *note =
                    strprintf("%szone transfer of '%s' from %s not used (%s): reading its names one "
                              "by one",
                              s->note ? "; " : "", zone, s->server.text, strna(why));
                if (note) {
                        char *joined = strjoin(s->note ?: "", note);
                        free(note);
                        free(s->note);
                        s->note = joined;
                }
                r = 0;
        }
        dns_axfr_done(&x);
        return r < 0 ? r : 0;
}

static int rfc2136_read(DnsProviderState *s, const DnsRRsetList *owned, DnsRRsetList *ret,
                        char **ret_error) {
        _cleanup_rrset_list_ DnsRRsetList l = {}, rest = {};
        _cleanup_free_ const char **zones = new0(const char *, owned->n ?: 1);
        _cleanup_free_ const char **rest_zones = new0(const char *, owned->n ?: 1);
        _cleanup_free_ bool *done = new0(bool, owned->n ?: 1);
        _cleanup_strv_free_ char **tried = NULL;
        int r;

        if (!zones || !rest_zones || !done)
                return -ENOMEM;
        free(s->note);
        s->note = NULL;
        /* Zones may have changed since the last pass (a delegation added): look them up again. */
        s->zone_cache = strv_free(s->zone_cache);
        for (size_t i = 0; i < owned->n; i++) {
                r = client_zone(s, owned->items[i].name, &zones[i], ret_error);
                if (r < 0)
                        return r;
        }
        /* Many owned names in a zone: one transfer of the zone. The owned set has an A and an AAAA RRset
         * per name. */
        for (size_t i = 0; i < owned->n; i++) {
                if (strv_contains(tried, zones[i]))
                        continue;
                if (strv_extend(&tried, zones[i]) < 0)
                        return -ENOMEM;
                size_t n = 0;
                for (size_t j = i; j < owned->n; j++)
                        n += streq(zones[j], zones[i]);
                if (n / 2 >= AXFR_MIN_NAMES) {
                        r = read_axfr(s, zones[i], owned, zones, &l, done);
                        if (r < 0)
                                return r;
                }
        }
        for (size_t i = 0; i < owned->n; i++) {
                if (done[i])
                        continue;
                rest_zones[rest.n] = zones[i];
                r = dns_rrset_list_copy_entry(&rest, &owned->items[i]);
                if (r < 0)
                        return r;
        }
        r = read_names(s, &rest, rest_zones, &l, ret_error);
        if (r < 0)
                return r;
        dns_rrset_list_sort(&l);
        *ret = l;
        l = (DnsRRsetList){};
        return 0;
}

static int apply_zone(DnsProviderState *s, const char *zone, const DnsRRsetList *changes, char **ret_error) {
        _cleanup_(dns_message_freep) DnsMessage *m = NULL;
        _cleanup_free_ char *what = NULL;
        DnsUpdate u;
        int r;

        r = dns_update_build(0, zone, changes, &u);
        if (r < 0) {
                *ret_error = strprintf("cannot build the UPDATE for zone '%s': %s", zone, pk_strerror(r));
                return r;
        }
        what = strprintf("DNS UPDATE of zone '%s'", zone);
        if (!what) {
                dns_update_done(&u);
                return -ENOMEM;
        }
        r = client_exchange(s, &u.w, what, &m, ret_error);
        dns_update_done(&u);
        if (r < 0)
                return r;
        if (dns_message_rcode(m) != DNS_RCODE_NOERROR) {
                _cleanup_free_ char *d = describe_rcode(s, dns_message_rcode(m), NULL);
                *ret_error = strprintf("%s at %s failed: %s", what, s->server.text, strna(d));
                return PK_EDNS_RCODE;
        }
        return 0;
}

/* One UPDATE per zone. A zone that fails does not stop the others; the first error is returned and every
 * error is in the message. */
static int rfc2136_apply(DnsProviderState *s, const DnsRRsetList *changes, char **ret_error) {
        _cleanup_strv_free_ char **zones = NULL, **errors = NULL;
        int first = 0;

        for (size_t i = 0; i < changes->n; i++) {
                const char *zone;
                char *e = NULL;
                int r = client_zone(s, changes->items[i].name, &zone, &e);
                if (r < 0) {
                        if (e && strv_push(&errors, e) < 0)
                                free(e);
                        first = first ?: r;
                        continue;
                }
                if (!strv_contains(zones, zone) && strv_extend(&zones, zone) < 0)
                        return -ENOMEM;
        }
        STRV_FOREACH (z, zones) {
                _cleanup_rrset_list_ DnsRRsetList part = {};
                char *e = NULL;
                int r = 0;
                /* Only the names whose zone this is: with a delegated child zone on the same server, a name
                 * below the cut is "in" the parent too, and the parent would answer NOTZONE. */
                for (size_t i = 0; r >= 0 && i < changes->n; i++) {
                        const char *zone;
                        if (client_zone(s, changes->items[i].name, &zone, &e) >= 0 && streq(zone, *z))
                                r = dns_rrset_list_copy_entry(&part, &changes->items[i]);
                        free(e);
                        e = NULL;
                }
                if (r < 0)
                        return r;
                r = apply_zone(s, *z, &part, &e);
                if (r < 0) {
                        if (e && strv_push(&errors, e) < 0)
                                free(e);
                        first = first ?: r;
                }
        }
        if (first < 0)
                *ret_error = strv_join(errors, "; ");
        return first;
}

const DnsProvider dns_provider_rfc2136 = {
        .name = "rfc2136",
        .tracks_ttl = true,
        .open = rfc2136_open,
        .close = rfc2136_close,
        .read = rfc2136_read,
        .apply = rfc2136_apply,
        .take_note = rfc2136_take_note,
};
