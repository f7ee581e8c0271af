/* SPDX-License-Identifier: Apache-2.0 */
/* The diff between the routes protokube wants and the main table: pure, sorted lookups so that a table of
 * NETLINK_ROUTES_MAX routes is planned in n log n. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "shared/netlink-route.h"

void netlink_route_plan_done(NetlinkRoutePlan *p) {
        free(p->replace);
        free(p->delete);
        free(p->conflicts);
        *p = (NetlinkRoutePlan){};
}

static int prefix_compare(const NetlinkRoute *a, const NetlinkRoute *b) {
        if (a->family != b->family)
                return a->family < b->family ? -1 : 1;
        if (a->dst_len != b->dst_len)
                return a->dst_len < b->dst_len ? -1 : 1;
        return memcmp(a->dst.bytes, b->dst.bytes, in_addr_family_size(a->family));
}

static int prefix_compare_void(const void *a, const void *b) {
        return prefix_compare(*(const NetlinkRoute *const *)a, *(const NetlinkRoute *const *)b);
}

/* Pointers to the n routes of a, sorted by prefix (caller frees). */
static const NetlinkRoute **sorted_by_prefix(const NetlinkRoute *a, size_t n) {
        const NetlinkRoute **s = calloc(MAX(n, (size_t)1), sizeof(*s));
        if (!s)
                return NULL;
        for (size_t i = 0; i < n; i++)
                s[i] = &a[i];
        qsort_safe(s, n, sizeof(*s), prefix_compare_void);
        return s;
}

/* The index of the first of the n sorted routes with r's prefix, n if none. */
static size_t prefix_first(const NetlinkRoute **sorted, size_t n, const NetlinkRoute *r) {
        size_t lo = 0, hi = n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (prefix_compare(sorted[mid], r) < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < n && prefix_compare(sorted[lo], r) == 0 ? lo : n;
}

/* Whether ours, a listed route of our protocol, is want as wanted. */
static bool route_is_as_wanted(const NetlinkRoute *ours, const NetlinkRoute *want) {
        size_t size = in_addr_family_size(want->family);
        return prefix_compare(ours, want) == 0 && ours->has_gateway == want->has_gateway &&
               (!want->has_gateway || memcmp(ours->gateway.bytes, want->gateway.bytes, size) == 0) &&
               (want->ifindex == 0 || ours->ifindex == want->ifindex);
}

static bool is_ours(const NetlinkRoute *r) {
        return r->protocol == NETLINK_ROUTE_PROTO_PROTOKUBE;
}

/* The metric the kernel gives a route added without one: IPv4 0, IPv6 IP6_RT_PRIO_USER. */
static uint32_t default_metric(int family) {
        return family == AF_INET6 ? 1024 : 0;
}

/* For want: nothing to do (0), a replace (1), or a conflict with *ret_theirs (2). A replace changes in
 * place the first route of the prefix with the default metric: *ret_taken, if it is ours (the caller must
 * not delete it after the replace: its delete, without a gateway to tell them apart, would match the new
 * route). */
static int plan_want(const NetlinkRoute *want, const NetlinkRoute **have, size_t n_have,
                     const NetlinkRoute **ret_theirs, const NetlinkRoute **ret_taken) {
        const NetlinkRoute *theirs = NULL, *taken = NULL;
        for (size_t i = prefix_first(have, n_have, want); i < n_have && prefix_compare(have[i], want) == 0;
             i++) {
                if (is_ours(have[i]) && route_is_as_wanted(have[i], want))
                        return 0;
                /* the first listed, whatever the sort's order */
                if (!is_ours(have[i]) && (!theirs || have[i] < theirs))
                        theirs = have[i];
                if (is_ours(have[i]) && have[i]->priority == default_metric(want->family) &&
                    (!taken || have[i] < taken))
                        taken = have[i];
        }
        *ret_theirs = theirs;
        *ret_taken = theirs ? NULL : taken;
        return theirs ? 2 : 1;
}

/* Whether ours is one of the wanted routes as it is. */
static bool is_wanted(const NetlinkRoute *ours, const NetlinkRoute **want, size_t n_want) {
        for (size_t i = prefix_first(want, n_want, ours); i < n_want && prefix_compare(want[i], ours) == 0;
             i++)
                if (route_is_as_wanted(ours, want[i]))
                        return true;
        return false;
}

static int check_unique(const NetlinkRoute **want, size_t n_want, char **ret_error) {
        char a[NETLINK_ROUTE_TEXT_MAX], b[NETLINK_ROUTE_TEXT_MAX];
        for (size_t i = 1; i < n_want; i++)
                if (prefix_compare(want[i - 1], want[i]) == 0)
                        return error_setf(ret_error, -EINVAL, "a prefix wanted twice: %s and %s",
                                          netlink_route_to_text(want[i - 1], a),
                                          netlink_route_to_text(want[i], b));
        return 0;
}

static int plan_fill(const NetlinkRoute *want, size_t n_want, const NetlinkRoute **want_sorted,
                     const NetlinkRoute *have, size_t n_have, const NetlinkRoute **have_sorted,
                     NetlinkRoutePlan *p) {
        _cleanup_free_ bool *taken = calloc(MAX(n_have, (size_t)1), sizeof(bool));
        if (!taken)
                return -ENOMEM;
        p->replace = calloc(MAX(n_want, (size_t)1), sizeof(*p->replace));
        p->conflicts = calloc(MAX(n_want, (size_t)1), sizeof(*p->conflicts));
        p->delete = calloc(MAX(n_have, (size_t)1), sizeof(*p->delete));
        if (!p->replace || !p->conflicts || !p->delete)
                return -ENOMEM;
        for (size_t i = 0; i < n_want; i++) {
                const NetlinkRoute *theirs = NULL, *old = NULL;
                int k = plan_want(&want[i], have_sorted, n_have, &theirs, &old);
                if (k == 1)
                        p->replace[p->n_replace++] = want[i];
                if (old)
                        taken[old - have] = true;
                if (k == 2)
                        p->conflicts[p->n_conflicts++] =
                            (NetlinkRouteConflict){ .want = want[i], .theirs = *theirs };
        }
        for (size_t i = 0; i < n_have; i++)
                if (is_ours(&have[i]) && !taken[i] && !is_wanted(&have[i], want_sorted, n_want))
                        p->delete[p->n_delete++] = have[i];
        return 0;
}

int netlink_route_plan(const NetlinkRoute *want, size_t n_want, const NetlinkRoute *have, size_t n_have,
                       NetlinkRoutePlan *ret, char **ret_error) {
        _cleanup_free_ const NetlinkRoute **want_sorted = sorted_by_prefix(want, n_want);
        _cleanup_free_ const NetlinkRoute **have_sorted = sorted_by_prefix(have, n_have);
        _cleanup_(netlink_route_plan_done) NetlinkRoutePlan p = {};

        if (!want_sorted || !have_sorted)
                return -ENOMEM;
        int r = check_unique(want_sorted, n_want, ret_error);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n_want; i++)
                if (in_addr_family_size(want[i].family) == 0 ||
                    want[i].dst_len > in_addr_family_size(want[i].family) * 8)
                        return error_setf(ret_error, -EINVAL, "a wanted route of family %d /%u",
                                          want[i].family, want[i].dst_len);
        r = plan_fill(want, n_want, want_sorted, have, n_have, have_sorted, &p);
        if (r < 0)
                return r;
        *ret = p;
        p = (NetlinkRoutePlan){};
        return 0;
}
