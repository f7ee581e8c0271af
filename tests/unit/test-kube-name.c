/* SPDX-License-Identifier: Apache-2.0 */
/* Kubernetes' name rules (kube/kube-name.h), with the good and bad values of Kubernetes' own tests
 * (k8s.io/apimachinery/pkg/util/validation/validation_test.go: TestIsDNS1123Label, TestIsDNS1123Subdomain,
 * TestIsDNS1035Label, TestIsConfigMapKey), and the names that would climb out of a directory. */
#include "unit-test.h"

#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "kube/kube-name.h"
#include "kube/kube-resource.h"

static char *repeat(char c, size_t n) {
        char *s = malloc(n + 1);
        assert_non_null(s);
        memset(s, c, n);
        s[n] = 0;
        return s;
}

/* Names that would make a path climb, or be no file name at all: refused by every rule. */
static const char *const climbing[] = {
        "", ".", "..", "../x", "../../../manifests/evil", "a/b", "/etc", "a/../b", "x\n", "a\\b",
};

/* The rule takes each of good and refuses each of bad and of climbing; with max_len, it takes a name of
 * max_len characters and refuses one of max_len + 1. */
static void check_rule(KubeNameRule rule, const char *const *good, size_t n_good, const char *const *bad,
                       size_t n_bad, size_t max_len) {
        for (size_t i = 0; i < n_good; i++)
                if (!kube_name_valid(rule, good[i]))
                        fail_msg("rule %d refused '%s'", rule, good[i]);
        for (size_t i = 0; i < n_bad; i++)
                if (kube_name_valid(rule, bad[i]))
                        fail_msg("rule %d accepted '%s'", rule, bad[i]);
        for (size_t i = 0; i < ELEMENTSOF(climbing); i++)
                if (kube_name_valid(rule, climbing[i]))
                        fail_msg("rule %d accepted '%s'", rule, climbing[i]);
        if (max_len == 0)
                return;
        char *max = repeat('a', max_len), *over = repeat('a', max_len + 1);
        bool max_ok = kube_name_valid(rule, max), over_ok = kube_name_valid(rule, over);
        free(max);
        free(over);
        if (!max_ok || over_ok)
                fail_msg("rule %d: %zu characters %s, %zu %s", rule, max_len, max_ok ? "taken" : "refused",
                         max_len + 1, over_ok ? "taken" : "refused");
}

#define CHECK_RULE(rule, good, bad, max_len) \
        check_rule(rule, good, ELEMENTSOF(good), bad, ELEMENTSOF(bad), max_len)

static void test_dns1123_label(void **state) {
        static const char *const good[] = { "a", "ab", "abc", "a1", "a-1", "a--1--2--b",
                                            "0", "01", "012", "1a", "1-a", "1--a--b--2" };
        static const char *const bad[] = { "A",   "ABC", "aBc", "A1", "A-1", "1-A", "-",   "a-",
                                           "-a",  "1-",  "-1",  "_",  "a_",  "_a",  "a_b", "1_",
                                           "_1",  "1_2", ".",   "a.", ".a",  "a.b", "1.",  ".1",
                                           "1.2", " ",   "a ",  " a", "a b", "1 ",  " 1",  "1 2" };
        CHECK_RULE(KUBE_NAME_DNS_LABEL, good, bad, 63);
}

static void test_dns1123_subdomain(void **state) {
        static const char *const good[] = {
                "a",
                "ab",
                "abc",
                "a1",
                "a-1",
                "a--1--2--b",
                "0",
                "01",
                "012",
                "1a",
                "1-a",
                "1--a--b--2",
                "a.a",
                "ab.a",
                "abc.a",
                "a1.a",
                "a-1.a",
                "a--1--2--b.a",
                "a.1",
                "ab.1",
                "abc.1",
                "a1.1",
                "a-1.1",
                "a--1--2--b.1",
                "0.a",
                "01.a",
                "012.a",
                "1a.a",
                "1-a.a",
                "0.1",
                "01.1",
                "012.1",
                "1a.1",
                "1-a.1",
                "a.b.c.d.e",
                "aa.bb.cc.dd.ee",
                "1.2.3.4.5",
                "11.22.33.44.55",
                "kube-apiserver",
                "kube-scheduler-5d8f7c9b4d",
        };
        static const char *const bad[] = {
                "A",    "ABC",  "aBc",  "A1",  "A-1",  "1-A",  "-",    "a-",  "-a",   "1-",    "-1",
                "_",    "a_",   "_a",   "a_b", "1_",   "_1",   "1_2",  "a.",  ".a",   "a..b",  "1.",
                ".1",   "1..2", " ",    "a ",  " a",   "a b",  "1 ",   " 1",  "1 2",  "A.a",   "aB.a",
                "ab.A", "A1.a", "a1.A", "A.1", "aB.1", "A1.1", "1A.1", "0.A", "01.A", "012.A", "1A.a",
                "1a.A", "a@b",  "a,b",  "a;b", "a:b",  "a%b",  "a?b",  "a$b", "a.-b", "a-.b",
        };
        CHECK_RULE(KUBE_NAME_DNS_SUBDOMAIN, good, bad, 253);
}

static void test_dns1035_label(void **state) {
        static const char *const good[] = { "a", "ab", "abc", "a1", "a-1", "a--1--2--b" };
        static const char *const bad[] = { "0",   "01", "012", "1a",  "1-a", "1--a--b--2", "A",  "ABC",
                                           "aBc", "A1", "A-1", "1-A", "-",   "a-",         "-a", "1-",
                                           "-1",  "_",  "a_",  "_a",  "a_b", ".",          "a.", "a.b" };
        CHECK_RULE(KUBE_NAME_DNS1035_LABEL, good, bad, 63);
}

static void test_data_key(void **state) {
        static const char *const good[] = {
                "a",  "ab",  "abc", "a1",  "a-1", "a_1", "a.1", "a--1--2--b", "0",       "01",     "012",
                "1a", "1-a", "1_a", "1.a", "-a",  "a-",  "_a",  "a_",         ".a",      "a.",     "A",
                "AB", "aB",  "Ab",  "A1",  "A-1", "A_1", "A.1", "a--1--2--B", "tls.key", "ca.crt",
        };
        static const char *const bad[] = { "a b", "a:b", "a/b", "a%b", "a@b", "..data" };
        CHECK_RULE(KUBE_NAME_DATA_KEY, good, bad, 253);
}

static void test_rbac(void **state) {
        static const char *const good[] = { "system:node-proxier", "system:masters", "Admin_1", "a@b" };
        static const char *const bad[] = { "a b", "a%20b", "a?b", "a#b" };
        CHECK_RULE(KUBE_NAME_RBAC, good, bad, 0);
}

/* The message names what was refused, shows the value printable and short, and says the rule. */
static void test_check_message(void **state) {
        char *err = NULL;
        assert_int_equal(kube_name_check(KUBE_NAME_DNS_SUBDOMAIN, "DaemonSet", "kube-apiserver", &err), 0);
        assert_null(err);
        assert_int_equal(
            kube_name_check(KUBE_NAME_DNS_SUBDOMAIN, "DaemonSet", "../../../manifests/evil", &err), -EINVAL);
        assert_string_equal(err,
                            "DaemonSet '../../../manifests/evil' is not valid: want a DNS-1123 subdomain: "
                            "lower-case letters, digits, '-' and '.', at most 253 characters, each "
                            "dot-separated part starting and ending with a letter or digit");
        free(err);
        err = NULL;
        char *longname = repeat('x', 300);
        longname[3] = '\n';
        assert_int_equal(kube_name_check(KUBE_NAME_DATA_KEY, "key", longname, &err), -EINVAL);
        assert_non_null(strstr(err, "key 'xxx?xxx"));
        assert_non_null(strstr(err, "...' is not valid"));
        assert_null(strchr(err, '\n'));
        free(longname);
        free(err);
}

/* Each kind's names by its own rule: a Service is a DNS-1035 label, a Namespace a DNS-1123 label. */
static void test_kind_rules(void **state) {
        static const struct {
                const char *api_version, *kind, *ns, *name;
                bool ok;
        } cases[] = {
                { "v1", "Secret", "kube-system", "kube-apiserver.pki", true },
                { "v1", "Secret", "kube-system", "../secrets", false },
                { "v1", "Service", "default", "kubernetes", true },
                { "v1", "Service", "default", "1abc", false },
                { "v1", "Namespace", NULL, "kube-system", true },
                { "v1", "Namespace", NULL, "kube.system", false },
                { "v1", "ConfigMap", "kube.system", "x", false },
                { "apps/v1", "ReplicaSet", "kube-system", "kube-scheduler-5d8f7c9b4d", true },
                { "rbac.authorization.k8s.io/v1", "ClusterRoleBinding", NULL, "system:node-proxier", true },
                { "rbac.authorization.k8s.io/v1", "ClusterRoleBinding", NULL, "..", false },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const KubeResource *res;
                char *p = NULL, *err = NULL;
                assert_int_equal(kube_resource_find(cases[i].api_version, cases[i].kind, &res, NULL), 0);
                int r = kube_resource_path(res, cases[i].ns, cases[i].name, &p, &err);
                if ((r >= 0) != cases[i].ok)
                        fail_msg("%s '%s': %d %s", cases[i].kind, cases[i].name, r, err ? err : "");
                free(p);
                free(err);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_dns1123_label), cmocka_unit_test(test_dns1123_subdomain),
                cmocka_unit_test(test_dns1035_label), cmocka_unit_test(test_data_key),
                cmocka_unit_test(test_rbac),          cmocka_unit_test(test_check_message),
                cmocka_unit_test(test_kind_rules),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
