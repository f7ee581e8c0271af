/* SPDX-License-Identifier: Apache-2.0 */
#include "dns/dns-records.h"

#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "dns/dns-wire.h"
#include "model/cluster-view.h"
#include "model/conventions.h"
#include "spec/spec.h"

void dns_rrset_list_done(DnsRRsetList *l) {
        for (size_t i = 0; i < l->n; i++) {
                free(l->items[i].name);
                strv_free(l->items[i].addresses);
        }
        free(l->items);
        free(l->index);
        *l = (DnsRRsetList){};
}

static uint32_t rrset_hash(const char *name, uint16_t type) {
        uint32_t h = 2166136261u ^ type; /* FNV-1a */
        for (const unsigned char *p = (const unsigned char *)name; *p; p++)
                h = (h ^ *p) * 16777619u;
        return h;
}

static void index_insert(DnsRRsetList *l, size_t item) {
        size_t mask = l->index_size - 1;
        for (size_t k = rrset_hash(l->items[item].name, l->items[item].type) & mask;; k = (k + 1) & mask)
                if (l->index[k] == 0) {
                        l->index[k] = (uint32_t)item + 1;
                        return;
                }
}

/* Brings the index up to date with items: extends it with items appended since, or rebuilds it (grown, or
 * after a sort). Small lists go without. Returns false when there is no index to use. */
static bool index_refresh(DnsRRsetList *l) {
        if (l->n < 16)
                return false;
        if (l->index && l->index_n <= l->n && l->index_size >= 2 * l->n) {
                for (; l->index_n < l->n; l->index_n++)
                        index_insert(l, l->index_n);
                return true;
        }
        size_t size = 64;
        while (size < 4 * l->n)
                size *= 2;
        uint32_t *idx = calloc(size, sizeof(uint32_t));
        if (!idx)
                return false; /* the linear search still works */
        free(l->index);
        l->index = idx;
        l->index_size = size;
        for (l->index_n = 0; l->index_n < l->n; l->index_n++)
                index_insert(l, l->index_n);
        return true;
}

DnsRRset *dns_rrset_list_find(const DnsRRsetList *cl, const char *name, uint16_t type) {
        DnsRRsetList *l = (DnsRRsetList *)cl; /* the index is a cache: refreshing it changes no content */
        if (index_refresh(l)) {
                size_t mask = l->index_size - 1;
                for (size_t k = rrset_hash(name, type) & mask; l->index[k] != 0; k = (k + 1) & mask) {
                        DnsRRset *s = &l->items[l->index[k] - 1];
                        if (s->type == type && streq(s->name, name))
                                return s;
                }
                return NULL;
        }
        for (size_t i = 0; i < l->n; i++)
                if (l->items[i].type == type && streq(l->items[i].name, name))
                        return &l->items[i];
        return NULL;
}

int dns_rrset_list_get(DnsRRsetList *l, const char *name, uint16_t type, uint32_t ttl, DnsRRset **ret) {
        _cleanup_free_ char *canonical = NULL;
        int r = dns_name_normalize(name, &canonical);
        if (r < 0)
                return r;
        DnsRRset *s = dns_rrset_list_find(l, canonical, type);
        if (!s) {
                if (l->n >= l->allocated) { /* >=: a list may have been filled without us */
                        size_t a = MAX((size_t)16, 2 * l->n);
                        DnsRRset *n = realloc(l->items, sizeof(DnsRRset) * a);
                        if (!n)
                                return -ENOMEM;
                        l->items = n;
                        l->allocated = a;
                }
                s = &l->items[l->n++];
                *s = (DnsRRset){ .name = TAKE_PTR(canonical), .type = type, .ttl = ttl };
        }
        if (ret)
                *ret = s;
        return 0;
}

/* address_compare() with b already parsed. */
static int address_compare_parsed(const char *a, const uint8_t *bb, size_t lb) {
        uint8_t ba[16];
        size_t la;
        if (dns_address_parse(a, ba, &la) < 0)
                return -1; /* never in a list: only canonical literals are added */
        if (la != lb)
                return la < lb ? -1 : 1;
        return memcmp(ba, bb, la);
}

/* The binary search of s's addresses (sorted, unique) for the parsed address, from index lo on: true when
 * found; *ret_pos: its index, or where it would go. */
static bool rrset_search(const DnsRRset *s, size_t lo, const uint8_t *bin, size_t blen, size_t *ret_pos) {
        size_t hi = dns_rrset_size(s);
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = address_compare_parsed(s->addresses[mid], bin, blen);
                if (c == 0) {
                        *ret_pos = mid;
                        return true;
                }
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *ret_pos = lo;
        return false;
}

int dns_rrset_add_address(DnsRRset *s, const char *address) {
        char canonical[46];
        uint16_t type;
        int r = dns_address_normalize(address, canonical, &type);
        if (r < 0)
                return r;
        if (type != s->type)
                return -EINVAL;
        /* The list is sorted by address and unique: a binary search finds the address or its place. An
         * RRset may hold a thousand addresses (one per master), read and built several times a pass: the
         * linear lookup and insertion sort this replaces were most of the CPU time of such a pass. */
        uint8_t bin[16];
        size_t blen;
        r = dns_address_parse(canonical, bin, &blen);
        if (r < 0)
                return r;
        size_t n = strv_length(s->addresses), pos;
        /* Sorted input (a copy of another RRset) appends: one comparison with the last. */
        bool after_last = n > 0 && address_compare_parsed(s->addresses[n - 1], bin, blen) < 0;
        if (rrset_search(s, after_last ? n : 0, bin, blen, &pos))
                return 0;
        char **l = reallocarray(s->addresses, n + 2, sizeof(char *));
        if (!l)
                return -ENOMEM;
        s->addresses = l;
        if (n == 0)
                l[0] = NULL;
        char *copy = strdup(canonical);
        if (!copy)
                return -ENOMEM;
        memmove(l + pos + 1, l + pos, (n + 1 - pos) * sizeof(char *)); /* with the terminating NULL */
        l[pos] = copy;
        return 0;
}

int dns_rrset_list_add_address(DnsRRsetList *l, const char *name, uint32_t ttl, const char *address) {
        uint8_t b[16];
        size_t len;
        DnsRRset *s;
        int type = dns_address_parse(address, b, &len);
        if (type < 0)
                return type;
        int r = dns_rrset_list_get(l, name, (uint16_t)type, ttl, &s);
        if (r < 0)
                return r;
        return dns_rrset_add_address(s, address);
}

int dns_rrset_list_copy_entry(DnsRRsetList *l, const DnsRRset *s) {
        DnsRRset *t;
        int r = dns_rrset_list_get(l, s->name, s->type, s->ttl, &t);
        if (r < 0)
                return r;
        t->ttl = s->ttl;
        for (char **a = s->addresses; a && *a; a++) {
                r = dns_rrset_add_address(t, *a);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int rrset_compare(const void *a, const void *b) {
        const DnsRRset *x = a, *y = b;
        int c = strcmp(x->name, y->name);
        if (c != 0)
                return c;
        return x->type < y->type ? -1 : x->type > y->type;
}

void dns_rrset_list_sort(DnsRRsetList *l) {
        if (l->n > 1)
                qsort_safe(l->items, l->n, sizeof(DnsRRset), rrset_compare);
        l->index_n = SIZE_MAX; /* positions changed: the next find rebuilds the index */
}

bool dns_rrset_equal(const DnsRRset *a, const DnsRRset *b, bool compare_ttl) {
        if (!streq(a->name, b->name) || a->type != b->type)
                return false;
        size_t n = dns_rrset_size(a);
        if (n != dns_rrset_size(b))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!streq(a->addresses[i], b->addresses[i]))
                        return false;
        /* An empty RRset has no TTL to compare. */
        return !compare_ttl || n == 0 || a->ttl == b->ttl;
}

static bool strv_isempty(char *const *l) {
        return !l || !l[0];
}

/* Ensures both an A and an AAAA RRset exist for name (owned, possibly empty), then adds ips. */
static int add_owned(DnsRRsetList *l, const char *name, uint32_t ttl, char *const *ips, const char *node,
                     char **ret_error) {
        int r = dns_rrset_list_get(l, name, DNS_TYPE_A, ttl, NULL);
        if (r >= 0)
                r = dns_rrset_list_get(l, name, DNS_TYPE_AAAA, ttl, NULL);
        if (r == PK_EMALFORMED) {
                *ret_error = strprintf("'%s' is not a valid DNS name", name);
                return r;
        }
        if (r < 0)
                return r;
        STRV_FOREACH (ip, (char **)ips) {
                r = dns_rrset_list_add_address(l, name, ttl, *ip);
                if (r == PK_EMALFORMED) {
                        *ret_error = strprintf("node '%s' has an invalid IP address '%s'", strna(node), *ip);
                        return r;
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

static int add_members(const ClusterSpec *spec, const ClusterView *view, const char *suffix, uint32_t ttl,
                       DnsRRsetList *l, char **ret_error) {
        for (size_t i = 0; i < view->n_members; i++) {
                const EtcdMemberHolder *h = &view->members[i];
                _cleanup_free_ char *name = NULL;
                if (!h->cluster || !h->member || !cluster_spec_find_etcd(spec, h->cluster))
                        continue;
                int r = etcd_member_dns_name(h->cluster, h->member, suffix, &name);
                if (r == -EINVAL) {
                        *ret_error =
                            strprintf("etcd member '%s' of cluster '%s' has no valid DNS name below '%s'",
                                      h->member, h->cluster, suffix);
                        return PK_EMALFORMED;
                }
                if (r < 0)
                        return r;
                const MasterNode *m = h->node ? cluster_view_find_master(view, h->node) : NULL;
                if (m && !strv_isempty(m->internal_ips))
                        r = add_owned(l, name, ttl, m->internal_ips, h->node, ret_error);
                else {
                        /* Unheld (or held by a node we know no address of): the placeholder, so the name
                         * never answers NXDOMAIN (docs/etcd-dns.md). */
                        char *placeholder[] = { (char *)DNS_PLACEHOLDER_ADDRESS, NULL };
                        r = add_owned(l, name, MIN(ttl, (uint32_t)DNS_PLACEHOLDER_TTL), placeholder, h->node,
                                      ret_error);
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

/* "api.<domain>", with an error naming the spec field it came from. */
static int api_name(const char *domain, const char *field, char **ret, char **ret_error) {
        int r = api_dns_name(domain, ret);
        if (r == -EINVAL) {
                *ret_error = strprintf("%s '%s' gives no valid DNS name", field, strna(domain));
                return PK_ESPEC;
        }
        return r;
}

int dns_desired_records(const ClusterSpec *spec, const ClusterView *view, DnsRRsetList *ret,
                        char **ret_error) {
        return dns_desired_records_except(spec, view, NULL, ret, ret_error);
}

/* The spec's TTL and the API's internal and external names (ret_external may be NULL). The loaded spec holds
 * every default (spec-check.c): nothing is derived again here. */
static int api_names(const ClusterSpec *spec, uint32_t *ret_ttl, char **ret_internal, char **ret_external,
                     char **ret_error) {
        _cleanup_free_ char *internal = NULL, *external = NULL;
        if (!spec->name || !spec->dns.internal_suffix || !spec->dns.ttl.set) {
                *ret_error = strdup("the spec has no cluster name, dns.internalSuffix or dns.ttl");
                return PK_ESPEC;
        }
        int64_t ttl = spec->dns.ttl.value;
        if (ttl < 0 || ttl > INT32_MAX) {
                *ret_error = strprintf("dns.ttl %lld is out of range", (long long)ttl);
                return PK_ESPEC;
        }
        int r = api_name(spec->dns.internal_suffix, "dns.internalSuffix", &internal, ret_error);
        if (r >= 0 && ret_external)
                r = api_name(spec->name, "metadata.name", &external, ret_error);
        if (r < 0)
                return r;
        *ret_ttl = (uint32_t)ttl;
        *ret_internal = TAKE_PTR(internal);
        if (ret_external)
                *ret_external = TAKE_PTR(external);
        return 0;
}

int dns_desired_records_except(const ClusterSpec *spec, const ClusterView *view, char *const *withheld,
                               DnsRRsetList *ret, char **ret_error) {
        _cleanup_rrset_list_ DnsRRsetList l = {};
        _cleanup_free_ char *api_internal = NULL, *api_external = NULL;
        char *error = NULL;
        uint32_t ttl;
        int r = api_names(spec, &ttl, &api_internal, &api_external, ret_error);
        if (r < 0)
                return r;

        r = add_members(spec, view, spec->dns.internal_suffix, ttl, &l, &error);
        if (r >= 0)
                r = add_owned(&l, api_internal, ttl, NULL, NULL, &error);
        if (r >= 0)
                r = add_owned(&l, api_external, ttl, NULL, NULL, &error);
        for (size_t i = 0; r >= 0 && i < view->n_masters; i++) {
                const MasterNode *m = &view->masters[i];
                if (strv_contains((char **)withheld, m->name))
                        continue;
                r = add_owned(&l, api_internal, ttl, m->internal_ips, m->name, &error);
                if (r >= 0)
                        r = add_owned(&l, api_external, ttl, m->external_ips, m->name, &error);
        }
        if (r < 0) {
                *ret_error = error;
                return r;
        }
        dns_rrset_list_sort(&l);
        *ret = l;
        l = (DnsRRsetList){};
        return 0;
}

int dns_api_internal_records(const ClusterSpec *spec, const ClusterView *view, DnsRRsetList *ret,
                             char **ret_error) {
        _cleanup_rrset_list_ DnsRRsetList l = {};
        _cleanup_free_ char *api_internal = NULL;
        char *error = NULL;
        uint32_t ttl;
        int r = api_names(spec, &ttl, &api_internal, NULL, ret_error);
        if (r >= 0)
                r = add_owned(&l, api_internal, ttl, NULL, NULL, &error);
        for (size_t i = 0; r >= 0 && view && i < view->n_masters; i++)
                r = add_owned(&l, api_internal, ttl, view->masters[i].internal_ips, view->masters[i].name,
                              &error);
        if (r < 0) {
                if (error)
                        *ret_error = error;
                return r;
        }
        dns_rrset_list_sort(&l);
        *ret = l;
        l = (DnsRRsetList){};
        return 0;
}

/* dns_rrsets_hold_all() with the name already canonical. */
static bool hold_all(const DnsRRsetList *served, const char *canonical, char *const *ips) {
        if (strv_isempty(ips))
                return false;
        STRV_FOREACH (ip, (char **)ips) {
                uint8_t bin[16];
                size_t blen, pos;
                int type = dns_address_parse(*ip, bin, &blen);
                const DnsRRset *s = type < 0 ? NULL : dns_rrset_list_find(served, canonical, (uint16_t)type);
                if (!s || !rrset_search(s, 0, bin, blen, &pos))
                        return false;
        }
        return true;
}

bool dns_rrsets_hold_all(const DnsRRsetList *served, const char *name, char *const *ips) {
        _cleanup_free_ char *canonical = NULL;
        return dns_name_normalize(name, &canonical) >= 0 && hold_all(served, canonical, ips);
}

/* Whether a listed master other than view->masters[i] vouches for the API's pods: it serves now (it answered
 * /readyz or the pods' read: a Ready in the API can be stale), the API shows its apiserver pod Ready (so the
 * same rule never takes it out) and it is not out for its pivot turn. */
static bool another_listed_serves(const ClusterView *view, const bool *listed,
                                  const DnsApiReadiness *readiness, size_t i) {
        for (size_t k = 0; k < view->n_masters; k++) {
                const char *name = view->masters[k].name;
                bool answered = strv_contains(readiness->ready, name) ||
                                (readiness->pods_through && streq(readiness->pods_through, name));
                if (k != i && listed[k] && answered && strv_contains(readiness->pods_ready, name) &&
                    !strv_contains(readiness->out, name))
                        return true;
        }
        return false;
}

int dns_api_withheld(const ClusterView *view, const DnsRRsetList *served, const char *api_name,
                     const char *self, const DnsApiReadiness *readiness, char ***ret) {
        _cleanup_strv_free_ char **out = NULL;
        _cleanup_free_ char *canonical = NULL;
        *ret = NULL;
        if (!readiness || view->n_masters == 0)
                return 0;
        int r = dns_name_normalize(api_name, &canonical);
        if (r < 0)
                return r == -ENOMEM ? r : 0;
        _cleanup_free_ bool *listed = new0(bool, view->n_masters);
        if (!listed)
                return -ENOMEM;
        size_t n_listed = 0;
        for (size_t i = 0; i < view->n_masters; i++) {
                listed[i] = hold_all(served, canonical, view->masters[i].internal_ips);
                n_listed += listed[i];
        }
        const MasterNode *me = self ? cluster_view_find_master(view, self) : NULL;
        bool self_listed = me && listed[me - view->masters];
        bool self_serves = me && strv_contains(readiness->ready, self);
        for (size_t i = 0; i < view->n_masters; i++) {
                const MasterNode *m = &view->masters[i];
                bool others_listed = n_listed > (size_t)listed[i];
                /* its pivot turn: the others serve while its self-hosted apiserver binds the port */
                if (others_listed &&
                    (strv_contains(readiness->out, m->name) || (!listed[i] && readiness->out_unknown))) {
                        if (strv_extend(&out, m->name) < 0)
                                return -ENOMEM;
                        continue;
                }
                /* the API says its apiserver does not serve, and another listed one that serves says so */
                if (readiness->pods_read && !strv_contains(readiness->pods_ready, m->name) &&
                    another_listed_serves(view, listed, readiness, i)) {
                        if (strv_extend(&out, m->name) < 0)
                                return -ENOMEM;
                        continue;
                }
                if (listed[i] || strv_contains(readiness->ready, m->name))
                        continue;
                /* This master leaves itself out while another is listed: the others serve meanwhile, and
                 * add it when it answers. Another master is left out when this one's apiserver, in the names
                 * (or about to be), answers; put in by a listed master whose own does not (leaving it out
                 * protects no client); else kept as DNS serves it, for the listed masters to decide. */
                bool withheld = m == me ? n_listed > 0 : self_serves || !self_listed;
                if (withheld && strv_extend(&out, m->name) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(out);
        return 0;
}

int dns_rrsets_diff(const DnsRRsetList *desired, const DnsRRsetList *current, bool compare_ttl,
                    DnsRRsetList *ret) {
        _cleanup_rrset_list_ DnsRRsetList changes = {};
        for (size_t i = 0; i < desired->n; i++) {
                const DnsRRset *d = &desired->items[i];
                const DnsRRset *c = dns_rrset_list_find(current, d->name, d->type);
                /* Nothing known for it counts as empty. */
                if (c ? dns_rrset_equal(d, c, compare_ttl) : dns_rrset_size(d) == 0)
                        continue;
                int r = dns_rrset_list_copy_entry(&changes, d);
                if (r < 0)
                        return r;
        }
        dns_rrset_list_sort(&changes);
        *ret = changes;
        changes = (DnsRRsetList){};
        return 0;
}

void dns_rrsets_print(const DnsRRsetList *l, bool show_empty, FILE *f) {
        char tb[16];
        for (size_t i = 0; i < l->n; i++) {
                const DnsRRset *s = &l->items[i];
                const char *type = dns_type_to_string(s->type, tb);
                if (dns_rrset_size(s) == 0 && show_empty)
                        fprintf(f, "%s\t%u\tIN\t%s\t(none)\n", s->name, s->ttl, type);
                for (char **a = s->addresses; a && *a; a++)
                        fprintf(f, "%s\t%u\tIN\t%s\t%s\n", s->name, s->ttl, type, *a);
        }
}
