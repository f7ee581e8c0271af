/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What a node is told on its command line (or in PROTOKUBE_* variables): who it is, where its files go, and
 * its role. The CLI fills this and hands it to the pass (daemon/pass.h); nothing else of the pass is the
 * CLI's to set. */

#include <errno.h>

/* What a node does in the cluster; each role has its own table of steps (daemon/pass-roles.c), and
 * nothing outside that table decides by role. */
typedef enum NodeRole {
        NODE_ROLE_MASTER, /* etcd volumes, DNS for discovery, the control plane, its certificates */
        NODE_ROLE_WORKER, /* the node's view of the API (docs/workers.md); no volume, no control plane */
        _NODE_ROLE_MAX,
        _NODE_ROLE_INVALID = -EINVAL,
} NodeRole;

const char *node_role_to_string(NodeRole r);
NodeRole node_role_from_string(const char *s);

typedef struct NodeSettings {
        NodeRole role;                                            /* default master */
        const char *node_name, *zone, *internal_ip, *external_ip; /* NULL = detect */
        const char *machine_id_file;                              /* NULL = /etc/machine-id */
        const char *manifest_dir;
        const char *mount_root;
        const char *pool_dir;
        const char *state_dir;  /* protokube's own state (the pivot's record); NULL: STATE_DIR_DEFAULT */
        const char *config_dir; /* the components' configuration files go under it (component-file.h) */
        /* A worker's kubelet bootstrap (docs/workers.md): where the kubelet's files go, the bootstrap
         * token's file (a credential: never on a command line) and the cluster CA's pin. */
        const char *kubelet_dir;
        const char *token_file;
        const char *ca_pin;
} NodeSettings;
