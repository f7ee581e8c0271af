/* SPDX-License-Identifier: Apache-2.0 */
/* protokube routes [set PREFIX=GATEWAY...]: the routes protokube keeps in the main table (its own routing
 * protocol, shared/netlink-route.h), listed; and made exactly those given, by the same list, diff,
 * replace and delete a pass uses. Another owner's route is never changed: a prefix it routes is refused
 * with its name. */
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "basic/errors.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "cli/cli.h"
#include "shared/netlink-route.h"

static void print_route(const NetlinkRoute *r) {
        char text[NETLINK_ROUTE_TEXT_MAX], ifname[IF_NAMESIZE];

        netlink_route_to_text(r, text);
        if (r->has_gateway && r->ifindex > 0 && if_indextoname((unsigned)r->ifindex, ifname))
                printf("%s dev %s\n", text, ifname);
        else
                printf("%s\n", text);
}

int verb_routes(CliContext *ctx, char **args) {
        _cleanup_free_ NetlinkRoute *ours = NULL;
        _cleanup_free_ char *error = NULL;
        size_t n;

        int r = netlink_route_list_ours(AF_UNSPEC, &ours, &n, &error);
        if (r < 0)
                return log_error_errno(r, "%s", strnull(error)), EXIT_ERROR;
        for (size_t i = 0; i < n; i++)
                print_route(&ours[i]);
        return EXIT_SUCCESS;
}

/* Replaces, then deletes (a replace may have taken an old route over: ESRCH is fine then). Returns the
 * number of failures. */
static unsigned apply(const NetlinkRoutePlan *p) {
        char text[NETLINK_ROUTE_TEXT_MAX], theirs[NETLINK_ROUTE_TEXT_MAX],
            proto[NETLINK_ROUTE_PROTOCOL_TEXT_MAX];
        unsigned failed = 0;

        for (size_t i = 0; i < p->n_conflicts; i++, failed++) {
                const NetlinkRoute *t = &p->conflicts[i].theirs;
                log_error("%s: refused: another owner's route has this prefix (%s%s proto %s); protokube "
                          "leaves it alone",
                          netlink_route_to_text(&p->conflicts[i].want, text),
                          t->type == RTN_UNICAST ? "" : "not unicast: ", netlink_route_to_text(t, theirs),
                          netlink_route_protocol_to_text(t->protocol, proto));
        }
        for (size_t i = 0; i < p->n_replace; i++) {
                _cleanup_free_ char *error = NULL;
                int r = netlink_route_replace(&p->replace[i], &error);
                if (r < 0) {
                        log_error_errno(r, "%s", strnull(error));
                        failed++;
                } else
                        printf("replace %s\n", netlink_route_to_text(&p->replace[i], text));
        }
        for (size_t i = 0; i < p->n_delete; i++) {
                _cleanup_free_ char *error = NULL;
                int r = netlink_route_delete(&p->delete[i], &error);
                if (r < 0 && r != -ESRCH) {
                        log_error_errno(r, "%s", strnull(error));
                        failed++;
                } else if (r >= 0)
                        printf("delete %s\n", netlink_route_to_text(&p->delete[i], text));
        }
        return failed;
}

int verb_routes_set(CliContext *ctx, char **args) {
        _cleanup_free_ NetlinkRoute *want = NULL, *have = NULL;
        _cleanup_(netlink_route_plan_done) NetlinkRoutePlan plan = {};
        _cleanup_free_ char *error = NULL;
        size_t n_want = 0, n_have;

        while (args[n_want])
                n_want++;
        want = new0(NetlinkRoute, MAX(n_want, (size_t)1));
        if (!want)
                return log_oom(), EXIT_ERROR;
        for (size_t i = 0; i < n_want; i++)
                if (netlink_route_parse_spec(args[i], &want[i], &error) < 0)
                        return cli_usage_error(ctx->name, "%s", error);
        int r = netlink_route_list(AF_UNSPEC, &have, &n_have, &error);
        if (r < 0)
                return log_error_errno(r, "%s", strnull(error)), EXIT_ERROR;
        r = netlink_route_plan(want, n_want, have, n_have, &plan, &error);
        if (r == -EINVAL)
                return cli_usage_error(ctx->name, "%s", strnull(error));
        if (r < 0)
                return log_error_errno(r, "Planning the routes: %s", error ?: pk_strerror(r)), EXIT_ERROR;
        unsigned failed = apply(&plan);
        if (failed > 0)
                return log_error("%u of the routes could not be made as given", failed), EXIT_ERROR;
        return EXIT_SUCCESS;
}
