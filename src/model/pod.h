/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The pod model: the subset of a Kubernetes v1 Pod that control-plane static pods use. Plain data: every
 * string and array is owned by the Pod and released by pod_free(). Key/value lists (labels, annotations,
 * env, resource requests) are alternating key, value strv. Field names follow the API (core/v1). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/macro.h"

typedef struct PodHttpGet {
        char *host; /* NULL = pod IP */
        char *path;
        int port;
        char *scheme; /* "HTTP" | "HTTPS" */
} PodHttpGet;

typedef struct PodProbe {
        bool set;
        PodHttpGet http_get;
        char **exec_command;       /* set: an exec probe (this argv in the container) instead of httpGet */
        int initial_delay_seconds; /* 0 = omitted (every count below, too) */
        int timeout_seconds;
        int period_seconds;
        int failure_threshold;
} PodProbe;

typedef struct PodPort {
        char *name;
        int container_port;
        int host_port;  /* 0 = omitted */
        char *protocol; /* "TCP" */
} PodPort;

typedef struct PodVolumeMount {
        char *name;
        char *mount_path;
        bool read_only;
        char *propagation; /* mountPropagation: "Bidirectional" (a privileged container's only); NULL =
                              omitted */
} PodVolumeMount;

typedef struct PodContainer {
        char *name;
        char *image;
        char **command;        /* argv */
        char **args;           /* appended to command: where an operator adds flags through the API */
        char **env;            /* name, value, ... */
        char **env_field_refs; /* name, fieldPath, ...: the downward API ("status.hostIP") */
        PodPort *ports;
        size_t n_ports;
        PodVolumeMount *volume_mounts;
        size_t n_volume_mounts;
        char **requests; /* resource, quantity, ...: "cpu", "150m" */
        PodProbe liveness_probe;
        PodProbe readiness_probe;
        PodProbe startup_probe;
        bool privileged; /* securityContext.privileged */
} PodContainer;

/* One source: host_path, or secret_name, or config_map_name. */
typedef struct PodVolume {
        char *name;
        char *host_path;
        char *host_path_type; /* "Directory", "DirectoryOrCreate", "File", "FileOrCreate"; NULL = omitted */
        char *secret_name;
        char *config_map_name;
        int default_mode; /* secret/configMap file mode (0600 = 384); 0 = omitted */
} PodVolume;

typedef struct PodToleration {
        char *key;
        char *operator; /* "Exists" | "Equal" */
        char *value;
        char *effect; /* "NoSchedule", "NoExecute"; NULL = all */
} PodToleration;

typedef struct Pod {
        char *name;
        char *namespace;
        char **labels;      /* key, value, ... */
        char **annotations; /* key, value, ... */
        bool host_network;
        bool host_pid; /* the node's PID namespace (a kubelet in a pod sees and signals the node's processes)
                        */
        char *priority_class_name;
        PodContainer *containers;
        size_t n_containers;
        /* Run one after another to completion before the containers (a restore's etcdctl step,
         * docs/etcd-restore.md); only name, image, command and volume mounts are used. */
        PodContainer *init_containers;
        size_t n_init_containers;
        PodVolume *volumes;
        size_t n_volumes;
        PodToleration *tolerations;
        size_t n_tolerations;
        /* What a pod of a DaemonSet or Deployment may add (a static pod has none of these). */
        char **node_selector; /* key, value, ... */
        char *service_account_name;
        /* Required pod anti-affinity: no two pods with these labels (key, value, ...) on one value of
         * the topology key ("kubernetes.io/hostname"); omitted when NULL. */
        char **anti_affinity_labels;
        char *anti_affinity_topology_key;
} Pod;

Pod *pod_free(Pod *pod);
DEFINE_TRIVIAL_CLEANUP_FUNC(Pod *, pod_free)

/* A pod with name and namespace; caller frees. */
int pod_new(const char *name, const char *namespace, Pod **ret);
/* Sets key to value in an alternating key/value list, replacing an existing key. */
int pod_kv_set(char ***l, const char *key, const char *value);
/* Adds a container; *ret points into pod (valid until the next pod_add_container). */
int pod_add_container(Pod *pod, const char *name, const char *image, PodContainer **ret);
/* Adds an init container (run before the containers, in the order added); *ret as pod_add_container. */
int pod_add_init_container(Pod *pod, const char *name, const char *image, PodContainer **ret);
/* Adds a hostPath volume; type may be NULL. */
int pod_add_host_path_volume(Pod *pod, const char *name, const char *path, const char *type);
int pod_add_toleration(Pod *pod, const char *key, const char *operator, const char * value,
                       const char *effect);
int pod_container_add_port(PodContainer *c, const char *name, int container_port, int host_port);
int pod_container_add_mount(PodContainer *c, const char *name, const char *mount_path, bool read_only);
/* Adds a volume from a Secret (config_map false) or a ConfigMap of that name; mode 0 = the API's default. */
int pod_add_object_volume(Pod *pod, const char *name, const char *object_name, bool config_map, int mode);
/* Adds a hostPath volume and mounts it in c at the same path. */
int pod_add_host_mount(Pod *pod, PodContainer *c, const char *name, const char *path, const char *type,
                       bool read_only);
/* A Kubernetes qualified name, the form of label and annotation keys (apimachinery's IsQualifiedName): an
 * optional prefix that is a lowercase DNS subdomain and '/', then a name of 1 to 63 of [A-Za-z0-9._-] that
 * starts and ends with a letter or digit: "protokube.io/certificates", "k8s-app". */
bool pod_qualified_name_is_valid(const char *s);
/* Fills an httpGet probe. */
int pod_probe_http(PodProbe *p, const char *scheme, const char *host, const char *path, int port,
                   int initial_delay_seconds, int timeout_seconds);
