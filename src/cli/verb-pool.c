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

typedef struct PoolArgs {
        uint64_t size;
        const char *id;
        char **tags; /* alternating key, value */
        int failed;
} PoolArgs;

enum { OPT_SIZE = 0x2000, OPT_ID, OPT_TAG };

static int on_option(int opt, const char *arg, void *userdata) {
        PoolArgs *a = userdata;
        switch (opt) {
        case OPT_SIZE:
                if (parse_size(arg, &a->size) < 0 || a->size == 0)
                        return cli_usage_error("pool", "invalid --size '%s' (e.g. 1G, 64M)", arg), -EINVAL;
                return 0;
        case OPT_ID:
                if (!pool_id_valid(arg))
                        return cli_usage_error("pool", "invalid --id '%s' (1-63 of [A-Za-z0-9._-])", arg),
                               -EINVAL;
                a->id = arg;
                return 0;
        case OPT_TAG: {
                const char *eq = strchr(arg, '=');
                if (!eq || eq == arg)
                        return cli_usage_error("pool", "invalid --tag '%s' (expected KEY=VALUE)", arg),
                               -EINVAL;
                _cleanup_free_ char *k = strndup(arg, (size_t)(eq - arg));
                if (!k || strv_extend(&a->tags, k) < 0 || strv_extend(&a->tags, eq + 1) < 0)
                        return log_oom();
                if (!pool_tag_valid(k, eq + 1))
                        return cli_usage_error(
                                   "pool", "invalid --tag '%s' (key 1-128, value 0-256 characters)", arg),
                               -EINVAL;
                return 0;
        }
        default:
                return -EINVAL;
        }
}

static int open_pool(CliContext *ctx, bool create, Pool **ret) {
        int r;
        if (create) {
                r = mkdir_p(ctx->pool_dir, 0700);
                if (r < 0)
                        return log_error_errno(r, "Failed to create pool directory '%s': %m", ctx->pool_dir);
        }
        r = pool_open(ctx->pool_dir, 0, ret);
        if (r < 0)
                return log_error_errno(r, "Failed to open pool '%s': %m", ctx->pool_dir);
        return 0;
}

static int pool_verb_create(CliContext *ctx, PoolArgs *a, char **pos) {
        _cleanup_(pool_freep) Pool *p = NULL;
        _cleanup_free_ char *id = NULL;
        if (strv_length(pos) != 0)
                return cli_usage_error("pool", "create takes no arguments");
        if (a->size == 0 || !ctx->zone)
                return cli_usage_error("pool", "create needs --size and --zone");
        if (open_pool(ctx, true, &p) < 0)
                return EXIT_ERROR;
        int r = pool_create(p, a->id, ctx->zone, a->size, a->tags, &id);
        if (r < 0) {
                log_error_errno(r, "Failed to create volume '%s' in pool '%s': %m", strna(a->id),
                                ctx->pool_dir);
                return EXIT_ERROR;
        }
        printf("%s\n", id);
        return EXIT_SUCCESS;
}

static int pool_verb_add_device(CliContext *ctx, PoolArgs *a, char **pos) {
        _cleanup_(pool_freep) Pool *p = NULL;
        _cleanup_free_ char *id = NULL;
        if (strv_length(pos) != 1 || !ctx->zone)
                return cli_usage_error("pool", "add-device needs one DEVICE and --zone");
        if (open_pool(ctx, true, &p) < 0)
                return EXIT_ERROR;
        int r = pool_add_device(p, a->id, pos[0], ctx->zone, a->tags, &id);
        if (r < 0) {
                log_error_errno(r, "Failed to add device '%s' to pool '%s': %m", pos[0], ctx->pool_dir);
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

static int pool_verb_list(CliContext *ctx, char **pos) {
        _cleanup_(pool_freep) Pool *p = NULL;
        VolumeList l = {};
        if (strv_length(pos) != 0)
                return cli_usage_error("pool", "list takes no arguments");
        if (open_pool(ctx, false, &p) < 0)
                return EXIT_ERROR;
        int r = pool_list(p, &l);
        if (r < 0) {
                log_error_errno(r, "Failed to list pool '%s': %m", ctx->pool_dir);
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

static int pool_verb_detach(CliContext *ctx, char **pos) {
        _cleanup_(pool_freep) Pool *p = NULL;
        if (strv_length(pos) != 1)
                return cli_usage_error("pool", "detach needs one volume ID");
        if (open_pool(ctx, false, &p) < 0)
                return EXIT_ERROR;
        if (!pool_id_valid(pos[0]))
                return cli_usage_error("pool", "invalid volume ID '%s' (1-63 of [A-Za-z0-9._-])", pos[0]);
        int r = pool_detach(p, pos[0], NULL);
        if (r < 0) {
                log_error_errno(r, "Failed to detach volume '%s': %m", pos[0]);
                return EXIT_ERROR;
        }
        if (r == POOL_DETACHED_DAMAGED)
                log_warning("Volume '%s': its record is damaged; its loop device (if any) is detached, the "
                            "record '%s/%s.json' is left as it is for you to mend (see 'pool list').",
                            pos[0], ctx->pool_dir, pos[0]);
        else
                log_info("Volume '%s' %s.", pos[0], r > 0 ? "detached" : "was not attached");
        return EXIT_SUCCESS;
}

static int pool_verb_release_node(CliContext *ctx, char **pos) {
        _cleanup_(pool_freep) Pool *p = NULL;
        if (strv_length(pos) != 1 || !pool_node_name_valid(pos[0]))
                return cli_usage_error("pool", "release-node needs one NODE name");
        if (open_pool(ctx, false, &p) < 0)
                return EXIT_ERROR;
        _cleanup_strv_free_ char **notes = NULL;
        int r = pool_release_node(p, pos[0], &notes);
        if (r < 0) {
                log_error_errno(r, "Failed to release the volumes of node '%s': %m", pos[0]);
                return EXIT_ERROR;
        }
        STRV_FOREACH (n, notes)
                log_warning("Volume %s", *n);
        log_info("Released %d volume(s) of node '%s'.", r, pos[0]);
        return EXIT_SUCCESS;
}

/* cli_parse_options() stops at the first positional argument ("+" getopt), but the contract puts the
 * options after the command and its DEVICE/ID ("pool add-device /dev/X --zone Z"). Every option of
 * this verb and of the node-local set takes an argument, so options and their arguments can be moved
 * in front of the positionals safely. ret gets argv[0], the options, then the positionals. */
static int permute_args(int argc, char **argv, char ***ret, int *ret_n_opts) {
        char **out = new0(char *, (size_t)argc + 1);
        int n = 0, n_pos = 0;
        if (!out)
                return -ENOMEM;
        char **pos = new0(char *, (size_t)argc + 1);
        if (!pos) {
                free(out);
                return -ENOMEM;
        }
        out[n++] = argv[0];
        for (int i = 1; i < argc; i++) {
                const char *a = argv[i];
                if (streq(a, "--")) {
                        for (i++; i < argc; i++)
                                pos[n_pos++] = argv[i];
                        break;
                }
                if (a[0] != '-' || a[1] == 0) {
                        pos[n_pos++] = argv[i];
                        continue;
                }
                out[n++] = argv[i];
                bool has_value = startswith(a, "--") ? strchr(a, '=') != NULL : a[2] != 0;
                if (!has_value && i + 1 < argc)
                        out[n++] = argv[++i];
        }
        *ret_n_opts = n;
        for (int k = 0; k < n_pos; k++)
                out[n++] = pos[k];
        out[n] = NULL;
        free(pos);
        *ret = out;
        return n;
}

VERB(pool) {
        static const struct option options[] = {
                { "size", required_argument, NULL, OPT_SIZE },
                { "id", required_argument, NULL, OPT_ID },
                { "tag", required_argument, NULL, OPT_TAG },
                {},
        };
        _cleanup_free_ char **args = NULL;
        PoolArgs a = {};
        int r, n, n_opts, ret;

        n = permute_args(argc, argv, &args, &n_opts);
        if (n < 0)
                return log_oom(), EXIT_ERROR;
        r = cli_parse_options(n_opts, args, ctx, options, NULL, on_option, &a);
        if (r < 0) {
                strv_free(a.tags);
                return EXIT_USAGE;
        }
        if (r != n_opts) /* a stray value that was taken for a positional */
                return strv_free(a.tags), cli_usage_error("pool", "unexpected argument '%s'", args[r]);
        if (n_opts >= n) {
                strv_free(a.tags);
                return cli_usage_error("pool",
                                       "needs a command: create, add-device, list, detach, release-node");
        }
        const char *cmd = args[n_opts];
        char **pos = args + n_opts + 1;
        if (streq(cmd, "create"))
                ret = pool_verb_create(ctx, &a, pos);
        else if (streq(cmd, "add-device"))
                ret = pool_verb_add_device(ctx, &a, pos);
        else if (streq(cmd, "list"))
                ret = pool_verb_list(ctx, pos);
        else if (streq(cmd, "detach"))
                ret = pool_verb_detach(ctx, pos);
        else if (streq(cmd, "release-node"))
                ret = pool_verb_release_node(ctx, pos);
        else
                ret = cli_usage_error("pool", "unknown command '%s'", cmd);
        strv_free(a.tags);
        return ret;
}
