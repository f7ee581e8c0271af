/* SPDX-License-Identifier: Apache-2.0 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "basic/trace.h"
#include "cli/cli.h"
#include "components/component-file.h"
#include "model/conventions.h"
#include "pivot/pivot-record.h"
#include "shared/netlink-route.h"
#include "version.h"

static int verb_version(CliContext *ctx, char **args) {
        printf("protokube %s\n", PROTOKUBE_VERSION);
        return EXIT_SUCCESS;
}

static const CliVerb dns_verbs[] = {
        { .name = "sync",
          .run = verb_dns_sync,
          .help = "publish the desired records once through the spec's provider",
          .flags = CLI_NEEDS_SPEC | CLI_NODE_OPTIONS,
          .options = verb_dns_sync_options },
        {},
};

/* The pool's sub-verbs take the node options for --zone and --pool. */
static const CliVerb pool_verbs[] = {
        { .name = "create",
          .run = verb_pool_create,
          .help = "create a volume (a sparse image file) of --size in --zone; prints its ID",
          .flags = CLI_NODE_OPTIONS,
          .options = verb_pool_create_options },
        { .name = "add-device",
          .run = verb_pool_add_device,
          .help = "add an existing block device as a volume in --zone; prints its ID",
          .flags = CLI_NODE_OPTIONS,
          .options = verb_pool_add_device_options,
          .args_synopsis = "DEVICE",
          .min_args = 1,
          .max_args = 1 },
        { .name = "list",
          .run = verb_pool_list,
          .help = "list the volumes, their attachments and tags",
          .flags = CLI_NODE_OPTIONS },
        { .name = "detach",
          .run = verb_pool_detach,
          .help = "detach a volume from the node that holds it",
          .flags = CLI_NODE_OPTIONS,
          .args_synopsis = "ID",
          .min_args = 1,
          .max_args = 1 },
        { .name = "release-node",
          .run = verb_pool_release_node,
          .help = "release every volume a (dead) node holds",
          .flags = CLI_NODE_OPTIONS,
          .args_synopsis = "NODE",
          .min_args = 1,
          .max_args = 1 },
        {},
};

/* The state store by URL (file:///DIR, s3://BUCKET[/PREFIX], gs://BUCKET[/PREFIX]); no spec needed. */
static const CliVerb store_verbs[] = {
        { .name = "get",
          .run = verb_store_get,
          .help = "print an object (or write it to --file)",
          .options = verb_store_get_options,
          .args_synopsis = "URL KEY",
          .min_args = 2,
          .max_args = 2 },
        { .name = "put",
          .run = verb_store_put,
          .help = "store an object from --file or stdin, replacing it",
          .options = verb_store_put_options,
          .args_synopsis = "URL KEY",
          .min_args = 2,
          .max_args = 2 },
        { .name = "put-if-absent",
          .run = verb_store_put_if_absent,
          .help = "store an object unless the key exists; prints 'created KEY' or 'exists KEY'",
          .options = verb_store_put_options,
          .args_synopsis = "URL KEY",
          .min_args = 2,
          .max_args = 2 },
        { .name = "list",
          .run = verb_store_list,
          .help = "print the keys under PREFIX (default all), sorted",
          .args_synopsis = "URL [PREFIX]",
          .min_args = 1,
          .max_args = 2 },
        { .name = "delete",
          .run = verb_store_delete,
          .help = "delete an object (absent is fine)",
          .args_synopsis = "URL KEY",
          .min_args = 2,
          .max_args = 2 },
        {},
};

/* The PKI (docs/pki.md): the keystore in the state store; the node's certificates come with the pass. */
static const CliVerb pki_verbs[] = {
        { .name = "demo-issue",
          .run = verb_pki_demo_issue,
          .help =
              "create a CA and issue a leaf into --out DIR (reissued only when the renewal rules say so)",
          .options = verb_pki_demo_issue_options },
        { .name = "init",
          .run = verb_pki_init,
          .help = "create the cluster's CAs and service-account key in --store URL unless there; print "
                  "each one's SHA-256 fingerprint and whether it was created or read",
          .options = verb_pki_init_options },
        { .name = "show",
          .run = verb_pki_show,
          .help = "the keystore and this node's certificates: subject, SANs, issuer, expiry, next action",
          .flags = CLI_NEEDS_SPEC | CLI_NODE_OPTIONS },
        { .name = "renew",
          .run = verb_pki_renew,
          .help = "one pass that reissues every certificate of this node (the components restart with them)",
          .flags = CLI_NEEDS_SPEC | CLI_NEEDS_ROOT | CLI_NODE_OPTIONS },
        {},
};

/* The Kubernetes API (docs/kube-client.md), as protokube's own identity unless --kubeconfig says. */
static const CliVerb kube_verbs[] = {
        { .name = "apply",
          .run = verb_kube_apply,
          .help = "server-side apply of the objects in FILEs ('-': stdin; YAML documents or JSON)",
          .options = verb_kube_options,
          .args_synopsis = "FILE...",
          .min_args = 1,
          .max_args = 64 },
        { .name = "get",
          .run = verb_kube_get,
          .help = "print an object as JSON",
          .options = verb_kube_options,
          .args_synopsis = "APIVERSION KIND [NS/]NAME",
          .min_args = 3,
          .max_args = 3 },
        { .name = "delete",
          .run = verb_kube_delete,
          .help = "delete an object (with --uid/--resource-version: only that one)",
          .options = verb_kube_delete_options,
          .args_synopsis = "APIVERSION KIND [NS/]NAME",
          .min_args = 3,
          .max_args = 3 },
        { .name = "readyz",
          .run = verb_kube_readyz,
          .help = "probe the API server's /readyz (once, or until ready with --wait)",
          .options = verb_kube_probe_options },
        { .name = "livez",
          .run = verb_kube_livez,
          .help = "probe /livez (once, or until live with --wait)",
          .options = verb_kube_probe_options },
        {},
};

/* Bootstrap tokens for workers to join with (docs/workers.md), through the API like `kube`. */
static const CliVerb token_verbs[] = {
        { .name = "create",
          .run = verb_token_create,
          .help =
              "create a bootstrap token; print it (once) and the pin of the CA the API server is trusted by",
          .options = verb_token_create_options },
        { .name = "list",
          .run = verb_token_list,
          .help = "list the bootstrap tokens: id, expiry, usages, groups, description (never the secret)",
          .options = verb_token_options },
        { .name = "delete",
          .run = verb_token_delete,
          .help = "delete a bootstrap token (its Secret), or with --expired every expired one",
          .options = verb_token_delete_options,
          .args_synopsis = "[ID]",
          .max_args = 1 },
        {},
};

/* A worker's side of the join (docs/workers.md, "Where a join stands"). */
static const CliVerb join_verbs[] = {
        { .name = "plan",
          .run = verb_join_plan,
          .help = "a worker's join stage by stage (dns, token, pin, csr, node) and the one that blocks; "
                  "exit 0 joined, 3 waiting, 1 refused",
          .flags = CLI_NEEDS_SPEC | CLI_NODE_OPTIONS },
        {},
};

/* The approver and signer of kubelet CSRs (docs/workers.md). */
static const CliVerb csr_verbs[] = {
        { .name = "approve",
          .run = verb_csr_approve,
          .help = "one round: bind, approve and sign what the rules allow; print each outcome and why",
          .flags = CLI_NEEDS_SPEC,
          .options = verb_csr_approve_options },
        {},
};

/* etcd's backups in the state store (docs/etcd-backups.md). */
static const CliVerb etcd_verbs[] = {
        { .name = "backups",
          .run = verb_etcd_backups,
          .help = "list the backups of CLUSTER (default every etcd cluster): timestamp, size, sha256, taker",
          .flags = CLI_NEEDS_SPEC,
          .args_synopsis = "[CLUSTER]",
          .max_args = 1 },
        { .name = "backup",
          .run = verb_etcd_backup,
          .help = "take a backup of CLUSTER now from this node's member and store it",
          .flags = CLI_NEEDS_SPEC | CLI_NODE_OPTIONS,
          .options = verb_etcd_backup_options,
          .args_synopsis = "CLUSTER",
          .min_args = 1,
          .max_args = 1 },
        { .name = "download",
          .run = verb_etcd_download,
          .help = "write a backup's snapshot (default the newest) to --out FILE, checked",
          .flags = CLI_NEEDS_SPEC,
          .options = verb_etcd_download_options,
          .args_synopsis = "CLUSTER [TIMESTAMP]",
          .min_args = 1,
          .max_args = 2 },
        { .name = "restore",
          .run = verb_etcd_restore,
          .help = "restore every member of CLUSTER from a backup (default the newest complete one)",
          .flags = CLI_NEEDS_SPEC,
          .options = verb_etcd_restore_options,
          .args_synopsis = "CLUSTER [SNAPSHOT]",
          .min_args = 1,
          .max_args = 2 },
        {},
};

/* The pivot to a self-hosted control plane (docs/pivot.md). */
static const CliVerb pivot_verbs[] = {
        { .name = "plan",
          .run = verb_pivot_plan,
          .help = "print the pivot's next step and why; change nothing",
          .flags = CLI_NEEDS_SPEC | CLI_NEEDS_ROOT | CLI_NODE_OPTIONS },
        {},
};

/* protokube's routes in the main table (shared/netlink-route.h): list (the default), set. */
static const CliVerb routes_verbs[] = {
        { .name = "set",
          .run = verb_routes_set,
          .help = "make protokube's routes exactly those given (never another owner's)",
          .args_synopsis = "[PREFIX=GATEWAY...]",
          .max_args = NETLINK_ROUTES_MAX },
        {},
};

/* A new verb is one row here (and its function and option table declared in cli.h). */
static const CliVerb verbs[] = {
        { .name = "run",
          .run = verb_run,
          .help = "reconcile until SIGTERM/SIGINT; SIGHUP reloads the spec",
          .flags = CLI_NEEDS_SPEC | CLI_NEEDS_ROOT | CLI_NODE_OPTIONS },
        { .name = "once",
          .run = verb_once,
          .help = "one pass; exit 0 converged, 1 error, 2 usage, 3 not yet converged",
          .flags = CLI_NEEDS_SPEC | CLI_NEEDS_ROOT | CLI_NODE_OPTIONS,
          .options = verb_once_options },
        { .name = "plan",
          .run = verb_plan,
          .help = "print what a pass would do; change nothing",
          .flags = CLI_NEEDS_SPEC | CLI_NODE_OPTIONS },
        { .name = "render",
          .run = verb_render,
          .help = "write the control-plane static pods (--out DIR, default stdout)",
          .flags = CLI_NEEDS_SPEC,
          .options = verb_render_options },
        { .name = "validate",
          .run = verb_validate,
          .help = "check the spec; errors as FILE:LINE:COL: message",
          .flags = CLI_NEEDS_SPEC },
        { .name = "volumes",
          .run = verb_volumes,
          .help = "list this cluster's volumes and why each is or isn't eligible",
          .flags = CLI_NEEDS_SPEC | CLI_NODE_OPTIONS },
        { .name = "dns",
          .run = verb_dns,
          .help = "print the desired records ('dns sync' publishes them once)",
          .flags = CLI_NEEDS_SPEC | CLI_NODE_OPTIONS,
          .options = verb_dns_options,
          .sub_verbs = dns_verbs },
        { .name = "pool",
          .help = "the local volume pool: create, add-device, list, detach, release-node",
          .sub_verbs = pool_verbs },
        { .name = "wipe",
          .run = verb_wipe,
          .help = "erase a device (wipefs -a and zeros) so that a pass may format it; never implicit",
          .flags = CLI_NEEDS_ROOT,
          .options = verb_wipe_options,
          .args_synopsis = "DEVICE",
          .min_args = 1,
          .max_args = 1 },
        { .name = "store",
          .help = "the state store: get, put, put-if-absent, list, delete",
          .sub_verbs = store_verbs },
        { .name = "pki",
          .run = verb_pki_show,
          .help = "the cluster's PKI: show (the default), renew, init, demo-issue",
          .flags = CLI_NEEDS_SPEC | CLI_NODE_OPTIONS,
          .sub_verbs = pki_verbs },
        { .name = "kube",
          .help = "the Kubernetes API: apply, get, delete, readyz, livez",
          .sub_verbs = kube_verbs },
        { .name = "token",
          .help = "bootstrap tokens for workers: create, list, delete",
          .sub_verbs = token_verbs },
        { .name = "join",
          .help = "a worker's join: 'join plan' names the stage that blocks",
          .sub_verbs = join_verbs },
        { .name = "csr",
          .run = verb_csr,
          .help = "the kubelet CSRs and what the approver decides and why ('csr approve': one round)",
          .flags = CLI_NEEDS_SPEC,
          .options = verb_csr_options,
          .sub_verbs = csr_verbs },
        { .name = "etcd",
          .help = "etcd's backups: backups, backup, download, restore",
          .sub_verbs = etcd_verbs },
        { .name = "checkpoint",
          .run = verb_checkpoint,
          .help = "keep, activate, retire this master's checkpoint",
          .flags = CLI_NEEDS_ROOT,
          .options = verb_checkpoint_options },
        { .name = "pivot",
          .run = verb_pivot,
          .help = "hand the control plane to the cluster (self-hosted); 'pivot plan': the next step",
          .flags = CLI_NEEDS_SPEC | CLI_NEEDS_ROOT | CLI_NODE_OPTIONS,
          .options = verb_pivot_options,
          .sub_verbs = pivot_verbs },
        { .name = "routes",
          .run = verb_routes,
          .help = "list protokube's routes (protocol 0xb5, main table); 'routes set': make them those given",
          .sub_verbs = routes_verbs },
        { .name = "version", .run = verb_version, .help = "print the version" },
        {},
};

static int parse_log_level(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        LogLevel l = log_level_from_string(value);
        if (l < 0)
                return cli_usage_error("", "invalid %s '%s' (error, warning, info, debug)", source, value),
                       -EINVAL;
        log_set_level(l);
        return 0;
}

static int parse_log_format(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        LogFormat f = log_format_from_string(value);
        if (f < 0)
                return cli_usage_error("", "invalid %s '%s' (text, json)", source, value), -EINVAL;
        log_set_format(f);
        return 0;
}

static int parse_version(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        ctx->version = true;
        return 0;
}

/* Before the verb: the common options (-c FILE, --help) and these. */
static const CliOption global_options[] = {
        { .name = "log-level",
          .arg_name = "LEVEL",
          .help = "error, warning, info (default) or debug",
          .parse = parse_log_level },
        { .name = "log-format",
          .arg_name = "FORMAT",
          .help = "text (default) or json",
          .parse = parse_log_format },
        { .name = "version", .help = "print the version and exit", .parse = parse_version },
        { .name = "state-dir",
          .arg_name = "DIR",
          .env = "PROTOKUBE_STATE_DIR",
          .help =
              "protokube's own state: the pivot's record, the checkpoint (default " STATE_DIR_DEFAULT ")",
          .parse = cli_option_string,
          .field = offsetof(CliContext, node.state_dir) },
        {},
};

static const CliVerb global_verb = {
        .name = "",
        .help = "brings up and keeps a Kubernetes control plane",
        .options = global_options,
};

static void help(void) {
        const CliOption *tables[] = { cli_common_options, global_options };
        printf("protokube %s — %s\n\n"
               "usage: protokube [GLOBAL OPTIONS] VERB [OPTIONS]\n\n"
               "verbs ('protokube VERB --help' for a verb's options):\n",
               PROTOKUBE_VERSION, global_verb.help);
        for (const CliVerb *v = verbs; v->name; v++)
                printf("  %-10s %s\n", v->name, v->help);
        printf("\nglobal ");
        cli_options_help(tables, ELEMENTSOF(tables), stdout);
}

int main(int argc, char **argv) {
        CliContext ctx = {
                .node = {
                        .manifest_dir = KUBELET_STATIC_POD_PATH_DEFAULT,
                        .mount_root = "/mnt",
                        .pool_dir = "/var/lib/protokube/pool",
                        .state_dir = STATE_DIR_DEFAULT,
                        .config_dir = COMPONENT_CONFIG_ROOT,
                        .kubelet_dir = KUBELET_DIR_DEFAULT,
                },
                .listen = "127.0.0.1:9797",
                .interval = 10 * USEC_PER_SEC,
        };
        int r;

        trace_init();
        trace_mark("main");
        if (cli_options_from_environment(cli_common_options, &ctx) < 0 ||
            cli_options_from_environment(global_options, &ctx) < 0)
                return EXIT_USAGE;
        r = cli_parse_global_options(&global_verb, argc, argv, &ctx);
        if (r < 0)
                return EXIT_USAGE;
        if (ctx.help) {
                help();
                return EXIT_SUCCESS;
        }
        if (ctx.version)
                return verb_version(&ctx, NULL);
        if (r >= argc) {
                help();
                return EXIT_USAGE;
        }
        if (streq(argv[r], "help")) {
                help();
                return EXIT_SUCCESS;
        }
        for (const CliVerb *v = verbs; v->name; v++)
                if (streq(argv[r], v->name)) {
                        int ret = cli_run_verb(v, argc - r, argv + r, &ctx);
                        trace_mark("exit");
                        trace_dump(stderr);
                        return ret;
                }
        return cli_usage_error("", "unknown verb '%s' (see --help)", argv[r]);
}
