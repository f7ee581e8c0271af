/* SPDX-License-Identifier: Apache-2.0 */
/* A worker's join as the API shows it (docs/workers.md, "Where a join stands"): before its kubelet has a
 * certificate, its client CSR, listed with the bootstrap token (system:node-bootstrapper may list CSRs);
 * after, its Node's Ready condition, read with the kubelet's own identity. It writes nothing: it says
 * which stage blocks (a refused token, a pending or denied CSR, a Node not Ready), and a worker is
 * converged once its Node is Ready. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "basic/trace.h"
#include "components/kubelet.h"
#include "daemon/pass-types.h"
#include "daemon/progress.h"
#include "daemon/step-node-join.h"
#include "model/conventions.h"
#include "shared/http.h"
#include "shared/json-util.h"

#define NODE_JOIN_TIMEOUT (10ULL * USEC_PER_SEC)

static int observe_status(PassNodeJoinObserved *n, int status, char *message) {
        n->status = status;
        n->message = message;
        return message ? 0 : -ENOMEM;
}

/* The API's name at the master's address, authenticated by the pinned CA (on disk; before the first pass
 * wrote it, the one the pin stage took from a master, in memory), as the bootstrap token's user: so a new
 * machine's `join plan` tells a wrong token before anything is written. */
static int open_as_token(const Pass *p, const PassKubeletObserved *k, const char *address, KubeClient **ret,
                         char **ret_error) {
        _cleanup_free_ char *host = NULL, *server = NULL, *to = NULL, *ca = pass_kubelet_file(p, "ca.crt");
        char token[JOIN_TOKEN_TEXT_MAX];
        int r = api_dns_name(p->spec->dns.internal_suffix, &host);
        if (r < 0)
                return r;
        unsigned port = (unsigned)p->certs.apiserver_port;
        if (!ca || !(server = strprintf("https://%s:%u", host, port)) ||
            !(to = http_connect_to_address(host, port, address)))
                return -ENOMEM;
        r = kube_client_new(&(KubeClientConfig){ .server = server,
                                                 .ca_file = k->ca_pinned ? ca : NULL,
                                                 .ca_pem = k->ca_pinned ? NULL : k->ca_found,
                                                 .connect_to = to,
                                                 .bearer_token = join_token_format(&k->token, token) },
                            ret, ret_error);
        explicit_bzero(token, sizeof(token));
        if (r >= 0)
                kube_client_set_retry(
                    *ret, &(KubeRetryPolicy){ .max_tries = 1, .request_timeout = NODE_JOIN_TIMEOUT });
        return r;
}

/* Before the kubelet has its certificate: the CSRs, as the bootstrap token may read them. */
static int observe_csr(PassContext *ctx, const char *address) {
        const Pass *p = ctx->pass;
        const PassKubeletObserved *k = &ctx->obs->kubelet;
        PassNodeJoinObserved *n = &ctx->obs->node_join;
        _cleanup_(kube_client_freep) KubeClient *c = NULL;
        _cleanup_(json_decrefp) json_t *list = NULL;
        _cleanup_free_ char *error = NULL;
        if (!(k->ca_pinned || k->ca_found) || !k->has_token)
                return observe_status(n, PK_EWAITING,
                                      strdup(k->has_token ? "no CA with the pin yet"
                                                          : "no bootstrap token to ask the API with"));
        int r = open_as_token(p, k, address, &c, &error);
        if (r >= 0)
                r = kube_list(c, "certificates.k8s.io/v1", "CertificateSigningRequest", NULL, NULL, 0, &list,
                              &error);
        if (r == -ENOMEM)
                return r;
        if (r == -EKEYREJECTED) {
                n->token_refused = n->observed = true;
                return 0;
        }
        if (r == -EACCES) {
                n->csrs_denied = n->observed = true;
                return 0;
        }
        if (r < 0)
                return observe_status(n, PK_EWAITING, strprintf("the API did not answer: %s", strna(error)));
        r = join_csr_progress(list, p->node.node_name, k->token.id, &n->csr, &error);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return observe_status(n, r, strprintf("cannot read the CSRs: %s", strna(error)));
        n->observed = true;
        return 0;
}

/* Once the kubelet has its certificate: its Node, with its identity. */
static int observe_node(PassContext *ctx, const char *kubeconfig, const char *address) {
        const Pass *p = ctx->pass;
        PassNodeJoinObserved *n = &ctx->obs->node_join;
        _cleanup_(kube_client_freep) KubeClient *c = NULL;
        _cleanup_(json_decrefp) json_t *node = NULL;
        _cleanup_free_ char *error = NULL;
        int r = pass_open_api_at(p->spec, kubeconfig, address, NODE_JOIN_TIMEOUT, &c, &error);
        if (r >= 0)
                r = kube_get(c, "v1", "Node", NULL, p->node.node_name, 0, &node, &error);
        if (r == -ENOMEM)
                return r;
        if (r == -ENOENT) {
                n->ready = -1;
                n->observed = true;
                return 0;
        }
        if (r < 0)
                return observe_status(n, PK_EWAITING, strprintf("the API did not answer: %s", strna(error)));
        r = join_node_ready(node, &n->ready_words);
        if (r < 0)
                return r;
        n->ready = r;
        n->observed = n->node_read = true;
        /* for the kubelet handoff step: what the Node says of its kubelet */
        const char *holder = json_get_string(node, "metadata", "annotations", KUBELET_HOLDER_ANNOTATION);
        if (holder && !(n->kubelet_holder = strdup(holder)))
                return -ENOMEM;
        return 0;
}

static int node_join_observe(PassContext *ctx) {
        const Pass *p = ctx->pass;
        PassNodeJoinObserved *n = &ctx->obs->node_join;
        _cleanup_free_ char *kubeconfig = pass_kubelet_file(p, PASS_KUBELET_KUBECONFIG), *address = NULL;
        if (!kubeconfig)
                return -ENOMEM;
        trace_mark("node: its CSR or its Node");
        n->joined = access(kubeconfig, F_OK) == 0;
        if (!p->node.node_name)
                return observe_status(n, -EINVAL, strdup("no --node-name: the Node cannot be told"));
        int r = pass_view_master_address(ctx->obs, &address);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return observe_status(n, PK_EWAITING, strdup("no master with an address in the view yet"));
        return n->joined ? observe_node(ctx, kubeconfig, address) : observe_csr(ctx, address);
}

static int plan_status(PassNodeJoinPlan *k, PassJoinStage stage, int status, char *note) {
        k->stage = stage;
        k->status = status;
        k->note = note;
        return note ? 0 : -ENOMEM;
}

/* The CSR's state as a stage: waiting while it is on its way, refused when denied or failed, or when the
 * masters left it pending with their reason on it (the name is bound to another machine...: it needs an
 * operator, though a later round may still approve it). */
static int plan_csr(const JoinCsrProgress *c, PassNodeJoinPlan *k) {
        switch (c->state) {
        case JOIN_CSR_STATE_NONE:
                return plan_status(k, PASS_JOIN_CSR, PK_EWAITING,
                                   strdup("the kubelet has asked for no certificate yet (is it running with "
                                          "kubelet.env's flags?)"));
        case JOIN_CSR_STATE_PENDING:
                if (c->words)
                        return plan_status(k, PASS_JOIN_CSR, -EACCES,
                                           strprintf("CSR %s is refused by the masters (left pending): %s",
                                                     c->name, c->words));
                return plan_status(k, PASS_JOIN_CSR, PK_EWAITING,
                                   strprintf("CSR %s is pending: no master approved it yet ('protokube csr' "
                                             "on a master says why)",
                                             c->name));
        case JOIN_CSR_STATE_APPROVED:
                return plan_status(
                    k, PASS_JOIN_CSR, PK_EWAITING,
                    strprintf("CSR %s is approved: waiting for a master to sign it", c->name));
        case JOIN_CSR_STATE_ISSUED:
                return plan_status(
                    k, PASS_JOIN_CSR, PK_EWAITING,
                    strprintf("CSR %s is issued: waiting for the kubelet to take it", c->name));
        case JOIN_CSR_STATE_DENIED:
                return plan_status(k, PASS_JOIN_CSR, -EACCES,
                                   strprintf("CSR %s was denied: %s", c->name, strna(c->words)));
        default:
                return plan_status(k, PASS_JOIN_CSR, -EIO,
                                   strprintf("CSR %s failed: %s", c->name, strna(c->words)));
        }
}

/* Pure over (node settings, observation). */
static int node_join_plan(const Pass *p, const PassObservation *o, PassPlan *plan) {
        const PassNodeJoinObserved *n = &o->node_join;
        PassNodeJoinPlan *k = &plan->node_join;
        PassJoinStage stage = n->joined ? PASS_JOIN_NODE : PASS_JOIN_CSR;
        if (!n->observed)
                return plan_status(k, stage, n->status ?: -EIO, strdup(strna(n->message)));
        if (n->token_refused)
                return plan_status(
                    k, PASS_JOIN_TOKEN, -EACCES,
                    strdup("the API refuses the bootstrap token (401): it is wrong, expired or "
                           "deleted ('protokube token list' on a master)"));
        if (n->csrs_denied)
                return plan_status(
                    k, PASS_JOIN_CSR, PK_EWAITING,
                    strdup("the bootstrap token may not list CSRs yet (403): the masters' join "
                           "step binds its group"));
        if (!n->joined)
                return plan_csr(&n->csr, k);
        if (n->ready < 0)
                return plan_status(k, PASS_JOIN_NODE, PK_EWAITING,
                                   strprintf("no Node %s yet: the kubelet registers it", p->node.node_name));
        if (n->ready == 0)
                return plan_status(
                    k, PASS_JOIN_NODE, PK_EWAITING,
                    strprintf("Node %s is not Ready: %s", p->node.node_name, strna(n->ready_words)));
        return plan_status(k, PASS_JOIN_NODE, 0, strprintf("Node %s is Ready", p->node.node_name));
}

static int node_join_apply(PassContext *ctx, PassWave wave) {
        const PassNodeJoinPlan *k = &ctx->plan->node_join;
        pass_progress_step("node");
        pass_report_status(ctx, PASS_STAGE_KUBELET, "node", k->status, k->note);
        return 0;
}

static int node_join_print(const Pass *p, const PassObservation *o, const PassPlan *plan, FILE *out) {
        const PassNodeJoinPlan *k = &plan->node_join;
        int r = pass_print_status(out, "node", "refused", k->status, k->note);
        if (r != 0)
                return MIN(r, 0);
        fprintf(out, "node: %s\n", strna(k->note));
        return 0;
}

/* The stages before the one it speaks for were passed (a token the API refused stops at the token). */
static int node_join_stages(const Pass *p, const PassObservation *o, const PassPlan *plan,
                            PassJoinStatus stages[static _PASS_JOIN_STAGE_MAX]) {
        const PassNodeJoinPlan *k = &plan->node_join;
        if (k->stage == PASS_JOIN_NODE &&
            pass_join_status_set(&stages[PASS_JOIN_CSR], 0,
                                 strdup("the kubelet has its client certificate")) < 0)
                return -ENOMEM;
        if (k->stage == PASS_JOIN_CSR && o->node_join.observed &&
            pass_join_status_set(&stages[PASS_JOIN_TOKEN], 0,
                                 strprintf("the API takes bootstrap token %s", o->kubelet.token.id)) < 0)
                return -ENOMEM;
        return pass_join_status_set(&stages[k->stage], k->status, strdup(strna(k->note)));
}

const PassStep pass_step_node_join = {
        .name = "node",
        .stage = PASS_STAGE_KUBELET,
        .roles = 1U << NODE_ROLE_WORKER,
        .observe = node_join_observe,
        .plan = node_join_plan,
        .apply = node_join_apply,
        .print = node_join_print,
        .join = node_join_stages,
};
