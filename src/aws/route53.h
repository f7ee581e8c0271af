/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The Route 53 REST API subset protokube needs (API version 2013-04-01): XML in, XML out. Errors are
 * PK_ECLOUD and friends with the message in *ret_error (may be NULL; caller frees), as in aws_client_call().
 * Names are absolute ("api.k8s.test."). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aws/client.h"

#define AWS_ROUTE53_API_VERSION "2013-04-01"
#define AWS_ROUTE53_PAGES_MAX   10000
/* Route 53 takes at most 1,000 ResourceRecord elements per ChangeResourceRecordSets. */
#define AWS_ROUTE53_CHANGE_RECORDS_MAX 1000

typedef struct AwsHostedZone {
        char *id;   /* "Z1D633PJN98FT9", without "/hostedzone/" */
        char *name; /* "k8s.test." */
        bool private_zone;
} AwsHostedZone;

typedef struct AwsRecordSet {
        char *name; /* "api.internal.k8s.test." (Route 53 escapes some characters as \ooo) */
        char *type; /* "A", "AAAA", "TXT", ... */
        uint32_t ttl;
        char *set_identifier; /* NULL unless a routing policy record */
        bool alias;           /* alias records carry no values */
        char **values;        /* NULL-terminated */
} AwsRecordSet;

typedef enum AwsRecordAction {
        AWS_RECORD_UPSERT,
        AWS_RECORD_DELETE,
        AWS_RECORD_CREATE,
        _AWS_RECORD_ACTION_MAX,
        _AWS_RECORD_ACTION_INVALID = -EINVAL,
} AwsRecordAction;

typedef struct AwsRecordChange {
        AwsRecordAction action;
        const char *name;
        const char *type;
        uint32_t ttl;
        const char *const *values; /* NULL-terminated, at least one */
} AwsRecordChange;

void aws_hosted_zones_free(AwsHostedZone *z, size_t n);
void aws_record_sets_free(AwsRecordSet *s, size_t n);

/* ListHostedZonesByName: every zone whose name is exactly name (a public and a private zone may share one).
 * *ret_n may be 0. Free with aws_hosted_zones_free(). */
int aws_route53_find_zones(AwsClient *c, const char *name, AwsHostedZone **ret, size_t *ret_n,
                           char **ret_error);

/* ListResourceRecordSets over all pages; with start_name (may be NULL) from that name on. */
int aws_route53_list_record_sets(AwsClient *c, const char *zone_id, const char *start_name,
                                 AwsRecordSet **ret, size_t *ret_n, char **ret_error);

/* One ChangeResourceRecordSets with all changes (atomic at Route 53). *ret_change_id: "C2682N5HXP0BZ4",
 * caller frees (may be NULL). */
int aws_route53_change(AwsClient *c, const char *zone_id, const AwsRecordChange *changes, size_t n_changes,
                       char **ret_change_id, char **ret_error);

/* One GetChange: *ret_insync true when Route 53 says the change has reached all its name servers (INSYNC),
 * false while it is PENDING. -ENOENT: Route 53 knows no such change (NoSuchChange). */
int aws_route53_get_change(AwsClient *c, const char *change_id, bool *ret_insync, char **ret_error);

/* GetChange every interval until the change is INSYNC; PK_ETIMEOUT after timeout. */
int aws_route53_wait_insync(AwsClient *c, const char *change_id, usec_t timeout, usec_t interval,
                            char **ret_error);

/* One ListResourceRecordSets page on its own (for the fuzz target). */
int aws_route53_parse_record_sets(const void *data, size_t len, AwsRecordSet **ret, size_t *ret_n);

const char *aws_record_action_to_string(AwsRecordAction a) _pure_;
