/* SPDX-License-Identifier: Apache-2.0 */
/* The pivot as the daemon and `protokube pivot` run it (docs/pivot.md): its settings from the spec and the
 * node (the API's internal name and port, protokube's kubeconfig, the assets rendered with the
 * certificates' digest, the deadlines' overrides), and one step: observe, decide, apply. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/log.h"
#include "basic/parse-util.h"
#include "basic/stop.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "daemon/pass-pivot.h"
#include "daemon/pass-types.h"
#include "model/conventions.h"
#include "model/pki-layout.h"
#include "pivot/checkpoint-apply.h"

struct PassPivot {
        SelfHostedAssets assets;
        PassPodAnnotations pod_annotations; /* what the assets' pod templates carry */
        PivotSettings settings;
        char *api_host, *kubeconfig, *node_name, *internal_ip, *state_dir, *manifest_dir;
        Pivot *pivot;
};

PassPivot *pass_pivot_free(PassPivot *pp) {
        if (!pp)
                return NULL;
        pivot_free(pp->pivot);
        self_hosted_assets_done(&pp->assets);
        free(pp->api_host);
        free(pp->kubeconfig);
        free(pp->node_name);
        free(pp->internal_ip);
        free(pp->state_dir);
        free(pp->manifest_dir);
        free(pp);
        return NULL;
}

/* PROTOKUBE_PIVOT_READY_DEADLINE, PROTOKUBE_PIVOT_RESTORE_DEADLINE: durations ("20s") for tests. */
static int deadline_from_env(const char *name, usec_t *ret) {
        const char *v = getenv(name);
        uint64_t u;
        *ret = 0;
        if (!v)
                return 0;
        if (parse_duration_usec(v, &u) < 0 || u == 0)
                return log_error_errno(-EINVAL, "Invalid %s '%s': a duration (30s, 2m).", name, v);
        *ret = u;
        return 0;
}

int pass_render_self_hosted(const ClusterSpec *spec, const NodeSettings *node, size_t n_masters,
                            SelfHostedAssets *ret, PassPodAnnotations *ret_annotations) {
        _cleanup_strv_free_ char **etcd_names = NULL;
        _cleanup_free_ char *error = NULL;
        PassPodAnnotations local, *a = ret_annotations ?: &local;
        int r;
        *a = (PassPodAnnotations){};
        for (size_t i = 0; i < spec->etcd_clusters.n; i++)
                if (strv_extend(&etcd_names, cluster_spec_etcd(spec, i)->name) < 0)
                        return log_oom();
        CertsSettings certs = pass_certs_settings(spec, etcd_names);
        if (certs.store_url) {
                r = certs_node_digest(&certs, a->digest);
                if (r < 0)
                        return log_error_errno(r, "Failed to read the certificates under '%s': %m",
                                               certs.pki_dir);
        }
        if (a->digest[0]) {
                a->kv[0] = (char *)CERTS_ANNOTATION;
                a->kv[1] = a->digest;
                a->list = a->kv;
        }
        SelfHostedParams p = {
                .n_masters = (unsigned)n_masters,
                .pod_annotations = a->list,
                .kubelet_dir = node ? node->kubelet_dir : NULL,
                .manifest_dir = node ? node->manifest_dir : NULL,
                .mount_root = node ? node->mount_root : NULL,
                .config_dir = node ? node->config_dir : NULL,
        };
        r = self_hosted_render(spec, &p, ret, &error);
        if (r < 0)
                return log_error_errno(r, "Failed to render the self-hosted assets: %s",
                                       error ?: pk_strerror(r));
        return 0;
}

int pass_pivot_open(const ClusterSpec *spec, const NodeSettings *node, const char *node_name,
                    const char *internal_ip, size_t n_masters, PassPivot **ret) {
        _cleanup_(pass_pivot_freep) PassPivot *pp = new0(PassPivot, 1);
        _cleanup_free_ char *error = NULL;
        int r;
        if (!pp)
                return log_oom();
        if (isempty(node_name) || isempty(internal_ip))
                return log_error_errno(-EINVAL, "The pivot needs this node's name and internal address.");
        r = pass_render_self_hosted(spec, node, n_masters, &pp->assets, &pp->pod_annotations);
        if (r < 0)
                return r;
        r = api_dns_name(spec->dns.internal_suffix, &pp->api_host);
        if (r < 0)
                return log_error_errno(r, "Failed to form api.%s: %m", strna(spec->dns.internal_suffix));
        pp->kubeconfig =
            pki_layout_file(spec->pki.dir ?: PKI_DIR_DEFAULT, PKI_PROTOKUBE_DIR, PKI_KUBECONFIG_FILE);
        pp->node_name = strdup(node_name);
        pp->internal_ip = strdup(internal_ip);
        pp->state_dir = strdup(node->state_dir ?: STATE_DIR_DEFAULT);
        pp->manifest_dir = strdup(node->manifest_dir);
        if (!pp->kubeconfig || !pp->node_name || !pp->internal_ip || !pp->state_dir || !pp->manifest_dir)
                return log_oom();
        pp->settings = (PivotSettings){
                .kubeconfig = pp->kubeconfig,
                .api_host = pp->api_host,
                .api_port = pass_apiserver_port(spec),
                .node_name = pp->node_name,
                .internal_ip = pp->internal_ip,
                .manifest_dir = pp->manifest_dir,
                .state_dir = pp->state_dir,
                .masters_expected = n_masters,
                .assets = &pp->assets,
                .pod_annotations = pp->pod_annotations.list,
        };
        if (spec->dns.ttl.set && spec->dns.ttl.value > 0)
                pp->settings.names_ttl = (usec_t)spec->dns.ttl.value * USEC_PER_SEC;
        if (deadline_from_env("PROTOKUBE_PIVOT_READY_DEADLINE", &pp->settings.ready_deadline) < 0 ||
            deadline_from_env("PROTOKUBE_PIVOT_RESTORE_DEADLINE", &pp->settings.restore_deadline) < 0)
                return -EINVAL;
        r = pivot_new(&pp->settings, &pp->pivot, &error);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the pivot: %s", error ?: pk_strerror(r));
        *ret = TAKE_PTR(pp);
        return 0;
}

int pass_pivot_step(PassPivot *pp, bool apply, PivotDecision *ret) {
        _cleanup_free_ char *error = NULL;
        PivotDecision d = {};
        int r = pivot_observe(pp->pivot, &error);
        if (r < 0)
                return log_error_errno(r, "Failed to observe the pivot: %s", error ?: pk_strerror(r));
        r = pivot_decide(&pp->pivot->obs, &d);
        if (r < 0)
                return log_error_errno(r, "The pivot's observation is inconsistent: %m");
        if (d.step == PIVOT_WAIT_API && pp->pivot->api_error)
                log_debug("API: %s", pp->pivot->api_error);
        if (apply) {
                r = pivot_apply(pp->pivot, &d, &error);
                if (r < 0) {
                        log_error_errno(r, "Pivot step %s failed: %s", pivot_step_name(d.step),
                                        error ?: pk_strerror(r));
                        pivot_decision_done(&d);
                        return r;
                }
        }
        *ret = d;
        return 0;
}

void pass_pivot_set_names_listed(PassPivot *pp, bool listed) {
        pp->settings.names_known = true;
        pp->settings.names_listed = listed;
}

const PivotRecord *pass_pivot_record(const PassPivot *pp) {
        return &pp->pivot->record;
}

/* The current generation's name (the symlink's target) and when the link was made; "" and 0 when none. */
static usec_t checkpoint_generation(const char *state_dir, char *ret_target, size_t size) {
        _cleanup_free_ char *link = strprintf("%s/%s", state_dir, CHECKPOINT_LINK);
        struct stat st;
        ret_target[0] = 0;
        if (!link || lstat(link, &st) < 0 || !S_ISLNK(st.st_mode))
                return 0;
        ssize_t n = readlink(link, ret_target, size - 1);
        ret_target[n > 0 ? n : 0] = 0;
        return (usec_t)st.st_mtim.tv_sec * USEC_PER_SEC + (usec_t)st.st_mtim.tv_nsec / NSEC_PER_USEC;
}

/* Bounds one checkpoint step of a pass: a probe (5 s), a list and a few gets; the API being slow must not
 * hold the pass (the next one comes soon while the checkpoint is active). */
#define CHECKPOINT_PASS_TIMEOUT (30 * USEC_PER_SEC)

void pass_checkpoint_run(PassPivot *pp, PassReport *rep) {
        _cleanup_free_ char *message = NULL, *error = NULL;
        char before[64], after[64];
        CheckpointStep step = CHECKPOINT_STEP_WAIT;
        CheckpointConfig c = {
                .state_dir = pp->state_dir,
                .manifest_dir = pp->manifest_dir,
                .node_name = pp->node_name,
                .local = pp->pivot->local, /* this master's apiserver, by api.internal's name */
                .internal = pp->pivot->api,
        };
        checkpoint_generation(pp->state_dir, before, sizeof(before));
        int r = checkpoint_step(&c, now(CLOCK_MONOTONIC) + CHECKPOINT_PASS_TIMEOUT, &step, &message, &error);
        int active = checkpoint_is_active(&c, NULL);
        rep->checkpoint_known = true;
        rep->checkpoint_active = active > 0;
        rep->checkpoint_written = checkpoint_generation(pp->state_dir, after, sizeof(after));
        if (r < 0) {
                log_error_errno(r, "Checkpoint: %s", error ?: pk_strerror(r));
                _cleanup_free_ char *why = strprintf("checkpoint: %s", error ?: pk_strerror(r));
                pass_report_error(rep, PASS_STAGE_CHECKPOINT, r, why ?: "checkpoint: a step failed");
                return;
        }
        /* an unchanged refresh is every quiet pass: not worth a line */
        if (step != CHECKPOINT_STEP_REFRESH || !streq(before, after))
                log_info("Checkpoint: %s: %s", checkpoint_step_to_string(step), strnull(message));
        if (active > 0) {
                /* the API came back through the checkpoint: retire it as soon as the pods are back */
                _cleanup_free_ char *why = strprintf("checkpoint active: %s: %s",
                                                     checkpoint_step_to_string(step), strnull(message));
                pass_report_error(rep, PASS_STAGE_CHECKPOINT, PK_EWAITING, why ?: "checkpoint active");
                rep->repass_soon = true;
        }
}
