/* SPDX-License-Identifier: Apache-2.0 */
/* The Nodes as the pods' network reads them (kube/kube-node.c): names, pod CIDRs, internal addresses, and
 * every value that is not what it claims left out with a warning naming the Node. */
#include <stdlib.h>
#include <string.h>

#include "basic/strv.h"
#include "kube/kube-node.h"
#include "unit-test.h"

static const char list_text[] =
    "{\"items\": ["
    "{\"metadata\": {\"name\": \"a\"}, \"spec\": {\"podCIDR\": \"100.96.0.0/24\", \"podCIDRs\": "
    "[\"100.96.0.0/24\", \"fd00:0:0:1::/64\"]}, \"status\": {\"addresses\": [{\"type\": \"Hostname\", "
    "\"address\": \"a\"}, {\"type\": \"InternalIP\", \"address\": \"198.18.43.10\"}, {\"type\": "
    "\"ExternalIP\", \"address\": \"203.0.113.1\"}]}},"
    "{\"metadata\": {\"name\": \"w1\"}, \"spec\": {\"podCIDR\": \"100.96.1.0/24\"}, \"status\": "
    "{\"addresses\": "
    "[{\"type\": \"InternalIP\", \"address\": \"198.18.43.20\"}]}},"
    "{\"metadata\": {\"name\": \"new\"}, \"spec\": {}, \"status\": {}},"
    "{\"metadata\": {\"name\": \"bad\"}, \"spec\": {\"podCIDR\": \"100.96.2.7/24\"}, \"status\": "
    "{\"addresses\": "
    "[{\"type\": \"InternalIP\", \"address\": \"198.18.43.30/24\"}, {\"type\": \"InternalIP\", \"address\": "
    "5}]}},"
    "{\"metadata\": {\"name\": \"Not/A/Name\"}},"
    "{\"metadata\": {}}"
    "]}";

static void test_networks(void **state) {
        json_t *list = json_loads(list_text, 0, NULL);
        assert_non_null(list);
        KubeNodeNetwork *l = NULL;
        size_t n = 0;
        _cleanup_strv_free_ char **warnings = NULL;
        assert_int_equal(kube_node_networks(list, &l, &n, &warnings), 0);
        assert_int_equal(n, 4);
        assert_string_equal(l[0].name, "a");
        assert_int_equal(strv_length(l[0].pod_cidrs), 2);
        assert_string_equal(l[0].pod_cidrs[1], "fd00:0:0:1::/64");
        assert_int_equal(strv_length(l[0].internal_ips), 1);
        assert_string_equal(l[0].internal_ips[0], "198.18.43.10");
        assert_string_equal(l[1].pod_cidrs[0], "100.96.1.0/24");
        assert_int_equal(strv_length(l[2].pod_cidrs), 0); /* not allocated yet */
        assert_int_equal(strv_length(l[3].pod_cidrs), 0);
        assert_int_equal(strv_length(l[3].internal_ips), 0);
        assert_int_equal(strv_length(warnings), 3);
        assert_string_equal(warnings[0], "Node bad: podCIDR '100.96.2.7/24' is not a network prefix");
        assert_string_equal(warnings[1], "Node bad: InternalIP '198.18.43.30/24' is not an IP address");
        assert_string_equal(warnings[2], "Node bad: InternalIP 'n/a' is not an IP address");
        kube_node_networks_free(l, n);
        json_decref(list);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_networks),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
