/* SPDX-License-Identifier: Apache-2.0 */
/* The kops volume tags: k8s.io/etcd/<cluster>=<me>/<all>, and which volumes a node may use. */
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/strv.h"
#include "cloud/volume-tags.h"
#include "unit-test.h"

static void test_etcd_tag_ok(void **state) {
        EtcdTag t = {};
        char *err = NULL;
        assert_int_equal(etcd_tag_parse("k8s.io/etcd/main", "b/a,b,c", &t, &err), 0);
        assert_null(err);
        assert_string_equal(t.cluster, "main");
        assert_string_equal(t.member, "b");
        assert_int_equal(strv_length(t.members), 3);
        assert_string_equal(t.members[0], "a");
        assert_string_equal(t.members[2], "c");
        etcd_tag_done(&t);

        assert_int_equal(etcd_tag_parse("k8s.io/etcd/events", "us-east-1a/us-east-1a", &t, NULL), 0);
        assert_string_equal(t.member, "us-east-1a");
        assert_int_equal(strv_length(t.members), 1);
        etcd_tag_done(&t);
}

static void test_etcd_tag_malformed(void **state) {
        static const struct {
                const char *key, *value;
        } bad[] = {
                { "k8s.io/etcd/main", "a" },       /* no slash */
                { "k8s.io/etcd/main", "/a,b" },    /* empty me */
                { "k8s.io/etcd/main", "a/" },      /* empty list */
                { "k8s.io/etcd/main", "a/a,,b" },  /* empty member */
                { "k8s.io/etcd/main", "a/a,b," },  /* trailing comma */
                { "k8s.io/etcd/main", "d/a,b,c" }, /* me not a member */
                { "k8s.io/etcd/main", "a/a,b,a" }, /* duplicate */
                { "k8s.io/etcd/main", "a/b/a,b" }, /* two slashes */
                { "k8s.io/etcd/main", "A/A,B" },   /* not a DNS label */
                { "k8s.io/etcd/main", "a b/a b" }, /* space */
                { "k8s.io/etcd/main", "-a/-a" },   /* leading dash */
                { "k8s.io/etcd/", "a/a" },         /* no cluster */
                { "k8s.io/etcd/Main", "a/a" },     /* cluster not a label */
                { "k8s.io/etcd/main/x", "a/a" },   /* slash in cluster */
                { "k8s.io/etcdmain", "a/a" },      /* wrong prefix */
                { "k8s.io/etcd/main", NULL },
                { "k8s.io/etcd/main",
                  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/"
                  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" }, /* 64 chars */
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                EtcdTag t = {};
                char *err = NULL;
                int r = etcd_tag_parse(bad[i].key, bad[i].value, &t, &err);
                if (r != PK_EMALFORMED)
                        fail_msg("accepted '%s=%s'", bad[i].key, bad[i].value ?: "(null)");
                assert_non_null(err);
                assert_null(t.member);
                free(err);
        }
}

static void make_volume(Volume *v, const char *id, const char *zone, const char *const *tags) {
        *v = (Volume){ .id = strdup(id), .zone = strdup(zone), .tags = calloc(1, sizeof(char *)) };
        for (size_t i = 0; tags && tags[i]; i += 2)
                assert_int_equal(volume_set_tag(v, tags[i], tags[i + 1]), 0);
}

static void classify(const char *const *tags, const char *zone, bool want, const char *reason_part) {
        static char *clusters[] = { (char *)"main", (char *)"events", NULL };
        Volume v;
        VolumeEligibility e;
        make_volume(&v, "vol-1", zone, tags);
        assert_int_equal(volume_classify(&v, "demo", "z1", clusters, &e), 0);
        if (e.eligible != want)
                fail_msg("eligible=%d, wanted %d (%s)", e.eligible, want, e.reason ?: "");
        if (reason_part) {
                assert_non_null(e.reason);
                if (!strstr(e.reason, reason_part))
                        fail_msg("reason '%s' lacks '%s'", e.reason, reason_part);
        }
        volume_eligibility_done(&e);
        volume_done(&v);
}

static void test_classify(void **state) {
        const char *ok[] = { "KubernetesCluster", "demo", "k8s.io/role/master", "1", "k8s.io/etcd/main",
                             "a/a,b,c",           NULL };
        classify(ok, "z1", true, NULL);
        classify(ok, "z2", false, "zone 'z2'");
        const char *other[] = {
                "KubernetesCluster", "other", "k8s.io/role/master", "1", "k8s.io/etcd/main", "a/a", NULL
        };
        classify(other, "z1", false, "KubernetesCluster=demo");
        const char *nomaster[] = { "KubernetesCluster", "demo", "k8s.io/etcd/main", "a/a", NULL };
        classify(nomaster, "z1", false, "k8s.io/role/master");
        const char *noetcd[] = { "KubernetesCluster", "demo", "k8s.io/role/master", "1", NULL };
        classify(noetcd, "z1", false, "no k8s.io/etcd/");
        const char *two[] = { "KubernetesCluster",
                              "demo",
                              "k8s.io/role/master",
                              "1",
                              "k8s.io/etcd/main",
                              "a/a",
                              "k8s.io/etcd/events",
                              "a/a",
                              NULL };
        classify(two, "z1", false, "more than one");
        const char *bad[] = {
                "KubernetesCluster", "demo", "k8s.io/role/master", "1", "k8s.io/etcd/main", "x/a,b", NULL
        };
        classify(bad, "z1", false, "malformed tag 'k8s.io/etcd/main=x/a,b'");
        const char *unknown[] = {
                "KubernetesCluster", "demo", "k8s.io/role/master", "1", "k8s.io/etcd/cilium", "a/a", NULL
        };
        classify(unknown, "z1", false, "not in the spec");
}

static void test_malformed_flag(void **state) {
        const char *bad[] = {
                "KubernetesCluster", "demo", "k8s.io/role/master", "1", "k8s.io/etcd/main", "a/b", NULL
        };
        Volume v;
        VolumeEligibility e;
        make_volume(&v, "vol-9", "z1", bad);
        assert_int_equal(volume_classify(&v, "demo", "z1", NULL, &e), 0);
        assert_false(e.eligible);
        assert_true(e.malformed);
        volume_eligibility_done(&e);
        volume_done(&v);
}

static void tagged(Volume *v, const char *id, const char *etcd_value, const char *node, usec_t since,
                   VolumeContent content) {
        const char *tags[] = { "KubernetesCluster", "demo", "k8s.io/role/master", "1", "k8s.io/etcd/main",
                               etcd_value,          NULL };
        make_volume(v, id, "z1", tags);
        v->attachment.node = node ? strdup(node) : NULL;
        v->attachment.since = since;
        v->content = content;
}

/* Three volumes name member a, between volumes of b and c: the one claimed first (not the first by index)
 * holds it, the others learn of it; each learns of the first other volume of a that may hold data. */
static void test_resolve_members(void **state) {
        Volume v[6];
        VolumeEligibility e[6] = {};
        tagged(&v[0], "vol-a1", "a/a,b,c", "X", 3000, VOLUME_CONTENT_DATA);
        tagged(&v[1], "vol-b", "b/a,b,c", NULL, 0, VOLUME_CONTENT_BLANK);
        tagged(&v[2], "vol-a2", "a/a,b,c", "Y", 1000, VOLUME_CONTENT_BLANK);
        tagged(&v[3], "vol-c", "c/a,b,c", "Z", 500, VOLUME_CONTENT_DATA);
        tagged(&v[4], "vol-a3", "a/a,b,c", "W", 2000, VOLUME_CONTENT_UNKNOWN);
        tagged(&v[5], "vol-b2", "b/a,b,c", NULL, 0, VOLUME_CONTENT_BLANK);
        for (size_t i = 0; i < 6; i++)
                assert_int_equal(volume_classify(&v[i], "demo", "z1", NULL, &e[i]), 0);
        assert_int_equal(volume_resolve_members(v, 6, "demo", NULL, e), 0);

        assert_true(e[2].eligible); /* claimed first */
        assert_null(e[2].held_through);
        assert_string_equal(e[2].sibling_with_data, "vol-a1");
        for (size_t i = 0; i < 6; i += 4) {
                assert_false(e[i].eligible);
                assert_string_equal(e[i].held_through, "vol-a2");
                assert_string_equal(
                    e[i].reason,
                    "etcd cluster 'main' member 'a' is held by node 'Y' through volume 'vol-a2'");
        }
        assert_string_equal(e[0].sibling_with_data, "vol-a3"); /* the first other that may hold data */
        assert_string_equal(e[4].sibling_with_data, "vol-a1");
        /* two free blank volumes of b: both eligible, neither has a sibling with data */
        assert_true(e[1].eligible && e[5].eligible);
        assert_null(e[1].sibling_with_data);
        assert_null(e[5].sibling_with_data);
        assert_true(e[3].eligible);
        assert_null(e[3].sibling_with_data);
        for (size_t i = 0; i < 6; i++) {
                volume_eligibility_done(&e[i]);
                volume_done(&v[i]);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_etcd_tag_ok),     cmocka_unit_test(test_etcd_tag_malformed),
                cmocka_unit_test(test_classify),        cmocka_unit_test(test_malformed_flag),
                cmocka_unit_test(test_resolve_members),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
