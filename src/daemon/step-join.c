/* SPDX-License-Identifier: Apache-2.0 */
/* The masters' approver and signer of kubelet CSRs (docs/workers.md): one round of join/join-round.h per
 * pass, through this master's own apiserver (protokube's kubeconfig; the API's name at this master's
 * internal address, as the API names step asks it), with the state store's cluster CA; and, every pass,
 * what a worker's bootstrap needs of the API: the bootstrap RBAC, the cluster-info ConfigMap anyone may
 * read, expired tokens deleted. While the apiserver does not answer, the step waits (and says so once);
 * whatever fails here is reported in its own stage and the pass goes on: volumes, DNS and etcd never wait
 * for it. The CA's private key is read only by an apply that signs, and freed as soon as it has. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "daemon/pass-types.h"
#include "daemon/step-join.h"
#include "join/join-clusterinfo.h"
#include "join/join-rbac.h"
#include "join/join-token.h"
#include "model/cluster-view.h"
#include "model/conventions.h"
#include "pki/keystore.h"
#include "shared/crypto.h"
#include "shared/openssl-util.h"

/* /readyz of this master's apiserver: one that has bound its port and does not serve yet never answers */
#define JOIN_PROBE_TIMEOUT (1 * USEC_PER_SEC)
/* each later request of the round (a round makes one per CSR and binding) */
#define JOIN_CALL_TIMEOUT (10 * USEC_PER_SEC)

/* The keystore's cluster CA certificate as the pass observed it (the certificates' step), or NULL. */
static X509 *observed_ca(const PassObservation *o) {
        const KeystoreEntry *e = keystore_find(o->certs.keystore, KEYSTORE_CLUSTER_CA);
        return e ? e->cert : NULL;
}

static JoinSettings pass_join_settings(const Pass *p, const PassObservation *o) {
        return (JoinSettings){ .ca = observed_ca(o),
                               .lifetime = spec_pki_kubelet_lifetime(&p->spec->pki),
                               .machines_known = o->join_machines_known,
                               .machines = o->join_machines,
                               .n_machines = o->n_machines };
}

/* The cloud's machines of the cluster (aws): a name must be one's. A cloud that lists none (local) leaves
 * the rule out; one that cannot be read now stops the round (nothing is approved on a guess). */
static int observe_machines(PassContext *ctx) {
        PassObservation *o = ctx->obs;
        _cleanup_free_ char *err = NULL;
        if (!ctx->pass->provider)
                return 0;
        int r = volume_provider_list_machines(ctx->pass->provider, ctx->pass->spec->name, &o->cloud_machines,
                                              &o->n_machines, &err);
        if (r == -EOPNOTSUPP || r == -ENOMEM)
                return r == -ENOMEM ? r : 0;
        if (r < 0) {
                o->join_status = r;
                o->join_message =
                    strprintf("cannot list the cluster's machines (a joining node's name must be "
                              "one's): %s",
                              strna(err));
                return o->join_message ? 0 : -ENOMEM;
        }
        o->join_machines = new0(JoinMachine, o->n_machines + 1);
        if (!o->join_machines)
                return -ENOMEM;
        for (size_t i = 0; i < o->n_machines; i++)
                o->join_machines[i] = (JoinMachine){ .id = o->cloud_machines[i].id,
                                                     .node_name = o->cloud_machines[i].node_name };
        o->join_machines_known = true;
        return 0;
}

/* Whether the API names step asked this master's apiserver already in this pass (one probe per pass): 1
 * it answered, -EHOSTDOWN it did not (*ret_why), 0 it was not asked. */
static int asked_already(const PassObservation *o, const char *self, const char **ret_why) {
        for (size_t k = 0; self && o->api.probed && o->api.probed[k]; k++) {
                if (!streq(o->api.probed[k], self))
                        continue;
                if (strv_contains(o->api.ready, self))
                        return 1;
                *ret_why = o->api_why ? o->api_why[k] : NULL;
                return -EHOSTDOWN;
        }
        return 0;
}

static int observe_round(PassContext *ctx, const char *kubeconfig) {
        PassObservation *o = ctx->obs;
        const ClusterSpec *spec = ctx->pass->spec;
        _cleanup_(kube_client_freep) KubeClient *c = NULL;
        _cleanup_free_ char *err = NULL;
        _cleanup_(cluster_view_freep) ClusterView *view = NULL;
        const char *self = o->in.node ? o->in.node->name : NULL;
        int r = o->volumes_error >= 0 ? volumes_view(&o->in, NULL, &view) : o->volumes_error;
        if (r == -ENOMEM)
                return r;
        /* As the API names step: a master that holds no etcd main volume yet (it claims one in this pass)
         * is not asked, its apiserver cannot serve before its etcd runs. */
        const MasterNode *me = r >= 0 && self ? cluster_view_find_master(view, self) : NULL;
        const char *address = me && strv_length(me->internal_ips) > 0 ? me->internal_ips[0] : NULL;
        if (!address) {
                o->join_status = PK_EWAITING;
                o->join_message =
                    strdup(me ? "this master has no internal address yet"
                              : "this master holds no etcd main volume yet: its apiserver cannot "
                                "serve before its etcd runs");
                return o->join_message ? 0 : -ENOMEM;
        }
        r = pass_open_api_at(spec, kubeconfig, address, JOIN_CALL_TIMEOUT, &c, &err);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                o->join_status = r;
                o->join_message = strprintf("protokube's kubeconfig '%s': %s", kubeconfig, strna(err));
                return o->join_message ? 0 : -ENOMEM;
        }
        const char *why = NULL;
        r = asked_already(o, o->in.node ? o->in.node->name : NULL, &why);
        if (r == 0) {
                r = kube_probe(c, "readyz", now(CLOCK_MONOTONIC) + JOIN_PROBE_TIMEOUT, &err);
                /* 401/403: it answers HTTP; whether its checks pass, this identity may not read */
                r = r == -EACCES || r == -EKEYREJECTED ? 1 : r;
                why = err;
        }
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                o->join_status = PK_EWAITING;
                o->join_message = strprintf("this master's apiserver (%s at %s) does not answer: %s",
                                            kube_client_server(c), address, strna(why));
                return o->join_message ? 0 : -ENOMEM;
        }
        free(err);
        err = NULL;
        r = join_observe(c, 0, &o->join, &err);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                o->join_status = r;
                o->join_message = strprintf("the CSRs could not be read: %s", strna(err));
                return o->join_message ? 0 : -ENOMEM;
        }
        kube_client_free(ctx->join_api); /* a pass observing again (a lost claim) reads the round again */
        ctx->join_api = TAKE_PTR(c);
        return observe_machines(ctx);
}

/* Only a master whose certificates are managed here has a client of its own: elsewhere nothing is asked. */
static int join_step_observe(PassContext *ctx) {
        _cleanup_free_ char *kubeconfig = pass_api_kubeconfig(ctx->pass->spec);
        if (!kubeconfig)
                return -ENOMEM;
        if (access(kubeconfig, R_OK) < 0)
                return 0;
        ctx->obs->join_enabled = true;
        return observe_round(ctx, kubeconfig);
}

static int join_step_plan(const Pass *p, const PassObservation *o, PassPlan *plan) {
        _cleanup_free_ char *host = NULL;
        if (!o->join_enabled || o->join_status != 0)
                return 0;
        JoinSettings s = pass_join_settings(p, o);
        int r = join_plan(&o->join, &s, &plan->join);
        if (r < 0)
                return r;
        plan->join_planned = true;
        plan->join_has_ca = s.ca != NULL;
        r = api_dns_name(p->spec->dns.internal_suffix, &host);
        if (r == -ENOMEM)
                return r;
        if (r >= 0 && !(plan->join_server = strprintf("https://%s:%u", host, pass_apiserver_port(p->spec))))
                return -ENOMEM;
        return 0;
}

/* Said once when the step starts waiting for the apiserver, and once when it answers again. */
static void note_waiting(Pass *p, const PassObservation *o) {
        bool waiting = o->join_status == PK_EWAITING;
        if (waiting && !p->join_seen.waiting)
                log_info("Join: waiting for the API: %s.", strna(o->join_message));
        else if (!waiting && p->join_seen.waiting)
                log_info("Join: the API answers: approving and signing kubelet CSRs.");
        p->join_seen.waiting = waiting;
}

static void report(PassContext *ctx, int r, const char *what, const char *err) {
        _cleanup_free_ char *why = strprintf("join: %s: %s", what, err ?: pk_strerror(r));
        log_warning_errno(r, "Join: %s: %s", what, err ?: pk_strerror(r));
        pass_report_error(ctx->rep, PASS_STAGE_JOIN, r, why);
}

/* The bootstrap RBAC, cluster-info and its RBAC, the expired tokens: idempotent, every pass. */
static int apply_bootstrap_objects(PassContext *ctx, KubeClient *c) {
        const PassPlan *plan = ctx->plan;
        _cleanup_free_ char *err = NULL;
        _cleanup_strv_free_ char **deleted = NULL;
        int r = join_rbac_apply(c, 0, &err);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                report(ctx, r, "the bootstrap RBAC", err);
        free(err);
        err = NULL;
        X509 *ca = observed_ca(ctx->obs);
        if (ca && plan->join_server) {
                r = join_cluster_info_apply(c, ca, plan->join_server, 0, &err);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        report(ctx, r, "publishing " JOIN_CLUSTER_INFO_NAMESPACE "/" JOIN_CLUSTER_INFO_NAME,
                               err);
                free(err);
                err = NULL;
        }
        r = join_token_cleanup_expired(c, now(CLOCK_REALTIME), 0, &deleted, &err);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                report(ctx, r, "deleting expired bootstrap tokens", err);
        STRV_FOREACH (id, deleted)
                log_info("Join: deleted the expired bootstrap token %s.", *id);
        return 0;
}

/* A hash of (CSR, reason), for the refusals already said. */
static int refusal_hash(const JoinOutcome *e, uint64_t *ret) {
        _cleanup_(crypto_sha256_freep) CryptoSha256 *h = NULL;
        uint8_t d[32];
        const char *csr = strempty(e->csr), *msg = strempty(e->message);
        int r = crypto_sha256_new(&h);
        if (r >= 0)
                r = crypto_sha256_update(h, csr, strlen(csr) + 1);
        if (r >= 0)
                r = crypto_sha256_update(h, msg, strlen(msg));
        if (r >= 0)
                r = crypto_sha256_final(h, d);
        if (r < 0)
                return r;
        memcpy(ret, d, sizeof(*ret));
        return 0;
}

static bool seen_before(const PassJoinSeen *s, uint64_t h) {
        for (unsigned i = 0; i < s->n_refusals; i++)
                if (s->refusals[i] == h)
                        return true;
        return false;
}

/* A line per outcome (a refusal only when its reason for that CSR is new) and its count for /metrics; the
 * refusals said become the pass's memory. */
static int say_outcomes(PassContext *ctx, const JoinReport *rep) {
        PassJoinSeen *seen = &ctx->pass->join_seen;
        PassJoinSeen now_seen = { .waiting = seen->waiting };
        for (size_t i = 0; i < rep->n; i++) {
                const JoinOutcome *e = &rep->outcomes[i];
                const char *kind = join_outcome_kind_to_string(e->kind);
                uint64_t h = 0;
                if (e->kind == JOIN_OUTCOME_REFUSED) {
                        int r = refusal_hash(e, &h);
                        if (r < 0)
                                return r;
                        bool known = seen_before(seen, h);
                        if (now_seen.n_refusals < PASS_JOIN_REFUSALS_MAX)
                                now_seen.refusals[now_seen.n_refusals++] = h;
                        if (known)
                                continue;
                }
                _cleanup_free_ char *line =
                    strprintf("%s%s (node %s): %s: %s", e->csr ? "CSR " : "binding", strempty(e->csr),
                              strna(e->node), kind, strna(e->message));
                if (!line)
                        return -ENOMEM;
                if (e->kind == JOIN_OUTCOME_FAILED) {
                        log_warning("Join: %s", line);
                        _cleanup_free_ char *why = strjoin("join: ", line);
                        pass_report_error(ctx->rep, PASS_STAGE_JOIN, -EIO, why ?: line);
                } else
                        log_info("Join: %s", line);
                ctx->rep->join_outcomes[e->kind]++;
                if (e->kind == JOIN_OUTCOME_APPROVED || e->kind == JOIN_OUTCOME_SIGNED ||
                    e->kind == JOIN_OUTCOME_ADOPTED)
                        ctx->rep->actions_applied++;
        }
        *seen = now_seen;
        return 0;
}

/* Whether the plan signs anything: only then is the CA's key read. */
static bool plan_signs(const JoinPlan *p) {
        for (size_t i = 0; i < p->n_csrs; i++)
                if (p->csrs[i].sign)
                        return true;
        return false;
}

/* The round: bind, approve, sign (with the key read now and freed right after), adopt. */
static int apply_round(PassContext *ctx, KubeClient *c) {
        const PassPlan *plan = ctx->plan;
        _cleanup_(store_freep) Store *owned = NULL;
        _cleanup_(X509_freep) X509 *ca = NULL;
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *key = NULL; /* OpenSSL clears its numbers as it frees them */
        _cleanup_(join_report_done) JoinReport rep = {};
        _cleanup_free_ char *err = NULL;
        JoinSettings s = pass_join_settings(ctx->pass, ctx->obs);
        if (plan_signs(&plan->join)) {
                Store *store = pass_store(ctx, &owned, &err);
                int r = store ? keystore_read_cluster_ca(store, &ca, &key, &err) : -EIO;
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        report(ctx, r, "the cluster CA (nothing approved or signed this pass)", err);
                        return 0;
                }
                s.ca = ca;
                s.ca_key = key;
        }
        int r = join_apply(c, &ctx->obs->join, &plan->join, &s, now(CLOCK_REALTIME), 0, &rep);
        EVP_PKEY_free(TAKE_PTR(key));
        if (r == -ENOMEM)
                return r;
        if (r < 0) /* a stop request: the rest is the next round's */
                log_info("Join: the round was interrupted: %s.", pk_strerror(r));
        return say_outcomes(ctx, &rep);
}

static int join_step_apply(PassContext *ctx, PassWave wave) {
        const PassObservation *o = ctx->obs;
        if (!o->join_enabled)
                return 0;
        note_waiting(ctx->pass, o);
        if (o->join_status == PK_EWAITING)
                return 0;
        if (o->join_status < 0) {
                report(ctx, o->join_status, "observing the round", o->join_message);
                return 0;
        }
        if (!ctx->plan->join_planned || !ctx->join_api)
                return 0;
        int r = apply_bootstrap_objects(ctx, ctx->join_api);
        if (r >= 0)
                r = apply_round(ctx, ctx->join_api);
        return r == -ENOMEM ? r : 0;
}

static int join_step_print(const Pass *pass, const PassObservation *o, const PassPlan *plan, FILE *out) {
        if (!o->join_enabled)
                return 0;
        if (o->join_status == PK_EWAITING)
                fprintf(out, "join: waiting: %s\n", strna(o->join_message));
        else if (o->join_status < 0)
                fprintf(out, "join: not observed: %s\n", strna(o->join_message));
        if (!plan->join_planned)
                return 0;
        fprintf(out, "join: apply RBAC " JOIN_BOOTSTRAP_BINDING " " JOIN_NODE_PROXIER_BINDING "\n");
        if (plan->join_has_ca && plan->join_server)
                fprintf(out,
                        "join: publish " JOIN_CLUSTER_INFO_NAMESPACE "/" JOIN_CLUSTER_INFO_NAME
                        " (server %s) readable by " JOIN_CLUSTER_INFO_USER "\n",
                        plan->join_server);
        else
                fprintf(out, "join: " JOIN_CLUSTER_INFO_NAMESPACE "/" JOIN_CLUSTER_INFO_NAME
                             " not published: the keystore has no cluster CA yet (nothing is signed)\n");
        join_plan_print(&o->join, &plan->join, "join: ", out);
        return 0;
}

const PassStep pass_step_join = {
        .name = "join",
        .stage = PASS_STAGE_JOIN,
        .roles = 1U << NODE_ROLE_MASTER,
        .observe = join_step_observe,
        .plan = join_step_plan,
        .apply = join_step_apply,
        .print = join_step_print,
};
