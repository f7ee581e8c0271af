/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The node-name bindings (docs/workers.md, "One name, one machine"): a node name belongs to the machine
 * that first joined with it; another machine asking for a certificate under that name is refused until
 * the name's Node is deleted.
 *
 * A binding is one ConfigMap per name, kube-system/protokube-node-<name>, labelled
 * protokube.io/node-binding=true, data {node, machine, csr, since}. It lives in the API, beside the Node
 * whose deletion releases it, because the API gives the three operations the rule needs, atomically
 * across masters: a create that fails when the name exists (the first machine wins, the second gets
 * 409 AlreadyExists), a replace at a resourceVersion (a released name taken over by exactly one machine:
 * the others get 409 Conflict), and an owner: once the Node has registered, the binding names it in its
 * ownerReferences (by uid), so the garbage collector deletes the binding with the Node. The state store
 * offers create-if-absent only (no compare-and-set, no delete-if-unchanged, nothing tied to the Node).
 *
 * A machine is identified, in this order, by the cloud's id of the instance whose node name it is (on
 * cloud: aws, the instance id), else by the public key of its first request ("key:sha256:<hex>": a kubelet
 * keeps its bootstrap key across restarts until it has its certificate, so a retried bootstrap is known as
 * the same machine). */

#include <jansson.h>
#include <stddef.h>

#include "basic/time-util.h"
#include "kube/kube-client.h"

#define JOIN_BINDING_NAMESPACE "kube-system"
#define JOIN_BINDING_PREFIX    "protokube-node-"
#define JOIN_BINDING_LABEL     "protokube.io/node-binding"
#define JOIN_MACHINE_MAX       128 /* characters of a machine's id */

typedef struct JoinBinding {
        char *node;     /* the node name */
        char *machine;  /* the machine it is bound to */
        char *csr;      /* the request approved when it was bound */
        usec_t since;   /* when, CLOCK_REALTIME */
        char *node_uid; /* the uid of the Node that registered under the name (its owner), or NULL */
        char *uid, *resource_version; /* the ConfigMap's */
        /* join_binding_list(): why the ConfigMap of node does not read (the rest unset but node, when its
         * name gives it); the approver then refuses the name with this reason */
        char *invalid;
} JoinBinding;

void join_binding_done(JoinBinding *b);
void join_bindings_free(JoinBinding *l, size_t n);

/* "protokube-node-<node>"; NULL when out of memory. */
char *join_binding_name(const char *node);

/* The ConfigMap of b: metadata (name, namespace, labels; resourceVersion when b has one; the owner Node
 * when b->node_uid is set) and data. Caller decrefs. */
int join_binding_to_json(const JoinBinding *b, json_t **ret);
/* A binding's ConfigMap as the API returns it. -EINVAL with a message naming it when its data does not
 * hold a node (the name's), a machine and an RFC 3339 since. */
int join_binding_from_json(const json_t *cm, JoinBinding *ret, char **ret_error);

/* Through the API. Every binding (by label); one that does not read is listed with .invalid set: a name
 * whose binding cannot be read must not be taken. Caller frees with join_bindings_free(). */
int join_binding_list(KubeClient *c, usec_t deadline, JoinBinding **ret, size_t *ret_n, char **ret_error);
/* Binds node to machine: -EEXIST when the name is bound already (read again and decide again). */
int join_binding_create(KubeClient *c, const char *node, const char *machine, const char *csr, usec_t now,
                        usec_t deadline, char **ret_error);
/* Rebinds a released name (old as read): PK_ECONFLICT when it changed since. */
int join_binding_replace(KubeClient *c, const JoinBinding *old, const char *machine, const char *csr,
                         usec_t now, usec_t deadline, char **ret_error);
/* Makes the Node (node_uid) the binding's owner: PK_ECONFLICT when it changed since. */
int join_binding_adopt(KubeClient *c, const JoinBinding *b, const char *node_uid, usec_t deadline,
                       char **ret_error);
