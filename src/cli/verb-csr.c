/* SPDX-License-Identifier: Apache-2.0 */
/* protokube csr [approve]: the masters' approver and signer of kubelet CSRs (docs/workers.md) by hand.
 * `csr` prints each open kubelet CSR with the decision a round would take and why (nothing changes: the
 * answer to "why is my worker's request pending?"); `csr approve` runs one round, the same code as the
 * daemon's step: bind, approve, sign with the cluster CA from the state store, and prints what it did. */
#include <stdio.h>
#include <stdlib.h>

#include "basic/errors.h"
#include "basic/log.h"
#include "basic/parse-util.h"
#include "basic/string-util.h"
#include "cli/cli.h"
#include "join/join-round.h"
#include "join/join-sign.h"
#include "pki/keystore.h"
#include "spec/spec.h"
#include "store/store.h"

static usec_t arg_lifetime;

static int parse_lifetime(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        uint64_t u;
        if (parse_duration_usec(value, &u) < 0 || u < JOIN_LIFETIME_MIN)
                return cli_usage_error("csr approve",
                                       "invalid %s '%s' (a duration of a minute or more: 10m, 24h)", source,
                                       value),
                       -EINVAL;
        arg_lifetime = u;
        return 0;
}

const CliOption verb_csr_options[] = {
        CLI_KUBE_CLIENT_OPTIONS,
        {},
};

const CliOption verb_csr_approve_options[] = {
        CLI_KUBE_CLIENT_OPTIONS,
        { .name = "lifetime",
          .arg_name = "DURATION",
          .help = "of the certificates signed (default the spec's pki.kubeletCertificateLifetime)",
          .parse = parse_lifetime },
        {},
};

/* What a round needs of the spec, and (to sign) the cluster CA from its state store. */
typedef struct CsrContext {
        ClusterSpec *spec;
        KubeClient *api;
        JoinSettings settings; /* its ca and ca_key are owned here */
} CsrContext;

static void csr_context_done(CsrContext *c) {
        X509_free(c->settings.ca);
        EVP_PKEY_free(c->settings.ca_key); /* OpenSSL clears the private key's numbers */
        kube_client_free(c->api);
        cluster_spec_free(c->spec);
}

static int read_cluster_ca(CsrContext *c) {
        _cleanup_(store_freep) Store *store = NULL;
        _cleanup_free_ char *err = NULL;
        const ClusterSpec *s = c->spec;
        if (isempty(s->state_store))
                return log_error_errno(-EINVAL, "The spec names no stateStore: no cluster CA to sign with.");
        int r = store_open(s->state_store, &store, &err);
        if (r >= 0)
                r = keystore_read_cluster_ca(store, &c->settings.ca, &c->settings.ca_key, &err);
        if (r < 0)
                return log_error_errno(r, "%s", err ?: pk_strerror(r));
        return 0;
}

static int csr_context_open(CliContext *ctx, bool sign, CsrContext *ret) {
        int r = cli_load_spec(ctx, &ret->spec);
        if (r < 0)
                return r;
        /* the instances of the cluster and their node names are the daemon's to gather on a cloud */
        if (ret->spec->cloud.value != CLOUD_LOCAL)
                return log_error_errno(
                    -EOPNOTSUPP,
                    "On cloud %s a node name must be an instance of the cluster: the daemon's "
                    "approver knows them, this command does not yet.",
                    cloud_provider_to_string(ret->spec->cloud.value));
        ret->settings.lifetime = arg_lifetime ?: spec_pki_kubelet_lifetime(&ret->spec->pki);
        if (sign && (r = read_cluster_ca(ret)) < 0)
                return r;
        return cli_kube_open(&ret->api);
}

static int observe_and_plan(CsrContext *c, JoinObservation *o, JoinPlan *p) {
        _cleanup_free_ char *err = NULL;
        /* 0: each call its own deadline, the client's --timeout (a round makes many) */
        int r = join_observe(c->api, 0, o, &err);
        if (r < 0)
                return log_error_errno(r, "Failed to read the CSRs: %s", strnull(err));
        r = join_plan(o, &c->settings, p);
        if (r < 0)
                return log_oom();
        return 0;
}

int verb_csr(CliContext *ctx, char **args) {
        _cleanup_(csr_context_done) CsrContext c = {};
        _cleanup_(join_observation_done) JoinObservation o = {};
        _cleanup_(join_plan_done) JoinPlan p = {};
        if (csr_context_open(ctx, false, &c) < 0 || observe_and_plan(&c, &o, &p) < 0)
                return EXIT_ERROR;
        join_plan_print(&o, &p, "", stdout);
        return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_ERROR;
}

int verb_csr_approve(CliContext *ctx, char **args) {
        _cleanup_(csr_context_done) CsrContext c = {};
        _cleanup_(join_observation_done) JoinObservation o = {};
        _cleanup_(join_plan_done) JoinPlan p = {};
        _cleanup_(join_report_done) JoinReport rep = {};
        bool failed = false;
        if (csr_context_open(ctx, true, &c) < 0 || observe_and_plan(&c, &o, &p) < 0)
                return EXIT_ERROR;
        int r = join_apply(c.api, &o, &p, &c.settings, now(CLOCK_REALTIME), 0, &rep);
        if (r < 0)
                return log_error_errno(r, "The round was not finished: %m"), EXIT_ERROR;
        for (size_t i = 0; i < rep.n; i++) {
                const JoinOutcome *e = &rep.outcomes[i];
                printf("%s  node %s  %s: %s\n", e->csr ?: "-", strna(e->node),
                       join_outcome_kind_to_string(e->kind), e->message);
                failed = failed || e->kind == JOIN_OUTCOME_FAILED;
        }
        if (rep.n == 0)
                printf("no open kubelet CSR\n");
        return fflush(stdout) == 0 && !failed ? EXIT_SUCCESS : EXIT_ERROR;
}
