/* SPDX-License-Identifier: Apache-2.0 */
/* The whole plan of a master's and a worker's pass (pass_plan_steps() over the role's table), in process: a
 * Pass built by hand from a spec text and observations built by hand, no root, no device, no server. Each
 * test is one situation of a node's life; the last ones check that each role's table is complete. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "daemon/pass-types.h"
#include "daemon/step-api-names.h"
#include "daemon/step-api-view.h"
#include "daemon/step-backups.h"
#include "daemon/step-certs.h"
#include "daemon/step-control-plane.h"
#include "daemon/step-dns.h"
#include "daemon/step-etcd-manifests.h"
#include "daemon/step-etcd-upgrade.h"
#include "daemon/step-join.h"
#include "daemon/step-kubelet-boot.h"
#include "daemon/step-kubelet-config.h"
#include "daemon/step-kubelet-handoff.h"
#include "daemon/step-kubelet-rollout.h"
#include "daemon/step-members.h"
#include "daemon/step-node-join.h"
#include "daemon/step-node-proxy.h"
#include "daemon/step-pivot.h"
#include "daemon/step-pod-network.h"
#include "daemon/step-restore.h"
#include "daemon/step-volumes.h"
#include "dns/dns-wire.h"
#include "model/cluster-view.h"
#include "unit-test.h"

/* No stateStore: the certificates are not managed, so the plan needs no keystore. */
#define SPEC_HEAD                          \
        "apiVersion: protokube/v1alpha1\n" \
        "kind: Cluster\n"                  \
        "metadata:\n"                      \
        "  name: demo.k8s.test\n"          \
        "spec:\n"                          \
        "  cloud: local\n"
#define SPEC_REST                                      \
        "  etcdClusters:\n"                            \
        "    - name: main\n"                           \
        "      image: registry.k8s.io/etcd:3.5.16-0\n" \
        "    - name: events\n"                         \
        "      image: registry.k8s.io/etcd:3.5.16-0\n" \
        "  kubernetesVersion: 1.31.2\n"                \
        "  kubeAPIServer: {}\n"                        \
        "  kubeControllerManager: {}\n"                \
        "  kubeScheduler: {}\n"                        \
        "  kubeProxy: {}\n"

static const char spec_text[] = SPEC_HEAD "  dns:\n"
                                          "    provider: rfc2136\n"
                                          "    zone: k8s.test.\n"
                                          "    internalSuffix: internal.demo.k8s.test\n"
                                          "    ttl: 60\n"
                                          "    rfc2136:\n"
                                          "      server: \"127.0.0.1:15353\"\n"
                                          "      tsigKeyFile: /etc/protokube/tsig.key\n" SPEC_REST;

/* The same cluster named through each node's hosts file (a cluster without a DNS server). */
static const char hosts_spec_text[] = SPEC_HEAD "  dns:\n"
                                                "    provider: hosts\n"
                                                "    hosts:\n"
                                                "      file: /nonexistent/protokube-test/hosts\n" SPEC_REST;

/* Paths the plan only names: nothing is read or written there. */
#define MOUNT_ROOT   "/nonexistent/protokube-test/mnt"
#define MANIFEST_DIR "/nonexistent/protokube-test/manifests"

#define ETCD_A   "etcd-a.internal.demo.k8s.test."
#define ETCD_B   "etcd-b.internal.demo.k8s.test."
#define EVENTS_A "etcd-events-a.internal.demo.k8s.test."
#define API_INT  "api.internal.demo.k8s.test."
#define API_EXT  "api.demo.k8s.test."

/* The masters: n4 replaces n2 in zone z2. */
static const struct {
        const char *name, *zone, *ip, *external;
} nodes[] = {
        { "n1", "z1", "10.0.0.1", "198.51.100.1" },
        { "n2", "z2", "10.0.0.2", "198.51.100.2" },
        { "n3", "z3", "10.0.0.3", "198.51.100.3" },
        { "n4", "z2", "10.0.0.4", "198.51.100.4" },
};

static size_t node_index(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(nodes); i++)
                if (streq(nodes[i].name, name))
                        return i;
        fail_msg("no node '%s'", name);
        return 0;
}

/* A node's Pass, as pass_new() and pass_configure() set it up, without a volume provider. */
static Pass *test_node_pass(const char *spec, NodeRole role, const char *node_name) {
        _cleanup_strv_free_ char **errors = NULL;
        Pass *p = calloc(1, sizeof(Pass));
        assert_non_null(p);
        assert_int_equal(cluster_spec_load_string("cluster.yaml", spec, strlen(spec), &p->spec, &errors), 0);
        assert_null(errors);
        assert_non_null(p->etcd_clusters = strv_new("main", "events"));
        p->node = (NodeSettings){
                .role = role, .node_name = node_name, .manifest_dir = MANIFEST_DIR, .mount_root = MOUNT_ROOT
        };
        p->cfg = (VolumesPassConfig){ .cluster = p->spec->name,
                                      .etcd_clusters = p->etcd_clusters,
                                      .mount_root = MOUNT_ROOT,
                                      .manifest_dir = MANIFEST_DIR };
        p->certs = pass_certs_settings(p->spec, p->etcd_clusters);
        assert_null(p->certs.store_url);
        return p;
}

/* A master's Pass. */
static Pass *test_pass(const char *node_name) {
        return test_node_pass(spec_text, NODE_ROLE_MASTER, node_name);
}

static void add_volume(VolumeList *l, const char *etcd, size_t member, const char *holder) {
        static const char *const members[] = { "a", "b", "c" };
        _cleanup_free_ char *id = strprintf("vol-%s-%s", etcd, members[member]),
                            *zone = strprintf("z%zu", member + 1), *key = strjoin("k8s.io/etcd/", etcd),
                            *value = strjoin(members[member], "/a,b,c");
        _cleanup_strv_free_ char **tags = strv_new(NULL);
        Volume v = { .id = id, .zone = zone, .tags = tags, .content = VOLUME_CONTENT_UNKNOWN };
        assert_true(id && zone && key && value && tags);
        assert_int_equal(volume_set_tag(&v, "KubernetesCluster", "demo.k8s.test"), 0);
        assert_int_equal(volume_set_tag(&v, "k8s.io/role/master", "1"), 0);
        assert_int_equal(volume_set_tag(&v, key, value), 0);
        tags = v.tags; /* freed by the cleanup, the list keeps a copy */
        size_t n = holder ? node_index(holder) : 0;
        char *ips[] = { (char *)nodes[n].ip, NULL }, *external[] = { (char *)nodes[n].external, NULL };
        if (holder)
                v.attachment = (VolumeAttachment){ .node = (char *)holder,
                                                   .internal_ips = ips,
                                                   .external_ips = external };
        assert_int_equal(volume_list_append(l, &v), 0);
}

static size_t vol(const PassObservation *o, const char *id) {
        for (size_t i = 0; i < o->volumes.volumes.n; i++)
                if (streq(o->volumes.volumes.items[i].id, id))
                        return i;
        fail_msg("no volume '%s'", id);
        return SIZE_MAX;
}

/* What self sees: the volumes of main and events, members a, b, c in zones z1, z2, z3, member k of both
 * held by holders[k] (NULL: free). With mounted, the volumes self holds are attached and mounted here,
 * their links in place, their members' data present and no manifest on them yet. DNS is not read. */
static void observe(const Pass *p, PassObservation *o, const char *self, const char *const holders[3],
                    bool mounted) {
        size_t me = node_index(self);
        *o = (PassObservation){ .realtime = 1700000000 * USEC_PER_SEC };
        o->volumes.node = (NodeIdentity){ .name = strdup(self),
                                          .zone = strdup(nodes[me].zone),
                                          .internal_ips = strv_new(nodes[me].ip),
                                          .external_ips = strv_new(nodes[me].external) };
        for (size_t k = 0; k < 3; k++) {
                add_volume(&o->volumes.volumes, "main", k, holders[k]);
                add_volume(&o->volumes.volumes, "events", k, holders[k]);
        }
        size_t n = o->volumes.volumes.n;
        assert_non_null(o->volumes.observed = calloc(n + 1, sizeof(VolumeObserved)));
        assert_non_null(o->etcd_members = calloc(n + 1, sizeof(PassEtcdMember)));
        for (size_t i = 0; mounted && i < n; i++) {
                const char *holder = o->volumes.volumes.items[i].attachment.node;
                if (!holder || !streq(holder, self))
                        continue;
                o->volumes.observed[i] = (VolumeObserved){ .device_present = true,
                                                           .mount = MOUNT_STATE_OURS,
                                                           .link_current = true };
                o->etcd_members[i] = (PassEtcdMember){ .observed = true, .data = ETCD_DATA_PRESENT };
        }
        volumes_input(&p->cfg, &o->volumes, &o->in);
}

/* "claim:vol-main-a wait-device:vol-main-a ..." */
static char *actions_string(const PassPlan *plan) {
        _cleanup_strv_free_ char **l = strv_new(NULL);
        assert_non_null(l);
        for (size_t k = 0; k < plan->volumes.n_actions; k++) {
                const PlanAction *a = &plan->volumes.actions[k];
                _cleanup_free_ char *s =
                    strprintf("%s:%s", action_type_to_string(a->type), plan->in.volumes[a->volume].id);
                assert_non_null(s);
                assert_int_equal(strv_extend(&l, s), 0);
        }
        char *s = strv_join(l, " ");
        assert_non_null(s);
        return s;
}

static void assert_actions(const PassPlan *plan, const char *want) {
        _cleanup_free_ char *got = actions_string(plan);
        if (!streq(got, want))
                fail_msg("actions\n got: %s\nwant: %s", got, want);
}

/* The A records of name in l, comma-separated; "(none)" when l has no such RRset. */
static void assert_a(const DnsRRsetList *l, const char *name, const char *want) {
        static char *const none[] = { NULL };
        const DnsRRset *s = dns_rrset_list_find(l, name, DNS_TYPE_A);
        _cleanup_free_ char *got = s ? strv_join(s->addresses ?: none, ",") : strdup("(none)");
        assert_non_null(got);
        if (!streq(got, want))
                fail_msg("%s A\n got: %s\nwant: %s", name, got, want);
}

static const char *etcd_text(const PassPlan *plan, const char *cluster) {
        for (size_t k = 0; k < plan->volumes.n_selections; k++)
                if (streq(plan->volumes.selections[k].etcd_cluster, cluster))
                        return plan->etcd_texts[k];
        fail_msg("no selection of '%s'", cluster);
        return NULL;
}

static void plan_ok(const Pass *p, const PassObservation *o, PassPlan *plan) {
        assert_int_equal(pass_plan_steps(p, o, plan), 0);
        assert_null(plan->etcd_render_error);
        assert_int_equal(plan->render_error, 0);
        assert_false(plan->certs.managed);
}

/* n1's first pass in an empty cluster: it claims member a of main and events, mounts (formatting only a
 * proven-blank device) and writes their manifests for a new cluster; DNS names n1 for its members and the
 * API, and holds the placeholder for the members nobody holds. */
static void test_cold_start(void **state) {
        _cleanup_(pass_freep) Pass *p = test_pass("n1");
        PassObservation o;
        PassPlan plan;
        observe(p, &o, "n1", (const char *const[]){ NULL, NULL, NULL }, false);
        o.dns_enabled = o.dns_tracks_ttl = true;
        plan_ok(p, &o, &plan);

        assert_int_equal(plan.volumes.n_selections, 2);
        assert_string_equal(plan.volumes.selections[0].etcd_cluster, "main");
        assert_int_equal(plan.volumes.selections[0].state, SELECTION_ACTIONS);
        assert_int_equal(plan.volumes.selections[0].volume, vol(&o, "vol-main-a"));
        assert_actions(&plan, "claim:vol-main-a wait-device:vol-main-a fsck:vol-main-a mount:vol-main-a "
                              "write-manifest:vol-main-a link-manifest:vol-main-a "
                              "claim:vol-events-a wait-device:vol-events-a fsck:vol-events-a "
                              "mount:vol-events-a write-manifest:vol-events-a link-manifest:vol-events-a");
        assert_string_equal(plan.held_members[0], "a");
        assert_string_equal(plan.held_members[1], "a");
        const char *main_text = etcd_text(&plan, "main");
        assert_non_null(main_text);
        assert_non_null(strstr(main_text, "--initial-cluster-state=new\n"));
        assert_non_null(strstr(main_text, MOUNT_ROOT "/master-vol-main-a"));
        assert_non_null(strstr(etcd_text(&plan, "events"), "--initial-cluster-state=new\n"));

        assert_int_equal(plan.dns_status, 0);
        assert_true(plan.dns_send);
        assert_a(&plan.dns_desired, ETCD_A, "10.0.0.1");
        assert_a(&plan.dns_desired, EVENTS_A, "10.0.0.1");
        assert_a(&plan.dns_desired, ETCD_B, DNS_PLACEHOLDER_ADDRESS);
        assert_a(&plan.dns_desired, API_INT, "10.0.0.1");
        assert_a(&plan.dns_desired, API_EXT, "198.51.100.1");
        assert_a(&plan.dns_changes, ETCD_A, "10.0.0.1");
        assert_a(&plan.dns_changes, API_INT, "10.0.0.1");

        assert_true(plan.control_plane.n >= 3);
        for (size_t i = 0; i < plan.control_plane.n; i++)
                assert_true(plan.control_plane_write[i]); /* nothing on disk yet */
        assert_string_equal(plan.control_plane.items[0].file_name, "kube-apiserver.manifest");
        assert_non_null(strstr(plan.control_plane.items[0].text, "--advertise-address=10.0.0.1\n"));
        pass_plan_done(&plan);
        pass_observation_done(&o);
}

/* What the first plan would leave on disk and in DNS, observed: self's volumes mounted with the manifests
 * it rendered, the control-plane manifests it rendered, DNS serving what it desired. */
static void observe_applied(const Pass *p, PassObservation *o, const char *self,
                            const char *const holders[3], const PassPlan *first) {
        observe(p, o, self, holders, true);
        for (size_t k = 0; k < first->volumes.n_selections; k++) {
                size_t i = first->volumes.selections[k].volume;
                assert_non_null(first->etcd_texts[k]);
                assert_non_null(o->volumes.observed[i].manifest_text = strdup(first->etcd_texts[k]));
        }
        assert_non_null(o->manifest_names = strv_new(NULL));
        assert_non_null(o->manifest_texts = strv_new(NULL));
        for (size_t i = 0; i < first->control_plane.n; i++) {
                assert_int_equal(strv_extend(&o->manifest_names, first->control_plane.items[i].file_name),
                                 0);
                assert_int_equal(strv_extend(&o->manifest_texts, first->control_plane.items[i].text), 0);
        }
        for (size_t i = 0; i < first->control_plane.n_files; i++) {
                Component c = component_from_string(first->control_plane.files[i].component);
                assert_true(c >= 0);
                assert_non_null(o->config_texts[c] = strdup(first->control_plane.files[i].text));
        }
        o->dns_enabled = o->dns_tracks_ttl = true;
        for (size_t i = 0; i < first->dns_desired.n; i++)
                assert_int_equal(dns_rrset_list_copy_entry(&o->dns_served, &first->dns_desired.items[i]), 0);
}

/* The pass after n1's first (n2 and n3 hold b and c): everything in place, the plan does nothing. */
static void test_converged(void **state) {
        _cleanup_(pass_freep) Pass *p = test_pass("n1");
        PassObservation o;
        PassPlan first, plan;
        observe(p, &o, "n1", (const char *const[]){ NULL, "n2", "n3" }, false);
        o.dns_enabled = o.dns_tracks_ttl = true;
        plan_ok(p, &o, &first);
        assert_true(first.volumes.n_actions > 0 && first.dns_send);
        pass_observation_done(&o);

        observe_applied(p, &o, "n1", (const char *const[]){ "n1", "n2", "n3" }, &first);
        plan_ok(p, &o, &plan);
        assert_actions(&plan, "");
        assert_true(volumes_plan_converged(&plan.volumes));
        assert_true(plan.observed[vol(&o, "vol-main-a")].manifest_current);
        assert_true(plan.observed[vol(&o, "vol-events-a")].manifest_current);
        assert_int_equal(plan.member_plans[vol(&o, "vol-main-a")].decision, MEMBER_KEEP);
        assert_int_equal(plan.dns_status, 0);
        assert_int_equal(plan.dns_changes.n, 0);
        assert_false(plan.dns_send);
        assert_a(&plan.dns_desired, API_INT, "10.0.0.1,10.0.0.2,10.0.0.3");
        assert_int_equal(plan.control_plane.n, first.control_plane.n);
        for (size_t i = 0; i < plan.control_plane.n; i++)
                assert_false(plan.control_plane_write[i]);
        assert_true(first.control_plane.n_files > 0);
        for (size_t i = 0; i < first.control_plane.n_files; i++) {
                assert_true(first.config_write[i]); /* nothing on disk at first */
                assert_false(plan.config_write[i]);
        }
        assert_int_equal(plan.config_error, 0);
        pass_plan_done(&plan);

        /* a configuration file there that cannot be read (not absent): named, never written over */
        o.config_errors[COMPONENT_KUBE_SCHEDULER] = -EACCES;
        free(o.config_texts[COMPONENT_KUBE_SCHEDULER]);
        o.config_texts[COMPONENT_KUBE_SCHEDULER] = NULL;
        plan_ok(p, &o, &plan);
        assert_int_equal(plan.config_error, -EACCES);
        assert_non_null(strstr(plan.config_failed, "/kube-scheduler/config.yaml"));
        for (size_t i = 0; i < plan.control_plane.n_files; i++)
                assert_false(plan.config_write[i]);
        pass_plan_done(&plan);
        pass_plan_done(&first);
        pass_observation_done(&o);
}

/* n2 is gone and its volumes are free; n4 comes up in its zone: it claims b, and DNS moves etcd-b and n2's
 * place in the API's names to n4. */
static void test_replaced_master(void **state) {
        _cleanup_(pass_freep) Pass *p = test_pass("n4");
        PassObservation o;
        PassPlan plan;
        observe(p, &o, "n4", (const char *const[]){ "n1", NULL, "n3" }, false);
        o.dns_enabled = o.dns_tracks_ttl = true;
        for (size_t k = 0; k < 3; k++) { /* as the three masters left it */
                _cleanup_free_ char *main_name = strprintf("etcd-%c.internal.demo.k8s.test.", 'a' + (int)k),
                                    *events_name =
                                        strprintf("etcd-events-%c.internal.demo.k8s.test.", 'a' + (int)k);
                assert_true(main_name && events_name);
                assert_int_equal(dns_rrset_list_add_address(&o.dns_served, main_name, 60, nodes[k].ip), 0);
                assert_int_equal(dns_rrset_list_add_address(&o.dns_served, events_name, 60, nodes[k].ip), 0);
                assert_int_equal(dns_rrset_list_add_address(&o.dns_served, API_INT, 60, nodes[k].ip), 0);
                assert_int_equal(dns_rrset_list_add_address(&o.dns_served, API_EXT, 60, nodes[k].external),
                                 0);
        }
        plan_ok(p, &o, &plan);

        assert_int_equal(plan.volumes.selections[0].volume, vol(&o, "vol-main-b"));
        assert_int_equal(plan.volumes.selections[1].volume, vol(&o, "vol-events-b"));
        assert_int_equal(plan.volumes.actions[0].type, ACTION_CLAIM);
        assert_int_equal(plan.volumes.actions[0].volume, vol(&o, "vol-main-b"));
        assert_string_equal(plan.held_members[0], "b");
        assert_non_null(strstr(etcd_text(&plan, "main"), MOUNT_ROOT "/master-vol-main-b"));

        assert_true(plan.dns_send);
        assert_a(&plan.dns_changes, ETCD_B, "10.0.0.4");
        assert_a(&plan.dns_changes, API_INT, "10.0.0.1,10.0.0.3,10.0.0.4");
        assert_a(&plan.dns_changes, API_EXT, "198.51.100.1,198.51.100.3,198.51.100.4");
        assert_a(&plan.dns_changes, "etcd-events-b.internal.demo.k8s.test.", "10.0.0.4");
        assert_int_equal(plan.dns_changes.n, 4); /* n1's and n3's members stay where they are */
        assert_a(&plan.dns_changes, ETCD_A, "(none)");
        assert_a(&plan.dns_changes, EVENTS_A, "(none)");
        assert_non_null(strstr(plan.control_plane.items[0].text, "--advertise-address=10.0.0.4\n"));
        pass_plan_done(&plan);
        pass_observation_done(&o);
}

static EtcdMember member(uint64_t id, const char *peer_url, bool started) {
        EtcdMember m = { .id = id,
                         .name = strprintf("etcd-%" PRIx64, id),
                         .peer_urls = strv_new(peer_url),
                         .client_urls = started ? strv_new("https://10.0.0.9:4001") : strv_new(NULL) };
        assert_true(m.name && m.peer_urls && m.client_urls);
        return m;
}

/* n4 holds b, mounted, and its data directory is blank while a and c run and list b (which ran before):
 * b is replaced (the old member removed, a learner added) and its manifest says state existing. */
static void test_blank_member(void **state) {
        _cleanup_(pass_freep) Pass *p = test_pass("n4");
        PassObservation o;
        PassPlan plan;
        static const char *const urls[] = { "http://etcd-a.internal.demo.k8s.test:2380",
                                            "http://etcd-b.internal.demo.k8s.test:2380",
                                            "http://etcd-c.internal.demo.k8s.test:2380" };
        observe(p, &o, "n4", (const char *const[]){ "n1", "n4", "n3" }, true);
        size_t b = vol(&o, "vol-main-b");
        PassEtcdMember *m = &o.etcd_members[b];
        *m = (PassEtcdMember){ .observed = true,
                               .data = ETCD_DATA_BLANK,
                               .queried = true,
                               .peer_url = strdup(urls[1]),
                               .tagged_peer_urls = strv_new(urls[0], urls[1], urls[2]),
                               .n_others = 2,
                               .n_others_healthy = 2 };
        assert_true(m->peer_url && m->tagged_peer_urls);
        assert_non_null(m->members.items = calloc(3, sizeof(EtcdMember)));
        for (size_t k = 0; k < 3; k++)
                m->members.items[m->members.n++] = member(0xa + k, urls[k], true);
        plan_ok(p, &o, &plan);

        const MemberPlan *d = &plan.member_plans[b];
        assert_int_equal(d->decision, MEMBER_REPLACE);
        assert_int_equal(d->remove_id, 0xb);
        assert_true(d->existing);
        assert_int_equal(plan.member_plans[vol(&o, "vol-events-b")].decision, MEMBER_KEEP);
        assert_non_null(strstr(etcd_text(&plan, "main"), "--initial-cluster-state=existing\n"));
        assert_non_null(strstr(etcd_text(&plan, "events"), "--initial-cluster-state=new\n"));
        assert_actions(&plan, "write-manifest:vol-main-b write-manifest:vol-events-b");

        /* the manifest with state existing already on the volume (a pass that wrote it and crashed):
         * current, since the members are decided before the volumes' manifests are compared */
        assert_non_null(o.volumes.observed[b].manifest_text = strdup(etcd_text(&plan, "main")));
        pass_plan_done(&plan);
        plan_ok(p, &o, &plan);
        assert_true(plan.observed[b].manifest_current);
        assert_actions(&plan, "write-manifest:vol-events-b");
        pass_plan_done(&plan);
        pass_observation_done(&o);
}

/* A restore of main is under way on n1's volume: its member is kept as the restore has it, and its manifest
 * and link are the restore's (current, whatever they hold); events' manifest is still written. */
static void test_restore_under_way(void **state) {
        _cleanup_(pass_freep) Pass *p = test_pass("n1");
        PassObservation o;
        PassPlan plan;
        observe(p, &o, "n1", (const char *const[]){ "n1", "n2", "n3" }, true);
        size_t a = vol(&o, "vol-main-a"), ea = vol(&o, "vol-events-a");
        o.etcd_members[a].restoring = true;
        assert_non_null(o.volumes.observed[a].manifest_text = strdup("# the restore's etcd\n"));
        o.volumes.observed[a].link_current = false;
        assert_non_null(o.volumes.observed[ea].manifest_text = strdup("# an older etcd-events\n"));
        plan_ok(p, &o, &plan);

        assert_int_equal(plan.member_plans[a].decision, MEMBER_KEEP);
        assert_non_null(strstr(plan.member_plans[a].reason, "a restore"));
        assert_true(plan.observed[a].manifest_current);
        assert_true(plan.observed[a].link_current);
        assert_false(plan.observed[ea].manifest_current);
        assert_actions(&plan, "write-manifest:vol-events-a");
        pass_plan_done(&plan);
        pass_observation_done(&o);
}

static bool bootstrap_manifest(const char *name) {
        for (size_t i = 0; pivot_bootstrap_manifests[i]; i++)
                if (streq(pivot_bootstrap_manifests[i], name))
                        return true;
        return false;
}

/* The pivot retired n1's bootstrap control-plane manifests: one stale copy on disk, the others absent, and
 * the plan writes none of them; without the record the same observation writes them all. */
static void test_pivot_step(void **state) {
        _cleanup_(pass_freep) Pass *p = test_pass("n1");
        PassObservation o;
        PassPlan plan;
        observe(p, &o, "n1", (const char *const[]){ "n1", "n2", "n3" }, true);
        assert_non_null(o.manifest_names = strv_new("kube-apiserver.manifest"));
        assert_non_null(o.manifest_texts = strv_new("# a stale kube-apiserver\n"));
        o.pivot_record.removed_at = 1700000000 * USEC_PER_SEC;
        plan_ok(p, &o, &plan);
        size_t n_bootstrap = 0;
        for (size_t i = 0; i < plan.control_plane.n; i++)
                if (bootstrap_manifest(plan.control_plane.items[i].file_name)) {
                        assert_false(plan.control_plane_write[i]);
                        n_bootstrap++;
                }
        assert_true(n_bootstrap >= 3);
        pass_plan_done(&plan);

        o.pivot_record = (PivotRecord){};
        plan_ok(p, &o, &plan);
        for (size_t i = 0; i < plan.control_plane.n; i++)
                assert_true(plan.control_plane_write[i]);
        pass_plan_done(&plan);
        pass_observation_done(&o);
}

/* What a worker's pass observes: the provider's listing of main's and events' volumes, member k of both held
 * by holders[k] (NULL: free), as its api-view step keeps it (no node identity, no device, no mount); DNS is
 * read through the spec's provider: served, the A records of the API's internal name (NULL: none). */
static void observe_worker(const Pass *p, PassObservation *o, const char *const holders[3],
                           const char *served) {
        *o = (PassObservation){ .realtime = 1700000000 * USEC_PER_SEC, .dns_enabled = true };
        for (size_t k = 0; k < 3; k++) {
                add_volume(&o->volumes.volumes, "main", k, holders[k]);
                add_volume(&o->volumes.volumes, "events", k, holders[k]);
        }
        o->in = (VolumesInput){ .cluster = p->spec->name,
                                .etcd_clusters = p->etcd_clusters,
                                .volumes = o->volumes.volumes.items,
                                .n_volumes = o->volumes.volumes.n };
        _cleanup_strv_free_ char **addresses = NULL;
        assert_int_equal(strv_split(strempty(served), ",", &addresses), 0);
        STRV_FOREACH (a, addresses)
                assert_int_equal(dns_rrset_list_add_address(&o->dns_served, API_INT, 60, *a), 0);
}

/* Nothing of a master's: no volume selected or claimed, no etcd manifest, no control-plane pod, no
 * certificate, no etcd member decided. */
static void assert_no_master_work(const PassPlan *plan) {
        assert_int_equal(plan->volumes.n_selections, 0);
        assert_int_equal(plan->volumes.n_actions, 0);
        assert_null(plan->etcd_texts);
        assert_null(plan->held_members);
        assert_null(plan->member_plans);
        assert_int_equal(plan->control_plane.n, 0);
        assert_null(plan->control_plane_write);
        assert_false(plan->certs.managed);
        assert_int_equal(plan->certs.n_leaves, 0);
        assert_int_equal(plan->certs.n_files, 0);
        assert_null(plan->certs.create);
}

/* Every RRset of l is the API's internal name: nothing else is the worker's to write. */
static void assert_only_api_internal(const DnsRRsetList *l) {
        for (size_t i = 0; i < l->n; i++)
                if (!streq(l->items[i].name, API_INT))
                        fail_msg("a worker plans '%s'", l->items[i].name);
}

/* A worker with dns.provider hosts, n1, n2 and n3 holding main's volumes: its plan claims nothing, renders
 * nothing, and writes exactly api.internal with their internal addresses into the hosts file; once the
 * file has them, nothing. */
static void test_worker_hosts(void **state) {
        _cleanup_(pass_freep) Pass *p = test_node_pass(hosts_spec_text, NODE_ROLE_WORKER, "w1");
        PassObservation o;
        PassPlan plan;
        observe_worker(p, &o, (const char *const[]){ "n1", "n2", "n3" }, NULL);
        assert_int_equal(pass_plan_steps(p, &o, &plan), 0);
        assert_no_master_work(&plan);
        assert_int_equal(plan.dns_status, 0);
        assert_false(plan.api_view_check);
        assert_int_equal(plan.view->n_masters, 3);
        assert_only_api_internal(&plan.dns_desired);
        assert_a(&plan.dns_desired, API_INT, "10.0.0.1,10.0.0.2,10.0.0.3");
        assert_a(&plan.dns_desired, API_EXT, "(none)");
        assert_a(&plan.dns_desired, ETCD_A, "(none)");
        assert_only_api_internal(&plan.dns_changes);
        assert_int_equal(plan.dns_changes.n, 1); /* the A RRset: the masters have no IPv6 address */
        assert_a(&plan.dns_changes, API_INT, "10.0.0.1,10.0.0.2,10.0.0.3");
        assert_true(plan.dns_send);
        pass_plan_done(&plan);
        pass_observation_done(&o);

        observe_worker(p, &o, (const char *const[]){ "n1", "n2", "n3" }, "10.0.0.3,10.0.0.1,10.0.0.2");
        assert_int_equal(pass_plan_steps(p, &o, &plan), 0);
        assert_int_equal(plan.dns_status, 0);
        assert_int_equal(plan.dns_changes.n, 0);
        assert_false(plan.dns_send);
        pass_plan_done(&plan);
        pass_observation_done(&o);
}

/* n2 is gone and n4 holds its volumes: the worker's hosts file follows, n2's address out, n4's in. */
static void test_worker_follows_a_replaced_master(void **state) {
        _cleanup_(pass_freep) Pass *p = test_node_pass(hosts_spec_text, NODE_ROLE_WORKER, "w1");
        PassObservation o;
        PassPlan plan;
        observe_worker(p, &o, (const char *const[]){ "n1", "n4", "n3" }, "10.0.0.1,10.0.0.2,10.0.0.3");
        assert_int_equal(pass_plan_steps(p, &o, &plan), 0);
        assert_no_master_work(&plan);
        assert_only_api_internal(&plan.dns_changes);
        assert_a(&plan.dns_changes, API_INT, "10.0.0.1,10.0.0.3,10.0.0.4");
        assert_true(plan.dns_send);
        pass_plan_done(&plan);
        pass_observation_done(&o);
}

/* No master holds a main volume (a cluster coming up, or a listing that lost them): the worker plans
 * nothing, above all no empty api.internal that would erase the name, and says it waits. */
static void test_worker_without_masters(void **state) {
        _cleanup_(pass_freep) Pass *p = test_node_pass(hosts_spec_text, NODE_ROLE_WORKER, "w1");
        PassObservation o;
        PassPlan plan;
        observe_worker(p, &o, (const char *const[]){ NULL, NULL, NULL }, "10.0.0.1");
        assert_int_equal(pass_plan_steps(p, &o, &plan), 0);
        assert_no_master_work(&plan);
        assert_int_equal(plan.view->n_masters, 0);
        assert_int_equal(plan.dns_status, PK_EWAITING);
        assert_non_null(plan.dns_note);
        assert_non_null(strstr(plan.dns_note, "no master"));
        assert_non_null(strstr(plan.dns_note, "waits"));
        assert_int_equal(plan.dns_desired.n, 0);
        assert_int_equal(plan.dns_changes.n, 0);
        assert_false(plan.dns_send);
        pass_plan_done(&plan);
        pass_observation_done(&o);
}

/* With rfc2136 the records are the masters': the worker compares what the name answers with the masters'
 * internal addresses and sends nothing, whether they agree or not. */
static void test_worker_rfc2136_only_reads(void **state) {
        _cleanup_(pass_freep) Pass *p = test_node_pass(spec_text, NODE_ROLE_WORKER, "w1");
        PassObservation o;
        PassPlan plan;
        observe_worker(p, &o, (const char *const[]){ "n1", "n2", "n3" }, "10.0.0.1,10.0.0.2");
        assert_int_equal(pass_plan_steps(p, &o, &plan), 0);
        assert_no_master_work(&plan);
        assert_true(plan.api_view_check);
        assert_false(plan.api_view_answers);
        assert_int_equal(plan.dns_status, PK_EWAITING);
        assert_non_null(strstr(plan.dns_note, "10.0.0.1,10.0.0.2, not"));
        assert_int_equal(plan.dns_changes.n, 0);
        assert_false(plan.dns_send);
        assert_only_api_internal(&plan.dns_desired);
        pass_plan_done(&plan);
        pass_observation_done(&o);

        observe_worker(p, &o, (const char *const[]){ "n1", "n2", "n3" }, "10.0.0.1,10.0.0.2,10.0.0.3");
        assert_int_equal(pass_plan_steps(p, &o, &plan), 0);
        assert_true(plan.api_view_check);
        assert_true(plan.api_view_answers);
        assert_int_equal(plan.dns_status, 0);
        assert_int_equal(plan.dns_changes.n, 0);
        assert_false(plan.dns_send);
        pass_plan_done(&plan);
        pass_observation_done(&o);
}

static bool has_row(const PassRow *rows, PassPhase phase, const PassStep *s) {
        for (const PassRow *r = rows; r->step; r++)
                if (r->phase == phase && r->step == s)
                        return true;
        return false;
}

/* Every row of role's table is a step for that role with the row's hook, and every hook of every step the
 * role takes (steps, all the step files' steps with that role's bit) has its row: a hook left out of the
 * table would never run. A step of the role missing from steps fails too: add it there. */
static void check_table(NodeRole role, const PassStep *const *steps, size_t n_steps) {
        const PassRole *r = pass_role(role);
        size_t n_rows = 0;
        assert_non_null(r);
        assert_int_equal(r->role, role);
        for (const PassRow *row = r->rows; row->step; row++, n_rows++) {
                const PassStep *s = row->step;
                assert_true(n_rows < 100);
                bool listed = false;
                for (size_t i = 0; i < n_steps; i++)
                        listed = listed || steps[i] == s;
                if (!listed) /* a new step: add it to the test's list of steps, so that its hooks are checked
                              */
                        fail_msg("step '%s' is not in this test's list of steps", s->name);
                assert_true(s->roles & (1U << role));
                assert_true(row->phase == PASS_PHASE_APPLY || row->wave == PASS_WAVE_ALL);
                const bool hook[_PASS_PHASE_MAX] = {
                        [PASS_PHASE_OBSERVE] = s->observe, [PASS_PHASE_PLAN] = s->plan,
                        [PASS_PHASE_APPLY] = s->apply,     [PASS_PHASE_FINISH] = s->finish,
                        [PASS_PHASE_PRINT] = s->print,     [PASS_PHASE_JOIN] = s->join,
                };
                if (!hook[row->phase])
                        fail_msg("step '%s' has a row in phase %d without its hook", s->name, row->phase);
        }
        for (size_t i = 0; i < n_steps; i++) {
                const PassStep *s = steps[i];
                assert_true(s->roles & (1U << role));
                assert_true(!s->observe || has_row(r->rows, PASS_PHASE_OBSERVE, s));
                assert_true(!s->plan || has_row(r->rows, PASS_PHASE_PLAN, s));
                assert_true(!(s->apply || s->revise) || has_row(r->rows, PASS_PHASE_APPLY, s));
                assert_true(!s->finish || has_row(r->rows, PASS_PHASE_FINISH, s));
                assert_true(!s->print || has_row(r->rows, PASS_PHASE_PRINT, s));
                assert_true(!s->join || has_row(r->rows, PASS_PHASE_JOIN, s));
        }
}

/* Every step of every step file, and the roles' tables. */
static const PassStep *const all_steps[] = {
        &pass_step_pivot,
        &pass_step_volumes,
        &pass_step_volume_devices,
        &pass_step_volumes_done,
        &pass_step_dns,
        &pass_step_api_names,
        &pass_step_members,
        &pass_step_certs,
        &pass_step_control_plane,
        &pass_step_etcd_manifests,
        &pass_step_etcd_upgrade,
        &pass_step_restore,
        &pass_step_backups,
        &pass_step_api_view,
        &pass_step_kubelet_boot,
        &pass_step_kubelet_config,
        &pass_step_kubelet_handoff_master,
        &pass_step_kubelet_handoff_worker,
        &pass_step_kubelet_rollout,
        &pass_step_join,
        &pass_step_pod_network_master,
        &pass_step_pod_network_worker,
        &pass_step_node_proxy,
        &pass_step_node_join,
};

/* The steps of all_steps whose roles include role. */
static size_t steps_of(NodeRole role, const PassStep **ret) {
        size_t n = 0;
        for (size_t i = 0; i < ELEMENTSOF(all_steps); i++)
                if (all_steps[i]->roles & (1U << role))
                        ret[n++] = all_steps[i];
        return n;
}

static void test_master_table(void **state) {
        const PassStep *steps[ELEMENTSOF(all_steps)];
        size_t n = steps_of(NODE_ROLE_MASTER, steps);
        assert_int_equal(n, 18);
        assert_null(pass_role(_NODE_ROLE_MAX));
        check_table(NODE_ROLE_MASTER, steps, n);
}

/* The worker's table holds only its own steps: none that claims, mounts, renders or publishes for a master.
 */
static void test_worker_table(void **state) {
        const PassStep *steps[ELEMENTSOF(all_steps)];
        size_t n = steps_of(NODE_ROLE_WORKER, steps);
        assert_int_equal(n, 6);
        assert_ptr_equal(steps[0], &pass_step_api_view);
        assert_ptr_equal(steps[1], &pass_step_kubelet_boot);
        assert_ptr_equal(steps[2], &pass_step_kubelet_handoff_worker);
        assert_ptr_equal(steps[3], &pass_step_pod_network_worker);
        assert_ptr_equal(steps[4], &pass_step_node_proxy);
        assert_ptr_equal(steps[5], &pass_step_node_join);
        check_table(NODE_ROLE_WORKER, steps, n);
        for (const PassRow *row = pass_role(NODE_ROLE_WORKER)->rows; row->step; row++)
                assert_false(row->step->roles & (1U << NODE_ROLE_MASTER));
}

/* The verbs about one step (`volumes`, `pki show`, `pki renew`) go by the table: a worker's has neither
 * volumes nor certificates, so they refuse it where they would show a master's parts of an empty plan. */
static void test_verbs_follow_the_table(void **state) {
        _cleanup_(pass_freep) Pass *worker = test_node_pass(hosts_spec_text, NODE_ROLE_WORKER, "w1");
        _cleanup_(pass_freep) Pass *master = test_pass("n1");
        assert_true(pass_has_step(worker, &pass_step_api_view));
        assert_false(pass_has_step(worker, &pass_step_volumes));
        assert_false(pass_has_step(master, &pass_step_api_view));
        assert_true(pass_has_step(master, &pass_step_volumes));
        assert_int_equal(pass_require_step(worker, &pass_step_volumes, "volumes"), -EOPNOTSUPP);
        assert_int_equal(pass_check_certificates(worker, "pki show"), -EOPNOTSUPP);
        assert_int_equal(pass_require_step(master, &pass_step_volumes, "volumes"), 0);
        assert_int_equal(pass_check_certificates(master, "pki renew"), 0);
}

/* A master whose view is empty plans no records and waits: `plan` prints that it waits and does not fail
 * (waiting is a status below zero too; it once printed "cannot plan" and failed). A real failure still
 * fails. */
static void test_master_dns_waiting_prints(void **state) {
        _cleanup_(pass_freep) Pass *p = test_pass("n1");
        PassObservation o = {};
        PassPlan plan = { .dns_status = PK_EWAITING, .dns_note = (char *)"the view has no masters" };
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        assert_non_null(f);
        assert_int_equal(pass_step_dns.print(p, &o, &plan, f), 0);
        plan.dns_status = -EIO;
        plan.dns_note = (char *)"the server refused";
        assert_int_equal(pass_step_dns.print(p, &o, &plan, f), -EIO);
        assert_int_equal(fclose(f), 0);
        assert_string_equal(text, "dns: waiting: the view has no masters\n"
                                  "dns: cannot plan: the server refused\n");
        free(text);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cold_start),
                cmocka_unit_test(test_converged),
                cmocka_unit_test(test_replaced_master),
                cmocka_unit_test(test_blank_member),
                cmocka_unit_test(test_restore_under_way),
                cmocka_unit_test(test_pivot_step),
                cmocka_unit_test(test_worker_hosts),
                cmocka_unit_test(test_worker_follows_a_replaced_master),
                cmocka_unit_test(test_worker_without_masters),
                cmocka_unit_test(test_worker_rfc2136_only_reads),
                cmocka_unit_test(test_master_table),
                cmocka_unit_test(test_worker_table),
                cmocka_unit_test(test_verbs_follow_the_table),
                cmocka_unit_test(test_master_dns_waiting_prints),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
