/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Internal to components/: the definition of one kube-* component (one row of the table in
 * component-table.c) and the hooks of the components that need more than data. */

#include <stdbool.h>
#include <stddef.h>

#include "components/component-file.h"
#include "components/control-plane.h"
#include "model/pod.h"
#include "spec/spec.h"

/* Strings made for a scratch copy of a config (derived defaults), freed together by the engine. */
typedef struct ComponentScratch {
        char **strings;
        char ***lists;
        size_t n_lists;
} ComponentScratch;

/* Keep s (NULL-safe) until the scratch is done; returns s, or NULL on allocation failure (s is freed). */
char *component_scratch_keep(ComponentScratch *scratch, char *s);
/* The one-element list {s}, kept like s; NULL on allocation failure (s is freed). */
char **component_scratch_list1(ComponentScratch *scratch, char *s);

/* A string or list key that, when unset, takes another component's value of from_key (set or table
 * default), so two components agree: the service range is the apiserver's, the pods' CIDR the
 * controller-manager's, the front proxy's names and headers the apiserver's. */
typedef struct ComponentInherit {
        const char *key;
        Component from;
        const char *from_key;
} ComponentInherit;

typedef struct ComponentDef {
        const char *name; /* pod, container, label, binary, log file and image name */
        const Field *fields;
        size_t config_offset, config_size; /* where the config sits in ClusterSpec */
        const char *priority_class;
        const char *cpu_request; /* when cpuRequest is unset */
        /* HTTPS health probes on securePort; with expose_port securePort is also a container port. NULL
         * probe_path: the finish hook probes. */
        const char *probe_path, *ready_path;
        bool expose_port;
        const char *const *file_keys; /* config keys (strings or lists) of files: directories mounted r/o */
        bool ca_certs;                /* mount the host's CA bundle (components that call out over TLS) */
        const ComponentInherit *inherit; /* ends with a NULL key */
        /* Defaults from the rest of the spec, filled into the scratch copy config after the table's own. */
        int (*derive)(const ClusterSpec *spec, void *config, ComponentScratch *scratch);
        /* What is special about the pod; runs after the file mounts, before the CA bundle. */
        int (*finish_pod)(Pod *pod, PodContainer *ct, const void *config);
        /* The configuration file protokube renders for it (COMPONENT_FORM_FILE), or NULL: flags only. */
        const ComponentFileDef *file;
} ComponentDef;

extern const ComponentFileDef kube_scheduler_file, kube_proxy_file;

int kube_apiserver_derive(const ClusterSpec *spec, void *config, ComponentScratch *scratch);
int kube_apiserver_finish_pod(Pod *pod, PodContainer *ct, const void *config);
int kube_controller_manager_derive(const ClusterSpec *spec, void *config, ComponentScratch *scratch);
int kube_proxy_finish_pod(Pod *pod, PodContainer *ct, const void *config);
