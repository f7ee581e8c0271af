/* SPDX-License-Identifier: Apache-2.0 */
/* A pass's observation (all its reads, once) and its plan (pure: every action as data). */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/beneath.h"
#include "basic/errors.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "basic/trace.h"
#include "daemon/pass.h"
#include "dns/dns-wire.h"
#include "model/cluster-view.h"

#define MANIFEST_MAX (1024U * 1024U)

void pass_observation_done(PassObservation *o) {
        volumes_observation_done(&o->volumes);
        dns_session_free(o->dns);
        free(o->dns_message);
        free(o->volumes_message);
        dns_rrset_list_done(&o->dns_served);
        strv_free(o->api.probed);
        strv_free(o->api.ready);
        strv_free(o->api.out);
        strv_free(o->api.pods_ready);
        free(o->api.pods_through);
        strv_free(o->api_why);
        strv_free(o->manifest_names);
        strv_free(o->manifest_texts);
        certs_observation_done(&o->certs);
        for (size_t i = 0; o->etcd_members && i < o->in.n_volumes; i++)
                pass_etcd_member_done(&o->etcd_members[i]);
        free(o->etcd_members);
        *o = (PassObservation){};
}

/* Our control-plane manifests as they are on disk: every regular "*.manifest" file of the directory (the
 * etcd links point onto the volumes and are observed there). A missing directory is an empty one. */
static int observe_manifest_dir(const char *dir, char ***ret_names, char ***ret_texts) {
        _cleanup_strv_free_ char **names = calloc(1, sizeof(char *)), **texts = calloc(1, sizeof(char *));
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (!names || !texts)
                return -ENOMEM;
        if (dfd < 0 && errno != ENOENT)
                return -errno;
        DIR *d = dfd >= 0 ? fdopendir(fcntl(dfd, F_DUPFD_CLOEXEC, 3)) : NULL;
        for (struct dirent *de; d && (de = readdir(d));) {
                _cleanup_free_ char *text = NULL;
                if (de->d_name[0] == '.' || !endswith(de->d_name, ".manifest"))
                        continue;
                int r = beneath_read_file(dfd, de->d_name, MANIFEST_MAX, &text, NULL);
                if (r == -ENOMEM) {
                        closedir(d);
                        return r;
                }
                if (r < 0)
                        continue; /* a link (etcd's), or not ours to read: written anew if it is ours */
                if (strv_extend(&names, de->d_name) < 0 || strv_push(&texts, TAKE_PTR(text)) < 0) {
                        closedir(d);
                        return -ENOMEM;
                }
        }
        if (d)
                closedir(d);
        *ret_names = TAKE_PTR(names);
        *ret_texts = TAKE_PTR(texts);
        return 0;
}

/* What DNS serves for the names we own. The names come from the view as observed: claims this pass makes
 * change addresses, not names. */
static void observe_dns(Pass *p, PassObservation *o) {
        _cleanup_(cluster_view_freep) ClusterView *view = NULL;
        _cleanup_(dns_rrset_list_donep) DnsRRsetList owned = {};
        _cleanup_free_ char *error = NULL;
        trace_mark("DNS: reading");
        int r = dns_session_open(p->spec, &o->dns, &error);
        if (r >= 0 && o->dns)
                r = volumes_view(&o->in, NULL, &view);
        if (r >= 0 && o->dns)
                r = dns_desired_records(p->spec, view, &owned, &error);
        if (r >= 0 && o->dns)
                r = dns_session_read(o->dns, &owned, &o->dns_served, &o->dns_repair, &error);
        trace_mark("DNS: read");
        if (r >= 0 && o->dns && pass_api_observe(p, o, view) == -ENOMEM)
                r = -ENOMEM;
        _cleanup_free_ char *note = o->dns ? dns_session_take_note(o->dns) : NULL;
        if (note)
                log_info("%s", note);
        if (r < 0) {
                o->dns_error = r;
                o->dns_message = TAKE_PTR(error);
                o->dns = dns_session_free(o->dns);
        }
}

/* The pivot's record (docs/pivot.md): a master that retired its bootstrap manifests, or saw the pivot
 * complete, must not get them back from the pass. A record that cannot be read keeps them away too: writing
 * them could undo a pivot. Read first: the API's names follow the pivot's turns while it is under way. */
static int observe_pivot_record(Pass *p, PassObservation *o) {
        _cleanup_free_ char *error = NULL;
        int r = pivot_record_load(p->node.state_dir ?: STATE_DIR_DEFAULT, &o->pivot_record, &error);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                log_error("%s: the bootstrap control-plane manifests are not written this pass.", error);
                o->pivot_record = (PivotRecord){ .removed_at = 1 };
        }
        return 0;
}

int pass_observe(Pass *p, PassObservation *ret) {
        /* filled in place: the planner's input points into it */
        PassObservation *o = ret;
        *o = (PassObservation){ .realtime = now(CLOCK_REALTIME) };
        _cleanup_free_ char *detail = NULL;
        if (observe_pivot_record(p, o) < 0)
                return log_oom();
        int r = volumes_observe(p->provider, &p->cfg, &o->volumes, &detail);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0) {
                if (detail)
                        log_error_errno(r, "Failed to observe the volumes of cluster '%s': %s",
                                        p->spec->name, detail);
                else
                        log_error_errno(r, "Failed to observe the volumes of cluster '%s': %m",
                                        p->spec->name);
                o->volumes_error = r;
                o->volumes_message = TAKE_PTR(detail);
        } else {
                STRV_FOREACH (w, o->volumes.volumes.warnings)
                        log_warning("Unreadable volume: %s", *w);
                volumes_input(&p->cfg, &o->volumes, &o->in);
                observe_dns(p, o);
                trace_mark("etcd: observing");
                r = pass_etcd_observe(p, o);
                if (r < 0) {
                        pass_observation_done(o);
                        return log_oom();
                }
        }
        trace_mark("certificates: observing");
        r = certs_observe(&p->certs, &o->certs);
        if (r < 0) {
                pass_observation_done(o);
                return log_error_errno(r, "Failed to observe the node's certificates: %m");
        }
        if (o->certs.error < 0)
                log_error_errno(o->certs.error, "Failed to read the keystore: %s", strna(o->certs.message));
        trace_mark("manifests: observing");
        r = observe_manifest_dir(p->node.manifest_dir, &o->manifest_names, &o->manifest_texts);
        if (r < 0) {
                pass_observation_done(o);
                return log_error_errno(r, "Failed to read the manifest directory '%s': %m",
                                       p->node.manifest_dir);
        }
        return 0;
}

void pass_plan_done(PassPlan *p) {
        for (size_t k = 0; p->etcd_texts && k < p->volumes.n_selections; k++)
                free(p->etcd_texts[k]);
        free(p->etcd_texts);
        volumes_plan_done(&p->volumes);
        free(p->observed);
        free(p->etcd_render_error);
        cluster_view_free(p->view);
        free(p->dns_note);
        dns_rrset_list_done(&p->dns_desired);
        dns_rrset_list_done(&p->dns_changes);
        strv_free(p->api_withheld);
        free(p->api_note);
        rendered_manifests_done(&p->control_plane);
        free(p->control_plane_write);
        certs_plan_done(&p->certs);
        free(p->held_members);
        free(p->member_plans);
        *p = (PassPlan){};
}

int pass_render_member(const Pass *pass, const VolumeEligibility *e, const char *id, bool existing,
                       char **ret) {
        _cleanup_free_ char *mount = volume_mount_path(pass->node.mount_root, id);
        if (!mount)
                return -ENOMEM;
        EtcdMemberAssignment a = {
                .cluster = e->etcd.cluster,
                .member = e->etcd.member,
                .members = e->etcd.members,
                .mount_path = mount,
                .existing = existing,
        };
        return etcd_manifest_render(pass->spec, &a, ret);
}

/* Whether volume i's member gets initial-cluster-state=existing: as decided, and once written, for good: a
 * member with data ignores the flag, so keeping it spares etcd a restart for a changed manifest. */
static bool member_existing(const PassObservation *o, const PassPlan *plan, size_t i) {
        const MemberPlan *d = plan->member_plans ? &plan->member_plans[i] : NULL;
        if (!d || !o->etcd_members || !o->etcd_members[i].observed)
                return false;
        if (d->decision != MEMBER_KEEP)
                return d->existing;
        const char *text = o->in.observed ? o->in.observed[i].manifest_text : NULL;
        return d->existing || (text && strstr(text, "--initial-cluster-state=existing"));
}

/* The decision for each member observed (pure: etcdapi/member-plan.h). */
static int plan_members(const PassObservation *o, PassPlan *plan) {
        plan->member_plans = new0(MemberPlan, o->in.n_volumes + 1);
        if (!plan->member_plans)
                return -ENOMEM;
        for (size_t i = 0; o->etcd_members && i < o->in.n_volumes; i++)
                if (o->etcd_members[i].observed)
                        pass_etcd_decide(&o->etcd_members[i], &plan->member_plans[i]);
        return 0;
}

/* The etcd manifest of each held, mounted volume against what it should be: the planner then plans a write
 * only where they differ. */
static int plan_manifest_currency(const Pass *pass, const PassObservation *ob, const PassPlan *plan,
                                  const VolumesInput *in, VolumeObserved *observed) {
        for (size_t i = 0; i < in->n_volumes; i++) {
                VolumeObserved *o = &observed[i];
                VolumeEligibility e = {};
                _cleanup_free_ char *text = NULL;
                if (o->mount == MOUNT_STATE_OURS && ob->etcd_members && ob->etcd_members[i].restoring) {
                        /* a restore under way owns the manifest and its link (pass-restore.c) */
                        o->manifest_current = o->link_current = true;
                        continue;
                }
                if (o->mount != MOUNT_STATE_OURS || !o->manifest_text)
                        continue;
                int r = volume_classify(&in->volumes[i], in->cluster, NULL, in->etcd_clusters, &e);
                if (r >= 0 && e.eligible)
                        r = pass_render_member(pass, &e, in->volumes[i].id, member_existing(ob, plan, i),
                                               &text);
                volume_eligibility_done(&e);
                if (r == -ENOMEM)
                        return r;
                o->manifest_current = r >= 0 && text && streq(text, o->manifest_text);
        }
        return 0;
}

/* Whether the certificates of the etcd cluster's member are in place once the plan is applied (always, when
 * protokube manages none). */
static bool etcd_certs_ready(const Pass *pass, const PassPlan *plan, const char *cluster) {
        for (size_t c = 0; plan->certs.etcd_ready && pass->etcd_clusters[c]; c++)
                if (streq(pass->etcd_clusters[c], cluster))
                        return plan->certs.etcd_ready[c];
        return !plan->certs.managed;
}

/* The member held in each etcd cluster after the plan's claims: a selection with a volume. */
static int plan_held_members(const Pass *pass, PassPlan *plan) {
        size_t n = strv_length(pass->etcd_clusters);
        plan->held_members = new0(const char *, n + 1);
        if (!plan->held_members)
                return -ENOMEM;
        for (size_t k = 0; k < plan->volumes.n_selections; k++) {
                const PlanSelection *sel = &plan->volumes.selections[k];
                if (sel->volume == SIZE_MAX || !plan->volumes.eligibility[sel->volume].eligible)
                        continue;
                for (size_t c = 0; c < n; c++)
                        if (streq(pass->etcd_clusters[c], sel->etcd_cluster))
                                plan->held_members[c] = plan->volumes.eligibility[sel->volume].etcd.member;
        }
        return 0;
}

/* The certificates for this node's addresses and the members it holds after the plan. */
static int plan_certs(const Pass *pass, const PassObservation *o, PassPlan *plan) {
        _cleanup_strv_free_ char **ips = strv_new(NULL);
        if (!ips)
                return -ENOMEM;
        if (o->volumes_error >= 0) {
                const NodeIdentity *n = &o->volumes.node;
                for (size_t i = 0; n->internal_ips && n->internal_ips[i]; i++)
                        if (!strv_contains(ips, n->internal_ips[i]) &&
                            strv_extend(&ips, n->internal_ips[i]) < 0)
                                return -ENOMEM;
                for (size_t i = 0; n->external_ips && n->external_ips[i]; i++)
                        if (!strv_contains(ips, n->external_ips[i]) &&
                            strv_extend(&ips, n->external_ips[i]) < 0)
                                return -ENOMEM;
        }
        CertsNode node = {
                .name = o->volumes_error >= 0 ? o->volumes.node.name : NULL,
                .ips = ips,
                .held_members = plan->held_members,
                .held_known = o->volumes_error >= 0,
        };
        int r = certs_plan(&pass->certs, &o->certs, &node, o->realtime, &plan->certs);
        if (r >= 0 && pass->force_renew)
                r = certs_plan_force_renewal(&o->certs, &plan->certs);
        return r;
}

/* The etcd manifest of each selected member, for the write actions. */
static int plan_etcd_texts(const Pass *pass, const PassObservation *o, PassPlan *plan) {
        plan->etcd_texts = new0(char *, plan->volumes.n_selections + 1);
        if (!plan->etcd_texts)
                return -ENOMEM;
        for (size_t k = 0; k < plan->volumes.n_selections; k++) {
                size_t i = plan->volumes.selections[k].volume;
                if (i == SIZE_MAX || !plan->volumes.eligibility[i].eligible)
                        continue;
                if (!etcd_certs_ready(pass, plan, plan->volumes.selections[k].etcd_cluster)) {
                        if (!plan->etcd_render_error &&
                            !(plan->etcd_render_error = strprintf(
                                  "etcd %s: waiting for its certificates: %s",
                                  plan->volumes.selections[k].etcd_cluster, strna(plan->certs.note))))
                                return -ENOMEM;
                        continue;
                }
                int r = pass_render_member(pass, &plan->volumes.eligibility[i], plan->in.volumes[i].id,
                                           member_existing(o, plan, i), &plan->etcd_texts[k]);
                if (r == -ENOMEM)
                        return r;
                if (r < 0 && !plan->etcd_render_error)
                        plan->etcd_render_error = strprintf(
                            "etcd %s: %s", plan->volumes.selections[k].etcd_cluster, pk_strerror(r));
        }
        return 0;
}

static int plan_dns(const Pass *pass, const PassObservation *o, PassPlan *plan) {
        _cleanup_free_ char *error = NULL;
        int r;
        if (o->volumes_error < 0) {
                plan->dns_status = o->volumes_error;
                plan->dns_note = strdup("cannot observe the masters for DNS");
                return plan->dns_note ? 0 : -ENOMEM;
        }
        if (o->dns_error < 0) {
                plan->dns_status = o->dns_error;
                plan->dns_note = strdup(strna(o->dns_message));
                return plan->dns_note ? 0 : -ENOMEM;
        }
        if (!o->dns)
                return 0;
        /* An empty view is likelier a failed observation than a cluster without masters: it must not
         * wipe the records. */
        if (plan->view->n_masters == 0 && plan->view->n_members == 0) {
                plan->dns_status = PK_EWAITING;
                plan->dns_note = strdup("the view has no masters and no etcd members; not publishing");
                return plan->dns_note ? 0 : -ENOMEM;
        }
        r = pass_api_plan(pass, o, plan);
        if (r < 0)
                return r;
        r = dns_desired_records_except(pass->spec, plan->view, plan->api_withheld, &plan->dns_desired,
                                       &error);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                plan->dns_status = r;
                plan->dns_note =
                    strprintf("cannot compute the desired records: %s", error ?: pk_strerror(r));
                return plan->dns_note ? 0 : -ENOMEM;
        }
        r = dns_session_diff(o->dns, &plan->dns_desired, &o->dns_served, &plan->dns_changes);
        if (r < 0)
                return r;
        plan->dns_send = plan->dns_changes.n > 0 || o->dns_repair;
        return 0;
}

static const char *observed_manifest(const PassObservation *o, const char *name) {
        for (size_t i = 0; o->manifest_names && o->manifest_names[i]; i++)
                if (streq(o->manifest_names[i], name))
                        return o->manifest_texts[i];
        return NULL;
}

/* The control-plane manifests other than etcd's (those live on the volumes). */
/* The address kube-apiserver advertises to the cluster (the kubernetes service's endpoint): the spec's, else
 * this node's internal address. kube-apiserver would otherwise take the address of the default route's
 * interface, which a master may not have (a private network) or which may not be its cluster address. NULL
 * when the node's address is not known this pass (the provider could not be observed). */
static const char *advertise_address(const Pass *pass, const PassObservation *o) {
        if (pass->spec->kube_apiserver.advertise_address)
                return pass->spec->kube_apiserver.advertise_address;
        if (o->volumes_error < 0 || strv_length(o->volumes.node.internal_ips) == 0)
                return NULL;
        return o->volumes.node.internal_ips[0];
}

static int plan_control_plane(const Pass *pass, const PassObservation *o, PassPlan *plan) {
        /* A renewed certificate changes the digest, so kubelet restarts the components that read their
         * files once. */
        char *const annotations[] = { (char *)CERTS_ANNOTATION, plan->certs.digest, NULL };
        /* The node's facts go into its copy of the spec (a shallow copy: the strings stay the spec's). */
        ClusterSpec node_spec = *pass->spec;
        const char *advertise = advertise_address(pass, o);
        if (!advertise) { /* without it the text would differ: keep the manifests on disk this pass */
                plan->render_error = PK_EWAITING;
                plan->render_failed = "kube-apiserver (waiting for this node's address)";
                return 0;
        }
        node_spec.kube_apiserver.advertise_address = (char *)advertise;
        int r = control_plane_render(&node_spec, NULL, 0, plan->certs.managed ? annotations : NULL,
                                     &plan->control_plane, &plan->render_failed);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                plan->render_error = r;
                return 0;
        }
        plan->control_plane_write = new0(bool, plan->control_plane.n + 1);
        if (!plan->control_plane_write)
                return -ENOMEM;
        for (size_t i = 0; i < plan->control_plane.n; i++) {
                const RenderedManifest *m = &plan->control_plane.items[i];
                const char *cur = observed_manifest(o, m->file_name);
                plan->control_plane_write[i] =
                    (!cur || !streq(cur, m->text)) &&
                    !pivot_record_keeps_bootstrap_away(&o->pivot_record, m->file_name);
        }
        return 0;
}

int pass_plan(const Pass *pass, const PassObservation *o, PassPlan *ret) {
        PassPlan plan = { .in = o->in };
        int r = 0;

        trace_mark("planning");
        plan.observed = new0(VolumeObserved, o->in.n_volumes + 1);
        if (!plan.observed)
                r = -ENOMEM;
        if (r >= 0 && o->in.observed)
                memcpy(plan.observed, o->in.observed, sizeof(VolumeObserved) * o->in.n_volumes);
        plan.in.observed = plan.observed;
        if (r >= 0 && o->volumes_error >= 0) {
                r = plan_members(o, &plan);
                if (r >= 0)
                        r = plan_manifest_currency(pass, o, &plan, &plan.in, plan.observed);
                if (r >= 0)
                        r = volumes_plan(&plan.in, &plan.volumes);
                if (r >= 0)
                        r = plan_held_members(pass, &plan);
        }
        trace_mark("plan: certificates");
        if (r >= 0)
                r = plan_certs(pass, o, &plan);
        trace_mark("plan: etcd");
        if (r >= 0 && o->volumes_error >= 0) {
                r = plan_etcd_texts(pass, o, &plan);
                if (r >= 0)
                        r = volumes_view(&plan.in, &plan.volumes, &plan.view);
        }
        trace_mark("plan: DNS");
        if (r >= 0)
                r = plan_dns(pass, o, &plan);
        trace_mark("plan: control plane");
        if (r >= 0)
                r = plan_control_plane(pass, o, &plan);
        if (r < 0) {
                pass_plan_done(&plan);
                return r;
        }
        *ret = plan;
        return 0;
}

static const char *selection_state_string(SelectionState s) {
        static const char *const names[_SELECTION_STATE_MAX] = {
                [SELECTION_READY] = "ready",
                [SELECTION_ACTIONS] = "changes",
                [SELECTION_WAITING] = "waiting",
                [SELECTION_ERROR] = "error",
        };
        return s >= 0 && s < _SELECTION_STATE_MAX ? names[s] : "?";
}

static void print_volume_steps(const Pass *pass, const PassObservation *o, const PassPlan *plan, FILE *out) {
        const VolumesPlan *vp = &plan->volumes;
        fprintf(out, "node %s, zone %s\n", o->volumes.node.name, o->volumes.node.zone);
        for (size_t k = 0; k < vp->n_selections; k++) {
                const PlanSelection *s = &vp->selections[k];
                fprintf(out, "etcd %s: %s", s->etcd_cluster, selection_state_string(s->state));
                if (s->volume != SIZE_MAX)
                        fprintf(out, ", volume %s member %s", plan->in.volumes[s->volume].id,
                                vp->eligibility[s->volume].etcd.member);
                if (s->note)
                        fprintf(out, " (%s)", s->note);
                fprintf(out, "\n");
        }
        for (size_t k = 0; k < vp->n_actions; k++) {
                const PlanAction *a = &vp->actions[k];
                const Volume *vol = &plan->in.volumes[a->volume];
                const char *cluster = vp->eligibility[a->volume].etcd.cluster;
                _cleanup_free_ char *mount = volume_mount_path(pass->node.mount_root, vol->id),
                                    *target = NULL;
                if (a->type == ACTION_MOUNT)
                        target = strdup(strna(mount));
                else if (a->type == ACTION_WRITE_MANIFEST)
                        target = volume_manifest_path(strna(mount), cluster);
                else if (a->type == ACTION_LINK_MANIFEST)
                        target = volume_manifest_link(pass->node.manifest_dir, cluster);
                fprintf(out, "%zu. %s %s%s%s\n", k + 1, action_type_to_string(a->type), vol->id,
                        target ? " " : "", strempty(target));
        }
        if (vp->n_actions == 0)
                fprintf(out, "volumes: nothing to do\n");
}

void pass_plan_print(const Pass *pass, const PassObservation *o, const PassPlan *plan, FILE *out) {
        print_volume_steps(pass, o, plan, out);
        if (plan->dns_status < 0)
                fprintf(out, "dns: cannot plan: %s\n", strna(plan->dns_note));
        else if (plan->dns_status == PK_EWAITING)
                fprintf(out, "dns: waiting: %s\n", strna(plan->dns_note));
        if (plan->api_note)
                fprintf(out, "dns: waiting: %s\n", plan->api_note);
        for (size_t i = 0; i < plan->dns_changes.n; i++) {
                const DnsRRset *s = &plan->dns_changes.items[i];
                _cleanup_free_ char *a = s->addresses ? strv_join(s->addresses, ",") : NULL;
                fprintf(out, "dns-replace %s %s %s\n", s->name, s->type == DNS_TYPE_AAAA ? "AAAA" : "A",
                        isempty(a) ? "(delete)" : a);
        }
        if (plan->render_error == PK_EWAITING)
                fprintf(out, "control plane: waiting: %s\n", strna(plan->render_failed));
        else if (plan->render_error < 0)
                fprintf(out, "control plane: cannot render '%s': %s\n", strna(plan->render_failed),
                        pk_strerror(plan->render_error));
        for (size_t i = 0; i < plan->control_plane.n; i++)
                if (plan->control_plane_write[i])
                        fprintf(out, "write-manifest %s/%s\n", pass->node.manifest_dir,
                                plan->control_plane.items[i].file_name);
        certs_plan_print(&o->certs, &plan->certs, out);
        if (o->volumes_error >= 0 && plan->member_plans)
                pass_etcd_plan_print(pass, o, plan, out);
}

int pass_observe_and_plan(Pass *p, PassObservation *o, PassPlan *plan) {
        int r = pass_observe(p, o);
        if (r < 0)
                return r;
        if (o->volumes_error < 0) { /* logged: nothing to plan from */
                r = o->volumes_error;
                pass_observation_done(o);
                return r;
        }
        r = pass_plan(p, o, plan);
        if (r < 0) {
                pass_observation_done(o);
                return log_oom();
        }
        return 0;
}
