/* SPDX-License-Identifier: Apache-2.0 */
/* The `aws` volume provider against the AWS double: identity from IMDS or the configuration, listing with
 * server-side filters over many pages, holders' IPs in one batched DescribeInstances, root volumes skipped,
 * attach (device choice, idempotence, never stealing), detach, resolve by the by-id link, and the messages
 * of failures. */
#include "unit-test.h"

#include <stdlib.h>
#include <sys/stat.h>

#include "aws-double.h"
#include "basic/errors.h"
#include "basic/strv.h"
#include "cloud/provider-aws.h"
#include "cloud/providers.h"
#include "cloud/volume.h"

#define CLUSTER "c1.k8s.test"
#define OTHER   "i-0other"
#define N_GEN   1200

static const char config[] =
    "{\"instances\": {\"" OTHER "\": {\"az\": \"us-east-1a\", \"private_ip\": \"10.0.0.9\","
    "   \"tags\": {\"KubernetesCluster\": \"" CLUSTER "\"}},"
    "  \"i-0gone\": {\"az\": \"us-east-1a\", \"private_ip\": \"10.0.0.10\", \"state\": \"terminated\","
    "   \"tags\": {\"KubernetesCluster\": \"" CLUSTER "\"}},"
    "  \"i-0nodns\": {\"az\": \"us-east-1a\", \"private_ip\": \"10.0.0.11\", \"private_dns\": \"\","
    "   \"tags\": {\"KubernetesCluster\": \"" CLUSTER "\"}},"
    "  \"i-0else\": {\"az\": \"us-east-1a\", \"private_ip\": \"10.0.0.12\","
    "   \"tags\": {\"KubernetesCluster\": \"else.k8s.test\"}}},"
    " \"volumes\": ["
    "  {\"id\": \"vol-0a1\", \"tags\": {\"KubernetesCluster\": \"" CLUSTER
    "\", \"k8s.io/etcd/main\": \"a/a\"}},"
    "  {\"id\": \"vol-0a2\", \"size\": 20, \"tags\": {\"KubernetesCluster\": \"" CLUSTER "\"}},"
    "  {\"id\": \"vol-0held\", \"tags\": {\"KubernetesCluster\": \"" CLUSTER "\"},"
    "   \"attached_to\": {\"instance\": \"" OTHER "\", \"device\": \"/dev/xvdf\"}},"
    "  {\"id\": \"vol-0root\", \"tags\": {\"KubernetesCluster\": \"" CLUSTER "\"},"
    "   \"attached_to\": {\"instance\": \"" AWS_DOUBLE_SELF_ID "\", \"device\": \"/dev/xvda\"}},"
    "  {\"id\": \"vol-0zoneb\", \"az\": \"us-east-1b\", \"tags\": {\"KubernetesCluster\": \"" CLUSTER "\"}},"
    "  {\"id\": \"vol-0else\", \"tags\": {\"KubernetesCluster\": \"else.k8s.test\"}}],"
    " \"generate_volumes\": {\"count\": 1200, \"tags\": {\"KubernetesCluster\": \"" CLUSTER "\"}}}";

static int setup(void **state) {
        aws_double_start(state);
        aws_double_post("/_double/config", config);
        return 0;
}

static VolumeProvider *provider_open(const VolumeProviderConfig *cfg) {
        _cleanup_free_ char *err = NULL;
        VolumeProviderConfig empty = {};
        VolumeProvider *p = NULL;
        int r = volume_provider_open("aws", cfg ?: &empty, &p, &err);
        if (r < 0)
                fail_msg("open: %s: %s", pk_strerror(r), strna(strna(err)));
        return p;
}

static size_t log_count(const char *action) {
        json_t *log = aws_double_get("log"), *e;
        size_t i, n = 0;
        json_array_foreach(log, i,
                           e) if (streq(json_string_value(json_object_get(e, "action")) ?: "", action)) n++;
        json_decref(log);
        return n;
}

/* The instance holding a volume in the double, or NULL. Caller frees. */
static char *double_holder(const char *vid) {
        json_t *st = aws_double_get("state");
        json_t *a = json_object_get(json_object_get(json_object_get(st, "volumes"), vid), "attachment");
        const char *i = json_string_value(json_object_get(a, "instance"));
        const char *s = json_string_value(json_object_get(a, "state"));
        char *r = i ? strjoin(i, "@", json_string_value(json_object_get(a, "device")) ?: "?", "/", s ?: "?")
                    : NULL;
        json_decref(st);
        return r;
}

static void test_identity_from_imds(void **state) {
        _cleanup_free_ char *err = NULL;
        _cleanup_(volume_provider_freep) VolumeProvider *p = provider_open(NULL);
        NodeIdentity n = {};
        assert_int_equal(p->vtable->node_identity(p->state, &n, &err), 0);
        assert_string_equal(n.name, AWS_DOUBLE_SELF_ID);
        assert_string_equal(n.zone, "us-east-1a");
        assert_int_equal(strv_length(n.internal_ips), 1);
        assert_string_equal(n.internal_ips[0], "10.0.0.5");
        assert_int_equal(strv_length(n.external_ips), 1);
        assert_string_equal(n.external_ips[0], "54.0.0.5");
        node_identity_done(&n);
}

static void test_identity_from_config(void **state) {
        _cleanup_free_ char *err = NULL;
        setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
        VolumeProviderConfig cfg = {
                .node_name = OTHER, .zone = "us-east-1a", .internal_ip = "10.9.9.9", .external_ip = "1.2.3.4"
        };
        _cleanup_(volume_provider_freep) VolumeProvider *p = provider_open(&cfg);
        NodeIdentity n = {};
        assert_int_equal(p->vtable->node_identity(p->state, &n, &err), 0);
        assert_string_equal(n.name, OTHER);
        assert_string_equal(n.internal_ips[0], "10.9.9.9");
        assert_string_equal(n.external_ips[0], "1.2.3.4");
        node_identity_done(&n);
        /* a name that is no instance id, and metadata needed but disabled */
        VolumeProvider *bad = NULL;
        cfg.node_name = "master-1";
        assert_int_equal(volume_provider_open("aws", &cfg, &bad, &err), -EINVAL);
        assert_non_null(strstr(strna(err), "not an EC2 instance id"));
        cfg.node_name = NULL;
        assert_true(volume_provider_open("aws", &cfg, &bad, &err) < 0);
        assert_non_null(strstr(strna(err), "AWS_EC2_METADATA_DISABLED"));
        unsetenv("AWS_EC2_METADATA_DISABLED");
}

static const Volume *find(const VolumeList *l, const char *id) {
        for (size_t i = 0; i < l->n; i++)
                if (streq(l->items[i].id, id))
                        return &l->items[i];
        return NULL;
}

static void test_list_filters_pages_and_holders(void **state) {
        _cleanup_free_ char *err = NULL;
        _cleanup_(volume_provider_freep) VolumeProvider *p = provider_open(NULL);
        VolumeList l = {};
        assert_int_equal(p->vtable->list_volumes(p->state, CLUSTER, "us-east-1a", &l, &err), 0);
        /* generated + a1, a2, held; the root volume skipped, other zone and other cluster filtered */
        assert_int_equal(l.n, N_GEN + 3);
        assert_null(find(&l, "vol-0root"));
        assert_null(find(&l, "vol-0zoneb"));
        assert_null(find(&l, "vol-0else"));
        const Volume *a1 = find(&l, "vol-0a1"), *a2 = find(&l, "vol-0a2"), *held = find(&l, "vol-0held");
        assert_non_null(a1);
        assert_non_null(a2);
        assert_non_null(held);
        assert_string_equal(volume_tag(a1, "k8s.io/etcd/main"), "a/a");
        assert_string_equal(a1->zone, "us-east-1a");
        assert_null(a1->attachment.node);
        assert_true(a2->size == UINT64_C(20) << 30);
        assert_string_equal(held->attachment.node, OTHER);
        assert_string_equal(held->attachment.device, "/dev/xvdf");
        assert_int_equal(strv_length(held->attachment.internal_ips), 1);
        assert_string_equal(held->attachment.internal_ips[0], "10.0.0.9");
        assert_int_equal(strv_length(held->attachment.external_ips), 0);
        volume_list_done(&l);
        /* the holders' instances came in one call, the volumes over several pages */
        assert_int_equal(log_count("DescribeInstances"), 1);
        assert_true(log_count("DescribeVolumes") >= 3);

        assert_int_equal(p->vtable->list_volumes(p->state, CLUSTER, NULL, &l, &err), 0);
        assert_int_equal(l.n, N_GEN + 4);
        volume_list_done(&l);
}

/* The cluster's machines for the approver: its instances that are not terminated, each with its private
 * DNS name (the node name a kops node registers as); another cluster's, a terminated one and one without
 * a DNS name are not among them. The filters are EC2's, server-side. */
static void test_machines(void **state) {
        _cleanup_free_ char *err = NULL;
        _cleanup_(volume_provider_freep) VolumeProvider *p = provider_open(NULL);
        CloudMachine *m = NULL;
        size_t n = 0;
        assert_int_equal(volume_provider_list_machines(p, CLUSTER, &m, &n, &err), 0);
        assert_int_equal(n, 1);
        assert_string_equal(m[0].id, OTHER);
        assert_string_equal(m[0].node_name, "ip-10-0-0-9.ec2.internal");
        cloud_machines_free(m, n);
        /* the local provider lists none: the rule is left out there */
        VolumeProvider *local = NULL;
        assert_int_equal(volume_provider_new(&(VolumeProviderVTable){ .name = "t" }, NULL, &local), 0);
        assert_int_equal(volume_provider_list_machines(local, CLUSTER, &m, &n, &err), -EOPNOTSUPP);
        volume_provider_free(local);
}

static void test_attach_detach(void **state) {
        _cleanup_free_ char *err = NULL;
        _cleanup_(volume_provider_freep) VolumeProvider *p = provider_open(NULL);
        NodeIdentity me = {}, other = { .name = (char *)OTHER };
        _cleanup_free_ char *h1 = NULL, *h2 = NULL, *h3 = NULL;
        assert_int_equal(p->vtable->node_identity(p->state, &me, &err), 0);

        /* EC2 reports "attaching" for 3 polls first */
        aws_double_post("/_double/config", "{\"faults\": {\"attach_stuck_polls\": 3}}");
        assert_int_equal(p->vtable->attach(p->state, "vol-0a1", &me, &err), 0);
        h1 = double_holder("vol-0a1");
        assert_string_equal(h1, AWS_DOUBLE_SELF_ID "@/dev/xvdf/attached");
        aws_double_post("/_double/config", "{\"faults\": {\"attach_stuck_polls\": 0}}");
        assert_int_equal(p->vtable->attach(p->state, "vol-0a2", &me, &err), 0);
        h2 = double_holder("vol-0a2");
        assert_string_equal(h2, AWS_DOUBLE_SELF_ID "@/dev/xvdg/attached");
        /* idempotent: no second AttachVolume */
        size_t n = log_count("AttachVolume");
        assert_int_equal(p->vtable->attach(p->state, "vol-0a1", &me, &err), 0);
        assert_int_equal(log_count("AttachVolume"), n);

        /* never stolen; only to this instance */
        assert_int_equal(p->vtable->attach(p->state, "vol-0held", &me, &err), PK_ECONFLICT);
        assert_non_null(strstr(strna(err), OTHER));
        assert_int_equal(log_count("AttachVolume"), n);
        assert_int_equal(p->vtable->attach(p->state, "vol-0a2", &other, &err), -EINVAL);
        assert_int_equal(p->vtable->attach(p->state, "vol-0zoneb", &me, &err), -EINVAL);
        assert_non_null(strstr(strna(err), "us-east-1b"));
        assert_int_equal(p->vtable->attach(p->state, "vol-0nope", &me, &err), PK_ECLOUD);
        assert_non_null(strstr(strna(err), "InvalidVolume.NotFound"));

        /* detach: compare-and-set on the holder */
        assert_int_equal(p->vtable->detach(p->state, "vol-0a1", OTHER, &err), PK_ECONFLICT);
        assert_int_equal(p->vtable->detach(p->state, "vol-0a1", me.name, &err), 0);
        assert_null(double_holder("vol-0a1"));
        assert_int_equal(p->vtable->detach(p->state, "vol-0a1", NULL, &err), 0);
        assert_int_equal(p->vtable->detach(p->state, "vol-0held", NULL, &err), 0);
        assert_null(double_holder("vol-0held"));
        /* xvdf is free again */
        assert_int_equal(p->vtable->attach(p->state, "vol-0held", &me, &err), 0);
        h3 = double_holder("vol-0held");
        assert_string_equal(h3, AWS_DOUBLE_SELF_ID "@/dev/xvdf/attached");
        node_identity_done(&me);
}

/* A block device node to point the by-id link at: any will do, the provider compares device numbers. */
static const char *some_block_device(struct stat *st) {
        static const char *const candidates[] = { "/dev/loop0", "/dev/loop1",   "/dev/sda",
                                                  "/dev/vda",   "/dev/nvme0n1", "/dev/xvda" };
        for (size_t i = 0; i < ELEMENTSOF(candidates); i++)
                if (stat(candidates[i], st) == 0 && S_ISBLK(st->st_mode))
                        return candidates[i];
        return NULL;
}

static void test_resolve_by_id(void **state) {
        _cleanup_free_ char *err = NULL;
        _cleanup_(volume_provider_freep) VolumeProvider *p = provider_open(NULL);
        _cleanup_free_ char *dir = strjoin(aws_double.dir, "/by-id"), *path = NULL;
        _cleanup_free_ char *link = strjoin(dir, "/nvme-Amazon_Elastic_Block_Store_vol0a1");
        struct stat st;
        dev_t devnum = 0;
        assert_int_equal(mkdir(dir, 0755), 0);
        setenv(AWS_BYID_DIR_ENV, dir, 1);
        assert_int_equal(p->vtable->resolve_device(p->state, "vol-0a1", &path, &devnum, &err), 0);
        assert_int_equal(p->vtable->resolve_device(p->state, "not-a-volume", &path, &devnum, &err), -EINVAL);
        const char *dev = some_block_device(&st);
        if (dev) {
                assert_int_equal(symlink(dev, link), 0);
                assert_int_equal(p->vtable->resolve_device(p->state, "vol-0a1", &path, &devnum, &err), 1);
                assert_true(devnum == st.st_rdev);
                assert_non_null(path);
                assert_int_equal(unlink(link), 0);
        } else
                print_message("no block device node to link to; by-id hit not checked\n");
        /* a link to something that is no block device is not the volume */
        assert_int_equal(symlink("/dev/null", link), 0);
        assert_int_equal(p->vtable->resolve_device(p->state, "vol-0a1", &path, &devnum, &err), 0);
        assert_int_equal(unlink(link), 0);
        assert_int_equal(rmdir(dir), 0);
        unsetenv(AWS_BYID_DIR_ENV);
}

static void test_wrong_secret_message(void **state) {
        _cleanup_free_ char *err = NULL;
        setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret-0123456789abcdef", 1);
        _cleanup_(volume_provider_freep) VolumeProvider *p = provider_open(NULL);
        VolumeList l = {};
        assert_int_equal(p->vtable->list_volumes(p->state, CLUSTER, NULL, &l, &err), PK_ECLOUD);
        const char *m = err;
        print_message("error: %s\n", m);
        assert_non_null(strstr(m, "ec2 DescribeVolumes: SignatureDoesNotMatch"));
        assert_null(strstr(m, "wrong-secret"));
        assert_null(strstr(m, AWS_DOUBLE_SECRET));
        setenv("AWS_SECRET_ACCESS_KEY", AWS_DOUBLE_SECRET, 1);
}

static void test_throttled_list(void **state) {
        _cleanup_free_ char *err = NULL;
        _cleanup_(volume_provider_freep) VolumeProvider *p = provider_open(NULL);
        VolumeList l = {};
        aws_double_post("/_double/config", "{\"faults\": {\"throttle\": 3, \"error500\": 1}}");
        assert_int_equal(p->vtable->list_volumes(p->state, CLUSTER, "us-east-1a", &l, &err), 0);
        assert_int_equal(l.n, N_GEN + 3);
        volume_list_done(&l);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_identity_from_imds, setup, aws_double_stop),
                cmocka_unit_test_setup_teardown(test_identity_from_config, setup, aws_double_stop),
                cmocka_unit_test_setup_teardown(test_list_filters_pages_and_holders, setup, aws_double_stop),
                cmocka_unit_test_setup_teardown(test_machines, setup, aws_double_stop),
                cmocka_unit_test_setup_teardown(test_attach_detach, setup, aws_double_stop),
                cmocka_unit_test_setup_teardown(test_resolve_by_id, setup, aws_double_stop),
                cmocka_unit_test_setup_teardown(test_wrong_secret_message, setup, aws_double_stop),
                cmocka_unit_test_setup_teardown(test_throttled_list, setup, aws_double_stop),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
