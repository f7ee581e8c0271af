/* SPDX-License-Identifier: Apache-2.0 */
/* rtnetlink for protokube's routes: requests, their replies parsed one datagram at a time with bounds
 * checks, the exchange with the kernel bounded in reads and time. The diff is in netlink-route-plan.c. */
#include "shared/netlink-route.h"

#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "basic/time-util.h"

/* A datagram of a dump: the kernel fills at most 32 KiB per datagram (netlink_dump()); twice that leaves
 * room, and a datagram that still does not fit is an error (MSG_TRUNC), not half a reply. */
#define NL_RECV_BUF (64 * 1024)
/* A datagram at most this big is taken for parsing: the same bound for the fuzzer's inputs. */
#define NL_DATAGRAM_MAX (1024 * 1024)
/* Reads of one reply: a full NETLINK_ROUTES_MAX table is about 2,000 datagrams. */
#define NL_READS_MAX          100000
#define NL_READ_TIMEOUT_USEC  (5 * USEC_PER_SEC)
#define NL_REPLY_TIMEOUT_USEC (30 * USEC_PER_SEC)
/* Dumps of a table that keeps changing under them (NLM_F_DUMP_INTR) before giving up. */
#define NL_DUMP_TRIES 3

const char *netlink_route_to_text(const NetlinkRoute *r, char buf[static NETLINK_ROUTE_TEXT_MAX]) {
        char dst[IN_ADDR_TEXT_MAX], gw[IN_ADDR_TEXT_MAX];

        if (r->has_gateway)
                snprintf(buf, NETLINK_ROUTE_TEXT_MAX, "%s/%u via %s",
                         in_addr_to_text(r->family, &r->dst, dst), r->dst_len,
                         in_addr_to_text(r->family, &r->gateway, gw));
        else if (r->ifindex > 0)
                snprintf(buf, NETLINK_ROUTE_TEXT_MAX, "%s/%u dev %d",
                         in_addr_to_text(r->family, &r->dst, dst), r->dst_len, r->ifindex);
        else /* a blackhole, a multipath route */
                snprintf(buf, NETLINK_ROUTE_TEXT_MAX, "%s/%u", in_addr_to_text(r->family, &r->dst, dst),
                         r->dst_len);
        return buf;
}

const char *netlink_route_protocol_to_text(unsigned char protocol,
                                           char buf[static NETLINK_ROUTE_PROTOCOL_TEXT_MAX]) {
        static const char *const names[] = {
                [RTPROT_UNSPEC] = "unspec",
                [RTPROT_REDIRECT] = "redirect",
                [RTPROT_KERNEL] = "kernel",
                [RTPROT_BOOT] = "boot",
                [RTPROT_STATIC] = "static",
                [RTPROT_GATED] = "gated",
                [RTPROT_RA] = "ra",
                [RTPROT_MRT] = "mrt",
                [RTPROT_ZEBRA] = "zebra",
                [RTPROT_BIRD] = "bird",
                [RTPROT_DNROUTED] = "dnrouted",
                [RTPROT_XORP] = "xorp",
                [RTPROT_NTK] = "ntk",
                [RTPROT_DHCP] = "dhcp",
                [RTPROT_KEEPALIVED] = "keepalived",
                [RTPROT_BABEL] = "babel",
                [RTPROT_OPENR] = "openr",
                [RTPROT_BGP] = "bgp",
                [RTPROT_ISIS] = "isis",
                [RTPROT_OSPF] = "ospf",
                [RTPROT_RIP] = "rip",
                [RTPROT_EIGRP] = "eigrp",
                [NETLINK_ROUTE_PROTO_PROTOKUBE] = "protokube",
        };
        if (protocol < ELEMENTSOF(names) && names[protocol])
                return names[protocol];
        snprintf(buf, NETLINK_ROUTE_PROTOCOL_TEXT_MAX, "%u", protocol);
        return buf;
}

int netlink_route_parse_spec(const char *s, NetlinkRoute *ret, char **ret_error) {
        char prefix[IN_ADDR_LITERAL_MAX + 5];
        NetlinkRoute r = { .protocol = NETLINK_ROUTE_PROTO_PROTOKUBE, .has_gateway = true };
        const char *eq = s ? strchr(s, '=') : NULL;

        if (!eq || (size_t)(eq - s) >= sizeof(prefix))
                return error_setf(ret_error, -EINVAL, "invalid route '%s' (expected PREFIX=GATEWAY)",
                                  strnull(s));
        memcpy(prefix, s, (size_t)(eq - s));
        prefix[eq - s] = 0;
        r.family = in_addr_prefix_parse(prefix, &r.dst, &r.dst_len);
        if (r.family == -EDOM)
                return error_setf(ret_error, -EINVAL,
                                  "invalid route '%s': '%s' has bits set beyond its length", s, prefix);
        if (r.family < 0)
                return error_setf(ret_error, -EINVAL,
                                  "invalid route '%s': '%s' is not a prefix (ADDRESS/LENGTH)", s, prefix);
        int gw_family = in_addr_parse(eq + 1, &r.gateway);
        if (gw_family < 0)
                return error_setf(ret_error, -EINVAL, "invalid route '%s': '%s' is not an address", s,
                                  eq + 1);
        if (gw_family != r.family)
                return error_setf(ret_error, -EINVAL,
                                  "invalid route '%s': the gateway is not of the prefix's family", s);
        *ret = r;
        return 0;
}

void netlink_route_reply_done(NetlinkRouteReply *reply) {
        free(reply->routes);
        free(reply->error_message);
        reply->routes = NULL;
        reply->error_message = NULL;
        reply->n_routes = reply->n_allocated = 0;
}

static int route_append(NetlinkRouteReply *reply, const NetlinkRoute *r, char **ret_error) {
        if (reply->n_routes >= NETLINK_ROUTES_MAX)
                return error_setf(ret_error, PK_ETOOBIG, "more than %d routes in the main table",
                                  NETLINK_ROUTES_MAX);
        if (reply->n_routes == reply->n_allocated) {
                size_t n = MAX(reply->n_allocated * 2, (size_t)16);
                NetlinkRoute *p = reallocarray(reply->routes, n, sizeof(*p));
                if (!p)
                        return -ENOMEM;
                reply->routes = p;
                reply->n_allocated = n;
        }
        reply->routes[reply->n_routes++] = *r;
        return 0;
}

/* One attribute of a route message: an address of exactly the family's size, or a u32. */
static int route_attr(const struct rtattr *a, size_t addr_size, NetlinkRoute *r, uint32_t *table) {
        size_t len = RTA_PAYLOAD(a);
        switch (a->rta_type) {
        case RTA_DST:
        case RTA_GATEWAY:
                if (len != addr_size)
                        return -1;
                if (a->rta_type == RTA_GATEWAY)
                        r->has_gateway = true;
                memcpy(a->rta_type == RTA_DST ? r->dst.bytes : r->gateway.bytes, RTA_DATA(a), len);
                return 0;
        case RTA_OIF:
        case RTA_TABLE:
        case RTA_PRIORITY: {
                uint32_t v;
                if (len != sizeof(v))
                        return -1;
                memcpy(&v, RTA_DATA(a), sizeof(v));
                if (a->rta_type == RTA_OIF)
                        r->ifindex = (int)v;
                else if (a->rta_type == RTA_TABLE)
                        *table = v;
                else
                        r->priority = v;
                return 0;
        }
        default:
                return 0; /* metrics, preference, multipath, cache info...: not part of the key we keep */
        }
}

static int parse_route(NetlinkRouteReply *reply, const struct nlmsghdr *h, char **ret_error) {
        if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct rtmsg)))
                return error_setf(ret_error, PK_EMALFORMED,
                                  "route message of %u bytes, shorter than its header", h->nlmsg_len);
        const struct rtmsg *rtm = NLMSG_DATA(h);
        size_t addr_size = in_addr_family_size(rtm->rtm_family);
        NetlinkRoute r = { .family = rtm->rtm_family,
                           .dst_len = rtm->rtm_dst_len,
                           .protocol = rtm->rtm_protocol,
                           .type = rtm->rtm_type };
        uint32_t table = rtm->rtm_table;

        /* a dump of one family may still carry others (AF_UNSPEC: both); none is ours to keep */
        if (addr_size == 0 || (reply->family != AF_UNSPEC && rtm->rtm_family != reply->family))
                return 0;
        if (rtm->rtm_dst_len > addr_size * 8)
                return error_setf(ret_error, PK_EMALFORMED, "route message with a /%u destination",
                                  rtm->rtm_dst_len);
        int left = (int)(h->nlmsg_len - NLMSG_SPACE(sizeof(struct rtmsg)));
        const struct rtattr *a = RTM_RTA(rtm);
        for (; RTA_OK(a, left); a = RTA_NEXT(a, left))
                if (route_attr(a, addr_size, &r, &table) < 0)
                        return error_setf(ret_error, PK_EMALFORMED,
                                          "route attribute %u of %u bytes, not the size of its type",
                                          a->rta_type, a->rta_len);
        if (left >= (int)sizeof(struct rtattr))
                return error_setf(ret_error, PK_EMALFORMED,
                                  "route message with %d bytes after its attributes", left);
        /* the FIB's routes of the main table; IPv6's cached clones are not routes anyone added */
        if (table != RT_TABLE_MAIN || (rtm->rtm_flags & RTM_F_CLONED))
                return 0;
        if (!in_addr_prefix_is_network(r.family, &r.dst, r.dst_len))
                return error_setf(ret_error, PK_EMALFORMED, "route message with bits set beyond its /%u",
                                  r.dst_len);
        return route_append(reply, &r, ret_error);
}

/* The text of an extended acknowledgement's NLMSGERR_ATTR_MSG, from the attributes at off in h. */
static int parse_ack_attrs(NetlinkRouteReply *reply, const struct nlmsghdr *h, size_t off,
                           char **ret_error) {
        size_t payload = h->nlmsg_len - NLMSG_HDRLEN;
        if (off > payload)
                return error_setf(ret_error, PK_EMALFORMED,
                                  "acknowledgement shorter than the request it echoes");
        int left = (int)(payload - off);
        const struct rtattr *a = (const struct rtattr *)((const uint8_t *)NLMSG_DATA(h) + off);
        for (; RTA_OK(a, left); a = RTA_NEXT(a, left)) {
                if (a->rta_type != NLMSGERR_ATTR_MSG)
                        continue;
                const char *text = RTA_DATA(a);
                size_t len = RTA_PAYLOAD(a);
                if (len == 0 || text[len - 1] != 0)
                        return error_setf(ret_error, PK_EMALFORMED, "acknowledgement text not terminated");
                if (reply->error < 0 && !reply->error_message && !string_has_cc(text) &&
                    !(reply->error_message = strdup(text)))
                        return -ENOMEM;
        }
        if (left >= (int)sizeof(struct rtattr))
                return error_setf(ret_error, PK_EMALFORMED,
                                  "acknowledgement with %d bytes after its attributes", left);
        return 0;
}

static int parse_error(NetlinkRouteReply *reply, const struct nlmsghdr *h, char **ret_error) {
        if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct nlmsgerr)))
                return error_setf(ret_error, PK_EMALFORMED,
                                  "error message of %u bytes, shorter than its header", h->nlmsg_len);
        const struct nlmsgerr *e = NLMSG_DATA(h);
        if (e->error > 0 || e->error < -4095)
                return error_setf(ret_error, PK_EMALFORMED, "error message with error %d", e->error);
        reply->error = e->error;
        reply->done = true;
        if (!(h->nlmsg_flags & NLM_F_ACK_TLVS))
                return 0;
        /* the attributes follow the request: its header alone when the kernel capped the echo */
        size_t off = sizeof(int) + sizeof(struct nlmsghdr);
        if (!(h->nlmsg_flags & NLM_F_CAPPED)) {
                if (e->msg.nlmsg_len < sizeof(struct nlmsghdr))
                        return error_setf(ret_error, PK_EMALFORMED,
                                          "error message echoing a %u-byte request", e->msg.nlmsg_len);
                off = sizeof(int) + NLMSG_ALIGN((size_t)e->msg.nlmsg_len);
        }
        return parse_ack_attrs(reply, h, off, ret_error);
}

static int parse_done(NetlinkRouteReply *reply, const struct nlmsghdr *h, char **ret_error) {
        reply->done = true;
        if (h->nlmsg_len < NLMSG_LENGTH(sizeof(int)))
                return 0; /* older kernels end a dump with an empty NLMSG_DONE */
        int error;
        memcpy(&error, NLMSG_DATA(h), sizeof(error));
        if (error > 0 || error < -4095)
                return error_setf(ret_error, PK_EMALFORMED, "end of dump with error %d", error);
        reply->error = error;
        if (!(h->nlmsg_flags & NLM_F_ACK_TLVS))
                return 0;
        return parse_ack_attrs(reply, h, sizeof(int), ret_error);
}

static int parse_message(NetlinkRouteReply *reply, const struct nlmsghdr *h, char **ret_error) {
        if (reply->done)
                return error_setf(ret_error, PK_EMALFORMED, "message after the end of the reply");
        if (h->nlmsg_seq != reply->seq || h->nlmsg_pid != reply->portid)
                return error_setf(ret_error, PK_EMALFORMED,
                                  "message of sequence %u for port %u, expected %u, %u", h->nlmsg_seq,
                                  h->nlmsg_pid, reply->seq, reply->portid);
        if (h->nlmsg_flags & NLM_F_DUMP_INTR)
                reply->interrupted = true;
        switch (h->nlmsg_type) {
        case NLMSG_NOOP:
                return 0;
        case NLMSG_DONE:
                return parse_done(reply, h, ret_error);
        case NLMSG_ERROR:
                return parse_error(reply, h, ret_error);
        case RTM_NEWROUTE:
                return parse_route(reply, h, ret_error);
        default:
                return error_setf(ret_error, PK_EMALFORMED, "unexpected message type %u", h->nlmsg_type);
        }
}

/* NLMSG_OK(), spelled out: the macro compares the header's u32 length with the int one, which clang's
 * -Wsign-compare refuses; the int is compared only once known to be at least a header's size. */
static bool nlmsg_ok(const struct nlmsghdr *h, int len) {
        return len >= (int)sizeof(struct nlmsghdr) && h->nlmsg_len >= sizeof(struct nlmsghdr) &&
               h->nlmsg_len <= (unsigned)len;
}

int netlink_route_reply_feed(NetlinkRouteReply *reply, const void *buf, size_t len, char **ret_error) {
        if (len > NL_DATAGRAM_MAX)
                return error_setf(ret_error, PK_ETOOBIG, "datagram of %zu bytes", len);
        if (len == 0 || (uintptr_t)buf % NLMSG_ALIGNTO != 0)
                return error_setf(ret_error, PK_EMALFORMED, "empty or misaligned datagram");
        int left = (int)len;
        const struct nlmsghdr *h = buf;
        for (; nlmsg_ok(h, left); h = NLMSG_NEXT(h, left)) {
                int r = parse_message(reply, h, ret_error);
                if (r < 0)
                        return r;
        }
        /* the last message's padding may be missing; anything more is a message cut short */
        if (left > 0)
                return error_setf(ret_error, PK_EMALFORMED, "%d bytes of a truncated message", left);
        return 0;
}

typedef struct NlRequest {
        struct nlmsghdr h;
        struct rtmsg rtm;
        uint8_t attrs[128];
} NlRequest;

/* A request carries at most four attributes: two addresses and two u32s. */
assert_cc(RTA_SPACE(16) * 2 + RTA_SPACE(4) * 2 <= sizeof(((NlRequest *)0)->attrs));

static void request_attr(NlRequest *q, unsigned short type, const void *data, size_t len) {
        struct rtattr *a = (struct rtattr *)((uint8_t *)q + NLMSG_ALIGN(q->h.nlmsg_len));
        a->rta_type = type;
        a->rta_len = (unsigned short)RTA_LENGTH(len);
        memcpy(RTA_DATA(a), data, len);
        q->h.nlmsg_len = NLMSG_ALIGN(q->h.nlmsg_len) + RTA_SPACE(len);
}

static int nl_open(int *ret_fd, uint32_t *ret_portid, char **ret_error) {
        _cleanup_close_ int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
        struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
        socklen_t salen = sizeof(sa);
        struct timeval tv = { .tv_sec = NL_READ_TIMEOUT_USEC / USEC_PER_SEC };
        int one = 1;

        if (fd < 0)
                return error_setf(ret_error, negative_errno(), "rtnetlink socket: %s", pk_strerror(errno));
        /* the kernel's reason in words (kernel 4.12) and no copy of our request in its answers: both
         * optional, an older kernel answers without them */
        (void)setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
        (void)setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
        if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
            bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
            getsockname(fd, (struct sockaddr *)&sa, &salen) < 0)
                return error_setf(ret_error, negative_errno(), "rtnetlink socket: %s", pk_strerror(errno));
        *ret_portid = sa.nl_pid;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

static int nl_receive(int fd, NetlinkRouteReply *reply, char **ret_error) {
        _cleanup_free_ void *buf = malloc(NL_RECV_BUF);
        usec_t deadline = now(CLOCK_MONOTONIC) + NL_REPLY_TIMEOUT_USEC;

        if (!buf)
                return -ENOMEM;
        for (unsigned i = 0; !reply->done; i++) {
                struct sockaddr_nl from = {};
                struct iovec iov = { .iov_base = buf, .iov_len = NL_RECV_BUF };
                struct msghdr msg = {
                        .msg_name = &from, .msg_namelen = sizeof(from), .msg_iov = &iov, .msg_iovlen = 1
                };
                if (i >= NL_READS_MAX || now(CLOCK_MONOTONIC) > deadline)
                        return error_setf(ret_error, PK_ETIMEOUT,
                                          "rtnetlink: no complete answer after %u reads", i);
                ssize_t n = recvmsg(fd, &msg, 0);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return error_setf(ret_error, PK_ETIMEOUT, "rtnetlink: no answer from the kernel");
                if (n < 0)
                        return error_setf(ret_error, negative_errno(), "rtnetlink: %s", pk_strerror(errno));
                if (msg.msg_flags & MSG_TRUNC)
                        return error_setf(ret_error, PK_ETOOBIG, "rtnetlink: a datagram beyond %d bytes",
                                          NL_RECV_BUF);
                if (from.nl_pid != 0)
                        continue; /* not from the kernel: another process's, never part of our answer */
                int r = netlink_route_reply_feed(reply, buf, (size_t)n, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Sends q and reads its whole answer into reply. */
static int nl_transact(NlRequest *q, NetlinkRouteReply *reply, char **ret_error) {
        _cleanup_close_ int fd = -1;
        struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
        uint32_t portid = 0;
        static uint32_t counter;

        int r = nl_open(&fd, &portid, ret_error);
        if (r < 0)
                return r;
        q->h.nlmsg_seq = (uint32_t)time(NULL) + ++counter;
        reply->seq = q->h.nlmsg_seq;
        reply->portid = portid;
        ssize_t n = sendto(fd, q, q->h.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel));
        if (n < 0)
                return error_setf(ret_error, negative_errno(), "rtnetlink: %s", pk_strerror(errno));
        if ((size_t)n != q->h.nlmsg_len)
                return error_setf(ret_error, -EIO, "rtnetlink: request sent in part");
        return nl_receive(fd, reply, ret_error);
}

static int list_once(int family, NetlinkRouteReply *reply, char **ret_error) {
        NlRequest q = {
                .h = { .nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg)),
                       .nlmsg_type = RTM_GETROUTE,
                       .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
                .rtm = { .rtm_family = (unsigned char)family },
        };
        reply->family = family;
        int r = nl_transact(&q, reply, ret_error);
        if (r < 0)
                return r;
        if (reply->error < 0)
                return error_setf(ret_error, reply->error, "listing the routes: %s%s%s%s",
                                  pk_strerror(reply->error), reply->error_message ? " (" : "",
                                  strempty(reply->error_message), reply->error_message ? ")" : "");
        return 0;
}

int netlink_route_list(int family, NetlinkRoute **ret, size_t *ret_n, char **ret_error) {
        if (family != AF_UNSPEC && in_addr_family_size(family) == 0)
                return error_setf(ret_error, -EAFNOSUPPORT, "routes of address family %d", family);
        for (unsigned i = 0; i < NL_DUMP_TRIES; i++) {
                _cleanup_(netlink_route_reply_done) NetlinkRouteReply reply = {};
                int r = list_once(family, &reply, ret_error);
                if (r < 0)
                        return r;
                if (reply.interrupted)
                        continue;
                *ret = TAKE_PTR(reply.routes);
                *ret_n = reply.n_routes;
                return 0;
        }
        return error_setf(ret_error, -EAGAIN, "the routing table changed during each of %d listings",
                          NL_DUMP_TRIES);
}

int netlink_route_list_ours(int family, NetlinkRoute **ret, size_t *ret_n, char **ret_error) {
        _cleanup_free_ NetlinkRoute *all = NULL;
        size_t n_all, n = 0;

        int r = netlink_route_list(family, &all, &n_all, ret_error);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n_all; i++)
                if (all[i].protocol == NETLINK_ROUTE_PROTO_PROTOKUBE)
                        all[n++] = all[i];
        *ret = TAKE_PTR(all);
        *ret_n = n;
        return 0;
}

/* A request about r's route with our protocol in the main table, its key attributes added. */
static int route_request(const NetlinkRoute *r, uint16_t type, uint16_t flags, NlRequest *q,
                         char **ret_error) {
        char text[NETLINK_ROUTE_TEXT_MAX];
        size_t size = in_addr_family_size(r->family);

        if (size == 0 || r->dst_len > size * 8 || !in_addr_prefix_is_network(r->family, &r->dst, r->dst_len))
                return error_setf(ret_error, -EINVAL, "%s: not a route", netlink_route_to_text(r, text));
        /* a route to add needs a next hop; one to delete may have none we can name (a multipath route of
         * ours made by hand), its prefix, metric and our protocol say which it is */
        if (type == RTM_NEWROUTE && !r->has_gateway && r->ifindex <= 0)
                return error_setf(ret_error, -EINVAL, "%s: neither a gateway nor an interface",
                                  netlink_route_to_text(r, text));
        *q = (NlRequest){
                .h = { .nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg)),
                       .nlmsg_type = type,
                       .nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags },
                .rtm = { .rtm_family = (unsigned char)r->family,
                         .rtm_dst_len = r->dst_len,
                         .rtm_table = RT_TABLE_MAIN,
                         .rtm_protocol = NETLINK_ROUTE_PROTO_PROTOKUBE,
                         .rtm_type = RTN_UNICAST },
        };
        request_attr(q, RTA_DST, r->dst.bytes, size);
        if (r->has_gateway)
                request_attr(q, RTA_GATEWAY, r->gateway.bytes, size);
        if (r->ifindex > 0) {
                uint32_t oif = (uint32_t)r->ifindex;
                request_attr(q, RTA_OIF, &oif, sizeof(oif));
        }
        return 0;
}

static int route_exchange(const NetlinkRoute *r, NlRequest *q, char **ret_error) {
        _cleanup_(netlink_route_reply_done) NetlinkRouteReply reply = { .family = r->family };
        char text[NETLINK_ROUTE_TEXT_MAX];
        _cleanup_free_ char *detail = NULL;

        int k = nl_transact(q, &reply, &detail);
        if (k < 0)
                return error_setf(ret_error, k, "%s: %s", netlink_route_to_text(r, text), strnull(detail));
        if (reply.error < 0)
                return error_setf(ret_error, reply.error, "%s: %s%s%s%s", netlink_route_to_text(r, text),
                                  pk_strerror(reply.error), reply.error_message ? " (" : "",
                                  strempty(reply.error_message), reply.error_message ? ")" : "");
        return 0;
}

int netlink_route_replace(const NetlinkRoute *r, char **ret_error) {
        NlRequest q;
        int k = route_request(r, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE, &q, ret_error);
        if (k < 0)
                return k;
        q.rtm.rtm_scope = r->has_gateway ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK;
        return route_exchange(r, &q, ret_error);
}

int netlink_route_delete(const NetlinkRoute *r, char **ret_error) {
        NlRequest q;
        int k = route_request(r, RTM_DELROUTE, 0, &q, ret_error);
        if (k < 0)
                return k;
        /* RT_SCOPE_NOWHERE: any scope, as `ip route del` asks; the protocol is what must match */
        q.rtm.rtm_scope = RT_SCOPE_NOWHERE;
        if (r->type != 0)
                q.rtm.rtm_type = r->type;
        if (r->priority != 0)
                request_attr(&q, RTA_PRIORITY, &r->priority, sizeof(r->priority));
        return route_exchange(r, &q, ret_error);
}
