/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Reading the owned RRsets of a zone from one zone transfer (AXFR, RFC 5936) instead of a query per name and
 * type: the response parser, message by message as they arrive on the TCP connection, with every message's
 * TSIG checked in order (RFC 8945 §5.3.1). Only the A and AAAA RRsets of owned (name, type) pairs are kept,
 * so memory follows what we own, not the zone's size. Library code: no logging. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dns/dns-records.h"
#include "dns/dns-tsig.h"
#include "dns/dns-wire.h"

/* A transfer larger than this is abandoned (the caller reads name by name instead): every buffer that holds
 * network input has a cap. */
#define DNS_AXFR_BYTES_MAX (64U << 20)
/* More zone cuts, DNAMEs and wildcards than this and the transfer answers for no name (see
 * dns_axfr_answers_for()): checking each owned name against each would cost more than the queries. */
#define DNS_AXFR_SHADOWS_MAX 256

typedef struct DnsAxfrShadow {
        char *name;  /* canonical */
        bool strict; /* only names strictly below name (DNAME, the parent of a wildcard); else at or below */
} DnsAxfrShadow;

typedef struct DnsAxfr {
        char *zone; /* canonical */
        uint16_t id;
        const DnsRRsetList *owned; /* borrowed: the (name, type) pairs to keep */
        const TsigKey *key;        /* borrowed; NULL: unsigned */
        TsigStream tsig;
        unsigned tsig_flags;  /* TSIG_VERIFY_SKIP_TIME for captured test streams only */
        DnsRRsetList records; /* what the zone holds for owned pairs (only those with records) */
        /* Names whose queries the zone's own records may not answer alone: a referral below a zone cut, a
         * DNAME's synthesis, a wildcard's. */
        DnsAxfrShadow *shadows;
        size_t n_shadows;
        bool shadows_overflow;
        uint32_t serial;
        bool started, complete;
        size_t n_messages, n_rrs, bytes;
        unsigned rcode;      /* a message's RCODE when it was not NOERROR (PK_EDNS_RCODE) */
        TsigVerdict verdict; /* when PK_ETSIG */
} DnsAxfr;

/* zone: the zone transferred; id: the query's ID; key and request_mac: the query's signature (key NULL:
 * unsigned). The strings are copied; owned and key are borrowed for the life of x. */
int dns_axfr_init(DnsAxfr *x, const char *zone, uint16_t id, const TsigKey *key, const uint8_t *request_mac,
                  size_t request_mac_len, const DnsRRsetList *owned);
void dns_axfr_done(DnsAxfr *x);

/* Feeds the next message of the response. 1: the transfer is complete (the closing SOA, RFC 5936 §2.2),
 * and, when signed, the last message was signed; 0: more to come; errors: PK_EDNS_RCODE (x->rcode: REFUSED,
 * NOTAUTH... the server will not transfer), PK_ETSIG (x->verdict), PK_EMALFORMED, PK_ETOOBIG. Messages after
 * completion or after an error are PK_EMALFORMED. */
int dns_axfr_feed(DnsAxfr *x, const uint8_t *msg, size_t len);

/* Whether a query for name would be answered from the zone's own records at name, so that the transfer
 * tells what the query would: false at or below a zone cut (a referral) and below a DNAME or a wildcard's
 * parent (synthesized answers), and for every name when there were too many of those to check. */
bool dns_axfr_answers_for(const DnsAxfr *x, const char *name);

/* Files the answer section's RRs of (name, type, IN) of a response into l's RRset for (name, type) (created,
 * possibly empty), with the smallest TTL (RFC 2181 §5.2): what a query for that pair reads. Other owners (a
 * CNAME's target, for instance) are not the name's. PK_EMALFORMED for an address RR of the wrong size. */
int dns_rrset_from_answer(const DnsMessage *m, const char *name, uint16_t type, DnsRRsetList *l);
