/* SPDX-License-Identifier: Apache-2.0 */
/* The rtnetlink reply parser (the kernel's answer to a route dump, an acknowledgement, an error); the corpus
 * is the kernel's own answers, captured by tests/fuzz/capture-netlink-route.py, and a few cut short. The
 * input is one datagram; its first message's sequence and port are taken as the request's, so that the
 * fuzzer gets past that check. Beyond not crashing: every route kept is a network prefix of a known family,
 * an error is a -errno and ends the reply, a message's text has no control characters, and the diff of
 * nothing wanted against the routes kept deletes exactly ours. */
#include <linux/netlink.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "shared/netlink-route.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_routes(const NetlinkRouteReply *reply) {
        _cleanup_(netlink_route_plan_done) NetlinkRoutePlan plan = {};
        char text[NETLINK_ROUTE_TEXT_MAX];
        size_t ours = 0;

        if (reply->n_routes > NETLINK_ROUTES_MAX)
                abort();
        for (size_t i = 0; i < reply->n_routes; i++) {
                const NetlinkRoute *r = &reply->routes[i];
                size_t addr = in_addr_family_size(r->family);
                if (addr == 0 || r->dst_len > addr * 8 ||
                    !in_addr_prefix_is_network(r->family, &r->dst, r->dst_len))
                        abort();
                if (strlen(netlink_route_to_text(r, text)) >= sizeof(text))
                        abort();
                ours += r->protocol == NETLINK_ROUTE_PROTO_PROTOKUBE;
        }
        if (netlink_route_plan(NULL, 0, reply->routes, reply->n_routes, &plan, NULL) < 0)
                return;
        if (plan.n_delete != ours || plan.n_replace != 0 || plan.n_conflicts != 0)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(netlink_route_reply_done) NetlinkRouteReply reply = { .family = AF_UNSPEC };
        _cleanup_free_ char *error = NULL;
        _cleanup_free_ void *buf = malloc(MAX(size, (size_t)1)); /* aligned, as a receive buffer is */
        struct nlmsghdr h;

        if (!buf)
                return 0;
        memcpy(buf, data, size);
        if (size >= sizeof(h)) {
                memcpy(&h, data, sizeof(h));
                reply.seq = h.nlmsg_seq;
                reply.portid = h.nlmsg_pid;
        }
        int r = netlink_route_reply_feed(&reply, buf, size, &error);
        if (r < 0 && !error)
                abort(); /* every failure says why (out of memory aside, which the fuzzer does not reach) */
        if (reply.error > 0 || reply.error < -4095 || (reply.error < 0 && !reply.done))
                abort();
        if (reply.error_message && string_has_cc(reply.error_message))
                abort();
        check_routes(&reply);
        return 0;
}
