/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Where a worker's join stands, as the worker itself can see it (docs/workers.md, "join plan"): its
 * kubelet's client CSR among those its bootstrap token may list (system:node-bootstrapper reads CSRs), and
 * once the kubelet has its certificate, its Node's Ready condition. What the API says is shown as one
 * bounded line; nothing of it becomes a path. Library code: never logs. */

#include <jansson.h>

#include "basic/macro.h"

typedef enum JoinCsrState {
        JOIN_CSR_STATE_NONE,     /* no client CSR of this node yet: the kubelet has not asked */
        JOIN_CSR_STATE_PENDING,  /* asked, neither approved nor denied */
        JOIN_CSR_STATE_APPROVED, /* approved, no certificate yet: a master signs it */
        JOIN_CSR_STATE_ISSUED,   /* signed: the kubelet takes its certificate */
        JOIN_CSR_STATE_DENIED,
        JOIN_CSR_STATE_FAILED,
        _JOIN_CSR_STATE_MAX,
        _JOIN_CSR_STATE_INVALID = -EINVAL,
} JoinCsrState;

const char *join_csr_state_to_string(JoinCsrState s);

typedef struct JoinCsrProgress {
        JoinCsrState state;
        char *name; /* the CSR's name (shown as one line); NULL with JOIN_CSR_STATE_NONE */
        /* a Denied or Failed condition's "reason: message"; a pending one's refusal by the masters
         * (JOIN_CSR_REFUSAL_ANNOTATION); one bounded line; else NULL */
        char *words;
} JoinCsrProgress;

void join_csr_progress_done(JoinCsrProgress *p);

/* The newest client CSR (signer kube-apiserver-client-kubelet) whose request is for CN=system:node:<node>
 * and that this node asked: with the bootstrap token token_id (user system:bootstrap:<token_id>) or as the
 * node itself. Others' CSRs, and requests that do not parse, are not this node's. -EINVAL with a message
 * when list is not a CSR list. */
int join_csr_progress(const json_t *list, const char *node, const char *token_id, JoinCsrProgress *ret,
                      char **ret_error);

/* A Node's Ready condition: 1 Ready, 0 not (and *ret_words, "reason: message" of the condition as one
 * bounded line, or "no Ready condition yet"). Caller frees *ret_words. */
int join_node_ready(const json_t *node, char **ret_words);
