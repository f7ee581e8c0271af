/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The approver's decision over one kubelet CSR (docs/workers.md, "Approving"): a pure function of the CSR
 * and what the masters know of the cluster (the name bindings, the Nodes, on a cloud the machines), so
 * every rule and every refusal is unit-tested without an API.
 *
 * kubernetes.io/kube-apiserver-client-kubelet is approved when the request has the shape of a node's
 * client certificate (join_csr_check_shape()), and
 *   - the requester is a bootstrap token (a new node: TLS bootstrap) or the node itself (a renewal);
 *   - on a cloud that knows its machines (aws), the name is one of them;
 *   - the name is not bound to another machine: a bootstrap binds a free name to its machine; a name whose
 *     Node exists but has no binding is not taken by a bootstrap; a bound name goes to another machine only
 *     once its Node, registered since the binding, is deleted (the binding is then replaced).
 * kubernetes.io/kubelet-serving is approved only for the node itself, with the same shape and machine
 * rules, when every SAN (DNS name or IP address) is one of its Node's status.addresses.
 * A refusal leaves the CSR pending (an operator may still approve it by hand: the signer then signs it if
 * it has the shape); its reason is for the log and for `protokube csr`. */

#include <stdbool.h>
#include <stddef.h>

#include "join/join-binding.h"
#include "join/join-csr.h"

typedef struct JoinMachine {
        const char *id;        /* the cloud's (an instance id) */
        const char *node_name; /* the node name it registers as */
} JoinMachine;

typedef struct JoinNode {
        const char *name;
        const char *uid;
        char *const *addresses; /* status.addresses[].address, NULL-terminated, may be NULL */
} JoinNode;

/* What the decision sees of the cluster. */
typedef struct JoinCluster {
        const JoinBinding *bindings;
        size_t n_bindings;
        const JoinNode *nodes;
        size_t n_nodes;
        /* machines_known: the cloud lists its machines (aws), and a name must be one of them */
        bool machines_known;
        const JoinMachine *machines;
        size_t n_machines;
} JoinCluster;

typedef enum JoinVerdict {
        JOIN_VERDICT_IGNORE, /* not protokube's signer, or decided already (approved, denied, failed) */
        JOIN_VERDICT_APPROVE,
        JOIN_VERDICT_REFUSE, /* left pending */
        _JOIN_VERDICT_MAX,
        _JOIN_VERDICT_INVALID = -EINVAL,
} JoinVerdict;

typedef enum JoinBindAction {
        JOIN_BIND_NONE,
        JOIN_BIND_CREATE,  /* bind the free name to .machine before approving */
        JOIN_BIND_REPLACE, /* rebind the released name (.replaced, at its resourceVersion) to .machine */
        _JOIN_BIND_ACTION_MAX,
        _JOIN_BIND_ACTION_INVALID = -EINVAL,
} JoinBindAction;

typedef struct JoinDecision {
        JoinVerdict verdict;
        char *reason; /* always set: why approved, refused or ignored */
        char *node;   /* the node the request is for; NULL when its subject does not say */
        JoinBindAction bind;
        char *machine;               /* for CREATE and REPLACE */
        const JoinBinding *replaced; /* for REPLACE: the released binding (points into the cluster) */
} JoinDecision;

/* "ignore", "approve", "refuse" */
const char *join_verdict_to_string(JoinVerdict v);

/* The decision over csr. Only -ENOMEM fails. */
int join_csr_decide(const JoinCsr *csr, const JoinCluster *cl, JoinDecision *ret);
void join_decision_done(JoinDecision *d);

/* The machine of a request for node: on a cloud that lists its machines the id of the one called node
 * (NULL when none is); else, for a bootstrap, "key:sha256:<hex>" of the request's public key; NULL for a
 * node's own request off such a cloud (its credentials, not a machine id, prove who it is). Caller frees. */
int join_csr_machine(const JoinCsr *csr, const JoinCluster *cl, const char *node, char **ret);

/* The bindings to adopt: each whose name's Node exists with another uid than the one it records (none
 * yet, or a Node registered again). ret[i] indexes cl->bindings, *ret_nodes[i] cl->nodes. Caller frees
 * both. */
int join_bindings_to_adopt(const JoinCluster *cl, size_t **ret, size_t **ret_nodes, size_t *ret_n);

const JoinBinding *join_cluster_binding(const JoinCluster *cl, const char *node);
const JoinNode *join_cluster_node(const JoinCluster *cl, const char *node);
