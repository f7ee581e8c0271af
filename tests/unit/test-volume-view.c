/* SPDX-License-Identifier: Apache-2.0 */
/* volumes_list_view() and the observe step with the provider replaced by a table (a fake vtable). */
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/strv.h"
#include "unit-test.h"
#include "volumes/volumes.h"

typedef struct TableProvider {
        VolumeList volumes;
        unsigned attach_calls;
} TableProvider;

static void table_close(void *state) {
        TableProvider *t = state;
        volume_list_done(&t->volumes);
        free(t);
}

static int table_identity(void *state, NodeIdentity *ret, char **ret_error) {
        NodeIdentity n = { .name = (char *)"n1", .zone = (char *)"z1" };
        return node_identity_copy(&n, ret);
}

static int table_list(void *state, const char *cluster, const char *zone, VolumeList *ret,
                      char **ret_error) {
        TableProvider *t = state;
        VolumeList l = {};
        for (size_t i = 0; i < t->volumes.n; i++) {
                const Volume *v = &t->volumes.items[i];
                const char *c = volume_tag(v, "KubernetesCluster");
                if ((cluster && (!c || strcmp(c, cluster) != 0)) || (zone && strcmp(zone, v->zone) != 0))
                        continue;
                assert_int_equal(volume_list_append(&l, v), 0);
        }
        *ret = l;
        return 0;
}

static int table_attach(void *state, const char *id, const NodeIdentity *node, char **ret_error) {
        TableProvider *t = state;
        t->attach_calls++;
        return PK_ECONFLICT;
}

static int table_resolve(void *state, const char *id, char **ret_path, dev_t *ret_devnum, char **ret_error) {
        return 0; /* never a device: observe must cope */
}

static int table_detach(void *state, const char *id, const char *node, char **ret_error) {
        return 0;
}

static const VolumeProviderVTable table_vtable = {
        .name = "table",
        .close = table_close,
        .node_identity = table_identity,
        .list_volumes = table_list,
        .attach = table_attach,
        .resolve_device = table_resolve,
        .detach = table_detach,
};

static void add(TableProvider *t, const char *id, const char *zone, const char *cluster,
                const char *etcd_key, const char *etcd_value, const char *node, const char *ip) {
        Volume v = { .id = (char *)id, .zone = (char *)zone };
        char *ips[] = { (char *)ip, NULL };
        char *none[] = { NULL };
        Volume c;
        assert_int_equal(volume_copy(&v, &c), 0);
        assert_int_equal(volume_set_tag(&c, "KubernetesCluster", cluster), 0);
        assert_int_equal(volume_set_tag(&c, "k8s.io/role/master", "1"), 0);
        assert_int_equal(volume_set_tag(&c, etcd_key, etcd_value), 0);
        if (node) {
                c.attachment.node = strdup(node);
                strv_free(c.attachment.internal_ips);
                strv_free(c.attachment.external_ips);
                c.attachment.internal_ips = strv_copy(ip ? ips : none);
                c.attachment.external_ips = strv_copy(none);
        }
        assert_int_equal(volume_list_append(&t->volumes, &c), 0);
        volume_done(&c);
}

static VolumeProvider *make_provider(void) {
        TableProvider *t = calloc(1, sizeof(TableProvider));
        VolumeProvider *p = NULL;
        add(t, "m-a", "z1", "demo", "k8s.io/etcd/main", "a/a,b,c", "n2", "10.0.0.2");
        add(t, "m-b", "z2", "demo", "k8s.io/etcd/main", "b/a,b,c", "n1", "10.0.0.1");
        add(t, "m-c", "z1", "demo", "k8s.io/etcd/main", "c/a,b,c", NULL, NULL);
        add(t, "e-a", "z1", "demo", "k8s.io/etcd/events", "a/a,b,c", "n3", "10.0.0.3");
        add(t, "e-b", "z1", "demo", "k8s.io/etcd/events", "b/a", "n4", "10.0.0.4"); /* malformed */
        add(t, "x-a", "z1", "other", "k8s.io/etcd/main", "a/a", "n5", "10.0.0.5");  /* other cluster */
        assert_int_equal(volume_provider_new(&table_vtable, t, &p), 0);
        return p;
}

static void test_view(void **state) {
        VolumeProvider *p = make_provider();
        ClusterView *v = NULL;
        assert_int_equal(volumes_list_view(p, "demo", &v, NULL), 0);
        /* masters: holders of eligible etcd-main volumes, every zone, with the recorded IPs */
        assert_int_equal(v->n_masters, 2);
        assert_string_equal(v->masters[0].name, "n1");
        assert_string_equal(v->masters[0].internal_ips[0], "10.0.0.1");
        assert_string_equal(v->masters[1].name, "n2");
        /* members: every member the eligible volumes' tags name, held or not (unheld ones get a
         * placeholder record, docs/etcd-dns.md): events a (n3), b, c; main a (n2), b (n1), c. The
         * malformed volume (e-b) holds nothing. */
        assert_int_equal(v->n_members, 6);
        static const char *const want[6][3] = {
                { "events", "a", "n3" }, { "events", "b", NULL }, { "events", "c", NULL },
                { "main", "a", "n2" },   { "main", "b", "n1" },   { "main", "c", NULL },
        };
        for (size_t i = 0; i < 6; i++) {
                assert_string_equal(v->members[i].cluster, want[i][0]);
                assert_string_equal(v->members[i].member, want[i][1]);
                if (want[i][2])
                        assert_string_equal(v->members[i].node, want[i][2]);
                else
                        assert_null(v->members[i].node);
        }
        cluster_view_free(v);
        volume_provider_free(p);
}

static void test_observe_and_pass_with_table(void **state) {
        VolumeProvider *p = make_provider();
        char *clusters[] = { (char *)"main", (char *)"events", NULL };
        VolumesPassConfig cfg = { .cluster = "demo",
                                  .etcd_clusters = clusters,
                                  .mount_root = "/nonexistent-pk",
                                  .manifest_dir = "/nonexistent-pk-m",
                                  .device_timeout = 1000 };
        VolumesObservation o = {};
        assert_int_equal(volumes_observe(p, &cfg, &o, NULL), 0);
        assert_string_equal(o.node.name, "n1");
        assert_int_equal(o.volumes.n, 5); /* every zone of the cluster */
        VolumesInput in;
        VolumesPlan plan = {};
        volumes_input(&cfg, &o, &in);
        assert_int_equal(volumes_plan(&in, &plan), 0);
        /* n1 holds m-b but it is in z2: not eligible here; m-c is the free one in z1 */
        assert_string_equal(o.volumes.items[plan.selections[0].volume].id, "m-c");
        assert_int_equal(plan.selections[1].state, SELECTION_WAITING);
        volumes_plan_done(&plan);

        /* a claim that loses says so: the pass observes and plans again (tests/unit/test-pass.c) */
        VolumesApply *a = NULL;
        volumes_input(&cfg, &o, &in);
        assert_int_equal(volumes_plan(&in, &plan), 0);
        assert_int_equal(volumes_apply_new(p, &cfg, &in, &plan, &a), 0);
        assert_int_equal(volumes_apply_run(a, VOLUMES_PHASE_CLAIMS, NULL, NULL), 1);
        TableProvider *t = p->state;
        assert_int_equal(t->attach_calls, 1);
        volumes_apply_free(a);
        volumes_plan_done(&plan);
        volumes_observation_done(&o);
        volume_provider_free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_view),
                cmocka_unit_test(test_observe_and_pass_with_table),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
