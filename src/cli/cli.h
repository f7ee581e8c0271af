/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What every verb gets: the global options and the node-local settings (ARCHITECTURE.md, CLI contract).
 * Each node-local setting is also read from PROTOKUBE_<NAME> (e.g. PROTOKUBE_NODE_NAME); options win. */

#include <getopt.h>

#include "basic/time-util.h"

enum {
        EXIT_CONVERGED = 0,
        EXIT_ERROR = 1,
        EXIT_USAGE = 2,
        EXIT_NOT_CONVERGED = 3,
};

typedef struct CliContext {
        const char *spec_path; /* -c FILE */
        const char *node_name;
        const char *zone;
        const char *internal_ip;
        const char *external_ip;
        const char *internal_ip_source; /* where internal_ip came from, for errors ("--internal-ip") */
        const char *external_ip_source;
        const char *machine_id_file; /* PROTOKUBE_MACHINE_ID_FILE; NULL: /etc/machine-id */
        const char *manifest_dir;    /* default /etc/kubernetes/manifests */
        const char *mount_root;      /* default /mnt */
        const char *pool_dir;        /* default /var/lib/protokube/pool */
        const char *listen;          /* default 127.0.0.1:9797 */
        usec_t interval;             /* default 10s */
} CliContext;

/* A verb's own options are parsed by cli_parse_options() together with the node-local ones. on_option is
 * called for each of the verb's options (those in `options`); return < 0 to fail with usage. */
typedef int (*CliOptionHandler)(int opt, const char *arg, void *userdata);
/* Parses argv (argv[0] is the verb); returns the index of the first positional argument, or -EINVAL after
 * printing a usage error. */
int cli_parse_options(int argc, char **argv, CliContext *ctx, const struct option *options,
                      const char *shortopts, CliOptionHandler on_option, void *userdata);

/* Prints "protokube VERB: message" to stderr and returns EXIT_USAGE. */
int cli_usage_error(const char *verb, const char *format, ...) __attribute__((format(printf, 2, 3)));

#define VERB(name) int verb_##name(int argc, char **argv, CliContext *ctx)
VERB(run);
VERB(once);
VERB(plan);
VERB(render);
VERB(validate);
VERB(volumes);
VERB(dns);
VERB(pool);
VERB(wipe);

/* The cluster as the volume provider sees it (masters, who holds which etcd member), for `dns` and the
 * daemon. Implemented in cli/observe.c. Caller frees. */
typedef struct ClusterSpec ClusterSpec;
typedef struct ClusterView ClusterView;
int cli_observe_view(CliContext *ctx, const ClusterSpec *spec, ClusterView **ret);

/* The node-local settings as the daemon layer takes them (verb-run.c). */
#include "daemon/pass.h"
NodeSettings cli_node_settings(const CliContext *ctx);
