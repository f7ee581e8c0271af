/* SPDX-License-Identifier: Apache-2.0 */
/* The desired record set (a pure function of spec and view), the diff, the hosts-file block. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "dns/dns-hosts.h"
#include "dns/dns-provider.h"
#include "dns/dns-records.h"
#include "dns/dns-wire.h"
#include "model/cluster-view.h"
#include "spec/spec.h"
#include "unit-test.h"

static EtcdClusterSpec etcd_clusters[] = { { .name = (char *)"main" }, { .name = (char *)"events" } };

static ClusterSpec make_spec(void) {
        return (ClusterSpec){
                .name = (char *)"demo.k8s.test",
                /* as cluster_spec_load leaves it: the suffix defaulted to internal.<name> */
                .dns = { .ttl = { true, 30 }, .internal_suffix = (char *)"internal.demo.k8s.test" },
                .etcd_clusters = { etcd_clusters, ELEMENTSOF(etcd_clusters) },
        };
}

static ClusterView *make_view(void) {
        ClusterView *v = new0(ClusterView, 1);
        char *m1_int[] = { (char *)"10.0.0.1", NULL }, *m1_ext[] = { (char *)"203.0.113.1", NULL };
        char *m2_int[] = { (char *)"fd00::0002", (char *)"10.0.0.10", NULL };
        assert_non_null(v);
        assert_int_equal(cluster_view_add_master(v, "m2", m2_int, NULL), 0);
        assert_int_equal(cluster_view_add_master(v, "m1", m1_int, m1_ext), 0);
        assert_int_equal(cluster_view_add_member(v, "main", "a", "m1"), 0);
        assert_int_equal(cluster_view_add_member(v, "main", "b", "m2"), 0);
        assert_int_equal(cluster_view_add_member(v, "events", "a", "m1"), 0);
        assert_int_equal(cluster_view_add_member(v, "other", "a", "m1"), 0);  /* not in the spec */
        assert_int_equal(cluster_view_add_member(v, "main", "c", "gone"), 0); /* holder unknown */
        assert_int_equal(cluster_view_add_member(v, "main", "d", NULL), 0);   /* nobody holds it */
        cluster_view_sort(v);
        return v;
}

static char *print_to_string(const DnsRRsetList *l, bool show_empty) {
        char *s = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&s, &n);
        assert_non_null(f);
        dns_rrsets_print(l, show_empty, f);
        fclose(f);
        return s;
}

static void test_desired(void **state) {
        _cleanup_(cluster_view_freep) ClusterView *v = make_view();
        _cleanup_rrset_list_ DnsRRsetList l = {};
        _cleanup_free_ char *error = NULL, *text = NULL, *all = NULL;
        ClusterSpec spec = make_spec();

        assert_int_equal(dns_desired_records(&spec, v, &l, &error), 0);
        text = print_to_string(&l, false);
        assert_string_equal(text, "api.demo.k8s.test.\t30\tIN\tA\t203.0.113.1\n"
                                  "api.internal.demo.k8s.test.\t30\tIN\tA\t10.0.0.1\n"
                                  "api.internal.demo.k8s.test.\t30\tIN\tA\t10.0.0.10\n"
                                  "api.internal.demo.k8s.test.\t30\tIN\tAAAA\tfd00::2\n"
                                  "etcd-a.internal.demo.k8s.test.\t30\tIN\tA\t10.0.0.1\n"
                                  "etcd-b.internal.demo.k8s.test.\t30\tIN\tA\t10.0.0.10\n"
                                  "etcd-b.internal.demo.k8s.test.\t30\tIN\tAAAA\tfd00::2\n"
                                  "etcd-c.internal.demo.k8s.test.\t10\tIN\tA\t203.0.113.123\n"
                                  "etcd-d.internal.demo.k8s.test.\t10\tIN\tA\t203.0.113.123\n"
                                  "etcd-events-a.internal.demo.k8s.test.\t30\tIN\tA\t10.0.0.1\n");
        /* Every owned name has both types, possibly empty: those are deleted when published. */
        all = print_to_string(&l, true);
        assert_non_null(strstr(all, "api.demo.k8s.test.\t30\tIN\tAAAA\t(none)\n"));
        assert_non_null(strstr(all, "etcd-c.internal.demo.k8s.test.\t10\tIN\tAAAA\t(none)\n"));
        assert_null(strstr(all, "etcd-other"));
        assert_int_equal(l.n, 14);

        /* Pure: the same input gives the same output, and the input order does not matter. */
        _cleanup_rrset_list_ DnsRRsetList again = {};
        assert_int_equal(dns_desired_records(&spec, v, &again, &error), 0);
        _cleanup_free_ char *text2 = print_to_string(&again, true);
        assert_string_equal(all, text2);
}

/* The records take the spec's effective values as they are: no default is derived again here. */
static void test_desired_from_spec_and_errors(void **state) {
        _cleanup_(cluster_view_freep) ClusterView *v = new0(ClusterView, 1);
        _cleanup_rrset_list_ DnsRRsetList l = {};
        _cleanup_free_ char *error = NULL;
        ClusterSpec spec = make_spec();
        char *ips[] = { (char *)"10.0.0.1", NULL }, *bad[] = { (char *)"10.0.0.300", NULL };

        spec.dns.internal_suffix = (char *)"int.example";
        assert_int_equal(cluster_view_add_master(v, "m1", ips, NULL), 0);
        assert_int_equal(cluster_view_add_member(v, "other", "x", "m1"), 0); /* not in the spec: skipped */
        assert_int_equal(cluster_view_add_member(v, "events", "x", "m1"), 0);
        assert_int_equal(dns_desired_records(&spec, v, &l, &error), 0);
        assert_non_null(dns_rrset_list_find(&l, "api.int.example.", DNS_TYPE_A));
        assert_null(dns_rrset_list_find(&l, "etcd-other-x.int.example.", DNS_TYPE_A));
        DnsRRset *s = dns_rrset_list_find(&l, "etcd-events-x.int.example.", DNS_TYPE_A);
        assert_non_null(s);
        assert_int_equal(s->ttl, 30);
        dns_rrset_list_done(&l);

        assert_int_equal(cluster_view_add_master(v, "m2", bad, NULL), 0);
        assert_int_equal(dns_desired_records(&spec, v, &l, &error), PK_EMALFORMED);
        assert_non_null(strstr(error, "'m2'"));
        assert_non_null(strstr(error, "10.0.0.300"));
        free(error);
        error = NULL;

        spec.dns.internal_suffix = (char *)"bad..suffix";
        assert_int_equal(dns_desired_records(&spec, v, &l, &error), PK_ESPEC);
        assert_non_null(strstr(error, "dns.internalSuffix 'bad..suffix'"));
        free(error);
        error = NULL;
        /* a spec that was not loaded (no defaults applied) is refused, not completed */
        spec.dns.internal_suffix = NULL;
        assert_int_equal(dns_desired_records(&spec, v, &l, &error), PK_ESPEC);
        free(error);
        error = NULL;
        spec = make_spec();
        spec.dns.ttl.set = false;
        assert_int_equal(dns_desired_records(&spec, v, &l, &error), PK_ESPEC);
        free(error);
        error = NULL;
        spec.dns.ttl = (OptInt){ true, -1 };
        assert_int_equal(dns_desired_records(&spec, v, &l, &error), PK_ESPEC);
}

/* The API's names leave out a master only: withheld, the etcd names still point at it. */
static void test_desired_except(void **state) {
        _cleanup_(cluster_view_freep) ClusterView *v = make_view();
        _cleanup_rrset_list_ DnsRRsetList l = {};
        _cleanup_free_ char *error = NULL, *text = NULL;
        ClusterSpec spec = make_spec();
        char *withheld[] = { (char *)"m2", NULL };

        assert_int_equal(dns_desired_records_except(&spec, v, withheld, &l, &error), 0);
        text = print_to_string(&l, true);
        assert_non_null(strstr(text, "api.internal.demo.k8s.test.\t30\tIN\tA\t10.0.0.1\n"));
        assert_null(strstr(text, "api.internal.demo.k8s.test.\t30\tIN\tA\t10.0.0.10\n"));
        assert_non_null(strstr(text, "api.internal.demo.k8s.test.\t30\tIN\tAAAA\t(none)\n"));
        assert_non_null(strstr(text, "etcd-b.internal.demo.k8s.test.\t30\tIN\tA\t10.0.0.10\n"));
        assert_non_null(strstr(text, "etcd-b.internal.demo.k8s.test.\t30\tIN\tAAAA\tfd00::2\n"));
        assert_int_equal(l.n, 14); /* the same names, owned as before */
}

static void test_rrsets_hold_all(void **state) {
        _cleanup_rrset_list_ DnsRRsetList served = {};
        char *one[] = { (char *)"10.0.0.1", NULL },
             *both[] = { (char *)"fd00::0002", (char *)"10.0.0.10", NULL };
        char *half[] = { (char *)"10.0.0.1", (char *)"fd00::3", NULL }, *none[] = { NULL };
        for (unsigned i = 0; i < 40; i++) { /* past the size where the list is indexed */
                _cleanup_free_ char *a = strprintf("10.0.1.%u", i);
                assert_int_equal(dns_rrset_list_add_address(&served, "api.internal.x.test.", 30, a), 0);
        }
        assert_int_equal(dns_rrset_list_add_address(&served, "api.internal.x.test.", 30, "10.0.0.1"), 0);
        assert_int_equal(dns_rrset_list_add_address(&served, "api.internal.x.test.", 30, "10.0.0.10"), 0);
        assert_int_equal(dns_rrset_list_add_address(&served, "api.internal.x.test.", 30, "fd00::2"), 0);
        assert_true(dns_rrsets_hold_all(&served, "api.internal.x.test.", one));
        assert_true(dns_rrsets_hold_all(&served, "API.Internal.X.test", both)); /* any case, no final dot */
        assert_false(dns_rrsets_hold_all(&served, "api.internal.x.test.", half));
        assert_false(dns_rrsets_hold_all(&served, "api.internal.x.test.", none));
        assert_false(dns_rrsets_hold_all(&served, "api.internal.x.test.", NULL));
        assert_false(dns_rrsets_hold_all(&served, "api.internal.y.test.", one));
}

/* The three masters of the API names' tests: a, b and d. */
static const char *const api_names[3] = { "a", "b", "d" };
static const char *const api_ips[3] = { "10.0.0.1", "10.0.0.2", "10.0.0.4" };

static ClusterView *api_view(void) {
        ClusterView *v = new0(ClusterView, 1);
        assert_non_null(v);
        for (size_t i = 0; i < 3; i++)
                assert_int_equal(
                    cluster_view_add_master(v, api_names[i], (char *[]){ (char *)api_ips[i], NULL }, NULL),
                    0);
        cluster_view_sort(v);
        return v;
}

/* api.internal as served, with the addresses of the masters listed */
static void api_served(const bool listed[3], DnsRRsetList *served) {
        for (size_t i = 0; i < 3; i++)
                if (listed[i])
                        assert_int_equal(
                            dns_rrset_list_add_address(served, "api.internal.x.test.", 30, api_ips[i]), 0);
}

/* dns_api_withheld(): who the API's names leave out, for every kind of master (docs/dns.md). Masters
 * a (10.0.0.1), b (10.0.0.2), d (10.0.0.4); "listed" says which of them api.internal serves now. */
static void test_api_withheld(void **state) {
        static const struct {
                const char *what, *listed, *self, *probed, *ready, *withheld;
                const char *out;     /* whose Node asks to be out for its pivot turn; "?": not known */
                const char *pods;    /* whose apiserver pod the API shows Ready; NULL: not read */
                const char *through; /* whose own address answered that read */
        } cases[] = {
                { "all listed: nobody", "abd", "a", "", "", "" },
                { "cold start, none listed: each master publishes itself", "", "a", "", "", "bd" },
                { "a new master waits for its apiserver while others serve", "ab", "d", "", "", "d" },
                { "... and goes in when it answers", "ab", "d", "d", "d", "" },
                { "... and when nobody else is listed", "", "d", "d", "", "ab" },
                { "another master not ready, this one serves: left out", "ab", "a", "ad", "a", "d" },
                { "another master not ready, this one does not serve either: put in", "ab", "a", "ad", "",
                  "" },
                { "another master not ready, this one not asked: put in", "ab", "a", "d", "", "" },
                { "another master ready: put in", "ab", "a", "ad", "ad", "" },
                { "another master not asked (out of time), this one serves: left out", "ab", "a", "a", "a",
                  "d" },
                { "a listed master stays, ready or not", "abd", "a", "abd", "a", "" },
                { "a master outside the view decides for nobody", "ab", "z", "dz", "z", "d" },
                { "two new masters, this one serves", "a", "a", "abd", "ab", "d" },
                { "two new masters, seen by one of them: as served", "a", "b", "bd", "", "bd" },
                { "no self known: as served", "ab", NULL, "d", "", "d" },
                /* what, listed, self, probed, ready, withheld, out */
                { "a's pivot turn: another master takes it out", "abd", "b", "", "", "a", "a" },
                { "a's pivot turn: a takes itself out", "abd", "a", "", "", "a", "a" },
                { "a's pivot turn: out, and stays out while it answers", "bd", "b", "a", "a", "a", "a" },
                { "a's pivot turn, nobody else listed: kept", "a", "a", "", "", "", "a" },
                { "a's pivot turn, nobody listed: the cold start's rule", "", "b", "", "", "ad", "a" },
                { "turns not known: nobody goes in", "ab", "a", "ad", "ad", "d", "?" },
                { "turns not known, listed ones stay", "abd", "a", "", "", "", "?" },
                { "turns not known, nobody listed: the cold start's rule", "", "a", "", "", "bd", "?" },
                /* what, listed, self, probed, ready, withheld, out, pods, through */
                { "the cold start's tail: a listed master without a Ready apiserver pod leaves", "abd", "a",
                  "", "", "d", NULL, "ab", "a" },
                { "... and takes itself out alike", "abd", "d", "", "", "d", NULL, "ab", "b" },
                { "... not when the one that vouches was not heard from (its Ready can be stale)", "abd",
                  "a", "", "", "", NULL, "ab", "d" },
                { "... nor when the pods were read through the API's name", "abd", "a", "", "", "", NULL,
                  "ab", "" },
                { "... a master that answered /readyz vouches too", "abd", "a", "ad", "a", "d", NULL, "ab",
                  "b" },
                { "the one heard from has no Ready pod itself: nobody leaves", "abd", "a", "", "", "", NULL,
                  "bd", "a" },
                { "only an unlisted master's pod Ready: as before", "ab", "a", "ad", "ad", "", NULL, "d",
                  "a" },
                { "an unlisted master that answers goes in with its pod Ready", "ab", "a", "ad", "ad", "",
                  NULL, "abd", "a" },
                { "... not before", "ab", "a", "ad", "ad", "d", NULL, "ab", "a" },
                { "... nor by its own pass (it reads through a listed master first)", "ab", "d", "d", "d",
                  "d", NULL, "ab", "a" },
                { "... which it cannot reach: in (the listed ones take it out again)", "ab", "d", "d", "d",
                  "", NULL, "ab", "d" },
                { "every pod Ready: nobody", "abd", "b", "", "", "", NULL, "abd", "b" },
                { "the one that vouches is out for its turn: the others stay", "abd", "b", "", "", "a", "a",
                  "a", "a" },
                { "one that vouches is enough, and stays", "ab", "b", "", "", "bd", NULL, "a", "a" },
        };
        _cleanup_(cluster_view_freep) ClusterView *v = api_view();
        for (size_t c = 0; c < ELEMENTSOF(cases); c++) {
                _cleanup_rrset_list_ DnsRRsetList served = {};
                _cleanup_strv_free_ char **probed = NULL, **ready = NULL, **got = NULL;
                bool listed[3];
                for (size_t i = 0; i < 3; i++)
                        listed[i] = strchr(cases[c].listed, api_names[i][0]);
                api_served(listed, &served);
                /* another name's records say nothing about the API's */
                assert_int_equal(
                    dns_rrset_list_add_address(&served, "etcd-d.internal.x.test.", 30, "10.0.0.4"), 0);
                for (const char *p = cases[c].probed; *p; p++)
                        assert_int_equal(strv_extend(&probed, (char[]){ *p, 0 }), 0);
                for (const char *p = cases[c].ready; *p; p++)
                        assert_int_equal(strv_extend(&ready, (char[]){ *p, 0 }), 0);
                _cleanup_strv_free_ char **out = NULL;
                bool unknown = cases[c].out && streq(cases[c].out, "?");
                for (const char *p = unknown ? "" : strempty(cases[c].out); *p; p++)
                        assert_int_equal(strv_extend(&out, (char[]){ *p, 0 }), 0);
                _cleanup_strv_free_ char **pods = NULL;
                for (const char *p = strempty(cases[c].pods); *p; p++)
                        assert_int_equal(strv_extend(&pods, (char[]){ *p, 0 }), 0);
                DnsApiReadiness r = { .probed = probed,
                                      .ready = ready,
                                      .out = out,
                                      .out_unknown = unknown,
                                      .pods_read = cases[c].pods != NULL,
                                      .pods_ready = pods,
                                      .pods_through = (char *)cases[c].through };
                assert_int_equal(
                    dns_api_withheld(v, &served, "api.internal.x.test", cases[c].self, &r, &got), 0);
                _cleanup_free_ char *joined = strv_join(got, "");
                if (!streq(strempty(joined), cases[c].withheld))
                        fail_msg("%s: withheld '%s', wanted '%s'", cases[c].what, strempty(joined),
                                 cases[c].withheld);
                /* without a readiness (no client of our own): nobody */
                strv_free(got);
                got = NULL;
                assert_int_equal(
                    dns_api_withheld(v, &served, "api.internal.x.test", cases[c].self, NULL, &got), 0);
                assert_null(got);
        }
}

/* The masters' DNS passes played out round by round on a shared api.internal, as step-api-names.c feeds the
 * rule: the unlisted masters (and the master itself, when another is unlisted) probed; the apiserver pods
 * read through the listed masters' own addresses (this one's first), then those that just answered; each
 * pass writes every master but those it leaves out. serves[i]/pod[i]: the round from which master i's
 * apiserver answers / the API shows its pod Ready (0: from the start; -1: never); pod_stale_until[i]: before
 * that round the API still shows the Ready of before a power cut. */
typedef struct ApiWorld {
        int serves[3], pod[3], pod_stale_until[3];
        bool listed[3];
} ApiWorld;

static size_t api_index(const char *name) {
        for (size_t i = 0; i < 3; i++)
                if (streq(api_names[i], name))
                        return i;
        fail_msg("no master %s", name);
        return 0;
}

static bool at(int since, int round) {
        return since >= 0 && round >= since;
}

/* One pass of master self at round: into ret_listed, whom its write puts in the names. */
static void api_pass(const ApiWorld *w, ClusterView *v, size_t self, int round, bool ret_listed[3]) {
        const char *const *names = api_names;
        _cleanup_rrset_list_ DnsRRsetList served = {};
        _cleanup_strv_free_ char **probed = NULL, **ready = NULL, **pods = NULL, **through = NULL,
                                 **got = NULL;
        bool any_unlisted_other = false;
        api_served(w->listed, &served);
        for (size_t i = 0; i < 3; i++)
                any_unlisted_other |= i != self && !w->listed[i];
        for (size_t i = 0; i < 3; i++)
                if (!w->listed[i] || (i == self && any_unlisted_other)) {
                        assert_int_equal(strv_extend(&probed, names[i]), 0);
                        if (at(w->serves[i], round))
                                assert_int_equal(strv_extend(&ready, names[i]), 0);
                }
        if (w->listed[self])
                assert_int_equal(strv_extend(&through, names[self]), 0);
        for (size_t i = 0; i < 3; i++)
                if (w->listed[i] && i != self)
                        assert_int_equal(strv_extend(&through, names[i]), 0);
        STRV_FOREACH (n, ready)
                if (!strv_contains(through, *n))
                        assert_int_equal(strv_extend(&through, *n), 0);
        const char *answered = NULL;
        for (char **t = through; t && *t && !answered; t++)
                if (at(w->serves[api_index(*t)], round))
                        answered = *t;
        for (size_t i = 0; answered && i < 3; i++)
                if (round < w->pod_stale_until[i] || at(w->pod[i], round))
                        assert_int_equal(strv_extend(&pods, names[i]), 0);
        DnsApiReadiness r = { .probed = probed,
                              .ready = ready,
                              .pods_read = answered,
                              .pods_ready = pods,
                              .pods_through = (char *)answered };
        assert_int_equal(dns_api_withheld(v, &served, "api.internal.x.test", names[self], &r, &got), 0);
        for (size_t i = 0; i < 3; i++)
                ret_listed[i] = !strv_contains(got, names[i]);
}

/* Plays w out from round from to round to (excluded); returns how many writes changed the names. Checks
 * every write: never empty, and never without a master that serves when one serves and is listed before the
 * write. */
static unsigned api_play(ApiWorld *w, int from, int to) {
        const char *const *names = api_names;
        _cleanup_(cluster_view_freep) ClusterView *v = api_view();
        unsigned changes = 0;
        for (int round = from; round < to; round++)
                for (size_t self = 0; self < 3; self++) {
                        bool next[3], any = false, serving_before = false, serving_after = false;
                        api_pass(w, v, self, round, next);
                        for (size_t i = 0; i < 3; i++) {
                                any |= next[i];
                                serving_before |= w->listed[i] && at(w->serves[i], round);
                                serving_after |= next[i] && at(w->serves[i], round);
                                changes += next[i] != w->listed[i];
                        }
                        if (!any)
                                fail_msg("round %d, %s's pass empties the names", round, names[self]);
                        if (serving_before && !serving_after)
                                fail_msg("round %d, %s's pass leaves out every master that serves", round,
                                         names[self]);
                        memcpy(w->listed, next, sizeof(next));
                }
        return changes;
}

static void test_api_names_played_out(void **state) {
        /* A cold start: nobody listed; a serves at round 3 (its kubelet reports its pod at 5), b at 4 (6),
         * d's kubelet is late: it serves at 12, its pod at 15. d goes in at the cold start (nobody serves),
         * out once a serving master's pod is Ready, back in once its own is. */
        ApiWorld cold = { .serves = { 3, 4, 12 }, .pod = { 5, 6, 15 } };
        api_play(&cold, 0, 3);
        assert_true(cold.listed[0] && cold.listed[1] && cold.listed[2]);
        unsigned changes = api_play(&cold, 3, 8);
        assert_true(cold.listed[0] && cold.listed[1] && !cold.listed[2]);
        /* d out; b (serving since 4) out until the round its pod is Ready, then in: the masters agree,
         * nothing goes back and forth */
        assert_int_equal(changes, 3);
        changes = api_play(&cold, 8, 15);
        assert_false(cold.listed[2]);
        assert_int_equal(changes, 0);
        changes = api_play(&cold, 15, 30);
        assert_true(cold.listed[0] && cold.listed[1] && cold.listed[2]);
        assert_int_equal(changes, 1);
        /* A power cut: every master listed, the API shows the Ready of before the cut until each kubelet
         * reports (a at 2, b at 4, d at 10); a serves at 3 and its pod is Ready at 5, b at 8/9, d at 12/13.
         * A stale Ready never vouches: a, the first to serve, is never taken out; b leaves once a vouches,
         * d once its stale Ready ends, and both come back. */
        ApiWorld cut = { .serves = { 3, 8, 12 },
                         .pod = { 5, 9, 13 },
                         .pod_stale_until = { 2, 4, 10 },
                         .listed = { true, true, true } };
        for (int round = 0; round < 30; round++) {
                api_play(&cut, round, round + 1);
                assert_true(cut.listed[0]);
                if (round == 6)
                        assert_true(!cut.listed[1] && cut.listed[2]); /* d's Ready is stale still */
                if (round == 11)
                        assert_true(cut.listed[1] && !cut.listed[2]);
        }
        assert_true(cut.listed[1] && cut.listed[2]);
}

static void test_diff(void **state) {
        _cleanup_rrset_list_ DnsRRsetList desired = {}, current = {}, changes = {};
        assert_int_equal(dns_rrset_list_add_address(&desired, "a.test", 60, "10.0.0.1"), 0);
        assert_int_equal(dns_rrset_list_add_address(&desired, "a.test", 60, "10.0.0.2"), 0);
        assert_int_equal(dns_rrset_list_get(&desired, "a.test", DNS_TYPE_AAAA, 60, NULL), 0);
        assert_int_equal(dns_rrset_list_add_address(&desired, "b.test", 60, "10.0.0.3"), 0);
        assert_int_equal(dns_rrset_list_get(&desired, "c.test", DNS_TYPE_A, 60, NULL), 0);
        dns_rrset_list_sort(&desired);

        /* Current: a.test same addresses in another order; b.test other TTL; c.test has a stale record. */
        assert_int_equal(dns_rrset_list_add_address(&current, "A.TEST.", 60, "10.0.0.2"), 0);
        assert_int_equal(dns_rrset_list_add_address(&current, "a.test", 60, "10.0.0.1"), 0);
        assert_int_equal(dns_rrset_list_add_address(&current, "b.test", 300, "10.0.0.3"), 0);
        assert_int_equal(dns_rrset_list_add_address(&current, "c.test", 60, "10.9.9.9"), 0);
        assert_int_equal(dns_rrsets_diff(&desired, &current, true, &changes), 0);
        assert_int_equal(changes.n, 2);
        assert_string_equal(changes.items[0].name, "b.test.");
        assert_string_equal(changes.items[1].name, "c.test.");
        assert_int_equal(dns_rrset_size(&changes.items[1]), 0);
        dns_rrset_list_done(&changes);
        /* A provider without TTLs sees only c.test. */
        assert_int_equal(dns_rrsets_diff(&desired, &current, false, &changes), 0);
        assert_int_equal(changes.n, 1);
        dns_rrset_list_done(&changes);
        /* Converged: nothing. */
        assert_int_equal(dns_rrsets_diff(&desired, &desired, true, &changes), 0);
        assert_int_equal(changes.n, 0);
}

static void test_address_order(void **state) {
        _cleanup_rrset_list_ DnsRRsetList l = {};
        assert_int_equal(dns_rrset_list_add_address(&l, "x", 1, "10.0.0.9"), 0);
        assert_int_equal(dns_rrset_list_add_address(&l, "x", 1, "10.0.0.10"), 0);
        assert_int_equal(dns_rrset_list_add_address(&l, "x", 1, "9.0.0.1"), 0);
        assert_int_equal(dns_rrset_list_add_address(&l, "x", 1, "10.0.0.9"), 0);
        assert_int_equal(dns_rrset_list_add_address(&l, "x", 1, "not-an-ip"), PK_EMALFORMED);
        DnsRRset *s = dns_rrset_list_find(&l, "x.", DNS_TYPE_A);
        assert_int_equal(dns_rrset_size(s), 3);
        assert_string_equal(s->addresses[0], "9.0.0.1");
        assert_string_equal(s->addresses[1], "10.0.0.9");
        assert_string_equal(s->addresses[2], "10.0.0.10");
}

static const char FOREIGN_HEAD[] =
    "127.0.0.1\tlocalhost\n# keep   this   spacing\n::1 localhost ip6-localhost";
static const char FOREIGN_TAIL[] = "192.0.2.7 tail.example\n";

static void test_hosts_roundtrip(void **state) {
        _cleanup_(hosts_file_done) HostsFile h = {}, h2 = {};
        _cleanup_rrset_list_ DnsRRsetList entries = {};
        _cleanup_free_ char *error = NULL, *block = NULL, *text = NULL, *text2 = NULL, *block2 = NULL;
        size_t block_len, len, len2, block2_len;

        assert_int_equal(hosts_file_parse(FOREIGN_HEAD, strlen(FOREIGN_HEAD), &h, &error), 0);
        assert_int_equal(h.block_len, 0);
        assert_int_equal(dns_rrset_list_add_address(&entries, "etcd-b.internal.c", 0, "10.0.0.2"), 0);
        assert_int_equal(dns_rrset_list_add_address(&entries, "api.internal.c", 0, "10.0.0.2"), 0);
        assert_int_equal(dns_rrset_list_add_address(&entries, "api.internal.c", 0, "10.0.0.1"), 0);
        assert_int_equal(dns_rrset_list_add_address(&entries, "api.internal.c", 0, "fd00::1"), 0);
        assert_int_equal(hosts_block_render(&entries, &block, &block_len), 0);
        assert_string_equal(block, HOSTS_BEGIN_MARKER "\n"
                                                      "10.0.0.1\tapi.internal.c\n"
                                                      "10.0.0.2\tapi.internal.c etcd-b.internal.c\n"
                                                      "fd00::1\tapi.internal.c\n" HOSTS_END_MARKER "\n");
        assert_int_equal(hosts_file_render(&h, block, block_len, &text, &len), 0);
        /* The foreign text is a byte-exact prefix; a newline was added since its last line had none. */
        assert_memory_equal(text, FOREIGN_HEAD, strlen(FOREIGN_HEAD));
        assert_int_equal(text[strlen(FOREIGN_HEAD)], '\n');

        /* Add foreign text after the block; parse again: the block reads back, both sides are kept. */
        _cleanup_free_ char *full = strjoin(text, FOREIGN_TAIL);
        assert_int_equal(hosts_file_parse(full, strlen(full), &h2, &error), 0);
        assert_int_equal(h2.after_len, strlen(FOREIGN_TAIL));
        assert_int_equal(h2.n_invalid, 0);
        assert_int_equal(hosts_block_render(&h2.entries, &block2, &block2_len), 0);
        assert_string_equal(block2, block);
        assert_int_equal(h2.block_len, block_len);
        assert_int_equal(hosts_file_render(&h2, block2, block2_len, &text2, &len2), 0);
        assert_string_equal(text2, full);
}

static void test_hosts_malformed(void **state) {
        static const char *const bad[] = {
                HOSTS_BEGIN_MARKER "\n1.2.3.4 a\n",
                HOSTS_END_MARKER "\n",
                HOSTS_BEGIN_MARKER "\n" HOSTS_BEGIN_MARKER "\n" HOSTS_END_MARKER "\n",
                HOSTS_BEGIN_MARKER "\n" HOSTS_END_MARKER "\n" HOSTS_BEGIN_MARKER "\n" HOSTS_END_MARKER "\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_(hosts_file_done) HostsFile h = {};
                _cleanup_free_ char *error = NULL;
                assert_int_equal(hosts_file_parse(bad[i], strlen(bad[i]), &h, &error), PK_EMALFORMED);
                assert_non_null(error);
        }
        /* Junk inside our block is counted (and dropped by the next rewrite), not fatal. */
        const char *junk = HOSTS_BEGIN_MARKER "  \r\nnot-an-ip x\n10.0.0.1\n# c\n\n10.0.0.1 ok.test # "
                                              "c\n10.0.0.2 bad..name\n" HOSTS_END_MARKER;
        _cleanup_(hosts_file_done) HostsFile h = {};
        _cleanup_free_ char *error = NULL;
        assert_int_equal(hosts_file_parse(junk, strlen(junk), &h, &error), 0);
        assert_int_equal(h.n_invalid, 3);
        assert_int_equal(h.entries.n, 1);
        assert_string_equal(h.entries.items[0].name, "ok.test.");
        assert_int_equal(h.after_len, 0);
}

/* The hosts provider through its interface: sync, re-sync without a write, change, ownership. */
static void test_hosts_provider(void **state) {
        char path[] = "/tmp/test-dns-hosts-XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        close(fd);
        static const char text[] = "127.0.0.1 localhost\n";
        FILE *f = fopen(path, "we");
        fputs(text, f);
        fclose(f);

        ClusterSpec spec = make_spec();
        spec.dns.hosts.file = path;
        _cleanup_(cluster_view_freep) ClusterView *v = make_view();
        _cleanup_rrset_list_ DnsRRsetList desired = {}, changes = {};
        _cleanup_free_ char *error = NULL;
        DnsProviderState *s = NULL;
        const DnsProvider *p = dns_provider_find("hosts");

        assert_non_null(p);
        assert_null(dns_provider_find("none"));
        assert_int_equal(dns_desired_records(&spec, v, &desired, &error), 0);
        assert_int_equal(p->open(&spec, &s, &error), 0);
        assert_int_equal(dns_sync(p, s, &desired, false, &changes, &error), 0);
        assert_int_equal(changes.n, 9);
        dns_rrset_list_done(&changes);
        assert_int_equal(dns_sync(p, s, &desired, false, &changes, &error), 0);
        assert_int_equal(changes.n, 0);
        p->close(s);

        _cleanup_free_ char *after = NULL;
        size_t len;
        assert_int_equal(read_full_file(path, 1 << 20, &after, &len), 0);
        assert_memory_equal(after, text, strlen(text));
        assert_non_null(
            strstr(after, "10.0.0.10\tapi.internal.demo.k8s.test etcd-b.internal.demo.k8s.test\n"));
        unlink(path);
}

/* A worker's records: api.<internalSuffix> alone, each RRset exactly as the masters' desired set has it
 * (name, TTL, addresses); without a view, the two empty RRsets to read. */
static void test_api_internal_records(void **state) {
        ClusterSpec spec = make_spec();
        _cleanup_(cluster_view_freep) ClusterView *v = make_view();
        _cleanup_rrset_list_ DnsRRsetList api = {}, desired = {}, names = {};
        _cleanup_free_ char *error = NULL;
        static const char *const name = "api.internal.demo.k8s.test.";

        assert_int_equal(dns_api_internal_records(&spec, v, &api, &error), 0);
        assert_int_equal(dns_desired_records(&spec, v, &desired, &error), 0);
        assert_int_equal(api.n, 2);
        for (size_t i = 0; i < api.n; i++) {
                assert_string_equal(api.items[i].name, name);
                const DnsRRset *d = dns_rrset_list_find(&desired, name, api.items[i].type);
                assert_non_null(d);
                assert_true(dns_rrset_equal(&api.items[i], d, true));
        }
        assert_int_equal(dns_rrset_size(dns_rrset_list_find(&api, name, DNS_TYPE_A)), 2);
        assert_int_equal(dns_rrset_size(dns_rrset_list_find(&api, name, DNS_TYPE_AAAA)), 1);

        assert_int_equal(dns_api_internal_records(&spec, NULL, &names, &error), 0);
        assert_int_equal(names.n, 2);
        assert_int_equal(dns_rrset_size(&names.items[0]) + dns_rrset_size(&names.items[1]), 0);

        spec.dns.internal_suffix = (char *)"bad..suffix";
        dns_rrset_list_done(&names);
        assert_int_equal(dns_api_internal_records(&spec, v, &names, &error), PK_ESPEC);
        assert_string_equal(error, "dns.internalSuffix 'bad..suffix' gives no valid DNS name");
}

/* The hosts file a master wrote (its whole desired set), then a worker's change of api.internal alone:
 * the block's other records and every line outside the block stay as they were. */
static void test_hosts_worker_changes_only_api_internal(void **state) {
        char path[] = "/tmp/test-dns-hosts-XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        close(fd);
        static const char head[] = "127.0.0.1 localhost\n# the operator's\n",
                          tail[] = "192.0.2.7 tail.example\n";
        ClusterSpec spec = make_spec();
        spec.dns.hosts.file = path;
        _cleanup_(cluster_view_freep) ClusterView *v = make_view(), *only_m1 = new0(ClusterView, 1);
        _cleanup_rrset_list_ DnsRRsetList desired = {}, api = {}, changes = {};
        _cleanup_free_ char *error = NULL, *before = NULL, *after = NULL;
        char *m1_int[] = { (char *)"10.0.0.1", NULL };
        DnsProviderState *s = NULL;
        const DnsProvider *p = dns_provider_find("hosts");
        size_t len;

        FILE *f = fopen(path, "we");
        assert_non_null(f);
        fputs(head, f);
        fclose(f);
        assert_int_equal(dns_desired_records(&spec, v, &desired, &error), 0);
        assert_int_equal(p->open(&spec, &s, &error), 0);
        assert_int_equal(dns_sync(p, s, &desired, false, &changes, &error), 0);
        f = fopen(path, "ae");
        assert_non_null(f);
        fputs(tail, f);
        fclose(f);
        assert_int_equal(read_full_file(path, 1 << 20, &before, &len), 0);

        assert_non_null(only_m1);
        assert_int_equal(cluster_view_add_master(only_m1, "m1", m1_int, NULL), 0);
        assert_int_equal(dns_api_internal_records(&spec, only_m1, &api, &error), 0);
        dns_rrset_list_done(&changes);
        assert_int_equal(dns_sync(p, s, &api, false, &changes, &error), 0);
        assert_int_equal(changes.n, 2); /* m2's IPv4 and IPv6 addresses leave the name */
        p->close(s);
        assert_int_equal(read_full_file(path, 1 << 20, &after, &len), 0);
        unlink(path);

        assert_memory_equal(after, head, strlen(head));
        assert_true(len > strlen(tail));
        assert_string_equal(after + len - strlen(tail), tail);
        /* the masters' other names keep m2's addresses: only the API's internal name lost them */
        assert_non_null(
            strstr(before, "10.0.0.10\tapi.internal.demo.k8s.test etcd-b.internal.demo.k8s.test\n"));
        assert_non_null(strstr(after, "10.0.0.10\tetcd-b.internal.demo.k8s.test\n"));
        assert_non_null(strstr(after, "fd00::2\tetcd-b.internal.demo.k8s.test\n"));
        assert_non_null(strstr(after, "10.0.0.1\tapi.internal.demo.k8s.test"));
        assert_null(strstr(after, "fd00::2\tapi.internal"));
}

/* Large lists go through the hash index: every entry is found, before and after a sort (which moves
 * them), and entries appended after the sort too. */
static void test_large_list_index(void **state) {
        _cleanup_rrset_list_ DnsRRsetList l = {};
        char name[64];
        for (unsigned i = 0; i < 500; i++) {
                snprintf(name, sizeof(name), "etcd-x%03u.internal.demo.k8s.test", 499 - i);
                assert_int_equal(dns_rrset_list_get(&l, name, DNS_TYPE_A, 60, NULL), 0);
                assert_int_equal(dns_rrset_list_get(&l, name, DNS_TYPE_AAAA, 60, NULL), 0);
        }
        assert_int_equal(l.n, 1000);
        for (int pass = 0; pass < 2; pass++) {
                for (unsigned i = 0; i < 500; i++) {
                        snprintf(name, sizeof(name), "etcd-x%03u.internal.demo.k8s.test.", i);
                        DnsRRset *a = dns_rrset_list_find(&l, name, DNS_TYPE_A);
                        assert_non_null(a);
                        assert_string_equal(a->name, name);
                        assert_int_equal(a->type, DNS_TYPE_A);
                        assert_non_null(dns_rrset_list_find(&l, name, DNS_TYPE_AAAA));
                }
                assert_null(dns_rrset_list_find(&l, "etcd-x500.internal.demo.k8s.test.", DNS_TYPE_A));
                dns_rrset_list_sort(&l);
                assert_string_equal(l.items[0].name, "etcd-x000.internal.demo.k8s.test.");
        }
        /* getting an existing one adds nothing; a new one after the sort is found */
        assert_int_equal(dns_rrset_list_get(&l, "etcd-x007.internal.demo.k8s.test", DNS_TYPE_A, 60, NULL),
                         0);
        assert_int_equal(l.n, 1000);
        assert_int_equal(dns_rrset_list_add_address(&l, "new.k8s.test", 60, "198.18.42.1"), 0);
        assert_int_equal(l.n, 1001);
        DnsRRset *n = dns_rrset_list_find(&l, "new.k8s.test.", DNS_TYPE_A);
        assert_non_null(n);
        assert_string_equal(n->addresses[0], "198.18.42.1");
}

/* A thousand addresses in a scrambled order, each added twice: the RRset holds each once, in address order
 * (numeric, not textual: 10.0.9.0 before 10.0.10.0). */
static void test_rrset_many_addresses(void **state) {
        DnsRRset s = { .type = DNS_TYPE_A };
        char a[64];
        for (unsigned k = 0; k < 2000; k++) {
                unsigned i = (k * 7919) % 1000; /* 7919 is prime: a permutation of 0..999, twice */
                snprintf(a, sizeof(a), "10.%u.%u.%u", i / 250, (i % 250) / 10, i % 10);
                assert_int_equal(dns_rrset_add_address(&s, a), 0);
        }
        assert_int_equal(dns_rrset_add_address(&s, "fd00::1"), -EINVAL);
        assert_int_equal(dns_rrset_size(&s), 1000);
        for (unsigned i = 0; i < 1000; i++) {
                snprintf(a, sizeof(a), "10.%u.%u.%u", i / 250, (i % 250) / 10, i % 10);
                assert_string_equal(s.addresses[i], a);
        }
        assert_null(s.addresses[1000]);
        strv_free(s.addresses);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_desired),
                cmocka_unit_test(test_rrset_many_addresses),
                cmocka_unit_test(test_desired_from_spec_and_errors),
                cmocka_unit_test(test_diff),
                cmocka_unit_test(test_address_order),
                cmocka_unit_test(test_hosts_roundtrip),
                cmocka_unit_test(test_hosts_malformed),
                cmocka_unit_test(test_hosts_provider),
                cmocka_unit_test(test_api_internal_records),
                cmocka_unit_test(test_hosts_worker_changes_only_api_internal),
                cmocka_unit_test(test_large_list_index),
                cmocka_unit_test(test_desired_except),
                cmocka_unit_test(test_rrsets_hold_all),
                cmocka_unit_test(test_api_withheld),
                cmocka_unit_test(test_api_names_played_out),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
