/* SPDX-License-Identifier: Apache-2.0 */
/* The pure pass planner with the provider replaced by tables: selection, ordering, idempotence, and a
 * simulated race of several masters claiming through compare-and-set. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/strv.h"
#include "unit-test.h"
#include "volumes/volumes-plan.h"

static char *clusters[] = { (char *)"events", (char *)"main", NULL }; /* main must still go first */

static void add_volume(Volume *vols, size_t *n, const char *id, const char *zone, const char *etcd_key,
                       const char *etcd_value, const char *holder) {
        Volume *v = &vols[(*n)++];
        *v = (Volume){ .id = strdup(id), .zone = strdup(zone), .tags = calloc(1, sizeof(char *)) };
        assert_int_equal(volume_set_tag(v, "KubernetesCluster", "demo"), 0);
        assert_int_equal(volume_set_tag(v, "k8s.io/role/master", "1"), 0);
        if (etcd_key)
                assert_int_equal(volume_set_tag(v, etcd_key, etcd_value), 0);
        if (holder)
                v->attachment.node = strdup(holder);
}

/* main-a,b,c and events-a,b,c in zone z1, listed in a scrambled order. */
static size_t standard_pool(Volume *vols) {
        size_t n = 0;
        add_volume(vols, &n, "vol-ev-c", "z1", "k8s.io/etcd/events", "c/a,b,c", NULL);
        add_volume(vols, &n, "vol-main-b", "z1", "k8s.io/etcd/main", "b/a,b,c", NULL);
        add_volume(vols, &n, "vol-ev-a", "z1", "k8s.io/etcd/events", "a/a,b,c", NULL);
        add_volume(vols, &n, "vol-main-c", "z1", "k8s.io/etcd/main", "c/a,b,c", NULL);
        add_volume(vols, &n, "vol-main-a", "z1", "k8s.io/etcd/main", "a/a,b,c", NULL);
        add_volume(vols, &n, "vol-ev-b", "z1", "k8s.io/etcd/events", "b/a,b,c", NULL);
        return n;
}

static void free_volumes(Volume *vols, size_t n) {
        for (size_t i = 0; i < n; i++)
                volume_done(&vols[i]);
}

static NodeIdentity node(const char *name) {
        return (NodeIdentity){ .name = (char *)name, .zone = (char *)"z1" };
}

static size_t find(const Volume *vols, size_t n, const char *id) {
        for (size_t i = 0; i < n; i++)
                if (strcmp(vols[i].id, id) == 0)
                        return i;
        fail_msg("no volume '%s'", id);
        return SIZE_MAX;
}

/* "claim:vol-main-a wait-device:vol-main-a ..." */
static char *actions_string(const VolumesPlan *p, const Volume *vols) {
        char *s = strdup("");
        for (size_t k = 0; k < p->n_actions; k++) {
                char *n = NULL;
                assert_true(asprintf(&n, "%s%s%s:%s", s, k ? " " : "",
                                     action_type_to_string(p->actions[k].type),
                                     vols[p->actions[k].volume].id) >= 0);
                free(s);
                s = n;
        }
        return s;
}

static void assert_actions(const VolumesPlan *p, const Volume *vols, const char *want) {
        char *got = actions_string(p, vols);
        if (strcmp(got, want) != 0)
                fail_msg("actions\n got: %s\nwant: %s", got, want);
        free(got);
}

static void test_fresh_node(void **state) {
        Volume vols[8];
        size_t n = standard_pool(vols);
        NodeIdentity me = node("n1");
        VolumesInput in = { .cluster = "demo",
                            .etcd_clusters = clusters,
                            .node = &me,
                            .volumes = vols,
                            .n_volumes = n,
                            .manifests = true };
        VolumesPlan p;
        assert_int_equal(volumes_plan(&in, &p), 0);
        assert_int_equal(p.n_selections, 2);
        assert_string_equal(p.selections[0].etcd_cluster, "main");
        assert_string_equal(p.selections[1].etcd_cluster, "events");
        assert_int_equal(p.selections[0].state, SELECTION_ACTIONS);
        assert_actions(&p, vols,
                       "claim:vol-main-a wait-device:vol-main-a fsck:vol-main-a mount:vol-main-a "
                       "write-manifest:vol-main-a link-manifest:vol-main-a "
                       "claim:vol-ev-a wait-device:vol-ev-a fsck:vol-ev-a mount:vol-ev-a "
                       "write-manifest:vol-ev-a link-manifest:vol-ev-a");
        assert_false(volumes_plan_converged(&p));
        volumes_plan_done(&p);

        /* without step 7 */
        in.manifests = false;
        assert_int_equal(volumes_plan(&in, &p), 0);
        assert_actions(&p, vols,
                       "claim:vol-main-a wait-device:vol-main-a fsck:vol-main-a mount:vol-main-a "
                       "claim:vol-ev-a wait-device:vol-ev-a fsck:vol-ev-a mount:vol-ev-a");
        volumes_plan_done(&p);
        free_volumes(vols, n);
}

static void test_converged_and_partial(void **state) {
        Volume vols[8];
        size_t n = standard_pool(vols);
        VolumeObserved obs[8] = {};
        NodeIdentity me = node("n1");
        size_t mb = find(vols, n, "vol-main-b"), eb = find(vols, n, "vol-ev-b");
        vols[mb].attachment.node = strdup("n1");
        vols[eb].attachment.node = strdup("n1");
        obs[mb] = (VolumeObserved){ .device_present = true,
                                    .mount = MOUNT_STATE_OURS,
                                    .manifest_current = true,
                                    .link_current = true };
        obs[eb] = obs[mb];
        VolumesInput in = { .cluster = "demo",
                            .etcd_clusters = clusters,
                            .node = &me,
                            .volumes = vols,
                            .n_volumes = n,
                            .observed = obs,
                            .manifests = true };
        VolumesPlan p;
        assert_int_equal(volumes_plan(&in, &p), 0);
        assert_int_equal(p.n_actions, 0);
        assert_true(volumes_plan_converged(&p));
        assert_int_equal(p.selections[0].volume, mb);
        volumes_plan_done(&p);

        /* unmounted after a reboot, loop device gone: attach again, then the whole chain; never a claim */
        obs[mb] = (VolumeObserved){};
        obs[eb].link_current = false;
        assert_int_equal(volumes_plan(&in, &p), 0);
        assert_actions(&p, vols,
                       "attach:vol-main-b wait-device:vol-main-b fsck:vol-main-b mount:vol-main-b "
                       "write-manifest:vol-main-b link-manifest:vol-main-b link-manifest:vol-ev-b");
        volumes_plan_done(&p);

        /* device there but not mounted: no attach */
        obs[mb].device_present = true;
        obs[eb].link_current = true;
        assert_int_equal(volumes_plan(&in, &p), 0);
        assert_actions(&p, vols,
                       "wait-device:vol-main-b fsck:vol-main-b mount:vol-main-b write-manifest:vol-main-b "
                       "link-manifest:vol-main-b");
        volumes_plan_done(&p);

        /* another device on the mount point: an error, nothing planned for it */
        obs[mb].mount = MOUNT_STATE_OTHER;
        assert_int_equal(volumes_plan(&in, &p), 0);
        assert_int_equal(p.selections[0].state, SELECTION_ERROR);
        assert_non_null(strstr(p.selections[0].note, "another device"));
        assert_int_equal(p.n_actions, 0);
        volumes_plan_done(&p);
        free_volumes(vols, n);
}

static void test_waiting_and_others(void **state) {
        Volume vols[8];
        size_t n = 0;
        NodeIdentity me = node("n4");
        add_volume(vols, &n, "m-a", "z1", "k8s.io/etcd/main", "a/a,b,c", "n1");
        add_volume(vols, &n, "m-b", "z1", "k8s.io/etcd/main", "b/a,b,c", "n2");
        add_volume(vols, &n, "m-c", "z1", "k8s.io/etcd/main", "c/a,b,c", "n3");
        add_volume(vols, &n, "e-a", "z2", "k8s.io/etcd/events", "a/a,b,c", NULL); /* other zone */
        add_volume(vols, &n, "e-b", "z1", "k8s.io/etcd/events", "b/a,c", NULL);   /* malformed */
        add_volume(vols, &n, "e-c", "z1", "k8s.io/etcd/events", "c/a,b,c", NULL);
        VolumesInput in = {
                .cluster = "demo", .etcd_clusters = clusters, .node = &me, .volumes = vols, .n_volumes = n
        };
        VolumesPlan p;
        assert_int_equal(volumes_plan(&in, &p), 0);
        assert_int_equal(p.selections[0].state, SELECTION_WAITING);
        assert_non_null(strstr(p.selections[0].note, "no free volume of etcd cluster 'main'"));
        assert_int_equal(p.selections[1].state, SELECTION_ACTIONS);
        assert_actions(&p, vols, "claim:e-c wait-device:e-c fsck:e-c mount:e-c");
        assert_false(p.eligibility[3].eligible);
        assert_false(p.eligibility[4].eligible);
        assert_true(p.eligibility[4].malformed);
        assert_non_null(strstr(p.eligibility[4].reason, "malformed tag 'k8s.io/etcd/events=b/a,c'"));
        volumes_plan_done(&p);
        free_volumes(vols, n);
}

static void test_holds_two(void **state) {
        Volume vols[8];
        size_t n = 0;
        NodeIdentity me = node("n1");
        add_volume(vols, &n, "m-c", "z1", "k8s.io/etcd/main", "c/a,b,c", "n1");
        add_volume(vols, &n, "m-a", "z1", "k8s.io/etcd/main", "a/a,b,c", "n1");
        add_volume(vols, &n, "m-b", "z1", "k8s.io/etcd/main", "b/a,b,c", NULL);
        char *only_main[] = { (char *)"main", NULL };
        VolumesInput in = {
                .cluster = "demo", .etcd_clusters = only_main, .node = &me, .volumes = vols, .n_volumes = n
        };
        VolumesPlan p;
        assert_int_equal(volumes_plan(&in, &p), 0);
        assert_int_equal(p.selections[0].volume, 1);
        assert_non_null(strstr(p.selections[0].note, "holds 2 volumes"));
        assert_actions(&p, vols, "attach:m-a wait-device:m-a fsck:m-a mount:m-a");
        volumes_plan_done(&p);
        free_volumes(vols, n);
}

/* Permuting the listing must not change the choice. */
static void test_deterministic(void **state) {
        Volume vols[8];
        size_t n = standard_pool(vols);
        NodeIdentity me = node("n1");
        for (unsigned round = 0; round < 6; round++) {
                /* rotate */
                Volume first = vols[0];
                memmove(vols, vols + 1, sizeof(Volume) * (n - 1));
                vols[n - 1] = first;
                VolumesInput in = { .cluster = "demo",
                                    .etcd_clusters = clusters,
                                    .node = &me,
                                    .volumes = vols,
                                    .n_volumes = n };
                VolumesPlan p;
                assert_int_equal(volumes_plan(&in, &p), 0);
                assert_string_equal(vols[p.selections[0].volume].id, "vol-main-a");
                assert_string_equal(vols[p.selections[1].volume].id, "vol-ev-a");
                volumes_plan_done(&p);
        }
        free_volumes(vols, n);
}

/* xorshift: reproducible interleavings (the C library PRNG is banned). */
static uint32_t next_random(uint32_t *s) {
        *s ^= *s << 13;
        *s ^= *s >> 17;
        *s ^= *s << 5;
        return *s;
}

/* n_nodes masters run passes in a random interleaving; a claim is a compare-and-set on the shared table
 * (it fails if someone else got there first, and then that node plans again). At the end: no node holds
 * two members of one etcd cluster, every volume that can be held is held, and each node is converged or
 * waiting. */
static void simulate_race(unsigned n_nodes, unsigned extra, uint32_t seed) {
        Volume vols[16];
        size_t n = standard_pool(vols);
        char names[5][8];
        NodeIdentity nodes[5];
        bool done[5] = {};
        unsigned steps = 0, conflicts = 0;
        if (extra)
                add_volume(vols, &n, "vol-main-d", "z1", "k8s.io/etcd/main", "d/a,b,c,d", NULL);

        for (unsigned k = 0; k < n_nodes; k++) {
                snprintf(names[k], sizeof(names[k]), "n%u", k);
                nodes[k] = node(names[k]);
        }
        for (unsigned left = n_nodes; left > 0 && steps < 1000; steps++) {
                unsigned k = next_random(&seed) % n_nodes;
                if (done[k])
                        continue;
                /* what k observes: the volumes it holds are ready (the rest of the chain is local) */
                VolumeObserved obs[16] = {};
                for (size_t i = 0; i < n; i++)
                        if (vols[i].attachment.node && strcmp(vols[i].attachment.node, names[k]) == 0)
                                obs[i] =
                                    (VolumeObserved){ .device_present = true, .mount = MOUNT_STATE_OURS };
                VolumesInput in = { .cluster = "demo",
                                    .etcd_clusters = clusters,
                                    .node = &nodes[k],
                                    .volumes = vols,
                                    .n_volumes = n,
                                    .observed = obs };
                VolumesPlan p;
                assert_int_equal(volumes_plan(&in, &p), 0);
                /* a stale view: another node may have claimed in between planning and claiming */
                size_t claim = SIZE_MAX;
                for (size_t a = 0; a < p.n_actions; a++)
                        if (p.actions[a].type == ACTION_CLAIM) {
                                claim = p.actions[a].volume;
                                break;
                        }
                if (claim == SIZE_MAX) {
                        for (size_t s = 0; s < p.n_selections; s++)
                                assert_true(p.selections[s].state == SELECTION_READY ||
                                            p.selections[s].state == SELECTION_WAITING);
                        done[k] = true;
                        left--;
                } else if (next_random(&seed) % 3 == 0) {
                        /* lose the race: someone else takes it (if any node still can) */
                        unsigned other = (k + 1 + next_random(&seed) % (n_nodes - 1 ?: 1)) % n_nodes;
                        bool other_has = false;
                        for (size_t i = 0; i < n; i++)
                                if (vols[i].attachment.node &&
                                    strcmp(vols[i].attachment.node, names[other]) == 0 &&
                                    strcmp(p.eligibility[i].etcd.cluster ?: "",
                                           p.eligibility[claim].etcd.cluster) == 0)
                                        other_has = true;
                        if (other != k && !other_has && !done[other]) {
                                vols[claim].attachment.node = strdup(names[other]);
                                conflicts++;
                        }
                } else if (!vols[claim].attachment.node)
                        vols[claim].attachment.node = strdup(names[k]); /* compare-and-set won */
                volumes_plan_done(&p);
        }
        assert_true(steps < 1000);
        /* invariants */
        unsigned held_main = 0, held_events = 0, free_main = 0, free_events = 0;
        for (unsigned k = 0; k < n_nodes; k++) {
                unsigned m = 0, e = 0;
                for (size_t i = 0; i < n; i++) {
                        if (!vols[i].attachment.node || strcmp(vols[i].attachment.node, names[k]) != 0)
                                continue;
                        if (strstr(vols[i].id, "main"))
                                m++;
                        else
                                e++;
                }
                assert_true(m <= 1);
                assert_true(e <= 1);
        }
        for (size_t i = 0; i < n; i++) {
                bool main = strstr(vols[i].id, "main") != NULL;
                if (vols[i].attachment.node)
                        main ? held_main++ : held_events++;
                else
                        main ? free_main++ : free_events++;
        }
        /* every holdable volume is held: either none is free or every node holds one of that cluster */
        assert_true(free_main == 0 || held_main == n_nodes);
        assert_true(free_events == 0 || held_events == n_nodes);
        (void)conflicts;
        free_volumes(vols, n);
}

/* The review's reproduction: vol-a1 (member a, held by X), a free vol-a2 naming member a too, vol-b and
 * vol-c. Y must claim vol-b: a member is held by one node only. */
static void test_member_held_elsewhere(void **state) {
        Volume vols[8];
        size_t n = 0;
        add_volume(vols, &n, "vol-a1", "z1", "k8s.io/etcd/main", "a/a,b,c", "X");
        add_volume(vols, &n, "vol-a2", "z1", "k8s.io/etcd/main", "a/a,b,c", NULL);
        add_volume(vols, &n, "vol-b", "z1", "k8s.io/etcd/main", "b/a,b,c", NULL);
        add_volume(vols, &n, "vol-c", "z1", "k8s.io/etcd/main", "c/a,b,c", NULL);
        NodeIdentity me = node("Y");
        char *main_only[] = { (char *)"main", NULL };
        VolumesInput in = {
                .cluster = "demo", .etcd_clusters = main_only, .node = &me, .volumes = vols, .n_volumes = n
        };
        VolumesPlan p;
        assert_int_equal(volumes_plan(&in, &p), 0);
        assert_actions(&p, vols, "claim:vol-b wait-device:vol-b fsck:vol-b mount:vol-b");
        assert_false(p.eligibility[1].eligible);
        assert_string_equal(p.eligibility[1].held_through, "vol-a1");
        assert_string_equal(p.eligibility[1].reason,
                            "etcd cluster 'main' member 'a' is held by node 'X' through volume 'vol-a1'");
        assert_true(p.eligibility[0].eligible); /* the holder stays */
        volumes_plan_done(&p);

        /* even when the impostor sorts first and lives in another zone */
        free(vols[1].zone);
        vols[1].zone = strdup("z2");
        free(vols[1].id);
        vols[1].id = strdup("vol-a0");
        assert_int_equal(volumes_plan(&in, &p), 0);
        assert_actions(&p, vols, "claim:vol-b wait-device:vol-b fsck:vol-b mount:vol-b");
        volumes_plan_done(&p);
        free_volumes(vols, n);
}

/* Two free volumes of one member: the one that may hold data goes first, and neither may be formatted
 * while the other may hold data; two provably blank ones may. */
static void test_member_siblings(void **state) {
        Volume vols[4];
        size_t n = 0;
        add_volume(vols, &n, "vol-a1", "z1", "k8s.io/etcd/main", "a/a,b,c", NULL);
        add_volume(vols, &n, "vol-a2", "z1", "k8s.io/etcd/main", "a/a,b,c", NULL);
        vols[0].content = VOLUME_CONTENT_BLANK;
        vols[1].content = VOLUME_CONTENT_DATA;
        NodeIdentity me = node("Y");
        char *main_only[] = { (char *)"main", NULL };
        VolumesInput in = {
                .cluster = "demo", .etcd_clusters = main_only, .node = &me, .volumes = vols, .n_volumes = n
        };
        VolumesPlan p;
        assert_int_equal(volumes_plan(&in, &p), 0);
        assert_actions(&p, vols, "claim:vol-a2 wait-device:vol-a2 fsck:vol-a2 mount:vol-a2");
        assert_null(p.selections[0].format_blocked_by); /* its sibling is provably blank */
        volumes_plan_done(&p);

        vols[1].content = VOLUME_CONTENT_UNKNOWN;
        assert_int_equal(volumes_plan(&in, &p), 0);
        assert_actions(&p, vols, "claim:vol-a2 wait-device:vol-a2 fsck:vol-a2 mount:vol-a2");
        volumes_plan_done(&p);

        /* both unknown: by id, and the chosen one may not be formatted */
        vols[0].content = VOLUME_CONTENT_UNKNOWN;
        assert_int_equal(volumes_plan(&in, &p), 0);
        assert_actions(&p, vols, "claim:vol-a1 wait-device:vol-a1 fsck:vol-a1 mount:vol-a1");
        assert_string_equal(p.selections[0].format_blocked_by, "vol-a2");
        volumes_plan_done(&p);

        /* this node holds the blank one, the other may hold data: still never formatted */
        vols[0].content = VOLUME_CONTENT_BLANK;
        vols[0].attachment.node = strdup("Y");
        assert_int_equal(volumes_plan(&in, &p), 0);
        assert_string_equal(p.selections[0].format_blocked_by, "vol-a2");
        volumes_plan_done(&p);
        free_volumes(vols, n);
}

/* Two claims of one member raced: the first claim keeps it (attachment time, not id); the other node
 * gives its volume back when nothing is mounted, and stops with an error when it is. */
static void test_member_claims_raced(void **state) {
        Volume vols[4];
        size_t n = 0;
        add_volume(vols, &n, "vol-a1", "z1", "k8s.io/etcd/main", "a/a,b,c", "Y");
        add_volume(vols, &n, "vol-a2", "z1", "k8s.io/etcd/main", "a/a,b,c", "X");
        add_volume(vols, &n, "vol-b", "z1", "k8s.io/etcd/main", "b/a,b,c", NULL);
        vols[0].attachment.since = 2000;
        vols[1].attachment.since = 1000; /* X claimed first, though its id sorts last */
        VolumeObserved obs[4] = {};
        NodeIdentity me = node("Y");
        char *main_only[] = { (char *)"main", NULL };
        VolumesInput in = { .cluster = "demo",
                            .etcd_clusters = main_only,
                            .node = &me,
                            .volumes = vols,
                            .n_volumes = n,
                            .observed = obs };
        VolumesPlan p;
        assert_int_equal(volumes_plan(&in, &p), 0);
        assert_actions(&p, vols, "release:vol-a1 claim:vol-b wait-device:vol-b fsck:vol-b mount:vol-b");
        assert_string_equal(p.eligibility[0].held_through, "vol-a2");
        volumes_plan_done(&p);

        obs[0] = (VolumeObserved){ .device_present = true, .mount = MOUNT_STATE_OURS };
        assert_int_equal(volumes_plan(&in, &p), 0);
        assert_actions(&p, vols, "");
        assert_int_equal(p.selections[0].state, SELECTION_ERROR);
        assert_non_null(strstr(p.selections[0].note, "holds volume 'vol-a1' mounted"));
        volumes_plan_done(&p);

        /* X's own view: it keeps vol-a2 */
        NodeIdentity x = node("X");
        in.node = &x;
        obs[0] = (VolumeObserved){};
        obs[1] = (VolumeObserved){ .device_present = true, .mount = MOUNT_STATE_OURS };
        assert_int_equal(volumes_plan(&in, &p), 0);
        assert_int_equal(p.selections[0].state, SELECTION_READY);
        assert_int_equal(p.selections[0].volume, 1);
        volumes_plan_done(&p);
        free_volumes(vols, n);
}

static void test_race_simulation(void **state) {
        for (uint32_t seed = 1; seed <= 300; seed++)
                simulate_race(3 + seed % 3, seed % 2, seed * 2654435761u);
}

/* Another machine holds main-a under this node's name: no claim at all, an error naming both machines;
 * a name-only record (written before machine ids) still counts as this node's. */
static void test_same_name_other_machine(void **state) {
        Volume vols[8];
        size_t n = standard_pool(vols);
        char m1[] = "11111111111111111111111111111111", m2[] = "22222222222222222222222222222222";
        NodeIdentity me = { .name = (char *)"n1", .machine_id = m2, .zone = (char *)"z1" };
        size_t a = find(vols, n, "vol-main-a"), ev = find(vols, n, "vol-ev-a");
        vols[a].attachment.node = strdup("n1");
        vols[a].attachment.machine_id = strdup(m1);
        vols[ev].attachment.node = strdup("n1");
        VolumesInput in = { .cluster = "demo",
                            .etcd_clusters = clusters,
                            .node = &me,
                            .volumes = vols,
                            .n_volumes = n,
                            .manifests = true };
        VolumesPlan p;
        assert_int_equal(volumes_plan(&in, &p), 0);
        assert_int_equal(p.selections[0].state, SELECTION_ERROR);
        assert_int_equal(p.selections[0].volume, a);
        assert_non_null(strstr(p.selections[0].note, m1));
        assert_non_null(strstr(p.selections[0].note, m2));
        assert_non_null(strstr(p.selections[0].note, "'n1'"));
        /* events-a has no machine id: name-only, this node's; no claim of main-b either */
        assert_int_equal(p.selections[1].volume, ev);
        assert_actions(&p, vols,
                       "attach:vol-ev-a wait-device:vol-ev-a fsck:vol-ev-a mount:vol-ev-a "
                       "write-manifest:vol-ev-a link-manifest:vol-ev-a");
        assert_false(volumes_plan_converged(&p));
        volumes_plan_done(&p);
        free_volumes(vols, n);
}

/* A damaged record is never eligible, whoever it names; one that reads as this node's stops the claim of
 * another member of its etcd cluster (the node may hold it), not of the other etcd clusters. */
static void test_damaged_never_used(void **state) {
        Volume vols[8];
        size_t n = standard_pool(vols);
        NodeIdentity me = node("n1");
        size_t a = find(vols, n, "vol-main-a");
        vols[a].damaged = strdup("'internalIPs' holds something that is not an IP address");
        vols[a].attachment.node = strdup("n1");
        VolumesInput in = {
                .cluster = "demo", .etcd_clusters = clusters, .node = &me, .volumes = vols, .n_volumes = n
        };
        VolumesPlan p;
        assert_int_equal(volumes_plan(&in, &p), 0);
        assert_false(p.eligibility[a].eligible);
        assert_non_null(strstr(p.eligibility[a].reason, "damaged record"));
        assert_int_equal(p.selections[0].state, SELECTION_ERROR);
        assert_non_null(strstr(p.selections[0].note, "damaged record"));
        assert_actions(&p, vols, "claim:vol-ev-a wait-device:vol-ev-a fsck:vol-ev-a mount:vol-ev-a");
        volumes_plan_done(&p);
        /* another node's damaged record: this node goes on with the next free member */
        free(vols[a].attachment.node);
        vols[a].attachment.node = strdup("n2");
        assert_int_equal(volumes_plan(&in, &p), 0);
        assert_string_equal(vols[p.selections[0].volume].id, "vol-main-b");
        volumes_plan_done(&p);
        free_volumes(vols, n);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_same_name_other_machine),
                cmocka_unit_test(test_damaged_never_used),
                cmocka_unit_test(test_fresh_node),
                cmocka_unit_test(test_converged_and_partial),
                cmocka_unit_test(test_waiting_and_others),
                cmocka_unit_test(test_holds_two),
                cmocka_unit_test(test_deterministic),
                cmocka_unit_test(test_race_simulation),
                cmocka_unit_test(test_member_held_elsewhere),
                cmocka_unit_test(test_member_siblings),
                cmocka_unit_test(test_member_claims_raced),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
