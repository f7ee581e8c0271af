/* SPDX-License-Identifier: Apache-2.0 */
/* The `gce` volume provider against the Google Cloud double: identity from the metadata server or the
 * configuration, kops' labels turned into the volume tags (a label that does not decode: a damaged disk,
 * listed and never used), the holders' addresses, the cluster's machines in every zone, attach as a
 * compare-and-set (never taking a disk attached elsewhere), detach, and the device by its google-* link. */
#include "unit-test.h"

#include <stdlib.h>
#include <sys/stat.h>

#include "basic/errors.h"
#include "basic/strv.h"
#include "cloud/provider-gce.h"
#include "cloud/providers.h"
#include "cloud/volume-tags.h"
#include "cloud/volume.h"
#include "gce-double.h"

#define CLUSTER "c1.k8s.test"
#define SAFE    "c1-k8s-test"
#define LABELS(member)                                                                 \
        "{\"k8s-io-cluster-name\": \"" SAFE "\", \"k8s-io-role-master\": \"master\", " \
        "\"k8s-io-etcd-main\": \"" member "-2fa-2cb-2cc\"}"

static const char config[] =
    "{\"instances\": {"
    "   \"master-b\": {\"zone\": \"europe-west1-b\", \"internal_ip\": \"10.0.0.9\", \"external_ip\": "
    "\"35.0.0.9\","
    "     \"labels\": {\"k8s-io-cluster-name\": \"" SAFE "\"}},"
    "   \"master-c\": {\"zone\": \"europe-west1-c\", \"internal_ip\": \"10.0.1.9\","
    "     \"labels\": {\"k8s-io-cluster-name\": \"" SAFE "\"}},"
    "   \"other-x\": {\"zone\": \"europe-west1-b\", \"labels\": {\"k8s-io-cluster-name\": \"else\"}}},"
    " \"disks\": {"
    "   \"a-etcd-main\": {\"zone\": \"europe-west1-b\", \"size_gb\": 20, \"labels\": " LABELS(
        "a") "},"
             "   \"b-etcd-main\": {\"zone\": \"europe-west1-b\", \"labels\": " LABELS(
                 "b") ", \"users\": [\"master-b\"]},"
                      "   \"c-etcd-main\": {\"zone\": \"europe-west1-c\", \"labels\": " LABELS(
                          "c") "},"
                               "   \"bad-label\": {\"zone\": \"europe-west1-b\", \"labels\": "
                               "{\"k8s-io-cluster-name\": \"" SAFE "\","
                               "     \"k8s-io-role-master\": \"master\", \"k8s-io-etcd-main\": \"a-zz\"}},"
                               "   \"not-ours\": {\"zone\": \"europe-west1-b\", \"labels\": "
                               "{\"k8s-io-cluster-name\": \"else\"}}},"
                               " \"page_size\": 2}";

static int setup(void **state) {
        gce_double_start(state);
        gce_double_post("/_double/config", config);
        return 0;
}

static VolumeProvider *open_gce(const VolumeProviderConfig *cfg) {
        VolumeProvider *p = NULL;
        _cleanup_free_ char *err = NULL;
        int r = volume_provider_open("gce", cfg, &p, &err);
        if (r < 0)
                fail_msg("open: %s", strna(err));
        return p;
}

static void test_identity(void **state) {
        VolumeProviderConfig cfg = {};
        NodeIdentity n = {};
        _cleanup_(volume_provider_freep) VolumeProvider *p = open_gce(&cfg);
        assert_int_equal(p->vtable->node_identity(p->state, &n, NULL), 0);
        assert_string_equal(n.name, GCE_DOUBLE_INSTANCE);
        assert_string_equal(n.zone, "europe-west1-b"); /* from "projects/N/zones/europe-west1-b" */
        assert_string_equal(n.internal_ips[0], "10.0.0.5");
        assert_null(n.external_ips[0]); /* 404 at the metadata server: none */
        node_identity_done(&n);

        /* a name that cannot be a GCE instance is refused by name */
        VolumeProviderConfig bad = { .node_name = "Master_A" };
        VolumeProvider *q = NULL;
        _cleanup_free_ char *err = NULL;
        assert_int_equal(volume_provider_open("gce", &bad, &q, &err), -EINVAL);
        assert_non_null(strstr(err, "'Master_A' is not a GCE instance name"));
}

static const Volume *find(const VolumeList *l, const char *id) {
        for (size_t i = 0; i < l->n; i++)
                if (streq(l->items[i].id, id))
                        return &l->items[i];
        return NULL;
}

static void test_list_labels_and_holders(void **state) {
        VolumeProviderConfig cfg = {};
        VolumeList l = {};
        _cleanup_free_ char *err = NULL;
        _cleanup_(volume_provider_freep) VolumeProvider *p = open_gce(&cfg);
        assert_int_equal(p->vtable->list_volumes(p->state, CLUSTER, NULL, &l, &err), 0);
        assert_int_equal(
            l.n, 4); /* a, b, c (another zone) and bad-label; not another cluster's, not boot disks */
        const Volume *a = find(&l, "a-etcd-main"), *b = find(&l, "b-etcd-main"),
                     *bad = find(&l, "bad-label");
        assert_non_null(a);
        assert_string_equal(volume_tag(a, VOLUME_TAG_CLUSTER), CLUSTER);
        assert_string_equal(volume_tag(a, VOLUME_TAG_ROLE_MASTER), "1");
        assert_string_equal(volume_tag(a, VOLUME_TAG_ETCD_PREFIX "main"), "a/a,b,c");
        assert_true(a->size == 20ULL << 30);
        assert_null(a->attachment.node);
        assert_string_equal(b->attachment.node, "master-b");
        assert_string_equal(b->attachment.internal_ips[0], "10.0.0.9");
        assert_string_equal(b->attachment.external_ips[0], "35.0.0.9");
        assert_non_null(find(&l, "c-etcd-main"));
        assert_non_null(bad->damaged);
        assert_non_null(strstr(bad->damaged, "k8s-io-etcd-main='a-zz' does not decode"));
        VolumeEligibility e = {};
        assert_int_equal(volume_classify(a, CLUSTER, "europe-west1-b", NULL, &e), 0);
        assert_true(e.eligible);
        volume_eligibility_done(&e);
        volume_list_done(&l);
}

static void test_machines(void **state) {
        VolumeProviderConfig cfg = {};
        CloudMachine *m = NULL;
        size_t n = 0;
        _cleanup_(volume_provider_freep) VolumeProvider *p = open_gce(&cfg);
        assert_int_equal(p->vtable->list_machines(p->state, CLUSTER, &m, &n, NULL), 0);
        assert_int_equal(n,
                         2); /* master-b and master-c, in two zones; not other-x, not master-a (no label) */
        _cleanup_strv_free_ char **names = NULL;
        for (size_t i = 0; i < n; i++)
                assert_int_equal(strv_extend(&names, m[i].node_name), 0);
        assert_true(strv_contains(names, "master-b") && strv_contains(names, "master-c"));
        cloud_machines_free(m, n);
}

static void test_attach_detach(void **state) {
        VolumeProviderConfig cfg = {};
        NodeIdentity me = {};
        _cleanup_free_ char *err = NULL, *path = NULL;
        dev_t dev;
        _cleanup_(volume_provider_freep) VolumeProvider *p = open_gce(&cfg);
        assert_int_equal(p->vtable->node_identity(p->state, &me, NULL), 0);
        assert_int_equal(p->vtable->attach(p->state, "a-etcd-main", &me, &err), 0);
        assert_int_equal(p->vtable->attach(p->state, "a-etcd-main", &me, &err), 0); /* idempotent */
        assert_int_equal(gce_double_counter("op_errors"), 0);
        /* no image behind it: attached, but no device (yet) */
        assert_int_equal(p->vtable->resolve_device(p->state, "a-etcd-main", &path, &dev, &err), 0);
        /* attached elsewhere: never taken */
        assert_int_equal(p->vtable->attach(p->state, "b-etcd-main", &me, &err), PK_ECONFLICT);
        assert_non_null(strstr(err, "'b-etcd-main' is attached to 'europe-west1-b/master-b'"));
        /* another zone's disk is not found from here */
        assert_int_equal(p->vtable->attach(p->state, "c-etcd-main", &me, &err), -ENOENT);
        assert_non_null(strstr(err, "no disk 'c-etcd-main' in zone 'europe-west1-b'"));
        /* detach: another node's claim is refused, ours goes */
        assert_int_equal(p->vtable->detach(p->state, "b-etcd-main", me.name, &err), PK_ECONFLICT);
        assert_int_equal(p->vtable->detach(p->state, "a-etcd-main", me.name, &err), 0);
        assert_int_equal(p->vtable->detach(p->state, "a-etcd-main", me.name, &err), 0); /* already free */
        node_identity_done(&me);
}

static void test_resolve_by_link(void **state) {
        char dir[] = "/tmp/pk-gcebyid-XXXXXX", dev_path[64];
        _cleanup_free_ char *err = NULL, *path = NULL;
        dev_t dev;
        assert_non_null(mkdtemp(dir));
        setenv(GCE_BYID_DIR_ENV, dir, 1);
        VolumeProviderConfig cfg = {};
        _cleanup_(volume_provider_freep) VolumeProvider *p = open_gce(&cfg);
        /* /dev/null is a character device: a link to it is no disk's */
        snprintf(dev_path, sizeof(dev_path), "%s/google-a-etcd-main", dir);
        assert_int_equal(symlink("/dev/null", dev_path), 0);
        assert_int_equal(p->vtable->resolve_device(p->state, "a-etcd-main", &path, &dev, &err), -ENODEV);
        assert_non_null(strstr(err, "is not a block device"));
        assert_int_equal(p->vtable->resolve_device(p->state, "../etc", &path, &dev, &err), -EINVAL);
        unlink(dev_path);
        rmdir(dir);
        unsetenv(GCE_BYID_DIR_ENV);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_identity, setup, gce_double_stop),
                cmocka_unit_test_setup_teardown(test_list_labels_and_holders, setup, gce_double_stop),
                cmocka_unit_test_setup_teardown(test_machines, setup, gce_double_stop),
                cmocka_unit_test_setup_teardown(test_attach_detach, setup, gce_double_stop),
                cmocka_unit_test_setup_teardown(test_resolve_by_link, setup, gce_double_stop),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
