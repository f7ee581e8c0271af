/* SPDX-License-Identifier: Apache-2.0 */
/* The bookkeeping of DNS changes still propagating (src/dns/dns-pending.c): what the daemon keeps across
 * passes so that a pass never waits for Route 53's INSYNC. The provider side (one GetChange per change per
 * pass) is in test-dns-route53.c, against the AWS double. */
#include "unit-test.h"

#include <stdio.h>
#include <string.h>

#include "basic/errors.h"
#include "dns/dns-pending.h"

#define S USEC_PER_SEC

static void test_add_order_duplicates(void **state) {
        _cleanup_dns_pending_ DnsPending p = {};
        assert_null(dns_pending_oldest(&p));
        assert_int_equal(dns_pending_oldest_age(&p, 100 * S), 0);
        assert_int_equal(dns_pending_add(&p, "CB", 20 * S), 1);
        assert_int_equal(dns_pending_add(&p, "CA", 10 * S), 1); /* submitted earlier: goes first */
        assert_int_equal(dns_pending_add(&p, "CC", 30 * S), 1);
        assert_int_equal(dns_pending_add(&p, "CB", 40 * S), 0); /* already listed: kept once, time kept */
        assert_int_equal(p.n, 3);
        assert_string_equal(p.items[0].id, "CA");
        assert_string_equal(p.items[1].id, "CB");
        assert_int_equal(p.items[1].submitted, 20 * S);
        assert_string_equal(p.items[2].id, "CC");
        assert_string_equal(dns_pending_oldest(&p)->id, "CA");
        assert_int_equal(dns_pending_oldest_age(&p, 45 * S), 35 * S);
        assert_int_equal(dns_pending_oldest_age(&p, 5 * S), 0); /* a clock before it: no negative age */
}

static void test_remove_and_move(void **state) {
        _cleanup_dns_pending_ DnsPending p = {}, settled = {};
        assert_int_equal(dns_pending_add(&p, "C1", 1 * S), 1);
        assert_int_equal(dns_pending_add(&p, "C2", 2 * S), 1);
        assert_int_equal(dns_pending_add(&p, "C3", 3 * S), 1);
        assert_int_equal(dns_pending_remove(&p, "C9"), 0);
        assert_int_equal(dns_pending_remove(&p, NULL), 0);
        assert_int_equal(dns_pending_remove(&p, "C1"), 1);
        assert_int_equal(dns_pending_remove(&p, "C1"), 0);
        assert_int_equal(p.n, 2);
        assert_string_equal(dns_pending_oldest(&p)->id, "C2");
        assert_int_equal(dns_pending_move(&p, 1, &settled), 0);
        assert_int_equal(dns_pending_move(&p, 5, &settled), -EINVAL);
        assert_int_equal(p.n, 1);
        assert_int_equal(settled.n, 1);
        assert_string_equal(settled.items[0].id, "C3");
        assert_int_equal(settled.items[0].submitted, 3 * S);
        assert_int_equal(dns_pending_move(&p, 0, &settled), 0);
        assert_int_equal(p.n, 0);
        assert_null(dns_pending_oldest(&p));
        assert_int_equal(settled.n, 2);
        /* an emptied list takes new entries */
        assert_int_equal(dns_pending_add(&p, "C4", 4 * S), 1);
        assert_string_equal(dns_pending_oldest(&p)->id, "C4");
}

static void test_bounded(void **state) {
        _cleanup_dns_pending_ DnsPending p = {};
        char id[16];
        for (unsigned i = 0; i < DNS_PENDING_MAX; i++) {
                snprintf(id, sizeof(id), "C%u", i);
                assert_int_equal(dns_pending_add(&p, id, (usec_t)(i + 1) * S), 1);
        }
        /* full: the oldest is forgotten, the list does not grow */
        assert_int_equal(dns_pending_add(&p, "CNEW", 1000 * S), 2);
        assert_int_equal(p.n, DNS_PENDING_MAX);
        assert_string_equal(dns_pending_oldest(&p)->id, "C1");
        assert_string_equal(p.items[p.n - 1].id, "CNEW");
}

static void test_bad_ids(void **state) {
        _cleanup_dns_pending_ DnsPending p = {};
        char longid[DNS_CHANGE_ID_MAX + 2];
        memset(longid, 'C', sizeof(longid) - 1);
        longid[sizeof(longid) - 1] = 0;
        assert_int_equal(dns_pending_add(&p, NULL, S), -EINVAL);
        assert_int_equal(dns_pending_add(&p, "", S), -EINVAL);
        assert_int_equal(dns_pending_add(&p, longid, S), -EINVAL);
        assert_int_equal(dns_pending_add(&p, "C1\nX-Injected: 1", S), -EINVAL);
        longid[DNS_CHANGE_ID_MAX] = 0; /* exactly the maximum */
        assert_int_equal(dns_pending_add(&p, longid, S), 1);
        assert_int_equal(p.n, 1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_add_order_duplicates),
                cmocka_unit_test(test_remove_and_move),
                cmocka_unit_test(test_bounded),
                cmocka_unit_test(test_bad_ids),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
