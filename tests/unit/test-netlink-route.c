/* SPDX-License-Identifier: Apache-2.0 */
/* protokube's routes: prefixes and PREFIX=GATEWAY parsed, the diff (nothing added where another owner
 * routes the prefix, only ours deleted), and the rtnetlink reply parser over datagrams built here. The
 * exchange with a real kernel is tests/integration/test_netlink_route.py. */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/in-addr-util.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "shared/netlink-route.h"
#include "unit-test.h"

#define SEQ  77
#define PORT 4242

static void test_prefix_parse(void **state) {
        InAddrUnion a;
        unsigned char len;
        char text[IN_ADDR_TEXT_MAX];

        assert_int_equal(in_addr_prefix_parse("10.1.2.0/24", &a, &len), AF_INET);
        assert_int_equal(len, 24);
        assert_string_equal(in_addr_to_text(AF_INET, &a, text), "10.1.2.0");
        assert_int_equal(in_addr_prefix_parse("fd00:1::/64", &a, &len), AF_INET6);
        assert_int_equal(len, 64);
        assert_string_equal(in_addr_to_text(AF_INET6, &a, text), "fd00:1::");
        assert_int_equal(in_addr_prefix_parse("0.0.0.0/0", &a, &len), AF_INET);
        assert_int_equal(len, 0);
        assert_int_equal(in_addr_prefix_parse("10.1.2.3/32", &a, &len), AF_INET);
        assert_int_equal(in_addr_prefix_parse("::/0", &a, &len), AF_INET6);
        assert_int_equal(in_addr_prefix_parse("10.1.2.128/25", &a, &len), AF_INET);
        /* a bit beyond the length: which network was meant is not guessed */
        assert_int_equal(in_addr_prefix_parse("10.1.2.5/24", &a, &len), -EDOM);
        assert_int_equal(in_addr_prefix_parse("10.1.2.128/24", &a, &len), -EDOM);
        assert_int_equal(in_addr_prefix_parse("fd00::1/64", &a, &len), -EDOM);
        const char *bad[] = {
                "10.1.2.0",    "10.1.2.0/", "10.1.2.0/33",   "10.1.2.0/-1",  "10.1.2.0/+8",   "10.1.2.0/ 8",
                "10.1.2.0/8 ", "/8",        "fd00::/129",    "10.1.2.0/0x8", "10.1.2.0/0024", "x/8",
                "10.1.2/24",   "",          "fe80::%eth0/64"
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_int_equal(in_addr_prefix_parse(bad[i], &a, &len), -EINVAL);
        assert_int_equal(in_addr_prefix_parse(NULL, &a, &len), -EINVAL);
}

static void test_parse_spec(void **state) {
        NetlinkRoute r;
        char *error = NULL;
        char text[NETLINK_ROUTE_TEXT_MAX];

        assert_int_equal(netlink_route_parse_spec("10.1.2.0/24=10.0.0.2", &r, &error), 0);
        assert_int_equal(r.family, AF_INET);
        assert_true(r.has_gateway);
        assert_int_equal(r.protocol, NETLINK_ROUTE_PROTO_PROTOKUBE);
        assert_int_equal(r.ifindex, 0);
        assert_string_equal(netlink_route_to_text(&r, text), "10.1.2.0/24 via 10.0.0.2");
        assert_int_equal(netlink_route_parse_spec("fd00:1::/64=fd00::2", &r, &error), 0);
        assert_string_equal(netlink_route_to_text(&r, text), "fd00:1::/64 via fd00::2");
        char proto[NETLINK_ROUTE_PROTOCOL_TEXT_MAX];
        assert_string_equal(netlink_route_protocol_to_text(RTPROT_STATIC, proto), "static");
        assert_string_equal(netlink_route_protocol_to_text(0xb5, proto), "protokube");
        assert_string_equal(netlink_route_protocol_to_text(200, proto), "200");

        struct {
                const char *spec, *message;
        } bad[] = {
                { "10.1.2.0/24", "invalid route '10.1.2.0/24' (expected PREFIX=GATEWAY)" },
                { "10.1.2.5/24=10.0.0.2", "invalid route '10.1.2.5/24=10.0.0.2': '10.1.2.5/24' has bits set "
                                          "beyond its length" },
                { "10.1.2.0=10.0.0.2", "invalid route '10.1.2.0=10.0.0.2': '10.1.2.0' is not a prefix "
                                       "(ADDRESS/LENGTH)" },
                { "10.1.2.0/24=gw", "invalid route '10.1.2.0/24=gw': 'gw' is not an address" },
                { "10.1.2.0/24=", "invalid route '10.1.2.0/24=': '' is not an address" },
                { "10.1.2.0/24=fd00::2", "invalid route '10.1.2.0/24=fd00::2': the gateway is not of the "
                                         "prefix's family" },
                { "=10.0.0.2", "invalid route '=10.0.0.2': '' is not a prefix (ADDRESS/LENGTH)" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                assert_int_equal(netlink_route_parse_spec(bad[i].spec, &r, &error), -EINVAL);
                assert_string_equal(error, bad[i].message);
                free(error);
                error = NULL;
        }
}

/* A route as listed: prefix "P/L" via gateway G ("" for none), of protocol proto. */
static NetlinkRoute route(const char *prefix, const char *gw, unsigned char proto) {
        NetlinkRoute r = {};
        char spec[128];
        snprintf(spec, sizeof(spec), "%s=%s", prefix, gw);
        if (*gw)
                assert_int_equal(netlink_route_parse_spec(spec, &r, NULL), 0);
        else {
                r.family = in_addr_prefix_parse(prefix, &r.dst, &r.dst_len);
                assert_true(r.family > 0);
                r.ifindex = 2;
        }
        r.protocol = proto;
        r.type = RTN_UNICAST;
        return r;
}

#define OURS   NETLINK_ROUTE_PROTO_PROTOKUBE
#define STATIC RTPROT_STATIC

static void assert_route(const NetlinkRoute *r, const char *text) {
        char buf[NETLINK_ROUTE_TEXT_MAX];
        assert_string_equal(netlink_route_to_text(r, buf), text);
}

static void test_plan_converges(void **state) {
        NetlinkRoute want[] = {
                route("10.1.1.0/24", "10.0.0.1", OURS),  /* there as wanted */
                route("10.1.2.0/24", "10.0.0.2", OURS),  /* missing */
                route("10.1.3.0/24", "10.0.0.30", OURS), /* there via another gateway */
                route("fd00:4::/64", "fd00::4", OURS),   /* missing, IPv6 */
        };
        NetlinkRoute have[] = {
                route("0.0.0.0/0", "10.0.0.254", RTPROT_DHCP), route("10.0.0.0/24", "", RTPROT_KERNEL),
                route("10.1.1.0/24", "10.0.0.1", OURS),        route("10.1.3.0/24", "10.0.0.3", OURS),
                route("10.1.9.0/24", "10.0.0.9", OURS),   /* no longer wanted */
                route("10.1.8.0/24", "10.0.0.8", STATIC), /* another owner's, not wanted: not ours to delete
                                                           */
                route("fd00:9::/64", "fd00::9", OURS),    /* no longer wanted */
                route("10.1.2.0/23", "10.0.0.2", STATIC), /* another prefix that covers a wanted one */
        };
        NetlinkRoutePlan p = {};
        char *error = NULL;

        assert_int_equal(netlink_route_plan(want, ELEMENTSOF(want), have, ELEMENTSOF(have), &p, &error), 0);
        assert_null(error);
        assert_int_equal(p.n_replace, 3);
        assert_route(&p.replace[0], "10.1.2.0/24 via 10.0.0.2");
        assert_route(&p.replace[1], "10.1.3.0/24 via 10.0.0.30");
        assert_route(&p.replace[2], "fd00:4::/64 via fd00::4");
        /* the old gateway's route is not on the list: the replace changes it in place */
        assert_int_equal(p.n_delete, 2);
        assert_route(&p.delete[0], "10.1.9.0/24 via 10.0.0.9");
        assert_route(&p.delete[1], "fd00:9::/64 via fd00::9");
        assert_int_equal(p.n_conflicts, 0);
        netlink_route_plan_done(&p);

        /* what it converges to plans nothing */
        NetlinkRoute after[] = { have[0], have[1], want[0], want[1], want[2], want[3], have[5], have[7] };
        assert_int_equal(netlink_route_plan(want, ELEMENTSOF(want), after, ELEMENTSOF(after), &p, &error),
                         0);
        assert_int_equal(p.n_replace + p.n_delete + p.n_conflicts, 0);
        netlink_route_plan_done(&p);

        /* nothing wanted: every route of ours goes, no other */
        assert_int_equal(netlink_route_plan(NULL, 0, have, ELEMENTSOF(have), &p, &error), 0);
        assert_int_equal(p.n_replace, 0);
        assert_int_equal(p.n_delete, 4);
        for (size_t i = 0; i < p.n_delete; i++)
                assert_int_equal(p.delete[i].protocol, OURS);
        netlink_route_plan_done(&p);

        assert_int_equal(netlink_route_plan(NULL, 0, NULL, 0, &p, &error), 0);
        assert_int_equal(p.n_replace + p.n_delete + p.n_conflicts, 0);
        netlink_route_plan_done(&p);
}

static void test_plan_other_owner(void **state) {
        NetlinkRoute want[] = {
                route("10.9.0.0/24", "10.0.0.9", OURS),
                route("10.8.0.0/24", "10.0.0.8", OURS),
                route("10.7.0.0/24", "10.0.0.7", OURS),
        };
        NetlinkRoute blackhole = route("10.7.0.0/24", "", RTPROT_BOOT);
        blackhole.type = RTN_BLACKHOLE;
        NetlinkRoute have[] = {
                route("10.9.0.0/24", "10.0.0.99", STATIC), /* another owner's, same prefix */
                route("10.9.0.0/24", "10.0.0.98", OURS),   /* ours there, stale */
                route("10.8.0.0/24", "10.0.0.8", OURS),    /* ours as wanted, beside another owner's */
                route("10.8.0.0/24", "10.0.0.88", STATIC), blackhole, /* a blackhole holds its prefix too */
        };
        NetlinkRoutePlan p = {};
        char *error = NULL;

        assert_int_equal(netlink_route_plan(want, ELEMENTSOF(want), have, ELEMENTSOF(have), &p, &error), 0);
        /* a replace would take the other owner's route over (the kernel's key has no protocol): none */
        assert_int_equal(p.n_replace, 0);
        assert_int_equal(p.n_conflicts, 2);
        assert_route(&p.conflicts[0].want, "10.9.0.0/24 via 10.0.0.9");
        assert_route(&p.conflicts[0].theirs, "10.9.0.0/24 via 10.0.0.99");
        assert_int_equal(p.conflicts[0].theirs.protocol, STATIC);
        assert_route(&p.conflicts[1].want, "10.7.0.0/24 via 10.0.0.7");
        assert_int_equal(p.conflicts[1].theirs.type, RTN_BLACKHOLE);
        /* our stale route goes (its delete names our protocol); theirs is never on the list */
        assert_int_equal(p.n_delete, 1);
        assert_route(&p.delete[0], "10.9.0.0/24 via 10.0.0.98");
        assert_int_equal(p.delete[0].protocol, OURS);
        netlink_route_plan_done(&p);
}

/* The route a replace changes in place is the first of the prefix with the kernel's default metric; a
 * delete of it after the replace would delete the new route when nothing but the prefix names it (a
 * multipath route: no gateway of its own). */
static void test_plan_replace_takes_over(void **state) {
        NetlinkRoute want[] = { route("10.6.0.0/24", "10.0.0.8", OURS),
                                route("fd00:5::/64", "fd00::50", OURS) };
        NetlinkRoute have[] = {
                route("10.6.0.0/24", "", OURS),        /* a multipath route of ours: no gateway */
                route("fd00:5::/64", "fd00::5", OURS), /* metric 512: not the one replaced */
                route("fd00:5::/64", "fd00::6", OURS), /* metric 1024: changed in place */
        };
        NetlinkRoutePlan p = {};

        have[0].ifindex = 0;
        have[1].priority = 512;
        have[2].priority = 1024;
        assert_int_equal(netlink_route_plan(want, ELEMENTSOF(want), have, ELEMENTSOF(have), &p, NULL), 0);
        assert_int_equal(p.n_replace, 2);
        assert_int_equal(p.n_delete, 1);
        assert_route(&p.delete[0], "fd00:5::/64 via fd00::5");
        assert_int_equal(p.delete[0].priority, 512);
        netlink_route_plan_done(&p);
}

static void test_plan_ifindex_and_families(void **state) {
        NetlinkRoute want[] = { route("10.1.0.0/24", "10.0.0.1", OURS), route("::/0", "fd00::1", OURS) };
        NetlinkRoute have[] = { route("10.1.0.0/24", "10.0.0.1", OURS),
                                route("0.0.0.0/0", "10.0.0.1", OURS) };
        NetlinkRoutePlan p = {};

        have[0].ifindex = 7;
        /* no ifindex wanted: the kernel's pick is fine; ::/0 is not 0.0.0.0/0 */
        assert_int_equal(netlink_route_plan(want, ELEMENTSOF(want), have, ELEMENTSOF(have), &p, NULL), 0);
        assert_int_equal(p.n_replace, 1);
        assert_route(&p.replace[0], "::/0 via fd00::1");
        assert_int_equal(p.n_delete, 1);
        assert_route(&p.delete[0], "0.0.0.0/0 via 10.0.0.1");
        netlink_route_plan_done(&p);

        /* an ifindex wanted: another one is not as wanted (the replace changes it in place) */
        want[0].ifindex = 8;
        assert_int_equal(netlink_route_plan(want, 1, have, 1, &p, NULL), 0);
        assert_int_equal(p.n_replace, 1);
        assert_int_equal(p.replace[0].ifindex, 8);
        assert_int_equal(p.n_delete, 0);
        netlink_route_plan_done(&p);
}

static void test_plan_refuses_twice(void **state) {
        NetlinkRoute want[] = { route("10.1.0.0/24", "10.0.0.1", OURS),
                                route("10.2.0.0/24", "10.0.0.1", OURS),
                                route("10.1.0.0/24", "10.0.0.2", OURS) };
        NetlinkRoutePlan p = {};
        char *error = NULL;

        assert_int_equal(netlink_route_plan(want, ELEMENTSOF(want), NULL, 0, &p, &error), -EINVAL);
        assert_non_null(strstr(error, "a prefix wanted twice: 10.1.0.0/24 via 10.0.0."));
        assert_null(p.replace);
        free(error);
}

/* Datagrams built by hand, as the kernel writes them. */
typedef struct Datagram {
        uint32_t words[1024];
        size_t len, msg; /* bytes used; the current message's offset */
} Datagram;

static uint8_t *dg_bytes(Datagram *d) {
        return (uint8_t *)d->words;
}

static struct nlmsghdr *dg_begin(Datagram *d, uint16_t type, uint16_t flags) {
        d->msg = d->len;
        struct nlmsghdr *h = (struct nlmsghdr *)(dg_bytes(d) + d->msg);
        *h = (struct nlmsghdr){ .nlmsg_len = NLMSG_HDRLEN,
                                .nlmsg_type = type,
                                .nlmsg_flags = flags,
                                .nlmsg_seq = SEQ,
                                .nlmsg_pid = PORT };
        d->len += NLMSG_HDRLEN;
        return h;
}

static void dg_put(Datagram *d, const void *data, size_t len) {
        struct nlmsghdr *h = (struct nlmsghdr *)(dg_bytes(d) + d->msg);
        memcpy(dg_bytes(d) + d->len, data, len);
        d->len += NLMSG_ALIGN(len);
        h->nlmsg_len = (uint32_t)(d->len - d->msg);
}

static void dg_attr(Datagram *d, uint16_t type, const void *data, size_t len) {
        struct rtattr a = { .rta_len = (unsigned short)RTA_LENGTH(len), .rta_type = type };
        uint8_t buf[64] = {};
        memcpy(buf, &a, sizeof(a));
        memcpy(buf + RTA_LENGTH(0), data, len);
        dg_put(d, buf, RTA_SPACE(len));
}

static void dg_route(Datagram *d, const char *prefix, const char *gw, unsigned char proto,
                     unsigned char table, unsigned flags) {
        InAddrUnion dst, gateway;
        unsigned char len;
        int family = in_addr_prefix_parse(prefix, &dst, &len);
        assert_true(family > 0);
        struct rtmsg rtm = { .rtm_family = (unsigned char)family,
                             .rtm_dst_len = len,
                             .rtm_table = table,
                             .rtm_protocol = proto,
                             .rtm_type = RTN_UNICAST,
                             .rtm_flags = flags };
        uint32_t oif = 3, t = table;
        dg_begin(d, RTM_NEWROUTE, NLM_F_MULTI);
        dg_put(d, &rtm, sizeof(rtm));
        dg_attr(d, RTA_TABLE, &t, sizeof(t));
        if (len > 0)
                dg_attr(d, RTA_DST, dst.bytes, in_addr_family_size(family));
        if (*gw) {
                assert_int_equal(in_addr_parse(gw, &gateway), family);
                dg_attr(d, RTA_GATEWAY, gateway.bytes, in_addr_family_size(family));
        }
        dg_attr(d, RTA_OIF, &oif, sizeof(oif));
}

static void dg_done(Datagram *d, int error) {
        dg_begin(d, NLMSG_DONE, NLM_F_MULTI);
        dg_put(d, &error, sizeof(error));
}

static int feed(NetlinkRouteReply *reply, Datagram *d, char **error) {
        free(*error);
        *error = NULL;
        return netlink_route_reply_feed(reply, d->words, d->len, error);
}

static void test_reply_dump(void **state) {
        NetlinkRouteReply reply = { .seq = SEQ, .portid = PORT, .family = AF_UNSPEC };
        Datagram d = {};
        char *error = NULL;

        dg_route(&d, "10.0.0.0/24", "", RTPROT_KERNEL, RT_TABLE_MAIN, 0);
        dg_route(&d, "10.1.2.0/24", "10.0.0.2", OURS, RT_TABLE_MAIN, 0);
        dg_route(&d, "10.1.3.0/24", "10.0.0.3", OURS, 100, 0);             /* another table */
        dg_route(&d, "10.0.0.1/32", "", RTPROT_KERNEL, RT_TABLE_LOCAL, 0); /* the local table */
        assert_int_equal(feed(&reply, &d, &error), 0);
        assert_false(reply.done);
        d = (Datagram){};
        dg_route(&d, "fd00:1::/64", "fd00::2", OURS, RT_TABLE_MAIN, 0);
        dg_route(&d, "fd00:1::5/128", "fd00::2", OURS, RT_TABLE_MAIN, RTM_F_CLONED); /* a cache entry */
        dg_route(&d, "0.0.0.0/0", "10.0.0.254", RTPROT_DHCP, RT_TABLE_MAIN, 0);
        dg_done(&d, 0);
        assert_int_equal(feed(&reply, &d, &error), 0);
        assert_true(reply.done);
        assert_int_equal(reply.error, 0);
        assert_int_equal(reply.n_routes, 4);
        assert_route(&reply.routes[0], "10.0.0.0/24 dev 3");
        assert_int_equal(reply.routes[0].protocol, RTPROT_KERNEL);
        assert_route(&reply.routes[1], "10.1.2.0/24 via 10.0.0.2");
        assert_int_equal(reply.routes[1].ifindex, 3);
        assert_int_equal(reply.routes[1].protocol, OURS);
        assert_route(&reply.routes[2], "fd00:1::/64 via fd00::2");
        assert_route(&reply.routes[3], "0.0.0.0/0 via 10.0.0.254");

        /* nothing may follow the end */
        d = (Datagram){};
        dg_done(&d, 0);
        assert_int_equal(feed(&reply, &d, &error), PK_EMALFORMED);
        assert_string_equal(error, "message after the end of the reply");
        netlink_route_reply_done(&reply);

        /* a dump of one family keeps none of another; a dump that ended in an error says so */
        reply = (NetlinkRouteReply){ .seq = SEQ, .portid = PORT, .family = AF_INET6 };
        d = (Datagram){};
        dg_route(&d, "10.1.2.0/24", "10.0.0.2", OURS, RT_TABLE_MAIN, 0);
        dg_done(&d, -EINTR);
        assert_int_equal(feed(&reply, &d, &error), 0);
        assert_int_equal(reply.n_routes, 0);
        assert_int_equal(reply.error, -EINTR);
        netlink_route_reply_done(&reply);
        free(error);
}

static void test_reply_interrupted(void **state) {
        NetlinkRouteReply reply = { .seq = SEQ, .portid = PORT, .family = AF_INET };
        Datagram d = {};
        char *error = NULL;

        dg_route(&d, "10.1.2.0/24", "10.0.0.2", OURS, RT_TABLE_MAIN, 0);
        ((struct nlmsghdr *)d.words)->nlmsg_flags |= NLM_F_DUMP_INTR;
        dg_done(&d, 0);
        assert_int_equal(feed(&reply, &d, &error), 0);
        assert_true(reply.interrupted);
        netlink_route_reply_done(&reply);
        free(error);
}

/* An error as the kernel sends it to a socket with NETLINK_CAP_ACK and NETLINK_EXT_ACK. */
static void dg_error(Datagram *d, int error, const char *text, bool capped) {
        struct nlmsghdr req = { .nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg)),
                                .nlmsg_type = RTM_NEWROUTE,
                                .nlmsg_seq = SEQ };
        struct rtmsg rtm = {};
        dg_begin(d, NLMSG_ERROR, (capped ? NLM_F_CAPPED : 0) | (text ? NLM_F_ACK_TLVS : 0));
        dg_put(d, &error, sizeof(error));
        if (capped)
                dg_put(d, &req, sizeof(req));
        else {
                uint8_t echo[NLMSG_LENGTH(sizeof(struct rtmsg))];
                memcpy(echo, &req, sizeof(req));
                memcpy(echo + NLMSG_HDRLEN, &rtm, sizeof(rtm));
                dg_put(d, echo, sizeof(echo));
        }
        if (text)
                dg_attr(d, NLMSGERR_ATTR_MSG, text, strlen(text) + 1);
}

static void test_reply_errors(void **state) {
        Datagram d = {};
        char *error = NULL;

        for (int capped = 0; capped <= 1; capped++) {
                NetlinkRouteReply reply = { .seq = SEQ, .portid = PORT, .family = AF_INET };
                d = (Datagram){};
                dg_error(&d, -ENETUNREACH, "Nexthop has invalid gateway", capped);
                assert_int_equal(feed(&reply, &d, &error), 0);
                assert_true(reply.done);
                assert_int_equal(reply.error, -ENETUNREACH);
                assert_string_equal(reply.error_message, "Nexthop has invalid gateway");
                netlink_route_reply_done(&reply);
        }

        /* an acknowledgement: error 0, no text kept */
        NetlinkRouteReply reply = { .seq = SEQ, .portid = PORT, .family = AF_INET };
        d = (Datagram){};
        dg_error(&d, 0, NULL, true);
        assert_int_equal(feed(&reply, &d, &error), 0);
        assert_true(reply.done);
        assert_int_equal(reply.error, 0);
        assert_null(reply.error_message);
        netlink_route_reply_done(&reply);

        /* a text with a control character is not kept (it would end up on a terminal) */
        reply = (NetlinkRouteReply){ .seq = SEQ, .portid = PORT, .family = AF_INET };
        d = (Datagram){};
        dg_error(&d, -EEXIST, "bad\033[2Jtext", true);
        assert_int_equal(feed(&reply, &d, &error), 0);
        assert_int_equal(reply.error, -EEXIST);
        assert_null(reply.error_message);
        netlink_route_reply_done(&reply);
        free(error);
}

static void expect_malformed(Datagram *d, const char *message) {
        NetlinkRouteReply reply = { .seq = SEQ, .portid = PORT, .family = AF_UNSPEC };
        char *error = NULL;
        assert_int_equal(feed(&reply, d, &error), PK_EMALFORMED);
        assert_non_null(error);
        if (!strstr(error, message))
                fail_msg("'%s' does not say '%s'", error, message);
        netlink_route_reply_done(&reply);
        free(error);
}

static void test_reply_malformed(void **state) {
        Datagram d = {};

        dg_route(&d, "10.1.2.0/24", "10.0.0.2", OURS, RT_TABLE_MAIN, 0);
        ((struct nlmsghdr *)d.words)->nlmsg_seq = SEQ + 1;
        expect_malformed(&d, "message of sequence 78 for port 4242, expected 77, 4242");

        d = (Datagram){};
        dg_route(&d, "10.1.2.0/24", "10.0.0.2", OURS, RT_TABLE_MAIN, 0);
        ((struct nlmsghdr *)d.words)->nlmsg_pid = 1;
        expect_malformed(&d, "for port 1");

        /* a message longer than the datagram */
        d = (Datagram){};
        dg_route(&d, "10.1.2.0/24", "10.0.0.2", OURS, RT_TABLE_MAIN, 0);
        d.len -= 8;
        expect_malformed(&d, "bytes of a truncated message");

        /* an address attribute of the wrong size */
        d = (Datagram){};
        dg_route(&d, "10.1.2.0/24", "", OURS, RT_TABLE_MAIN, 0);
        uint8_t six[6] = { 10, 0, 0, 2, 0, 0 };
        dg_attr(&d, RTA_GATEWAY, six, sizeof(six));
        expect_malformed(&d, "route attribute 5 of 10 bytes");

        /* an attribute longer than its message */
        d = (Datagram){};
        dg_route(&d, "10.1.2.0/24", "10.0.0.2", OURS, RT_TABLE_MAIN, 0);
        struct rtattr *last = (struct rtattr *)(dg_bytes(&d) + d.len - RTA_SPACE(4));
        last->rta_len = 40;
        expect_malformed(&d, "bytes after its attributes");

        /* a destination longer than the family's, bits beyond the length */
        d = (Datagram){};
        dg_route(&d, "10.1.2.0/24", "10.0.0.2", OURS, RT_TABLE_MAIN, 0);
        ((struct rtmsg *)NLMSG_DATA((struct nlmsghdr *)d.words))->rtm_dst_len = 33;
        expect_malformed(&d, "route message with a /33 destination");
        d = (Datagram){};
        dg_route(&d, "10.1.2.0/24", "10.0.0.2", OURS, RT_TABLE_MAIN, 0);
        ((struct rtmsg *)NLMSG_DATA((struct nlmsghdr *)d.words))->rtm_dst_len = 16;
        expect_malformed(&d, "bits set beyond its /16");

        /* a route message cut before its rtmsg; an unknown type; an error that is no errno */
        d = (Datagram){};
        dg_begin(&d, RTM_NEWROUTE, 0);
        dg_put(&d, "abcd", 4);
        expect_malformed(&d, "shorter than its header");
        d = (Datagram){};
        dg_begin(&d, RTM_NEWLINK, 0);
        expect_malformed(&d, "unexpected message type 16");
        d = (Datagram){};
        dg_error(&d, 5, NULL, true);
        expect_malformed(&d, "error message with error 5");
        d = (Datagram){};
        dg_error(&d, -EEXIST, NULL, false);
        ((struct nlmsgerr *)NLMSG_DATA((struct nlmsghdr *)d.words))->msg.nlmsg_len = 4000;
        ((struct nlmsghdr *)d.words)->nlmsg_flags |= NLM_F_ACK_TLVS;
        expect_malformed(&d, "shorter than the request it echoes");

        /* an unterminated text */
        d = (Datagram){};
        dg_error(&d, -EEXIST, NULL, true);
        ((struct nlmsghdr *)d.words)->nlmsg_flags |= NLM_F_ACK_TLVS;
        dg_attr(&d, NLMSGERR_ATTR_MSG, "abcd", 4);
        expect_malformed(&d, "acknowledgement text not terminated");

        NetlinkRouteReply reply = { .seq = SEQ, .portid = PORT };
        char *error = NULL;
        assert_int_equal(netlink_route_reply_feed(&reply, d.words, 0, &error), PK_EMALFORMED);
        free(error);
        error = NULL;
        assert_int_equal(netlink_route_reply_feed(&reply, dg_bytes(&d) + 1, 16, &error), PK_EMALFORMED);
        free(error);
}

/* A kernel's (6.x) own datagrams, captured in a network namespace (tests/fuzz/fuzz-netlink-route.c says
 * how): the parser is checked against the kernel's bytes, not only against this file's idea of them. */
static int feed_capture(NetlinkRouteReply *reply, const char *name, char **error) {
        _cleanup_free_ char *path = strjoin(SRCDIR "/tests/fuzz/netlink-route/", name), *data = NULL;
        size_t len;
        struct nlmsghdr h;

        assert_int_equal(read_full_file(path, 1 << 20, &data, &len), 0);
        assert_true(len >= sizeof(h));
        memcpy(&h, data, sizeof(h));
        reply->seq = h.nlmsg_seq;
        reply->portid = h.nlmsg_pid;
        return netlink_route_reply_feed(reply, data, len, error);
}

static void test_reply_kernel_captures(void **state) {
        NetlinkRouteReply reply = { .family = AF_UNSPEC };
        char *error = NULL, text[NETLINK_ROUTE_TEXT_MAX];

        assert_int_equal(feed_capture(&reply, "dump-both-0", &error), 0);
        assert_int_equal(feed_capture(&reply, "dump-both-1", &error), 0);
        assert_true(reply.done);
        assert_int_equal(reply.error, 0);
        /* main: default (dhcp), 10.0.0.0/24 (kernel), 10.1.2.0/24 (ours), 10.6.0.0/24 (multipath: no gateway
         * of its own), 10.9.0.0/24 (static), blackhole 10.66.0.0/16, fd00::/64 (kernel), fd00:1::/64 (ours),
         * fe80::/64; not table 100's 10.5.0.0/24 nor the local table's */
        const char *want[] = { "0.0.0.0/0 via 10.0.0.254", "10.0.0.0/24 dev 3",
                               "10.1.2.0/24 via 10.0.0.2", "10.6.0.0/24",
                               "10.9.0.0/24 via 10.0.0.9", "10.66.0.0/16",
                               "fd00::/64 dev 3",          "fd00:1::/64 via fd00::2",
                               "fe80::/64 dev 3" };
        size_t n = 0;
        for (size_t i = 0; i < reply.n_routes; i++) {
                netlink_route_to_text(&reply.routes[i], text);
                for (size_t j = 0; j < ELEMENTSOF(want); j++)
                        n += streq(text, want[j]);
        }
        assert_int_equal(n, ELEMENTSOF(want));
        size_t ours = 0;
        for (size_t i = 0; i < reply.n_routes; i++) {
                assert_true(strncmp(netlink_route_to_text(&reply.routes[i], text), "10.5.", 5) != 0);
                ours += reply.routes[i].protocol == NETLINK_ROUTE_PROTO_PROTOKUBE;
                if (streq(text, "10.66.0.0/16"))
                        assert_int_equal(reply.routes[i].type, RTN_BLACKHOLE);
                if (streq(text, "0.0.0.0/0 via 10.0.0.254"))
                        assert_int_equal(reply.routes[i].priority, 100);
        }
        assert_int_equal(ours, 2);
        netlink_route_reply_done(&reply);

        struct {
                const char *name;
                int error;
                const char *message;
        } answers[] = {
                { "ack", 0, NULL },
                { "error-exists", -EEXIST, NULL },
                { "error-unreachable-capped", -ENETUNREACH, "Nexthop has invalid gateway" },
                { "error-unreachable-echo", -ENETUNREACH, "Nexthop has invalid gateway" },
                { "error-unreachable-v6", -EHOSTUNREACH, NULL },
        };
        for (size_t i = 0; i < ELEMENTSOF(answers); i++) {
                reply = (NetlinkRouteReply){ .family = AF_INET };
                assert_int_equal(feed_capture(&reply, answers[i].name, &error), 0);
                assert_true(reply.done);
                assert_int_equal(reply.error, answers[i].error);
                if (answers[i].message)
                        assert_string_equal(reply.error_message, answers[i].message);
                else
                        assert_null(reply.error_message);
                netlink_route_reply_done(&reply);
        }
        reply = (NetlinkRouteReply){ .family = AF_UNSPEC };
        assert_int_equal(feed_capture(&reply, "dump-truncated", &error), PK_EMALFORMED);
        netlink_route_reply_done(&reply);
        free(error);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_prefix_parse),
                cmocka_unit_test(test_parse_spec),
                cmocka_unit_test(test_plan_converges),
                cmocka_unit_test(test_plan_other_owner),
                cmocka_unit_test(test_plan_replace_takes_over),
                cmocka_unit_test(test_plan_ifindex_and_families),
                cmocka_unit_test(test_plan_refuses_twice),
                cmocka_unit_test(test_reply_dump),
                cmocka_unit_test(test_reply_interrupted),
                cmocka_unit_test(test_reply_errors),
                cmocka_unit_test(test_reply_malformed),
                cmocka_unit_test(test_reply_kernel_captures),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
