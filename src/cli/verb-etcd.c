/* SPDX-License-Identifier: Apache-2.0 */
/* protokube etcd backups|backup|download: the etcd backups in the state store (docs/etcd-backups.md). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backup/backup.h"
#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "cli/cli.h"
#include "daemon/pass.h"
#include "spec/spec.h"
#include "store/store.h"

static const char *arg_out = NULL;
static const char *arg_tmp_dir = "/var/tmp";

static int parse_out(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        arg_out = value;
        return 0;
}

static int parse_tmp_dir(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        arg_tmp_dir = value;
        return 0;
}

const CliOption verb_etcd_download_options[] = {
        { .name = "out",
          .arg_name = "FILE",
          .help = "where to write the snapshot (created 0600; must not exist)",
          .parse = parse_out },
        {},
};

const CliOption verb_etcd_backup_options[] = {
        { .name = "tmp-dir",
          .arg_name = "DIR",
          .help = "where the snapshot is staged before it is stored (default /var/tmp)",
          .parse = parse_tmp_dir },
        {},
};

/* The spec, its state store opened, and the etcd cluster named (when name is not NULL). */
static int open_cluster(CliContext *ctx, const char *name, ClusterSpec **ret_spec, Store **ret_store,
                        const EtcdClusterSpec **ret_etcd) {
        _cleanup_free_ char *err = NULL;
        _cleanup_(cluster_spec_freep) ClusterSpec *spec = NULL;
        int r = cli_load_spec(ctx, &spec);
        if (r < 0)
                return r;
        if (!spec->state_store)
                return log_error_errno(-EINVAL, "%s: no spec.stateStore: backups live in the state store",
                                       ctx->spec_path);
        if (name && !(*ret_etcd = cluster_spec_find_etcd(spec, name)))
                return log_error_errno(-ENOENT, "%s: no etcd cluster '%s' in spec.etcdClusters",
                                       ctx->spec_path, name);
        r = store_open(spec->state_store, ret_store, &err);
        if (r < 0)
                return log_error_errno(r, "%s", err ?: pk_strerror(r));
        *ret_spec = TAKE_PTR(spec);
        return 0;
}

static int list_one(Store *s, const char *cluster) {
        BackupEntry *e = NULL;
        size_t n = 0;
        _cleanup_free_ char *err = NULL;
        int r = backup_list(s, cluster, &e, &n, &err);
        if (r < 0)
                return log_error_errno(r, "etcd %s: %s", cluster, err ?: pk_strerror(r));
        for (size_t i = 0; i < n; i++)
                if (e[i].complete)
                        printf("%-8s %s %12" PRIu64 " sha256:%.16s %s\n", cluster, e[i].timestamp, e[i].size,
                               e[i].sha256, strna(e[i].node));
                else
                        printf("%-8s %s %12s %-23s %s\n", cluster, e[i].timestamp, "-", "incomplete", "-");
        backup_entries_free(e, n);
        return 0;
}

int verb_etcd_backups(CliContext *ctx, char **args) {
        _cleanup_(cluster_spec_freep) ClusterSpec *spec = NULL;
        _cleanup_(store_freep) Store *s = NULL;
        const EtcdClusterSpec *e = NULL;
        int r = open_cluster(ctx, args[0], &spec, &s, &e);
        if (r < 0)
                return r;
        if (e)
                return list_one(s, e->name);
        for (size_t i = 0; i < spec->etcd_clusters.n && r >= 0; i++)
                r = list_one(s, cluster_spec_etcd(spec, i)->name);
        return r;
}

int verb_etcd_backup(CliContext *ctx, char **args) {
        _cleanup_(cluster_spec_freep) ClusterSpec *spec = NULL;
        _cleanup_(store_freep) Store *s = NULL;
        _cleanup_free_ char *endpoint = NULL, *err = NULL, *node = NULL;
        const EtcdClusterSpec *e = NULL;
        BackupEtcdSource src;
        char ts[BACKUP_TIMESTAMP_LEN + 1];
        uint64_t size = 0;
        int r = open_cluster(ctx, args[0], &spec, &s, &e);
        if (r < 0)
                return r;
        r = pass_backup_source(spec, e, ctx->node.internal_ip, &endpoint, &src);
        if (r < 0)
                return log_error_errno(r, "etcd %s: %m", e->name);
        /* a backup by hand is named by its second, not by a slot: it never takes the schedule's place */
        r = backup_timestamp_format(now(CLOCK_REALTIME), ts);
        node = strdup(ctx->node.node_name ?: "protokube-cli");
        if (r < 0 || !node)
                return log_oom();
        r = pass_backup_take(s, e->name, ts, node, &src, arg_tmp_dir, &size, &err);
        if (r < 0)
                return log_error_errno(r, "etcd %s: backup from %s: %s", e->name, endpoint,
                                       err ?: pk_strerror(r));
        printf("%s %s %" PRIu64 "\n", e->name, ts, size);
        return 0;
}

/* The newest complete backup's timestamp into ret. */
static int newest(Store *s, const char *cluster, char ret[static BACKUP_TIMESTAMP_LEN + 1]) {
        BackupEntry *e = NULL;
        size_t n = 0;
        _cleanup_free_ char *err = NULL;
        int r = backup_list(s, cluster, &e, &n, &err);
        if (r < 0)
                return log_error_errno(r, "etcd %s: %s", cluster, err ?: pk_strerror(r));
        const BackupEntry *b = backup_newest(e, n);
        r = b ? 0 : -ENOENT;
        if (b)
                memcpy(ret, b->timestamp, BACKUP_TIMESTAMP_LEN + 1);
        backup_entries_free(e, n);
        return r < 0 ? log_error_errno(r, "etcd %s: no complete backup in the store", cluster) : 0;
}

int verb_etcd_download(CliContext *ctx, char **args) {
        _cleanup_(cluster_spec_freep) ClusterSpec *spec = NULL;
        _cleanup_(store_freep) Store *s = NULL;
        _cleanup_free_ char *err = NULL;
        const EtcdClusterSpec *e = NULL;
        char ts[BACKUP_TIMESTAMP_LEN + 1];
        if (!arg_out)
                return log_error_errno(-EINVAL, "etcd download: --out FILE is required");
        int r = open_cluster(ctx, args[0], &spec, &s, &e);
        if (r < 0)
                return r;
        if (args[1])
                snprintf(ts, sizeof(ts), "%s", args[1]);
        else if ((r = newest(s, e->name, ts)) < 0)
                return r;
        int fd = open(arg_out, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0)
                return log_error_errno(-errno, "Failed to create '%s': %m", arg_out);
        r = backup_download(s, e->name, ts, fd, &err);
        close(fd);
        if (r < 0) {
                (void)unlink(arg_out); /* never a half-written snapshot */
                return log_error_errno(r, "etcd %s: backup %s: %s", e->name, ts, err ?: pk_strerror(r));
        }
        printf("%s %s %s\n", e->name, ts, arg_out);
        return 0;
}
