/* SPDX-License-Identifier: Apache-2.0 */
#include "spec/component-config.h"

#include <stddef.h>

/* Scaffold tables; the components room replaces them with the full typed componentconfig. */
const Field kube_apiserver_config_fields[] = {
        { .name = "image", .type = FIELD_STRING, .offset = offsetof(KubeAPIServerConfig, image) },
        { .name = "securePort",
          .type = FIELD_INT,
          .offset = offsetof(KubeAPIServerConfig, secure_port),
          .flag = "secure-port",
          .default_value = "443",
          .min = 1,
          .max = 65535 },
        {},
};
const Field kube_controller_manager_config_fields[] = {
        { .name = "image", .type = FIELD_STRING, .offset = offsetof(KubeControllerManagerConfig, image) },
        {},
};
const Field kube_scheduler_config_fields[] = {
        { .name = "image", .type = FIELD_STRING, .offset = offsetof(KubeSchedulerConfig, image) },
        {},
};
const Field kube_proxy_config_fields[] = {
        { .name = "image", .type = FIELD_STRING, .offset = offsetof(KubeProxyConfig, image) },
        {},
};
