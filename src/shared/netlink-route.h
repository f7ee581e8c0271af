/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The routes protokube keeps in the kernel's main table (pod networking on a flat network: a route to
 * every other node's pod CIDR via that node's internal address), through rtnetlink (rtnetlink(7)) with no
 * library: a request, its reply parsed with bounds checks, a pure diff.
 *
 * The rule that makes it safe beside other route owners (a CNI, a VPN, the kernel's own connected
 * routes): every route protokube adds carries its own routing protocol number (rtm_protocol), a delete
 * names that number (the kernel then deletes no other owner's route), and no route is added where another
 * owner already routes the same prefix (the kernel's replace matches prefix, tos, metric and table, not
 * the protocol, so it would take that owner's route over): netlink_route_plan() leaves such a prefix
 * alone and says so. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/in-addr-util.h"

/* 0xb5 (181): in no line of iproute2's /etc/iproute2/rt_protos, no RTPROT_* of linux/rtnetlink.h (those
 * end at 18, then 42, 99 and 186-192), not FRR's (186-198), BIRD's (12), Calico's (80) or systemd-networkd's
 * and NetworkManager's (boot, static, dhcp, ra). `ip route show proto 0xb5` lists protokube's routes. */
#define NETLINK_ROUTE_PROTO_PROTOKUBE 0xb5

/* Routes in one listing; a main table beyond it is refused rather than read in part (a plan over part of
 * the routes could add one where another owner routes). */
#define NETLINK_ROUTES_MAX 65536

typedef struct NetlinkRoute {
        int family; /* AF_INET or AF_INET6 */
        InAddrUnion dst;
        unsigned char dst_len;
        bool has_gateway;
        InAddrUnion gateway;
        int ifindex;            /* 0: none given (replace: the kernel picks the gateway's link) */
        unsigned char protocol; /* as listed; replace and delete always use ours */
        unsigned char type;     /* RTN_UNICAST, RTN_BLACKHOLE...: as listed; replace adds unicast */
        uint32_t priority;      /* the metric as listed; replace leaves the kernel's default */
} NetlinkRoute;

/* "10.1.2.0/24 via 10.0.0.2" ("fd00:1::/64 via fd00::2"; "10.1.2.0/24 dev 3" without a gateway,
 * "10.1.2.0/24" without either) into buf. */
#define NETLINK_ROUTE_TEXT_MAX 128
const char *netlink_route_to_text(const NetlinkRoute *r, char buf[static NETLINK_ROUTE_TEXT_MAX]);

/* An owner's name as iproute2 spells it ("kernel", "static", "dhcp", "protokube" for ours), else its number,
 * into buf. */
#define NETLINK_ROUTE_PROTOCOL_TEXT_MAX 16
const char *netlink_route_protocol_to_text(unsigned char protocol,
                                           char buf[static NETLINK_ROUTE_PROTOCOL_TEXT_MAX]);

/* Parses "PREFIX=GATEWAY" ("10.1.2.0/24=10.0.0.2", "fd00:1::/64=fd00::2"; the same family on both sides,
 * no bit set beyond the prefix's length) into *ret (our protocol, no ifindex). -EINVAL with a message
 * naming the text and what is wrong. */
int netlink_route_parse_spec(const char *s, NetlinkRoute *ret, char **ret_error);

/* Every route of the main table of family (AF_INET, AF_INET6, or AF_UNSPEC: both), of any owner and type
 * (a blackhole holds a prefix as much as a unicast route does), in the kernel's order. Caller frees *ret.
 * -errno, PK_EMALFORMED (a reply that does not parse), PK_ETOOBIG (beyond NETLINK_ROUTES_MAX), PK_ETIMEOUT,
 * with a message. */
int netlink_route_list(int family, NetlinkRoute **ret, size_t *ret_n, char **ret_error);

/* The same, only the routes of protocol NETLINK_ROUTE_PROTO_PROTOKUBE. */
int netlink_route_list_ours(int family, NetlinkRoute **ret, size_t *ret_n, char **ret_error);

/* RTM_NEWROUTE with NLM_F_CREATE|NLM_F_REPLACE: r's prefix via its gateway (and ifindex, when given;
 * otherwise the kernel picks the link the gateway is on), our protocol, the main table, scope universe
 * (link without a gateway), unicast. The caller has checked that no other owner routes the prefix
 * (netlink_route_plan()). On failure -errno with "PREFIX via GATEWAY: reason". */
int netlink_route_replace(const NetlinkRoute *r, char **ret_error);

/* RTM_DELROUTE of exactly r (prefix, and gateway, ifindex, metric and type when set) and our protocol, so
 * that another owner's route of the same prefix is never the one deleted. -ESRCH if there is no such
 * route. */
int netlink_route_delete(const NetlinkRoute *r, char **ret_error);

typedef struct NetlinkRouteConflict {
        NetlinkRoute want;
        NetlinkRoute theirs; /* the other owner's route of that prefix (the first listed) */
} NetlinkRouteConflict;

typedef struct NetlinkRoutePlan {
        NetlinkRoute *replace; /* wanted, not there as wanted, no other owner routes the prefix */
        size_t n_replace;
        NetlinkRoute *delete; /* ours, not wanted as they are, but for those a replace changes in place */
        size_t n_delete;
        NetlinkRouteConflict *conflicts; /* wanted, not there, another owner routes the prefix: left alone */
        size_t n_conflicts;
} NetlinkRoutePlan;

void netlink_route_plan_done(NetlinkRoutePlan *p);

/* The pure diff: want (each prefix at most once) against have (netlink_route_list(): every owner's).
 * Applied in order (every replace, then every delete, ESRCH being fine), it makes our routes exactly want,
 * minus the conflicts. A replace changes the first of our routes of its prefix with the kernel's default
 * metric in place (a new gateway without a moment with no route): that one is not on the delete list. A
 * route is there "as wanted" when one of ours has the same prefix and gateway (and ifindex, when want names
 * one). -EINVAL with a message naming the prefix when want holds a prefix twice; -ENOMEM. */
int netlink_route_plan(const NetlinkRoute *want, size_t n_want, const NetlinkRoute *have, size_t n_have,
                       NetlinkRoutePlan *ret, char **ret_error);

/* The parser of a reply, one datagram at a time (for the fuzzer and the tests; the calls above use it). */
typedef struct NetlinkRouteReply {
        uint32_t seq, portid; /* what each message must carry: our request's */
        int family;           /* the dump's: routes of another family are not ours to keep */
        NetlinkRoute *routes; /* the dump's main-table routes */
        size_t n_routes, n_allocated;
        int error;           /* the kernel's answer: 0, or -errno */
        char *error_message; /* its extended acknowledgement's text, or NULL */
        bool done;           /* NLMSG_DONE, or the acknowledgement, was seen */
        bool interrupted;    /* NLM_F_DUMP_INTR: the table changed during the dump, which needs a retry */
} NetlinkRouteReply;

void netlink_route_reply_done(NetlinkRouteReply *reply);

/* Feeds one datagram of len bytes. 0, with reply->done once the reply is complete (more datagrams follow
 * otherwise); PK_EMALFORMED (a truncated or inconsistent message, a message of another sequence or port,
 * data after the end), PK_ETOOBIG, -ENOMEM, with a message. */
int netlink_route_reply_feed(NetlinkRouteReply *reply, const void *buf, size_t len, char **ret_error);
