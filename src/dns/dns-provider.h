/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A DNS provider: reads the current RRsets of owned names and applies a batch of replacements. Providers
 * are static const tables in a registry indexed by the spec's DnsProviderKind (ARCHITECTURE.md); their
 * state is opaque outside their file.
 * Errors come back as codes plus a message (caller frees) naming what failed; providers never log. */

#include <stdbool.h>

#include "basic/macro.h"

#include "dns/dns-pending.h"
#include "dns/dns-records.h"
#include "spec/spec.h"

typedef struct DnsProviderState DnsProviderState;

typedef struct DnsProvider {
        const char *name;
        bool tracks_ttl; /* false: the provider stores no TTL (hosts), so TTLs are not compared */
        int (*open)(const ClusterSpec *spec, DnsProviderState **ret, char **ret_error);
        void (*close)(DnsProviderState *s);
        /* Fills ret with the current RRset for each (name, type) of owned (their addresses are ignored);
         * an RRset the provider does not have comes back empty. */
        int (*read)(DnsProviderState *s, const DnsRRsetList *owned, DnsRRsetList *ret, char **ret_error);
        /* Replaces each RRset of changes as a whole; an empty one deletes that type at that name. The
         * batch is applied completely or, where a part fails, the error says which. */
        int (*apply)(DnsProviderState *s, const DnsRRsetList *changes, char **ret_error);
        /* Optional: after read, the store needs a write even though no RRset differs (hosts: an
         * interrupted rewrite to repair); apply is then called with what differs, possibly nothing. */
        bool (*repair_pending)(DnsProviderState *s);
        /* Optional, for a provider that accepts a change before its name servers all serve it (Route 53:
         * PENDING until INSYNC). apply returns once the change is accepted; take_submitted hands over the
         * ids of the changes apply submitted since the last call (*ret NULL when none; caller frees), and
         * change_status asks once, without waiting, about one of them: 1 served everywhere, 0 not yet,
         * -ENOENT the provider knows no such change. */
        int (*take_submitted)(DnsProviderState *s, char ***ret_ids);
        int (*change_status)(DnsProviderState *s, const char *id, char **ret_error);
        /* Optional: what the last read did differently than planned and why (rfc2136: a zone transfer the
         * server refused, so the names were read one by one), for the program to log; NULL: nothing. Caller
         * frees. */
        char *(*take_note)(DnsProviderState *s);
} DnsProvider;

/* The providers, one per value of the spec's DnsProviderKind but "none" (spec/spec.h), registered in
 * dns-provider.c indexed by that enum. To add a DNS provider: its value and name in the spec (with its
 * settings' table, spec/spec-dns.c), its file with this vtable, its line below and in the registry. */
extern const DnsProvider dns_provider_hosts;    /* dns-hosts.c */
extern const DnsProvider dns_provider_rfc2136;  /* dns-rfc2136.c */
extern const DnsProvider dns_provider_route53;  /* dns-route53.c */
extern const DnsProvider dns_provider_clouddns; /* dns-clouddns.c */

/* For the providers of a cloud's hosted zones (route53, clouddns): the zone that holds name. With zone
 * (dns.zone, normalized) set, name must be in it and lookup must find it; else the longest enclosing zone
 * that lookup finds, walking up from name itself (RFC 1034 §4.3.2 walks down the same way). lookup returns 1
 * (found: it keeps what it found in userdata), 0 (no zone of that name) or an error, with its message in
 * *ret_error. what names the provider's zones in messages ("Route 53 hosted zone"). PK_ESPEC when no zone
 * holds name. */
int dns_zone_for_name(const char *name, const char *zone, const char *what,
                      int (*lookup)(void *userdata, const char *zone_name, char **ret_error), void *userdata,
                      char **ret_error);

/* The provider of a spec's dns.provider; NULL for "none" and for a value outside the enum. */
const DnsProvider *dns_provider_for(DnsProviderKind kind);
/* The same by the spec's word for it; NULL for an unknown name (or "none"). */
const DnsProvider *dns_provider_find(const char *name);

/* One publication: read the owned names' current RRsets, replace those that differ from desired in one
 * batch (none with dry_run). ret_changes (optional) gets what was (or would be) replaced; empty: nothing to
 * do, nothing was sent. */
int dns_sync(const DnsProvider *p, DnsProviderState *s, const DnsRRsetList *desired, bool dry_run,
             DnsRRsetList *ret_changes, char **ret_error);

/* The spec's provider, opened for one pass: read in the pass's observation, written by its apply step.
 * NULL session with 0: the spec says no DNS (provider none). Errors come with a message (caller frees)
 * naming the provider, server, zone and cause. */
typedef struct DnsSession DnsSession;
int dns_session_open(const ClusterSpec *spec, DnsSession **ret, char **ret_error);
DnsSession *dns_session_free(DnsSession *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(DnsSession *, dns_session_free)
const char *dns_session_provider(const DnsSession *s);
/* Whether the session's provider stores TTLs (hosts does not): they are compared (dns_rrsets_diff()). */
bool dns_session_tracks_ttl(const DnsSession *s);
/* The RRsets served for the (name, type) pairs of owned; ret_repair: the store needs a write even when no
 * RRset differs (an interrupted rewrite of a hosts file). */
int dns_session_read(DnsSession *s, const DnsRRsetList *owned, DnsRRsetList *ret, bool *ret_repair,
                     char **ret_error);
/* The provider's note on the last read (DnsProvider.take_note), or NULL. Caller frees. */
char *dns_session_take_note(DnsSession *s);
/* What differs between desired and served (pure: the provider only says whether TTLs are compared). */
int dns_session_diff(const DnsSession *s, const DnsRRsetList *desired, const DnsRRsetList *served,
                     DnsRRsetList *ret);
int dns_session_apply(DnsSession *s, const DnsRRsetList *changes, char **ret_error);
/* The changes the last apply submitted that are still propagating, added to p as submitted at now
 * (CLOCK_MONOTONIC). Returns how many were added (0 for providers whose writes are served at once). */
int dns_session_take_submitted(DnsSession *s, DnsPending *p, usec_t now_monotonic);
/* One status request per change in p, no waiting: the changes served everywhere now, or that the provider
 * no longer knows, move from p to settled (optional: else dropped). A change whose request failed stays in
 * p; the first such error is returned, with its message, after every change was asked about. */
int dns_session_check_pending(DnsSession *s, DnsPending *p, DnsPending *settled, char **ret_error);
/* Asks every interval until p is empty (0) or timeout passed (PK_ETIMEOUT, the message names the oldest
 * change and how long it has been pending); a stop request ends the wait (-ECANCELED). For the one-shot
 * commands: the daemon never waits. */
int dns_session_wait_pending(DnsSession *s, DnsPending *p, usec_t timeout, usec_t interval,
                             char **ret_error);

/* `dns sync`: the desired set from spec and view, the spec's provider opened, synced (or only compared,
 * with dry_run), closed. With wait > 0, the changes the provider accepted are waited for until its name
 * servers all serve them (Route 53: INSYNC), at most wait (PK_ETIMEOUT); ret_pending (optional) gets the
 * ids of the changes still propagating when it returns, also when that wait ran out (caller frees). ret_note
 * (optional): the provider's note on its read (see DnsProvider.take_note), or NULL; caller frees.
 * *ret_provider is the provider's name
 * ("none": nothing to do, returns 0). An empty view (no masters, no members) is refused (PK_EWAITING): an
 * empty observation is likelier a failure than a cluster without masters, and must not wipe the records.
 * Errors come with a message (caller frees) naming the provider, server, zone and cause. */
typedef struct ClusterView ClusterView;
int dns_publish(const ClusterSpec *spec, const ClusterView *view, bool dry_run, usec_t wait,
                DnsRRsetList *ret_changes, DnsPending *ret_pending, const char **ret_provider,
                char **ret_note, char **ret_error);
