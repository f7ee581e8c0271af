/* SPDX-License-Identifier: Apache-2.0 */
/* The route53 DNS provider against the AWS double: the zone from dns.zone or by walking up the names, one
 * ChangeResourceRecordSets per pass (UPSERT, DELETE with the exact current values), no waiting for INSYNC in
 * apply (the change ids are handed on and asked about with one GetChange each, or waited for by the
 * one-shot commands), nothing sent when converged, TTLs compared, clear errors. */
#include "unit-test.h"

#include <stdlib.h>

#include "aws-double.h"
#include "basic/errors.h"
#include "basic/stop.h"
#include "basic/strv.h"
#include "dns/dns-provider.h"
#include "dns/dns-records.h"
#include "dns/dns-wire.h"
#include "spec/spec.h"

static const char zones[] =
    "{\"zones\": ["
    "  {\"id\": \"ZPARENT\", \"name\": \"k8s.test.\", \"records\": ["
    "    {\"name\": \"old.c.k8s.test.\", \"type\": \"A\", \"ttl\": 300, \"values\": [\"192.0.2.7\", "
    "\"192.0.2.8\"]},"
    "    {\"name\": \"keep.k8s.test.\", \"type\": \"A\", \"ttl\": 300, \"values\": [\"192.0.2.9\"]}]},"
    "  {\"id\": \"ZCHILD\", \"name\": \"sub.k8s.test.\"}],"
    " \"faults\": {\"insync_after_polls\": 2}}";

static int setup(void **state) {
        aws_double_start(state);
        aws_double_post("/_double/config", zones);
        return 0;
}

static const DnsProvider *route53(void) {
        const DnsProvider *p = dns_provider_find("route53");
        assert_non_null(p);
        return p;
}

static DnsProviderState *open_zone(const char *zone) {
        ClusterSpec spec = { .dns.zone = (char *)zone };
        DnsProviderState *s = NULL;
        _cleanup_free_ char *err = NULL;
        int r = route53()->open(&spec, &s, &err);
        if (r < 0)
                fail_msg("open: %s", strna(err));
        return s;
}

static size_t log_count(const char *action) {
        json_t *log = aws_double_get("log"), *e;
        size_t i, n = 0;
        json_array_foreach(log, i,
                           e) if (streq(json_string_value(json_object_get(e, "action")) ?: "", action)) n++;
        json_decref(log);
        return n;
}

/* "ttl v1,v2" of (name, type) in the double's zone, or NULL. Caller frees. */
static char *zone_record(const char *zone_id, const char *name, const char *type) {
        json_t *st = aws_double_get("state"), *rec;
        json_t *recs = json_object_get(json_object_get(json_object_get(st, "zones"), zone_id), "records");
        size_t i;
        char *out = NULL;
        json_array_foreach(recs, i, rec) {
                if (!streq(json_string_value(json_object_get(rec, "name")), name) ||
                    !streq(json_string_value(json_object_get(rec, "type")), type))
                        continue;
                json_t *vals = json_object_get(rec, "values"), *v;
                size_t k;
                out = strprintf("%lld ", (long long)json_integer_value(json_object_get(rec, "ttl")));
                json_array_foreach(vals, k, v)
                    assert_int_equal(strextend_printf(&out, "%s%s", k ? "," : "", json_string_value(v)), 0);
        }
        json_decref(st);
        return out;
}

static void desired_set(DnsRRsetList *l, uint32_t ttl) {
        DnsRRset *s;
        assert_int_equal(dns_rrset_list_add_address(l, "etcd-a.internal.c.k8s.test.", ttl, "10.0.0.1"), 0);
        assert_int_equal(dns_rrset_list_add_address(l, "api.c.k8s.test.", ttl, "198.51.100.2"), 0);
        assert_int_equal(dns_rrset_list_add_address(l, "api.c.k8s.test.", ttl, "198.51.100.1"), 0);
        assert_int_equal(dns_rrset_list_add_address(l, "api.c.k8s.test.", ttl, "2001:db8::1"), 0);
        /* owned but empty: deleted */
        assert_int_equal(dns_rrset_list_get(l, "old.c.k8s.test.", DNS_TYPE_A, ttl, &s), 0);
        assert_int_equal(dns_rrset_list_get(l, "old.c.k8s.test.", DNS_TYPE_AAAA, ttl, &s), 0);
        dns_rrset_list_sort(l);
}

static void test_sync_upsert_delete_converge(void **state) {
        _cleanup_rrset_list_ DnsRRsetList desired = {}, changes = {}, again = {}, ttl = {};
        _cleanup_free_ char *err = NULL;
        DnsProviderState *s = open_zone("k8s.test");
        desired_set(&desired, 30);
        assert_int_equal(dns_sync(route53(), s, &desired, false, &changes, &err), 0);
        assert_int_equal(changes.n, 4); /* etcd-a A, api A, api AAAA, old A (old AAAA was already absent) */
        assert_int_equal(log_count("ChangeResourceRecordSets"), 1);
        /* apply does not wait for INSYNC: it hands the change on */
        assert_int_equal(log_count("GetChange"), 0);
        _cleanup_strv_free_ char **ids = NULL, **none = NULL;
        assert_int_equal(route53()->take_submitted(s, &ids), 0);
        assert_int_equal(strv_length(ids), 1);
        assert_int_equal(route53()->take_submitted(s, &none), 0); /* taken: nothing left */
        assert_null(none);
        assert_string_or_null_free(zone_record("ZPARENT", "etcd-a.internal.c.k8s.test.", "A"),
                                   "30 10.0.0.1");
        assert_string_or_null_free(zone_record("ZPARENT", "api.c.k8s.test.", "A"),
                                   "30 198.51.100.1,198.51.100.2");
        assert_string_or_null_free(zone_record("ZPARENT", "api.c.k8s.test.", "AAAA"), "30 2001:db8::1");
        assert_string_or_null_free(zone_record("ZPARENT", "old.c.k8s.test.", "A"), NULL);
        assert_string_or_null_free(zone_record("ZPARENT", "keep.k8s.test.", "A"), "300 192.0.2.9");
        route53()->close(s);

        /* converged: a read, nothing sent */
        s = open_zone("k8s.test.");
        assert_int_equal(dns_sync(route53(), s, &desired, false, &again, &err), 0);
        assert_int_equal(again.n, 0);
        assert_int_equal(log_count("ChangeResourceRecordSets"), 1);
        route53()->close(s);

        /* a new TTL is a change (route53 stores TTLs) */
        _cleanup_rrset_list_ DnsRRsetList d60 = {};
        desired_set(&d60, 60);
        s = open_zone("k8s.test.");
        assert_int_equal(dns_sync(route53(), s, &d60, false, &ttl, &err), 0);
        assert_int_equal(ttl.n, 3);
        assert_string_or_null_free(zone_record("ZPARENT", "api.c.k8s.test.", "A"),
                                   "60 198.51.100.1,198.51.100.2");
        assert_int_equal(log_count("ChangeResourceRecordSets"), 2);
        route53()->close(s);
}

static void test_walk_up_to_closest_zone(void **state) {
        _cleanup_rrset_list_ DnsRRsetList desired = {}, changes = {};
        _cleanup_free_ char *err = NULL;
        DnsProviderState *s = open_zone(NULL);
        assert_int_equal(
            dns_rrset_list_add_address(&desired, "etcd-a.internal.sub.k8s.test.", 20, "10.0.0.3"), 0);
        assert_int_equal(dns_rrset_list_add_address(&desired, "api.other.k8s.test.", 20, "10.0.0.4"), 0);
        dns_rrset_list_sort(&desired);
        assert_int_equal(dns_sync(route53(), s, &desired, false, &changes, &err), 0);
        /* one change per zone */
        assert_int_equal(log_count("ChangeResourceRecordSets"), 2);
        assert_string_or_null_free(zone_record("ZCHILD", "etcd-a.internal.sub.k8s.test.", "A"),
                                   "20 10.0.0.3");
        assert_string_or_null_free(zone_record("ZPARENT", "api.other.k8s.test.", "A"), "20 10.0.0.4");
        assert_string_or_null_free(zone_record("ZPARENT", "etcd-a.internal.sub.k8s.test.", "A"), NULL);
        route53()->close(s);

        /* a name no hosted zone holds */
        _cleanup_rrset_list_ DnsRRsetList out = {}, cur = {};
        _cleanup_free_ char *err2 = NULL;
        s = open_zone(NULL);
        assert_int_equal(dns_rrset_list_add_address(&out, "api.elsewhere.example.", 20, "10.0.0.5"), 0);
        assert_int_equal(route53()->read(s, &out, &cur, &err2), PK_ESPEC);
        assert_non_null(strstr(err2, "no Route 53 hosted zone holds 'api.elsewhere.example.'"));
        route53()->close(s);
}

static void test_errors(void **state) {
        ClusterSpec spec = { .dns.zone = (char *)"nope.test." };
        DnsProviderState *s = NULL;
        _cleanup_free_ char *e1 = NULL, *e2 = NULL, *e3 = NULL, *e4 = NULL;
        assert_int_equal(route53()->open(&spec, &s, &e1), PK_ESPEC);
        assert_non_null(strstr(e1, "no Route 53 hosted zone is named 'nope.test.'"));

        /* split horizon: two zones of one name are refused, by id */
        aws_double_post("/_double/config",
                        "{\"zones\": [{\"id\": \"ZPRIV\", \"name\": \"k8s.test.\", \"private\": true}]}");
        spec.dns.zone = (char *)"k8s.test.";
        assert_int_equal(route53()->open(&spec, &s, &e2), PK_ESPEC);
        assert_non_null(strstr(e2, "ZPARENT"));
        assert_non_null(strstr(e2, "ZPRIV"));

        spec.dns.zone = (char *)"bad..name";
        assert_int_equal(route53()->open(&spec, &s, &e3), PK_ESPEC);

        setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret-0123456789abcdef", 1);
        spec.dns.zone = (char *)"sub.k8s.test.";
        assert_int_equal(route53()->open(&spec, &s, &e4), PK_ECLOUD);
        print_message("error: %s\n", e4);
        assert_non_null(strstr(e4, "route53 ListHostedZonesByName: SignatureDoesNotMatch"));
        assert_null(strstr(e4, "wrong-secret"));
        setenv("AWS_SECRET_ACCESS_KEY", AWS_DOUBLE_SECRET, 1);
}

static void test_throttled_pass(void **state) {
        _cleanup_rrset_list_ DnsRRsetList desired = {}, changes = {};
        _cleanup_free_ char *err = NULL;
        DnsProviderState *s = open_zone("k8s.test.");
        desired_set(&desired, 30);
        aws_double_post("/_double/config", "{\"faults\": {\"throttle_pattern\": [2, 3]}}");
        assert_int_equal(dns_sync(route53(), s, &desired, false, &changes, &err), 0);
        assert_int_equal(changes.n, 4);
        assert_string_or_null_free(zone_record("ZPARENT", "api.c.k8s.test.", "AAAA"), "30 2001:db8::1");
        route53()->close(s);
}

static DnsSession *session_open(void) {
        ClusterSpec spec = { .dns.zone = (char *)"k8s.test.",
                             .dns.provider = { .set = true, .value = DNS_PROVIDER_ROUTE53 } };
        DnsSession *s = NULL;
        _cleanup_free_ char *err = NULL;
        if (dns_session_open(&spec, &s, &err) < 0)
                fail_msg("open: %s", strna(err));
        return s;
}

/* Route 53 takes tens of seconds to say INSYNC: the write returns at once, each check is one GetChange and
 * no sleep, the change leaves the list once INSYNC; a change Route 53 no longer knows leaves it too. */
static void test_no_wait_then_follow(void **state) {
        _cleanup_rrset_list_ DnsRRsetList desired = {}, served = {}, changes = {}, again = {};
        _cleanup_dns_pending_ DnsPending pending = {}, settled = {};
        _cleanup_(dns_session_freep) DnsSession *s = session_open();
        _cleanup_free_ char *err = NULL;
        bool repair;

        aws_double_post("/_double/config", "{\"faults\": {\"insync_after_polls\": 0, "
                                           "\"insync_delay_seconds\": 1.5}}");
        desired_set(&desired, 30);
        assert_int_equal(dns_session_read(s, &desired, &served, &repair, &err), 0);
        assert_int_equal(dns_session_diff(s, &desired, &served, &changes), 0);
        usec_t t0 = now(CLOCK_MONOTONIC);
        assert_int_equal(dns_session_apply(s, &changes, &err), 0);
        assert_true(now(CLOCK_MONOTONIC) - t0 < USEC_PER_SEC); /* did not wait the 1.5 s */
        assert_int_equal(dns_session_take_submitted(s, &pending, t0), 1);
        assert_int_equal(pending.n, 1);
        assert_int_equal(dns_session_take_submitted(s, &pending, t0), 0);

        /* the records are Route 53's already: the next read sees them and nothing is sent again */
        dns_rrset_list_done(&served);
        assert_int_equal(dns_session_read(s, &desired, &served, &repair, &err), 0);
        assert_int_equal(dns_session_diff(s, &desired, &served, &again), 0);
        assert_int_equal(again.n, 0);

        /* one GetChange per check, no sleep: still PENDING */
        t0 = now(CLOCK_MONOTONIC);
        assert_int_equal(dns_session_check_pending(s, &pending, &settled, &err), 0);
        assert_true(now(CLOCK_MONOTONIC) - t0 < USEC_PER_SEC);
        assert_int_equal(log_count("GetChange"), 1);
        assert_int_equal(pending.n, 1);
        assert_int_equal(settled.n, 0);

        /* after the delay: INSYNC, moved to settled */
        assert_int_equal(sleep_usec(1600 * USEC_PER_MSEC), 0);
        assert_int_equal(dns_session_check_pending(s, &pending, &settled, &err), 0);
        assert_int_equal(log_count("GetChange"), 2);
        assert_int_equal(pending.n, 0);
        assert_int_equal(settled.n, 1);

        /* a change id Route 53 does not know (NoSuchChange) is nothing left to wait for */
        assert_int_equal(dns_pending_add(&pending, "CNOSUCHCHANGE1", t0), 1);
        assert_int_equal(dns_session_check_pending(s, &pending, NULL, &err), 0);
        assert_int_equal(pending.n, 0);
        assert_int_equal(log_count("ChangeResourceRecordSets"), 1);
}

/* A change submitted through a session: its id in *pending. */
static void submit(DnsSession *s, uint32_t ttl, DnsPending *pending) {
        _cleanup_rrset_list_ DnsRRsetList desired = {}, served = {}, changes = {};
        _cleanup_free_ char *err = NULL;
        bool repair;
        desired_set(&desired, ttl);
        assert_int_equal(dns_session_read(s, &desired, &served, &repair, &err), 0);
        assert_int_equal(dns_session_diff(s, &desired, &served, &changes), 0);
        assert_true(changes.n > 0);
        assert_int_equal(dns_session_apply(s, &changes, &err), 0);
        assert_int_equal(dns_session_take_submitted(s, pending, now(CLOCK_MONOTONIC)), 1);
}

/* The one-shot commands wait, bounded: INSYNC ends the wait; past the bound, PK_ETIMEOUT names the change.
 */
static void test_wait_bounded(void **state) {
        _cleanup_dns_pending_ DnsPending pending = {};
        _cleanup_free_ char *err = NULL, *err2 = NULL;
        _cleanup_(dns_session_freep) DnsSession *s = session_open();

        aws_double_post("/_double/config", "{\"faults\": {\"insync_after_polls\": 0, "
                                           "\"insync_delay_seconds\": 1}}");
        submit(s, 30, &pending);
        usec_t t0 = now(CLOCK_MONOTONIC);
        assert_int_equal(dns_session_wait_pending(s, &pending, 10 * USEC_PER_SEC, 100 * USEC_PER_MSEC, &err),
                         0);
        usec_t took = now(CLOCK_MONOTONIC) - t0;
        assert_true(took >= 800 * USEC_PER_MSEC && took < 5 * USEC_PER_SEC);
        assert_int_equal(pending.n, 0);

        aws_double_post("/_double/config", "{\"faults\": {\"insync_delay_seconds\": 30}}");
        submit(s, 60, &pending);
        _cleanup_free_ char *id = strdup(pending.items[0].id);
        t0 = now(CLOCK_MONOTONIC);
        assert_int_equal(
            dns_session_wait_pending(s, &pending, 1200 * USEC_PER_MSEC, 200 * USEC_PER_MSEC, &err2),
            PK_ETIMEOUT);
        took = now(CLOCK_MONOTONIC) - t0;
        assert_true(took >= USEC_PER_SEC && took < 4 * USEC_PER_SEC);
        print_message("timeout: %s\n", err2);
        assert_non_null(strstr(err2, id));
        assert_non_null(strstr(err2, "route53"));
        assert_int_equal(pending.n, 1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_sync_upsert_delete_converge, setup, aws_double_stop),
                cmocka_unit_test_setup_teardown(test_walk_up_to_closest_zone, setup, aws_double_stop),
                cmocka_unit_test_setup_teardown(test_errors, setup, aws_double_stop),
                cmocka_unit_test_setup_teardown(test_throttled_pass, setup, aws_double_stop),
                cmocka_unit_test_setup_teardown(test_no_wait_then_follow, setup, aws_double_stop),
                cmocka_unit_test_setup_teardown(test_wait_bounded, setup, aws_double_stop),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
