/* SPDX-License-Identifier: Apache-2.0 */
/* Who this node is: address literals as they enter, the interface filter of address detection (a pure
 * function over tables), machine-id(5) files, and holder comparison by name and machine id. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/in-addr-util.h"
#include "basic/machine-id.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "cloud/node-addrs.h"
#include "cloud/volume.h"
#include "unit-test.h"

static void test_in_addr_literal(void **state) {
        static const char *const good[][2] = {
                { "192.0.2.11", "192.0.2.11" },
                { "0.0.0.0", "0.0.0.0" },
                { "255.255.255.255", "255.255.255.255" },
                { "fd00::1", "fd00::1" },
                { "2001:DB8:0:0:0:0:0:1", "2001:db8::1" },
                { "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255",
                  "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff" },
                { "::ffff:192.0.2.1", "::ffff:192.0.2.1" },
        };
        static const char *const bad[] = {
                "",
                "192.0.2.11 ",
                " 192.0.2.11",
                "192.0.2.11\n",
                "192.0.2.1 0",
                "192.0.2",
                "192.0.2.256",
                "010.0.0.1",
                "10.0.0.1/24",
                "fe80::1%eth0",
                "10.0.0.1,10.0.0.2",
                "host.example",
                "::1::1",
                "0x7f.0.0.1",
                "1111:2222:3333:4444:5555:6666:777.888.999.000",
        };
        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                char *c = NULL;
                int r = in_addr_literal_parse(good[i][0], &c);
                if (r < 0)
                        fail_msg("rejected '%s'", good[i][0]);
                assert_string_equal(c, good[i][1]);
                /* the canonical form is a literal too (what the pool record gets) */
                assert_true(in_addr_literal_valid(c));
                free(c);
        }
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (in_addr_literal_valid(bad[i]))
                        fail_msg("accepted '%s'", bad[i]);
        assert_int_equal(in_addr_literal_parse("192.0.2.1", NULL), AF_INET);
        assert_int_equal(in_addr_literal_parse("::1", NULL), AF_INET6);
        assert_false(in_addr_literal_valid(NULL));
}

/* Network prefixes as the API gives a node's podCIDR: a network in either family, nothing else. */
static void test_in_addr_prefix(void **state) {
        static const char *const good4[] = { "10.1.2.0/24", "100.96.0.0/11", "0.0.0.0/0", "10.1.2.3/32" };
        static const char *const good6[] = { "fd00::/64", "2001:db8::/32", "::/0" };
        static const char *const bad[] = { "10.1.2.3/24",  "10.1.2.0",    "10.1.2.0/",    "10.1.2.0/33",
                                           "10.1.2.0/-1",  "10.1.2.0/2x", "fd00::1/64",   "fd00::/129",
                                           "x/24",         "/24",         "10.1.2.0/24 ", " 10.1.2.0/24",
                                           "10.1.2.0/24/1" };
        for (size_t i = 0; i < ELEMENTSOF(good4); i++)
                assert_int_equal(in_addr_prefix_parse(good4[i], NULL, NULL), AF_INET);
        for (size_t i = 0; i < ELEMENTSOF(good6); i++)
                assert_int_equal(in_addr_prefix_parse(good6[i], NULL, NULL), AF_INET6);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (in_addr_prefix_parse(bad[i], NULL, NULL) >= 0)
                        fail_msg("accepted '%s'", bad[i]);
        assert_int_equal(in_addr_prefix_parse(NULL, NULL, NULL), -EINVAL);
}

/* The one loopback rule (plain http is allowed only there: the AWS endpoints, the API server). */
static void test_host_is_loopback(void **state) {
        static const struct {
                const char *host;
                bool loopback;
        } cases[] = {
                { "localhost", true },
                { "LocalHost", true },
                { "127.0.0.1", true },
                { "127.255.0.9", true },
                { "[::1]", true },
                { "::1", true },
                { "[0:0::1]", true },
                { "128.0.0.1", false },
                { "127.0.0.1.example.com", false },
                { "localhost.", false },
                { "example.com", false },
                { "[::2]", false },
                { "10.0.0.1", false },
                { "", false },
                { "0x7f.0.0.1", false },
                { "[::ffff:127.0.0.1]", false },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                if (in_addr_host_is_loopback(cases[i].host, strlen(cases[i].host)) != cases[i].loopback)
                        fail_msg("'%s': wanted %s", cases[i].host, cases[i].loopback ? "loopback" : "not");
        /* len bounds the host: the port after it is not read */
        assert_true(in_addr_host_is_loopback("127.0.0.1:8080", 9));
        assert_false(in_addr_host_is_loopback(NULL, 0));
}

#define UP (IFF_UP | IFF_RUNNING)

static NodeInterfaceAddr ifa(const char *name, unsigned flags, const char *address) {
        return (NodeInterfaceAddr){ .name = name, .flags = flags, .family = AF_INET, .address = address };
}

static void test_interface_filter(void **state) {
        NodeInterfaceAddr l[32];
        size_t n = 0;
        char **got = NULL;

        l[n++] = ifa("eth1", UP, "192.0.2.12");
        l[n++] = ifa("lo", UP | IFF_LOOPBACK, "127.0.0.1");
        l[n++] = ifa("eth0", UP, "192.0.2.11");
        l[n++] = ifa("eth0", UP, "169.254.3.4");           /* link-local on a real interface */
        l[n++] = ifa("eth2", IFF_BROADCAST, "192.0.2.13"); /* down */
        l[n++] = ifa("docker0", UP, "172.17.0.1");
        l[n++] = ifa("cni0", UP, "10.244.0.1");
        l[n++] = ifa("flannel.1", UP, "10.244.0.0");
        l[n++] = ifa("cali1234", UP, "10.2.0.1");
        l[n++] = ifa("veth99", UP, "10.3.0.1");
        l[n++] = ifa("vxlan.calico", UP, "10.4.0.1");
        l[n++] = ifa("virbr0", UP, "192.168.122.1");
        l[n++] = ifa("br-0a1b2c", UP, "172.18.0.1");
        l[n++] = ifa("kube-ipvs0", UP, "10.96.0.1");
        l[n++] = ifa("tunl0", UP, "10.5.0.1");
        l[n++] = ifa("weave", UP, "10.32.0.1");
        l[n] = ifa("lan0", UP, "198.51.100.1"); /* a bridge by another name */
        l[n++].is_bridge = true;
        l[n] = ifa("dummy0", UP, "198.51.100.2"); /* virtual, no parent */
        l[n++].is_virtual = true;
        l[n] = ifa("bond0", UP, "198.51.100.3"); /* virtual on top of real ports: kept */
        l[n].is_virtual = true;
        l[n++].has_lower = true;
        l[n] = ifa("eth0", UP, "2001:db8::1"); /* detection is IPv4 only */
        l[n++].family = AF_INET6;
        l[n++] = ifa("eth3", UP, "192.0.2.11"); /* the same address twice: once */

        assert_int_equal(node_addrs_filter(l, n, &got), 0);
        char *joined = strv_join(got, " ");
        assert_string_equal(joined, "192.0.2.11 192.0.2.12 198.51.100.3");
        free(joined);
        strv_free(got);

        assert_string_equal(node_addr_skip_reason(&l[1]), "loopback");
        assert_non_null(strstr(node_addr_skip_reason(&l[3]), "link-local"));
        assert_non_null(strstr(node_addr_skip_reason(&l[5]), "container"));
        assert_string_equal(node_addr_skip_reason(&l[16]), "bridge");
        assert_non_null(strstr(node_addr_skip_reason(&l[17]), "without a parent"));
        assert_null(node_addr_skip_reason(&l[18]));
        /* "eth0.100" style VLANs and names merely containing a prefix are not container networking */
        NodeInterfaceAddr vlan = ifa("eth0.100", UP, "192.0.2.99"),
                          mydocker = ifa("enp0docker", UP, "192.0.2.98");
        assert_null(node_addr_skip_reason(&vlan));
        assert_null(node_addr_skip_reason(&mydocker));

        /* nothing usable: an empty list, not an error */
        assert_int_equal(node_addrs_filter(l + 1, 1, &got), 0);
        assert_int_equal(strv_length(got), 0);
        strv_free(got);
        /* a kept address that is no literal is an error, never copied */
        NodeInterfaceAddr junk = ifa("eth0", UP, "192.0.2.1 ");
        assert_int_equal(node_addrs_filter(&junk, 1, &got), -EINVAL);
}

static void test_interface_filter_bound(void **state) {
        NodeInterfaceAddr l[NODE_ADDRS_MAX + 1];
        char addrs[NODE_ADDRS_MAX + 1][32], **got = NULL;

        for (size_t i = 0; i <= NODE_ADDRS_MAX; i++) {
                snprintf(addrs[i], sizeof(addrs[i]), "192.0.2.%zu", i + 1);
                l[i] = ifa("eth0", UP, addrs[i]);
        }
        /* exactly the bound: all of them */
        assert_int_equal(node_addrs_filter(l, NODE_ADDRS_MAX, &got), 0);
        assert_int_equal(strv_length(got), NODE_ADDRS_MAX);
        strv_free(got);
        /* one more: an error, not a truncation */
        got = NULL;
        assert_int_equal(node_addrs_filter(l, NODE_ADDRS_MAX + 1, &got), PK_ETOOBIG);
        assert_null(got);
        /* skipped interfaces do not count */
        l[NODE_ADDRS_MAX].name = "docker0";
        assert_int_equal(node_addrs_filter(l, NODE_ADDRS_MAX + 1, &got), 0);
        assert_int_equal(strv_length(got), NODE_ADDRS_MAX);
        strv_free(got);
}

static void test_detect_on_this_machine(void **state) {
        char **got = NULL;
        /* whatever this machine has: literals, never loopback, at most the bound */
        int r = node_addrs_detect(NULL, &got);
        if (r == PK_ETOOBIG)
                return;
        assert_int_equal(r, 0);
        assert_true(strv_length(got) <= NODE_ADDRS_MAX);
        STRV_FOREACH (a, got) {
                assert_true(in_addr_literal_valid(*a));
                assert_null(startswith(*a, "127."));
        }
        strv_free(got);
}

static char *write_tmp(const char *content, size_t len) {
        char tmpl[] = "/tmp/pk-machine-id-XXXXXX";
        int fd = mkstemp(tmpl);
        assert_true(fd >= 0);
        assert_int_equal(loop_write(fd, content, len), 0);
        close(fd);
        return strdup(tmpl);
}

static void test_machine_id(void **state) {
        static const char *const bad[] = {
                "",
                "\n",
                "uninitialized\n",
                "3D1219C7C4C5404AADA1F6D2A48ADFDA\n",
                "3d1219c7c4c5404aada1f6d2a48adfd\n",
                "3d1219c7c4c5404aada1f6d2a48adfda4\n",
                "3d1219c7c4c5404aada1f6d2a48adfda\n\n",
                " 3d1219c7c4c5404aada1f6d2a48adfda",
                "3d1219c7-c4c5-404a-ada1-f6d2a48adfda",
                "00000000000000000000000000000000\n",
                ("3d1219c7c4c5404aada1f6d2a48adfda\n" /* then more than 64 bytes in all */
                 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
        };
        char *id = NULL, *path;

        path = write_tmp("3d1219c7c4c5404aada1f6d2a48adfda\n", 33);
        assert_int_equal(machine_id_read(path, &id), 0);
        assert_string_equal(id, "3d1219c7c4c5404aada1f6d2a48adfda");
        free(id);
        unlink(path);
        free(path);
        path = write_tmp("3d1219c7c4c5404aada1f6d2a48adfda", 32); /* no newline: fine */
        assert_int_equal(machine_id_read(path, &id), 0);
        free(id);
        unlink(path);
        free(path);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                id = NULL;
                path = write_tmp(bad[i], strlen(bad[i]));
                if (machine_id_read(path, &id) != PK_EMALFORMED)
                        fail_msg("accepted '%s'", bad[i]);
                assert_null(id);
                unlink(path);
                free(path);
        }
        path = write_tmp("3d1219c7c4c5404a\0ada1f6d2a48adfda", 33); /* embedded NUL */
        assert_int_equal(machine_id_read(path, &id), PK_EMALFORMED);
        unlink(path);
        free(path);
        assert_int_equal(machine_id_read("/nonexistent/machine-id", &id), -ENOENT);
        assert_int_equal(machine_id_read("/tmp", &id), PK_EMALFORMED); /* a directory */
}

static void test_holder_comparison(void **state) {
        char m1[] = "11111111111111111111111111111111", m2[] = "22222222222222222222222222222222";
        NodeIdentity n1m1 = { .name = (char *)"n1", .machine_id = m1 };
        NodeIdentity n1m2 = { .name = (char *)"n1", .machine_id = m2 };
        NodeIdentity n1 = { .name = (char *)"n1" }; /* --node-name, no machine-id file */
        NodeIdentity n2m1 = { .name = (char *)"n2", .machine_id = m1 };
        VolumeAttachment by_n1m1 = { .node = (char *)"n1", .machine_id = m1 };
        VolumeAttachment by_n1 = { .node = (char *)"n1" }; /* a record from before machine ids */
        VolumeAttachment none = {};

        assert_true(node_identity_holds(&n1m1, &by_n1m1));
        assert_false(node_identity_holds(&n1m2, &by_n1m1)); /* same name, other machine */
        assert_true(node_identity_name_clash(&n1m2, &by_n1m1));
        assert_false(node_identity_holds(&n1, &by_n1m1)); /* cannot prove it is that machine */
        assert_true(node_identity_name_clash(&n1, &by_n1m1));
        assert_false(node_identity_holds(&n2m1, &by_n1m1)); /* another node: not a clash */
        assert_false(node_identity_name_clash(&n2m1, &by_n1m1));
        /* name-only records: matched by name, as before */
        assert_true(node_identity_holds(&n1m1, &by_n1));
        assert_true(node_identity_holds(&n1m2, &by_n1));
        assert_true(node_identity_holds(&n1, &by_n1));
        assert_false(node_identity_name_clash(&n1m2, &by_n1));
        assert_false(node_identity_holds(&n1m1, &none));
        assert_false(node_identity_name_clash(&n1m1, &none));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_in_addr_literal),
                cmocka_unit_test(test_in_addr_prefix),
                cmocka_unit_test(test_host_is_loopback),
                cmocka_unit_test(test_interface_filter),
                cmocka_unit_test(test_interface_filter_bound),
                cmocka_unit_test(test_detect_on_this_machine),
                cmocka_unit_test(test_machine_id),
                cmocka_unit_test(test_holder_comparison),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
