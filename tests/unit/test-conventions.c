/* SPDX-License-Identifier: Apache-2.0 */
/* model/conventions: kops' etcd names, ports and paths, each derived in one place. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "model/conventions.h"
#include "unit-test.h"

typedef int (*PerCluster)(const char *cluster, char **ret);

static void check(PerCluster f, const char *cluster, const char *want) {
        char *s = NULL;
        assert_int_equal(f(cluster, &s), 0);
        assert_string_equal(s, want);
        free(s);
}

static void test_per_cluster_names(void **state) {
        check(etcd_kops_cluster_name, "main", "etcd");
        check(etcd_kops_cluster_name, "events", "etcd-events");
        check(etcd_manifest_file_name, "main", "etcd.manifest");
        check(etcd_manifest_file_name, "events", "etcd-events.manifest");
        check(etcd_manifest_file_name, "cilium", "etcd-cilium.manifest");
        check(etcd_pod_name, "main", "etcd-server");
        check(etcd_pod_name, "events", "etcd-server-events");
        check(etcd_data_dir, "main", "/var/etcd/data");
        check(etcd_data_dir, "events", "/var/etcd/data-events");
        check(etcd_cluster_token, "main", "etcd-cluster-token-etcd");
        check(etcd_cluster_token, "events", "etcd-cluster-token-etcd-events");

        /* cluster names become labels of file, pod and DNS names: anything else is refused */
        const PerCluster all[] = { etcd_kops_cluster_name, etcd_manifest_file_name, etcd_pod_name,
                                   etcd_data_dir, etcd_cluster_token };
        const char *bad[] = { "", "Main", "../x", "a.b", "-a", NULL };
        char *s = NULL;
        for (size_t i = 0; i < ELEMENTSOF(all); i++)
                for (size_t j = 0; j < ELEMENTSOF(bad); j++)
                        assert_int_equal(all[i](bad[j], &s), -EINVAL);
        assert_null(s);
        assert_true(etcd_cluster_is_main("main"));
        assert_false(etcd_cluster_is_main("events"));
        assert_false(etcd_cluster_is_main(NULL));
}

static void test_member_names(void **state) {
        char *s = NULL;
        assert_int_equal(etcd_member_name("main", "a", &s), 0);
        assert_string_equal(s, "etcd-a");
        free(s);
        assert_int_equal(etcd_member_name("events", "b", &s), 0);
        assert_string_equal(s, "etcd-events-b");
        free(s);
        assert_int_equal(etcd_member_dns_name("main", "a", "internal.demo.k8s.test", &s), 0);
        assert_string_equal(s, "etcd-a.internal.demo.k8s.test");
        free(s);
        assert_int_equal(etcd_member_dns_name("events", "c", "int.example", &s), 0);
        assert_string_equal(s, "etcd-events-c.int.example");
        free(s);
        s = NULL;
        assert_int_equal(etcd_member_name("main", "A", &s), -EINVAL);
        assert_int_equal(etcd_member_dns_name("main", "a", "bad..suffix", &s), -EINVAL);
        assert_int_equal(etcd_member_dns_name("main", "a", NULL, &s), -EINVAL);
        /* "etcd-" + a 32-character cluster + "-" + a 30-character member is 68: over one label */
        assert_int_equal(
            etcd_member_name("abcdefghijabcdefghijabcdefghijab", "abcdefghijabcdefghijabcdefghij", &s),
            -EINVAL);
        assert_null(s);
        assert_int_equal(api_dns_name("internal.demo.k8s.test", &s), 0);
        assert_string_equal(s, "api.internal.demo.k8s.test");
        free(s);
}

static void test_ports_and_paths(void **state) {
        int client = 0, peer = 0;
        assert_int_equal(etcd_default_ports("main", &client, &peer), 0);
        assert_int_equal(client, 4001);
        assert_int_equal(peer, 2380);
        assert_int_equal(etcd_default_ports("events", &client, &peer), 0);
        assert_int_equal(client, 4002);
        assert_int_equal(peer, 2381);
        client = peer = 0;
        assert_int_equal(etcd_default_ports("cilium", &client, &peer), -ENOENT);
        assert_int_equal(etcd_default_ports(NULL, &client, &peer), -ENOENT);
        assert_int_equal(client, 0); /* written only on success */

        char *s = master_mount_path("/mnt", "vol-1");
        assert_string_equal(s, "/mnt/master-vol-1");
        free(s);
        s = etcd_volume_manifest_path("/mnt/master-vol-1", "events");
        assert_string_equal(s, "/mnt/master-vol-1/k8s.io/manifests/etcd-events.manifest");
        free(s);
        assert_null(etcd_volume_manifest_path("/mnt/master-vol-1", "../../etc"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_per_cluster_names),
                cmocka_unit_test(test_member_names),
                cmocka_unit_test(test_ports_and_paths),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
