/* SPDX-License-Identifier: Apache-2.0 */
/* basic/dns-name: host-name rules (RFC 1123), joining, the wire form, comparisons without case or final dot.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/dns-name.h"
#include "basic/errors.h"
#include "basic/string-util.h"
#include "unit-test.h"

static void test_label_and_hostname(void **state) {
        assert_true(dns_label_is_valid("etcd-a", 6));
        assert_true(dns_label_is_valid("a.b", 1)); /* only the first n characters count */
        assert_false(dns_label_is_valid("", 0));
        assert_false(dns_label_is_valid("-a", 2));
        assert_false(dns_label_is_valid("a-", 2));
        assert_false(dns_label_is_valid("A", 1)); /* the spec and kops' names are lowercase */
        assert_false(dns_label_is_valid("a_b", 3));
        assert_false(dns_label_is_valid(NULL, 0));
        char label[70];
        memset(label, 'a', sizeof(label));
        assert_true(dns_label_is_valid(label, 63));
        assert_false(dns_label_is_valid(label, 64));

        assert_true(dns_hostname_is_valid("demo.k8s.test"));
        assert_true(dns_hostname_is_valid("a"));
        assert_false(dns_hostname_is_valid("demo.k8s.test."));
        assert_false(dns_hostname_is_valid("a..b"));
        assert_false(dns_hostname_is_valid("-a.b"));
        assert_false(dns_hostname_is_valid("Demo.test"));
        assert_false(dns_hostname_is_valid(""));
        assert_false(dns_hostname_is_valid(NULL));
        /* 253 characters is the most: four labels of 63 are 255 */
        label[63] = 0;
        _cleanup_free_ char *four = strjoin(label, ".", label, ".", label, ".", label);
        assert_false(dns_hostname_is_valid(four));
        four[252] = 0;
        assert_true(dns_hostname_is_valid(four));
}

static void test_join(void **state) {
        char *s = NULL;
        assert_int_equal(dns_name_join("etcd-a", "internal.demo.k8s.test", &s), 0);
        assert_string_equal(s, "etcd-a.internal.demo.k8s.test");
        free(s);
        s = NULL;
        assert_int_equal(dns_name_join("api", "k8s.test.", &s), -EINVAL); /* no final dot in host names */
        assert_int_equal(dns_name_join("Api", "k8s.test", &s), -EINVAL);
        assert_int_equal(dns_name_join("", "k8s.test", &s), -EINVAL);
        assert_int_equal(dns_name_join("a", "bad..suffix", &s), -EINVAL);
        assert_int_equal(dns_name_join(NULL, "k8s.test", &s), -EINVAL);
        assert_null(s); /* ret is written only on success */
        /* a suffix of 252 characters leaves no room for "a.": 254 is over the 253 of a host name */
        char label[64];
        memset(label, 'b', 63);
        label[63] = 0;
        _cleanup_free_ char *suffix = strjoin(label, ".", label, ".", label, ".", label);
        suffix[252] = 0;
        assert_true(dns_hostname_is_valid(suffix));
        assert_int_equal(dns_name_join("a", suffix, &s), -EINVAL);
        suffix[251] = 0;
        assert_int_equal(dns_name_join("a", suffix, &s), 0);
        assert_int_equal(strlen(s), DNS_HOSTNAME_MAX);
        free(s);
}

static void test_wire_and_compare(void **state) {
        uint8_t w[DNS_WIRE_NAME_MAX];
        size_t n;
        assert_int_equal(dns_name_to_wire("api.k8s.test.", w, &n), 0);
        assert_int_equal(n, 14);
        assert_memory_equal(w, "\3api\3k8s\4test\0", 14);
        assert_int_equal(dns_name_to_wire("api.k8s.test", w, &n), 0);
        assert_int_equal(n, 14);
        assert_int_equal(dns_name_to_wire(".", w, &n), 0);
        assert_int_equal(n, 1);
        assert_int_equal(dns_name_to_wire("a\\.b.c", w, &n), 0);
        assert_memory_equal(w, "\3a.b\1c\0", 7);
        assert_int_equal(dns_name_to_wire("\\065\\255.x", w, &n), 0);
        assert_memory_equal(w, "\2A\377\1x\0", 6);
        static const char *const bad[] = { "a..b", ".a", "a\\", "\\256", ".." };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_int_equal(dns_name_to_wire(bad[i], w, &n), PK_EMALFORMED);
        char label64[70];
        memset(label64, 'a', 64);
        label64[64] = 0;
        assert_int_equal(dns_name_to_wire(label64, w, &n), PK_EMALFORMED);
        label64[63] = 0;
        assert_int_equal(dns_name_to_wire(label64, w, &n), 0);
        /* 4 labels of 63 = 256 octets on the wire: one too many. */
        _cleanup_free_ char *long_name = strjoin(label64, ".", label64, ".", label64, ".", label64);
        assert_int_equal(dns_name_to_wire(long_name, w, &n), PK_EMALFORMED);

        _cleanup_free_ char *c = NULL;
        assert_int_equal(dns_name_normalize("API.K8s.Test", &c), 0);
        assert_string_equal(c, "api.k8s.test.");
        assert_true(dns_name_equal("API.k8s.test", "api.K8S.test."));
        assert_false(dns_name_equal("api.k8s.test", "api.k8s.tes"));
        assert_true(dns_name_in_zone("a.b.k8s.test.", "K8S.test"));
        assert_true(dns_name_in_zone("k8s.test", "k8s.test."));
        assert_false(dns_name_in_zone("xk8s.test", "k8s.test"));
        assert_false(dns_name_in_zone("test", "k8s.test"));
}

static void test_compare_edges(void **state) {
        /* the root holds every name; a name is in itself */
        assert_true(dns_name_in_zone("api.k8s.test", "."));
        assert_true(dns_name_in_zone("api.k8s.test", ""));
        assert_true(dns_name_in_zone("K8S.test.", "k8s.TEST"));
        assert_false(dns_name_in_zone("k8s.test", "api.k8s.test"));
        /* escapes count: "a\.b" is one label, not two */
        assert_false(dns_name_equal("a\\.b", "a.b"));
        assert_true(dns_name_equal("\\065.b", "a.B."));
        /* malformed names are never equal, nor in a zone */
        assert_false(dns_name_equal("a..b", "a..b"));
        assert_false(dns_name_in_zone("a..b", "b"));

        char text[DNS_NAME_TEXT_MAX];
        dns_name_wire_to_text((const uint8_t *)"\3API\1x\0", true, text);
        assert_string_equal(text, "api.x.");
        dns_name_wire_to_text((const uint8_t *)"\3a.b\0", false, text);
        assert_string_equal(text, "a\\.b.");
        dns_name_wire_to_text((const uint8_t *)"\0", false, text);
        assert_string_equal(text, ".");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_label_and_hostname),
                cmocka_unit_test(test_join),
                cmocka_unit_test(test_wire_and_compare),
                cmocka_unit_test(test_compare_edges),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
