/* SPDX-License-Identifier: Apache-2.0 */
/* A member whose volume lost its data (docs/etcd-members.md): observed in the pass's observation (its data
 * dir, our marker, the other members through etcd's gateway), decided by etcdapi/member-plan.h (pure), and
 * carried out between the certificates and the etcd manifests: remove the old member, add a learner under
 * the same peer URL, write the manifest with state existing; promote the learner on a later pass. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/parse-util.h"
#include "basic/stop.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "basic/trace.h"
#include "components/etcd.h"
#include "daemon/etcd-source.h"
#include "daemon/pass-types.h"
#include "daemon/progress.h"
#include "daemon/step-members.h"
#include "etcdapi/etcd-client.h"
#include "model/cluster-view.h"
#include "model/conventions.h"

#define MEMBER_LOCK_PREFIX  "/protokube/member-change/" /* + the etcd cluster: one change per cluster */
#define MEMBER_LOCK_TTL     60                          /* s: far above a change's bounded calls (below) */
#define MEMBER_CALL_TIMEOUT (5 * USEC_PER_SEC)
#define MARKER_MAX          256U
/* etcd refuses a membership change as "unhealthy cluster" (strict reconfig check) until the leader has been
 * connected to every voter for 5 s, e.g. right after a removal or a restart: a few tries, 1 s apart */
#define MEMBER_UNAVAILABLE_TRIES 10
#define ETCD_CODE_NOT_FOUND      5
#define ETCD_CODE_FAILED_PRECOND 9
#define ETCD_CODE_UNAVAILABLE    14

void pass_etcd_member_done(PassEtcdMember *m) {
        free(m->cluster_message);
        etcd_member_list_done(&m->members);
        free(m->lock_holder);
        free(m->peer_url);
        strv_free(m->tagged_peer_urls);
        strv_free(m->other_endpoints);
        free(m->client_message);
        free(m->data_message);
        *m = (PassEtcdMember){};
}

/* "<mount>/k8s.io/member-change-<cluster>": written before the first change, removed when the replaced
 * member votes again, so that a pass that crashed in between is finished by the next one. */
static char *marker_path(const char *mount, const char *cluster) {
        return strjoin(mount, "/k8s.io/member-change-", cluster);
}

static int read_marker(const char *path, bool *ret_present, unsigned *ret_attempts) {
        _cleanup_free_ char *text = NULL;
        int r = read_full_file(path, MARKER_MAX, &text, NULL);
        if (r == -ENOENT) {
                *ret_present = false;
                *ret_attempts = 0;
                return 0;
        }
        if (r < 0)
                return r;
        const char *v = startswith(text, "promote-attempts=");
        unsigned n = 0;
        if (v) {
                text[strcspn(text, "\n")] = 0;
                if (safe_atou(v, &n) < 0)
                        n = 0;
        }
        *ret_present = true;
        *ret_attempts = n;
        return 0;
}

static int write_marker(const char *path, unsigned attempts) {
        char buf[64];
        int n = snprintf(buf, sizeof(buf), "promote-attempts=%u\n", attempts);
        _cleanup_free_ char *dir = strdup(path);
        if (!dir)
                return -ENOMEM;
        *strrchr(dir, '/') = 0;
        int r = mkdir_p(dir, 0755);
        return r < 0 ? r : write_file_atomic(path, buf, (size_t)n, 0644, false);
}

static const EtcdClusterSpec *etcd_spec(const Pass *p, const char *cluster) {
        return cluster_spec_find_etcd(p->spec, cluster);
}

/* The peer URLs of every tagged member, as the manifests advertise them, and the client URLs of the others
 * that a master holds. */
static int member_urls(const Pass *p, const ClusterView *view, const EtcdTag *t, PassEtcdMember *m) {
        const EtcdClusterSpec *e = etcd_spec(p, t->cluster);
        int client, peer;
        if (!e || etcd_cluster_ports(e, &client, &peer) < 0)
                return -EINVAL;
        const char *scheme = isempty(e->tls_dir) ? "http" : "https";
        m->tagged_peer_urls = new0(char *, 1);
        m->other_endpoints = new0(char *, 1);
        if (!m->tagged_peer_urls || !m->other_endpoints)
                return -ENOMEM;
        STRV_FOREACH (name, t->members) {
                _cleanup_free_ char *dns = NULL, *purl = NULL, *curl = NULL;
                int r = etcd_member_dns_name(t->cluster, *name, p->spec->dns.internal_suffix, &dns);
                if (r < 0)
                        return r;
                purl = strprintf("%s://%s:%d", scheme, dns, peer);
                if (!purl || strv_extend(&m->tagged_peer_urls, purl) < 0)
                        return -ENOMEM;
                if (streq(*name, t->member)) {
                        m->peer_url = TAKE_PTR(purl);
                        continue;
                }
                m->n_others++;
                r = etcd_holder_client_url(view, scheme, t->cluster, *name, client, &curl);
                if (r < 0 || (curl && strv_extend(&m->other_endpoints, curl) < 0))
                        return -ENOMEM;
        }
        return m->peer_url ? 0 : -EINVAL;
}

static int open_client(const Pass *p, const char *cluster, char *const *endpoints, EtcdClient **ret,
                       char **ret_error) {
        return etcd_cluster_client_open(p->spec, cluster, endpoints, MEMBER_CALL_TIMEOUT, ret, ret_error);
}

static char *lock_key(const char *cluster) {
        return strjoin(MEMBER_LOCK_PREFIX, cluster);
}

/* What the others say: the member list, each one's status, the lock. */
static int query_cluster(const Pass *p, const EtcdTag *t, PassEtcdMember *m) {
        _cleanup_(etcd_client_freep) EtcdClient *c = NULL;
        _cleanup_free_ char *error = NULL, *key = lock_key(t->cluster);
        if (!key)
                return -ENOMEM;
        m->queried = true;
        if (strv_length(m->other_endpoints) == 0) { /* nobody can be running: asking would only wait */
                m->cluster_error = -ENOENT;
                return (m->cluster_message = strdup("no master holds another member")) ? 0 : -ENOMEM;
        }
        int r = open_client(p, t->cluster, m->other_endpoints, &c, &m->client_message);
        if (r < 0) {
                m->client_error = r;
                return r == -ENOMEM ? r : 0;
        }
        r = etcd_member_list(c, &m->members, &error);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                m->cluster_error = r;
                m->cluster_message = TAKE_PTR(error);
                return 0;
        }
        STRV_FOREACH (ep, m->other_endpoints) {
                EtcdStatus st = {};
                _cleanup_free_ char *serr = NULL;
                r = etcd_maintenance_status(c, *ep, &st, &serr);
                if (r == -ENOMEM)
                        return r;
                if (r >= 0 && st.leader != 0 && strv_length(st.errors) == 0 && !st.is_learner)
                        m->n_others_healthy++;
                else
                        log_info("etcd %s: %s is not healthy: %s", t->cluster, *ep,
                                 r < 0            ? strna(serr)
                                 : st.leader == 0 ? "no leader"
                                                  : "it reports errors");
                etcd_status_done(&st);
        }
        bool ours;
        r = etcd_lock_read(c, key, strna(p->node.node_name), &m->lock_holder, &ours, NULL);
        return r == -ENOMEM ? r : 0;
}

/* A directory with a file system of its own: an empty mount point must never read as a blank volume. */
static bool is_mounted(const char *path) {
        _cleanup_free_ char *parent = strjoin(path, "/..");
        struct stat a, b;
        return parent && stat(path, &a) >= 0 && stat(parent, &b) >= 0 && S_ISDIR(a.st_mode) &&
               (a.st_dev != b.st_dev || a.st_ino == b.st_ino);
}

/* Whether the member's data directory on the mounted volume holds etcd data (its member/ directory): 1,
 * 0 when absent, < 0 when it cannot be looked at (never "absent": dir_present()). */
static int member_data_present(const char *mount, const char *cluster) {
        _cleanup_free_ char *data = NULL, *member_dir = NULL;
        int r = etcd_data_dir(cluster, &data);
        if (r < 0)
                return r;
        if (!(member_dir = strjoin(mount, data, "/member")))
                return -ENOMEM;
        return dir_present(member_dir);
}

/* The member's state on its mounted volume: its data, our replacement marker, a restore under way. Only
 * absence (ENOENT) reads as blank or as no marker; any other error (EIO of a failing volume, ELOOP,
 * ENOTDIR) makes the member unreadable, held with the path and the cause in data_message. */
static int observe_volume_state(const char *mount, const char *member_dir, const char *marker,
                                const char *cluster, PassEtcdMember *m) {
        const char *what = member_dir;
        int r = dir_present(member_dir);
        if (r >= 0) {
                m->data = r > 0 ? ETCD_DATA_PRESENT : ETCD_DATA_BLANK;
                what = marker;
                r = read_marker(marker, &m->change_pending, &m->promote_attempts);
        }
        if (r >= 0) {
                r = pass_restore_in_progress(mount, cluster, &m->data_message);
                if (r >= 0) {
                        m->restoring = r > 0;
                        return 0;
                }
        } else if (r != -ENOMEM &&
                   !(m->data_message = strprintf("cannot read '%s': %s", what, pk_strerror(r))))
                r = -ENOMEM;
        if (r == -ENOMEM)
                return r;
        m->data = ETCD_DATA_UNREADABLE;
        m->change_pending = false;
        return 0;
}

static int observe_member(const Pass *p, const VolumesInput *in, const ClusterView *view, size_t i,
                          PassEtcdMember *ret) {
        PassEtcdMember m = {};
        VolumeEligibility e = {};
        _cleanup_free_ char *mount = volume_mount_path(p->node.mount_root, in->volumes[i].id), *data = NULL,
                            *member_dir = NULL, *marker = NULL;
        int r = mount ? volume_classify(&in->volumes[i], in->cluster, NULL, in->etcd_clusters, &e) : -ENOMEM;
        if (r < 0 || !e.eligible) {
                volume_eligibility_done(&e);
                *ret = m;
                return r == -ENOMEM ? r : 0;
        }
        r = etcd_data_dir(e.etcd.cluster, &data);
        if (r >= 0 && (!(member_dir = strjoin(mount, data, "/member")) ||
                       !(marker = marker_path(mount, e.etcd.cluster))))
                r = -ENOMEM;
        if (r >= 0 && !is_mounted(mount)) {
                volume_eligibility_done(&e);
                *ret = m; /* not observed: decided once it is mounted */
                return 0;
        }
        if (r >= 0) {
                m.observed = true;
                /* its data moved aside by a restore is not a blank member to replace (etcd-restore.md) */
                r = observe_volume_state(mount, member_dir, marker, e.etcd.cluster, &m);
        }
        if (r >= 0)
                r = member_urls(p, view, &e.etcd, &m);
        if (r >= 0 && !m.restoring && (m.data == ETCD_DATA_BLANK || m.change_pending))
                r = query_cluster(p, &e.etcd, &m);
        volume_eligibility_done(&e);
        if (r < 0) {
                pass_etcd_member_done(&m);
                return r;
        }
        *ret = m;
        return 0;
}

static int members_observe(PassContext *ctx) {
        const Pass *p = ctx->pass;
        PassObservation *o = ctx->obs;
        _cleanup_(cluster_view_freep) ClusterView *view = NULL;
        if (o->volumes_error < 0)
                return 0;
        trace_mark("etcd: observing");
        o->etcd_members = new0(PassEtcdMember, o->in.n_volumes + 1);
        if (!o->etcd_members || volumes_view(&o->in, NULL, &view) == -ENOMEM)
                return -ENOMEM; /* without a view, the members' DNS names */
        for (size_t i = 0; i < o->in.n_volumes; i++) {
                if (!o->in.observed || o->in.observed[i].mount != MOUNT_STATE_OURS)
                        continue;
                int r = observe_member(p, &o->in, view, i, &o->etcd_members[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

static void decide(const PassEtcdMember *m, MemberPlan *ret) {
        if (m->restoring) {
                *ret = (MemberPlan){ .decision = MEMBER_KEEP,
                                     .reason = "a restore of its cluster is under way" };
                return;
        }
        if (m->client_error < 0) {
                *ret = (MemberPlan){ .decision = MEMBER_HOLD, .reason = "no etcd client certificate" };
                return;
        }
        MemberPlanInput in = {
                .peer_url = m->peer_url,
                .tagged_peer_urls = m->tagged_peer_urls,
                .data = m->observed ? m->data : ETCD_DATA_UNKNOWN,
                .change_pending = m->change_pending,
                .promote_attempts = m->promote_attempts,
                .cluster_error = m->queried ? m->cluster_error : -ENOENT,
                .members = m->queried && m->cluster_error >= 0 ? &m->members : NULL,
                .n_others = m->n_others,
                .n_others_healthy = m->n_others_healthy,
                .lock_holder = m->lock_holder,
        };
        member_plan_decide(&in, ret);
}

/* Under the lock, with the member list read again: remove the old member (if listed), add the learner. */
static int replace_member(EtcdClient *c, PassEtcdMember *m, const char *marker, const char *cluster,
                          MemberPlan *plan, char **ret_error) {
        EtcdMemberList fresh = {};
        EtcdMember added = {};
        int r = etcd_member_list(c, &fresh, ret_error);
        if (r < 0)
                return r;
        etcd_member_list_done(&m->members);
        m->members = fresh;
        decide(m, plan); /* what another master did before we took the lock counts */
        if (plan->decision != MEMBER_REPLACE)
                return 0;
        r = write_marker(marker, 0); /* first: a crash from here on is finished by the next pass */
        if (r < 0)
                return error_setf(ret_error, r, "cannot write '%s': %s", marker, pk_strerror(r));
        m->change_pending = true;
        if (plan->remove_id != 0) {
                for (unsigned t = 0; t < MEMBER_UNAVAILABLE_TRIES; t++) {
                        r = etcd_member_remove(c, plan->remove_id, ret_error);
                        if (r >= 0 || etcd_client_last_code(c) != ETCD_CODE_UNAVAILABLE ||
                            sleep_usec(USEC_PER_SEC) < 0)
                                break;
                }
                if (r < 0 && !(r == PK_EETCD && etcd_client_last_code(c) == ETCD_CODE_NOT_FOUND))
                        return r; /* (not found: a pass before us removed it) */
                log_info("etcd %s: removed member %" PRIx64 " (%s).", cluster, plan->remove_id, m->peer_url);
        }
        char *urls[] = { m->peer_url, NULL };
        for (unsigned t = 0; t < MEMBER_UNAVAILABLE_TRIES; t++) {
                r = etcd_member_add(c, urls, true, &added, &fresh, ret_error);
                if (r >= 0 || etcd_client_last_code(c) != ETCD_CODE_UNAVAILABLE ||
                    sleep_usec(USEC_PER_SEC) < 0)
                        break;
        }
        if (r < 0)
                return r; /* the next pass adds it: the member is not listed, the marker is there */
        log_info("etcd %s: added a learner %" PRIx64 " at %s.", cluster, added.id, m->peer_url);
        etcd_member_done(&added);
        etcd_member_list_done(&m->members);
        m->members = fresh;
        return 1;
}

static int do_replace(const Pass *p, PassEtcdMember *m, const char *marker, const char *cluster,
                      MemberPlan *plan, char **ret_error) {
        _cleanup_(etcd_client_freep) EtcdClient *c = NULL;
        _cleanup_free_ char *holder = NULL;
        uint64_t lease = 0;
        int r = open_client(p, cluster, m->other_endpoints, &c, ret_error);
        if (r < 0)
                return r;
        _cleanup_free_ char *key = lock_key(cluster);
        if (!key)
                return -ENOMEM;
        r = etcd_lock_take(c, key, strna(p->node.node_name), MEMBER_LOCK_TTL, &lease, &holder, ret_error);
        if (r < 0)
                return r;
        if (r == 0) {
                *plan = (MemberPlan){ .decision = MEMBER_HOLD,
                                      .reason = "another master holds the membership lock" };
                return error_setf(ret_error, PK_EWAITING, "another master ('%s') holds the membership lock",
                                  holder);
        }
        r = replace_member(c, m, marker, cluster, plan, ret_error);
        /* released now; had we died, the lease would have ended it */
        _cleanup_free_ char *rerr = NULL;
        if (etcd_lease_revoke(c, lease, &rerr) < 0)
                log_warning("etcd %s: cannot release the membership lock, it ends in %d s: %s", cluster,
                            MEMBER_LOCK_TTL, strna(rerr));
        return r;
}

static int do_promote(const Pass *p, PassEtcdMember *m, const char *marker, const char *cluster,
                      const MemberPlan *plan, char **ret_error) {
        _cleanup_(etcd_client_freep) EtcdClient *c = NULL;
        int r = open_client(p, cluster, m->other_endpoints, &c, ret_error);
        if (r < 0)
                return r;
        r = etcd_member_promote(c, plan->promote_id, ret_error);
        if (r >= 0) {
                log_info("etcd %s: promoted the learner %" PRIx64 " to a voting member.", cluster,
                         plan->promote_id);
                return unlink(marker) < 0 && errno != ENOENT ? -errno : 1;
        }
        if (r == PK_EETCD &&
            etcd_client_last_code(c) == ETCD_CODE_FAILED_PRECOND) { /* not caught up yet: the next pass */
                int w = write_marker(marker, m->promote_attempts + 1);
                if (w < 0)
                        return error_setf(ret_error, w, "cannot write '%s': %s", marker, pk_strerror(w));
                return error_setf(ret_error, PK_EWAITING, "the learner is catching up (attempt %u of %u)",
                                  m->promote_attempts + 1, MEMBER_PROMOTE_ATTEMPTS_MAX);
        }
        return r;
}

/* One selection's member: carries out its decision; the text to write, NULL to hold it back. */
static int apply_member(Pass *p, const PassPlan *plan, size_t i, PassEtcdMember *m, MemberPlan *d,
                        const char *image, char **text, char ***owned, PassReport *rep) {
        const VolumeEligibility *e = &plan->volumes.eligibility[i];
        const char *cluster = e->etcd.cluster;
        _cleanup_free_ char *mount = volume_mount_path(p->node.mount_root, plan->in.volumes[i].id),
                            *marker = mount ? marker_path(mount, cluster) : NULL, *error = NULL;
        int r = 0;
        if (!marker)
                return -ENOMEM;
        switch (d->decision) {
        case MEMBER_REPLACE: {
                /* The observation is a few seconds old: a blank member whose etcd started since (a cold
                 * start where the others formed the cluster first) has data now and is not to be replaced.
                 * Looked at again right before the change; a pending change is ours, already under way. */
                int present = m->change_pending ? 0 : member_data_present(mount, cluster);
                if (present > 0) {
                        log_info("etcd %s member %s: its data appeared since the pass observed it (its etcd "
                                 "started): not replaced.",
                                 cluster, e->etcd.member);
                        *d = (MemberPlan){ .decision = MEMBER_KEEP };
                        break;
                }
                if (present < 0) { /* an I/O error is not a blank member */
                        r = present;
                        error =
                            strprintf("cannot read its data directory on '%s': %s", mount, pk_strerror(r));
                        *d = (MemberPlan){ .decision = MEMBER_HOLD };
                        break;
                }
                pass_progress_step("etcd %s: replacing member %s", cluster, e->etcd.member);
                r = do_replace(p, m, marker, cluster, d, &error);
                break;
        }
        case MEMBER_PROMOTE:
                r = do_promote(p, m, marker, cluster, d, &error);
                break;
        case MEMBER_DONE:
                r = unlink(marker) < 0 && errno != ENOENT ? -errno : 0;
                if (r < 0)
                        error = strprintf("cannot remove '%s': %s", marker, pk_strerror(r));
                break;
        default:
                break;
        }
        if (r == -ENOMEM)
                return r;
        if (r < 0 || d->decision == MEMBER_HOLD) {
                _cleanup_free_ char *why = strprintf("etcd %s member %s: %s", cluster, e->etcd.member,
                                                     error ?: m->data_message ?: d->reason);
                if (r == PK_EWAITING || (r >= 0 && d->decision == MEMBER_HOLD))
                        log_warning("%s; manifest %s.", strna(why),
                                    d->decision == MEMBER_HOLD ? "held back" : "kept");
                else
                        log_error_errno(r, "%s", strna(why));
                pass_report_error(rep, PASS_STAGE_ETCD, r < 0 ? r : PK_EWAITING, why);
                if (d->decision == MEMBER_HOLD || d->decision == MEMBER_REPLACE) {
                        *text = NULL; /* not replaced: no manifest */
                        return 0;
                }
        } else if (r > 0)
                rep->actions_applied++;
        /* the text as decided (existing or new); the plan's was rendered before the decision when the
         * volume was mounted only in this pass */
        if (*text && (d->existing || d->decision == MEMBER_NEW)) {
                char *t = NULL;
                r = pass_render_member(p, e, plan->in.volumes[i].id, d->existing, image, &t);
                if (r < 0)
                        return r;
                if (strv_push(owned, t) < 0) {
                        free(t);
                        return -ENOMEM;
                }
                *text = t;
        }
        return 0;
}

/* The selections of the wave whose member's manifest this step decides: eligible, not held back by an
 * earlier step, not restoring (the restore step owns its manifest). Their volume, or SIZE_MAX. */
static size_t wave_member(const PassContext *ctx, PassWave wave, size_t k) {
        const PassPlan *plan = ctx->plan;
        const bool *only = pass_wave_selections(ctx, wave);
        size_t i = plan->volumes.selections[k].volume;
        if ((only && !only[k]) || i == SIZE_MAX || !plan->volumes.eligibility[i].eligible ||
            !ctx->etcd_texts[k] || pass_restoring(ctx, i))
                return SIZE_MAX;
        return i;
}

/* A member whose volume was mounted in this pass was not observed (it had no file system yet): it is
 * observed now and decided, into the context's decisions. */
static int members_revise(PassContext *ctx, PassWave wave) {
        const PassPlan *plan = ctx->plan;
        if (ctx->obs->volumes_error < 0 || pass_wave_empty(ctx, wave))
                return 0;
        for (size_t k = 0; k < plan->volumes.n_selections; k++) {
                size_t i = wave_member(ctx, wave, k);
                PassEtcdMember *m = i == SIZE_MAX ? NULL : &ctx->obs->etcd_members[i];
                if (!m || m->observed)
                        continue;
                int r = observe_member(ctx->pass, &plan->in, plan->view, i, m);
                if (r < 0)
                        return r;
                decide(m, &ctx->member_plans[i]);
        }
        return 0;
}

static int members_apply(PassContext *ctx, PassWave wave) {
        const PassPlan *plan = ctx->plan;
        if (ctx->obs->volumes_error < 0 || pass_wave_empty(ctx, wave))
                return 0;
        pass_progress_step("etcd members");
        for (size_t k = 0; k < plan->volumes.n_selections; k++) {
                size_t i = wave_member(ctx, wave, k);
                if (i == SIZE_MAX)
                        continue;
                int r = apply_member(ctx->pass, plan, i, &ctx->obs->etcd_members[i], &ctx->member_plans[i],
                                     ctx->held_images[i], &ctx->etcd_texts[k], &ctx->etcd_owned, ctx->rep);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The decision for each member observed (pure: etcdapi/member-plan.h). */
static int members_plan(const Pass *pass, const PassObservation *o, PassPlan *plan) {
        plan->member_plans = new0(MemberPlan, o->in.n_volumes + 1);
        if (!plan->member_plans)
                return -ENOMEM;
        for (size_t i = 0; o->etcd_members && i < o->in.n_volumes; i++)
                if (o->etcd_members[i].observed)
                        decide(&o->etcd_members[i], &plan->member_plans[i]);
        return 0;
}

static int members_print(const Pass *pass, const PassObservation *o, const PassPlan *plan, FILE *out) {
        if (o->volumes_error < 0 || !plan->member_plans)
                return 0;
        for (size_t k = 0; k < plan->volumes.n_selections; k++) {
                size_t i = plan->volumes.selections[k].volume;
                if (i == SIZE_MAX || !plan->volumes.eligibility[i].eligible)
                        continue;
                const VolumeEligibility *e = &plan->volumes.eligibility[i];
                const MemberPlan *d = &plan->member_plans[i];
                const char *c = e->etcd.cluster, *mb = e->etcd.member;
                if (!o->etcd_members[i].observed) {
                        fprintf(out, "etcd %s member %s: decided once the volume is mounted\n", c, mb);
                        continue;
                }
                if (o->etcd_members[i].restoring) {
                        fprintf(out, "etcd %s member %s: a restore is under way (docs/etcd-restore.md)\n", c,
                                mb);
                        continue;
                }
                switch (d->decision) {
                case MEMBER_REPLACE:
                        if (d->remove_id)
                                fprintf(out, "remove-member %s %" PRIx64 " (%s)\n", c, d->remove_id,
                                        d->reason);
                        fprintf(out, "add-learner %s %s (%s)\n", c, o->etcd_members[i].peer_url, d->reason);
                        fprintf(out, "etcd %s member %s: initial-cluster-state=existing\n", c, mb);
                        break;
                case MEMBER_PROMOTE:
                        fprintf(out, "promote %s %" PRIx64 " (%s)\n", c, d->promote_id, d->reason);
                        break;
                case MEMBER_HOLD:
                        fprintf(out, "etcd %s member %s: manifest held back: %s%s%s\n", c, mb, d->reason,
                                o->etcd_members[i].data_message ? ": " : "",
                                strempty(o->etcd_members[i].data_message));
                        break;
                case MEMBER_KEEP:
                        break;
                default:
                        fprintf(out, "etcd %s member %s: %s (%s)\n", c, mb,
                                member_decision_to_string(d->decision), d->reason);
                }
        }
        return 0;
}

const PassStep pass_step_members = {
        .name = "etcd members",
        .stage = PASS_STAGE_ETCD,
        .roles = 1U << NODE_ROLE_MASTER,
        .observe = members_observe,
        .plan = members_plan,
        .revise = members_revise,
        .apply = members_apply,
        .print = members_print,
};
