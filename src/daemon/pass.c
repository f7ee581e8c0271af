/* SPDX-License-Identifier: Apache-2.0 */
/* A pass's life: loaded from the spec, run (observe, plan, apply, report) under the node's lock, reloaded on
 * SIGHUP. What it does, in which order, is its role's table (pass-roles.c). */
#include "daemon/pass.h"

#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/path-util.h"
#include "basic/stop.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "basic/trace.h"
#include "daemon/node-lock.h"
#include "daemon/pass-types.h"
#include "daemon/progress.h"

static const char *const node_role_names[_NODE_ROLE_MAX] = {
        [NODE_ROLE_MASTER] = "master",
        [NODE_ROLE_WORKER] = "worker",
};

const char *node_role_to_string(NodeRole r) {
        return r >= 0 && r < _NODE_ROLE_MAX ? node_role_names[r] : NULL;
}

NodeRole node_role_from_string(const char *s) {
        for (int i = 0; s && i < _NODE_ROLE_MAX; i++)
                if (streq(node_role_names[i], s))
                        return (NodeRole)i;
        return _NODE_ROLE_INVALID;
}

static void report_log(void *userdata, int level, int error, const char *message) {
        PassReport *rep = userdata;
        log_full_errno((LogLevel)level, error, "%s", message);
        if (rep && level <= LOG_LEVEL_ERROR && error < 0 && !rep->reason)
                rep->reason = strdup(message);
}

static void report_progress(void *userdata, const char *step) {
        pass_progress_step("%s", step);
}

static int load_spec(const char *path, ClusterSpec **ret, char ***ret_etcd_clusters) {
        _cleanup_strv_free_ char **errors = NULL, **names = NULL;
        _cleanup_(cluster_spec_freep) ClusterSpec *spec = NULL;
        int r = cluster_spec_load(path, &spec, &errors);
        trace_mark("spec loaded");
        if (r < 0) {
                STRV_FOREACH (e, errors)
                        log_error("%s", *e);
                return log_error_errno(r, "Failed to load the cluster spec '%s': %m", path);
        }
        names = calloc(1, sizeof(char *));
        if (!names)
                return log_oom();
        for (size_t i = 0; i < spec->etcd_clusters.n; i++)
                if (strv_extend(&names, cluster_spec_etcd(spec, i)->name) < 0)
                        return log_oom();
        *ret = TAKE_PTR(spec);
        *ret_etcd_clusters = TAKE_PTR(names);
        return 0;
}

/* The volume steps' settings for this node and spec; reports go to the log (and, during a run, the report).
 */
static void pass_configure(Pass *p) {
        p->certs = pass_certs_settings(p->spec, p->etcd_clusters);
        p->certs.pair_cache = p->pair_cache;
        p->certs.keystore_cache = p->keystore_cache;
        p->n_backups_seen = 0; /* a reloaded spec may name another store: its backups are listed anew */
        p->cfg = (VolumesPassConfig){
                .cluster = p->spec->name,
                .etcd_clusters = p->etcd_clusters,
                .mount_root = p->node.mount_root,
                .manifest_dir = p->node.manifest_dir,
                .report = report_log,
                .progress = report_progress,
        };
}

int pass_new(const char *spec_path, const NodeSettings *node, Pass **ret) {
        _cleanup_(pass_freep) Pass *p = new0(Pass, 1);
        int r;

        if (!p || !(p->spec_path = strdup(spec_path)))
                return log_oom();
        p->node = *node;
        if (pki_pair_cache_new(&p->pair_cache) < 0 || keystore_cache_new(&p->keystore_cache) < 0)
                return log_oom();
        r = path_canonicalize(node->mount_root, &p->mount_root);
        if (r < 0)
                return log_error_errno(r, "Failed to resolve the mount root '%s': %m", node->mount_root);
        p->node.mount_root = p->mount_root;
        r = load_spec(spec_path, &p->spec, &p->etcd_clusters);
        if (r < 0)
                return r;
        r = pass_open_volume_provider(p->spec, node, &p->provider);
        if (r < 0)
                return r;
        pass_configure(p);
        *ret = TAKE_PTR(p);
        return 0;
}

Pass *pass_free(Pass *p) {
        if (!p)
                return NULL;
        volume_provider_free(p->provider);
        strv_free(p->etcd_clusters);
        cluster_spec_free(p->spec);
        free(p->spec_path);
        free(p->mount_root);
        dns_pending_done(&p->dns_pending);
        pki_pair_cache_free(p->pair_cache);
        keystore_cache_free(p->keystore_cache);
        free(p);
        return NULL;
}

int pass_reload(Pass *p) {
        ClusterSpec *spec = NULL;
        char **names = NULL;
        VolumeProvider *provider = NULL;
        int r = load_spec(p->spec_path, &spec, &names);
        if (r < 0)
                return r;
        r = pass_open_volume_provider(spec, &p->node, &provider);
        if (r < 0) {
                cluster_spec_free(spec);
                strv_free(names);
                return r;
        }
        /* changes of another DNS provider are not this one's to ask about */
        if (spec->dns.provider.value != p->spec->dns.provider.value)
                dns_pending_done(&p->dns_pending);
        volume_provider_free(p->provider);
        strv_free(p->etcd_clusters);
        cluster_spec_free(p->spec);
        p->provider = provider;
        p->etcd_clusters = names;
        p->spec = spec;
        pass_configure(p);
        log_info("Reloaded the cluster spec '%s'.", p->spec_path);
        return 0;
}

#define PASS_ROUNDS_MAX 16 /* observe and plan again after lost claims; each round some node wins one */

/* One round: observe, plan, apply. 1 when a claim was lost and the pass must observe and plan again. */
static int run_round(Pass *p, bool last, PassReport *rep) {
        PassObservation o = {};
        PassPlan plan = {};
        /* after o and plan: its cleanup runs while they are in scope */
        _cleanup_(pass_context_done) PassContext ctx = { .pass = p, .rep = rep, .last_round = last };
        pass_progress_step("observing");
        int r = pass_observe_with(&ctx, &o);
        if (r < 0) {
                pass_report_error(rep, PASS_STAGE_DISCOVER, r,
                                  r == -ENOMEM ? "out of memory" : "cannot observe");
                return r;
        }
        if (o.volumes_error < 0) {
                _cleanup_free_ char *why = strprintf("the volume provider failed: %s",
                                                     o.volumes_message ?: pk_strerror(o.volumes_error));
                pass_report_error(rep, PASS_STAGE_DISCOVER, o.volumes_error, why);
        }
        r = pass_plan_steps(p, &o, &plan);
        if (r >= 0)
                r = pass_context_prepare_apply(&ctx, &plan);
        if (r >= 0)
                r = pass_run_phase(&ctx, PASS_PHASE_APPLY);
        else
                pass_report_error(rep, PASS_STAGE_DISCOVER, r, "out of memory");
        pass_context_done(&ctx); /* first: its apply state points into the plan and the observation */
        pass_plan_done(&plan);
        pass_observation_done(&o);
        return r;
}

void pass_run(Pass *p, PassReport *rep) {
        _cleanup_close_ int lock = -1;
        _cleanup_free_ char *lock_error = NULL;
        int l = node_lock_take(p->node.state_dir, NODE_LOCK_WAIT, &lock, &lock_error);
        if (l < 0) { /* nothing written: another protokube writes the node's state now */
                pass_report_error(rep, PASS_STAGE_DISCOVER, l, lock_error ?: pk_strerror(l));
                return;
        }
        p->cfg.report_userdata = rep;
        for (unsigned round = 0; round < PASS_ROUNDS_MAX; round++)
                if (run_round(p, round + 1 == PASS_ROUNDS_MAX, rep) <= 0)
                        break;
        _cleanup_(pass_context_done) PassContext ctx = { .pass = p, .rep = rep };
        (void)pass_run_phase(&ctx, PASS_PHASE_FINISH);
        p->cfg.report_userdata = NULL;
        trace_mark("pass end");
}

void pass_renew_all(Pass *p) {
        p->force_renew = true;
}

const ClusterSpec *pass_spec(const Pass *p) {
        return p->spec;
}

const char *pass_pki_dir(const Pass *p) {
        return p->certs.store_url ? p->certs.pki_dir : NULL;
}

int pass_watch_paths(const Pass *p, char ***ret) {
        _cleanup_strv_free_ char **watch = NULL;
        if (volume_provider_watch_paths(p->provider, &watch) < 0 || strv_extend(&watch, "/dev") < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(watch);
        return 0;
}
