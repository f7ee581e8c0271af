/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/strv.h"
#include "model/cluster-view.h"
#include "unit-test.h"

static const char view_json[] =
    "{\"masters\":[{\"name\":\"b\",\"internalIPs\":[\"10.0.0.2\"],\"externalIPs\":[]},"
    "{\"name\":\"a\",\"internalIPs\":[\"fd00::1\",\"10.0.0.1\"],\"externalIPs\":[\"203.0.113.1\"]}],"
    "\"members\":[{\"cluster\":\"main\",\"member\":\"c\",\"node\":null},"
    "{\"cluster\":\"events\",\"member\":\"a\",\"node\":\"a\"},"
    "{\"cluster\":\"main\",\"member\":\"a\",\"node\":\"a\"}]}";

static void test_roundtrip(void **state) {
        _cleanup_(cluster_view_freep) ClusterView *v = NULL, *w = NULL;
        _cleanup_free_ char *err = NULL, *json = NULL, *json2 = NULL;

        assert_int_equal(cluster_view_from_json(view_json, strlen(view_json), &v, &err), 0);
        assert_int_equal(v->n_masters, 2);
        assert_string_equal(v->masters[0].name, "a"); /* sorted */
        assert_string_equal(v->masters[0].internal_ips[0], "10.0.0.1");
        assert_int_equal(v->n_members, 3);
        assert_string_equal(v->members[0].cluster, "events");
        assert_string_equal(v->members[2].member, "c");
        assert_null(v->members[2].node);
        assert_int_equal(cluster_view_to_json(v, &json), 0);
        assert_non_null(strstr(json, "\"node\": null"));
        assert_int_equal(cluster_view_from_json(json, strlen(json), &w, &err), 0);
        assert_int_equal(w->n_members, 3);
        assert_int_equal(cluster_view_to_json(w, &json2), 0);
        assert_string_equal(json, json2);
}

static void test_merge_ips(void **state) {
        _cleanup_(cluster_view_freep) ClusterView *v = new0(ClusterView, 1);
        char *a[] = { "10.0.0.2", NULL }, *b[] = { "10.0.0.1", "10.0.0.2", NULL };
        assert_int_equal(cluster_view_add_master(v, "n", a, NULL), 0);
        assert_int_equal(cluster_view_add_master(v, "n", b, NULL), 0);
        assert_int_equal(v->n_masters, 1);
        assert_int_equal(strv_length(v->masters[0].internal_ips), 2);
        assert_int_equal(strv_length(v->masters[0].external_ips), 0);
        assert_non_null(cluster_view_find_master(v, "n"));
        assert_null(cluster_view_find_master(v, "m"));
}

/* Every member a tag names is added as unheld, held or not; sort_unique keeps a held entry over any unheld
 * one, one unheld entry of a member nobody holds, and every held entry. */
static void test_sort_unique(void **state) {
        _cleanup_(cluster_view_freep) ClusterView *v = new0(ClusterView, 1);
        static const char *const adds[][3] = {
                { "main", "b", NULL }, { "main", "a", NULL }, { "main", "a", "n1" },   { "main", "c", NULL },
                { "main", "b", NULL }, { "main", "a", NULL }, { "events", "a", NULL }, { "main", "c", NULL },
                { "main", "d", "n2" }, { "main", "d", "n3" },
        };
        for (size_t i = 0; i < sizeof(adds) / sizeof(adds[0]); i++)
                assert_int_equal(cluster_view_add_member(v, adds[i][0], adds[i][1], adds[i][2]), 0);
        cluster_view_sort_unique(v);
        static const char *const want[][3] = {
                { "events", "a", NULL }, { "main", "a", "n1" }, { "main", "b", NULL },
                { "main", "c", NULL },   { "main", "d", "n2" }, { "main", "d", "n3" },
        };
        assert_int_equal(v->n_members, sizeof(want) / sizeof(want[0]));
        for (size_t i = 0; i < v->n_members; i++) {
                assert_string_equal(v->members[i].cluster, want[i][0]);
                assert_string_equal(v->members[i].member, want[i][1]);
                if (streq(want[i][1], "d")) /* its two holders (both kept) sort in either order */
                        assert_true(streq(v->members[i].node, "n2") || streq(v->members[i].node, "n3"));
                else if (want[i][2])
                        assert_string_equal(v->members[i].node, want[i][2]);
                else
                        assert_null(v->members[i].node);
        }
}

static void test_malformed(void **state) {
        static const char *const bad[] = {
                "",
                "[]",
                "{\"masters\":{}}",
                "{\"masters\":[{\"internalIPs\":[]}]}",
                "{\"masters\":[{\"name\":\"a\",\"internalIPs\":[1]}]}",
                "{\"members\":[{\"cluster\":\"main\",\"member\":\"a\",\"node\":7}]}",
                "{\"masters\":[],\"masters\":[]}",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                ClusterView *v = NULL;
                char *err = NULL;
                assert_int_equal(cluster_view_from_json(bad[i], strlen(bad[i]), &v, &err), PK_EMALFORMED);
                assert_null(v);
                assert_non_null(err);
                free(err);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_roundtrip),
                cmocka_unit_test(test_merge_ips),
                cmocka_unit_test(test_sort_unique),
                cmocka_unit_test(test_malformed),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
