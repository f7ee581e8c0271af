/* SPDX-License-Identifier: Apache-2.0 */
/* An etcd cluster's version change (docs/etcd-versions.md), for each member this master holds: observed in
 * the pass's observation (the image of its manifest on the volume, our marker, and while its version may
 * change the cluster: every member's version and health, the member list, the cluster version, the upgrade
 * lock, the pre-upgrade backup's record), decided by etcdapi/upgrade-plan.h (pure), and carried out between
 * the members' step and the manifests' write:
 *   - a member is held at the image its manifest runs until its turn (PassPlan.held_images: the manifest is
 *     rendered at that image, so a held member's manifest is current and nothing is written);
 *   - before the first member changes, a backup into the state store, recorded as the way back;
 *   - on its turn: the upgrade lock in the cluster, our marker on the volume, then the manifest at the
 *     wanted version; the lock released, the marker removed, once the member runs it, healthy, caught up;
 *   - the explicit downgrade below the cluster version: a restore request of the pre-upgrade backup, carried
 *     out by the restore step (docs/etcd-restore.md).
 * Every decision follows from what runs, so a master killed anywhere takes the same step again. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backup/backup.h"
#include "backup/restore.h"
#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/semver.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "components/etcd.h"
#include "daemon/etcd-source.h"
#include "daemon/pass-types.h"
#include "daemon/progress.h"
#include "daemon/step-etcd-upgrade.h"
#include "model/conventions.h"
#include "model/etcd-versions.h"

#define UPGRADE_LOCK_PREFIX                                                            \
        "/protokube/etcd-upgrade/" /* + the etcd cluster: one member changes at a time \
                                    */
/* s: the lock is held from the manifest's write until the member runs the new version and caught up (a
 * restart and a catch-up); a holder that died gives it up then */
#define UPGRADE_LOCK_TTL          600
#define UPGRADE_CALL_TIMEOUT      (3 * USEC_PER_SEC)
#define UPGRADE_BACKUP_FRESH_USEC (24ULL * 3600ULL * USEC_PER_SEC)

void pass_etcd_upgrade_done(PassEtcdUpgrade *u) {
        free(u->held_image);
        free(u->client_message);
        upgrade_survey_done(&u->survey);
        free(u->lock_holder);
        free(u->record_message);
        *u = (PassEtcdUpgrade){};
}

/* "<mount>/k8s.io/etcd-upgrade-<cluster>": written before this member's manifest changes version, removed
 * once it runs it and the lock is released, so a master that died in between finishes the change. */
static char *marker_path(const char *mount, const char *cluster) {
        return strjoin(mount, "/k8s.io/etcd-upgrade-", cluster);
}

static char *lock_key(const char *cluster) {
        return strjoin(UPGRADE_LOCK_PREFIX, cluster);
}

/* The image a manifest on the volume runs, kept only when its version is one protokube runs (a manifest
 * protokube did not write gets the spec's, as before any upgrade). */
static int held_image_of(const char *manifest, const EtcdClusterSpec *e, PassEtcdUpgrade *u) {
        _cleanup_free_ char *image = NULL;
        char tag[ETCD_VERSION_MAX];
        u->held_wanted = true;
        if (!manifest)
                return 0;
        int r = etcd_manifest_image(manifest, &image);
        if (r == -ENOMEM)
                return r;
        if (r < 0 || etcd_version_of_image(image, tag) < 0 || !etcd_version_find(tag)) {
                log_warning("etcd %s: the manifest on the volume runs no version protokube knows (%s): it "
                            "gets the spec's",
                            e->name, r < 0 ? "no image" : image);
                return 0;
        }
        u->held_wanted = streq_ptr(image, e->image) || (e->version && streq(e->version, tag));
        u->held_image = TAKE_PTR(image);
        return 0;
}

/* The client URL of every tagged member: this node's own at its address, the others' at their holders'. */
static int member_urls(const Pass *p, const NodeIdentity *node, const ClusterView *view, const EtcdTag *t,
                       const EtcdClusterSpec *e, char ***ret_names, char ***ret_urls, size_t *ret_self) {
        size_t n = strv_length(t->members);
        _cleanup_strv_free_ char **names = new0(char *, n + 1), **urls = new0(char *, n + 1);
        int client, peer;
        if (!names || !urls)
                return -ENOMEM;
        if (etcd_cluster_ports(e, &client, &peer) < 0)
                return -EINVAL;
        for (size_t k = 0; k < n; k++) {
                int r = etcd_member_name(t->cluster, t->members[k], &names[k]);
                if (r < 0)
                        return r;
                if (streq(t->members[k], t->member)) {
                        BackupEtcdSource src;
                        r = etcd_member_source(p->spec, e, node->internal_ips ? node->internal_ips[0] : NULL,
                                               &urls[k], &src);
                        *ret_self = k;
                } else
                        r = etcd_holder_client_url(view, isempty(e->tls_dir) ? "http" : "https", t->cluster,
                                                   t->members[k], client, &urls[k]);
                if (r < 0)
                        return r;
                /* "" for a member nobody holds: the array stays a strv its cleanup frees whole */
                if (!urls[k] && !(urls[k] = strdup("")))
                        return -ENOMEM;
        }
        *ret_names = TAKE_PTR(names);
        *ret_urls = TAKE_PTR(urls);
        return 0;
}

/* The record of the pre-upgrade backup, and whether a restore request names its backup already. */
static void read_record(PassContext *ctx, const char *cluster, PassEtcdUpgrade *u) {
        _cleanup_(store_freep) Store *owned = NULL;
        _cleanup_free_ char *err = NULL;
        RestoreRequest req;
        u->record_error = -ENOENT;
        if (!ctx->pass->spec->state_store)
                return;
        Store *s = pass_store(ctx, &owned, &err);
        if (!s) {
                u->record_error = -EIO;
                u->record_message = TAKE_PTR(err);
                return;
        }
        u->record_error = upgrade_record_get(s, cluster, &u->record, &u->record_message);
        if (u->record_error < 0)
                return;
        int r = restore_request_get(s, cluster, &req, &err);
        if (r >= 0)
                u->restore_requested = streq(req.snapshot, u->record.backup);
        else if (r != -ENOENT) { /* a request that cannot be read is never written over */
                u->record_error = r;
                u->record_message = strprintf("the restore request: %s", strna(err));
        }
}

/* A client of the members that have a URL (urls: n entries, "" for a member nobody holds). */
static int client_of(const Pass *p, const char *cluster, char *const *urls, size_t n, EtcdClient **ret,
                     char **ret_error) {
        _cleanup_strv_free_ char **endpoints = NULL;
        for (size_t k = 0; k < n; k++)
                if (!isempty(urls[k]) && strv_extend(&endpoints, urls[k]) < 0)
                        return -ENOMEM;
        return etcd_cluster_client_open(p->spec, cluster, endpoints, UPGRADE_CALL_TIMEOUT, ret, ret_error);
}

/* What the cluster says: every member, the lock, the record. */
static int survey(PassContext *ctx, const ClusterView *view, const EtcdTag *t, const EtcdClusterSpec *e,
                  PassEtcdUpgrade *u) {
        const Pass *p = ctx->pass;
        _cleanup_(etcd_client_freep) EtcdClient *c = NULL;
        _cleanup_strv_free_ char **names = NULL, **urls = NULL;
        _cleanup_free_ char *key = lock_key(t->cluster);
        size_t n = strv_length(t->members);
        if (!key)
                return -ENOMEM;
        u->surveyed = true;
        int r = member_urls(p, &ctx->obs->volumes.node, view, t, e, &names, &urls, &u->self);
        if (r < 0) {
                u->client_error = r;
                u->client_message = strprintf("cannot name the members' client URLs: %s", pk_strerror(r));
                return r == -ENOMEM || !u->client_message ? -ENOMEM : 0;
        }
        r = client_of(p, t->cluster, urls, n, &c, &u->client_message);
        if (r < 0) {
                u->client_error = r;
                return r == -ENOMEM ? r : 0;
        }
        r = upgrade_survey(c, names, (const char *const *)urls, n, &u->survey);
        if (r < 0)
                return r;
        r = etcd_lock_read(c, key, strna(p->node.node_name), &u->lock_holder, &u->lock_ours, NULL);
        if (r == -ENOMEM)
                return r;
        read_record(ctx, t->cluster, u);
        return 0;
}

/* One held member: its manifest's image and marker; the cluster when its version may change (the manifest
 * holds another version than the spec's, or a change of ours is not over). */
static int observe_upgrade(PassContext *ctx, const ClusterView *view, size_t i, const char *manifest,
                           PassEtcdUpgrade *u) {
        const Pass *p = ctx->pass;
        const VolumesInput *in = &ctx->obs->in;
        VolumeEligibility el = {};
        _cleanup_free_ char *mount = volume_mount_path(p->node.mount_root, in->volumes[i].id),
                            *marker = NULL;
        int r =
            mount ? volume_classify(&in->volumes[i], in->cluster, NULL, in->etcd_clusters, &el) : -ENOMEM;
        const EtcdClusterSpec *e =
            r >= 0 && el.eligible ? cluster_spec_find_etcd(p->spec, el.etcd.cluster) : NULL;
        if (e && !(marker = marker_path(mount, e->name)))
                r = -ENOMEM;
        if (r >= 0 && e) {
                u->observed = true;
                r = held_image_of(manifest, e, u);
        }
        if (r >= 0 && e) {
                u->marker = access(marker, F_OK) >= 0 || errno != ENOENT; /* unreadable: look */
                if (!u->held_wanted || u->marker)
                        r = survey(ctx, view, &el.etcd, e, u);
        }
        volume_eligibility_done(&el);
        return r == -ENOMEM ? r : 0; /* what could not be read is decided as such */
}

static int upgrade_observe(PassContext *ctx) {
        PassObservation *o = ctx->obs;
        _cleanup_(cluster_view_freep) ClusterView *view = NULL;
        if (o->volumes_error < 0)
                return 0;
        o->etcd_upgrades = new0(PassEtcdUpgrade, o->in.n_volumes + 1);
        if (!o->etcd_upgrades || volumes_view(&o->in, NULL, &view) == -ENOMEM)
                return -ENOMEM;
        for (size_t i = 0; i < o->in.n_volumes; i++) {
                if (!o->in.observed || o->in.observed[i].mount != MOUNT_STATE_OURS ||
                    (o->etcd_members && o->etcd_members[i].restoring))
                        continue;
                int r = observe_upgrade(ctx, view, i, o->in.observed[i].manifest_text, &o->etcd_upgrades[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

static bool runs_minor(const UpgradeSurvey *s, const Semver *v) {
        for (size_t k = 0; k < s->n_members; k++) {
                Semver m;
                if (s->members[k].version && semver_parse(s->members[k].version, 0, &m) >= 0 &&
                    semver_same_minor(&m, v))
                        return true;
        }
        return false;
}

/* The backup recorded for this change: for a downgrade below the cluster version, the one taken before the
 * upgrade from the wanted minor; for an upgrade, the one taken for the wanted minor, while it is fresh or
 * the change under way (a member runs the wanted minor already). */
static const char *recorded_backup(const EtcdClusterSpec *e, const PassEtcdUpgrade *u, usec_t now) {
        Semver want, from, to, cluster;
        usec_t taken;
        if (u->record_error < 0 || semver_parse(e->version, 0, &want) < 0 ||
            semver_parse(u->record.from, 0, &from) < 0 || semver_parse(u->record.to, 0, &to) < 0 ||
            backup_timestamp_parse(u->record.backup, &taken) < 0)
                return NULL;
        if (u->survey.cluster_version && semver_parse(u->survey.cluster_version, 0, &cluster) >= 0 &&
            semver_compare(&want, &cluster) < 0 && !semver_same_minor(&want, &cluster))
                return semver_same_minor(&from, &want) ? u->record.backup : NULL;
        if (!semver_same_minor(&to, &want))
                return NULL;
        return taken + UPGRADE_BACKUP_FRESH_USEC > now || runs_minor(&u->survey, &want) ? u->record.backup
                                                                                        : NULL;
}

/* The decision for one observed member, and the image its manifest is held at (NULL: the spec's). */
static void decide(const Pass *p, const PassObservation *o, size_t i, const PassEtcdUpgrade *u,
                   UpgradePlan *ret, const char **ret_held) {
        VolumeEligibility el = {};
        *ret_held = NULL;
        if (!u->observed || (u->held_wanted && !u->marker)) {
                *ret = (UpgradePlan){ .decision = UPGRADE_NONE,
                                      .reason = "its manifest runs the wanted version" };
                return;
        }
        const EtcdClusterSpec *e = NULL;
        if (volume_classify(&o->in.volumes[i], o->in.cluster, NULL, o->in.etcd_clusters, &el) >= 0 &&
            el.eligible)
                e = cluster_spec_find_etcd(p->spec, el.etcd.cluster);
        volume_eligibility_done(&el);
        if (!e || u->client_error < 0 || !u->surveyed) {
                *ret = (UpgradePlan){ .decision = UPGRADE_WAIT,
                                      .subject = u->client_message,
                                      .reason = "the other members cannot be asked" };
                *ret_held = u->held_image;
                return;
        }
        if (u->record_error < 0 && u->record_error != -ENOENT) {
                /* only absent is absent: an unreadable record is never replaced by a new backup's */
                *ret =
                    (UpgradePlan){ .decision = UPGRADE_WAIT,
                                   .subject = u->record_message,
                                   .reason = "the upgrade's documents in the state store cannot be read" };
                *ret_held = u->held_image;
                return;
        }
        const PassEtcdMember *m = o->etcd_members ? &o->etcd_members[i] : NULL;
        UpgradePlanInput in = {
                .wanted = e->version,
                .known = etcd_versions_list(),
                .members = u->survey.members,
                .n_members = u->survey.n_members,
                .n_listed = u->survey.n_listed,
                .self = u->self,
                .cluster_version = u->survey.cluster_version,
                .restore_under_way = m && m->restoring,
                .replacement_under_way = u->survey.learner || (m && m->change_pending),
                .lock_holder = u->lock_holder,
                .lock_ours = u->lock_ours,
                .backup = recorded_backup(e, u, o->realtime),
                .allow_downgrade = e->allow_downgrade.value,
        };
        upgrade_plan_decide(&in, ret);
        if (ret->decision != UPGRADE_MEMBER && ret->decision != UPGRADE_NONE)
                *ret_held = u->held_image;
}

static int upgrade_plan(const Pass *pass, const PassObservation *o, PassPlan *plan) {
        if (o->volumes_error < 0 || !o->etcd_upgrades)
                return 0;
        plan->upgrade_plans = new0(UpgradePlan, o->in.n_volumes + 1);
        plan->held_images = new0(const char *, o->in.n_volumes + 1);
        if (!plan->upgrade_plans || !plan->held_images)
                return -ENOMEM;
        for (size_t i = 0; i < o->in.n_volumes; i++)
                decide(pass, o, i, &o->etcd_upgrades[i], &plan->upgrade_plans[i], &plan->held_images[i]);
        return 0;
}

/* What apply works with for one selection's member. */
typedef struct Held {
        size_t k, i; /* the selection, its volume */
        const VolumeEligibility *el;
        const EtcdClusterSpec *e;
        char *mount;
        PassEtcdUpgrade *u;
        UpgradePlan *d;
} Held;

static void held_done(Held *h) {
        free(h->mount);
}

/* "etcd main member a: " and the rest, into the report under the etcd stage and the log. */
static void say(PassContext *ctx, const Held *h, int r, const char *fmt, ...) _printf_(4, 5);
static void say(PassContext *ctx, const Held *h, int r, const char *fmt, ...) {
        va_list ap;
        _cleanup_free_ char *what = NULL;
        va_start(ap, fmt);
        if (vasprintf(&what, fmt, ap) < 0)
                what = NULL;
        va_end(ap);
        _cleanup_free_ char *why =
            strprintf("etcd %s member %s: %s", h->e->name, h->el->etcd.member, strna(what));
        if (r == PK_EWAITING)
                log_info("%s.", strna(why));
        else
                log_error("%s.", strna(why));
        pass_report_error(ctx->rep, PASS_STAGE_ETCD, r, why ?: h->e->name);
}

static int open_client(PassContext *ctx, const Held *h, EtcdClient **ret, char **ret_error) {
        _cleanup_strv_free_ char **names = NULL, **urls = NULL;
        size_t self;
        int r = member_urls(ctx->pass, &ctx->obs->volumes.node, ctx->plan->view, &h->el->etcd, h->e, &names,
                            &urls, &self);
        return r < 0 ? r
                     : client_of(ctx->pass, h->e->name, urls, strv_length(h->el->etcd.members), ret,
                                 ret_error);
}

/* The backup before the first member changes: taken from this member into the state store under this
 * second's timestamp, then recorded as the way back. */
static int take_backup(PassContext *ctx, const Held *h) {
        Pass *p = ctx->pass;
        const NodeIdentity *node = &ctx->obs->volumes.node;
        _cleanup_(store_freep) Store *owned = NULL;
        _cleanup_free_ char *err = NULL, *endpoint = NULL;
        BackupEtcdSource src = {};
        char ts[BACKUP_TIMESTAMP_LEN + 1];
        uint64_t size = 0;
        const char *from = h->u->survey.members[h->u->self].version;
        if (!p->spec->state_store) {
                say(ctx, h, PK_ESPEC, "an upgrade takes a backup first, and the spec names no stateStore");
                return 0;
        }
        Store *s = pass_store(ctx, &owned, &err);
        if (!s) {
                say(ctx, h, -EIO, "the pre-upgrade backup: %s", strna(err));
                return 0;
        }
        if ((isempty(p->backup_upload_id) && backup_upload_id_new(p->backup_upload_id) < 0) ||
            backup_timestamp_format(now(CLOCK_REALTIME), ts) < 0 || !from) {
                say(ctx, h, -EIO, "the pre-upgrade backup: %s",
                    from ? "no random upload id or no clock" : "this member's version is not known");
                return 0;
        }
        int r = etcd_member_source(p->spec, h->e, node->internal_ips ? node->internal_ips[0] : NULL,
                                   &endpoint, &src);
        if (r < 0)
                return r;
        pass_progress_step("etcd %s: the pre-upgrade backup", h->e->name);
        r = backup_take(s, h->e->name, ts, node->name, p->backup_upload_id, &src, h->mount, &size, &err);
        if (r >= 0) {
                UpgradeRecord rec = {};
                snprintf(rec.backup, sizeof(rec.backup), "%s", ts);
                snprintf(rec.from, sizeof(rec.from), "%s", from);
                snprintf(rec.to, sizeof(rec.to), "%s", h->e->version);
                snprintf(rec.node, sizeof(rec.node), "%s", node->name);
                free(err), err = NULL;
                r = upgrade_record_put(s, h->e->name, &rec, &err);
        }
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                say(ctx, h, r, "the pre-upgrade backup %s: %s", ts, err ?: pk_strerror(r));
                return 0;
        }
        log_info("etcd %s: the pre-upgrade backup %s taken (%" PRIu64
                 " bytes, etcd %s), recorded as the way "
                 "back from %s.",
                 h->e->name, ts, size, from, h->e->version);
        ctx->rep->actions_applied++;
        return 0;
}

static int write_marker(const Held *h) {
        _cleanup_free_ char *path = marker_path(h->mount, h->e->name), *text = strjoin(h->e->version, "\n");
        if (!path || !text)
                return -ENOMEM;
        return write_file_atomic(path, text, strlen(text), 0644, false);
}

/* This member's turn: the lock, the marker, and the manifest at the wanted version is the one to write. A
 * lock another master took first holds the manifest back at the image it runs. */
static int change_member(PassContext *ctx, const Held *h) {
        const Pass *p = ctx->pass;
        _cleanup_(etcd_client_freep) EtcdClient *c = NULL;
        _cleanup_free_ char *err = NULL, *holder = NULL, *key = lock_key(h->e->name);
        const char *node = strna(p->node.node_name);
        uint64_t lease = 0;
        if (!key)
                return -ENOMEM;
        int r = open_client(ctx, h, &c, &err);
        if (r >= 0 && !h->u->lock_ours)
                r = etcd_lock_take(c, key, node, UPGRADE_LOCK_TTL, &lease, &holder, &err);
        if (r == 0 && !h->u->lock_ours && !streq_ptr(holder, node)) {
                ctx->held_images[h->i] = h->u->held_image;
                say(ctx, h, PK_EWAITING, "another master ('%s') took the upgrade lock first", strna(holder));
                return 0;
        }
        if (r >= 0)
                r = write_marker(h);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                ctx->held_images[h->i] = h->u->held_image;
                say(ctx, h, r, "cannot take its turn to go to %s: %s", h->e->version, err ?: pk_strerror(r));
                return 0;
        }
        log_info("etcd %s member %s: from etcd %s to %s (the upgrade lock is ours; backup %s).", h->e->name,
                 h->el->etcd.member, strna(h->u->survey.members[h->u->self].version), h->e->version,
                 strna(h->d->backup));
        ctx->rep->actions_applied++;
        return 0;
}

/* The explicit downgrade: a restore request of the pre-upgrade backup (docs/etcd-restore.md), written
 * once, under the upgrade lock. */
static int request_restore(PassContext *ctx, const Held *h) {
        const Pass *p = ctx->pass;
        _cleanup_(etcd_client_freep) EtcdClient *c = NULL;
        _cleanup_(store_freep) Store *owned = NULL;
        _cleanup_free_ char *err = NULL, *holder = NULL, *key = lock_key(h->e->name);
        uint64_t lease = 0;
        if (h->u->restore_requested)
                return 0; /* the restore step carries it out */
        if (!key)
                return -ENOMEM;
        const char *node = strna(p->node.node_name);
        Store *s = pass_store(ctx, &owned, &err);
        int r = s ? open_client(ctx, h, &c, &err) : -EIO;
        if (r >= 0 && !h->u->lock_ours)
                r = etcd_lock_take(c, key, node, UPGRADE_LOCK_TTL, &lease, &holder, &err);
        if (r == 0 && !h->u->lock_ours && !streq_ptr(holder, node))
                return 0; /* another master writes it */
        RestoreRequest req = { .requested = now(CLOCK_REALTIME) };
        snprintf(req.snapshot, sizeof(req.snapshot), "%s", h->d->backup);
        if (r >= 0)
                r = restore_id_new(req.requested, req.id);
        if (r >= 0) {
                log_warning("etcd %s: the downgrade to %s below the cluster version %s restores the "
                            "pre-upgrade backup %s: every write after it is lost.",
                            h->e->name, h->e->version, strna(h->u->survey.cluster_version), req.snapshot);
                r = restore_request_put(s, h->e->name, &req, &err);
        }
        if (c) /* ours, however it came to be: taken now, or left by this master's upgrade */
                (void)etcd_lock_release(c, key, node, NULL);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                say(ctx, h, r, "cannot request the downgrade's restore: %s", err ?: pk_strerror(r));
        else
                ctx->rep->actions_applied++;
        return 0;
}

/* The change is over for this member (or refused: a refused change holds nothing): the lock released, the
 * marker removed. */
static int finish_member(PassContext *ctx, const Held *h) {
        _cleanup_(etcd_client_freep) EtcdClient *c = NULL;
        _cleanup_free_ char *err = NULL, *key = lock_key(h->e->name),
                            *marker = marker_path(h->mount, h->e->name);
        if (!key || !marker)
                return -ENOMEM;
        int r = 0;
        if (h->d->release_lock || (h->d->decision == UPGRADE_REFUSE && h->u->lock_ours)) {
                r = open_client(ctx, h, &c, &err);
                if (r >= 0)
                        r = etcd_lock_release(c, key, strna(ctx->pass->node.node_name), &err);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        say(ctx, h, r, "cannot release the upgrade lock (its lease ends it in %d s): %s",
                            UPGRADE_LOCK_TTL, err ?: pk_strerror(r));
                        return 0;
                }
                log_info("etcd %s member %s: runs %s; the upgrade lock released.", h->e->name,
                         h->el->etcd.member, strna(h->u->survey.members[h->u->self].version));
        }
        if (h->d->decision == UPGRADE_NONE && h->u->marker && unlink(marker) < 0 && errno != ENOENT)
                say(ctx, h, -errno, "cannot remove '%s': %m", marker);
        return 0;
}

static int act(PassContext *ctx, const Held *h) {
        switch (h->d->decision) {
        case UPGRADE_BACKUP:
                return take_backup(ctx, h);
        case UPGRADE_MEMBER:
                return change_member(ctx, h);
        case UPGRADE_RESTORE:
                return request_restore(ctx, h);
        case UPGRADE_WAIT:
                say(ctx, h, PK_EWAITING, "etcd %s waits: %s%s%s", h->e->version, h->d->reason,
                    h->d->subject ? ": " : "", strempty(h->d->subject));
                return finish_member(ctx, h); /* every member runs it: the lock, until etcd moves */
        case UPGRADE_REFUSE:
                say(ctx, h, PK_ESPEC, "etcd %s is refused: %s%s%s", h->e->version, h->d->reason,
                    h->d->subject ? ": " : "", strempty(h->d->subject));
                return finish_member(ctx, h);
        default:
                return finish_member(ctx, h);
        }
}

/* A label value for /metrics: what etcd answered, kept to the characters of a version or a name. */
static void label(char *dst, size_t size, const char *src) {
        size_t n = 0;
        for (const char *c = src; c && *c && n + 1 < size; c++)
                dst[n++] = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:", *c)
                               ? *c
                               : '_';
        dst[n] = 0;
}

/* Every member as this master saw it, for /metrics (report.h). */
static void report_versions(PassContext *ctx, const Held *h) {
        PassReport *rep = ctx->rep;
        const UpgradeSurvey *s = &h->u->survey;
        char step[48];
        const UpgradePlan *d = h->d;
        snprintf(step, sizeof(step), "%s%s%s", upgrade_decision_to_string(d->decision),
                 d->decision == UPGRADE_WAIT || d->decision == UPGRADE_REFUSE ? ":" : "",
                 d->decision == UPGRADE_WAIT     ? upgrade_wait_to_string(d->wait)
                 : d->decision == UPGRADE_REFUSE ? upgrade_refusal_to_string(d->refusal)
                                                 : "");
        for (size_t k = 0; k < s->n_members && rep->n_etcd_versions < PASS_ETCD_VERSIONS_MAX; k++) {
                PassEtcdVersionInfo *v = &rep->etcd_versions[rep->n_etcd_versions++];
                label(v->cluster, sizeof(v->cluster), h->e->name);
                label(v->member, sizeof(v->member), s->members[k].name);
                label(v->running, sizeof(v->running), s->members[k].version);
                label(v->wanted, sizeof(v->wanted), h->e->version);
                label(v->cluster_version, sizeof(v->cluster_version), s->cluster_version);
                label(v->step, sizeof(v->step), step);
        }
}

/* The selection's held member, or 0 when this step does not decide its manifest: not eligible, held back by
 * an earlier step, a restore under way (the restore step owns the manifest). */
static int held_member(PassContext *ctx, PassWave wave, size_t k, Held *ret) {
        const PassPlan *plan = ctx->plan;
        const bool *only = pass_wave_selections(ctx, wave);
        size_t i = plan->volumes.selections[k].volume;
        if ((only && !only[k]) || i == SIZE_MAX || !plan->volumes.eligibility[i].eligible ||
            !ctx->etcd_texts[k] || pass_restoring(ctx, i) || !ctx->obs->etcd_upgrades)
                return 0;
        const VolumeEligibility *el = &plan->volumes.eligibility[i];
        *ret = (Held){ .k = k,
                       .i = i,
                       .el = el,
                       .e = cluster_spec_find_etcd(ctx->pass->spec, el->etcd.cluster),
                       .mount = volume_mount_path(ctx->pass->node.mount_root, plan->in.volumes[i].id),
                       .u = &ctx->obs->etcd_upgrades[i],
                       .d = &ctx->upgrade_plans[i] };
        if (!ret->mount)
                return -ENOMEM;
        return ret->e ? 1 : 0;
}

/* The manifest at the image the apply holds the member at, when that is not the one the plan rendered. */
static int rerender(PassContext *ctx, const Held *h, const char *planned) {
        const char *image = ctx->held_images[h->i];
        if (image == planned)
                return 0;
        char *t = NULL;
        int r = pass_render_member(ctx->pass, h->el, ctx->plan->in.volumes[h->i].id,
                                   pass_member_existing(ctx->obs, ctx->plan, h->i), image, &t);
        if (r < 0)
                return r;
        if (strv_push(&ctx->etcd_owned, t) < 0) {
                free(t);
                return -ENOMEM;
        }
        ctx->etcd_texts[h->k] = t;
        return 0;
}

/* fn on each held member of the wave whose manifest this step decides; stops at the first failure. */
static int each_held(PassContext *ctx, PassWave wave, int (*fn)(PassContext *ctx, Held *h)) {
        if (ctx->obs->volumes_error < 0 || pass_wave_empty(ctx, wave))
                return 0;
        for (size_t k = 0; k < ctx->plan->volumes.n_selections; k++) {
                _cleanup_(held_done) Held h = {};
                int r = held_member(ctx, wave, k, &h);
                if (r > 0)
                        r = fn(ctx, &h);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* A member whose volume was mounted in this pass was not observed (it had no file system yet): observed now
 * (its manifest read from the volume) and decided, into the context's decisions. */
static int revise_member(PassContext *ctx, Held *h) {
        _cleanup_free_ char *manifest = NULL;
        if (h->u->observed)
                return 0;
        int r = volume_manifest_read(h->mount, h->e->name, &manifest);
        if (r >= 0)
                r = observe_upgrade(ctx, ctx->plan->view, h->i, manifest, h->u);
        if (r < 0)
                return r;
        decide(ctx->pass, ctx->obs, h->i, h->u, h->d, &ctx->held_images[h->i]);
        return 0;
}

static int upgrade_revise(PassContext *ctx, PassWave wave) {
        return each_held(ctx, wave, revise_member);
}

static int apply_member(PassContext *ctx, Held *h) {
        int r = h->u->observed ? act(ctx, h) : 0;
        if (r >= 0 && h->u->surveyed)
                report_versions(ctx, h);
        return r < 0 ? r : rerender(ctx, h, pass_held_image(ctx->plan, h->i));
}

static int upgrade_apply(PassContext *ctx, PassWave wave) {
        return each_held(ctx, wave, apply_member);
}

static void print_members(const PassEtcdUpgrade *u, const char *cluster, FILE *out) {
        const UpgradeSurvey *s = &u->survey;
        fprintf(out, "etcd %s: members", cluster);
        for (size_t k = 0; k < s->n_members; k++)
                fprintf(out, "%s %s %s%s%s", k ? "," : "", s->members[k].name, strna(s->members[k].version),
                        s->members[k].is_leader ? " (leader)" : "",
                        s->members[k].version && !s->members[k].healthy ? " (unhealthy)" : "");
        fprintf(out, "; cluster version %s", strna(s->cluster_version));
        if (u->lock_holder || u->lock_ours)
                fprintf(out, "; upgrade lock: %s", u->lock_ours ? "ours" : u->lock_holder);
        if (u->record_error >= 0)
                fprintf(out, "; pre-upgrade backup %s (%s to %s)", u->record.backup, u->record.from,
                        u->record.to);
        fputc('\n', out);
}

static int upgrade_print(const Pass *pass, const PassObservation *o, const PassPlan *plan, FILE *out) {
        if (o->volumes_error < 0 || !plan->upgrade_plans)
                return 0;
        for (size_t k = 0; k < plan->volumes.n_selections; k++) {
                size_t i = plan->volumes.selections[k].volume;
                if (i == SIZE_MAX || !plan->volumes.eligibility[i].eligible || !o->etcd_upgrades[i].observed)
                        continue;
                const PassEtcdUpgrade *u = &o->etcd_upgrades[i];
                const UpgradePlan *d = &plan->upgrade_plans[i];
                const char *c = plan->volumes.eligibility[i].etcd.cluster;
                const EtcdClusterSpec *e = cluster_spec_find_etcd(pass->spec, c);
                if (!e || (u->held_wanted && !u->marker))
                        continue; /* nothing to change: nothing to say */
                if (u->surveyed && u->client_error >= 0)
                        print_members(u, c, out);
                fprintf(out, "etcd %s member %s: etcd %s wanted, manifest at %s: %s", c,
                        plan->volumes.eligibility[i].etcd.member, strna(e->version), strna(u->held_image),
                        upgrade_decision_to_string(d->decision));
                if (d->decision == UPGRADE_WAIT)
                        fprintf(out, " (%s)", upgrade_wait_to_string(d->wait));
                else if (d->decision == UPGRADE_REFUSE)
                        fprintf(out, " (%s)", upgrade_refusal_to_string(d->refusal));
                fprintf(out, ": %s%s%s%s\n", strna(d->reason), d->subject ? ": " : "", strempty(d->subject),
                        d->release_lock ? "; the upgrade lock is released" : "");
        }
        return 0;
}

const PassStep pass_step_etcd_upgrade = {
        .name = "etcd upgrade",
        .stage = PASS_STAGE_ETCD,
        .roles = 1U << NODE_ROLE_MASTER,
        .observe = upgrade_observe,
        .plan = upgrade_plan,
        .revise = upgrade_revise,
        .apply = upgrade_apply,
        .print = upgrade_print,
};
