/* SPDX-License-Identifier: Apache-2.0 */
#include "daemon/pass.h"

#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/path-util.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "components/etcd.h"
#include "components/render.h"
#include "daemon/loop.h"
#include "daemon/progress.h"
#include "dns/dns-provider.h"
#include "dns/dns-wire.h"
#include "manifest/manifest-dir.h"
#include "shared/cluster-view.h"

static int render_etcd(void *userdata, const char *etcd_cluster, const char *member, char *const *members,
                       const char *mount_path, char **ret_yaml) {
        const ClusterSpec *spec = userdata;
        EtcdMemberAssignment a = {
                .cluster = etcd_cluster,
                .member = member,
                .members = members,
                .mount_path = mount_path,
        };
        return etcd_manifest_render(spec, &a, ret_yaml);
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

int pass_open_volume_provider(const ClusterSpec *spec, const NodeSettings *node, VolumeProvider **ret) {
        const char *cloud = spec->cloud.set ? cloud_provider_to_string(spec->cloud.value) : "local";
        VolumeProviderConfig pc = {
                .pool_dir = node->pool_dir,
                .node_name = node->node_name,
                .zone = node->zone,
                .internal_ip = node->internal_ip,
                .external_ip = node->external_ip,
                .machine_id_file = node->machine_id_file,
        };
        int r = volume_provider_open(strna(cloud), &pc, ret);
        if (r < 0) {
                const VolumeProviderVTable *vt = volume_provider_find(strna(cloud));
                const char *detail = vt && vt->last_error ? vt->last_error(NULL) : NULL;
                if (detail)
                        return log_error_errno(r, "Failed to open the '%s' volume provider: %s",
                                               strna(cloud), detail);
                return log_error_errno(r, "Failed to open the '%s' volume provider: %m", strna(cloud));
        }
        return 0;
}

int pass_new(const char *spec_path, const NodeSettings *node, Pass **ret) {
        _cleanup_(pass_freep) Pass *p = new0(Pass, 1);
        int r;

        if (!p || !(p->spec_path = strdup(spec_path)))
                return log_oom();
        p->node = *node;
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
        volume_provider_free(p->provider);
        strv_free(p->etcd_clusters);
        cluster_spec_free(p->spec);
        p->provider = provider;
        p->etcd_clusters = names;
        p->spec = spec;
        log_info("Reloaded the cluster spec '%s'.", p->spec_path);
        return 0;
}

static VolumesPassConfig volumes_config(Pass *p, PassReport *rep, bool manifests) {
        return (VolumesPassConfig){
                .cluster = p->spec->name,
                .etcd_clusters = p->etcd_clusters,
                .mount_root = p->node.mount_root,
                .manifest_dir = p->node.manifest_dir,
                .render = manifests ? render_etcd : NULL,
                .render_userdata = p->spec,
                .report = report_log,
                .report_userdata = rep,
                .progress = report_progress,
        };
}

static void pass_volumes(Pass *p, PassReport *rep, bool manifests) {
        VolumesPassConfig cfg = volumes_config(p, rep, manifests);
        VolumesPassResult res = {};
        PassStage stage = manifests ? PASS_STAGE_MANIFEST : PASS_STAGE_CLAIM;
        int r = volumes_pass(p->provider, &cfg, &res);

        if (r == -ECANCELED) {
                pass_report_error(rep, stage, PK_EWAITING, "stopping");
                return;
        }
        if (r < 0) {
                const char *detail = volume_provider_last_error(p->provider);
                _cleanup_free_ char *why =
                    strprintf("the volume provider failed: %s", detail ?: pk_strerror(r));
                log_error_errno(r, "The volume pass failed: %m");
                pass_report_error(rep, PASS_STAGE_DISCOVER, r, why);
                return;
        }
        rep->actions_applied += res.n_changes;
        rep->volumes_held = res.n_ready;
        rep->volumes_member_conflicts = res.n_member_conflicts;
        if (res.n_errors > 0)
                pass_report_error(rep, stage, -EIO, "a volume is stuck on an error (see the log)");
        if (res.n_waiting > 0 && manifests) {
                _cleanup_free_ char *why =
                    strprintf("%u etcd cluster(s) have no volume for this node yet", res.n_waiting);
                pass_report_error(rep, PASS_STAGE_CLAIM, PK_EWAITING, why);
        }
}

static void log_dns_changes(const DnsRRsetList *changes, const char *provider) {
        for (size_t i = 0; i < changes->n; i++) {
                const DnsRRset *s = &changes->items[i];
                _cleanup_free_ char *addrs = s->addresses ? strv_join(s->addresses, ",") : NULL;
                if (isempty(addrs))
                        log_info("DNS (%s): deleted %s %s.", provider, s->name,
                                 s->type == DNS_TYPE_AAAA ? "AAAA" : "A");
                else
                        log_info("DNS (%s): %s %s -> %s (TTL %u).", provider, s->name,
                                 s->type == DNS_TYPE_AAAA ? "AAAA" : "A", addrs, s->ttl);
        }
}

static void pass_dns(Pass *p, PassReport *rep, bool dry_run, FILE *plan_out) {
        _cleanup_(cluster_view_freep) ClusterView *view = NULL;
        _cleanup_(dns_rrset_list_donep) DnsRRsetList changes = {};
        _cleanup_free_ char *err = NULL;
        const char *provider = NULL;
        int r;

        r = volumes_observe_view(p->provider, p->spec->name, &view);
        if (r < 0) {
                log_error_errno(r, "Failed to observe the masters for DNS: %m");
                pass_report_error(rep, PASS_STAGE_DNS, r, "cannot observe the masters for DNS");
                return;
        }
        r = dns_publish(p->spec, view, dry_run, &changes, &provider, &err);
        if (r == PK_EWAITING) {
                log_info("DNS: %s", strna(err));
                return;
        }
        if (r < 0) {
                log_error_errno(r, "DNS publication failed: %s", strna(err));
                _cleanup_free_ char *why = strprintf("DNS: %s", strna(err));
                pass_report_error(rep, PASS_STAGE_DNS, r, why);
                return;
        }
        if (plan_out) {
                for (size_t i = 0; i < changes.n; i++) {
                        _cleanup_free_ char *a =
                            changes.items[i].addresses ? strv_join(changes.items[i].addresses, ",") : NULL;
                        fprintf(plan_out, "dns-replace %s %s %s\n", changes.items[i].name,
                                changes.items[i].type == DNS_TYPE_AAAA ? "AAAA" : "A",
                                isempty(a) ? "(delete)" : a);
                }
                return;
        }
        log_dns_changes(&changes, strna(provider));
        rep->actions_applied += (unsigned)changes.n;
        /* What the provider now serves is the desired set: count its records. */
        _cleanup_(dns_rrset_list_donep) DnsRRsetList desired = {};
        if (dns_desired_records(p->spec, view, &desired, NULL) >= 0)
                for (size_t i = 0; i < desired.n; i++)
                        rep->records_published += (unsigned)strv_length(desired.items[i].addresses);
}

/* The control-plane manifests other than etcd's (those live on the volumes). */
static void pass_control_plane(Pass *p, PassReport *rep, bool dry_run, FILE *plan_out) {
        _cleanup_(rendered_manifests_done) RenderedManifests m = {};
        const char *failed = NULL;
        int r = control_plane_render(p->spec, NULL, 0, &m, &failed);
        if (r < 0) {
                log_error_errno(r, "Failed to render '%s': %m", strna(failed));
                pass_report_error(rep, PASS_STAGE_MANIFEST, r, "cannot render the control-plane manifests");
                return;
        }
        if (!dry_run && (r = mkdir_p(p->node.manifest_dir, 0755)) < 0) {
                log_error_errno(r, "Failed to create the manifest directory '%s': %m", p->node.manifest_dir);
                pass_report_error(rep, PASS_STAGE_MANIFEST, r, "cannot create the manifest directory");
                return;
        }
        for (size_t i = 0; i < m.n; i++) {
                _cleanup_free_ char *path = strjoin(p->node.manifest_dir, "/", m.items[i].file_name);
                if (!path) {
                        pass_report_error(rep, PASS_STAGE_MANIFEST, -ENOMEM, "out of memory");
                        return;
                }
                if (dry_run) {
                        _cleanup_free_ char *cur = NULL;
                        if (read_full_file(path, 1 << 20, &cur, NULL) < 0 || !streq(cur, m.items[i].text))
                                fprintf(plan_out, "write-manifest %s\n", path);
                        continue;
                }
                r = manifest_write(path, m.items[i].text);
                if (r < 0) {
                        log_error_errno(r, "Failed to write the manifest '%s': %m", path);
                        pass_report_error(rep, PASS_STAGE_MANIFEST, r,
                                          "cannot write a control-plane manifest");
                } else if (r > 0) {
                        log_info("Wrote manifest '%s'.", path);
                        rep->actions_applied++;
                }
        }
}

static void pass_stage_volumes(Pass *p, PassReport *rep) {
        pass_progress_step("volumes: observing");
        pass_volumes(p, rep, false);
}

static void pass_stage_dns(Pass *p, PassReport *rep) {
        pass_progress_step("DNS: publishing");
        pass_dns(p, rep, false, NULL);
}

static void pass_stage_etcd_manifests(Pass *p, PassReport *rep) {
        pass_progress_step("etcd manifests");
        pass_volumes(p, rep, true);
}

static void pass_stage_control_plane(Pass *p, PassReport *rep) {
        pass_progress_step("control-plane manifests");
        pass_control_plane(p, rep, false, NULL);
}

void pass_run(Pass *p, PassReport *rep) {
        /* Each stage leaves the node consistent, so a pending SIGTERM can end the pass between stages. */
        static void (*const stages[])(Pass *, PassReport *) = {
                pass_stage_volumes,
                pass_stage_dns,
                pass_stage_etcd_manifests,
                pass_stage_control_plane,
        };
        for (size_t i = 0; i < ELEMENTSOF(stages); i++) {
                if (i > 0 && daemon_stop_requested()) {
                        pass_report_error(rep, PASS_STAGE_SPEC, PK_EWAITING, "stopping");
                        return;
                }
                stages[i](p, rep);
        }
}

VolumesPassConfig pass_volumes_config(Pass *p) {
        return volumes_config(p, NULL, true);
}

int pass_observe(Pass *p, VolumesObservation *ret_o, PassInput *ret_in, PassPlan *ret_plan) {
        VolumesPassConfig cfg = volumes_config(p, NULL, true);
        int r = volumes_observe(p->provider, &cfg, ret_o);
        if (r >= 0) {
                /* The input points into the observation and the spec: valid as long as they are. */
                p->observed_cfg = cfg;
                volumes_pass_input(&p->observed_cfg, ret_o, ret_in);
                r = pass_plan(ret_in, ret_plan);
        }
        if (r < 0) {
                const char *detail = volume_provider_last_error(p->provider);
                volumes_observation_done(ret_o);
                if (detail)
                        return log_error_errno(r, "Failed to observe the volumes of cluster '%s': %s",
                                               p->spec->name, detail);
                return log_error_errno(r, "Failed to observe the volumes of cluster '%s': %m",
                                       p->spec->name);
        }
        STRV_FOREACH (w, ret_o->volumes.warnings)
                log_warning("Unreadable volume: %s", *w);
        return 0;
}

int pass_print_plan_rest(Pass *p, FILE *out) {
        PassReport rep = {};
        pass_dns(p, &rep, true, out);
        pass_control_plane(p, &rep, true, out);
        int r = rep.status;
        pass_report_done(&rep);
        return r;
}
