/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/in-addr-util.h"
#include "basic/macro.h"
#include "basic/parse-util.h"
#include "cli/cli.h"

enum {
        OPT_NODE_NAME = 0x1000,
        OPT_ZONE,
        OPT_INTERNAL_IP,
        OPT_EXTERNAL_IP,
        OPT_MANIFEST_DIR,
        OPT_MOUNT_ROOT,
        OPT_POOL,
        OPT_LISTEN,
        OPT_INTERVAL,
};

static const struct option node_options[] = {
        { "node-name", required_argument, NULL, OPT_NODE_NAME },
        { "zone", required_argument, NULL, OPT_ZONE },
        { "internal-ip", required_argument, NULL, OPT_INTERNAL_IP },
        { "external-ip", required_argument, NULL, OPT_EXTERNAL_IP },
        { "manifest-dir", required_argument, NULL, OPT_MANIFEST_DIR },
        { "mount-root", required_argument, NULL, OPT_MOUNT_ROOT },
        { "pool", required_argument, NULL, OPT_POOL },
        { "listen", required_argument, NULL, OPT_LISTEN },
        { "interval", required_argument, NULL, OPT_INTERVAL },
        { "config", required_argument, NULL, 'c' },
};

int cli_usage_error(const char *verb, const char *format, ...) {
        va_list ap;
        fprintf(stderr, "protokube %s: ", verb);
        va_start(ap, format);
        vfprintf(stderr, format, ap);
        va_end(ap);
        fputc('\n', stderr);
        return EXIT_USAGE;
}

static int set_node_option(CliContext *ctx, const char *verb, int opt, const char *arg) {
        switch (opt) {
        case 'c':
                ctx->spec_path = arg;
                return 1;
        case OPT_NODE_NAME:
                ctx->node_name = arg;
                return 1;
        case OPT_ZONE:
                ctx->zone = arg;
                return 1;
        case OPT_INTERNAL_IP:
                ctx->internal_ip = arg;
                ctx->internal_ip_source = "--internal-ip";
                return 1;
        case OPT_EXTERNAL_IP:
                ctx->external_ip = arg;
                ctx->external_ip_source = "--external-ip";
                return 1;
        case OPT_MANIFEST_DIR:
                ctx->manifest_dir = arg;
                return 1;
        case OPT_MOUNT_ROOT:
                ctx->mount_root = arg;
                return 1;
        case OPT_POOL:
                ctx->pool_dir = arg;
                return 1;
        case OPT_LISTEN:
                ctx->listen = arg;
                return 1;
        case OPT_INTERVAL:
                if (parse_duration_usec(arg, &ctx->interval) < 0 || ctx->interval == 0) {
                        cli_usage_error(verb, "invalid --interval '%s' (expected e.g. 10s, 500ms)", arg);
                        return -EINVAL;
                }
                return 1;
        default:
                return 0;
        }
}

/* An address enters here (option or environment): it is one IP literal or the verb fails, so that
 * nothing downstream (pool records, DNS) ever holds "192.0.2.11 " or "10.0.0.1,10.0.0.2". */
static int check_ip(const char *verb, const char *source, const char *value) {
        if (!value || in_addr_literal_valid(value))
                return 0;
        cli_usage_error(verb, "invalid %s '%s' (expected one IPv4 or IPv6 address, no spaces)", source,
                        value);
        return -EINVAL;
}

static int check_node_options(const CliContext *ctx, const char *verb) {
        int r = check_ip(verb, ctx->internal_ip_source ?: "--internal-ip", ctx->internal_ip);
        if (r >= 0)
                r = check_ip(verb, ctx->external_ip_source ?: "--external-ip", ctx->external_ip);
        return r;
}

int cli_parse_options(int argc, char **argv, CliContext *ctx, const struct option *options,
                      const char *shortopts, CliOptionHandler on_option, void *userdata) {
        struct option all[64];
        size_t n = 0;
        char shorts[64];
        const char *verb = argv[0];

        for (const struct option *o = options; o && o->name && n < ELEMENTSOF(all) - 1; o++)
                all[n++] = *o;
        for (size_t i = 0; i < ELEMENTSOF(node_options) && n < ELEMENTSOF(all) - 1; i++)
                all[n++] = node_options[i];
        all[n] = (struct option){};
        snprintf(shorts, sizeof(shorts), "c:%s", shortopts ? shortopts : "");

        optind = 0; /* full reinitialisation of getopt for the verb's argv */
        opterr = 0;
        for (;;) {
                int idx = -1;
                int c = getopt_long(argc, argv, shorts, all, &idx);
                if (c < 0)
                        break;
                if (c == '?' || c == ':') {
                        if (optopt)
                                cli_usage_error(verb, "unknown option or missing argument '-%c'", optopt);
                        else
                                cli_usage_error(verb, "unknown option or missing argument '%s'",
                                                argv[optind - 1]);
                        return -EINVAL;
                }
                int r = set_node_option(ctx, verb, c, optarg);
                if (r < 0)
                        return r;
                if (r > 0)
                        continue;
                if (!on_option || on_option(c, optarg, userdata) < 0)
                        return -EINVAL;
        }
        if (check_node_options(ctx, verb) < 0)
                return -EINVAL;
        return optind;
}
