/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared by the checkpoint's files (checkpoint-apply.c, checkpoint-gen.c, checkpoint-owner.c); not for
 * other rooms. */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "basic/time-util.h"
#include "kube/kube-client.h"
#include "pivot/checkpoint.h"

/* A file (data != NULL) or a directory (data NULL) of a generation, held in memory until all is fetched:
 * nothing is written before every object was read. rel is relative to the generation, its components
 * checked names (never "..", never absolute). */
typedef struct GenFile {
        char *rel;
        uint8_t *data;
        size_t len;
        mode_t mode;
        bool secret;
} GenFile;

typedef struct Gen {
        GenFile *files;
        size_t n;
} Gen;

void gen_done(Gen *g);
/* Takes rel and data, also on failure. -EEXIST when the generation has rel already: two entries with one
 * path are an error, never the last one winning. -E2BIG past CHECKPOINT_FILES_MAX. */
int gen_add(Gen *g, char *rel, uint8_t *data, size_t len, mode_t mode, bool secret);
bool gen_has(const Gen *g, const char *rel);
/* SHA-256 over every path, mode and content, in path order (sorts g). */
int gen_digest(Gen *g, char ret[static 65]);
/* Whether the current generation's digest is this one. */
bool gen_unchanged(const char *state_dir, const char *digest);

/* Writes g as a new generation under state_dir, every file opened relative to the generation's directory
 * (basic/beneath.h: no "..", no symlink followed), then points <state_dir>/checkpoint at it and removes the
 * generations it replaced. Safe beside another writer of the same state directory: the generation is
 * named only once its writer holds it (flock), the link is swapped through a temporary name of its own, and
 * a sweep removes only generations no newer than the one it replaced, held by no writer, and not current.
 * *ret_dir (may be NULL): the generation's path. Nothing is left of it on failure. */
int gen_commit(const Gen *g, const char *state_dir, const char *digest, char **ret_dir, char **ret_error);

/* The self-hosted control plane: what a master needs to serve the API again (kube-proxy is not). */
extern const char *const checkpoint_components[];
bool checkpoint_is_component(const char *app);

/* The component a checkpoint manifest stands for: "DaemonSet/kube-apiserver" -> "kube-apiserver" (the
 * workloads are named after their components, the pods' k8s-app). */
const char *checkpoint_manifest_app(const json_t *m);

/* Whether pod's controlling owner is protokube's own workload of the component its k8s-app names: the
 * DaemonSet or Deployment kube-system/<component> labelled app.kubernetes.io/managed-by=protokube, by name
 * and uid (a Deployment's through the ReplicaSet the pod names, whose controller it must be). 0 when it
 * is; PK_EMALFORMED with a message naming the pod and the owner when not; the API's errors as they are. */
int checkpoint_owner_check(KubeClient *api, const json_t *pod, const CheckpointPod *p, usec_t deadline,
                           char **ret_error);

/* Whether protokube's workload of component (kind "DaemonSet" or "Deployment") still wants a pod on node:
 * a DaemonSet whose pod template's nodeSelector the Node matches; a Deployment that has not settled (its
 * status behind its spec: a pod of it is missing, and may come here). 0 when not (also when the workload
 * is gone or not protokube's), 1 when it does, with *ret_why saying so (caller frees). */
int checkpoint_workload_wants(KubeClient *api, const char *kind, const char *component, const char *node,
                              usec_t deadline, char **ret_why, char **ret_error);
