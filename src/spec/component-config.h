/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Typed componentconfig for the control-plane components; each struct has a field table
 * (component-config.c) that carries the YAML key and the command-line flag of every field. */

#include "spec/field.h"

typedef struct KubeAPIServerConfig {
        char *image;
        OptInt secure_port;
} KubeAPIServerConfig;

typedef struct KubeControllerManagerConfig {
        char *image;
} KubeControllerManagerConfig;

typedef struct KubeSchedulerConfig {
        char *image;
} KubeSchedulerConfig;

typedef struct KubeProxyConfig {
        char *image;
} KubeProxyConfig;

/* The field tables (component-config.c), referenced by the spec loader's table for spec.kubeAPIServer etc.
 */
extern const Field kube_apiserver_config_fields[];
extern const Field kube_controller_manager_config_fields[];
extern const Field kube_scheduler_config_fields[];
extern const Field kube_proxy_config_fields[];
