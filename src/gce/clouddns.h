/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The Cloud DNS API subset protokube needs (dns/v1): managed zones by DNS name, record sets of a name
 * (paged), one change with additions and deletions (atomic at Cloud DNS), and a change's status ("pending"
 * until every name server serves it, then "done"). Names are absolute ("api.internal.k8s.test."). Errors
 * as in gce_client_call(). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gce/client.h"

typedef struct GceManagedZone {
        char *name;     /* the zone's resource name ("k8s-test"): its API path segment */
        char *dns_name; /* "k8s.test." */
        bool private_zone;
} GceManagedZone;

typedef struct GceRecordSet {
        char *name;
        char *type; /* "A", "AAAA", ... */
        uint32_t ttl;
        char **rrdatas; /* NULL-terminated */
} GceRecordSet;

void gce_managed_zones_free(GceManagedZone *z, size_t n);
void gce_record_sets_free(GceRecordSet *s, size_t n);

/* managedZones.list?dnsName=dns_name (every page): the zones named exactly dns_name. */
int gce_dns_find_zones(GceClient *c, const char *dns_name, GceManagedZone **ret, size_t *ret_n,
                       char **ret_error);
/* resourceRecordSets.list of zone for name (and type, NULL: every type), every page. */
int gce_dns_list_record_sets(GceClient *c, const char *zone, const char *name, const char *type,
                             GceRecordSet **ret, size_t *ret_n, char **ret_error);
/* changes.create with additions and deletions (a deletion must match the set served exactly). *ret_id:
 * the change's id (caller frees), *ret_done: Cloud DNS said "done" at once. PK_ECONFLICT when Cloud DNS
 * refused it because what is served changed meanwhile (412 conditionNotMet, 409 alreadyExists): nothing
 * was applied, the next pass reads again. */
int gce_dns_change(GceClient *c, const char *zone, const GceRecordSet *additions, size_t n_additions,
                   const GceRecordSet *deletions, size_t n_deletions, char **ret_id, bool *ret_done,
                   char **ret_error);
/* changes.get: *ret_done when the change is "done". -ENOENT: no such change. */
int gce_dns_get_change(GceClient *c, const char *zone, const char *id, bool *ret_done, char **ret_error);

/* One resourceRecordSets.list page, one managedZones.list page, one change on their own (fuzz target). */
int gce_dns_parse_record_set_page(const char *data, size_t len, GceRecordSet **ret, size_t *ret_n,
                                  char **ret_next);
int gce_dns_parse_zone_page(const char *data, size_t len, GceManagedZone **ret, size_t *ret_n,
                            char **ret_next);
int gce_dns_parse_change(const char *data, size_t len, char **ret_id, bool *ret_done);
