/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The pivot's decision (docs/self-hosted.md, "The pivot"): from what one master observes of the
 * API and of its own manifest directory, the one next step this master takes. Pure: no I/O, no clock of its
 * own. Every master runs the same decision on its own observation; they agree without a leader because
 * - applying the assets is idempotent (server-side apply), so two masters may both do it;
 * - the masters take their turns one at a time in the order of their node names: a master leaves the API's
 *   names, waits for clients' caches to let it go, starts its self-hosted apiserver, removes its own
 * bootstrap manifests once that serves, and rejoins the names; it begins only when every master before it is
 * done (no bootstrap mirror pod left, its self-hosted pods Ready, back in the names), so at most one master
 * is without a serving apiserver, or out of the names, at any time;
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
        bool bootstrap_ready[_PIVOT_COMPONENT_MAX];   /* ... and it is Ready */
        bool self_hosted_ready[_PIVOT_COMPONENT_MAX]; /* a Ready self-hosted pod of the component there */
        const char *self_hosted_reason; /* why its self-hosted apiserver is not Ready (or NULL) */
        const char *self_hosted_reasons[_PIVOT_COMPONENT_MAX]; /* per component (or NULL): preferred */
        bool apiserver_started; /* its Node carries SELF_HOSTED_APISERVER_LABEL: its turn has begun */
        bool names_out;         /* its Node asks to be left out of the API's names (PIVOT_NAMES_OUT) */
} PivotMaster;

typedef struct PivotObservation {
        const char *self;     /* this master's node name */
        bool api_ready;       /* /readyz answered 200 through api.internal.<C> */
        bool local_api_ready; /* /readyz answered 200 on this master's own address */
        bool complete;        /* the API records the pivot as complete (kube-system/protokube-pivot) */
        size_t assets_stale;  /* assets whose live object differs from the rendered one (or is absent) */
        /* the first of them, "Kind namespace/name (why)" (NULL: none), for the log */
        const char *stale_asset;
        /* Once complete, on the first master by node name only: the Secrets that differ from this master's
         * render and the workloads whose pod template carries another certificates digest (a renewal). */
        size_t certificates_stale;
        const PivotMaster *masters; /* every master, in any order */
        size_t n_masters;
        bool local_bootstrap[_PIVOT_COMPONENT_MAX]; /* this master's bootstrap manifest is on its disk */
        usec_t
            assets_applied_at; /* when this master first saw the assets applied (local record); 0: never */
        usec_t removed_at;     /* when this master removed its bootstrap manifests (local record); 0: not */
        /* This master's turn (local record; 0: not yet): left the API's names, saw them leave it out,
         * started its self-hosted apiserver */
        usec_t names_left_at, names_gone_at, started_at;
        /* Whether the API's names still hold this master's address as DNS serves them: 1, 0, or -1 when not
         * known (`protokube pivot` reads no DNS): then PIVOT_NAMES_SETTLE after names_left_at stands in. */
        int names_listed;
        usec_t names_ttl; /* the TTL of the API's names: how long a client may keep an address */
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
        PIVOT_LEAVE_API_NAMES,    /* its turn: ask to be left out of the API's names (a Node annotation) */
        PIVOT_WAIT_API_NAMES,     /* the names still hold it, or clients may still have it cached */
        PIVOT_START_SELF_HOSTED,  /* label its Node: the DaemonSet starts its self-hosted apiserver */
        PIVOT_REMOVE_BOOTSTRAP,   /* remove this master's bootstrap manifests (record the time first) */
        PIVOT_WAIT_LOCAL,         /* removed here: wait for this master's self-hosted apiserver to answer */
        PIVOT_RESTORE_BOOTSTRAP,  /* rollback: write this master's bootstrap manifests again */
        PIVOT_WAIT_MIRRORS_GONE,  /* every master removed its manifests: wait for kubelet to drop the mirrors
                                   */
        PIVOT_REJOIN_API_NAMES,   /* its turn is over: the API's names take it back once it answers */
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
/* Without a DNS read (names_listed -1): the asked-for removal reached DNS by then (the other masters' next
 * passes); the TTL's wait follows. */
#define PIVOT_NAMES_SETTLE (10ULL * USEC_PER_SEC)

/* The next step for obs->self. -EINVAL when the observation is inconsistent (self not among the masters,
 * no masters, a master without a name). */
int pivot_decide(const PivotObservation *obs, PivotDecision *ret);

void pivot_decision_done(PivotDecision *d);
