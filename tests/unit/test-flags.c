/* SPDX-License-Identifier: Apache-2.0 */
/* The flag builder, one rule per test (kops' pkg/flagbuilder behaviour). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "basic/strv.h"
#include "components/flags.h"
#include "unit-test.h"

typedef struct Inner {
        char *name;
        OptInt level;
} Inner;

typedef struct Opts {
        char *str;
        char *str_empty_value;
        OptBool b;
        OptInt i;
        OptDuration d;
        OptEnum e;
        char **list;
        char **repeat;
        char **map;
        char **map_unsorted;
        char *no_flag;
        Inner inner;
        StructList items;
} Opts;

static const char *const modes[] = { "iptables", "ipvs", NULL };

static const Field inner_fields[] = {
        { .name = "name", .type = FIELD_STRING, .offset = offsetof(Inner, name), .flag = "inner-name" },
        { .name = "level",
          .type = FIELD_INT,
          .offset = offsetof(Inner, level),
          .flag = "v",
          .default_value = "2" },
        {},
};

static const Field fields[] = {
        { .name = "str", .type = FIELD_STRING, .offset = offsetof(Opts, str), .flag = "str" },
        { .name = "strEmpty",
          .type = FIELD_STRING,
          .offset = offsetof(Opts, str_empty_value),
          .flag = "cloud-provider",
          .empty_value = "none" },
        { .name = "b", .type = FIELD_BOOL, .offset = offsetof(Opts, b), .flag = "b" },
        { .name = "i", .type = FIELD_INT, .offset = offsetof(Opts, i), .flag = "i", .empty_value = "-1" },
        { .name = "d", .type = FIELD_DURATION, .offset = offsetof(Opts, d), .flag = "d" },
        { .name = "e",
          .type = FIELD_ENUM,
          .offset = offsetof(Opts, e),
          .flag = "mode",
          .enum_values = modes },
        { .name = "list", .type = FIELD_STRV, .offset = offsetof(Opts, list), .flag = "list" },
        { .name = "repeat",
          .type = FIELD_STRV,
          .offset = offsetof(Opts, repeat),
          .flag = "key-file",
          .flags = FIELD_FLAG_REPEAT },
        { .name = "map", .type = FIELD_MAP, .offset = offsetof(Opts, map), .flag = "feature-gates" },
        { .name = "mapUnsorted",
          .type = FIELD_MAP,
          .offset = offsetof(Opts, map_unsorted),
          .flag = "labels",
          .flags = FIELD_NO_FLAG_SORT },
        { .name = "noFlag", .type = FIELD_STRING, .offset = offsetof(Opts, no_flag) },
        { .name = "inner", .type = FIELD_STRUCT, .offset = offsetof(Opts, inner), .sub = inner_fields },
        { .name = "items",
          .type = FIELD_STRUCT_LIST,
          .offset = offsetof(Opts, items),
          .sub = inner_fields,
          .elem_size = sizeof(Inner) },
        {},
};

/* The flags of o as one string joined by spaces, for compact assertions. */
static char *build(const Opts *o) {
        char **l = NULL;
        assert_int_equal(flags_build(fields, o, 0, &l), 0);
        assert_non_null(l);
        char *s = strv_join(l, " ");
        strv_free(l);
        return s;
}

static void test_unset_emits_nothing(void **state) {
        Opts o = {};
        _cleanup_free_ char *s = build(&o);
        assert_string_equal(s, "");
}

static void test_string(void **state) {
        Opts o = { .str = "x y", .no_flag = "ignored" };
        _cleanup_free_ char *s = build(&o);
        assert_string_equal(s, "--str=x y");
        Opts empty = { .str = "" }; /* kops: an empty string is not emitted */
        _cleanup_free_ char *s2 = build(&empty);
        assert_string_equal(s2, "");
}

static void test_empty_value(void **state) {
        Opts o = { .str_empty_value = "none", .i = { true, -1 } };
        _cleanup_free_ char *s = build(&o);
        assert_string_equal(s, "");
        Opts o2 = { .str_empty_value = "external", .i = { true, 0 } };
        _cleanup_free_ char *s2 = build(&o2);
        assert_string_equal(s2, "--cloud-provider=external --i=0");
}

static void test_bool_explicit(void **state) {
        Opts f = { .b = { true, false } }, t = { .b = { true, true } };
        _cleanup_free_ char *sf = build(&f), *st = build(&t);
        assert_string_equal(sf, "--b=false");
        assert_string_equal(st, "--b=true");
}

static void test_int(void **state) {
        Opts o = { .i = { true, 0 } }, n = { .i = { true, -5 } }, big = { .i = { true, 4294967296LL } };
        _cleanup_free_ char *s = build(&o), *sn = build(&n), *sb = build(&big);
        assert_string_equal(s, "--i=0");
        assert_string_equal(sn, "--i=-5");
        assert_string_equal(sb, "--i=4294967296");
}

static void test_duration_go_form(void **state) {
        Opts m = { .d = { true, 60 * USEC_PER_SEC } }, h = { .d = { true, 3600 * USEC_PER_SEC } },
             ms = { .d = { true, 250 * USEC_PER_MSEC } }, z = { .d = { true, 0 } };
        _cleanup_free_ char *sm = build(&m), *sh = build(&h), *sms = build(&ms), *sz = build(&z);
        assert_string_equal(sm, "--d=1m0s");
        assert_string_equal(sh, "--d=1h0m0s");
        assert_string_equal(sms, "--d=250ms");
        assert_string_equal(sz, "--d=0s");
}

static void test_enum(void **state) {
        Opts o = { .e = { true, 1 } };
        _cleanup_free_ char *s = build(&o);
        assert_string_equal(s, "--mode=ipvs");
        Opts bad = { .e = { true, 7 } };
        char **l = NULL;
        assert_int_equal(flags_build(fields, &bad, 0, &l), -EINVAL);
        assert_null(l);
}

static void test_map_sorted(void **state) {
        char *map[] = { "b", "2", "a", "1", "c", "true", NULL };
        Opts o = { .map = map };
        _cleanup_free_ char *s = build(&o);
        assert_string_equal(s, "--feature-gates=a=1,b=2,c=true");
        Opts u = { .map_unsorted = map };
        _cleanup_free_ char *su = build(&u);
        assert_string_equal(su, "--labels=b=2,a=1,c=true");
        char *odd[] = { "a", NULL };
        Opts bad = { .map = odd };
        char **l = NULL;
        assert_int_equal(flags_build(fields, &bad, 0, &l), -EINVAL);
}

static void test_list_joined_and_repeated(void **state) {
        char *list[] = { "z", "a", NULL }, *files[] = { "/b.pub", "/a.pub", NULL }, *none[] = { NULL };
        Opts o = { .list = list, .repeat = files };
        _cleanup_free_ char *s = build(&o);
        /* elements keep their order inside a flag; the flags themselves are sorted */
        assert_string_equal(s, "--key-file=/a.pub --key-file=/b.pub --list=z,a");
        Opts e = { .list = none, .repeat = none };
        _cleanup_free_ char *se = build(&e);
        assert_string_equal(se, "");
}

static void test_nested_struct(void **state) {
        Inner items[] = { { .name = "x" } };
        Opts o = { .inner = { .name = "n", .level = { true, 4 } }, .items = { items, 1 } };
        _cleanup_free_ char *s = build(&o);
        assert_string_equal(s, "--inner-name=n --v=4");
}

static void test_sorted_output(void **state) {
        char *map[] = { "k", "v", NULL };
        Opts o = { .str = "s", .b = { true, true }, .i = { true, 3 }, .map = map, .inner.name = "n" };
        char **l = NULL;
        assert_int_equal(flags_build(fields, &o, 0, &l), 0);
        assert_int_equal(strv_length(l), 5);
        for (size_t i = 1; l[i]; i++)
                assert_true(strcmp(l[i - 1], l[i]) < 0);
        strv_free(l);
}

static void test_fill_defaults(void **state) {
        Opts o = {};
        assert_int_equal(flags_fill_defaults(fields, &o), 0);
        assert_true(o.inner.level.set);
        assert_int_equal(o.inner.level.value, 2);
        Opts keep = { .inner.level = { true, 0 } };
        assert_int_equal(flags_fill_defaults(fields, &keep), 0);
        assert_int_equal(keep.inner.level.value, 0);
}

/* A field whose flag exists only in some Kubernetes versions is left out for the others, with its default;
 * version 0 (etcd, no Kubernetes version) leaves nothing out. */
typedef struct Gated {
        OptInt old_port, new_port, always;
} Gated;

static const Field gated_fields[] = {
        { .name = "oldPort",
          .type = FIELD_INT,
          .offset = offsetof(Gated, old_port),
          .flag = "port",
          .default_value = "0",
          .k8s = { .until = 23 } },
        { .name = "newPort",
          .type = FIELD_INT,
          .offset = offsetof(Gated, new_port),
          .flag = "new-port",
          .k8s = { .since = 27, .until = 29 } },
        { .name = "always", .type = FIELD_INT, .offset = offsetof(Gated, always), .flag = "always" },
        {},
};

static char *build_gated(unsigned minor) {
        Gated g = { .new_port = { true, 7 }, .always = { true, 1 } };
        _cleanup_strv_free_ char **l = NULL;
        assert_int_equal(flags_fill_defaults(gated_fields, &g), 0);
        assert_int_equal(flags_build(gated_fields, &g, minor, &l), 0);
        return strv_join(l, " ");
}

static void test_k8s_gates(void **state) {
        const struct {
                unsigned minor;
                const char *want;
        } cases[] = {
                { 0, "--always=1 --new-port=7 --port=0" },
                { 20, "--always=1 --port=0" },
                { 23, "--always=1 --port=0" },
                { 24, "--always=1" },
                { 27, "--always=1 --new-port=7" },
                { 29, "--always=1 --new-port=7" },
                { 30, "--always=1" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *s = build_gated(cases[i].minor);
                assert_non_null(s);
                if (!streq(s, cases[i].want))
                        fail_msg("1.%u: got '%s', want '%s'", cases[i].minor, s, cases[i].want);
        }
}

/* Flags made by hand (etcd's) take the same "--flag=value" form as the table's. */
static void test_push(void **state) {
        _cleanup_strv_free_ char **l = NULL;
        assert_int_equal(flags_push(&l, "name", "etcd-a"), 0);
        assert_int_equal(flags_pushf(&l, "listen-client-urls", "%s://0.0.0.0:%d", "https", 4001), 0);
        assert_int_equal(strv_length(l), 2);
        assert_string_equal(l[0], "--name=etcd-a");
        assert_string_equal(l[1], "--listen-client-urls=https://0.0.0.0:4001");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_unset_emits_nothing),
                cmocka_unit_test(test_k8s_gates),
                cmocka_unit_test(test_string),
                cmocka_unit_test(test_empty_value),
                cmocka_unit_test(test_bool_explicit),
                cmocka_unit_test(test_int),
                cmocka_unit_test(test_duration_go_form),
                cmocka_unit_test(test_enum),
                cmocka_unit_test(test_map_sorted),
                cmocka_unit_test(test_list_joined_and_repeated),
                cmocka_unit_test(test_nested_struct),
                cmocka_unit_test(test_sorted_output),
                cmocka_unit_test(test_fill_defaults),
                cmocka_unit_test(test_push),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
