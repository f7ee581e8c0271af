/* SPDX-License-Identifier: Apache-2.0 */
/* A worker's view of the API, its step alone (daemon/step-api-view.c): the plan hook, pure over a Pass built
 * from a spec text and observations built by hand, and what `protokube plan` prints of it. The whole
 * worker's plan is in test-pass-plan.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "daemon/pass-types.h"
#include "daemon/step-api-view.h"
#include "dns/dns-wire.h"
#include "model/cluster-view.h"
#include "pass-step-test.h"
#include "unit-test.h"

#define API_INT "api.internal.demo.k8s.test."

static const char hosts_spec[] = "apiVersion: protokube/v1alpha1\n"
                                 "kind: Cluster\n"
                                 "metadata:\n"
                                 "  name: demo.k8s.test\n"
                                 "spec:\n"
                                 "  cloud: local\n"
                                 "  dns:\n"
                                 "    provider: hosts\n"
                                 "    hosts:\n"
                                 "      file: /nonexistent/protokube-test/hosts\n"
                                 "  etcdClusters:\n"
                                 "    - name: main\n"
                                 "      image: registry.k8s.io/etcd:3.5.16-0\n"
                                 "  kubernetesVersion: 1.31.2\n";

static const char route53_spec[] = "apiVersion: protokube/v1alpha1\n"
                                   "kind: Cluster\n"
                                   "metadata:\n"
                                   "  name: demo.k8s.test\n"
                                   "spec:\n"
                                   "  cloud: local\n"
                                   "  dns:\n"
                                   "    provider: route53\n"
                                   "    zone: k8s.test.\n"
                                   "    ttl: 30\n"
                                   "  etcdClusters:\n"
                                   "    - name: main\n"
                                   "      image: registry.k8s.io/etcd:3.5.16-0\n"
                                   "  kubernetesVersion: 1.31.2\n";

static const NodeSettings worker_node = { .role = NODE_ROLE_WORKER, .node_name = "w1" };

/* main's member (a, b, c) on a volume held by node (NULL: free) with its internal addresses ips (a
 * comma-separated list, NULL: none). */
static void add_main_volume(VolumeList *l, char member, const char *node, const char *ips) {
        _cleanup_free_ char *id = strprintf("vol-main-%c", member), *value = strprintf("%c/a,b,c", member);
        _cleanup_strv_free_ char **tags = strv_new(NULL), **internal = NULL;
        Volume v = { .id = id, .zone = (char *)"z1", .tags = tags, .content = VOLUME_CONTENT_UNKNOWN };
        assert_true(id && value && tags);
        assert_int_equal(strv_split(strempty(ips), ",", &internal), 0);
        assert_int_equal(volume_set_tag(&v, "KubernetesCluster", "demo.k8s.test"), 0);
        assert_int_equal(volume_set_tag(&v, "k8s.io/role/master", "1"), 0);
        assert_int_equal(volume_set_tag(&v, "k8s.io/etcd/main", value), 0);
        tags = v.tags;
        if (node)
                v.attachment = (VolumeAttachment){ .node = (char *)node, .internal_ips = internal };
        assert_int_equal(volume_list_append(l, &v), 0);
}

/* The observation a worker's step makes: the listing, DNS read (served: the API's internal name's
 * addresses, NULL: none). */
static void observe(const Pass *p, PassObservation *o, const char *served) {
        _cleanup_strv_free_ char **addresses = NULL;
        o->dns_enabled = true;
        o->dns_tracks_ttl = p->spec->dns.provider.value != DNS_PROVIDER_HOSTS;
        o->in = (VolumesInput){ .cluster = p->spec->name,
                                .etcd_clusters = p->etcd_clusters,
                                .volumes = o->volumes.volumes.items,
                                .n_volumes = o->volumes.volumes.n };
        assert_int_equal(strv_split(strempty(served), ",", &addresses), 0);
        STRV_FOREACH (a, addresses)
                assert_int_equal(dns_rrset_list_add_address(&o->dns_served, API_INT, 60, *a), 0);
}

static void plan_step(const Pass *p, const PassObservation *o, PassPlan *plan) {
        *plan = (PassPlan){ .in = o->in };
        assert_int_equal(pass_step_api_view.plan(p, o, plan), 0);
}

static void assert_rrset(const DnsRRsetList *l, uint16_t type, const char *want) {
        static char *const none[] = { NULL };
        const DnsRRset *s = dns_rrset_list_find(l, API_INT, type);
        _cleanup_free_ char *got = s ? strv_join(s->addresses ?: none, ",") : strdup("(none)");
        assert_non_null(got);
        if (!streq(got, want))
                fail_msg("%s %s\n got: %s\nwant: %s", API_INT, type == DNS_TYPE_A ? "A" : "AAAA", got, want);
}

/* Masters with IPv4 and IPv6 addresses: both RRsets of the one name, nothing else; the hosts file gets them;
 * `plan` names each replacement. */
static void test_hosts_both_families(void **state) {
        _cleanup_(pass_freep) Pass *p = pass_test_new(hosts_spec, &worker_node);
        PassObservation o = {};
        PassPlan plan;
        add_main_volume(&o.volumes.volumes, 'a', "n1", "10.0.0.1,fd00::1");
        add_main_volume(&o.volumes.volumes, 'b', "n2", "10.0.0.2");
        add_main_volume(&o.volumes.volumes, 'c', NULL, NULL);
        observe(p, &o, NULL);
        plan_step(p, &o, &plan);
        assert_int_equal(plan.dns_status, 0);
        assert_int_equal(plan.view->n_masters, 2);
        assert_int_equal(plan.dns_desired.n, 2);
        assert_rrset(&plan.dns_desired, DNS_TYPE_A, "10.0.0.1,10.0.0.2");
        assert_rrset(&plan.dns_desired, DNS_TYPE_AAAA, "fd00::1");
        assert_int_equal(plan.dns_changes.n, 2);
        assert_true(plan.dns_send);
        assert_false(plan.api_view_check);
        int r;
        _cleanup_free_ char *text = pass_test_print(&pass_step_api_view, p, &o, &plan, &r);
        assert_int_equal(r, 0);
        assert_contains(text, "api-view-replace " API_INT " A 10.0.0.1,10.0.0.2\n");
        assert_contains(text, "api-view-replace " API_INT " AAAA fd00::1\n");
        pass_plan_done(&plan);
        pass_observation_done(&o);
}

/* The hosts file keeps no TTL: a file that names the masters is current, whatever the spec's TTL; an
 * interrupted rewrite still makes the plan write (the provider repairs it). */
static void test_hosts_current_and_repair(void **state) {
        _cleanup_(pass_freep) Pass *p = pass_test_new(hosts_spec, &worker_node);
        PassObservation o = {};
        PassPlan plan;
        add_main_volume(&o.volumes.volumes, 'a', "n1", "10.0.0.1");
        observe(p, &o, "10.0.0.1");
        plan_step(p, &o, &plan);
        assert_int_equal(plan.dns_status, 0);
        assert_int_equal(plan.dns_changes.n, 0);
        assert_false(plan.dns_send);
        int r;
        _cleanup_free_ char *text = pass_test_print(&pass_step_api_view, p, &o, &plan, &r);
        assert_string_equal(text, "api-view: the hosts file names 10.0.0.1 for " API_INT "\n");
        pass_plan_done(&plan);

        o.dns_repair = true;
        plan_step(p, &o, &plan);
        assert_int_equal(plan.dns_changes.n, 0);
        assert_true(plan.dns_send);
        pass_plan_done(&plan);
        pass_observation_done(&o);
}

/* route53 is the masters' to write: the step compares, TTL aside, and never sends. */
static void test_route53_compares(void **state) {
        _cleanup_(pass_freep) Pass *p = pass_test_new(route53_spec, &worker_node);
        PassObservation o = {};
        PassPlan plan;
        add_main_volume(&o.volumes.volumes, 'a', "n1", "10.0.0.1");
        add_main_volume(&o.volumes.volumes, 'b', "n2", "10.0.0.2");
        observe(p, &o, "10.0.0.2,10.0.0.1"); /* served with TTL 60, the spec says 30 */
        plan_step(p, &o, &plan);
        assert_int_equal(plan.dns_status, 0);
        assert_true(plan.api_view_check);
        assert_true(plan.api_view_answers);
        assert_int_equal(plan.dns_changes.n, 0);
        assert_false(plan.dns_send);
        int r;
        _cleanup_free_ char *answers = pass_test_print(&pass_step_api_view, p, &o, &plan, &r);
        assert_string_equal(answers, "api-view: " API_INT
                                     " answers with the masters' internal addresses 10.0.0.1,10.0.0.2\n");
        pass_plan_done(&plan);
        pass_observation_done(&o);

        o = (PassObservation){};
        add_main_volume(&o.volumes.volumes, 'a', "n1", "10.0.0.1");
        observe(p, &o, NULL);
        plan_step(p, &o, &plan);
        assert_true(plan.api_view_check);
        assert_false(plan.api_view_answers);
        assert_int_equal(plan.dns_status, PK_EWAITING);
        assert_string_equal(plan.dns_note,
                            API_INT " answers with nothing, not the masters' internal addresses 10.0.0.1");
        assert_false(plan.dns_send);
        _cleanup_free_ char *waits = pass_test_print(&pass_step_api_view, p, &o, &plan, &r);
        assert_int_equal(r, 0);
        assert_contains(waits, "api-view: waiting: " API_INT " answers with nothing");
        pass_plan_done(&plan);
        pass_observation_done(&o);
}

/* Masters in the view without an internal address: nothing to name them by, so nothing is written (an
 * empty RRset would erase the name) and the step waits. */
static void test_masters_without_address_wait(void **state) {
        _cleanup_(pass_freep) Pass *p = pass_test_new(hosts_spec, &worker_node);
        PassObservation o = {};
        PassPlan plan;
        add_main_volume(&o.volumes.volumes, 'a', "n1", NULL);
        observe(p, &o, "10.0.0.1");
        plan_step(p, &o, &plan);
        assert_int_equal(plan.view->n_masters, 1);
        assert_int_equal(plan.dns_status, PK_EWAITING);
        assert_contains(plan.dns_note, "no internal address");
        assert_int_equal(plan.dns_changes.n, 0);
        assert_false(plan.dns_send);
        pass_plan_done(&plan);
        pass_observation_done(&o);
}

/* A master recorded with a bad address: the plan fails, naming the node and the value; `plan` prints it
 * and fails. */
static void test_bad_address_named(void **state) {
        _cleanup_(pass_freep) Pass *p = pass_test_new(hosts_spec, &worker_node);
        PassObservation o = {};
        PassPlan plan;
        add_main_volume(&o.volumes.volumes, 'a', "n1", "10.0.0.999");
        observe(p, &o, NULL);
        plan_step(p, &o, &plan);
        assert_int_equal(plan.dns_status, PK_EMALFORMED);
        assert_contains(plan.dns_note, "'n1'");
        assert_contains(plan.dns_note, "'10.0.0.999'");
        assert_false(plan.dns_send);
        int r;
        _cleanup_free_ char *text = pass_test_print(&pass_step_api_view, p, &o, &plan, &r);
        assert_int_equal(r, PK_EMALFORMED);
        assert_contains(text, "api-view: cannot plan: ");
        pass_plan_done(&plan);
        pass_observation_done(&o);
}

/* What could not be observed is the plan's status, with the observation's words; no DNS provider in the
 * spec: nothing to do. */
static void test_observation_failures(void **state) {
        _cleanup_(pass_freep) Pass *p = pass_test_new(hosts_spec, &worker_node);
        PassObservation o = { .volumes_error = PK_ECLOUD };
        PassPlan plan;
        assert_non_null(o.volumes_message = strdup("pool '/srv/pool' is not readable"));
        plan_step(p, &o, &plan);
        assert_int_equal(plan.dns_status, PK_ECLOUD);
        assert_string_equal(plan.dns_note, "cannot list the masters: pool '/srv/pool' is not readable");
        assert_null(plan.view);
        pass_plan_done(&plan);
        pass_observation_done(&o);

        o = (PassObservation){ .dns_error = -EACCES };
        assert_non_null(o.dns_message = strdup("cannot open hosts file '/etc/hosts': Permission denied"));
        add_main_volume(&o.volumes.volumes, 'a', "n1", "10.0.0.1");
        o.in = (VolumesInput){ .cluster = p->spec->name,
                               .volumes = o.volumes.volumes.items,
                               .n_volumes = o.volumes.volumes.n };
        plan_step(p, &o, &plan);
        assert_int_equal(plan.dns_status, -EACCES);
        assert_string_equal(plan.dns_note, "cannot open hosts file '/etc/hosts': Permission denied");
        pass_plan_done(&plan);

        o.dns_error = 0; /* and no provider: dns_enabled stays false */
        plan_step(p, &o, &plan);
        assert_int_equal(plan.dns_status, 0);
        assert_int_equal(plan.dns_desired.n, 0);
        assert_false(plan.dns_send);
        int r;
        _cleanup_free_ char *text = pass_test_print(&pass_step_api_view, p, &o, &plan, &r);
        assert_string_equal(text, "api-view: dns.provider is none: nothing to do\n");
        pass_plan_done(&plan);
        pass_observation_done(&o);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_hosts_both_families),
                cmocka_unit_test(test_hosts_current_and_repair),
                cmocka_unit_test(test_route53_compares),
                cmocka_unit_test(test_masters_without_address_wait),
                cmocka_unit_test(test_bad_address_named),
                cmocka_unit_test(test_observation_failures),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
