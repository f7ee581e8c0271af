/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The kube-* control-plane components, built from one table of definitions (component-table.c): spec ->
 * flags -> pod model. component_flags() gives the sorted flags exactly as they end up in the pod's command
 * (caller frees with strv_free); component_pod_build() the pod (caller frees with pod_free). Defaults from
 * the field tables and from the rest of the spec (etcd servers, images, issuer, cluster CIDR ...) are
 * applied to a scratch copy, never to the spec. A disabled component (kubeProxy.enabled: false) gives
 * *ret = NULL and 0. etcd has its own builder (etcd.h): its pod depends on the member assignment. */

#include <errno.h>
#include <stdbool.h>

#include "model/pod.h"
#include "spec/spec.h"

typedef enum Component {
        COMPONENT_KUBE_APISERVER,
        COMPONENT_KUBE_CONTROLLER_MANAGER,
        COMPONENT_KUBE_SCHEDULER,
        COMPONENT_KUBE_PROXY,
        _COMPONENT_MAX,
        _COMPONENT_INVALID = -EINVAL,
} Component;

/* Where a component's settings go. */
typedef enum ComponentForm {
        /* a configuration file where the component and the chosen version have one and the spec names no
         * file of the operator's (component_config_file()): the pod gets --config and the flags of the
         * settings that file has no field for, and mounts the file's directory */
        COMPONENT_FORM_FILE,
        /* every setting a flag, no file: the flag the field table gives each setting (the unit tests check
         * the tables' flags with it; no pod runs in this form) */
        COMPONENT_FORM_FLAGS,
        _COMPONENT_FORM_MAX,
} ComponentForm;

/* "kube-apiserver": the pod, container, binary and image name; NULL for an invalid component. */
const char *component_to_string(Component c);
Component component_from_string(const char *s);

bool component_enabled(Component c, const ClusterSpec *spec);
/* The flags and the pod in COMPONENT_FORM_FILE. */
int component_flags(Component c, const ClusterSpec *spec, char ***ret);
int component_flags_form(Component c, const ClusterSpec *spec, ComponentForm form, char ***ret);
int component_pod_build(Component c, const ClusterSpec *spec, Pod **ret);
int component_pod_build_form(Component c, const ClusterSpec *spec, ComponentForm form, Pod **ret);

/* The configuration file the component reads in COMPONENT_FORM_FILE, rendered from the same effective config
 * as its flags. text is NULL (and 0 returned) when it reads none protokube renders: disabled, no file for
 * the chosen version, or the operator's own file in the spec. Caller frees path and text. */
typedef struct ComponentConfigFile {
        char *path;           /* where the component reads it on the node (--config) */
        const char *out_name; /* static: its name in `protokube render --out DIR` */
        char *text;
} ComponentConfigFile;
int component_config_file(Component c, const ClusterSpec *spec, ComponentConfigFile *ret);
/* Which instance of a component a file is for: the server addresses of the rows marked FIELD_INSTANCE_PORT
 * take the port plus FIELD_INSTANCE_PORT_STEP times the instance, so that the pods of one component on one
 * master never need the same port (docs/components.md). */
typedef enum ComponentInstance {
        COMPONENT_INSTANCE_STATIC,      /* the static pod of a pass (and the bootstrap pod of a pivot) */
        COMPONENT_INSTANCE_SELF_HOSTED, /* the self-hosted pod, beside the bootstrap pod during the pivot */
        COMPONENT_INSTANCE_CHECKPOINT,  /* its checkpoint, beside its successor after a power cut */
        _COMPONENT_INSTANCE_MAX,
} ComponentInstance;
/* component_config_file() for an instance; -ERANGE when a port would pass 65535. */
int component_config_file_instance(Component c, const ClusterSpec *spec, ComponentInstance instance,
                                   ComponentConfigFile *ret);

/* Where component c's configuration file goes on the node whose copy of the spec this is
 * (spec->node_config_dir), whichever version the spec names: *ret NULL (and 0) when c has none protokube
 * renders in any version. Caller frees. */
int component_config_path(Component c, const ClusterSpec *spec, char **ret);
/* The files the component's flags name (the row's file keys: certificates, keys, kubeconfigs, configs) of
 * the effective config, as key, path, ... (the YAML key: "tlsCertFile"; a list key repeats per element), and
 * in COMPONENT_FORM_FILE the configuration file protokube renders ("config", its path); the files its pod
 * mounts the directories of. Caller frees with strv_free; disabled: *ret = NULL. */
int component_files(Component c, const ClusterSpec *spec, char ***ret);
