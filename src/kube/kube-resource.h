/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Where an object lives in the API: apiVersion + kind -> the resource's URL path. A small fixed table of the
 * kinds protokube writes (docs/kube-client.md); any other kind is refused with a clear error rather than
 * guessed (English plurals are irregular, and a wrong path writes nothing and says "404"). */

#include <jansson.h>
#include <stdbool.h>

#include "kube/kube-name.h"

typedef struct KubeResource {
        const char *api_version; /* "v1", "apps/v1", "rbac.authorization.k8s.io/v1" */
        const char *kind;        /* "ConfigMap" */
        const char *plural;      /* "configmaps" */
        bool namespaced;
        KubeNameRule name_rule; /* Kubernetes' rule for the kind's names */
} KubeResource;

/* The table's row, or -EINVAL with *ret_error naming the apiVersion and kind. */
int kube_resource_find(const char *api_version, const char *kind, const KubeResource **ret,
                       char **ret_error);

/* "/api/v1/namespaces/NS/configmaps[/NAME]" or "/apis/GROUP/VERSION/..." (name NULL: the collection).
 * For a namespaced kind ns is required ("" or NULL: -EINVAL), for a cluster-scoped one it must be NULL or
 * "". Names are checked by their kind's rule (kube-name.h), namespaces as DNS-1123 labels, so nothing from
 * outside can change the path. Caller frees *ret. */
int kube_resource_path(const KubeResource *res, const char *ns, const char *name, char **ret,
                       char **ret_error);

/* A pod as the API returns it: Ready (its Ready condition is True), and its phase (NULL when it has none).
 */
bool kube_pod_ready(const json_t *pod);
const char *kube_pod_phase(const json_t *pod);
/* An object's controlling owner reference (controller: true), from the object or from its metadata; NULL
 * when it has none. */
const json_t *kube_controller_ref(const json_t *obj);
const json_t *kube_controller_ref_of(const json_t *metadata);
