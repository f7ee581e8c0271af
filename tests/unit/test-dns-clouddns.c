/* SPDX-License-Identifier: Apache-2.0 */
/* The clouddns DNS provider against the Google Cloud double: the managed zone from dns.zone or by walking up
 * the names, our names read one by one (never the zone), one changes.create per pass with the deletions of
 * what is served and the additions of what is desired, nothing sent when converged, another owner's set at
 * one of our names untouched, a change refused because another master changed a set meanwhile read again and
 * sent again in the same pass, "pending" followed without waiting, clear errors. */
#include "unit-test.h"

#include <stdlib.h>

#include "basic/errors.h"
#include "basic/strv.h"
#include "dns/dns-provider.h"
#include "dns/dns-records.h"
#include "dns/dns-wire.h"
#include "gce-double.h"
#include "spec/spec.h"

static const char zones[] =
    "{\"managed_zones\": {"
    "  \"k8s-test\": {\"dns_name\": \"k8s.test.\", \"rrsets\": ["
    "    {\"name\": \"old.c.k8s.test.\", \"type\": \"A\", \"ttl\": 300, \"rrdatas\": [\"192.0.2.7\", "
    "\"192.0.2.8\"]},"
    "    {\"name\": \"api.c.k8s.test.\", \"type\": \"TXT\", \"ttl\": 300, \"rrdatas\": [\"\\\"someone "
    "else's\\\"\"]},"
    "    {\"name\": \"keep.k8s.test.\", \"type\": \"A\", \"ttl\": 300, \"rrdatas\": [\"192.0.2.9\"]}]},"
    "  \"sub-k8s-test\": {\"dns_name\": \"sub.k8s.test.\"}},"
    " \"change_polls\": 2}";

static int setup(void **state) {
        gce_double_start(state);
        gce_double_post("/_double/config", zones);
        return 0;
}

static const DnsProvider *clouddns(void) {
        const DnsProvider *p = dns_provider_find("clouddns");
        assert_non_null(p);
        return p;
}

static DnsProviderState *open_zone(const char *zone) {
        ClusterSpec spec = { .dns.zone = (char *)zone };
        DnsProviderState *s = NULL;
        _cleanup_free_ char *err = NULL;
        int r = clouddns()->open(&spec, &s, &err);
        if (r < 0)
                fail_msg("open: %s", strna(err));
        return s;
}

/* Requests the double logged whose path ends with suffix (and, when not NULL, whose method is method). */
static size_t log_count(const char *method, const char *suffix) {
        json_t *log = gce_double_get("log"), *e;
        size_t i, n = 0;
        json_array_foreach(log, i, e) {
                const char *m = json_string_value(json_object_get(e, "method")),
                           *p = json_string_value(json_object_get(e, "path"));
                if (p && endswith(p, suffix) && (!method || streq_ptr(m, method)))
                        n++;
        }
        json_decref(log);
        return n;
}

/* "ttl v1,v2" of (name, type) in the double's zone, or NULL. Caller frees. */
static char *zone_record(const char *zone, const char *name, const char *type) {
        json_t *st = gce_double_get("state"), *rec;
        json_t *sets = json_object_get(json_object_get(json_object_get(st, "zones"), zone), "rrsets");
        size_t i;
        char *out = NULL;
        json_array_foreach(sets, i, rec) {
                if (!streq(json_string_value(json_object_get(rec, "name")), name) ||
                    !streq(json_string_value(json_object_get(rec, "type")), type))
                        continue;
                json_t *vals = json_object_get(rec, "rrdatas"), *v;
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
        /* owned but empty: deleted */
        assert_int_equal(dns_rrset_list_get(l, "old.c.k8s.test.", DNS_TYPE_A, ttl, &s), 0);
        dns_rrset_list_sort(l);
}

static void test_sync_converge_and_follow(void **state) {
        _cleanup_rrset_list_ DnsRRsetList desired = {}, changes = {}, again = {};
        _cleanup_free_ char *err = NULL;
        _cleanup_strv_free_ char **ids = NULL;
        DnsProviderState *s = open_zone("k8s.test");
        desired_set(&desired, 30);
        assert_int_equal(dns_sync(clouddns(), s, &desired, false, &changes, &err), 0);
        assert_int_equal(changes.n, 3); /* etcd-a A, api A, old A */
        assert_int_equal(log_count("POST", "/changes"), 1);
        assert_int_equal(log_count(NULL, "/managedZones"), 1);
        assert_int_equal(log_count(NULL, "/rrsets"), 3); /* one per owned name, not the zone */
        assert_string_or_null_free(zone_record("k8s-test", "etcd-a.internal.c.k8s.test.", "A"),
                                   "30 10.0.0.1");
        assert_string_or_null_free(zone_record("k8s-test", "api.c.k8s.test.", "A"),
                                   "30 198.51.100.1,198.51.100.2");
        assert_string_or_null_free(zone_record("k8s-test", "api.c.k8s.test.", "TXT"),
                                   "300 \"someone else's\"");
        assert_string_or_null_free(zone_record("k8s-test", "old.c.k8s.test.", "A"), NULL);
        assert_string_or_null_free(zone_record("k8s-test", "keep.k8s.test.", "A"), "300 192.0.2.9");

        /* apply did not wait for "done": the change is handed on, and asked about once per call */
        assert_int_equal(clouddns()->take_submitted(s, &ids), 0);
        assert_int_equal(strv_length(ids), 1);
        assert_true(startswith(ids[0], "k8s-test/"));
        assert_int_equal(log_count("GET", ids[0] + strlen("k8s-test")), 0);
        assert_int_equal(clouddns()->change_status(s, ids[0], &err), 0);
        assert_int_equal(clouddns()->change_status(s, ids[0], &err), 1);
        assert_int_equal(clouddns()->change_status(s, "k8s-test/987", &err), -ENOENT);
        clouddns()->close(s);

        /* converged: reads, nothing sent */
        s = open_zone("k8s.test.");
        assert_int_equal(dns_sync(clouddns(), s, &desired, false, &again, &err), 0);
        assert_int_equal(again.n, 0);
        assert_int_equal(log_count("POST", "/changes"), 1);
        clouddns()->close(s);
}

static void test_walk_up_and_split_horizon(void **state) {
        _cleanup_rrset_list_ DnsRRsetList d = {}, ch = {};
        _cleanup_free_ char *err = NULL;
        /* no dns.zone: each name's closest enclosing zone */
        DnsProviderState *s = open_zone(NULL);
        assert_int_equal(dns_rrset_list_add_address(&d, "x.sub.k8s.test.", 60, "10.0.0.9"), 0);
        assert_int_equal(dns_sync(clouddns(), s, &d, false, &ch, &err), 0);
        assert_string_or_null_free(zone_record("sub-k8s-test", "x.sub.k8s.test.", "A"), "60 10.0.0.9");
        assert_string_or_null_free(zone_record("k8s-test", "x.sub.k8s.test.", "A"), NULL);
        clouddns()->close(s);

        /* a public and a private zone of one name: which one the masters resolve through is not ours to
         * guess */
        gce_double_post("/_double/config",
                        "{\"managed_zones\": {\"k8s-test-private\": {\"dns_name\": \"k8s.test.\", "
                        "\"visibility\": \"private\"}}}");
        ClusterSpec spec = { .dns.zone = (char *)"k8s.test." };
        assert_int_equal(clouddns()->open(&spec, &s, &err), PK_ESPEC);
        assert_non_null(strstr(err, "2 Cloud DNS managed zones are named 'k8s.test.'"));
        spec.dns.zone = (char *)"nope.test.";
        assert_int_equal(clouddns()->open(&spec, &s, &err), PK_ESPEC);
        assert_non_null(strstr(err, "no Cloud DNS managed zone is named 'nope.test.' (dns.zone)"));
}

static void test_raced_change_is_sent_again(void **state) {
        _cleanup_rrset_list_ DnsRRsetList d = {}, served = {}, ch = {};
        _cleanup_free_ char *err = NULL;
        DnsProviderState *s = open_zone("k8s.test.");
        assert_int_equal(dns_rrset_list_add_address(&d, "old.c.k8s.test.", 30, "10.0.0.5"), 0);
        assert_int_equal(clouddns()->read(s, &d, &served, &err), 0);
        /* another master writes the set between this pass's read and its apply */
        gce_double_post("/_double/config",
                        "{\"managed_zones\": {\"k8s-test\": {\"dns_name\": \"k8s.test.\", \"rrsets\": ["
                        "{\"name\": \"old.c.k8s.test.\", \"type\": \"A\", \"ttl\": 30, \"rrdatas\": "
                        "[\"10.0.0.6\"]}]}}}");
        assert_int_equal(dns_rrsets_diff(&d, &served, true, &ch), 0);
        assert_int_equal(clouddns()->apply(s, &ch, &err), 0);
        assert_string_or_null_free(zone_record("k8s-test", "old.c.k8s.test.", "A"), "30 10.0.0.5");
        /* the first change was refused (its deletion no longer matched), the second went through */
        json_t *st = gce_double_get("log"), *e;
        size_t i, refused = 0, accepted = 0;
        json_array_foreach(
            st, i, e) if (endswith(json_string_value(json_object_get(e, "path")) ?: "", "/changes")) {
                json_int_t code = json_integer_value(json_object_get(e, "status"));
                refused += code == 412 || code == 409;
                accepted += code == 200;
        }
        json_decref(st);
        assert_int_equal(refused, 1);
        assert_int_equal(accepted, 1);
        clouddns()->close(s);
}

static void test_errors(void **state) {
        _cleanup_rrset_list_ DnsRRsetList d = {}, ch = {};
        _cleanup_free_ char *err = NULL;
        DnsProviderState *s = open_zone("k8s.test.");
        assert_int_equal(dns_rrset_list_add_address(&d, "api.elsewhere.example.", 30, "10.0.0.5"), 0);
        assert_int_equal(dns_sync(clouddns(), s, &d, false, &ch, &err), PK_ESPEC);
        assert_non_null(strstr(err, "'api.elsewhere.example.' is not in dns.zone 'k8s.test.'"));
        clouddns()->close(s);

        /* the rights to list record sets withheld: Google's words, the method named */
        gce_double_post("/_double/config",
                        "{\"deny\": [\"GET /dns/v1/projects/*/managedZones/*/rrsets*\"]}");
        s = open_zone("k8s.test.");
        dns_rrset_list_done(&d);
        assert_int_equal(dns_rrset_list_add_address(&d, "api.c.k8s.test.", 30, "10.0.0.5"), 0);
        assert_int_equal(dns_sync(clouddns(), s, &d, false, &ch, &err), PK_ECLOUD);
        assert_non_null(strstr(err, "dns resourceRecordSets.list: HTTP 403 PERMISSION_DENIED"));
        clouddns()->close(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_sync_converge_and_follow, setup, gce_double_stop),
                cmocka_unit_test_setup_teardown(test_walk_up_and_split_horizon, setup, gce_double_stop),
                cmocka_unit_test_setup_teardown(test_raced_change_is_sent_again, setup, gce_double_stop),
                cmocka_unit_test_setup_teardown(test_errors, setup, gce_double_stop),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
