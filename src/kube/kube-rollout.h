/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Where a DaemonSet's rollout stands, and what to roll it back to when it is stuck: Kubernetes rolls a
 * DaemonSet node by node but never gives up on a template whose pods do not become Ready (it has no
 * progressDeadlineSeconds, unlike a Deployment). Pure over the objects read from the API. */

#include <jansson.h>
#include <stdbool.h>

#include "basic/time-util.h"

/* Annotations a rollback writes on the DaemonSet: what was rolled back, why and when (RFC 3339). A
 * template rolled back from is never rolled back to. */
#define KUBE_ROLLED_BACK_ANNOTATION      "protokube.io/rolled-back"
#define KUBE_ROLLED_BACK_AT_ANNOTATION   "protokube.io/rolled-back-at"
#define KUBE_ROLLED_BACK_FROM_ANNOTATION "protokube.io/rolled-back-from"

typedef struct KubeRollout {
        bool complete; /* every scheduled node runs the current template, available */
        bool stuck;    /* not complete, and no progress for longer than the deadline */
        usec_t since;  /* CLOCK_REALTIME of its last progress: its start, or a node's pod of the current
                        * template becoming Ready (0: not known) */
        long current;  /* revision numbers (0: none) */
        long previous; /* the newest older one that was not rolled back from */
        char hash[64]; /* the current revision's controller-revision-hash */
        char previous_hash[64];
        json_t *previous_template; /* its spec.template (a new reference); NULL: none to go back to */
        char *why;                 /* "1 of 3 nodes run revision 4, 0 of them available" */
} KubeRollout;

void kube_rollout_done(KubeRollout *r);

/* ds: the DaemonSet; revisions: the list object of its ControllerRevisions (owned by it: ownerReferences'
 * uid; NULL: whether it is complete only, which the DaemonSet's status says alone); pods: the list object
 * of its pods (NULL: none read); now: CLOCK_REALTIME. The current revision is the one whose template is the
 * DaemonSet's (else the newest). The deadline runs per node, as a Deployment's progress deadline does:
 * from the latest of the revision's creation, the DaemonSet's last rollback and the last time a pod of
 * the current revision became Ready; so a rollout over many nodes is not stuck while it moves on.
 * PK_EMALFORMED for objects that are not what the API serves. */
int kube_daemonset_rollout(const json_t *ds, const json_t *revisions, const json_t *pods, usec_t now,
                           usec_t deadline, KubeRollout *ret);
