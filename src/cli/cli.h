/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The CLI spine (ARCHITECTURE.md, CLI contract). main.c holds the verb table; spine.c parses a verb's
 * options from the tables its row names, prints its --help from the same tables, checks what the row asks
 * for (a spec, root) and calls the verb with the NodeSettings built. A verb's function only does its work.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "basic/time-util.h"
#include "daemon/node-settings.h"
#include "model/pki-layout.h"

enum {
        EXIT_CONVERGED = 0,
        EXIT_ERROR = 1,
        EXIT_USAGE = 2,
        EXIT_NOT_CONVERGED = 3,
};

typedef struct CliVerb CliVerb;

typedef struct CliContext {
        const char *name;               /* "once", "pool create": for messages */
        const char *spec_path;          /* -c FILE, PROTOKUBE_CONFIG */
        NodeSettings node;              /* the node options, as the daemon layer takes them */
        const char *internal_ip_source; /* where node.internal_ip came from ("--internal-ip"), for errors */
        const char *external_ip_source;
        const char *interval_text, *interval_source; /* checked with the addresses, after parsing */
        usec_t interval;                             /* default 10s */
        const char *listen;                          /* default 127.0.0.1:9797 */
        bool help, version;
} CliContext;

typedef struct CliOption CliOption;
/* Takes an option's value (NULL for an option without argument) from `source` ("--zone" or
 * "PROTOKUBE_ZONE"). Returns < 0 after printing a usage error that names the source and the value. */
typedef int (*CliOptionParser)(const CliOption *o, CliContext *ctx, const char *value, const char *source);

struct CliOption {
        const char *name;     /* long name without "--"; NULL ends a table */
        char short_name;      /* 'c', or 0 */
        const char *arg_name; /* "FILE" in the help; NULL: the option takes no argument */
        const char *env;      /* PROTOKUBE_...; NULL: none */
        const char *help;
        CliOptionParser parse;
        size_t field; /* for cli_option_string: offsetof(CliContext, ...) of a const char * */
};

/* Stores the value as it is in the CliContext field o->field. */
int cli_option_string(const CliOption *o, CliContext *ctx, const char *value, const char *source);

typedef enum CliVerbFlags {
        CLI_NEEDS_SPEC = 1 << 0,   /* "no cluster spec given" unless -c FILE or PROTOKUBE_CONFIG */
        CLI_NEEDS_ROOT = 1 << 1,   /* refused unless the effective uid is 0 */
        CLI_NODE_OPTIONS = 1 << 2, /* takes cli_node_options (and their PROTOKUBE_* variables) */
} CliVerbFlags;

struct CliVerb {
        const char *name; /* NULL ends a table */
        /* args: the positional arguments, NULL-terminated. Returns an exit code. NULL: only sub-verbs. */
        int (*run)(CliContext *ctx, char **args);
        const char *help; /* one line */
        CliVerbFlags flags;
        const CliOption *options;  /* the verb's own; NULL or ended by {} */
        const char *args_synopsis; /* "DEVICE"; NULL: no positional arguments */
        unsigned min_args, max_args;
        const CliVerb *sub_verbs; /* NULL or ended by {}; chosen by the first positional argument */
};

extern const CliOption cli_common_options[]; /* every verb: -c/--config, -h/--help */
extern const CliOption cli_node_options[];   /* verbs with CLI_NODE_OPTIONS */
/* An option's value that becomes a pod's hostPath or a kubelet flag: an absolute directory, else a usage
 * error naming the option. */
int cli_parse_absolute_dir(const CliOption *o, CliContext *ctx, const char *value, const char *source);

/* Sets ctx fields from the environment variables of the options in `table`. Returns < 0 on a usage error. */
int cli_options_from_environment(const CliOption *table, CliContext *ctx);

/* Parses the options before the verb (argv[0] is the program), with the common options and global->options.
 * Returns the index of the verb in argv (argc if none), or -1 after printing a usage error. */
int cli_parse_global_options(const CliVerb *global, int argc, char **argv, CliContext *ctx);

/* Runs `verb`: argv[0] is its name, the rest its options, positional arguments and sub-verb, in any order.
 * Returns the exit code. */
int cli_run_verb(const CliVerb *verb, int argc, char **argv, CliContext *ctx);

/* Prints "protokube VERB: message" to stderr and returns EXIT_USAGE. */
int cli_usage_error(const char *verb, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* The help of an option table: one line per option (its argument name and help), then the environment
 * variables. Also used by `protokube --help` for the global options. */
void cli_options_help(const CliOption *const *tables, size_t n_tables, FILE *f);

/* The verbs (one file each). */
int verb_run(CliContext *ctx, char **args);
int verb_once(CliContext *ctx, char **args);
int verb_plan(CliContext *ctx, char **args);
int verb_join_plan(CliContext *ctx, char **args);
int verb_render(CliContext *ctx, char **args);
int verb_validate(CliContext *ctx, char **args);
int verb_volumes(CliContext *ctx, char **args);
int verb_dns(CliContext *ctx, char **args);
int verb_dns_sync(CliContext *ctx, char **args);
int verb_pool_create(CliContext *ctx, char **args);
int verb_pool_add_device(CliContext *ctx, char **args);
int verb_pool_list(CliContext *ctx, char **args);
int verb_pool_detach(CliContext *ctx, char **args);
int verb_pool_release_node(CliContext *ctx, char **args);
int verb_wipe(CliContext *ctx, char **args);
int verb_store_get(CliContext *ctx, char **args);
int verb_store_put(CliContext *ctx, char **args);
int verb_store_put_if_absent(CliContext *ctx, char **args);
int verb_store_list(CliContext *ctx, char **args);
int verb_store_delete(CliContext *ctx, char **args);
int verb_pki_demo_issue(CliContext *ctx, char **args);
int verb_pki_init(CliContext *ctx, char **args);
int verb_pki_show(CliContext *ctx, char **args);
int verb_pki_renew(CliContext *ctx, char **args);
int verb_kube_apply(CliContext *ctx, char **args);
int verb_kube_get(CliContext *ctx, char **args);
int verb_kube_delete(CliContext *ctx, char **args);
int verb_kube_readyz(CliContext *ctx, char **args);
int verb_kube_livez(CliContext *ctx, char **args);
int verb_token_create(CliContext *ctx, char **args);
int verb_token_list(CliContext *ctx, char **args);
int verb_token_delete(CliContext *ctx, char **args);
int verb_csr(CliContext *ctx, char **args);
int verb_csr_approve(CliContext *ctx, char **args);
int verb_etcd_backups(CliContext *ctx, char **args);
int verb_etcd_backup(CliContext *ctx, char **args);
int verb_etcd_download(CliContext *ctx, char **args);
int verb_etcd_restore(CliContext *ctx, char **args);
int verb_checkpoint(CliContext *ctx, char **args);
int verb_pivot(CliContext *ctx, char **args);
int verb_pivot_plan(CliContext *ctx, char **args);
int verb_routes(CliContext *ctx, char **args);
int verb_routes_set(CliContext *ctx, char **args);

/* The verbs' own options. */
extern const CliOption verb_render_options[];
extern const CliOption verb_dns_options[];
extern const CliOption verb_dns_sync_options[];
extern const CliOption verb_once_options[];
extern const CliOption verb_pool_create_options[];
extern const CliOption verb_pool_add_device_options[];
extern const CliOption verb_wipe_options[];
extern const CliOption verb_store_get_options[];
extern const CliOption verb_store_put_options[];
extern const CliOption verb_pki_demo_issue_options[];
extern const CliOption verb_pki_init_options[];
extern const CliOption verb_kube_options[];
extern const CliOption verb_kube_delete_options[];
extern const CliOption verb_kube_probe_options[];
extern const CliOption verb_token_create_options[];
extern const CliOption verb_token_options[];
extern const CliOption verb_token_delete_options[];
extern const CliOption verb_csr_options[];
extern const CliOption verb_csr_approve_options[];
extern const CliOption verb_etcd_backup_options[];
extern const CliOption verb_etcd_download_options[];
extern const CliOption verb_etcd_restore_options[];
extern const CliOption verb_checkpoint_options[];
extern const CliOption verb_pivot_options[];

/* The Kubernetes API client's options (protokube's kubeconfig unless told otherwise), shared by the verbs
 * that talk to the API (kube, token, csr); cli_kube_open() makes the client they say, and
 * cli_kube_deadline() is a call's deadline (--timeout). Implemented in cli/verb-kube.c. */
typedef struct KubeClient KubeClient;
int cli_kube_option(const CliOption *o, CliContext *ctx, const char *value, const char *source);
int cli_kube_open(KubeClient **ret);
usec_t cli_kube_deadline(void);
// clang-format off
#define CLI_KUBE_CLIENT_OPTIONS                                                                                \
        { .name = "kubeconfig", .arg_name = "FILE", .env = "PROTOKUBE_KUBECONFIG",                             \
          .help = "the kubeconfig (default " PKI_DIR_DEFAULT "/protokube/kubeconfig: protokube's identity)",   \
          .parse = cli_kube_option },                                                                          \
        { .name = "server", .arg_name = "URL", .help = "the API server, instead of the kubeconfig's",          \
          .parse = cli_kube_option },                                                                          \
        { .name = "certificate-authority", .arg_name = "FILE",                                                 \
          .help = "the CA bundle to trust, instead of the kubeconfig's", .parse = cli_kube_option },           \
        { .name = "client-certificate", .arg_name = "FILE",                                                    \
          .help = "the client certificate, instead of the kubeconfig's", .parse = cli_kube_option },           \
        { .name = "client-key", .arg_name = "FILE", .help = "its key", .parse = cli_kube_option },             \
        { .name = "timeout", .arg_name = "DURATION",                                                           \
          .help = "the deadline of each call, retries included (default 60s)", .parse = cli_kube_option }
// clang-format on

/* The cluster as the volume provider sees it (masters, who holds which etcd member), for `dns` and the
 * daemon. Implemented in cli/observe.c. Caller frees. */
typedef struct ClusterSpec ClusterSpec;
typedef struct ClusterView ClusterView;
/* Loads the spec of -c FILE: spec errors printed as they are (FILE:LINE:COL: message, one a line, so
 * editors can jump to them), other failures logged. PK_ESPEC or -errno on failure. */
int cli_load_spec(const CliContext *ctx, ClusterSpec **ret);
int cli_observe_view(CliContext *ctx, const ClusterSpec *spec, ClusterView **ret);
