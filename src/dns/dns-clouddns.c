/* SPDX-License-Identifier: Apache-2.0 */
/* The clouddns provider (Google Cloud DNS): the managed zone found by its DNS name (dns.zone, or the closest
 * enclosing zone of each name), each owned name's record sets read with one resourceRecordSets.list for that
 * name (our names only, never the whole zone), and one changes.create per zone per pass: for each RRset that
 * changes, the deletion of what is served (Cloud DNS refuses a deletion that does not match it exactly, so a
 * change that raced another writer fails whole: 412, and the next pass reads again) and the addition of
 * what is desired. apply returns once Cloud DNS accepted the change; its "pending" -> "done" is followed by
 * take_submitted/change_status as Route 53's INSYNC is (etcd's start never waits for it). */
#include <string.h>

#include "basic/dns-name.h"
#include "basic/errors.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "dns/dns-provider.h"
#include "dns/dns-wire.h"
#include "gce/client.h"
#include "gce/clouddns.h"
#include "spec/spec.h"

typedef struct CdZone {
        char *name;     /* the managed zone's resource name */
        char *dns_name; /* normalized */
} CdZone;

/* The record sets Cloud DNS holds at one name, as last read. */
typedef struct CdName {
        char *name;
        GceRecordSet *sets;
        size_t n_sets;
} CdName;

struct DnsProviderState {
        GceClient *client;
        char *zone;    /* dns.zone, normalized; NULL: walk up each name */
        char **misses; /* names known to be no managed zone */
        CdZone *zones;
        size_t n_zones;
        CdName *names; /* read this pass; dropped after an apply */
        size_t n_names;
        char **submitted; /* "ZONE/ID" of the changes apply submitted, until take_submitted */
};

static void names_drop(DnsProviderState *s) {
        for (size_t i = 0; i < s->n_names; i++) {
                free(s->names[i].name);
                gce_record_sets_free(s->names[i].sets, s->names[i].n_sets);
        }
        free(s->names);
        s->names = NULL;
        s->n_names = 0;
}

static void cd_close(DnsProviderState *s) {
        if (!s)
                return;
        gce_client_free(s->client);
        free(s->zone);
        strv_free(s->misses);
        for (size_t i = 0; i < s->n_zones; i++) {
                free(s->zones[i].name);
                free(s->zones[i].dns_name);
        }
        free(s->zones);
        names_drop(s);
        strv_free(s->submitted);
        free(s);
}

typedef struct ZoneSearch {
        DnsProviderState *state;
        CdZone *found;
} ZoneSearch;

/* The managed zone named exactly zone_name: 1 (found), 0 (none). A public and a private zone of one name
 * (split horizon) are refused: which one the masters resolve through is not ours to guess. */
static int zone_search(void *userdata, const char *zone_name, char **ret_error) {
        ZoneSearch *z = userdata;
        DnsProviderState *s = z->state;
        GceManagedZone *found = NULL;
        size_t n = 0;
        for (size_t i = 0; i < s->n_zones; i++)
                if (dns_name_equal(s->zones[i].dns_name, zone_name)) {
                        z->found = &s->zones[i];
                        return 1;
                }
        if (strv_contains(s->misses, zone_name))
                return 0;
        int r = gce_dns_find_zones(s->client, zone_name, &found, &n, ret_error);
        if (r < 0)
                return r;
        if (n == 0) {
                gce_managed_zones_free(found, n);
                r = strv_extend(&s->misses, zone_name);
                return r < 0 ? r : 0;
        }
        if (n > 1) {
                r = error_setf(
                    ret_error, PK_ESPEC,
                    "%zu Cloud DNS managed zones are named '%s' (%s and %s); protokube updates one "
                    "zone per name",
                    n, zone_name, found[0].name, found[1].name);
                gce_managed_zones_free(found, n);
                return r;
        }
        CdZone *m = reallocarray(s->zones, s->n_zones + 1, sizeof(CdZone));
        if (!m) {
                gce_managed_zones_free(found, n);
                return -ENOMEM;
        }
        s->zones = m;
        CdZone *c = &s->zones[s->n_zones];
        *c = (CdZone){ .name = TAKE_PTR(found[0].name) };
        r = dns_name_normalize(found[0].dns_name, &c->dns_name);
        gce_managed_zones_free(found, n);
        if (r < 0) {
                free(c->name);
                return error_setf(ret_error, PK_EMALFORMED,
                                  "Cloud DNS zone of '%s': its dnsName is malformed", zone_name);
        }
        s->n_zones++;
        z->found = c;
        return 1;
}

static int zone_for_name(DnsProviderState *s, const char *name, CdZone **ret, char **ret_error) {
        ZoneSearch z = { .state = s };
        int r = dns_zone_for_name(name, s->zone, "Cloud DNS managed zone", zone_search, &z, ret_error);
        if (r >= 0)
                *ret = z.found;
        return r;
}

static int cd_open(const ClusterSpec *spec, DnsProviderState **ret, char **ret_error) {
        DnsProviderState *s = new0(DnsProviderState, 1);
        _cleanup_free_ char *err = NULL;
        CdZone *z;
        int r = 0;

        if (!s)
                return -ENOMEM;
        if (spec->dns.zone && dns_name_normalize(spec->dns.zone, &s->zone) < 0)
                r = error_setf(ret_error, PK_ESPEC, "dns.zone '%s' is not a valid DNS name", spec->dns.zone);
        if (r >= 0 && (r = gce_client_new(&s->client, &err)) < 0)
                error_setf(ret_error, r, "cannot set up the Google Cloud client: %s", err ?: pk_strerror(r));
        if (r >= 0 && s->zone)
                r = zone_for_name(s, s->zone, &z, ret_error);
        if (r < 0) {
                cd_close(s);
                return r;
        }
        *ret = s;
        return 0;
}

static const char *type_name(uint16_t type) {
        return type == DNS_TYPE_AAAA ? "AAAA" : type == DNS_TYPE_A ? "A" : NULL;
}

/* The record sets at name (read once per pass). */
static int name_sets(DnsProviderState *s, const CdZone *z, const char *name, CdName **ret,
                     char **ret_error) {
        for (size_t i = 0; i < s->n_names; i++)
                if (dns_name_equal(s->names[i].name, name)) {
                        *ret = &s->names[i];
                        return 0;
                }
        CdName n = { .name = strdup(name) };
        if (!n.name)
                return -ENOMEM;
        int r = gce_dns_list_record_sets(s->client, z->name, name, NULL, &n.sets, &n.n_sets, ret_error);
        CdName *m = r < 0 ? NULL : reallocarray(s->names, s->n_names + 1, sizeof(CdName));
        if (!m) {
                free(n.name);
                gce_record_sets_free(n.sets, n.n_sets);
                return r < 0 ? r : -ENOMEM;
        }
        s->names = m;
        s->names[s->n_names] = n;
        *ret = &s->names[s->n_names++];
        return 0;
}

static const GceRecordSet *find_set(const CdName *n, uint16_t type) {
        const char *t = type_name(type);
        for (size_t i = 0; t && i < n->n_sets; i++)
                if (streq(n->sets[i].type, t) && dns_name_equal(n->sets[i].name, n->name))
                        return &n->sets[i];
        return NULL;
}

static int cd_read(DnsProviderState *s, const DnsRRsetList *owned, DnsRRsetList *ret, char **ret_error) {
        _cleanup_rrset_list_ DnsRRsetList l = {};
        for (size_t i = 0; i < owned->n; i++) {
                const DnsRRset *o = &owned->items[i];
                DnsRRset *t;
                CdZone *z;
                CdName *n;
                int r = zone_for_name(s, o->name, &z, ret_error);
                if (r >= 0)
                        r = name_sets(s, z, o->name, &n, ret_error);
                if (r >= 0)
                        r = dns_rrset_list_get(&l, o->name, o->type, o->ttl, &t);
                if (r < 0)
                        return r;
                const GceRecordSet *a = find_set(n, o->type);
                if (!a)
                        continue;
                t->ttl = a->ttl;
                for (char **v = a->rrdatas; v && *v; v++)
                        if (dns_rrset_add_address(t, *v) < 0)
                                return error_setf(ret_error, PK_EMALFORMED,
                                                  "Cloud DNS zone '%s': %s %s holds '%s', not an address",
                                                  z->name, o->name, type_name(o->type), *v);
        }
        dns_rrset_list_sort(&l);
        *ret = l;
        l = (DnsRRsetList){};
        return 0;
}

/* Whether Cloud DNS serves exactly the desired set already (an empty one: no set), TTL included. */
static bool served_as_desired(const GceRecordSet *cur, const DnsRRset *rs) {
        size_t n = strv_length(rs->addresses);
        if (!cur)
                return n == 0;
        if (cur->ttl != rs->ttl || strv_length(cur->rrdatas) != n)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!strv_contains(cur->rrdatas, rs->addresses[i]))
                        return false;
        return true;
}

/* The additions and deletions of one zone: a set that changes is deleted as served and added as desired;
 * one to be emptied is deleted as served; one already absent needs nothing. */
static int zone_changes(DnsProviderState *s, const CdZone *z, const DnsRRsetList *changes, GceRecordSet *add,
                        size_t *n_add, GceRecordSet *del, size_t *n_del, char **ret_error) {
        for (size_t i = 0; i < changes->n; i++) {
                const DnsRRset *rs = &changes->items[i];
                CdZone *zi;
                CdName *n;
                int r = zone_for_name(s, rs->name, &zi, ret_error);
                if (r < 0)
                        return r;
                if (zi != z)
                        continue;
                if (!type_name(rs->type))
                        return error_setf(ret_error, -EINVAL, "'%s': only A and AAAA records are managed",
                                          rs->name);
                r = name_sets(s, z, rs->name, &n, ret_error);
                if (r < 0)
                        return r;
                const GceRecordSet *cur = find_set(n, rs->type);
                if (served_as_desired(cur, rs))
                        continue; /* another master wrote it meanwhile */
                if (cur)
                        del[(*n_del)++] = *cur; /* borrowed */
                if (rs->addresses && rs->addresses[0])
                        add[(*n_add)++] = (GceRecordSet){ .name = rs->name,
                                                          .type = (char *)type_name(rs->type),
                                                          .ttl = rs->ttl,
                                                          .rrdatas = rs->addresses };
        }
        return 0;
}

static int zone_apply(DnsProviderState *s, const CdZone *z, const DnsRRsetList *changes, char **ret_error) {
        _cleanup_free_ GceRecordSet *add = new0(GceRecordSet, changes->n + 1),
                                    *del = new0(GceRecordSet, changes->n + 1);
        _cleanup_free_ char *id = NULL, *err = NULL;
        size_t n_add = 0, n_del = 0;
        bool done = false;
        if (!add || !del)
                return -ENOMEM;
        int r = zone_changes(s, z, changes, add, &n_add, del, &n_del, ret_error);
        if (r < 0 || n_add + n_del == 0)
                return r;
        r = gce_dns_change(s->client, z->name, add, n_add, del, n_del, &id, &done, &err);
        if (r < 0)
                return error_setf(ret_error, r, "Cloud DNS zone '%s' (%s): %s", z->dns_name, z->name,
                                  err ?: pk_strerror(r));
        if (!done) {
                char *key = strjoin(z->name, "/", id);
                if (!key || strv_push(&s->submitted, key) < 0) {
                        free(key);
                        return -ENOMEM;
                }
        }
        return 0;
}

static int cd_apply(DnsProviderState *s, const DnsRRsetList *changes, char **ret_error) {
        int r = 0;
        /* every name's zone first: a name outside every zone fails before anything is sent */
        for (size_t i = 0; i < changes->n && r >= 0; i++) {
                CdZone *z;
                r = zone_for_name(s, changes->items[i].name, &z, ret_error);
        }
        for (size_t k = 0; k < s->n_zones && r >= 0; k++) {
                r = zone_apply(s, &s->zones[k], changes, ret_error);
                if (r != PK_ECONFLICT)
                        continue;
                /* Another master changed one of these sets since this pass read it (every master writes the
                 * shared names): read them again and send the change once more, now against what is
                 * served, instead of losing the pass. */
                names_drop(s);
                r = zone_apply(s, &s->zones[k], changes, ret_error);
        }
        /* what Cloud DNS holds changed (or may have): the next pass reads again */
        names_drop(s);
        return r;
}

static int cd_take_submitted(DnsProviderState *s, char ***ret_ids) {
        *ret_ids = TAKE_PTR(s->submitted);
        return 0;
}

static int cd_change_status(DnsProviderState *s, const char *id, char **ret_error) {
        const char *slash = strchr(id, '/');
        _cleanup_free_ char *zone = slash ? strndup(id, (size_t)(slash - id)) : NULL;
        bool done = false;
        if (!slash)
                return -ENOENT;
        if (!zone)
                return -ENOMEM;
        int r = gce_dns_get_change(s->client, zone, slash + 1, &done, ret_error);
        if (r < 0)
                return r;
        return done ? 1 : 0;
}

const DnsProvider dns_provider_clouddns = {
        .name = "clouddns",
        .tracks_ttl = true,
        .open = cd_open,
        .close = cd_close,
        .read = cd_read,
        .apply = cd_apply,
        .take_submitted = cd_take_submitted,
        .change_status = cd_change_status,
};
