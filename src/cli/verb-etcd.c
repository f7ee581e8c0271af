/* SPDX-License-Identifier: Apache-2.0 */
/* protokube etcd backups|backup|download|restore: the etcd backups in the state store
 * (docs/etcd-backups.md) and a whole cluster's restore from one (docs/etcd-restore.md). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backup/backup.h"
#include "backup/restore.h"
#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/parse-util.h"
#include "basic/stop.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "cli/cli.h"
#include "daemon/etcd-source.h"
#include "spec/spec.h"
#include "store/store.h"

static const char *arg_out = NULL;
static const char *arg_tmp_dir = "/var/tmp";
static usec_t arg_wait = 0;
static bool arg_force = false;

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

static int parse_restore_option(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        uint64_t u;
        if (streq(o->name, "force")) {
                arg_force = true;
                return 0;
        }
        if (parse_duration_usec(value, &u) < 0 || u == 0)
                return cli_usage_error("etcd restore", "invalid %s '%s' (a duration: 30s, 10m)", source,
                                       value),
                       -EINVAL;
        arg_wait = u;
        return 0;
}

const CliOption verb_etcd_restore_options[] = {
        { .name = "wait",
          .arg_name = "DURATION",
          .help = "wait until every member reported the restore done, at most DURATION",
          .parse = parse_restore_option },
        { .name = "force",
          .help = "replace a restore request that is not finished yet",
          .parse = parse_restore_option },
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
        r = 0;
        for (size_t i = 0; i < n; i++)
                if (e[i].state == BACKUP_COMPLETE)
                        printf("%-8s %s %12" PRIu64 " sha256:%.16s %s\n", cluster, e[i].timestamp, e[i].size,
                               e[i].sha256, strna(e[i].node));
                else
                        printf("%-8s %s %12s %-23s %s\n", cluster, e[i].timestamp, "-",
                               e[i].state == BACKUP_UNREADABLE ? "unreadable" : "incomplete", "-");
        fflush(stdout);
        /* every row is printed; the command fails for those that cannot be read */
        for (size_t i = 0; i < n; i++)
                if (e[i].state == BACKUP_UNREADABLE)
                        r = log_error_errno(e[i].error, "etcd %s: backup %s cannot be read: %s", cluster,
                                            e[i].timestamp, strna(e[i].error_message));
        backup_entries_free(e, n);
        return r;
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
        for (size_t i = 0; i < spec->etcd_clusters.n; i++) {
                int k = list_one(s, cluster_spec_etcd(spec, i)->name);
                if (k < 0 && r >= 0)
                        r = k;
        }
        return r;
}

int verb_etcd_backup(CliContext *ctx, char **args) {
        _cleanup_(cluster_spec_freep) ClusterSpec *spec = NULL;
        _cleanup_(store_freep) Store *s = NULL;
        _cleanup_free_ char *endpoint = NULL, *err = NULL, *node = NULL;
        const EtcdClusterSpec *e = NULL;
        BackupEtcdSource src;
        char ts[BACKUP_TIMESTAMP_LEN + 1], upload_id[BACKUP_UPLOAD_ID_LEN + 1];
        uint64_t size = 0;
        int r = open_cluster(ctx, args[0], &spec, &s, &e);
        if (r < 0)
                return r;
        r = etcd_member_source(spec, e, ctx->node.internal_ip, &endpoint, &src);
        if (r < 0)
                return log_error_errno(r, "etcd %s: %m", e->name);
        /* a backup by hand is named by its second, not by a slot. In a slot's first second it has the
         * slot's name: its own upload id keeps it from taking up the daemon's claim (it is refused), and
         * the daemon from taking up its claim (the slot has this backup). */
        r = backup_timestamp_format(now(CLOCK_REALTIME), ts);
        node = strdup(ctx->node.node_name ?: "protokube-cli");
        if (r < 0 || !node)
                return log_oom();
        r = backup_upload_id_new(upload_id);
        if (r < 0)
                return log_error_errno(r, "etcd %s: cannot make an upload id: %m", e->name);
        r = backup_take(s, e->name, ts, node, upload_id, &src, arg_tmp_dir, &size, &err);
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
        const BackupEntry *b = NULL;
        int r = backup_list(s, cluster, &e, &n, &err);
        if (r >= 0)
                r = backup_newest(e, n, &b, &err);
        if (r >= 0 && b)
                memcpy(ret, b->timestamp, BACKUP_TIMESTAMP_LEN + 1);
        backup_entries_free(e, n);
        if (r < 0)
                return log_error_errno(r, "etcd %s: %s", cluster, err ?: pk_strerror(r));
        return b ? 0 : log_error_errno(-ENOENT, "etcd %s: no complete backup in the store", cluster);
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

/* The backup to restore: the one named, complete, or the newest complete one (an error when a newer one
 * cannot be read: never an older one in its place). */
static int restore_snapshot(Store *s, const char *cluster, const char *name,
                            char ret[static BACKUP_TIMESTAMP_LEN + 1]) {
        BackupEntry *e = NULL;
        size_t n = 0;
        _cleanup_free_ char *err = NULL;
        const BackupEntry *b = NULL;
        usec_t t;
        if (name && backup_timestamp_parse(name, &t) < 0)
                return log_error_errno(-EINVAL,
                                       "etcd %s: invalid snapshot '%s' (a backup's timestamp, e.g. "
                                       "20261124T011500Z: see `protokube etcd backups`)",
                                       cluster, name);
        int r = backup_list(s, cluster, &e, &n, &err);
        if (r >= 0 && !name)
                r = backup_newest(e, n, &b, &err);
        for (size_t i = 0; r >= 0 && name && i < n; i++)
                if (streq(e[i].timestamp, name))
                        b = &e[i];
        if (r >= 0 && b && b->state == BACKUP_UNREADABLE) {
                r = b->error;
                err = strprintf("backup '%s' cannot be read: %s", b->timestamp, strna(b->error_message));
        } else if (r >= 0 && b && b->state != BACKUP_COMPLETE)
                r = PK_EMALFORMED;
        if (r >= 0 && b)
                memcpy(ret, b->timestamp, BACKUP_TIMESTAMP_LEN + 1);
        else if (r >= 0)
                r = -ENOENT;
        backup_entries_free(e, n);
        if (r == -ENOENT)
                return log_error_errno(r,
                                       name ? "etcd %s: no backup '%s' in the store"
                                            : "etcd %s: no complete "
                                              "backup in the store%s",
                                       cluster, name ?: "");
        if (r == PK_EMALFORMED && !err)
                return log_error_errno(r,
                                       "etcd %s: backup '%s' is incomplete (its taker died): it is never "
                                       "restored",
                                       cluster, name);
        if (r < 0)
                return log_error_errno(r, "etcd %s: %s", cluster, err ?: pk_strerror(r));
        return 0;
}

/* "a, b" of the members of p that have not reported done (all named when none reported). */
static char *not_done(const RestoreProgress *p) {
        _cleanup_free_ char *s = strdup("");
        STRV_FOREACH (m, p->members)
                if (!strv_contains(p->done, *m) &&
                    strextend_printf(&s, "%s%s", isempty(s) ? "" : ", ", *m) < 0)
                        return NULL;
        return TAKE_PTR(s);
}

static int restore_wait(Store *s, const char *cluster, const char *id) {
        usec_t deadline = now(CLOCK_MONOTONIC) + arg_wait;
        RestoreProgress p = {};
        _cleanup_free_ char *err = NULL, *missing = NULL;
        for (;;) {
                restore_progress_done(&p);
                free(err), err = NULL;
                int r = restore_progress_get(s, cluster, id, &p, &err);
                if (r < 0)
                        log_warning(
                            "etcd %s: restore %s: cannot read the members' reports, will retry in 1s: %s",
                            cluster, id, strna(err));
                if (r >= 0 && p.finished)
                        break;
                if (now(CLOCK_MONOTONIC) >= deadline || sleep_usec(USEC_PER_SEC) < 0) {
                        missing = not_done(&p);
                        restore_progress_done(&p);
                        if (isempty(missing))
                                return log_error_errno(PK_ETIMEOUT,
                                                       "etcd %s: restore %s: no member reported "
                                                       "within the wait",
                                                       cluster, id);
                        return log_error_errno(PK_ETIMEOUT,
                                               "etcd %s: restore %s: not done within the wait: %s", cluster,
                                               id, missing);
                }
        }
        missing = strv_join(p.done, ","); /* (here: every member, all done) */
        printf("%s restore %s done: %s\n", cluster, id, strna(missing));
        restore_progress_done(&p);
        return 0;
}

int verb_etcd_restore(CliContext *ctx, char **args) {
        _cleanup_(cluster_spec_freep) ClusterSpec *spec = NULL;
        _cleanup_(store_freep) Store *s = NULL;
        _cleanup_free_ char *err = NULL;
        const EtcdClusterSpec *e = NULL;
        RestoreRequest req = {}, old;
        int r = open_cluster(ctx, args[0], &spec, &s, &e);
        if (r < 0)
                return r;
        r = restore_snapshot(s, e->name, args[1], req.snapshot);
        if (r < 0)
                return r;
        r = restore_request_get(s, e->name, &old, &err);
        if (r < 0 && r != -ENOENT)
                return log_error_errno(r, "etcd %s: %s", e->name, err ?: pk_strerror(r));
        if (r >= 0 && !arg_force) {
                RestoreProgress p = {};
                free(err), err = NULL;
                r = restore_progress_get(s, e->name, old.id, &p, &err);
                if (r < 0)
                        return log_error_errno(r, "etcd %s: %s", e->name, err ?: pk_strerror(r));
                _cleanup_free_ char *missing = p.finished ? NULL : not_done(&p);
                bool finished = p.finished;
                restore_progress_done(&p);
                if (!finished)
                        return log_error_errno(
                            -EBUSY,
                            "etcd %s: restore %s (snapshot %s) is not finished (%s%s); "
                            "--force replaces it",
                            e->name, old.id, old.snapshot,
                            isempty(missing) ? "no member reported yet" : "not done: ", strempty(missing));
        }
        req.requested = now(CLOCK_REALTIME);
        r = restore_id_new(req.requested, req.id);
        if (r < 0)
                return log_error_errno(r, "etcd %s: cannot make a restore id: %m", e->name);
        free(err), err = NULL;
        r = restore_request_put(s, e->name, &req, &err);
        if (r < 0)
                return log_error_errno(r, "etcd %s: cannot write the restore request: %s", e->name,
                                       err ?: pk_strerror(r));
        printf("%s %s\n", req.id, req.snapshot); /* the id first: scripts take the first word */
        fflush(stdout);
        log_info("etcd %s: restore %s of snapshot %s requested; every master holding a member restores it.",
                 e->name, req.id, req.snapshot);
        return arg_wait > 0 ? restore_wait(s, e->name, req.id) : 0;
}
