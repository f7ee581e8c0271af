/* SPDX-License-Identifier: Apache-2.0 */
/* The provider registries against the spec's enums: every value the spec accepts has its provider, under
 * the spec's own name for it, and opens; no name outside the enum finds one. */
#include "unit-test.h"

#include <stdlib.h>
#include <string.h>

#include "basic/string-util.h"
#include "cloud/providers.h"
#include "dns/dns-provider.h"
#include "spec/spec.h"

static void test_cloud(void **state) {
        char dir[] = "/tmp/pk-providers-XXXXXX";
        assert_non_null(mkdtemp(dir));
        assert_int_equal(setenv("AWS_EC2_METADATA_DISABLED", "true", 1), 0); /* no instance to ask */
        assert_int_equal(setenv("AWS_REGION", "eu-west-1", 1), 0);
        assert_int_equal(setenv("GOOGLE_CLOUD_PROJECT", "protokube-test", 1), 0);
        assert_int_equal(setenv("GCE_METADATA_HOST", "127.0.0.1:9", 1), 0); /* never asked: all is given */
        for (int c = 0; c < _CLOUD_MAX; c++) {
                const VolumeProviderVTable *vt = volume_provider_for(c);
                assert_non_null(vt);
                assert_string_equal(vt->name, cloud_provider_to_string(c));
                assert_ptr_equal(volume_provider_find(vt->name), vt);
                /* every setting the node options give, so that no provider asks its instance */
                VolumeProviderConfig cfg = { .pool_dir = dir,
                                             .node_name = "i-0123456789abcdef0",
                                             .zone = "europe-west1-b",
                                             .internal_ip = "10.0.0.1",
                                             .external_ip = "192.0.2.1" };
                VolumeProvider *p = NULL;
                _cleanup_free_ char *err = NULL;
                int r = volume_provider_open(vt->name, &cfg, &p, &err);
                if (r < 0)
                        print_message("%s: %s\n", vt->name, strnull(err));
                assert_int_equal(r, 0);
                volume_provider_free(p);
        }
        assert_null(volume_provider_for(_CLOUD_MAX));
        assert_null(volume_provider_find("digitalocean"));
        unsetenv("AWS_EC2_METADATA_DISABLED");
        unsetenv("GOOGLE_CLOUD_PROJECT");
        unsetenv("GCE_METADATA_HOST");
        unsetenv("AWS_REGION");
        rmdir(dir);
}

static void test_dns(void **state) {
        assert_null(dns_provider_for(DNS_PROVIDER_NONE));
        for (int k = 0; k < _DNS_PROVIDER_MAX; k++) {
                if (k == DNS_PROVIDER_NONE)
                        continue;
                const DnsProvider *p = dns_provider_for(k);
                assert_non_null(p);
                assert_string_equal(p->name, dns_provider_kind_to_string(k));
                assert_ptr_equal(dns_provider_find(p->name), p);
        }
        assert_null(dns_provider_for(_DNS_PROVIDER_MAX));
        assert_null(dns_provider_find("azuredns"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cloud),
                cmocka_unit_test(test_dns),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
