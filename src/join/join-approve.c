/* SPDX-License-Identifier: Apache-2.0 */
/* The approver's pure decision over a kubelet CSR, and the signer's check. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/dns-name.h"
#include "basic/errors.h"
#include "basic/in-addr-util.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "join/join-approve.h"
#include "join/join-pin.h"
#include "kube/kube-name.h"
#include "shared/crypto.h"

#define MACHINE_KEY_PREFIX "key:" JOIN_PIN_PREFIX

static const char *const verdict_table[_JOIN_VERDICT_MAX] = {
        [JOIN_VERDICT_IGNORE] = "ignore",
        [JOIN_VERDICT_APPROVE] = "approve",
        [JOIN_VERDICT_REFUSE] = "refuse",
};

const char *join_verdict_to_string(JoinVerdict v) {
        return v >= 0 && v < _JOIN_VERDICT_MAX ? verdict_table[v] : NULL;
}

void join_decision_done(JoinDecision *d) {
        free(d->reason);
        free(d->node);
        free(d->machine);
        *d = (JoinDecision){};
}

const JoinBinding *join_cluster_binding(const JoinCluster *cl, const char *node) {
        for (size_t i = 0; node && i < cl->n_bindings; i++)
                if (streq_ptr(cl->bindings[i].node, node))
                        return &cl->bindings[i];
        return NULL;
}

const JoinNode *join_cluster_node(const JoinCluster *cl, const char *node) {
        for (size_t i = 0; node && i < cl->n_nodes; i++)
                if (streq_ptr(cl->nodes[i].name, node))
                        return &cl->nodes[i];
        return NULL;
}

static const JoinMachine *cluster_machine(const JoinCluster *cl, const char *node) {
        for (size_t i = 0; node && i < cl->n_machines; i++)
                if (streq_ptr(cl->machines[i].node_name, node))
                        return &cl->machines[i];
        return NULL;
}

int join_csr_machine(const JoinCsr *csr, const JoinCluster *cl, const char *node, char **ret) {
        char hex[PKI_SPKI_SHA256_SIZE * 2 + 1];
        if (cl->machines_known) {
                const JoinMachine *m = cluster_machine(cl, node);
                *ret = m ? strdup(m->id) : NULL;
                return !m || *ret ? 0 : -ENOMEM;
        }
        if (!csr->request || !join_csr_by_bootstrap_token(csr)) {
                *ret = NULL;
                return 0;
        }
        crypto_hex(csr->request->spki_sha256, sizeof(csr->request->spki_sha256), hex);
        *ret = strjoin(MACHINE_KEY_PREFIX, hex);
        return *ret ? 0 : -ENOMEM;
}

/* The decision's verdict and reason (formatted); -ENOMEM when the reason cannot be written. */
#define decide(d, v, ...) ((d)->verdict = (v), ((d)->reason = strprintf(__VA_ARGS__)) ? 0 : -ENOMEM)

static const char *format_since(const JoinBinding *b, char buf[static RFC3339_MAX]) {
        return format_rfc3339(buf, b->since) ?: "?";
}

/* The rules of the name's binding for a bootstrap (a new machine asking for the name). */
static int decide_bootstrap(const JoinCsr *csr, const JoinCluster *cl, const char *node, JoinDecision *d) {
        const JoinBinding *b = join_cluster_binding(cl, node);
        const JoinNode *n = join_cluster_node(cl, node);
        char since[RFC3339_MAX];
        if (!b && n)
                return decide(d, JOIN_VERDICT_REFUSE,
                              "Node %s exists and no machine is bound to its name: another machine may join "
                              "as %s only once that Node is deleted",
                              node, node);
        if (!b) {
                d->bind = JOIN_BIND_CREATE;
                return decide(d, JOIN_VERDICT_APPROVE,
                              "new node %s (bootstrap token %s), bound to machine %s", node, csr->username,
                              d->machine);
        }
        if (streq(b->machine, d->machine))
                return decide(d, JOIN_VERDICT_APPROVE,
                              "node %s asks again from its machine %s (bootstrap token %s)", node,
                              d->machine, csr->username);
        if (b->node_uid && !n) {
                d->bind = JOIN_BIND_REPLACE;
                d->replaced = b;
                return decide(d, JOIN_VERDICT_APPROVE,
                              "node %s: its Node was deleted, the name passes from machine %s to %s", node,
                              b->machine, d->machine);
        }
        if (!b->node_uid && !n)
                return decide(
                    d, JOIN_VERDICT_REFUSE,
                    "node name %s is bound to machine %s (since %s, request %s), which has not "
                    "registered its Node yet: if that machine is gone, delete ConfigMap %s/%s%s to "
                    "free the name",
                    node, b->machine, format_since(b, since), strna(b->csr), JOIN_BINDING_NAMESPACE,
                    JOIN_BINDING_PREFIX, node);
        return decide(
            d, JOIN_VERDICT_REFUSE,
            "node name %s is bound to machine %s (since %s), not to %s: another machine may take it "
            "only once Node %s is deleted",
            node, b->machine, format_since(b, since), d->machine, node);
}

/* On a cloud that lists its machines, the name is one's; a node's own request (a renewal, a serving
 * certificate) also comes from the machine the name is bound to: once a released name went to another
 * machine, the old one's certificate is not renewed. A bootstrap's binding rules follow in
 * decide_bootstrap(). */
static int check_machine(const JoinCluster *cl, const char *node, bool by_node, JoinDecision *d) {
        const JoinBinding *b = join_cluster_binding(cl, node);
        char since[RFC3339_MAX];
        if (!cl->machines_known)
                return 0;
        if (!d->machine)
                return decide(d, JOIN_VERDICT_REFUSE, "%s is not the node name of a machine of this cluster",
                              node);
        if (by_node && b && !streq(b->machine, d->machine))
                return decide(
                    d, JOIN_VERDICT_REFUSE,
                    "node name %s is bound to machine %s (since %s), not to %s, which has that name "
                    "now",
                    node, b->machine, format_since(b, since), d->machine);
        return 0;
}

/* Every SAN is one of the Node's addresses (IP literals compared in canonical form, DNS names without
 * regard to case). */
static bool address_known(const JoinNode *n, const char *san, bool ip) {
        STRV_FOREACH (a, (char **)n->addresses) {
                _cleanup_free_ char *canonical = NULL;
                if (ip ? in_addr_literal_parse(*a, &canonical) >= 0 && streq(canonical, san)
                       : dns_name_equal(*a, san))
                        return true;
        }
        return false;
}

static int decide_serving(const JoinCsr *csr, const JoinCluster *cl, const char *node, JoinDecision *d) {
        const JoinNode *n = join_cluster_node(cl, node);
        _cleanup_free_ char *known = NULL;
        if (!n)
                return decide(d, JOIN_VERDICT_REFUSE,
                              "Node %s does not exist: a serving certificate names only its addresses",
                              node);
        for (int ip = 0; ip < 2; ip++)
                STRV_FOREACH (san, ip ? csr->request->ips : csr->request->dns)
                        if (!address_known(n, *san, ip)) {
                                known = strv_join((char **)n->addresses, ", ");
                                return decide(d, JOIN_VERDICT_REFUSE,
                                              "SAN %s is not one of Node %s's addresses (%s)", *san, node,
                                              isempty(known) ? "none" : known);
                        }
        return decide(d, JOIN_VERDICT_APPROVE, "serving certificate of node %s for its own addresses", node);
}

static int decide_request(const JoinCsr *csr, const JoinCluster *cl, const char *node, JoinDecision *d) {
        bool by_token = join_csr_by_bootstrap_token(csr), by_node = join_csr_by_node(csr, node);
        const JoinBinding *b = join_cluster_binding(cl, node);
        _cleanup_free_ char *groups = strv_join(csr->groups, ",");
        int r = join_csr_machine(csr, cl, node, &d->machine);
        if (r < 0)
                return r;
        if (b && b->invalid)
                return decide(d, JOIN_VERDICT_REFUSE, "the binding of node name %s does not read: %s", node,
                              b->invalid);
        if (csr->kind == JOIN_CSR_SERVING && !by_node)
                return decide(d, JOIN_VERDICT_REFUSE,
                              "a serving certificate is approved only for the node itself: requester '%s' "
                              "(groups %s) is not system:node:%s in system:nodes",
                              strna(csr->username), strna(groups), node);
        if (!by_token && !by_node)
                return decide(d, JOIN_VERDICT_REFUSE,
                              "requester '%s' (groups %s) is neither a bootstrap token nor node %s itself",
                              strna(csr->username), strna(groups), node);
        r = check_machine(cl, node, by_node, d);
        if (r < 0 || d->reason)
                return r;
        if (csr->kind == JOIN_CSR_SERVING)
                return decide_serving(csr, cl, node, d);
        if (by_node)
                return decide(d, JOIN_VERDICT_APPROVE, "renewal by node %s itself", node);
        return decide_bootstrap(csr, cl, node, d);
}

int join_csr_decide(const JoinCsr *csr, const JoinCluster *cl, JoinDecision *ret) {
        _cleanup_(join_decision_done) JoinDecision d = {};
        _cleanup_free_ char *why = NULL;
        const char *node = NULL;
        int r;
        if (csr->kind == JOIN_CSR_OTHER)
                r = decide(&d, JOIN_VERDICT_IGNORE, "signer %s is not protokube's", strna(csr->signer_name));
        else if (csr->denied || csr->failed || csr->approved)
                r = decide(&d, JOIN_VERDICT_IGNORE, "%s already",
                           csr->denied   ? "denied"
                           : csr->failed ? "failed"
                                         : "approved");
        else if ((r = join_csr_check_shape(csr, &node, &why)) == -EINVAL)
                r = decide(&d, JOIN_VERDICT_REFUSE, "%s", why);
        else if (r >= 0 && !(d.node = strdup(node)))
                r = -ENOMEM;
        else if (r >= 0)
                r = decide_request(csr, cl, node, &d);
        if (r < 0)
                return r;
        /* an ignored or malformed one still says its node when its subject does */
        const char *cn_node = csr->request ? join_node_of_cn(csr->request->cn) : NULL;
        if (!d.node && cn_node && kube_name_valid(KUBE_NAME_DNS_SUBDOMAIN, cn_node) &&
            !(d.node = strdup(cn_node)))
                return -ENOMEM;
        if (d.bind == JOIN_BIND_NONE) { /* the machine is the bind's: none without one */
                free(d.machine);
                d.machine = NULL;
        }
        *ret = d;
        d = (JoinDecision){};
        return 0;
}

int join_bindings_to_adopt(const JoinCluster *cl, size_t **ret, size_t **ret_nodes, size_t *ret_n) {
        _cleanup_free_ size_t *l = new0(size_t, cl->n_bindings), *nodes = new0(size_t, cl->n_bindings);
        size_t n = 0;
        if (!l || !nodes)
                return -ENOMEM;
        for (size_t i = 0; i < cl->n_bindings; i++) {
                const JoinBinding *b = &cl->bindings[i];
                const JoinNode *node = join_cluster_node(cl, b->node);
                if (b->invalid || !node || isempty(node->uid) || streq_ptr(b->node_uid, node->uid))
                        continue;
                l[n] = i;
                nodes[n++] = (size_t)(node - cl->nodes);
        }
        *ret = TAKE_PTR(l);
        *ret_nodes = TAKE_PTR(nodes);
        *ret_n = n;
        return 0;
}
