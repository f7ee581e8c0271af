/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A master's pivot (docs/pivot.md): its observation through the API, decision and step, and the checkpoint's
 * step; the pass's pivot step (step-pivot.c), `protokube pivot` and `render --self-hosted` use them. */

#include <stdbool.h>
#include <stddef.h>

#include "certs/certs.h"
#include "components/self-hosted.h"
#include "daemon/node-settings.h"
#include "daemon/report.h"
#include "pivot/pivot.h"
#include "spec/spec.h"

/* The pivot (docs/pivot.md) of this node: settings from the spec and the node, the assets rendered with
 * the certificates' digest; deadlines from PROTOKUBE_PIVOT_READY_DEADLINE / _RESTORE_DEADLINE. n_masters:
 * the main etcd cluster's members. Logs what failed. */
typedef struct PassPivot PassPivot;
/* The pod templates' annotations: protokube.io/certificates with the digest of this node's certificates
 * (the static pods' annotation after a pass); list is NULL without a state store (no digest). */
typedef struct PassPodAnnotations {
        char digest[CERTS_DIGEST_LEN + 1];
        char *kv[3];       /* key, value, NULL */
        char *const *list; /* kv, or NULL */
} PassPodAnnotations;
/* The self-hosted assets of spec for n_masters, their pods annotated as *ret_annotations says (filled here;
 * may be NULL), the managed kubelet's host paths node's (NULL: the defaults); logs what failed. */
int pass_render_self_hosted(const ClusterSpec *spec, const NodeSettings *node, size_t n_masters,
                            SelfHostedAssets *ret, PassPodAnnotations *ret_annotations);
int pass_pivot_open(const ClusterSpec *spec, const NodeSettings *node, const char *node_name,
                    const char *internal_ip, size_t n_masters, PassPivot **ret);
PassPivot *pass_pivot_free(PassPivot *pp);
DEFINE_TRIVIAL_CLEANUP_FUNC(PassPivot *, pass_pivot_free)
/* Observes and decides; with apply, takes the step. *ret: the decision (pivot_decision_done() it). Logs. */
int pass_pivot_step(PassPivot *pp, bool apply, PivotDecision *ret);
const PivotRecord *pass_pivot_record(const PassPivot *pp);
/* What the pass read of the API's names: whether they hold this master's address (the pivot's turn waits
 * for them to leave it out). Without it the pivot waits PIVOT_NAMES_SETTLE instead. */
void pass_pivot_set_names_listed(PassPivot *pp, bool listed);
/* The checkpoint's step of this pass (checkpoint_step(), docs/pivot.md): logs a change, reports the
 * checkpoint (active, its generation's time) and, while it is active, waits with the next pass soon. */
void pass_checkpoint_run(PassPivot *pp, PassReport *rep);
