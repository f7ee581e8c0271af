/* SPDX-License-Identifier: Apache-2.0 */
/* The route53 provider: the hosted zone found with ListHostedZonesByName (dns.zone, or the closest enclosing
 * zone of each name), the owned names read with ListResourceRecordSets, and one ChangeResourceRecordSets per
 * zone per pass (atomic at Route 53: UPSERT for the RRsets that have addresses, DELETE with the exact
 * current values for those that must go). apply returns once Route 53 has accepted the change: it does not
 * wait for INSYNC (tens of seconds on real Route 53, during which etcd's failover would stand still). The
 * change ids are handed to the caller (take_submitted), which asks with one GetChange each at its next
 * passes (change_status), or waits, for the one-shot commands (docs/aws.md, "Propagation"). */
#include <string.h>

#include "aws/client.h"
#include "aws/route53.h"
#include "basic/errors.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "dns/dns-provider.h"
#include "dns/dns-wire.h"
#include "spec/spec.h"

typedef struct R53Zone {
        char *id;
        char *name;
        bool listed; /* sets holds the zone's record sets as last read */
        AwsRecordSet *sets;
        size_t n_sets;
} R53Zone;

struct DnsProviderState {
        AwsClient *client;
        char *zone;     /* dns.zone, normalized; NULL: walk up each name */
        char **misses;  /* names known to be no hosted zone (walk-up cache) */
        R53Zone *zones; /* zones found so far */
        size_t n_zones;
        char **submitted; /* ids of the changes apply submitted, until take_submitted */
};

static void zone_done(R53Zone *z) {
        free(z->id);
        free(z->name);
        aws_record_sets_free(z->sets, z->n_sets);
}

static void r53_close(DnsProviderState *s) {
        if (!s)
                return;
        aws_client_free(s->client);
        free(s->zone);
        strv_free(s->misses);
        for (size_t i = 0; i < s->n_zones; i++)
                zone_done(&s->zones[i]);
        free(s->zones);
        strv_free(s->submitted);
        free(s);
}

/* The AWS call's message (it names the request and never holds a secret), or the code's words. */
static int client_fail(int r, const char *err, char **ret_error) {
        return error_setf(ret_error, r, "%s", err ?: pk_strerror(r));
}

static R53Zone *zone_cached(DnsProviderState *s, const char *name) {
        for (size_t i = 0; i < s->n_zones; i++)
                if (dns_name_equal(s->zones[i].name, name))
                        return &s->zones[i];
        return NULL;
}

/* The hosted zone named exactly name: 1 and *ret, 0 when there is none. Two zones of one name (a public
 * and a private one, split-horizon) are refused: which one the masters resolve through is not ours to
 * guess. */
static int zone_lookup(DnsProviderState *s, const char *name, R53Zone **ret, char **ret_error) {
        _cleanup_free_ char *err = NULL;
        AwsHostedZone *z = NULL;
        size_t n = 0;
        R53Zone *c = zone_cached(s, name);
        if (c) {
                *ret = c;
                return 1;
        }
        if (strv_contains(s->misses, name))
                return 0;
        int r = aws_route53_find_zones(s->client, name, &z, &n, &err);
        if (r < 0)
                return client_fail(r, err, ret_error);
        if (n == 0) {
                aws_hosted_zones_free(z, n);
                r = strv_extend(&s->misses, name);
                return r < 0 ? r : 0;
        }
        if (n > 1) {
                *ret_error = strprintf("%zu hosted zones are named '%s' (%s and %s); protokube updates one "
                                       "zone per name",
                                       n, name, z[0].id, z[1].id);
                aws_hosted_zones_free(z, n);
                return PK_ESPEC;
        }
        R53Zone *m = reallocarray(s->zones, s->n_zones + 1, sizeof(R53Zone));
        if (!m) {
                aws_hosted_zones_free(z, n);
                return -ENOMEM;
        }
        s->zones = m;
        c = &s->zones[s->n_zones];
        *c = (R53Zone){};
        r = dns_name_normalize(z[0].name ?: name, &c->name);
        c->id = TAKE_PTR(z[0].id);
        aws_hosted_zones_free(z, n);
        if (r < 0 || !c->id) {
                zone_done(c);
                return r < 0 ? r : PK_EMALFORMED;
        }
        s->n_zones++;
        *ret = c;
        return 1;
}

typedef struct ZoneSearch {
        DnsProviderState *state;
        R53Zone *found;
} ZoneSearch;

static int zone_search(void *userdata, const char *zone_name, char **ret_error) {
        ZoneSearch *z = userdata;
        return zone_lookup(z->state, zone_name, &z->found, ret_error);
}

/* The zone that holds name: dns.zone, else the longest enclosing hosted zone. */
static int zone_for_name(DnsProviderState *s, const char *name, R53Zone **ret, char **ret_error) {
        ZoneSearch z = { .state = s };
        int r = dns_zone_for_name(name, s->zone, "Route 53 hosted zone", zone_search, &z, ret_error);
        if (r >= 0)
                *ret = z.found;
        return r;
}

static int r53_open(const ClusterSpec *spec, DnsProviderState **ret, char **ret_error) {
        DnsProviderState *s = new0(DnsProviderState, 1);
        _cleanup_free_ char *err = NULL;
        int r;

        if (!s)
                return -ENOMEM;
        if (spec->dns.zone && dns_name_normalize(spec->dns.zone, &s->zone) < 0) {
                *ret_error = strprintf("dns.zone '%s' is not a valid DNS name", spec->dns.zone);
                r = PK_ESPEC;
                goto fail;
        }
        r = aws_client_new(&s->client, &err);
        if (r < 0) {
                *ret_error = strprintf("cannot set up the AWS client: %s",
                                       err ?: "check AWS_ENDPOINT_URL* and the region");
                goto fail;
        }
        if (s->zone) {
                R53Zone *z;
                r = zone_for_name(s, s->zone, &z, ret_error);
                if (r < 0)
                        goto fail;
        }
        *ret = s;
        return 0;
fail:
        r53_close(s);
        return r;
}

static int zone_list(DnsProviderState *s, R53Zone *z, char **ret_error) {
        _cleanup_free_ char *err = NULL;
        AwsRecordSet *sets = NULL;
        size_t n = 0;
        if (z->listed)
                return 0;
        int r = aws_route53_list_record_sets(s->client, z->id, NULL, &sets, &n, &err);
        if (r < 0)
                return client_fail(r, err, ret_error);
        aws_record_sets_free(z->sets, z->n_sets);
        z->sets = sets;
        z->n_sets = n;
        z->listed = true;
        return 0;
}

static const char *type_name(uint16_t type) {
        return type == DNS_TYPE_AAAA ? "AAAA" : type == DNS_TYPE_A ? "A" : NULL;
}

/* The plain record set (no routing policy, no alias) of (name, type) in the zone's last listing. */
static const AwsRecordSet *zone_find_set(const R53Zone *z, const char *name, uint16_t type) {
        const char *t = type_name(type);
        for (size_t i = 0; t && i < z->n_sets; i++) {
                const AwsRecordSet *a = &z->sets[i];
                if (a->name && a->type && streq(a->type, t) && !a->set_identifier && !a->alias &&
                    dns_name_equal(a->name, name))
                        return a;
        }
        return NULL;
}

static int r53_read(DnsProviderState *s, const DnsRRsetList *owned, DnsRRsetList *ret, char **ret_error) {
        _cleanup_rrset_list_ DnsRRsetList l = {};
        int r;

        for (size_t i = 0; i < owned->n; i++) {
                const DnsRRset *o = &owned->items[i];
                DnsRRset *t;
                R53Zone *z;
                r = zone_for_name(s, o->name, &z, ret_error);
                if (r >= 0)
                        r = zone_list(s, z, ret_error);
                if (r < 0)
                        return r;
                r = dns_rrset_list_get(&l, o->name, o->type, o->ttl, &t);
                if (r < 0)
                        return r;
                const AwsRecordSet *a = zone_find_set(z, o->name, o->type);
                if (!a)
                        continue;
                t->ttl = a->ttl;
                for (char **v = a->values; v && *v; v++) {
                        r = dns_rrset_add_address(t, *v);
                        if (r < 0) {
                                *ret_error = strprintf("zone '%s' (%s): %s %s holds '%s', not an address",
                                                       z->name, z->id, o->name, type_name(o->type), *v);
                                return PK_EMALFORMED;
                        }
                }
        }
        dns_rrset_list_sort(&l);
        *ret = l;
        l = (DnsRRsetList){};
        return 0;
}

/* The changes of one zone: UPSERT what has addresses, DELETE with the exact current TTL and values (Route 53
 * refuses a DELETE that does not match) what must go; an RRset already absent needs nothing. */
static int zone_changes(DnsProviderState *s, R53Zone *z, const DnsRRsetList *changes, AwsRecordChange **ret,
                        size_t *ret_n, char **ret_error) {
        AwsRecordChange *c = new0(AwsRecordChange, changes->n);
        size_t n = 0;
        if (!c)
                return -ENOMEM;
        for (size_t i = 0; i < changes->n; i++) {
                const DnsRRset *rs = &changes->items[i];
                R53Zone *zi;
                int r = zone_for_name(s, rs->name, &zi, ret_error);
                if (r < 0) {
                        free(c);
                        return r;
                }
                if (zi != z)
                        continue;
                if (!type_name(rs->type)) {
                        free(c);
                        *ret_error = strprintf("'%s': only A and AAAA records are managed", rs->name);
                        return -EINVAL;
                }
                if (rs->addresses && rs->addresses[0]) {
                        c[n++] = (AwsRecordChange){ AWS_RECORD_UPSERT, rs->name, type_name(rs->type),
                                                    rs->ttl, (const char *const *)rs->addresses };
                        continue;
                }
                const AwsRecordSet *cur = zone_find_set(z, rs->name, rs->type);
                if (cur && cur->values && cur->values[0])
                        c[n++] = (AwsRecordChange){ AWS_RECORD_DELETE, cur->name, cur->type, cur->ttl,
                                                    (const char *const *)cur->values };
        }
        *ret = c;
        *ret_n = n;
        return 0;
}

static int zone_apply(DnsProviderState *s, R53Zone *z, const DnsRRsetList *changes, char **ret_change_id,
                      char **ret_error) {
        _cleanup_free_ AwsRecordChange *c = NULL;
        _cleanup_free_ char *err = NULL;
        size_t n = 0;
        /* DELETE needs the current values: read them if this pass did not. */
        int r = zone_list(s, z, ret_error);
        if (r >= 0)
                r = zone_changes(s, z, changes, &c, &n, ret_error);
        if (r < 0)
                return r;
        *ret_change_id = NULL;
        if (n == 0)
                return 0;
        r = aws_route53_change(s->client, z->id, c, n, ret_change_id, &err);
        if (r < 0)
                error_setf(ret_error, r, "zone '%s' (%s): %s", z->name, z->id, err ?: pk_strerror(r));
        /* what Route 53 holds changed (or may have): the next apply reads again */
        z->listed = false;
        return r;
}

static int r53_apply(DnsProviderState *s, const DnsRRsetList *changes, char **ret_error) {
        int r;

        /* Resolve every name's zone first, so that a name outside every zone fails before anything is sent.
         */
        for (size_t i = 0; i < changes->n; i++) {
                R53Zone *z;
                r = zone_for_name(s, changes->items[i].name, &z, ret_error);
                if (r < 0)
                        return r;
        }
        for (size_t k = 0; k < s->n_zones; k++) {
                _cleanup_free_ char *id = NULL;
                r = zone_apply(s, &s->zones[k], changes, &id, ret_error);
                if (r < 0)
                        return r;
                /* accepted (HTTP 200): the records are Route 53's now; propagation is the caller's to follow
                 */
                if (id && strv_push(&s->submitted, id) < 0)
                        return -ENOMEM;
                id = NULL; /* strv_push took it */
        }
        return 0;
}

static int r53_take_submitted(DnsProviderState *s, char ***ret_ids) {
        *ret_ids = TAKE_PTR(s->submitted);
        return 0;
}

static int r53_change_status(DnsProviderState *s, const char *id, char **ret_error) {
        _cleanup_free_ char *err = NULL;
        bool insync = false;
        int r = aws_route53_get_change(s->client, id, &insync, &err);
        if (r == -ENOENT)
                return r;
        if (r < 0)
                return client_fail(r, err, ret_error);
        return insync ? 1 : 0;
}

const DnsProvider dns_provider_route53 = {
        .name = "route53",
        .tracks_ttl = true,
        .open = r53_open,
        .close = r53_close,
        .read = r53_read,
        .apply = r53_apply,
        .take_submitted = r53_take_submitted,
        .change_status = r53_change_status,
};
