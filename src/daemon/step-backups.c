/* SPDX-License-Identifier: Apache-2.0 */
/* etcd backups in a pass (docs/etcd-backups.md): after the manifests, for each etcd cluster whose member
 * this node holds, with a state store: when that member is the cluster's leader and the interval's slot has
 * no backup yet, take a snapshot through the member's gRPC API into a temporary file on the member's own
 * volume, check it, upload it (the slot's claim makes exactly one master the taker), then apply the
 * retention. Every holder reports the newest backup for /metrics and /healthz. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backup/backup-snapshot.h"
#include "backup/backup.h"
#include "backup/restore.h"
#include "basic/errors.h"
#include "basic/log.h"
#include "basic/stop.h"
#include "basic/string-util.h"
#include "components/etcd.h"
#include "daemon/etcd-source.h"
#include "daemon/pass-types.h"
#include "daemon/progress.h"
#include "daemon/step-backups.h"
#include "etcdapi/etcd-client.h"
#include "store/store.h"
#include "volumes/volumes.h"

#define BACKUP_STATUS_TIMEOUT (5 * USEC_PER_SEC)
#define BACKUP_GRACE_MIN      (30ULL * 60ULL * USEC_PER_SEC)

static int member_is_leader(const BackupEtcdSource *src, char **ret_error) {
        _cleanup_(etcd_client_freep) EtcdClient *c = NULL;
        char *endpoints[] = { (char *)src->endpoint, NULL };
        EtcdClientConfig cfg = { .endpoints = endpoints,
                                 .ca_file = src->ca_file,
                                 .cert_file = src->cert_file,
                                 .key_file = src->key_file,
                                 .timeout = BACKUP_STATUS_TIMEOUT };
        EtcdStatus st = {};
        int r = etcd_client_new(&cfg, &c);
        if (r < 0)
                return r;
        r = etcd_maintenance_status(c, src->endpoint, &st, ret_error);
        if (r < 0)
                return r;
        bool leader = st.leader != 0 && st.leader == st.member_id && !st.is_learner;
        etcd_status_done(&st);
        return leader;
}

/* Deletes what the spec's retention no longer keeps, never the backup an upgrade recorded as its way back
 * (docs/etcd-versions.md); the number deleted, or < 0. */
static int apply_retention(Store *s, const char *cluster, const EtcdBackupSpec *b, usec_t now_rt,
                           char **ret_error) {
        BackupEntry *e = NULL;
        size_t n = 0;
        _cleanup_free_ bool *del = NULL;
        usec_t interval = b->interval.value;
        BackupRetention ret = { .keep_last = (unsigned)b->keep_last.value,
                                .keep_daily_days = (unsigned)b->keep_daily_days.value,
                                .incomplete_grace = MAX(2 * interval, BACKUP_GRACE_MIN) };
        int r = backup_list(s, cluster, &e, &n, ret_error);
        if (r < 0)
                return r;
        /* nothing is deleted while a backup cannot be read: it may be whole, and the newest */
        r = backup_retention_plan(e, n, &ret, now_rt, &del, ret_error);
        UpgradeRecord rec;
        _cleanup_free_ char *rerr = NULL;
        int k = r >= 0 ? upgrade_record_get(s, cluster, &rec, &rerr) : r;
        if (r >= 0 && k < 0 && k != -ENOENT) /* the way back cannot be told from the others: none goes */
                r = error_setf(ret_error, k, "the upgrade's record: %s", rerr ?: pk_strerror(k));
        for (size_t i = 0; r >= 0 && k >= 0 && i < n; i++)
                del[i] = del[i] && !streq(e[i].timestamp, rec.backup);
        int deleted = 0;
        for (size_t i = 0; r >= 0 && i < n; i++)
                if (del[i]) {
                        r = backup_delete(s, cluster, e[i].timestamp, ret_error);
                        deleted += r >= 0;
                }
        backup_entries_free(e, n);
        return r < 0 ? r : deleted;
}

bool pass_backup_list_due(const PassBackupSeen *seen, usec_t slot, usec_t now_mono) {
        if (!seen || seen->slot != slot)
                return true;
        if (seen->info.newest >= slot) /* this slot's backup is there: nothing changes before the next */
                return false;
        return now_mono - seen->listed_at >= PASS_BACKUP_RELIST_USEC;
}

static PassBackupSeen *backup_seen(Pass *p, const char *cluster) {
        for (unsigned i = 0; i < p->n_backups_seen; i++)
                if (streq(p->backups_seen[i].cluster, cluster))
                        return &p->backups_seen[i];
        return NULL;
}

/* The newest complete backup of a listing that may hold unreadable ones (the age /metrics exports), and how
 * many are unreadable; the newest of those into *ret_unreadable. */
static const BackupEntry *newest_readable(const BackupEntry *e, size_t n, unsigned *ret_count,
                                          const BackupEntry **ret_unreadable) {
        const BackupEntry *newest = NULL;
        *ret_count = 0;
        *ret_unreadable = NULL;
        for (size_t i = 0; i < n; i++)
                if (e[i].state == BACKUP_COMPLETE)
                        newest = &e[i];
                else if (e[i].state == BACKUP_UNREADABLE) {
                        (*ret_count)++;
                        *ret_unreadable = &e[i];
                }
        return newest;
}

/* A listing that failed or found unreadable backups is an error of the stage, every pass until it is
 * gone: /healthz says why, and nothing of it is kept for the next pass. */
static void listing_failed(PassReport *rep, PassBackupSeen *seen, int r, const char *why) {
        log_error("%s", why);
        pass_report_error(rep, PASS_STAGE_BACKUP, r, why);
        if (seen)
                seen->slot = 0; /* never a slot of now: the next pass lists again */
}

/* The newest backup into the report: listed from the store when pass_backup_list_due() or fresh (this
 * pass tried to take the slot's backup), else what the last listing found. */
static void newest_backup(Pass *p, Store *s, const char *cluster, usec_t interval, usec_t slot, bool fresh,
                          PassReport *rep) {
        BackupEntry *e = NULL;
        size_t n = 0;
        _cleanup_free_ char *err = NULL, *why = NULL;
        const BackupEntry *bad;
        if (rep->n_backups >= PASS_BACKUPS_MAX)
                return;
        PassBackupSeen *seen = backup_seen(p, cluster);
        usec_t now_mono = now(CLOCK_MONOTONIC);
        if (!fresh && seen && seen->info.interval == interval &&
            !pass_backup_list_due(seen, slot, now_mono)) {
                rep->backups[rep->n_backups++] = seen->info;
                return;
        }
        PassBackupInfo *info = &rep->backups[rep->n_backups];
        *info = (PassBackupInfo){ .interval = interval };
        snprintf(info->cluster, sizeof(info->cluster), "%s", cluster);
        int r = backup_list(s, cluster, &e, &n, &err);
        if (r < 0) {
                why = strprintf("etcd %s: cannot list its backups: %s", cluster, err ?: pk_strerror(r));
                listing_failed(rep, seen, r, why ?: cluster);
                return;
        }
        const BackupEntry *newest = newest_readable(e, n, &info->unreadable, &bad);
        if (newest) {
                info->newest = newest->time;
                info->size = newest->size;
        }
        if (bad)
                why = strprintf("etcd %s: %u backup(s) cannot be read, so none is deleted until they can "
                                "(backup %s: %s)",
                                cluster, info->unreadable, bad->timestamp, strna(bad->error_message));
        r = bad ? bad->error : 0;
        backup_entries_free(e, n);
        rep->n_backups++;
        if (r < 0) {
                listing_failed(rep, seen, r, why ?: cluster);
                return;
        }
        if (!seen && p->n_backups_seen < PASS_BACKUPS_MAX)
                seen = &p->backups_seen[p->n_backups_seen++];
        if (seen) {
                *seen = (PassBackupSeen){ .slot = slot, .listed_at = now_mono, .info = *info };
                snprintf(seen->cluster, sizeof(seen->cluster), "%s", cluster);
        }
}

/* An error of the stage: logged, and the first one is the report's reason. */
static void stage_error(PassReport *rep, int r, const char *why) {
        log_error("%s", why);
        pass_report_error(rep, PASS_STAGE_BACKUP, r, why);
}

/* The slot's backup (ts) of the cluster, and after it the retention. Losing the slot to another master or
 * upload is no error: the slot has its backup. */
static void take_slot(Pass *p, Store *s, const char *node, const EtcdClusterSpec *e, const char *ts,
                      const BackupEtcdSource *src, const char *mount, usec_t now_rt, PassReport *rep) {
        _cleanup_free_ char *err = NULL, *why = NULL;
        uint64_t size = 0;
        usec_t t0 = now(CLOCK_MONOTONIC);
        pass_progress_step("etcd backup");
        /* on the member's own volume: room for a copy of its database */
        int r = backup_take(s, e->name, ts, node, p->backup_upload_id, src, mount, &size, &err);
        if (r == -EEXIST) {
                log_info("etcd %s: %s", e->name, strna(err));
                return;
        }
        if (r < 0) {
                why = strprintf("etcd %s: backup %s: %s", e->name, ts, err ?: pk_strerror(r));
                return stage_error(rep, r, why ?: e->name);
        }
        log_info("etcd %s: backup %s taken (%" PRIu64 " bytes, %llu ms).", e->name, ts, size,
                 (unsigned long long)((now(CLOCK_MONOTONIC) - t0) / USEC_PER_MSEC));
        rep->actions_applied++;
        free(err), err = NULL;
        r = apply_retention(s, e->name, &e->backups, now_rt, &err);
        if (r > 0)
                log_info("etcd %s: %d old backup(s) deleted.", e->name, r);
        if (r < 0) {
                why = strprintf("etcd %s: retention: %s", e->name, err ?: pk_strerror(r));
                stage_error(rep, r, why ?: e->name);
        }
}

/* One held member's cluster: the slot's backup when this member leads, then what the report says. */
static void backup_cluster(Pass *p, Store *s, const NodeIdentity *node, const EtcdClusterSpec *e,
                           const char *mount, usec_t now_rt, PassReport *rep) {
        _cleanup_free_ char *endpoint = NULL, *err = NULL, *key = NULL, *data = NULL;
        BackupEtcdSource src = {};
        char ts[BACKUP_TIMESTAMP_LEN + 1];
        usec_t interval = e->backups.interval.value, slot = backup_slot(now_rt, interval);
        bool fresh = false;
        size_t len;
        int r = etcd_member_source(p->spec, e, node->internal_ips ? node->internal_ips[0] : NULL, &endpoint,
                                   &src);
        if (r < 0 || backup_timestamp_format(slot, ts) < 0)
                return;
        const PassBackupSeen *seen = backup_seen(p, e->name);
        if (seen && seen->slot == slot && seen->info.interval == interval && seen->info.newest >= slot) {
                /* the slot's backup was listed: not due, neither the leader nor the store is asked */
                newest_backup(p, s, e->name, interval, slot, false, rep);
                return;
        }
        r = member_is_leader(&src, &err);
        if (r < 0)
                log_debug("etcd %s: no backup this pass: its member here does not answer: %s", e->name,
                          strna(err));
        /* only an absent manifest means the slot has no backup yet */
        key = r > 0 ? strprintf("backups/%s/%s/manifest.json", e->name, ts) : NULL;
        if (key && store_get(s, key, &data, &len, NULL) == -ENOENT) {
                fresh = true; /* taken or lost to another master: the listing shows which */
                take_slot(p, s, node->name, e, ts, &src, mount, now_rt, rep);
        }
        newest_backup(p, s, e->name, interval, slot, fresh, rep);
}

static int backups_apply(PassContext *ctx, PassWave wave) {
        Pass *p = ctx->pass;
        const PassObservation *o = ctx->obs;
        const PassPlan *plan = ctx->plan;
        PassReport *rep = ctx->rep;
        _cleanup_(store_freep) Store *owned = NULL;
        _cleanup_free_ char *err = NULL;
        if (!p->spec->state_store || o->volumes_error < 0 || stop_requested())
                return 0;
        Store *s = pass_store(ctx, &owned, &err);
        if (!s) {
                pass_report_error(rep, PASS_STAGE_BACKUP, -EIO, err);
                return 0;
        }
        rep->backups_known = true;
        if (isempty(p->backup_upload_id) && backup_upload_id_new(p->backup_upload_id) < 0) {
                pass_report_error(rep, PASS_STAGE_BACKUP, -EIO, "etcd backups: no random upload id");
                return 0;
        }
        usec_t now_rt = now(CLOCK_REALTIME);
        for (size_t k = 0; k < plan->volumes.n_selections && !stop_requested(); k++) {
                const PlanSelection *sel = &plan->volumes.selections[k];
                const EtcdClusterSpec *e = cluster_spec_find_etcd(p->spec, sel->etcd_cluster);
                if (!e || sel->volume == SIZE_MAX || sel->state != SELECTION_READY ||
                    pass_restoring(ctx, sel->volume))
                        continue; /* (a restore under way: its etcd is stopped or not the cluster's yet) */
                _cleanup_free_ char *mount =
                    volume_mount_path(p->node.mount_root, plan->in.volumes[sel->volume].id);
                if (!mount)
                        return -ENOMEM;
                backup_cluster(p, s, &o->volumes.node, e, mount, now_rt, rep);
        }
        return 0;
}

const PassStep pass_step_backups = {
        .name = "etcd backups",
        .stage = PASS_STAGE_BACKUP,
        .roles = 1U << NODE_ROLE_MASTER,
        .apply = backups_apply,
};
