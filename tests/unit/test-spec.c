/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "pki/pki-key.h"
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
        /* the wanted etcd version: the image's tag */
        assert_string_equal(events->version, "3.5.16");
        assert_string_equal(main_->version, "3.5.16");
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
        const EtcdBackupSpec *b = &cluster_spec_etcd(s, 0)->backups;
        assert_int_equal(b->interval.value, 15 * 60 * USEC_PER_SEC);
        assert_int_equal(b->keep_last.value, 10);
        assert_int_equal(b->keep_daily_days.value, 7);
}

static void test_etcd_backups(void **state) {
        _cleanup_(cluster_spec_freep) ClusterSpec *s = load_ok(
            HEAD
            "spec:\n  etcdClusters:\n  - name: main\n    image: registry.k8s.io/etcd:3.5.16-0\n"
            "    backups: {interval: 5m, keepLast: 3, keepDailyDays: 0}\n  kubernetesVersion: 1.31.2\n");
        const EtcdBackupSpec *b = &cluster_spec_etcd(s, 0)->backups;
        assert_int_equal(b->interval.value, 5 * 60 * USEC_PER_SEC);
        assert_int_equal(b->keep_last.value, 3);
        assert_int_equal(b->keep_daily_days.value, 0);
        load_fails(HEAD "spec:\n  etcdClusters:\n  - name: main\n    image: registry.k8s.io/etcd:3.5.16-0\n"
                        "    backups: {interval: 10s}\n  kubernetesVersion: 1.31.2\n",
                   "t.yaml:8:25: spec.etcdClusters[0].backups.interval: '10s' is out of range 1m0s..24h0m0s",
                   NULL);
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
        const char *versions_ok[] = { "1.31.2", "v1.31.2", "1.31.0-alpha.1", "1.20.0" };
        for (size_t i = 0; i < ELEMENTSOF(versions_ok); i++)
                assert_int_equal(spec_check_version(&versions_ok[i], NULL), 0);
        /* malformed, or outside the versions protokube knows the flags of (1.20 to 1.31) */
        const char *versions_bad[] = { "1.31",    "latest", "1.31.2-",        "v",      "1.x.2",
                                       "1.31.2 ", "1.19.9", "1.32.0-alpha.1", "2.20.0", "0.31.2" };
        for (size_t i = 0; i < ELEMENTSOF(versions_bad); i++)
                assert_int_equal(spec_check_version(&versions_bad[i], NULL), -EINVAL);
}

static void test_enum_strings(void **state) {
        assert_string_equal(cloud_provider_to_string(CLOUD_AWS), "aws");
        assert_int_equal(cloud_provider_from_string("local"), CLOUD_LOCAL);
        /* a cloud without a provider is no value of the spec */
        assert_int_equal(cloud_provider_from_string("gce"), CLOUD_GCE);
        assert_int_equal(cloud_provider_from_string("digitalocean"), _CLOUD_INVALID);
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
                    strextend_printf(&text,
                                     "  - {name: c%u, image: \"i:3.4.13\", clientPort: %u, peerPort: %u}\n",
                                     i, 10000 + i, 20000 + i),
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

/* ---- spec.stateStore, spec.pki, spec.clusterDNSDomain ---- */

#define STRV_MAKE(...) ((char *[]){ __VA_ARGS__, NULL })
#define MINIMAL        HEAD "spec:\n" ETCD "  kubernetesVersion: 1.31.2\n"

/* ---- spec.selfHosted ---- */

static void test_self_hosted(void **state) {
        _cleanup_(cluster_spec_freep) ClusterSpec *s = load_ok(MINIMAL);
        assert_true(s->self_hosted.set);
        assert_false(s->self_hosted.value);
        assert_false(s->kube_apiserver.permit_port_sharing.set); /* no flag: the component's default */
        cluster_spec_free(s);

        s = load_ok(MINIMAL "  stateStore: file:///srv/state\n  selfHosted: true\n"
                            "  kubeScheduler: {permitPortSharing: false}\n");
        assert_true(s->self_hosted.value);
        assert_true(s->kube_apiserver.permit_port_sharing.value);
        assert_true(s->kube_controller_manager.permit_port_sharing.value);
        assert_true(s->kube_scheduler.permit_port_sharing.set);
        assert_false(s->kube_scheduler.permit_port_sharing.value); /* the user's word stands */

        cluster_spec_free(s);
        /* a worker's copy: no store (a master's pivot refuses that: test-step-pivot.c) */
        s = load_ok(MINIMAL "  selfHosted: true\n");
        assert_true(s->self_hosted.value);
}

static void test_pki_absent(void **state) {
        _cleanup_(cluster_spec_freep) ClusterSpec *s = load_ok(MINIMAL);
        assert_null(s->state_store);
        assert_false(cluster_spec_pki_managed(s));
        assert_string_equal(s->pki.dir, "/srv/kubernetes");
        assert_int_equal(s->pki.key_type.value, SPEC_KEY_ECDSA_P256);
        assert_int_equal(s->pki.service_account_key_type.value, SPEC_KEY_RSA_2048);
        assert_int_equal(s->pki.ca_lifetime.value, 87600ULL * 3600 * USEC_PER_SEC);
        assert_int_equal(s->pki.certificate_lifetime.value, 8760ULL * 3600 * USEC_PER_SEC);
        assert_string_equal(s->cluster_dns_domain, "cluster.local");
        /* round 1 unchanged: plain http etcd, kops' paths */
        assert_null(cluster_spec_etcd(s, 0)->tls_dir);
        assert_string_equal(s->kube_apiserver.tls_cert_file, "/srv/kubernetes/kube-apiserver/server.crt");
        assert_string_equal(s->kube_controller_manager.cluster_signing_key_file,
                            "/srv/kubernetes/kube-controller-manager/ca.key");
        assert_null(s->kube_apiserver.etcd_ca_file);
        assert_null(s->kube_apiserver.requestheader_allowed_names);
        /* the loader's default of the range, which the apiserver is given */
        assert_string_equal(cluster_spec_service_range(s), "100.64.0.0/13");
}

static void test_service_range(void **state) {
        _cleanup_(cluster_spec_freep) ClusterSpec *s =
            load_ok(MINIMAL "  kubeAPIServer: {serviceClusterIPRange: 10.32.0.0/16}\n");
        assert_string_equal(cluster_spec_service_range(s), "10.32.0.0/16");
        /* a spec made in code: kube-apiserver's own default */
        ClusterSpec bare = {};
        assert_string_equal(cluster_spec_service_range(&bare), "10.0.0.0/24");
}

static void test_pki_valid(void **state) {
        _cleanup_(cluster_spec_freep) ClusterSpec *s =
            load_ok(MINIMAL "  stateStore: s3://state-bucket.example/clusters/demo\n"
                            "  pki:\n    dir: /etc/protokube/pki/\n    keyType: rsa-2048\n"
                            "    serviceAccountKeyType: ecdsa-p256\n    caLifetime: 1000h\n"
                            "    certificateLifetime: 1h\n"
                            "  clusterDNSDomain: corp.internal\n");
        assert_string_equal(s->state_store, "s3://state-bucket.example/clusters/demo");
        assert_true(cluster_spec_pki_managed(s));
        assert_string_equal(s->pki.dir, "/etc/protokube/pki/");
        assert_int_equal(s->pki.key_type.value, SPEC_KEY_RSA_2048);
        assert_int_equal(s->pki.service_account_key_type.value, SPEC_KEY_ECDSA_P256);
        assert_int_equal(s->pki.ca_lifetime.value, 1000ULL * 3600 * USEC_PER_SEC);
        assert_int_equal(s->pki.certificate_lifetime.value, 3600 * USEC_PER_SEC);
        /* the kubelets' certificates: certificateLifetime unless given */
        assert_false(s->pki.kubelet_certificate_lifetime.set);
        assert_int_equal(spec_pki_kubelet_lifetime(&s->pki), 3600 * USEC_PER_SEC);
        assert_string_equal(s->cluster_dns_domain, "corp.internal");
        /* the trailing slash of dir is not doubled */
        assert_string_equal(cluster_spec_etcd(s, 0)->tls_dir, "/etc/protokube/pki/etcd-main");

        cluster_spec_free(TAKE_PTR(s));
        s = load_ok(MINIMAL "  stateStore: file:///srv/protokube/state\n");
        assert_string_equal(s->state_store, "file:///srv/protokube/state");
        s = cluster_spec_free(s);
        s = load_ok(MINIMAL "  stateStore: file:///s\n  pki: {kubeletCertificateLifetime: 5m}\n");
        assert_int_equal(spec_pki_kubelet_lifetime(&s->pki), 300 * USEC_PER_SEC);
        s = cluster_spec_free(s);
        s = load_ok(MINIMAL "  stateStore: s3://abc\n  pki: ~\n");
        assert_string_equal(s->pki.dir, "/srv/kubernetes");
        /* the bucket's region in the URL, with or without a prefix */
        s = cluster_spec_free(s);
        s = load_ok(MINIMAL "  stateStore: s3://my.bucket.example/c?region=eu-west-1\n");
        assert_string_equal(s->state_store, "s3://my.bucket.example/c?region=eu-west-1");
        s = cluster_spec_free(s);
        s = load_ok(MINIMAL "  stateStore: s3://abc?region=us-gov-west-1\n");
        assert_string_equal(s->state_store, "s3://abc?region=us-gov-west-1");
        s = cluster_spec_free(s);
        s = load_ok(MINIMAL "  stateStore: gs://pk_state.example.com/clusters/c\n");
        assert_string_equal(s->state_store, "gs://pk_state.example.com/clusters/c");
}

static void test_pki_errors(void **state) {
        static const struct {
                const char *yaml, *error;
        } cases[] = {
                { "  stateStore: http://x/y\n",
                  "t.yaml:8:15: spec.stateStore: 'http://x/y' is not a state store URL (file:///DIR, "
                  "s3://BUCKET[/PREFIX] or gs://BUCKET[/PREFIX])" },
                { "  stateStore: /srv/state\n",
                  "t.yaml:8:15: spec.stateStore: '/srv/state' is not a state store URL (file:///DIR, "
                  "s3://BUCKET[/PREFIX] or gs://BUCKET[/PREFIX])" },
                { "  stateStore: file://srv/state\n",
                  "t.yaml:8:15: spec.stateStore: 'file://srv/state': the directory must be absolute "
                  "(file:///DIR)" },
                { "  stateStore: file:///srv/../etc\n",
                  "t.yaml:8:15: spec.stateStore: 'file:///srv/../etc': the directory must not contain '..' "
                  "or empty segments" },
                { "  stateStore: file:///srv//state\n",
                  "t.yaml:8:15: spec.stateStore: 'file:///srv//state': the directory must not contain '..' "
                  "or empty segments" },
                { "  stateStore: s3://\n",
                  "t.yaml:8:15: spec.stateStore: 's3://': the bucket name must be 3 to 63 characters of "
                  "[a-z0-9.-] (s3://BUCKET[/PREFIX])" },
                { "  stateStore: s3:///prefix\n",
                  "t.yaml:8:15: spec.stateStore: 's3:///prefix': the bucket name must be 3 to 63 characters "
                  "of [a-z0-9.-] (s3://BUCKET[/PREFIX])" },
                { "  stateStore: gs://My_Bucket\n", "t.yaml:8:15: spec.stateStore: 'gs://My_Bucket': the "
                                                    "bucket name must be 3 to 63 characters "
                                                    "of [a-z0-9_.-] (gs://BUCKET[/PREFIX], no parameters)" },
                { "  stateStore: gs://goog-state\n",
                  "t.yaml:8:15: spec.stateStore: 'gs://goog-state': the bucket name must be 3 to 63 "
                  "characters "
                  "of [a-z0-9_.-] (gs://BUCKET[/PREFIX], no parameters)" },
                { "  stateStore: gs://pk-state?region=x\n",
                  "t.yaml:8:15: spec.stateStore: 'gs://pk-state?region=x': the bucket name must be 3 to 63 "
                  "characters of [a-z0-9_.-] (gs://BUCKET[/PREFIX], no parameters)" },
                { "  stateStore: gs://pk-state/a/../b\n",
                  "t.yaml:8:15: spec.stateStore: 'gs://pk-state/a/../b': the prefix must not contain '..' "
                  "or "
                  "empty segments" },
                { "  stateStore: s3://My_Bucket\n",
                  "t.yaml:8:15: spec.stateStore: 's3://My_Bucket': the bucket name must be 3 to 63 "
                  "characters of [a-z0-9.-] (s3://BUCKET[/PREFIX])" },
                { "  stateStore: s3://bucket/p?region=EU-WEST-1\n",
                  "t.yaml:8:15: spec.stateStore: 's3://bucket/p?region=EU-WEST-1': the only parameter is "
                  "?region=REGION, a region name of 1-64 characters of [a-z0-9-] (eu-west-1)" },
                { "  stateStore: s3://bucket?endpoint=x\n",
                  "t.yaml:8:15: spec.stateStore: 's3://bucket?endpoint=x': the only parameter is "
                  "?region=REGION, a region name of 1-64 characters of [a-z0-9-] (eu-west-1)" },
                { "  stateStore: s3://bucket/p?region=eu-west-1&x=y\n",
                  "t.yaml:8:15: spec.stateStore: 's3://bucket/p?region=eu-west-1&x=y': the only parameter "
                  "is ?region=REGION, a region name of 1-64 characters of [a-z0-9-] (eu-west-1)" },
                { "  stateStore: s3://bucket/a/../b\n",
                  "t.yaml:8:15: spec.stateStore: 's3://bucket/a/../b': the prefix must not contain '..' or "
                  "empty segments" },
                { "  stateStore: \"file:///srv/\\tx\"\n",
                  "t.yaml:8:15: spec.stateStore: 'file:///srv/?x' contains control characters" },
                { "  stateStore: [file:///x]\n",
                  "t.yaml:8:15: spec.stateStore: expected a string, got a sequence" },
                { "  stateStore: file:///s\n  pki: {dir: pki}\n",
                  "t.yaml:9:14: spec.pki.dir: 'pki' is not an absolute path without '..' or spaces" },
                { "  stateStore: file:///s\n  pki: {dir: /srv/../etc}\n",
                  "t.yaml:9:14: spec.pki.dir: '/srv/../etc' is not an absolute path without '..' or "
                  "spaces" },
                { "  stateStore: file:///s\n  pki: {dir: \"/srv/my pki\"}\n",
                  "t.yaml:9:14: spec.pki.dir: '/srv/my pki' is not an absolute path without '..' or "
                  "spaces" },
                { "  stateStore: file:///s\n  pki: {keyType: ed25519}\n",
                  "t.yaml:9:18: spec.pki.keyType: 'ed25519' is not one of ecdsa-p256, rsa-2048" },
                { "  stateStore: file:///s\n  pki: {serviceAccountKeyType: rsa-4096}\n",
                  "t.yaml:9:32: spec.pki.serviceAccountKeyType: 'rsa-4096' is not one of ecdsa-p256, "
                  "rsa-2048" },
                { "  stateStore: file:///s\n  pki: {caLifetime: 10y}\n",
                  "t.yaml:9:21: spec.pki.caLifetime: invalid duration '10y' (Go form, e.g. 10s, 1m30s, "
                  "250ms)" },
                { "  stateStore: file:///s\n  pki: {caLifetime: 1000000h}\n",
                  "t.yaml:9:21: spec.pki.caLifetime: '1000000h0m0s' is out of range 1h0m0s..876000h0m0s "
                  "(100 years)" },
                { "  stateStore: file:///s\n  pki: {certificateLifetime: 59m}\n",
                  "t.yaml:9:30: spec.pki.certificateLifetime: '59m0s' is out of range 1h0m0s..876000h0m0s "
                  "(100 years)" },
                { "  stateStore: file:///s\n  pki: {kubeletCertificateLifetime: 4m}\n",
                  "t.yaml:9:37: spec.pki.kubeletCertificateLifetime: '4m0s' is out of range "
                  "5m0s..876000h0m0s (100 years)" },
                { "  stateStore: file:///s\n  pki: {certificateLifetime: 87600h}\n",
                  "t.yaml:9:30: spec.pki.certificateLifetime: '87600h0m0s' must be less than "
                  "spec.pki.caLifetime '87600h0m0s' (a certificate cannot outlive its CA)" },
                /* the default certificate lifetime against a short CA: the error is where the user wrote */
                { "  stateStore: file:///s\n  pki: {caLifetime: 100h}\n",
                  "t.yaml:9:21: spec.pki.certificateLifetime: '8760h0m0s' must be less than "
                  "spec.pki.caLifetime '100h0m0s' (a certificate cannot outlive its CA)" },
                { "  pki: {keyType: rsa-2048}\n",
                  "t.yaml:8:8: spec.pki: has no effect without spec.stateStore (protokube issues "
                  "certificates only from a state store)" },
                { "  clusterDNSDomain: Cluster.Local\n",
                  "t.yaml:8:21: spec.clusterDNSDomain: 'Cluster.Local' is not a valid DNS name (lowercase "
                  "letters, digits and '-', labels of 1 to 63 characters separated by dots)" },
                { "  clusterDNSDomain: cluster.local.\n",
                  "t.yaml:8:21: spec.clusterDNSDomain: 'cluster.local.' must not end with a dot" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *text = strjoin(MINIMAL, cases[i].yaml);
                assert_non_null(text);
                load_fails(text, cases[i].error, NULL);
        }
        /* longer than a store URL may be */
        _cleanup_free_ char *long_url = strdup(MINIMAL "  stateStore: file:///");
        for (unsigned i = 0; i < 1030; i++)
                assert_int_equal(strextend_printf(&long_url, "x"), 0);
        assert_int_equal(strextend_printf(&long_url, "\n"), 0);
        _cleanup_strv_free_ char **errors = NULL;
        assert_int_equal(cluster_spec_load_string("t.yaml", long_url, strlen(long_url), NULL, &errors),
                         PK_ESPEC);
        assert_int_equal(strv_length(errors), 1);
        assert_non_null(strstr(errors[0], "spec.stateStore: 'file:///xxx"));
        assert_non_null(strstr(errors[0], "' is longer than 1024 characters"));
}

/* With a state store, every certificate path the user left unset comes from the pki layout. */
static void test_pki_managed_defaults(void **state) {
        _cleanup_(cluster_spec_freep) ClusterSpec *s = load_ok(
            HEAD "spec:\n  etcdClusters:\n  - {name: main, image: \"e:3.4.13\"}\n  - {name: events, image: "
                 "\"e:3.4.13\"}\n"
                 "  - {name: cilium, image: \"e:3.4.13\", clientPort: 4003, peerPort: 2382, tlsDir: "
                 "/etc/cilium-etcd}\n"
                 "  kubernetesVersion: 1.20.2\n  stateStore: file:///srv/state\n  pki: {dir: /var/lib/pk}\n"
                 "  kubeAPIServer: {tlsCertFile: /custom/api.crt, etcdCAFile: ~}\n"
                 "  kubeScheduler: {kubeconfig: /custom/scheduler.kubeconfig}\n");
        const KubeAPIServerConfig *a = &s->kube_apiserver;
        const KubeControllerManagerConfig *c = &s->kube_controller_manager;
        const KubeSchedulerConfig *k = &s->kube_scheduler;

        assert_string_equal(cluster_spec_etcd(s, 0)->tls_dir, "/var/lib/pk/etcd-main");
        assert_string_equal(cluster_spec_etcd(s, 1)->tls_dir, "/var/lib/pk/etcd-events");
        assert_string_equal(cluster_spec_etcd(s, 2)->tls_dir, "/etc/cilium-etcd"); /* the user's */

        /* the user's value is kept; null counts as absent, as everywhere in the spec */
        assert_string_equal(a->tls_cert_file, "/custom/api.crt");
        assert_string_equal(a->etcd_ca_file, "/var/lib/pk/kube-apiserver/etcd-ca.crt");
#define D "/var/lib/pk/kube-apiserver/"
        assert_string_equal(a->tls_private_key_file, D "apiserver.key");
        assert_string_equal(a->client_ca_file, D "ca.crt");
        assert_string_equal(a->etcd_cert_file, D "etcd-client.crt");
        assert_string_equal(a->etcd_key_file, D "etcd-client.key");
        assert_string_equal(a->kubelet_client_certificate, D "kubelet-client.crt");
        assert_string_equal(a->kubelet_client_key, D "kubelet-client.key");
        assert_string_equal(a->requestheader_client_ca_file, D "front-proxy-ca.crt");
        assert_string_equal(a->proxy_client_cert_file, D "front-proxy-client.crt");
        assert_string_equal(a->proxy_client_key_file, D "front-proxy-client.key");
        assert_string_equal(a->service_account_signing_key_file, D "service-account.key");
        assert_true(strv_equal(a->service_account_key_file, STRV_MAKE(D "service-account.pub")));
#undef D
        assert_true(strv_equal(a->requestheader_allowed_names, STRV_MAKE("front-proxy-client")));
        assert_true(strv_equal(a->requestheader_username_headers, STRV_MAKE("X-Remote-User")));
        assert_true(strv_equal(a->requestheader_group_headers, STRV_MAKE("X-Remote-Group")));
        assert_true(strv_equal(a->requestheader_extra_headers_prefix, STRV_MAKE("X-Remote-Extra-")));

#define D "/var/lib/pk/kube-controller-manager/"
        assert_string_equal(c->kubeconfig, D "kubeconfig");
        assert_string_equal(c->authentication_kubeconfig, D "kubeconfig");
        assert_string_equal(c->authorization_kubeconfig, D "kubeconfig");
        assert_string_equal(c->root_ca_file, D "ca.crt");
        assert_string_equal(c->service_account_private_key_file, D "service-account.key");
#undef D
        /* no CA key on the node: no CSR signer rather than a controller-manager that exits */
        assert_string_equal(c->cluster_signing_cert_file, "");
        assert_string_equal(c->cluster_signing_key_file, "");
        assert_true(c->use_service_account_credentials.set && c->use_service_account_credentials.value);

        assert_string_equal(k->kubeconfig, "/custom/scheduler.kubeconfig");
        assert_string_equal(k->authentication_kubeconfig, "/var/lib/pk/kube-scheduler/kubeconfig");
        assert_string_equal(k->authorization_kubeconfig, "/var/lib/pk/kube-scheduler/kubeconfig");
        assert_string_equal(s->kube_proxy.kubeconfig, "/var/lib/pk/kube-proxy/kubeconfig");
}

/* The lead maps SpecKeyType onto pki's PkiKeyType one to one. */
static void test_key_types(void **state) {
        assert_int_equal(_SPEC_KEY_TYPE_MAX, _PKI_KEY_TYPE_MAX);
        for (int t = 0; t < _SPEC_KEY_TYPE_MAX; t++) {
                assert_string_equal(spec_key_type_to_string(t), pki_key_type_to_string(t));
                assert_int_equal(spec_key_type_from_string(spec_key_type_to_string(t)), t);
        }
        assert_int_equal(SPEC_KEY_RSA_2048, PKI_KEY_RSA_2048);
        assert_null(spec_key_type_to_string(_SPEC_KEY_TYPE_MAX));
        assert_int_equal(spec_key_type_from_string("ed25519"), _SPEC_KEY_TYPE_INVALID);
        assert_int_equal(spec_key_type_from_string(NULL), _SPEC_KEY_TYPE_INVALID);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_example),
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_hosts_default),
                cmocka_unit_test(test_self_hosted),
                cmocka_unit_test(test_etcd_backups),
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
                cmocka_unit_test(test_pki_absent),
                cmocka_unit_test(test_service_range),
                cmocka_unit_test(test_pki_valid),
                cmocka_unit_test(test_pki_errors),
                cmocka_unit_test(test_pki_managed_defaults),
                cmocka_unit_test(test_key_types),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
