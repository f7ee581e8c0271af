/* SPDX-License-Identifier: Apache-2.0 */
/* The option tables every verb shares, their parsers, and the help text generated from any option table. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "cli/cli.h"
#include "join/join-pin.h"

int cli_usage_error(const char *verb, const char *format, ...) {
        va_list ap;
        fprintf(stderr, "protokube %s: ", verb);
        va_start(ap, format);
        vfprintf(stderr, format, ap);
        va_end(ap);
        fputc('\n', stderr);
        return EXIT_USAGE;
}

int cli_option_string(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        *(const char **)((char *)ctx + o->field) = value;
        return 0;
}

static int parse_help(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        ctx->help = true;
        return 0;
}

/* Addresses and the interval are stored with where they came from and checked after parsing (spine.c), so
 * that an option overrides a bad environment value instead of failing on it. */
static int parse_internal_ip(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        ctx->node.internal_ip = value;
        ctx->internal_ip_source = source;
        return 0;
}

static int parse_external_ip(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        ctx->node.external_ip = value;
        ctx->external_ip_source = source;
        return 0;
}

/* The roles the node options accept, "master, worker", from the roles' own names (caller frees). */
static char *role_names(void) {
        _cleanup_strv_free_ char **names = strv_new(NULL);
        for (int i = 0; names && i < _NODE_ROLE_MAX; i++)
                if (strv_extend(&names, node_role_to_string((NodeRole)i)) < 0)
                        return NULL;
        return names ? strv_join(names, ", ") : NULL;
}

static int parse_role(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        NodeRole r = node_role_from_string(value);
        if (r < 0) {
                _cleanup_free_ char *roles = role_names();
                return cli_usage_error(ctx->name ?: "", "invalid %s '%s' (the roles: %s)", source, value,
                                       strna(roles)),
                       -EINVAL;
        }
        ctx->node.role = r;
        return 0;
}

/* A directory whose paths go into pods' hostPath volumes and the kubelet's flags: absolute, or kubelet
 * would refuse them (or take them relative to its own directory). */
int cli_parse_absolute_dir(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        if (value[0] != '/')
                return cli_usage_error(ctx->name ?: "", "invalid %s '%s': an absolute directory is needed",
                                       source, value),
                       -EINVAL;
        return cli_option_string(o, ctx, value, source);
}

static int parse_ca_pin(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        if (!join_pin_valid(value))
                return cli_usage_error(ctx->name ?: "", "invalid %s '%s': sha256: and 64 hex digits", source,
                                       value),
                       -EINVAL;
        ctx->node.ca_pin = value;
        return 0;
}

static int parse_interval(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        ctx->interval_text = value;
        ctx->interval_source = source;
        return 0;
}

const CliOption cli_common_options[] = {
        { .name = "config",
          .short_name = 'c',
          .arg_name = "FILE",
          .env = "PROTOKUBE_CONFIG",
          .help = "the cluster spec",
          .parse = cli_option_string,
          .field = offsetof(CliContext, spec_path) },
        { .name = "help", .short_name = 'h', .help = "print this help and exit", .parse = parse_help },
        {},
};

const CliOption cli_node_options[] = {
        { .name = "role",
          .arg_name = "ROLE",
          .env = "PROTOKUBE_ROLE",
          .help = "what this node does: master (the default: etcd volumes, DNS, the control plane) or "
                  "worker (the node's DNS view of the API and its kubelet's bootstrap)",
          .parse = parse_role },
        { .name = "node-name",
          .arg_name = "NAME",
          .env = "PROTOKUBE_NODE_NAME",
          .help = "this node's name (default: from the volume provider)",
          .parse = cli_option_string,
          .field = offsetof(CliContext, node.node_name) },
        { .name = "zone",
          .arg_name = "ZONE",
          .env = "PROTOKUBE_ZONE",
          .help = "this node's zone (default: from the volume provider)",
          .parse = cli_option_string,
          .field = offsetof(CliContext, node.zone) },
        { .name = "internal-ip",
          .arg_name = "ADDRESS",
          .env = "PROTOKUBE_INTERNAL_IP",
          .help = "this node's internal address, one IP literal",
          .parse = parse_internal_ip },
        { .name = "external-ip",
          .arg_name = "ADDRESS",
          .env = "PROTOKUBE_EXTERNAL_IP",
          .help = "this node's external address, one IP literal",
          .parse = parse_external_ip },
        { .name = "machine-id-file",
          .arg_name = "FILE",
          .env = "PROTOKUBE_MACHINE_ID_FILE",
          .help = "this machine's machine-id(5) file (default /etc/machine-id)",
          .parse = cli_option_string,
          .field = offsetof(CliContext, node.machine_id_file) },
        { .name = "manifest-dir",
          .arg_name = "DIR",
          .env = "PROTOKUBE_MANIFEST_DIR",
          .help = "the kubelet's static pod directory (default /etc/kubernetes/manifests)",
          .parse = cli_option_string,
          .field = offsetof(CliContext, node.manifest_dir) },
        { .name = "mount-root",
          .arg_name = "DIR",
          .env = "PROTOKUBE_MOUNT_ROOT",
          .help = "where volumes are mounted (default /mnt)",
          .parse = cli_option_string,
          .field = offsetof(CliContext, node.mount_root) },
        { .name = "pool",
          .arg_name = "DIR",
          .env = "PROTOKUBE_POOL",
          .help = "the local volume pool (default /var/lib/protokube/pool)",
          .parse = cli_option_string,
          .field = offsetof(CliContext, node.pool_dir) },
        { .name = "config-dir",
          .arg_name = "DIR",
          .env = "PROTOKUBE_CONFIG_DIR",
          .help = "where the components' configuration files go: DIR/kube-proxy/config.yaml, "
                  "DIR/kube-scheduler/config.yaml (default /var/lib)",
          .parse = cli_parse_absolute_dir,
          .field = offsetof(CliContext, node.config_dir) },
        { .name = "kubelet-dir",
          .arg_name = "DIR",
          .env = "PROTOKUBE_KUBELET_DIR",
          .help =
              "the kubelet's files: its configuration and flags, and a worker's bootstrap kubeconfig and "
              "CA (default /var/lib/kubelet)",
          .parse = cli_parse_absolute_dir,
          .field = offsetof(CliContext, node.kubelet_dir) },
        { .name = "token-file",
          .arg_name = "FILE",
          .env = "PROTOKUBE_TOKEN_FILE",
          .help =
              "a worker's bootstrap token ('protokube token create' on a master), in a file of mode 0600",
          .parse = cli_option_string,
          .field = offsetof(CliContext, node.token_file) },
        { .name = "ca-pin",
          .arg_name = "PIN",
          .env = "PROTOKUBE_CA_PIN",
          .help = "the cluster CA's pin, sha256:HEX ('protokube token create' prints it): a worker trusts "
                  "only an API whose CA has it",
          .parse = parse_ca_pin },
        { .name = "interval",
          .arg_name = "DURATION",
          .env = "PROTOKUBE_INTERVAL",
          .help = "time between passes of 'run' (default 10s; e.g. 500ms, 1m)",
          .parse = parse_interval },
        { .name = "listen",
          .arg_name = "HOST:PORT",
          .env = "PROTOKUBE_LISTEN",
          .help = "where 'run' serves /healthz and /metrics (default 127.0.0.1:9797)",
          .parse = cli_option_string,
          .field = offsetof(CliContext, listen) },
        {},
};

int cli_options_from_environment(const CliOption *table, CliContext *ctx) {
        for (const CliOption *o = table; o && o->name; o++) {
                if (!o->env)
                        continue;
                const char *v = getenv(o->env);
                if (isempty(v)) /* an empty variable is unset: PROTOKUBE_CONFIG= must not name "" */
                        continue;
                int r = o->parse(o, ctx, v, o->env);
                if (r < 0)
                        return r;
        }
        return 0;
}

static void option_synopsis(const CliOption *o, char *buf, size_t size) {
        char shortpart[8] = "    ";
        if (o->short_name)
                snprintf(shortpart, sizeof(shortpart), "-%c, ", o->short_name);
        snprintf(buf, size, "%s--%s%s%s", shortpart, o->name, o->arg_name ? " " : "", strempty(o->arg_name));
}

void cli_options_help(const CliOption *const *tables, size_t n_tables, FILE *f) {
        char syn[64];
        bool any_env = false;

        fprintf(f, "options:\n");
        for (size_t t = 0; t < n_tables; t++)
                for (const CliOption *o = tables[t]; o && o->name; o++) {
                        option_synopsis(o, syn, sizeof(syn));
                        fprintf(f, "  %-28s %s\n", syn, o->help);
                        any_env = any_env || o->env;
                }
        if (!any_env)
                return;
        fprintf(f, "\nenvironment (an option given on the command line wins):\n");
        for (size_t t = 0; t < n_tables; t++)
                for (const CliOption *o = tables[t]; o && o->name; o++)
                        if (o->env)
                                fprintf(f, "  %-28s like --%s\n", o->env, o->name);
}
