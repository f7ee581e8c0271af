/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Building DNS UPDATE messages (RFC 2136). */

#include <stdint.h>

#include "dns/dns-records.h"
#include "dns/dns-wire.h"

typedef struct DnsUpdate {
        DnsWriter w;
        unsigned n_updates;
} DnsUpdate;

/* Header and zone section (§2.3: one zone, type SOA). Opcode UPDATE, no RD (§2.2: only opcode and ID
 * matter; nsupdate sends no RD either). */
void dns_update_init(DnsUpdate *u, uint16_t id, const char *zone);
void dns_update_done(DnsUpdate *u);
/* §2.5.2: delete an RRset (class ANY, TTL 0, no RDATA). */
void dns_update_delete_rrset(DnsUpdate *u, const char *name, uint16_t type);
/* §2.5.1: add an RR to an RRset. */
void dns_update_add_rr(DnsUpdate *u, const char *name, uint16_t type, uint32_t ttl, const void *rdata,
                       uint16_t rdata_len);
void dns_update_add_address(DnsUpdate *u, const char *name, uint32_t ttl, const char *address);
/* Writes the update count into the header; returns the writer's error. */
int dns_update_finish(DnsUpdate *u);

/* One UPDATE replacing every RRset of changes that lies in zone as a whole: "delete RRset" followed by
 * "add" for each address. No prerequisites (§2.4): the server applies the whole message atomically
 * (§3.4.2), and since every master computes the same desired set from the provider, whoever writes last
 * writes the same thing: they converge without a leader. Returns the number of RRsets included. */
int dns_update_build(uint16_t id, const char *zone, const DnsRRsetList *changes, DnsUpdate *u);
