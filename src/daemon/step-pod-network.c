/* SPDX-License-Identifier: Apache-2.0 */
/* The pods' network of a node in kubenet mode (docs/workers.md, "Pod networking"; spec.networking.provider:
 * kubenet), on masters and workers alike:
 *   - the node's CNI network (components/cni.h) on the podCIDR the controller-manager gave its Node,
 *     written atomically into spec.networking.cniConfDir and only when it changes;
 *   - a route to every other Node's podCIDR via that Node's internal address, in the kernel's main table
 *     under protokube's own routing protocol (shared/netlink-route.h): a route of another owner is never
 *     changed, and one of ours whose Node is gone is deleted.
 * The Nodes come from the API: a master asks its own apiserver with protokube's identity, a worker asks the
 * API at a master's address with its kubelet's (its own Node's certificate: the Node authorizer lets a node
 * read the Nodes). The two differ only in that, so each role's table has its own row for the step. With
 * provider none the step does nothing: the operator's CNI owns the pods' network. */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "basic/trace.h"
#include "components/cni.h"
#include "daemon/pass-types.h"
#include "daemon/progress.h"
#include "daemon/step-pod-network.h"
#include "kube/kube-client.h"
#include "model/cluster-view.h"
#include "model/conventions.h"
#include "shared/http.h"

#define POD_NETWORK_TIMEOUT (5ULL * USEC_PER_SEC) /* the one list of Nodes of a pass */
#define CNI_CONF_MAX        (64U * 1024U)

void pass_pod_network_observed_done(PassPodNetworkObserved *n) {
        free(n->message);
        kube_node_networks_free(n->nodes, n->n_nodes);
        strv_free(n->warnings);
        free(n->conflist);
        free(n->routes);
        free(n->self);
        *n = (PassPodNetworkObserved){};
}

void pass_pod_network_plan_done(PassPodNetworkPlan *n) {
        free(n->note);
        free(n->conflist);
        free(n->conflist_path);
        netlink_route_plan_done(&n->routes);
        *n = (PassPodNetworkPlan){};
}

static bool kubenet(const Pass *p) {
        return p->spec->networking.provider.value == NETWORKING_KUBENET;
}

static int observe_status(PassPodNetworkObserved *n, int status, char *message) {
        n->status = status;
        n->message = message;
        return message ? 0 : -ENOMEM;
}

/* The Nodes through c, and the node's CNI file and our routes as they are. */
static int observe_with(PassContext *ctx, KubeClient *c) {
        const Pass *p = ctx->pass;
        PassPodNetworkObserved *n = &ctx->obs->pod_network;
        _cleanup_(json_decrefp) json_t *list = NULL;
        _cleanup_free_ char *error = NULL,
                            *path = strjoin(p->spec->networking.cni_conf_dir, "/", CNI_KUBENET_CONF_NAME);
        if (!path)
                return -ENOMEM;
        int r = kube_list(c, "v1", "Node", NULL, NULL, now(CLOCK_MONOTONIC) + POD_NETWORK_TIMEOUT, &list,
                          &error);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return observe_status(n, PK_EWAITING, strprintf("cannot list the Nodes: %s", strna(error)));
        r = kube_node_networks(list, &n->nodes, &n->n_nodes, &n->warnings);
        if (r < 0)
                return r == -ENOMEM ? r : observe_status(n, r, strdup("cannot read the Nodes"));
        r = read_full_file(path, CNI_CONF_MAX, &n->conflist, NULL);
        if (r < 0 && r != -ENOENT)
                return r == -ENOMEM
                           ? r
                           : observe_status(n, r, strprintf("cannot read %s: %s", path, pk_strerror(r)));
        r = netlink_route_list(AF_UNSPEC, &n->routes, &n->n_routes, &error);
        if (r < 0)
                return r == -ENOMEM
                           ? r
                           : observe_status(n, r, strprintf("cannot list the routes: %s", strna(error)));
        n->observed = true;
        return 0;
}

/* The Nodes and the rest through the API's name at address (a master's), with kubeconfig's identity. */
static int observe_through(PassContext *ctx, const char *kubeconfig, const char *address) {
        const Pass *p = ctx->pass;
        _cleanup_(kube_client_freep) KubeClient *c = NULL;
        _cleanup_free_ char *error = NULL;
        int r = pass_open_api_at(p->spec, kubeconfig, address, POD_NETWORK_TIMEOUT, &c, &error);
        if (r < 0)
                return r == -ENOMEM ? r
                                    : observe_status(&ctx->obs->pod_network, PK_EWAITING,
                                                     strprintf("no API client: %s", strna(error)));
        return observe_with(ctx, c);
}

/* A master: its own apiserver, with protokube's identity, at its own internal address. */
static int pod_network_observe_master(PassContext *ctx) {
        const Pass *p = ctx->pass;
        PassPodNetworkObserved *n = &ctx->obs->pod_network;
        const NodeIdentity *self = &ctx->obs->volumes.node;
        if (!kubenet(p))
                return 0;
        trace_mark("pod network: the Nodes");
        _cleanup_free_ char *kubeconfig = pass_api_kubeconfig(p->spec);
        if (!kubeconfig)
                return -ENOMEM;
        if (!self->name || strv_length(self->internal_ips) == 0 || !cluster_spec_pki_managed(p->spec))
                return observe_status(n, PK_EWAITING,
                                      strdup("this master has no name, address or API identity yet"));
        if (!(n->self = strdup(self->name)))
                return -ENOMEM;
        return observe_through(ctx, kubeconfig, self->internal_ips[0]);
}

/* A worker: the API at the first master of the view that has an address, with its kubelet's identity
 * (none before the kubelet joined: the step waits). */
static int pod_network_observe_worker(PassContext *ctx) {
        const Pass *p = ctx->pass;
        PassPodNetworkObserved *n = &ctx->obs->pod_network;
        _cleanup_free_ char *kubeconfig = pass_kubelet_file(p, PASS_KUBELET_KUBECONFIG), *address = NULL;
        if (!kubenet(p))
                return 0;
        if (!kubeconfig || !(n->self = strdup(strempty(p->node.node_name))))
                return -ENOMEM;
        if (access(kubeconfig, F_OK) < 0)
                return observe_status(n, PK_EWAITING,
                                      strdup("the kubelet has not joined yet (no kubeconfig)"));
        int r = pass_view_master_address(ctx->obs, &address);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return observe_status(n, PK_EWAITING, strdup("no master with an address in the view yet"));
        return observe_through(ctx, kubeconfig, address);
}

static int plan_status(PassPodNetworkPlan *k, int status, char *note) {
        k->status = status;
        k->note = note;
        return note ? 0 : -ENOMEM;
}

/* The routes this node wants: each other Node's pod CIDRs via its first internal address of the same
 * family. A Node without either is left out (not allocated yet, or not registered its address). */
static int wanted_routes(const PassPodNetworkObserved *n, NetlinkRoute **ret, size_t *ret_n) {
        size_t cap = 0, k = 0;
        for (size_t i = 0; i < n->n_nodes; i++)
                cap += strv_length(n->nodes[i].pod_cidrs);
        _cleanup_free_ NetlinkRoute *l = new0(NetlinkRoute, cap + 1);
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < n->n_nodes; i++) {
                const KubeNodeNetwork *node = &n->nodes[i];
                if (streq(node->name, n->self))
                        continue;
                STRV_FOREACH (cidr, node->pod_cidrs)
                        STRV_FOREACH (ip, node->internal_ips) {
                                _cleanup_free_ char *spec = strjoin(*cidr, "=", *ip), *err = NULL;
                                if (!spec)
                                        return -ENOMEM;
                                if (netlink_route_parse_spec(spec, &l[k], &err) >= 0) { /* same family */
                                        k++;
                                        break;
                                }
                        }
        }
        *ret = TAKE_PTR(l);
        *ret_n = k;
        return 0;
}

static const KubeNodeNetwork *self_node(const PassPodNetworkObserved *n) {
        for (size_t i = 0; i < n->n_nodes; i++)
                if (streq(n->nodes[i].name, n->self))
                        return &n->nodes[i];
        return NULL;
}

/* Pure over (spec, observation): the CNI file for the node's first pod CIDR, and the routes' diff. */
static int pod_network_plan(const Pass *p, const PassObservation *o, PassPlan *plan) {
        const PassPodNetworkObserved *n = &o->pod_network;
        PassPodNetworkPlan *k = &plan->pod_network;
        _cleanup_free_ NetlinkRoute *want = NULL;
        _cleanup_free_ char *error = NULL;
        size_t n_want = 0;
        if (!kubenet(p))
                return 0;
        k->enabled = true;
        if (!n->observed)
                return plan_status(k, n->status ?: PK_EWAITING, strdup(strna(n->message)));
        const KubeNodeNetwork *self = self_node(n);
        if (!self || strv_length(self->pod_cidrs) == 0)
                return plan_status(k, PK_EWAITING,
                                   strprintf("Node %s has no podCIDR yet (kube-controller-manager "
                                             "--allocate-node-cidrs gives it one)",
                                             n->self));
        k->conflist_path = strjoin(p->spec->networking.cni_conf_dir, "/", CNI_KUBENET_CONF_NAME);
        if (!k->conflist_path)
                return -ENOMEM;
        int r = cni_kubenet_conflist(p->spec, self->pod_cidrs[0], &k->conflist, &error);
        if (r < 0)
                return r == -ENOMEM ? r : plan_status(k, r, TAKE_PTR(error));
        k->write_conflist = !streq_ptr(n->conflist, k->conflist);
        r = wanted_routes(n, &want, &n_want);
        if (r >= 0)
                r = netlink_route_plan(want, n_want, n->routes, n->n_routes, &k->routes, &error);
        if (r < 0)
                return r == -ENOMEM ? r : plan_status(k, r, TAKE_PTR(error));
        /* A Node with a value that did not pass its check is not a Node that is gone: while any was left
         * out, none of our routes is deleted (the one to that Node's podCIDR may still be right). */
        if (strv_length(n->warnings) > 0)
                k->routes.n_delete = 0;
        return 0;
}

static void report(PassContext *ctx, int r, const char *why) {
        pass_report_status(ctx, PASS_STAGE_POD_NETWORK, "pod network", r, why);
}

static int apply_routes(PassContext *ctx, const NetlinkRoutePlan *rp) {
        char buf[NETLINK_ROUTE_TEXT_MAX], theirs[NETLINK_ROUTE_TEXT_MAX];
        for (size_t i = 0; i < rp->n_replace; i++) {
                _cleanup_free_ char *error = NULL;
                int r = netlink_route_replace(&rp->replace[i], &error);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        report(ctx, r, strna(error));
                        continue;
                }
                log_info("pod network: route %s.", netlink_route_to_text(&rp->replace[i], buf));
                ctx->rep->actions_applied++;
        }
        for (size_t i = 0; i < rp->n_delete; i++) {
                _cleanup_free_ char *error = NULL;
                int r = netlink_route_delete(&rp->delete[i], &error);
                if (r == -ENOMEM)
                        return r;
                if (r < 0 && r != -ESRCH) {
                        report(ctx, r, strna(error));
                        continue;
                }
                log_info("pod network: deleted the route %s.", netlink_route_to_text(&rp->delete[i], buf));
                ctx->rep->actions_applied++;
        }
        for (size_t i = 0; i < rp->n_conflicts; i++)
                log_warning("pod network: not routing %s: another owner routes it (%s).",
                            netlink_route_to_text(&rp->conflicts[i].want, buf),
                            netlink_route_to_text(&rp->conflicts[i].theirs, theirs));
        return 0;
}

static int pod_network_apply(PassContext *ctx, PassWave wave) {
        const PassPodNetworkPlan *k = &ctx->plan->pod_network;
        if (!k->enabled)
                return 0;
        pass_progress_step("pod network");
        STRV_FOREACH (w, ctx->obs->pod_network.warnings)
                log_warning("pod network: %s: left out, and no route of ours deleted this pass.", *w);
        if (k->status != 0) {
                report(ctx, k->status, strna(k->note));
                return 0;
        }
        int r = 0;
        if (k->write_conflist) {
                r = mkdir_p(ctx->pass->spec->networking.cni_conf_dir, 0755);
                if (r >= 0)
                        r = write_file_atomic(k->conflist_path, k->conflist, strlen(k->conflist), 0644,
                                              true);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        _cleanup_free_ char *why =
                            strprintf("cannot write %s: %s", k->conflist_path, pk_strerror(r));
                        report(ctx, r, strna(why));
                } else {
                        log_info("pod network: wrote %s.", k->conflist_path);
                        ctx->rep->actions_applied++;
                }
        }
        return apply_routes(ctx, &k->routes);
}

static int pod_network_print(const Pass *p, const PassObservation *o, const PassPlan *plan, FILE *out) {
        const PassPodNetworkPlan *k = &plan->pod_network;
        char buf[NETLINK_ROUTE_TEXT_MAX], theirs[NETLINK_ROUTE_TEXT_MAX];
        if (!k->enabled)
                return 0;
        int r = pass_print_status(out, "pod-network", "cannot plan", k->status, k->note);
        if (r != 0)
                return MIN(r, 0);
        if (k->write_conflist)
                fprintf(out, "pod-network-write %s\n", k->conflist_path);
        for (size_t i = 0; i < k->routes.n_replace; i++)
                fprintf(out, "pod-network-route %s\n", netlink_route_to_text(&k->routes.replace[i], buf));
        for (size_t i = 0; i < k->routes.n_delete; i++)
                fprintf(out, "pod-network-delete-route %s\n",
                        netlink_route_to_text(&k->routes.delete[i], buf));
        for (size_t i = 0; i < k->routes.n_conflicts; i++)
                fprintf(out, "pod-network: not routing %s: another owner routes it (%s)\n",
                        netlink_route_to_text(&k->routes.conflicts[i].want, buf),
                        netlink_route_to_text(&k->routes.conflicts[i].theirs, theirs));
        if (!k->write_conflist && k->routes.n_replace == 0 && k->routes.n_delete == 0)
                fprintf(out, "pod-network: the CNI network and the routes are current\n");
        return 0;
}

const PassStep pass_step_pod_network_master = {
        .name = "pod network",
        .stage = PASS_STAGE_POD_NETWORK,
        .roles = 1U << NODE_ROLE_MASTER,
        .observe = pod_network_observe_master,
        .plan = pod_network_plan,
        .apply = pod_network_apply,
        .print = pod_network_print,
};

const PassStep pass_step_pod_network_worker = {
        .name = "pod network",
        .stage = PASS_STAGE_POD_NETWORK,
        .roles = 1U << NODE_ROLE_WORKER,
        .observe = pod_network_observe_worker,
        .plan = pod_network_plan,
        .apply = pod_network_apply,
        .print = pod_network_print,
};
