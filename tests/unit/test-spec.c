/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "spec/field-load.h"
#include "spec/spec-check.h"
#include "spec/spec.h"
#include "unit-test.h"

#define HEAD "apiVersion: protokube/v1alpha1\nkind: Cluster\nmetadata: {name: demo.k8s.test}\n"
#define ETCD "  etcdClusters:\n  - {name: main, image: registry.k8s.io/etcd:3.5.16-0}\n"

static ClusterSpec *load_ok(const char *text) {
        ClusterSpec *s = NULL;
        _cleanup_strv_free_ char **errors = NULL;
        int r = cluster_spec_load_string("t.yaml", text, strlen(text), &s, &errors);
        if (r < 0) {
                _cleanup_free_ char *all = strv_join(errors, "\n");
                fail_msg("load failed: %d\n%s", r, strnull(all));
        }
        assert_null(errors);
        return s;
}

/* Loads text, expects PK_ESPEC and exactly the errors given (NULL-terminated). */
static void load_fails(const char *text, ...) {
        _cleanup_strv_free_ char **errors = NULL, **want = NULL;
        ClusterSpec *s = (ClusterSpec *)0x1;
        va_list ap;

        va_start(ap, text);
        for (const char *e; (e = va_arg(ap, const char *));)
                assert_int_equal(strv_extend(&want, e), 0);
        va_end(ap);
        assert_int_equal(cluster_spec_load_string("t.yaml", text, strlen(text), &s, &errors), PK_ESPEC);
        assert_ptr_equal(s, (ClusterSpec *)0x1);
        if (!strv_equal(errors, want)) {
                _cleanup_free_ char *got = strv_join(errors, "\n"), *exp = strv_join(want, "\n");
                fail_msg("errors differ\ngot:\n%s\nwant:\n%s", strnull(got), strnull(exp));
        }
}

static void test_example(void **state) {
        _cleanup_(cluster_spec_freep) ClusterSpec *s = NULL;
        _cleanup_strv_free_ char **errors = NULL;

        assert_int_equal(cluster_spec_load(SRCDIR "/examples/cluster.yaml", &s, &errors), 0);
        assert_null(errors);
        assert_string_equal(s->path, SRCDIR "/examples/cluster.yaml");
        assert_string_equal(s->name, "demo.k8s.test");
        assert_int_equal(s->cloud.value, CLOUD_LOCAL);
        assert_int_equal(s->dns.provider.value, DNS_PROVIDER_RFC2136);
        assert_string_equal(s->dns.zone, "k8s.test.");
        assert_string_equal(s->dns.internal_suffix, "internal.demo.k8s.test");
        assert_string_equal(s->dns.rfc2136.server, "127.0.0.1:15353");
        assert_string_equal(s->dns.rfc2136.tsig_key_file, "/etc/protokube/tsig.key");
        assert_int_equal(s->dns.rfc2136.timeout.value, 2 * USEC_PER_SEC);
        assert_int_equal(s->dns.ttl.value, 60);
        assert_int_equal(s->etcd_clusters.n, 2);
        const EtcdClusterSpec *main_ = cluster_spec_find_etcd(s, "main"),
                              *events = cluster_spec_find_etcd(s, "events");
        assert_non_null(main_);
        assert_non_null(events);
        assert_null(cluster_spec_find_etcd(s, "cilium"));
        assert_int_equal(main_->client_port.value, 4001);
        assert_int_equal(main_->peer_port.value, 2380);
        assert_int_equal(events->client_port.value, 4002);
        assert_int_equal(events->peer_port.value, 2381);
        assert_string_equal(events->image, "registry.k8s.io/etcd:3.5.16-0");
        assert_null(main_->tls_dir);
        assert_string_equal(s->kubernetes_version, "1.31.2");

        assert_int_equal(cluster_spec_load(SRCDIR "/examples/cluster.yaml", NULL, NULL), 0);
        assert_int_equal(cluster_spec_load(SRCDIR "/examples/nonexistent.yaml", NULL, NULL), -ENOENT);
}

static void test_defaults(void **state) {
        _cleanup_(cluster_spec_freep) ClusterSpec *s =
            load_ok(HEAD "spec:\n" ETCD "  kubernetesVersion: v1.30.1\n  kubeAPIServer:\n");
        assert_true(s->cloud.set);
        assert_int_equal(s->cloud.value, CLOUD_LOCAL);
        assert_int_equal(s->dns.provider.value, DNS_PROVIDER_NONE);
        assert_true(s->dns.ttl.set);
        assert_int_equal(s->dns.ttl.value, 60);
        assert_true(s->dns.rfc2136.timeout.set);
        assert_string_equal(s->dns.internal_suffix, "internal.demo.k8s.test");
        assert_null(s->dns.zone);
        assert_null(s->dns.hosts.file); /* only the hosts provider gets /etc/hosts */
        assert_string_equal(s->kubernetes_version, "1.30.1");
        assert_true(cluster_spec_etcd(s, 0)->client_port.set);
}

static void test_hosts_default(void **state) {
        _cleanup_(cluster_spec_freep) ClusterSpec *s =
            load_ok(HEAD "spec:\n  dns: {provider: hosts}\n" ETCD "  kubernetesVersion: 1.31.2\n");
        assert_int_equal(s->dns.provider.value, DNS_PROVIDER_HOSTS);
        assert_string_equal(s->dns.hosts.file, "/etc/hosts");
}

static void test_errors_each_kind(void **state) {
        load_fails("", "t.yaml:1:1: empty document, expected a Cluster mapping", NULL);
        load_fails(
            "a: 'b\n",
            "t.yaml:2:1: found unexpected end of stream (while scanning a quoted scalar started at 1:4)",
            NULL);
        load_fails(HEAD "spec:\n" ETCD "  kubernetesVersion: 1.31.2\n  clowd: aws\n",
                   "t.yaml:8:3: spec: unknown key 'clowd', did you mean 'cloud'?", NULL);
        load_fails(HEAD "spec:\n" ETCD "  kubernetesVersion: 1.31.2\n  kubernetesVersion: 1.31.3\n",
                   "t.yaml:8:3: spec.kubernetesVersion: duplicate key (first at 7:3)", NULL);
        load_fails(HEAD "spec:\n" ETCD "  kubernetesVersion: 1.31.2\n  dns: {ttl: [1]}\n",
                   "t.yaml:8:14: spec.dns.ttl: expected an integer, got a sequence", NULL);
        load_fails(HEAD "spec:\n" ETCD "  kubernetesVersion: 1.31.2\n  dns: {ttl: 86401}\n",
                   "t.yaml:8:14: spec.dns.ttl: '86401' is out of range 1..86400", NULL);
        load_fails(HEAD "spec:\n" ETCD "  kubernetesVersion: 1.31.2\n  cloud: azure\n",
                   "t.yaml:8:10: spec.cloud: 'azure' is not one of local, aws, gce", NULL);
        load_fails(HEAD "spec:\n" ETCD, "t.yaml:5:3: spec.kubernetesVersion: missing required key", NULL);
        load_fails(
            HEAD "spec:\n" ETCD
                 "  kubernetesVersion: 1.31.2\n  dns: {provider: rfc2136, rfc2136: {timeout: 1}}\n",
            "t.yaml:8:37: spec.dns.rfc2136.server: required when spec.dns.provider is rfc2136",
            "t.yaml:8:37: spec.dns.rfc2136.tsigKeyFile: required when spec.dns.provider is rfc2136",
            "t.yaml:8:47: spec.dns.rfc2136.timeout: invalid duration '1' (Go form, e.g. 10s, 1m30s, 250ms)",
            NULL);
        /* errors come out in file order whatever the order of the checks */
        load_fails("kind: Pod\napiVersion: v1\nmetadata: {name: x}\nspec: {kubernetesVersion: 1.31.2, "
                   "etcdClusters: []}\n",
                   "t.yaml:1:7: kind: 'Pod' is not supported, expected 'Cluster'",
                   "t.yaml:2:13: apiVersion: 'v1' is not supported, expected 'protokube/v1alpha1'",
                   "t.yaml:4:49: spec.etcdClusters: at least one etcd cluster is required", NULL);
}

static void test_errors_without_output(void **state) {
        const char *text = "kind: 1\n";
        assert_int_equal(cluster_spec_load_string("x", text, strlen(text), NULL, NULL), PK_ESPEC);
        assert_int_equal(cluster_spec_load_string("x", NULL, 0, NULL, NULL), PK_ESPEC);
}

static void test_too_many_errors(void **state) {
        _cleanup_strv_free_ char **errors = NULL;
        _cleanup_free_ char *text = strdup("");
        for (unsigned i = 0; i < SPEC_ERRORS_MAX + 50; i++)
                assert_int_equal(strextend_printf(&text, "k%u: v\n", i), 0);
        assert_int_equal(cluster_spec_load_string("t", text, strlen(text), NULL, &errors), PK_ESPEC);
        assert_int_equal(strv_length(errors), SPEC_ERRORS_MAX + 1);
        assert_string_equal(errors[SPEC_ERRORS_MAX], "t: too many errors, stopped after 100");
}

/* A private table exercising every field type through the generic loader. */
typedef struct Item {
        char *name;
        OptInt n;
} Item;

typedef struct Sample {
        char *s;
        OptBool b;
        OptInt i;
        OptDuration d;
        char **list;
        char **map;
        OptEnum e;
        Item nested;
        StructList items;
        char *checked;
} Sample;

static const char *const colours[] = { "red", "green", NULL };

static int must_be_even_length(const void *value, char **ret_message) {
        if (strlen(*(char *const *)value) % 2 == 0)
                return 0;
        *ret_message = strdup("length must be even");
        return -EINVAL;
}

static const Field item_fields[] = {
        { .name = "name", .type = FIELD_STRING, .offset = offsetof(Item, name), .flags = FIELD_REQUIRED },
        { .name = "n",
          .type = FIELD_INT,
          .offset = offsetof(Item, n),
          .default_value = "7",
          .min = 0,
          .max = 9 },
        {},
};

static const Field sample_fields[] = {
        { .name = "s", .type = FIELD_STRING, .offset = offsetof(Sample, s), .default_value = "dflt" },
        { .name = "b", .type = FIELD_BOOL, .offset = offsetof(Sample, b), .default_value = "true" },
        { .name = "i", .type = FIELD_INT, .offset = offsetof(Sample, i), .min = -5, .max = 5 },
        { .name = "d", .type = FIELD_DURATION, .offset = offsetof(Sample, d), .default_value = "1m30s" },
        { .name = "list", .type = FIELD_STRV, .offset = offsetof(Sample, list) },
        { .name = "map", .type = FIELD_MAP, .offset = offsetof(Sample, map) },
        { .name = "e", .type = FIELD_ENUM, .offset = offsetof(Sample, e), .enum_values = colours },
        { .name = "nested", .type = FIELD_STRUCT, .offset = offsetof(Sample, nested), .sub = item_fields },
        { .name = "items",
          .type = FIELD_STRUCT_LIST,
          .offset = offsetof(Sample, items),
          .sub = item_fields,
          .elem_size = sizeof(Item) },
        { .name = "checked",
          .type = FIELD_STRING,
          .offset = offsetof(Sample, checked),
          .validate = must_be_even_length },
        {},
};

static void load_sample(const char *text, Sample *s, char ***ret_errors) {
        _cleanup_(yaml_tree_freep) YamlNode *root = NULL;
        SpecErrors errs = {};
        assert_int_equal(yaml_tree_parse(text, strlen(text), 0, &root, NULL), 0);
        assert_int_equal(field_table_load(sample_fields, s, root, "", &errs), 0);
        *ret_errors = NULL;
        assert_int_equal(spec_errors_finish(&errs, "f", ret_errors), 0);
}

static void test_generic_types(void **state) {
        _cleanup_strv_free_ char **errors = NULL;
        Sample s = {};

        load_sample(
            "s: hello\nb: false\ni: -5\nd: 250ms\nlist: [a, 'b c']\nmap: {z: 1, a: x, m: }\ne: green\n"
            "nested: {name: n1}\nitems: [{name: i0, n: 3}, {name: i1}]\nchecked: ab\n",
            &s, &errors);
        assert_null(errors);
        assert_string_equal(s.s, "hello");
        assert_true(s.b.set);
        assert_false(s.b.value);
        assert_int_equal(s.i.value, -5);
        assert_int_equal(s.d.value, 250 * USEC_PER_MSEC);
        assert_int_equal(strv_length(s.list), 2);
        assert_string_equal(s.list[1], "b c");
        /* maps are sorted by key, alternating key and value */
        assert_int_equal(strv_length(s.map), 6);
        assert_string_equal(s.map[0], "a");
        assert_string_equal(s.map[1], "x");
        assert_string_equal(s.map[2], "m");
        assert_string_equal(s.map[3], "");
        assert_string_equal(s.map[4], "z");
        assert_int_equal(s.e.value, 1);
        assert_string_equal(s.nested.name, "n1");
        assert_int_equal(s.nested.n.value, 7);
        assert_int_equal(s.items.n, 2);
        assert_int_equal(((Item *)s.items.items)[0].n.value, 3);
        assert_int_equal(((Item *)s.items.items)[1].n.value, 7);
        field_table_free(sample_fields, &s);
        assert_null(s.s);
        assert_null(s.items.items);
        assert_null(s.map);

        /* absent: defaults, nested defaults, nothing else */
        s = (Sample){};
        load_sample("{}", &s, &errors);
        assert_null(errors);
        assert_string_equal(s.s, "dflt");
        assert_true(s.b.value);
        assert_int_equal(s.d.value, 90 * USEC_PER_SEC);
        assert_false(s.i.set);
        assert_false(s.e.set);
        assert_int_equal(s.nested.n.value, 7);
        assert_null(s.nested.name);
        field_table_free(sample_fields, &s);
}

static void test_generic_errors(void **state) {
        _cleanup_strv_free_ char **errors = NULL;
        Sample s = {};

        load_sample("b: yes\ni: 6\nlist: a\nmap: {a: [1]}\ne: blue\nnested: {n: 10}\nitems: [1, {n: 2}]\n"
                    "checked: abc\nb2: 1\n'b': \"true\"\n",
                    &s, &errors);
        const char *want[] = {
                "f:1:4: b: expected true or false, got 'yes'",
                "f:2:4: i: '6' is out of range -5..5",
                "f:3:7: list: expected a sequence of strings, got 'a'",
                "f:4:10: map: expected string keys and values, got a sequence",
                "f:5:4: e: 'blue' is not one of red, green",
                "f:6:9: nested.name: missing required key",
                "f:6:13: nested.n: '10' is out of range 0..9",
                "f:7:9: items[0]: expected a mapping, got '1'",
                "f:7:12: items[1].name: missing required key",
                "f:8:10: checked: length must be even",
                "f:9:1: unknown key 'b2', did you mean 'b'?",
                "f:10:1: b: duplicate key (first at 1:1)",
                NULL,
        };
        if (!strv_equal(errors, (char **)want)) {
                _cleanup_free_ char *got = strv_join(errors, "\n");
                fail_msg("got:\n%s", strnull(got));
        }
        field_table_free(sample_fields, &s);

        strv_free(errors);
        s = (Sample){};
        load_sample("b: \"true\"\n", &s, &errors);
        assert_string_equal(errors[0], "f:1:4: b: expected true or false, got a quoted string 'true'");
        field_table_free(sample_fields, &s);
}

static void test_dns_helpers(void **state) {
        char *m = NULL;
        const char *ok[] = { "127.0.0.1", "127.0.0.1:53", "[::1]:5353", "[::1]" };
        for (size_t i = 0; i < ELEMENTSOF(ok); i++)
                assert_int_equal(spec_check_server(&ok[i], &m), 0);
        /* a name is refused: the DNS server is given by address (spec-check.c) */
        const char *bad[] = { "::1",     "1.2.3.4:0", "1.2.3.4:65536", "[::1",
                              "[zz]:53", "a b",       "1.2.3.4:",      "ns1.k8s.test:53" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                assert_int_equal(spec_check_server(&bad[i], &m), -EINVAL);
                assert_non_null(m);
                free(m);
                m = NULL;
        }
        const char *versions_ok[] = { "1.31.2", "v1.31.2", "1.32.0-alpha.1" };
        for (size_t i = 0; i < ELEMENTSOF(versions_ok); i++)
                assert_int_equal(spec_check_version(&versions_ok[i], NULL), 0);
        const char *versions_bad[] = { "1.31", "latest", "1.31.2-", "v", "1.x.2", "1.31.2 " };
        for (size_t i = 0; i < ELEMENTSOF(versions_bad); i++)
                assert_int_equal(spec_check_version(&versions_bad[i], NULL), -EINVAL);
}

static void test_enum_strings(void **state) {
        assert_string_equal(cloud_provider_to_string(CLOUD_AWS), "aws");
        assert_int_equal(cloud_provider_from_string("gce"), CLOUD_GCE);
        assert_int_equal(cloud_provider_from_string("azure"), _CLOUD_INVALID);
        assert_int_equal(cloud_provider_from_string(NULL), _CLOUD_INVALID);
        assert_null(cloud_provider_to_string(_CLOUD_MAX));
        assert_string_equal(dns_provider_kind_to_string(DNS_PROVIDER_RFC2136), "rfc2136");
        assert_int_equal(dns_provider_kind_from_string("route53"), DNS_PROVIDER_ROUTE53);
        assert_int_equal(dns_provider_kind_from_string("bind"), _DNS_PROVIDER_INVALID);
        for (int i = 0; i < _DNS_PROVIDER_MAX; i++)
                assert_int_equal(dns_provider_kind_from_string(dns_provider_kind_to_string(i)), i);
}

/* Every table reachable from the top (including the component tables, whoever grows them) is well formed. */
static void check_table(const Field *table, unsigned depth) {
        assert_true(depth < 8);
        for (const Field *f = table; f->name; f++) {
                for (const Field *g = table; g < f; g++)
                        if (streq(g->name, f->name))
                                fail_msg("duplicate key '%s' in a field table", f->name);
                assert_true(f->type < _FIELD_TYPE_MAX);
                if (f->type == FIELD_ENUM)
                        assert_non_null(f->enum_values);
                if (f->type == FIELD_STRUCT || f->type == FIELD_STRUCT_LIST) {
                        assert_non_null(f->sub);
                        check_table(f->sub, depth + 1);
                }
                if (f->type == FIELD_STRUCT_LIST)
                        assert_true(f->elem_size > 0);
                if (f->default_value)
                        /* the loader applies scalar defaults only */
                        assert_true(f->type != FIELD_STRV && f->type != FIELD_MAP &&
                                    f->type != FIELD_STRUCT && f->type != FIELD_STRUCT_LIST);
        }
}

static void test_tables_sane(void **state) {
        check_table(cluster_spec_fields(), 0);
}

static void test_etcd_cap(void **state) {
        _cleanup_free_ char *text = strdup(HEAD "spec:\n  kubernetesVersion: 1.31.2\n  etcdClusters:\n");
        for (unsigned i = 0; i < 17; i++)
                assert_int_equal(
                    strextend_printf(&text, "  - {name: c%u, image: i, clientPort: %u, peerPort: %u}\n", i,
                                     10000 + i, 20000 + i),
                    0);
        load_fails(text, "t.yaml:7:3: spec.etcdClusters: at most 16 etcd clusters are supported", NULL);
}

static void test_big_lists(void **state) {
        /* a long list and a big map load in linear time and free cleanly */
        _cleanup_free_ char *text = strdup("list: [");
        for (unsigned i = 0; i < 5000; i++)
                assert_int_equal(strextend_printf(&text, "x%u, ", i), 0);
        assert_int_equal(strextend_printf(&text, "end]\nmap: {"), 0);
        for (unsigned i = 0; i < 5000; i++)
                assert_int_equal(strextend_printf(&text, "k%u: v, ", 5000 - i), 0);
        assert_int_equal(strextend_printf(&text, "a: b}\n"), 0);
        _cleanup_strv_free_ char **errors = NULL;
        Sample s = {};
        load_sample(text, &s, &errors);
        assert_null(errors);
        assert_int_equal(strv_length(s.list), 5001);
        assert_int_equal(strv_length(s.map), 2 * 5001);
        assert_string_equal(s.map[0], "a");
        field_table_free(sample_fields, &s);
}

static void test_echo(void **state) {
        char b[SPEC_ECHO_MAX], long_[100];
        assert_string_equal(spec_echo(b, "a\nb"), "'a?b'");
        assert_string_equal(spec_echo(b, ""), "''");
        memset(long_, 'x', 64);
        long_[64] = 0;
        assert_int_equal(strlen(spec_echo(b, long_)), 66);
        long_[64] = 'y';
        long_[65] = 0;
        assert_true(endswith(spec_echo(b, long_), "x...'"));
        assert_int_equal(strlen(b), 69);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_example),
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_hosts_default),
                cmocka_unit_test(test_errors_each_kind),
                cmocka_unit_test(test_errors_without_output),
                cmocka_unit_test(test_too_many_errors),
                cmocka_unit_test(test_generic_types),
                cmocka_unit_test(test_generic_errors),
                cmocka_unit_test(test_dns_helpers),
                cmocka_unit_test(test_enum_strings),
                cmocka_unit_test(test_tables_sane),
                cmocka_unit_test(test_etcd_cap),
                cmocka_unit_test(test_big_lists),
                cmocka_unit_test(test_echo),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
