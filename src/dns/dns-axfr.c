/* SPDX-License-Identifier: Apache-2.0 */
/* The zone transfer reader (RFC 5936): a response parser fed one message at a time. */
#include "dns/dns-axfr.h"

#include <string.h>

#include "basic/errors.h"
#include "basic/macro.h"

int dns_axfr_init(DnsAxfr *x, const char *zone, uint16_t id, const TsigKey *key, const uint8_t *request_mac,
                  size_t request_mac_len, const DnsRRsetList *owned) {
        *x = (DnsAxfr){ .id = id, .owned = owned, .key = key };
        int r = dns_name_normalize(zone, &x->zone);
        if (r < 0)
                return r;
        if (key)
                tsig_stream_init(&x->tsig, key, request_mac, request_mac_len);
        return 0;
}

void dns_axfr_done(DnsAxfr *x) {
        free(x->zone);
        x->zone = NULL;
        if (x->key)
                tsig_stream_done(&x->tsig);
        dns_rrset_list_done(&x->records);
        for (size_t i = 0; i < x->n_shadows; i++)
                free(x->shadows[i].name);
        free(x->shadows);
        x->shadows = NULL;
        x->n_shadows = 0;
}

static int add_shadow(DnsAxfr *x, const char *name, bool strict) {
        if (x->shadows_overflow)
                return 0;
        if (x->n_shadows >= DNS_AXFR_SHADOWS_MAX) {
                x->shadows_overflow = true;
                return 0;
        }
        DnsAxfrShadow *n = reallocarray(x->shadows, x->n_shadows + 1, sizeof(DnsAxfrShadow));
        if (!n)
                return -ENOMEM;
        x->shadows = n;
        n[x->n_shadows].name = strdup(name);
        if (!n[x->n_shadows].name)
                return -ENOMEM;
        n[x->n_shadows++].strict = strict;
        return 0;
}

bool dns_axfr_answers_for(const DnsAxfr *x, const char *name) {
        if (!x->complete || x->shadows_overflow || !dns_name_in_zone(name, x->zone))
                return false;
        for (size_t i = 0; i < x->n_shadows; i++) {
                const DnsAxfrShadow *s = &x->shadows[i];
                if (dns_name_in_zone(name, s->name) && !(s->strict && dns_name_equal(name, s->name)))
                        return false;
        }
        return true;
}

int dns_rrset_from_answer(const DnsMessage *m, const char *name, uint16_t type, DnsRRsetList *l) {
        DnsRRset *cur;
        int r = dns_rrset_list_get(l, name, type, 0, &cur);
        if (r < 0)
                return r;
        bool first = dns_rrset_size(cur) == 0;
        for (size_t i = 0; i < m->n_rrs; i++) {
                const DnsRR *rr = &m->rrs[i];
                char a[46];
                if (rr->section != DNS_SECTION_ANSWER || rr->type != type || rr->class != DNS_CLASS_IN ||
                    !dns_name_equal(rr->name, name))
                        continue;
                r = dns_rr_address(m, rr, a);
                if (r < 0)
                        return r;
                r = dns_rrset_add_address(cur, a);
                if (r < 0)
                        return r;
                /* All RRs of an RRset share a TTL (RFC 2181 §5.2); take the smallest if not. */
                cur->ttl = first ? rr->ttl : MIN(cur->ttl, rr->ttl);
                first = false;
        }
        return 0;
}

/* One RR of the answer section; last: it is the message's last answer RR. */
static int axfr_rr(DnsAxfr *x, const DnsMessage *m, const DnsRR *rr, bool last) {
        int r;

        if (rr->class != DNS_CLASS_IN)
                return PK_EMALFORMED;
        /* RFC 5936 §2.2: the zone's SOA first and last, and nothing after the last. */
        if (!x->started) {
                if (rr->type != DNS_TYPE_SOA || !dns_name_equal(rr->name, x->zone) || rr->rdata_len < 22)
                        return PK_EMALFORMED;
                /* SERIAL follows MNAME and RNAME: the fixed 20 octets end the RDATA. */
                const uint8_t *p = m->wire + rr->rdata_offset + rr->rdata_len - 20;
                x->serial = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
                x->started = true;
                return 0;
        }
        if (rr->type == DNS_TYPE_SOA && dns_name_equal(rr->name, x->zone)) {
                if (!last || rr->rdata_len < 22)
                        return PK_EMALFORMED;
                const uint8_t *p = m->wire + rr->rdata_offset + rr->rdata_len - 20;
                uint32_t serial = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
                if (serial != x->serial) /* the zone changed under the transfer: the caller retries */
                        return PK_EMALFORMED;
                x->complete = true;
                return 0;
        }
        if (!dns_name_in_zone(rr->name, x->zone))
                return PK_EMALFORMED;
        /* Canonical (lowercase) form, for the owned set's index. */
        _cleanup_free_ char *canon = NULL;
        r = dns_name_normalize(rr->name, &canon);
        if (r < 0)
                return PK_EMALFORMED;
        if (rr->type == DNS_TYPE_NS && !streq(canon, x->zone))
                return add_shadow(x, canon, false);
        if (rr->type == DNS_TYPE_DNAME)
                return add_shadow(x, canon, true);
        if (canon[0] == '*' && canon[1] == '.')
                return add_shadow(x, canon + 2, true);
        if (rr->type != DNS_TYPE_A && rr->type != DNS_TYPE_AAAA)
                return 0;
        if (x->owned && !dns_rrset_list_find(x->owned, canon, rr->type))
                return 0;
        char a[46];
        r = dns_rr_address(m, rr, a);
        if (r < 0)
                return r;
        DnsRRset *cur;
        r = dns_rrset_list_get(&x->records, canon, rr->type, 0, &cur);
        if (r < 0)
                return r;
        bool first = dns_rrset_size(cur) == 0;
        r = dns_rrset_add_address(cur, a);
        if (r < 0)
                return r;
        cur->ttl = first ? rr->ttl : MIN(cur->ttl, rr->ttl);
        return 0;
}

static int axfr_check_header(DnsAxfr *x, const DnsMessage *m) {
        if (m->id != x->id || !(m->flags & DNS_FLAG_QR) || DNS_FLAGS_OPCODE(m->flags) != DNS_OPCODE_QUERY ||
            (m->flags & DNS_FLAG_TC))
                return PK_EMALFORMED;
        if (dns_message_rcode(m) != DNS_RCODE_NOERROR) {
                x->rcode = dns_message_rcode(m);
                return PK_EDNS_RCODE;
        }
        /* RFC 5936 §2.2.1: the first message echoes the question; later ones may, or have none. */
        if (m->counts[DNS_SECTION_QUESTION] > 1 ||
            (x->n_messages == 0 && m->counts[DNS_SECTION_QUESTION] != 1))
                return PK_EMALFORMED;
        if (m->counts[DNS_SECTION_QUESTION] == 1 &&
            (m->rrs[0].type != DNS_TYPE_AXFR || m->rrs[0].class != DNS_CLASS_IN ||
             !dns_name_equal(m->rrs[0].name, x->zone)))
                return PK_EMALFORMED;
        return 0;
}

int dns_axfr_feed(DnsAxfr *x, const uint8_t *msg, size_t len) {
        _cleanup_(dns_message_freep) DnsMessage *m = NULL;
        int r;

        if (x->complete)
                return PK_EMALFORMED;
        if (len > DNS_AXFR_BYTES_MAX - x->bytes)
                return PK_ETOOBIG;
        x->bytes += len;
        r = dns_message_parse(msg, len, &m);
        if (r < 0)
                return r;
        if (x->key) {
                /* A refusal may come unsigned (§5.3.2 errors, or a server that does not sign them): report
                 * the RCODE, since nothing of it is used as data. */
                r = tsig_stream_verify(&x->tsig, m, x->tsig_flags, &x->verdict);
                if (r == PK_ETSIG && !x->verdict.present && x->n_messages == 0 &&
                    dns_message_rcode(m) != DNS_RCODE_NOERROR) {
                        x->rcode = dns_message_rcode(m);
                        return PK_EDNS_RCODE;
                }
                if (r < 0)
                        return r;
        }
        r = axfr_check_header(x, m);
        if (r < 0)
                return r;
        x->n_messages++;
        size_t first = m->counts[DNS_SECTION_QUESTION], n_answer = m->counts[DNS_SECTION_ANSWER];
        if (n_answer == 0)
                return PK_EMALFORMED; /* every message of a transfer carries records */
        for (size_t i = first; i < first + n_answer; i++) {
                if (x->complete)
                        return PK_EMALFORMED; /* records after the closing SOA */
                r = axfr_rr(x, m, &m->rrs[i], i + 1 == first + n_answer);
                if (r < 0)
                        return r;
                x->n_rrs++;
        }
        if (!x->complete)
                return 0;
        if (x->key && tsig_stream_finish(&x->tsig) < 0) {
                x->verdict = (TsigVerdict){ .error = DNS_RCODE_BADSIG };
                x->complete = false;
                return PK_ETSIG;
        }
        return 1;
}
