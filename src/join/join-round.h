/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* One round of the masters' approver and signer over the API (docs/workers.md), in a pass's three parts
 * so that the daemon's step and `protokube csr` run the same code:
 *   observe: the CSRs, the node-name bindings, and the Nodes the round needs (those of the names of the
 *            CSRs to decide or sign, and of bindings not yet owned by their Node), read once;
 *   plan:    pure: each CSR of the kubelet signers that is not finished gets the approver's decision
 *            (join-approve.h) and, once approved, the signer's check; each binding whose Node registered
 *            is to be adopted by it;
 *   apply:   bind, approve, sign, adopt through the API, each write a compare-and-set: of several masters
 *            running rounds at once one wins each write, the others see a lost race and read again next
 *            round.
 * Library code: returns errors and outcomes with their messages, never logs. */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "join/join-approve.h"
#include "join/join-binding.h"
#include "join/join-csr.h"
#include "kube/kube-client.h"

#define JOIN_CSRS_MAX 5000U /* CSRs of one round; more is an error (kube-controller-manager cleans them) */

typedef struct JoinSettings {
        X509 *ca; /* the cluster CA and its key (the keystore's); NULL: approve, sign nothing */
        EVP_PKEY *ca_key;
        usec_t lifetime;     /* of the certificates signed (spec.pki.kubeletCertificateLifetime) */
        bool machines_known; /* the cloud lists the machines (aws): a name must be one of machines */
        const JoinMachine *machines;
        size_t n_machines;
} JoinSettings;

typedef struct JoinObservation {
        json_t *csr_objects; /* the CSRs as listed, an array: each is written back from its object */
        JoinCsr **csrs;      /* parallel to csr_objects; NULL for an object that is no CSR */
        size_t n_csrs;
        JoinBinding *bindings;
        size_t n_bindings;
        JoinNode *nodes; /* owned: names, uids and address vectors */
        size_t n_nodes;
} JoinObservation;

void join_observation_done(JoinObservation *o);

/* deadline, here and in join_apply(): of every call (kube-client.h); 0 gives each call its own, the
 * client's call_timeout, as a round makes one call per CSR and binding. */
int join_observe(KubeClient *c, usec_t deadline, JoinObservation *ret, char **ret_error);

/* The cluster as the decision sees it: the observation's bindings and Nodes, the settings' machines. */
JoinCluster join_observation_cluster(const JoinObservation *o, const JoinSettings *s);

typedef struct JoinCsrPlan {
        size_t csr;            /* index into the observation's csrs */
        JoinDecision decision; /* of a pending one; IGNORE for one approved already */
        bool sign;             /* approved (now or before), signable, and a CA to sign with */
        char *not_signed;      /* approved but refused by the signer: why (its shape) */
} JoinCsrPlan;

typedef struct JoinPlan {
        JoinCsrPlan *csrs; /* the kubelet signers' CSRs not finished (no certificate, not denied/failed) */
        size_t n_csrs;
        size_t *adopt, *adopt_nodes; /* bindings (indexes) to be owned by these Nodes (indexes) */
        size_t n_adopt;
} JoinPlan;

void join_plan_done(JoinPlan *p);

/* Pure. Only -ENOMEM fails. */
int join_plan(const JoinObservation *o, const JoinSettings *s, JoinPlan *ret);

/* The plan as `protokube csr` and `protokube plan` show it, a line per CSR (its decision and why) and per
 * binding to adopt, each after prefix; "no open kubelet CSR" when there is none. */
void join_plan_print(const JoinObservation *o, const JoinPlan *p, const char *prefix, FILE *out);

typedef enum JoinOutcomeKind {
        JOIN_OUTCOME_APPROVED,  /* approved, not signed (no CA given, or the signer refused it) */
        JOIN_OUTCOME_SIGNED,    /* (approved now or before, and) signed */
        JOIN_OUTCOME_REFUSED,   /* left pending */
        JOIN_OUTCOME_LOST_RACE, /* another master wrote first: read again next round */
        JOIN_OUTCOME_FAILED,    /* an API or signing error */
        JOIN_OUTCOME_ADOPTED,   /* a binding now owned by its Node */
        _JOIN_OUTCOME_KIND_MAX,
        _JOIN_OUTCOME_KIND_INVALID = -EINVAL,
} JoinOutcomeKind;

typedef struct JoinOutcome {
        JoinOutcomeKind kind;
        char *csr;     /* NULL for an adoption */
        char *node;    /* NULL when the request does not name one */
        char *message; /* the decision's reason, and what happened */
} JoinOutcome;

typedef struct JoinReport {
        JoinOutcome *outcomes;
        size_t n;
} JoinReport;

void join_report_done(JoinReport *r);
/* "approved", "signed", "refused", "lost-race", "failed", "adopted" */
const char *join_outcome_kind_to_string(JoinOutcomeKind k);

/* Carries out p. Every CSR and binding is tried (a failure is an outcome, not the end); returns < 0 only for
 * -ENOMEM and -ECANCELED (a stop request: the rest is left for the next round). now: CLOCK_REALTIME. */
int join_apply(KubeClient *c, const JoinObservation *o, const JoinPlan *p, const JoinSettings *s, usec_t now,
               usec_t deadline, JoinReport *ret);
