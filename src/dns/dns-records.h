/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The record model and the desired record set: a pure function of the spec and the cluster view
 * (ARCHITECTURE.md, "Who knows the masters"). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "basic/macro.h"

typedef struct ClusterSpec ClusterSpec;
typedef struct ClusterView ClusterView;

/* A member whose volume nobody holds still gets a name, pointing here, so that no resolver can cache an
 * NXDOMAIN for it (docs/etcd-dns.md): TEST-NET-3 (RFC 5737, never routed), with a short TTL, as kops did. */
#define DNS_PLACEHOLDER_ADDRESS "203.0.113.123"
#define DNS_PLACEHOLDER_TTL     10

/* All the records of one (name, type): A or AAAA. An empty address list means "no records": the RRset is
 * deleted when published. */
typedef struct DnsRRset {
        char *name; /* canonical: lowercase, final dot */
        uint16_t type;
        uint32_t ttl;
        char **addresses; /* canonical literals, sorted by address, unique; NULL when empty */
} DnsRRset;

typedef struct DnsRRsetList {
        DnsRRset *items; /* sorted by name, then type, once dns_rrset_list_sort() ran */
        size_t n;
        /* Private to dns-records.c: allocated items, and a hash index over (name, type) so that building
         * and comparing large sets stays linear. The index is a cache, rebuilt whenever it is stale. */
        size_t allocated;
        uint32_t *index; /* slot -> item + 1; 0 = empty */
        size_t index_size, index_n;
} DnsRRsetList;

void dns_rrset_list_done(DnsRRsetList *l);
static inline void dns_rrset_list_donep(DnsRRsetList *l) {
        dns_rrset_list_done(l);
}
#define _cleanup_rrset_list_ _cleanup_(dns_rrset_list_donep)

static inline size_t dns_rrset_size(const DnsRRset *s) {
        size_t n = 0;
        for (char **a = s->addresses; a && *a; a++)
                n++;
        return n;
}

/* Adds an RRset for (name, type) with no addresses, or returns the one already there. name is
 * normalized; PK_EMALFORMED for a bad name. */
int dns_rrset_list_get(DnsRRsetList *l, const char *name, uint16_t type, uint32_t ttl, DnsRRset **ret);
/* Finds (name, type); name must be canonical. */
DnsRRset *dns_rrset_list_find(const DnsRRsetList *l, const char *name, uint16_t type);
/* Adds an address literal to the list's RRset of the address's family at name (A or AAAA), keeping it
 * sorted and unique. PK_EMALFORMED for something that is no address. */
int dns_rrset_list_add_address(DnsRRsetList *l, const char *name, uint32_t ttl, const char *address);
/* Adds an address to one RRset (whose type must match the address family). */
int dns_rrset_add_address(DnsRRset *s, const char *address);
int dns_rrset_list_copy_entry(DnsRRsetList *l, const DnsRRset *s);
void dns_rrset_list_sort(DnsRRsetList *l);
bool dns_rrset_equal(const DnsRRset *a, const DnsRRset *b, bool compare_ttl);

/* The record set protokube owns for the cluster: for each owned name both an A and an AAAA RRset, either
 * possibly empty. Names:
 *   etcd-<m>.<internalSuffix>            (etcd cluster "main") -> internal IPs of the member's holder
 *   etcd-<cluster>-<m>.<internalSuffix>  (other etcd clusters, e.g. etcd-events-a)
 *                                        (a member nobody holds, or whose holder has no internal IP:
 *                                        DNS_PLACEHOLDER_ADDRESS with TTL min(10, ttl))
 *   api.<internalSuffix>                 -> internal IPs of all masters
 *   api.<cluster name>                   -> external IPs of all masters (empty when none has one)
 * Only members of etcd clusters the spec names are included (all of them when it names none). On a bad
 * IP or name in the view, PK_EMALFORMED and a message (caller frees). */
int dns_desired_records(const ClusterSpec *spec, const ClusterView *view, DnsRRsetList *ret,
                        char **ret_error);
/* The same, with the masters named in withheld (may be NULL) left out of the two API names only: their
 * etcd members' names still point at them (docs/dns.md, "A master joins the API's names when it serves"). */
int dns_desired_records_except(const ClusterSpec *spec, const ClusterView *view, char *const *withheld,
                               DnsRRsetList *ret, char **ret_error);

/* The API's internal name only: api.<internalSuffix>, A and AAAA, with the internal addresses of view's
 * masters (view NULL: both RRsets empty, the names to read). What a worker keeps in its hosts file
 * (docs/workers.md): the same name, TTL and addresses as dns_desired_records() gives it. Same errors. */
int dns_api_internal_records(const ClusterSpec *spec, const ClusterView *view, DnsRRsetList *ret,
                             char **ret_error);

/* Whether name's RRsets in served hold every address of ips (one at least): for api.<internalSuffix> and a
 * master's internal addresses, whether the master is "listed". name in any case, with or without the final
 * dot. */
bool dns_rrsets_hold_all(const DnsRRsetList *served, const char *name, char *const *ips);

/* What a pass learnt of the masters' apiservers: whose /readyz it asked, and who answered 200. */
typedef struct DnsApiReadiness {
        char **probed; /* node names */
        char **ready;  /* of probed, the ones that answered 200 */
        /* The self-hosted pivot's turns (docs/pivot.md): the masters whose Node asks to be left out while
         * their self-hosted apiserver starts; out_unknown: a pivot is under way and that was not read. */
        char **out;
        bool out_unknown;
        /* While the masters' apiservers come up (docs/dns.md, "While the apiservers come up"): the masters
         * with a Ready apiserver pod in the API (kubelet's /readyz probe); pods_read false: not read. */
        bool pods_read;
        char **pods_ready;
        char *pods_through; /* the master whose own address answered that read: it serves now */
} DnsApiReadiness;

/* The masters of view that the API's names leave out this pass (pure; docs/dns.md). A master whose Node asks
 * to be out for its pivot turn is left out while another master is listed. Otherwise a master in the names
 * (listed: all its internal addresses in api_name as served now) stays: a removal is the volumes' business,
 * never a failed probe. One not listed whose apiserver answered 200 goes in (not while a pivot's turns are
 * not known and another master is listed). Of the others:
 *   - self (this master): left out while another master is listed; they add it when it answers;
 *   - another master: left out when self's own apiserver answered (and self is in view: in the names, or
 *     about to be); put in by a listed self whose apiserver does not answer (leaving it out would protect no
 *     client: a cluster whose apiservers do not run, or are all down); else left as DNS serves it (out), for
 *     the listed masters to decide.
 * Every master computes the same from what it sees, so they do not undo each other's writes. *ret: node
 * names, NULL when none. readiness NULL (this node cannot ask): nobody is left out.
 * When the apiserver pods were read and another listed master (not out for its turn) has a Ready one and
 * is known to serve now (it answered /readyz or that read), a master without one is left out, listed or not:
 * every master reads the same objects, so the masters do not undo each other's writes, and a listed master
 * whose apiserver never started (a cold start, a power cut) leaves the names. */
int dns_api_withheld(const ClusterView *view, const DnsRRsetList *served, const char *api_name,
                     const char *self, const DnsApiReadiness *readiness, char ***ret);

/* The replacements that turn current into desired: each desired RRset that differs (addresses; and TTL
 * when compare_ttl and the set is not empty). current holds what the provider has for the same names. */
int dns_rrsets_diff(const DnsRRsetList *desired, const DnsRRsetList *current, bool compare_ttl,
                    DnsRRsetList *ret);

/* One line per record, zone-file-like: "NAME\tTTL\tIN\tTYPE\tADDRESS", in list order; empty RRsets print
 * nothing, or "NAME\tTTL\tIN\tTYPE\t(none)" with show_empty. */
void dns_rrsets_print(const DnsRRsetList *l, bool show_empty, FILE *f);
