/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The checkpoint on the node (docs/pivot.md, "The checkpoint"): the effects around checkpoint.h's pure
 * transformation.
 *
 * On disk, under the state directory:
 *   checkpoint -> .checkpoint.<16 hex>.<8 hex>  the current generation (a symlink, swapped atomically)
 *   .checkpoint.<gen>/manifests/<owner>-checkpoint.json   the static pods (0644)
 *   .checkpoint.<gen>/secrets/<name>/<key>      a Secret's data (files 0600, directories 0700)
 *   .checkpoint.<gen>/configmaps/<name>/<key>   a ConfigMap's data (0644)
 *   .checkpoint.<gen>/digest                    SHA-256 of all of the above (unchanged: nothing written)
 *   checkpoint-activated                        when the manifests went to kubelet (RFC 3339, UTC)
 * The manifests' host paths name "<state>/checkpoint/...", so they follow the symlink to the generation
 * that is current when kubelet starts the pod. A generation is complete before the symlink names it: a
 * failed refresh leaves the previous checkpoint as it was (checkpoint-gen.c: also with a second writer). */

#include <stdbool.h>
#include <stddef.h>

#include "basic/time-util.h"
#include "kube/kube-client.h"

#define CHECKPOINT_LINK            "checkpoint"
#define CHECKPOINT_ACTIVATED_FILE  "checkpoint-activated"
#define CHECKPOINT_MANIFEST_SUFFIX "-checkpoint.json"            /* in kubelet's directory: ours, by name */
#define CHECKPOINT_UID             "protokube.io/checkpoint-uid" /* the checkpointed pod's uid */
#define CHECKPOINT_PROBE_TIMEOUT   (5 * USEC_PER_SEC)
#define CHECKPOINT_PODS_MAX        16
#define CHECKPOINT_FILES_MAX       256
#define CHECKPOINT_FILE_MAX        (1024U * 1024U)

typedef struct CheckpointConfig {
        const char *state_dir;    /* where the checkpoint lives (0700 when created) */
        const char *manifest_dir; /* kubelet's static pod directory */
        const char *node_name;    /* the Node's name: spec.nodeName of the pods to checkpoint */
        KubeClient *local;        /* this master's apiserver (protokube's kubeconfig) */
        KubeClient *internal;     /* api.internal.<cluster>; NULL: the local one only */
        const char *proc_dir;     /* "/proc": where the running containers are observed */
} CheckpointConfig;

typedef enum CheckpointStep {
        CHECKPOINT_STEP_REFRESH,    /* the API answers, the checkpoint is not active: it was written again */
        CHECKPOINT_STEP_ACTIVATE,   /* no API, no self-hosted pod runs here: manifests given to kubelet */
        CHECKPOINT_STEP_DEACTIVATE, /* the API answers and this node's self-hosted pods are back: removed */
        CHECKPOINT_STEP_WAIT,       /* nothing to do now; the reason says what is awaited */
        _CHECKPOINT_STEP_MAX,
        _CHECKPOINT_STEP_INVALID = -22,
} CheckpointStep;

const char *checkpoint_step_to_string(CheckpointStep s);

/* One decision over what this node observes, and its step (every step is idempotent):
 *   API answers (local /readyz, else the internal one) and no checkpoint manifest in kubelet's directory:
 *     refresh (or wait while a self-hosted pod here is not Running: the checkpoint stays as it was);
 *   API answers and the checkpoint is active: deactivate once every checkpointed component has a Ready
 *     self-hosted pod here whose containers started after the activation, else wait;
 *   API silent: activate, unless the checkpoint is active already, empty, or a checkpointed pod still has
 *     a process on this node (its uid in a cgroup path: kubelet runs it, the API is down for another
 * reason). *ret_step gets the step, *ret_message (caller frees) what it did or awaits. */
int checkpoint_step(const CheckpointConfig *c, usec_t deadline, CheckpointStep *ret_step, char **ret_message,
                    char **ret_error);

/* The parts, for tests and the daemon. The client is one that answers. */
int checkpoint_refresh(const CheckpointConfig *c, KubeClient *api, usec_t deadline, char **ret_message,
                       char **ret_error);
int checkpoint_activate(const CheckpointConfig *c, size_t *ret_n, char **ret_error);
int checkpoint_deactivate(const CheckpointConfig *c, size_t *ret_n, char **ret_error);
/* 1 when a checkpoint manifest is in kubelet's directory, 0 if not. */
int checkpoint_is_active(const CheckpointConfig *c, char **ret_error);
