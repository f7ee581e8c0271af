/* SPDX-License-Identifier: Apache-2.0 */
/* protokube pool: the local volume pool (ARCHITECTURE.md, "The local pool"). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/parse-util.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "cli/cli.h"
#include "cloud/pool.h"

/* The options of create and add-device. arg_tags alternates key, value; the verb takes it over. */
static uint64_t arg_size = 0;
static const char *arg_id = NULL;
static char **arg_tags = NULL;

static int parse_size_option(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        if (parse_size(value, &arg_size) < 0 || arg_size == 0)
                return cli_usage_error(ctx->name, "invalid %s '%s' (e.g. 1G, 64M)", source, value), -EINVAL;
        return 0;
}

static int parse_id(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        if (!pool_id_valid(value))
                return cli_usage_error(ctx->name, "invalid %s '%s' (1-63 of [A-Za-z0-9._-])", source, value),
                       -EINVAL;
        arg_id = value;
        return 0;
}

static int parse_tag(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        const char *eq = strchr(value, '=');
        if (!eq || eq == value)
                return cli_usage_error(ctx->name, "invalid %s '%s' (expected KEY=VALUE)", source, value),
                       -EINVAL;
        _cleanup_free_ char *k = strndup(value, (size_t)(eq - value));
        if (!k || strv_extend(&arg_tags, k) < 0 || strv_extend(&arg_tags, eq + 1) < 0)
                return log_oom();
        if (!pool_tag_valid(k, eq + 1))
                return cli_usage_error(ctx->name, "invalid %s '%s' (key 1-128, value 0-256 characters)",
                                       source, value),
                       -EINVAL;
        return 0;
}

#define ID_HELP  "the volume's ID (default: vol- and a random suffix)"
#define TAG_HELP "a tag on the volume; repeat for more (KubernetesCluster=NAME, k8s.io/etcd/main=a/a,b,c)"

const CliOption verb_pool_create_options[] = {
        { .name = "size",
          .arg_name = "SIZE",
          .help = "the volume's size (e.g. 1G, 64M)",
          .parse = parse_size_option },
        { .name = "id", .arg_name = "ID", .help = ID_HELP, .parse = parse_id },
        { .name = "tag", .arg_name = "KEY=VALUE", .help = TAG_HELP, .parse = parse_tag },
        {},
};

const CliOption verb_pool_add_device_options[] = {
        { .name = "id", .arg_name = "ID", .help = ID_HELP, .parse = parse_id },
        { .name = "tag", .arg_name = "KEY=VALUE", .help = TAG_HELP, .parse = parse_tag },
        {},
};

static int open_pool(CliContext *ctx, bool create, Pool **ret) {
        int r;
        if (create) {
                r = mkdir_p(ctx->node.pool_dir, 0700);
                if (r < 0)
                        return log_error_errno(r, "Failed to create pool directory '%s': %m",
                                               ctx->node.pool_dir);
        }
        r = pool_open(ctx->node.pool_dir, 0, ret);
        if (r < 0)
                return log_error_errno(r, "Failed to open pool '%s': %m", ctx->node.pool_dir);
        return 0;
}

int verb_pool_create(CliContext *ctx, char **args) {
        _cleanup_strv_free_ char **tags = TAKE_PTR(arg_tags);
        _cleanup_(pool_freep) Pool *p = NULL;
        _cleanup_free_ char *id = NULL;
        if (arg_size == 0 || !ctx->node.zone)
                return cli_usage_error(ctx->name, "needs --size and --zone");
        if (open_pool(ctx, true, &p) < 0)
                return EXIT_ERROR;
        int r = pool_create(p, arg_id, ctx->node.zone, arg_size, tags, &id);
        if (r < 0) {
                log_error_errno(r, "Failed to create volume '%s' in pool '%s': %m", strna(arg_id),
                                ctx->node.pool_dir);
                return EXIT_ERROR;
        }
        printf("%s\n", id);
        return EXIT_SUCCESS;
}

int verb_pool_add_device(CliContext *ctx, char **args) {
        _cleanup_strv_free_ char **tags = TAKE_PTR(arg_tags);
        _cleanup_(pool_freep) Pool *p = NULL;
        _cleanup_free_ char *id = NULL;
        if (!ctx->node.zone)
                return cli_usage_error(ctx->name, "needs --zone");
        if (open_pool(ctx, true, &p) < 0)
                return EXIT_ERROR;
        int r = pool_add_device(p, arg_id, args[0], ctx->node.zone, tags, &id);
        if (r < 0) {
                log_error_errno(r, "Failed to add device '%s' to pool '%s': %m", args[0],
                                ctx->node.pool_dir);
                return EXIT_ERROR;
        }
        printf("%s\n", id);
        return EXIT_SUCCESS;
}

static void print_tags(char *const *tags) {
        const char *sep = "";
        for (char *const *t = tags; t && t[0] && t[1]; t += 2, sep = ",")
                printf("%s%s=%s", sep, t[0], t[1]);
        if (!tags || !tags[0])
                printf("-");
}

int verb_pool_list(CliContext *ctx, char **args) {
        _cleanup_(pool_freep) Pool *p = NULL;
        VolumeList l = {};
        if (open_pool(ctx, false, &p) < 0)
                return EXIT_ERROR;
        int r = pool_list(p, &l);
        if (r < 0) {
                log_error_errno(r, "Failed to list pool '%s': %m", ctx->node.pool_dir);
                return EXIT_ERROR;
        }
        STRV_FOREACH (w, l.warnings)
                log_warning("Unreadable volume metadata: %s", *w);
        printf("%-24s %-12s %12s %-16s %-14s %s\n", "ID", "ZONE", "SIZE", "ATTACHED-TO", "DEVICE", "TAGS");
        for (size_t i = 0; i < l.n; i++) {
                const Volume *v = &l.items[i];
                /* a damaged record: what could be read, then why it is damaged */
                printf("%-24s %-12s %12" PRIu64 " %-16s %-14s ", v->id, strna(v->zone), v->size,
                       v->attachment.node ?: (v->damaged ? "?" : "-"), v->attachment.device ?: "-");
                print_tags(v->tags);
                if (v->damaged)
                        printf(" DAMAGED: %s", v->damaged);
                printf("\n");
        }
        volume_list_done(&l);
        return EXIT_SUCCESS;
}

int verb_pool_detach(CliContext *ctx, char **args) {
        _cleanup_(pool_freep) Pool *p = NULL;
        if (open_pool(ctx, false, &p) < 0)
                return EXIT_ERROR;
        if (!pool_id_valid(args[0]))
                return cli_usage_error(ctx->name, "invalid volume ID '%s' (1-63 of [A-Za-z0-9._-])",
                                       args[0]);
        int r = pool_detach(p, args[0], NULL);
        if (r < 0) {
                log_error_errno(r, "Failed to detach volume '%s': %m", args[0]);
                return EXIT_ERROR;
        }
        if (r == POOL_DETACHED_DAMAGED)
                log_warning("Volume '%s': its record is damaged; its loop device (if any) is detached, the "
                            "record '%s/%s.json' is left as it is for you to mend (see 'pool list').",
                            args[0], ctx->node.pool_dir, args[0]);
        else
                log_info("Volume '%s' %s.", args[0], r > 0 ? "detached" : "was not attached");
        return EXIT_SUCCESS;
}

int verb_pool_release_node(CliContext *ctx, char **args) {
        _cleanup_(pool_freep) Pool *p = NULL;
        if (!pool_node_name_valid(args[0]))
                return cli_usage_error(ctx->name, "invalid node name '%s'", args[0]);
        if (open_pool(ctx, false, &p) < 0)
                return EXIT_ERROR;
        _cleanup_strv_free_ char **notes = NULL;
        int r = pool_release_node(p, args[0], &notes);
        if (r < 0) {
                log_error_errno(r, "Failed to release the volumes of node '%s': %m", args[0]);
                return EXIT_ERROR;
        }
        STRV_FOREACH (n, notes)
                log_warning("Volume %s", *n);
        log_info("Released %d volume(s) of node '%s'.", r, args[0]);
        return EXIT_SUCCESS;
}
