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
