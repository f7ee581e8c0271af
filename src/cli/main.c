/* SPDX-License-Identifier: Apache-2.0 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "basic/parse-util.h"
#include "cli/cli.h"
#include "config.h"

static const struct {
        const char *name;
        int (*run)(int argc, char **argv, CliContext *ctx);
        const char *help;
} verbs[] = {
        { "run", verb_run, "reconcile until SIGTERM/SIGINT; SIGHUP reloads the spec" },
        { "once", verb_once, "one pass; exit 0 converged, 1 error, 2 usage, 3 not yet converged" },
        { "plan", verb_plan, "print what a pass would do; change nothing" },
        { "render", verb_render, "write the control-plane static pods (--out DIR, default stdout)" },
        { "validate", verb_validate, "check the spec; errors as FILE:LINE:COL: message" },
        { "volumes", verb_volumes, "list this cluster's volumes and why each is or isn't eligible" },
        { "dns", verb_dns, "print the desired records ('dns sync' publishes them once)" },
        { "pool", verb_pool, "the local volume pool: create, add-device, list, detach, release-node" },
        { "wipe", verb_wipe, "DEVICE --yes-destroy-data: erase a device so that a pass may format it" },
};

static void help(void) {
        printf("protokube %s — brings up and keeps a Kubernetes control plane\n\n"
               "usage: protokube [-c FILE] [--log-level L] [--log-format text|json] VERB [OPTIONS]\n\n",
               PROTOKUBE_VERSION);
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                printf("  %-10s %s\n", verbs[i].name, verbs[i].help);
        printf("  %-10s %s\n\n", "version", "print the version");
        printf("node-local options (also PROTOKUBE_<NAME> in the environment):\n"
               "  --node-name --zone --internal-ip --external-ip --manifest-dir --mount-root --pool\n"
               "  --interval --listen\n"
               "PROTOKUBE_MACHINE_ID_FILE: this machine's machine-id(5) file (default /etc/machine-id)\n");
}

static void context_from_environment(CliContext *ctx) {
        static const struct {
                const char *env;
                size_t offset;
        } table[] = {
                { "PROTOKUBE_CONFIG", offsetof(CliContext, spec_path) },
                { "PROTOKUBE_NODE_NAME", offsetof(CliContext, node_name) },
                { "PROTOKUBE_ZONE", offsetof(CliContext, zone) },
                { "PROTOKUBE_INTERNAL_IP", offsetof(CliContext, internal_ip) },
                { "PROTOKUBE_EXTERNAL_IP", offsetof(CliContext, external_ip) },
                { "PROTOKUBE_MANIFEST_DIR", offsetof(CliContext, manifest_dir) },
                { "PROTOKUBE_MOUNT_ROOT", offsetof(CliContext, mount_root) },
                { "PROTOKUBE_POOL", offsetof(CliContext, pool_dir) },
                { "PROTOKUBE_LISTEN", offsetof(CliContext, listen) },
                { "PROTOKUBE_MACHINE_ID_FILE", offsetof(CliContext, machine_id_file) },
        };
        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                const char *v = getenv(table[i].env);
                if (!isempty(v))
                        *(const char **)((char *)ctx + table[i].offset) = v;
        }
        if (ctx->internal_ip)
                ctx->internal_ip_source = "PROTOKUBE_INTERNAL_IP";
        if (ctx->external_ip)
                ctx->external_ip_source = "PROTOKUBE_EXTERNAL_IP";
        const char *iv = getenv("PROTOKUBE_INTERVAL");
        usec_t u;
        if (!isempty(iv) && parse_duration_usec(iv, &u) >= 0 && u > 0)
                ctx->interval = u;
}

enum { OPT_LOG_LEVEL = 0x100, OPT_LOG_FORMAT, OPT_VERSION, OPT_HELP };

static int parse_global(int argc, char **argv, CliContext *ctx) {
        static const struct option options[] = {
                { "config", required_argument, NULL, 'c' },
                { "log-level", required_argument, NULL, OPT_LOG_LEVEL },
                { "log-format", required_argument, NULL, OPT_LOG_FORMAT },
                { "version", no_argument, NULL, OPT_VERSION },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        int c;

        opterr = 0;
        while ((c = getopt_long(argc, argv, "+c:h", options, NULL)) >= 0) {
                switch (c) {
                case 'c':
                        ctx->spec_path = optarg;
                        break;
                case OPT_LOG_LEVEL: {
                        LogLevel l = log_level_from_string(optarg);
                        if (l < 0)
                                return cli_usage_error(
                                    "", "invalid --log-level '%s' (error, warning, info, debug)", optarg);
                        log_set_level(l);
                        break;
                }
                case OPT_LOG_FORMAT: {
                        LogFormat f = log_format_from_string(optarg);
                        if (f < 0)
                                return cli_usage_error("", "invalid --log-format '%s' (text, json)", optarg);
                        log_set_format(f);
                        break;
                }
                case OPT_VERSION:
                        printf("protokube %s\n", PROTOKUBE_VERSION);
                        exit(EXIT_SUCCESS);
                case 'h':
                        help();
                        exit(EXIT_SUCCESS);
                default:
                        return cli_usage_error("", "unknown option '%s' (see --help)", argv[optind - 1]);
                }
        }
        return -1;
}

int main(int argc, char **argv) {
        CliContext ctx = {
                .manifest_dir = "/etc/kubernetes/manifests",
                .mount_root = "/mnt",
                .pool_dir = "/var/lib/protokube/pool",
                .listen = "127.0.0.1:9797",
                .interval = 10 * USEC_PER_SEC,
        };
        int r;

        context_from_environment(&ctx);
        r = parse_global(argc, argv, &ctx);
        if (r >= 0)
                return r;
        if (optind >= argc) {
                help();
                return EXIT_USAGE;
        }
        const char *verb = argv[optind];
        if (streq(verb, "version")) {
                printf("protokube %s\n", PROTOKUBE_VERSION);
                return EXIT_SUCCESS;
        }
        if (streq(verb, "help")) {
                help();
                return EXIT_SUCCESS;
        }
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(verb, verbs[i].name))
                        return verbs[i].run(argc - optind, argv + optind, &ctx);
        return cli_usage_error("", "unknown verb '%s' (see --help)", verb);
}
