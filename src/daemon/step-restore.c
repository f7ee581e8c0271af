/* SPDX-License-Identifier: Apache-2.0 */
/* A whole etcd cluster restored from a backup (docs/etcd-restore.md), one member per master: after the
 * certificates and before the membership step, for each etcd member this node holds on a mounted volume,
 * the cluster's request in the state store and the member's state file on the volume are observed, the next
 * step decided (backup/restore.h, pure) and taken, as many as can be taken in one pass: download the
 * snapshot to the volume, take the manifest away (kubelet stops etcd), wait until no process has a file open
 * on the volume, move the data aside, write the manifest with the init container that restores the
 * snapshot, and once the member answers healthy report done and write the manifest without it. The state
 * file is written after each step (atomically), and every step is idempotent, so a master killed anywhere
 * resumes in the next pass. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backup/restore.h"
#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/proc-util.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "components/etcd.h"
#include "daemon/etcd-source.h"
#include "daemon/pass-types.h"
#include "daemon/progress.h"
#include "daemon/step-restore.h"
#include "etcdapi/etcd-client.h"
#include "manifest/manifest-dir.h"
#include "model/conventions.h"
#include "store/store.h"

#define RESTORE_STEPS_MAX      8 /* every step of a member once, and a download again */
#define RESTORE_STATUS_TIMEOUT (5 * USEC_PER_SEC)

/* One member's volume: its paths, and what the pass learned about its restore. */
typedef struct RestoreMember {
        const char *cluster, *member;
        char *const *members;
        const char *volume_id;
        char *mount, *state_path, *data, *restore_dir;
        dev_t dev;
        bool request_unlisted; /* the pass's listing of restores/ shows no request for the cluster */
        bool have_request;
        RestoreRequest request;
        bool finished;
        bool have_state;
        RestoreState state;
} RestoreMember;

static void restore_member_done(RestoreMember *m) {
        free(m->mount);
        free(m->state_path);
        free(m->data);
        free(m->restore_dir);
}

static char *snapshot_path(const RestoreMember *m, const char *id) {
        return strjoin(m->restore_dir, "/", id, ".db");
}

static char *aside_path(const RestoreMember *m, const char *id) {
        return strjoin(m->data, ".pre-restore-", id);
}

/* The paths of the member of selection e on its mounted volume; 0 with nothing set when it is not mounted
 * (decided once it is). 1 when set. */
static int member_paths(const Pass *p, const VolumeEligibility *e, const char *volume_id, RestoreMember *m) {
        _cleanup_free_ char *parent = NULL, *data = NULL, *rdir = NULL;
        struct stat a, b;
        *m = (RestoreMember){ .cluster = e->etcd.cluster,
                              .member = e->etcd.member,
                              .members = e->etcd.members,
                              .volume_id = volume_id };
        m->mount = volume_mount_path(p->node.mount_root, volume_id);
        parent = m->mount ? strjoin(m->mount, "/..") : NULL;
        if (!parent || etcd_data_dir(m->cluster, &data) < 0 || etcd_restore_dir(m->cluster, &rdir) < 0)
                return -ENOMEM;
        /* an empty mount point must never be taken for the volume */
        if (stat(m->mount, &a) < 0 || stat(parent, &b) < 0 || a.st_dev == b.st_dev)
                return 0;
        m->dev = a.st_dev;
        m->state_path = strjoin(m->mount, "/k8s.io/restore-", m->cluster, ".json");
        m->data = strjoin(m->mount, data);
        m->restore_dir = strjoin(m->mount, rdir);
        if (!m->state_path || !m->data || !m->restore_dir)
                return -ENOMEM;
        return 1;
}

/* The state file; absent is no state. One that cannot be read or parsed is an error naming it. */
static int read_state(RestoreMember *m, char **ret_error) {
        _cleanup_free_ char *text = NULL, *err = NULL;
        size_t len;
        int r = read_full_file(m->state_path, RESTORE_TEXT_MAX, &text, &len);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return error_setf(ret_error, r, "cannot read '%s': %s", m->state_path, pk_strerror(r));
        r = restore_state_parse(text, len, &m->state, &err);
        if (r < 0)
                return error_setf(ret_error, r, "%s: %s", m->state_path, strna(err));
        m->have_state = true;
        return 0;
}

static int write_state(RestoreMember *m, const char *id, RestoreStep step, char **ret_error) {
        _cleanup_free_ char *text = NULL, *dir = strjoin(m->mount, "/k8s.io");
        RestoreState s = { .step = step };
        snprintf(s.id, sizeof(s.id), "%s", id);
        int r = dir ? restore_state_format(&s, &text) : -ENOMEM;
        if (r >= 0)
                r = mkdir_p(dir, 0755);
        if (r >= 0)
                r = write_file_atomic(m->state_path, text, strlen(text), 0644, false);
        if (r < 0)
                return error_setf(ret_error, r, "cannot write '%s': %s", m->state_path, pk_strerror(r));
        m->state = s;
        m->have_state = true;
        return 0;
}

/* The request and whether every member reported it done. */
static int read_request(Store *s, RestoreMember *m, char **ret_error) {
        RestoreProgress pr = {};
        if (m->request_unlisted)
                return 0;
        int r = restore_request_get(s, m->cluster, &m->request, ret_error);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        r = restore_progress_get(s, m->cluster, m->request.id, &pr, ret_error);
        if (r < 0)
                return r;
        m->have_request = true;
        m->finished = pr.finished;
        restore_progress_done(&pr);
        return 0;
}

/* The member at this node's address answers with a leader and no errors. */
static bool member_healthy(const Pass *p, const char *address, const char *cluster) {
        _cleanup_(etcd_client_freep) EtcdClient *c = NULL;
        _cleanup_free_ char *endpoint = NULL, *err = NULL;
        const EtcdClusterSpec *e = cluster_spec_find_etcd(p->spec, cluster);
        BackupEtcdSource src;
        EtcdStatus st = {};
        if (!e || etcd_member_source(p->spec, e, address, &endpoint, &src) < 0)
                return false;
        char *endpoints[] = { endpoint, NULL };
        EtcdClientConfig cfg = { .endpoints = endpoints,
                                 .ca_file = src.ca_file,
                                 .cert_file = src.cert_file,
                                 .key_file = src.key_file,
                                 .timeout = RESTORE_STATUS_TIMEOUT };
        if (etcd_client_new(&cfg, &c) < 0 || etcd_maintenance_status(c, endpoint, &st, &err) < 0) {
                log_debug("etcd %s: the restored member does not answer yet: %s", cluster, strna(err));
                return false;
        }
        bool ok = st.leader != 0 && strv_length(st.errors) == 0;
        etcd_status_done(&st);
        return ok;
}

/* The snapshot into <restore dir>/<id>.db: into a file of its own first, checked by the download, then
 * renamed, so the name exists only for a whole, checked snapshot. 0600: it is the cluster's data. */
static int download(Store *s, RestoreMember *m, const char *id, char **ret_error) {
        _cleanup_free_ char *path = snapshot_path(m, id), *part = path ? strjoin(path, ".part") : NULL;
        if (!part)
                return -ENOMEM;
        if (!m->have_request || !streq(m->request.id, id))
                return error_setf(ret_error, -ENOENT,
                                  "the snapshot of restore %s is not on the volume and the request is gone",
                                  id);
        int r = mkdir_p(m->restore_dir, 0700);
        if (r < 0)
                return error_setf(ret_error, r, "cannot create '%s': %s", m->restore_dir, pk_strerror(r));
        int fd = open(part, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return error_setf(ret_error, -errno, "cannot create '%s': %m", part);
        r = backup_download(s, m->cluster, m->request.snapshot, fd, ret_error);
        if (r >= 0 && fsync(fd) < 0)
                r = error_setf(ret_error, -errno, "cannot write '%s': %m", part);
        close(fd);
        if (r >= 0 && rename(part, path) < 0)
                r = error_setf(ret_error, -errno, "cannot rename '%s': %m", part);
        if (r < 0)
                (void)unlink(part);
        return r;
}

/* Takes the manifest away: the link kubelet reads, then the file on the volume (so the volumes' plan does
 * not link it again: it would write it first, and the pass holds the text back). */
static int take_manifest_away(const Pass *p, RestoreMember *m, char **ret_error) {
        _cleanup_free_ char *link = volume_manifest_link(p->node.manifest_dir, m->cluster),
                            *file = volume_manifest_path(m->mount, m->cluster);
        if (!link || !file)
                return -ENOMEM;
        if (unlink(link) < 0 && errno != ENOENT)
                return error_setf(ret_error, -errno, "cannot remove '%s': %m", link);
        if (unlink(file) < 0 && errno != ENOENT)
                return error_setf(ret_error, -errno, "cannot remove '%s': %m", file);
        return 0;
}

/* The data dir goes aside, never deleted. Done when it is aside and no data dir is there (an empty one,
 * made by nobody we know, is removed; a full one is left to a human: CONFLICT before we get here). */
static int move_aside(RestoreMember *m, const char *id, char **ret_error) {
        _cleanup_free_ char *aside = aside_path(m, id);
        if (!aside)
                return -ENOMEM;
        int r = dir_present(aside);
        if (r < 0) /* unreadable is not absent: nothing moves */
                return error_setf(ret_error, r, "cannot read '%s': %s", aside, pk_strerror(r));
        if (r > 0) {
                if (rmdir(m->data) < 0 && errno != ENOENT)
                        return error_setf(ret_error, -errno, "both '%s' and '%s' exist: %m", m->data, aside);
                return 0;
        }
        if (rename(m->data, aside) < 0 && errno != ENOENT)
                return error_setf(ret_error, -errno, "cannot move '%s' to '%s': %m", m->data, aside);
        return 0;
}

/* The member's manifest: with the restore's init container, or without (restore_id NULL). */
static int render(const Pass *p, const RestoreMember *m, const char *restore_id, char **ret) {
        EtcdMemberAssignment a = { .cluster = m->cluster,
                                   .member = m->member,
                                   .members = m->members,
                                   .mount_path = m->mount,
                                   .restore_id = restore_id };
        return etcd_manifest_render(p->spec, &a, ret);
}

/* Writes the manifest on the volume and links it, whatever this pass's volume plan holds: a restore may get
 * from "stop" to "restore" within one pass, after the plan found the manifest current. */
static int put_manifest(const Pass *p, const RestoreMember *m, const char *text, char **ret_error) {
        _cleanup_free_ char *link = volume_manifest_link(p->node.manifest_dir, m->cluster),
                            *file = volume_manifest_path(m->mount, m->cluster), *dir = NULL;
        if (!link || !file || !(dir = strdup(file)))
                return -ENOMEM;
        *strrchr(dir, '/') = 0;
        int r = mkdir_p(dir, 0755);
        if (r >= 0)
                r = write_file_atomic(file, text, strlen(text), 0644, true);
        if (r >= 0)
                r = mkdir_p(p->node.manifest_dir, 0755);
        if (r >= 0)
                r = manifest_symlink(link, file);
        if (r == 0) /* the link was there: renewed, so kubelet's inotify watch sees the new text now */
                r = manifest_symlink_renew(link, file);
        return r < 0 ? error_setf(ret_error, r, "cannot write the manifest '%s': %s", file, pk_strerror(r))
                     : 0;
}

/* Whether each of the paths is there: only absence (ENOENT) is "absent"; any other error (EIO of a failing
 * volume, ELOOP, a file where a directory belongs) stops the restore's steps this pass, naming the path. */
static int present(const char *path, bool dir, bool *ret, char **ret_error) {
        int r = !path ? -ENOMEM : dir ? dir_present(path) : file_present(path);
        if (r < 0)
                return r == -ENOMEM ? r
                                    : error_setf(ret_error, r, "cannot read '%s': %s", path, pk_strerror(r));
        *ret = r > 0;
        return 0;
}

static int gather(const Pass *p, const RestoreMember *m, const char *address, RestoreFacts *f,
                  char **ret_error) {
        RestoreDecision d;
        *f = (RestoreFacts){ .request = m->have_request ? &m->request : NULL,
                             .request_finished = m->finished,
                             .state = m->have_state ? &m->state : NULL };
        restore_decide(f, &d); /* which request, how far: the facts to look at follow from it */
        if (!d.id)
                return 0;
        _cleanup_free_ char *snap = snapshot_path(m, d.id), *aside = aside_path(m, d.id),
                            *member = strjoin(m->data, "/member");
        int r = present(snap, false, &f->snapshot_present, ret_error);
        if (r >= 0)
                r = present(member, true, &f->data_present, ret_error);
        if (r >= 0)
                r = present(aside, true, &f->aside_present, ret_error);
        if (r < 0)
                return r;
        if (d.step == RESTORE_STEP_STOPPING)
                f->etcd_running = proc_files_open_on(m->dev, NULL) != 0; /* unreadable /proc: not stopped */
        if (d.step == RESTORE_STEP_RESTORING && f->data_present)
                f->member_healthy = member_healthy(p, address, m->cluster);
        return 0;
}

/* The step reached, in the state file and (for `etcd restore --wait`) in the store; nothing when it is
 * recorded already. */
static int record(const Pass *p, Store *s, RestoreMember *m, const RestoreDecision *d, char **ret_error) {
        if (d->next == d->step && m->have_state && streq(m->state.id, d->id))
                return 0;
        int r = write_state(m, d->id, d->next, ret_error);
        if (r < 0)
                return r;
        if (d->next != RESTORE_STEP_DONE) /* (done: reported by its step, before the state says so) */
                (void)restore_report_put(s, m->cluster, d->id, m->member, m->members, d->next,
                                         p->node.node_name, NULL);
        log_info("etcd %s member %s: restore %s: %s: %s.", m->cluster, m->member, d->id,
                 restore_action_to_string(d->action), restore_step_to_string(d->next));
        return 0;
}

/* Takes one decided step; 1 when the next may follow in this pass, 0 when it waits, < 0 on failure. */
static int take_step(Pass *p, Store *s, RestoreMember *m, const RestoreDecision *d, char **text,
                     char ***owned, char **ret_error) {
        _cleanup_free_ char *t = NULL;
        int r = 0;
        switch (d->action) {
        case RESTORE_DOWNLOAD:
                pass_progress_step("etcd %s: downloading snapshot for restore %s", m->cluster, d->id);
                r = download(s, m, d->id, ret_error);
                break;
        case RESTORE_STOP:
        case RESTORE_WAIT_STOPPED:
                /* the intent first: a master that dies before the manifest is gone takes it away again,
                 * with the state saying so, in its next pass, and never starts etcd on it meanwhile */
                if (d->action == RESTORE_STOP)
                        r = record(p, s, m, d, ret_error);
                if (r >= 0)
                        r = take_manifest_away(p, m, ret_error);
                if (r >= 0 && d->action == RESTORE_WAIT_STOPPED)
                        return 0;
                break;
        case RESTORE_MOVE_ASIDE:
                r = move_aside(m, d->id, ret_error);
                break;
        case RESTORE_WRITE_MANIFEST:
        case RESTORE_WAIT_HEALTHY:
        case RESTORE_REPORT_DONE:
                r = render(p, m, d->restore_manifest ? d->id : NULL, &t);
                if (r >= 0)
                        r = put_manifest(p, m, t, ret_error);
                if (r >= 0 && d->action == RESTORE_REPORT_DONE)
                        r = restore_report_put(s, m->cluster, d->id, m->member, m->members,
                                               RESTORE_STEP_DONE, p->node.node_name, ret_error);
                if (r >= 0) {
                        if (strv_push(owned, t) < 0)
                                return -ENOMEM;
                        *text = TAKE_PTR(t);
                }
                break;
        default:
                return 0;
        }
        if (r < 0)
                return r;
        r = record(p, s, m, d, ret_error);
        if (r < 0)
                return r;
        return d->action == RESTORE_WAIT_HEALTHY ? 0 : 1;
}

/* One member: the steps that can be taken now. *text: the manifest the volumes' phase writes (NULL: none,
 * while etcd must stay stopped). *ret_in_progress: no replacement, no backup for it. */
static int restore_member(Pass *p, Store *s, RestoreMember *m, const char *address, char **text,
                          char ***owned, bool *ret_in_progress, PassReport *rep) {
        _cleanup_free_ char *err = NULL;
        RestoreDecision d = {};
        RestoreFacts f;
        bool unreadable = false;
        int r = read_state(m, &err);
        if (r >= 0)
                r = read_request(s, m, &err);
        for (unsigned n = 0; r >= 0 && n < RESTORE_STEPS_MAX; n++) {
                if ((r = gather(p, m, address, &f, &err)) < 0) {
                        unreadable = true;
                        break;
                }
                restore_decide(&f, &d);
                *ret_in_progress = *ret_in_progress || d.in_progress || d.action == RESTORE_STOP;
                if (d.action == RESTORE_NOTHING || d.action == RESTORE_CONFLICT)
                        break;
                r = take_step(p, s, m, &d, text, owned, &err);
                if (r <= 0)
                        break;
        }
        if (r == -ENOMEM)
                return r;
        if (unreadable) { /* a restore is known but its files cannot be looked at: etcd's manifest is held */
                *ret_in_progress = true;
                *text = NULL;
        }
        bool done = d.step == RESTORE_STEP_DONE || d.action == RESTORE_REPORT_DONE;
        if (*ret_in_progress && !d.restore_manifest && !done)
                *text = NULL; /* etcd stays stopped */
        if (r >= 0 && (d.action == RESTORE_NOTHING || d.action == RESTORE_REPORT_DONE))
                return 0;
        _cleanup_free_ char *why = strprintf("etcd %s member %s: restore %s: %s", m->cluster, m->member,
                                             strna(d.id), r < 0 ? strna(err) : d.reason);
        if (r < 0 || d.action == RESTORE_CONFLICT)
                log_error("%s", strna(why));
        else
                log_info("%s.", strna(why));
        pass_report_error(rep, PASS_STAGE_ETCD,
                          r < 0                          ? r
                          : d.action == RESTORE_CONFLICT ? -EEXIST
                                                         : PK_EWAITING,
                          why);
        rep->repass_soon = true;
        return 0;
}

/* A whole cluster's restore (docs/etcd-restore.md): after the wave's certificates, before its members, each
 * held member's next restore steps, taken as far as they go now. The manifest the etcd manifests step
 * writes for a member whose restore is under way is the restore's (PassContext.etcd_texts: none while
 * etcd must stay stopped), and the members and backups steps leave that member alone
 * (PassContext.restoring). */
static int restore_apply(PassContext *ctx, PassWave wave) {
        Pass *p = ctx->pass;
        PassObservation *o = ctx->obs;
        const PassPlan *plan = ctx->plan;
        PassReport *rep = ctx->rep;
        const bool *only = pass_wave_selections(ctx, wave);
        char **texts = ctx->etcd_texts;
        _cleanup_(store_freep) Store *s_owned = NULL;
        _cleanup_free_ char *err = NULL;
        _cleanup_strv_free_ char **requests = NULL;
        int listed = 0; /* 1: requests is the listing of restores/, -1: it failed */
        Store *s = NULL;
        if (!p->spec->state_store || o->volumes_error < 0 || pass_wave_empty(ctx, wave))
                return 0;
        pass_progress_step("etcd restore");
        const char *address =
            strv_length(o->volumes.node.internal_ips) > 0 ? o->volumes.node.internal_ips[0] : NULL;
        for (size_t k = 0; k < plan->volumes.n_selections; k++) {
                size_t i = plan->volumes.selections[k].volume;
                _cleanup_(restore_member_done) RestoreMember m = {};
                if ((only && !only[k]) || i == SIZE_MAX || !plan->volumes.eligibility[i].eligible)
                        continue;
                int r = member_paths(p, &plan->volumes.eligibility[i], plan->in.volumes[i].id, &m);
                if (r <= 0) {
                        if (r < 0)
                                return r;
                        continue;
                }
                if (!s && !(s = pass_store(ctx, &s_owned, &err))) {
                        pass_report_error(rep, PASS_STAGE_ETCD, -EIO, err);
                        return 0;
                }
                /* One listing of every cluster's restore objects, not one GET per cluster: an idle pass
                 * asks once whether any restore was requested (a failed listing: each cluster's GET). */
                if (!listed)
                        listed = store_list(s, "restores/", &requests, NULL) >= 0 ? 1 : -1;
                _cleanup_free_ char *key = strprintf("restores/%s/request.json", m.cluster);
                if (!key)
                        return -ENOMEM;
                m.request_unlisted = listed > 0 && !strv_contains(requests, key);
                bool in_progress = false;
                r = restore_member(p, s, &m, address, &texts[k], &ctx->etcd_owned, &in_progress, rep);
                if (r < 0)
                        return r;
                ctx->restoring[i] = ctx->restoring[i] || in_progress;
        }
        return 0;
}

int pass_restore_in_progress(const char *mount, const char *cluster, char **ret_error) {
        _cleanup_free_ char *path = strjoin(mount, "/k8s.io/restore-", cluster, ".json"), *text = NULL,
                            *err = NULL;
        RestoreState st;
        size_t len;
        if (!path)
                return -ENOMEM;
        int r = read_full_file(path, RESTORE_TEXT_MAX, &text, &len);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return error_setf(ret_error, r, "cannot read '%s': %s", path, pk_strerror(r));
        r = restore_state_parse(text, len, &st, &err);
        if (r < 0)
                return error_setf(ret_error, r, "'%s': %s", path, err ?: pk_strerror(r));
        return st.step >= RESTORE_STEP_DOWNLOADED && st.step < RESTORE_STEP_DONE;
}

const PassStep pass_step_restore = {
        .name = "etcd restore",
        .stage = PASS_STAGE_ETCD,
        .roles = 1U << NODE_ROLE_MASTER,
        .apply = restore_apply,
};
