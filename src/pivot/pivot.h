/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The pivot around its pure decision (pivot-plan.h; docs/pivot.md): observe what one master sees of the API
 * (as protokube's own identity) and of its own disk, decide, apply the one step. Used by `protokube pivot`
 * (a loop of them) and by the daemon (one step per pass). Nothing here logs: errors come back with a
 * message (caller frees). */

#include <stdbool.h>
#include <stddef.h>

#include "basic/time-util.h"
#include "components/self-hosted.h"
#include "kube/kube-client.h"
#include "pivot/pivot-plan.h"
#include "pivot/pivot-record.h"

#define PIVOT_CONFIGMAP         "protokube-pivot" /* kube-system: the pivot is complete */
#define PIVOT_DIGEST_ANNOTATION "protokube.io/asset-digest"
#define PIVOT_MASTER_LABEL      "node-role.kubernetes.io/master"
#define PIVOT_MIRROR_ANNOTATION "kubernetes.io/config.mirror"
/* On a master's Node, ="out" during its turn: every master's DNS pass leaves it out of the API's names
 * (dns_api_withheld(); docs/pivot.md, "One apiserver starting at a time") */
#define PIVOT_NAMES_ANNOTATION "protokube.io/api-names"
#define PIVOT_NAMES_OUT        "out"
#define PIVOT_BOOTSTRAP_SUBDIR "pivot-bootstrap" /* under the state dir: the removed manifests */

typedef struct PivotSettings {
        const char *kubeconfig;  /* protokube's (<pki dir>/protokube/kubeconfig): its CA and client cert */
        const char *api_host;    /* api.internal.<cluster> */
        unsigned api_port;       /* kube-apiserver's securePort */
        const char *node_name;   /* this master's Node */
        const char *internal_ip; /* this master's address: its own apiserver, by connect_to */
        const char *manifest_dir;
        const char *state_dir;
        size_t masters_expected;        /* the main etcd cluster's members; 0: not known */
        const SelfHostedAssets *assets; /* rendered by the caller (it has the certificates' digest) */
        /* key, value, ..., NULL (may be NULL): the pod templates' annotations the assets were rendered with
         * (the certificates' digest); once the pivot is complete, a workload whose template carries other
         * values gets these patched in, and rolls (a renewal) */
        char *const *pod_annotations;
        usec_t call_timeout;                     /* one API call, retries included; 0: 10 s */
        usec_t ready_deadline, restore_deadline; /* 0: the defaults of pivot-plan.h */
        usec_t names_ttl;                        /* the API's names' TTL (spec dns.ttl) */
        /* Whether DNS, as the caller read it, holds this master's address in the API's names (the daemon's
         * pass); names_known false: not read (`protokube pivot`), PIVOT_NAMES_SETTLE stands in. */
        bool names_known, names_listed;
} PivotSettings;

typedef struct Pivot {
        const PivotSettings *settings;
        KubeClient *api;   /* https://api.internal.<C>:<port> */
        KubeClient *local; /* the same name, connected to this master's address */
        char **texts;      /* the assets' texts with their digest annotation (Secrets' erased when freed) */
        char **digests;    /* sha256 hex of each asset's rendered text */
        /* the last observation */
        PivotObservation obs;
        PivotMaster *masters;
        char **strings; /* what obs and masters point to */
        bool *stale;    /* per asset */
        bool self_labelled;
        PivotRecord record;
        char *api_error;   /* why /readyz through api.internal failed */
        char *local_error; /* why this master's own /readyz failed */
} Pivot;

/* Whether a Node (as the API gives it) asks to be out of the API's names for its pivot turn. */
bool pivot_node_names_out(const json_t *node);

/* The node whose apiserver a pod (as the API gives it) says is serving: a kube-apiserver pod (the bootstrap
 * mirror, the self-hosted DaemonSet's, or its checkpoint) bound to that node, Ready (kubelet's /readyz
 * probe) and not being deleted; NULL otherwise. */
const char *pivot_apiserver_pod_ready_on(const json_t *pod);

int pivot_new(const PivotSettings *s, Pivot **ret, char **ret_error);
Pivot *pivot_free(Pivot *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(Pivot *, pivot_free)

/* Observes into p->obs (the API's failures are part of the observation, not errors). Fails on a bad local
 * record or manifest directory, or an API answer that makes no sense. */
int pivot_observe(Pivot *p, char **ret_error);

/* Applies the decision's step (labels this master's Node first when it is not). Waits and `done` do
 * nothing but keep the record; `failed` does nothing. */
int pivot_apply(Pivot *p, const PivotDecision *d, char **ret_error);

/* The bootstrap manifests the pivot retires: the three of pivot-plan.h and kube-proxy's (its DaemonSet
 * replaces it: both would serve kube-proxy's ports). */
extern const char *const pivot_bootstrap_manifests[];
/* Whether a pass may write the bootstrap manifest file_name: not once this master removed it (until a
 * rollback) or saw the pivot complete. */
bool pivot_record_keeps_bootstrap_away(const PivotRecord *rec, const char *file_name);
