/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The pivot's decision (issue 16; docs/self-hosted.md, "The pivot"): from what one master observes of the
 * API and of its own manifest directory, the one next step this master takes. Pure: no I/O, no clock of its
 * own. Every master runs the same decision on its own observation; they agree without a leader because
 * - applying the assets is idempotent (server-side apply), so two masters may both do it;
 * - the bootstrap pods are retired one master at a time in the order of the masters' node names: a master
 *   removes its own bootstrap manifests only when every master before it is done (no bootstrap mirror pod
 *   left, its self-hosted pods Ready) and every master after it still serves, so at most one master is
 *   without a serving apiserver at any time;
 * - what a master did is what it observes: the manifests on its own disk, and a small local record of when
 *   it removed them (for the rollback deadline). A master killed at any step decides again from there. */

#include <stdbool.h>
#include <stddef.h>

#include "basic/time-util.h"

typedef enum PivotComponent {
        PIVOT_APISERVER,
        PIVOT_CONTROLLER_MANAGER,
        PIVOT_SCHEDULER,
        _PIVOT_COMPONENT_MAX,
} PivotComponent;

const char *pivot_component_name(PivotComponent c);

/* One master as the API shows it. */
typedef struct PivotMaster {
        const char *node;                             /* the Node's name */
        bool bootstrap_mirror[_PIVOT_COMPONENT_MAX];  /* a mirror pod of the bootstrap static pod */
        bool self_hosted_ready[_PIVOT_COMPONENT_MAX]; /* a Ready self-hosted pod of the component there */
        const char *self_hosted_reason; /* why its self-hosted apiserver is not Ready (or NULL) */
        const char *self_hosted_reasons[_PIVOT_COMPONENT_MAX]; /* per component (or NULL): preferred */
} PivotMaster;

typedef struct PivotObservation {
        const char *self;     /* this master's node name */
        bool api_ready;       /* /readyz answered 200 through api.internal.<C> */
        bool local_api_ready; /* /readyz answered 200 on this master's own address */
        bool complete;        /* the API records the pivot as complete (kube-system/protokube-pivot) */
        size_t assets_stale;  /* assets whose live object differs from the rendered one (or is absent) */
        /* Once complete, on the first master by node name only: the Secrets that differ from this master's
         * render and the workloads whose pod template carries another certificates digest (a renewal). */
        size_t certificates_stale;
        const PivotMaster *masters; /* every master, in any order */
        size_t n_masters;
        bool local_bootstrap[_PIVOT_COMPONENT_MAX]; /* this master's bootstrap manifest is on its disk */
        usec_t
            assets_applied_at; /* when this master first saw the assets applied (local record); 0: never */
        usec_t removed_at;     /* when this master removed its bootstrap manifests (local record); 0: not */
        usec_t now;
        size_t masters_expected; /* the masters the cluster has (the main etcd members); 0: not known */
        usec_t ready_deadline;   /* 0: PIVOT_READY_DEADLINE (tests shorten them) */
        usec_t restore_deadline; /* 0: PIVOT_RESTORE_DEADLINE */
} PivotObservation;

typedef enum PivotStep {
        PIVOT_WAIT_API,           /* the API does not answer: nothing to do yet */
        PIVOT_APPLY_ASSETS,       /* server-side apply of every asset */
        PIVOT_WAIT_SELF_HOSTED,   /* a self-hosted pod is not Ready yet */
        PIVOT_WAIT_TURN,          /* a master before this one still runs its bootstrap pods */
        PIVOT_REMOVE_BOOTSTRAP,   /* remove this master's bootstrap manifests (record the time first) */
        PIVOT_WAIT_LOCAL,         /* removed here: wait for this master's self-hosted apiserver to answer */
        PIVOT_RESTORE_BOOTSTRAP,  /* rollback: write this master's bootstrap manifests again */
        PIVOT_WAIT_MIRRORS_GONE,  /* every master removed its manifests: wait for kubelet to drop the mirrors
                                   */
        PIVOT_MARK_COMPLETE,      /* record the pivot as complete in the API */
        PIVOT_RENEW_CERTIFICATES, /* complete: the renewed Secrets applied, the workloads' digest patched */
        PIVOT_DONE,
        PIVOT_FAILED, /* the self-hosted pods missed their deadline before any removal */
        _PIVOT_STEP_MAX,
} PivotStep;

const char *pivot_step_name(PivotStep s);

typedef struct PivotDecision {
        PivotStep step;
        const char *node; /* the master the step is about (this one, or the one waited for); may be NULL */
        PivotComponent component; /* for the waits on a component */
        char *why;                /* a sentence for `plan`, the report and the error; caller frees */
} PivotDecision;

#define PIVOT_READY_DEADLINE   (300ULL * USEC_PER_SEC) /* assets applied -> every self-hosted pod Ready */
#define PIVOT_RESTORE_DEADLINE (120ULL * USEC_PER_SEC) /* bootstrap removed -> this master serves again */

/* The next step for obs->self. -EINVAL when the observation is inconsistent (self not among the masters,
 * no masters, a master without a name). */
int pivot_decide(const PivotObservation *obs, PivotDecision *ret);

void pivot_decision_done(PivotDecision *d);
