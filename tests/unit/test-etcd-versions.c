/* SPDX-License-Identifier: Apache-2.0 */
/* The etcd versions protokube runs (model/etcd-versions.h) and the one version parser under them
 * (basic/semver.h): the table agrees with itself, an image's tag names its version or none. */
#include <string.h>

#include "basic/semver.h"
#include "basic/string-util.h"
#include "model/etcd-versions.h"
#include "unit-test.h"

static void test_semver(void **state) {
        Semver a, b;
        assert_int_equal(semver_parse("3.5.16", 0, &a), 0);
        assert_true(a.major == 3 && a.minor == 5 && a.patch == 16);
        assert_int_equal(semver_parse("3.4.23", 0, &b), 0);
        assert_true(semver_compare(&a, &b) > 0 && semver_compare(&b, &a) < 0);
        assert_int_equal(semver_compare(&a, &a), 0);
        assert_false(semver_same_minor(&a, &b));
        assert_int_equal(semver_parse("3.5.0", 0, &b), 0);
        assert_true(semver_same_minor(&a, &b));
        /* the flags: 'v' and a pre-release only when asked for */
        assert_int_equal(semver_parse("v3.5.16", 0, &a), -EINVAL);
        assert_int_equal(semver_parse("v3.5.16", SEMVER_ALLOW_V, &a), 0);
        assert_int_equal(semver_parse("3.5.0-rc.1", 0, &a), -EINVAL);
        assert_int_equal(semver_parse("3.5.0-rc.1", SEMVER_ALLOW_PRERELEASE, &a), 0);
        const char *bad[] = { "",       "3.5",    "3.5.",   "3.05.1", "3.5.1.2",
                              "-3.5.1", "3.5.1-", "3.5.1 ", "a.b.c",  "3.5.1234567" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (semver_parse(bad[i], SEMVER_ALLOW_V | SEMVER_ALLOW_PRERELEASE, &a) != -EINVAL)
                        fail_msg("'%s' parsed", bad[i]);
        assert_int_equal(semver_parse(NULL, 0, &a), -EINVAL);
}

/* Each row's string is its semver, the rows ascend, and the list and the text name the same versions. */
static void test_table(void **state) {
        const char *const *list = etcd_versions_list();
        size_t n = 0;
        for (; list[n]; n++) {
                const EtcdVersionInfo *v = etcd_version_find(list[n]);
                Semver s;
                assert_non_null(v);
                assert_int_equal(semver_parse(v->version, 0, &s), 0);
                assert_int_equal(semver_compare(&s, &v->semver), 0);
                assert_non_null(strstr(etcd_versions_text(), v->version));
                assert_true(streq(v->restore_tool, "etcdctl") || streq(v->restore_tool, "etcdutl"));
                if (n > 0)
                        assert_true(semver_compare(&etcd_versions[n - 1].semver, &v->semver) < 0);
                assert_ptr_equal(v, &etcd_versions[n]);
                for (const char *const *f = v->flags; f && *f; f++)
                        assert_true(strchr(*f, '=') && !startswith(*f, "-"));
        }
        assert_int_equal(n, etcd_versions_n);
        assert_null(etcd_version_find("3.5.2"));
        assert_null(etcd_version_find(NULL));
        assert_non_null(etcd_version_find("3.4.13"));
        assert_non_null(etcd_version_find("3.5.16"));
}

static void test_version_of_image(void **state) {
        static const struct {
                const char *image, *version;
        } ok[] = {
                { "registry.k8s.io/etcd:3.5.16-0", "3.5.16" },
                { "registry.k8s.io/etcd:3.4.13-0", "3.4.13" },
                { "registry.k8s.io/etcd:3.5.16", "3.5.16" },
                { "quay.io/coreos/etcd:v3.5.16", "3.5.16" },
                { "localhost:5000/etcd:3.5.2-12", "3.5.2" }, /* a version the table lacks still parses */
                { "etcd:3.4.13-0", "3.4.13" },
        };
        const char *bad[] = { "registry.k8s.io/etcd",
                              "localhost:5000/etcd",
                              "registry.k8s.io/etcd:latest",
                              "registry.k8s.io/etcd:3.5.16-rc",
                              "registry.k8s.io/etcd:3.5.16-",
                              "registry.k8s.io/etcd:3.5",
                              "example.com/etcd@sha256:01",
                              "registry.k8s.io/etcd:",
                              "x",
                              "registry.k8s.io/etcd:3.5.16.1234567890123456789-0" };
        char buf[ETCD_VERSION_MAX];
        for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
                assert_int_equal(etcd_version_of_image(ok[i].image, buf), 0);
                assert_string_equal(buf, ok[i].version);
        }
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (etcd_version_of_image(bad[i], buf) != -EINVAL)
                        fail_msg("'%s' named version '%s'", bad[i], buf);
        assert_int_equal(etcd_version_of_image(NULL, buf), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_semver),
                cmocka_unit_test(test_table),
                cmocka_unit_test(test_version_of_image),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
