/* SPDX-License-Identifier: Apache-2.0 */
/* The control plane's static pods (docs/components.md): kube-apiserver, kube-controller-manager,
 * kube-scheduler, kube-proxy rendered from the spec with this node's facts, and the configuration files
 * kube-scheduler and kube-proxy read (under the node's --config-dir), each written where it differs from
 * what is on disk, atomically, a file before the manifest that names it; a pivot's record keeps the
 * bootstrap ones away (docs/pivot.md). */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/beneath.h"
#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/stop.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "daemon/pass-types.h"
#include "daemon/progress.h"
#include "daemon/step-control-plane.h"
#include "manifest/manifest-dir.h"

#define MANIFEST_MAX    (1024U * 1024U)
#define CONFIG_FILE_MAX (1024U * 1024U)

/* Our control-plane manifests as they are on disk: every regular "*.manifest" file of the directory (the
 * etcd links point onto the volumes and are observed there). A missing directory is an empty one. */
static int read_manifest_dir(const char *dir, char ***ret_names, char ***ret_texts) {
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

/* The node's copy of the spec: the cluster's settings and where this node keeps the files they name. Its
 * strings alias the spec and the node settings. */
static ClusterSpec node_spec_of(const Pass *pass) {
        ClusterSpec s = *pass->spec;
        s.node_config_dir = pass->node.config_dir;
        return s;
}

/* The components' configuration files as they are: absent is NULL (written); another failure is kept, and
 * nothing is written over that file. */
static int read_config_files(const Pass *p, PassObservation *o) {
        ClusterSpec s = node_spec_of(p);
        for (Component c = 0; c < _COMPONENT_MAX; c++) {
                _cleanup_free_ char *path = NULL;
                int r = component_config_path(c, &s, &path);
                if (r < 0)
                        return r;
                r = path ? read_full_file(path, CONFIG_FILE_MAX, &o->config_texts[c], NULL) : 0;
                if (r == -ENOMEM)
                        return r;
                o->config_errors[c] = r == -ENOENT ? 0 : MIN(r, 0);
        }
        return 0;
}

static int control_plane_observe(PassContext *ctx) {
        const Pass *p = ctx->pass;
        PassObservation *o = ctx->obs;
        int r = read_manifest_dir(p->node.manifest_dir, &o->manifest_names, &o->manifest_texts);
        if (r < 0)
                return log_error_errno(r, "Failed to read the manifest directory '%s': %m",
                                       p->node.manifest_dir);
        return read_config_files(p, o);
}

static const char *observed_manifest(const PassObservation *o, const char *name) {
        for (size_t i = 0; o->manifest_names && o->manifest_names[i]; i++)
                if (streq(o->manifest_names[i], name))
                        return o->manifest_texts[i];
        return NULL;
}

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

/* A configuration file is written where it differs, unless the pod that reads it stays away (the pivot). */
static int plan_config_files(const PassObservation *o, PassPlan *plan) {
        plan->config_write = new0(bool, plan->control_plane.n_files + 1);
        if (!plan->config_write)
                return -ENOMEM;
        for (size_t i = 0; i < plan->control_plane.n_files; i++) {
                const RenderedFile *f = &plan->control_plane.files[i];
                Component c = component_from_string(f->component);
                _cleanup_free_ char *manifest = strjoin(f->component, MANIFEST_SUFFIX);
                if (!manifest)
                        return -ENOMEM;
                if (pivot_record_keeps_bootstrap_away(&o->pivot_record, manifest) || c < 0)
                        continue;
                if (o->config_errors[c] < 0 && plan->config_error == 0) {
                        plan->config_error = o->config_errors[c];
                        plan->config_failed = f->path;
                }
                plan->config_write[i] = o->config_errors[c] == 0 && !streq_ptr(o->config_texts[c], f->text);
        }
        return 0;
}

/* The control-plane manifests other than etcd's (those live on the volumes). */
static int control_plane_plan(const Pass *pass, const PassObservation *o, PassPlan *plan) {
        /* A renewed certificate changes the digest, so kubelet restarts the components that read their
         * files once. */
        char *const annotations[] = { (char *)CERTS_ANNOTATION, plan->certs.digest, NULL };
        /* The node's facts go into its copy of the spec (a shallow copy: the strings stay the spec's). */
        ClusterSpec node_spec = node_spec_of(pass);
        const char *advertise = advertise_address(pass, o);
        if (!advertise) { /* without it the text would differ: keep the manifests on disk this pass */
                plan->render_error = PK_EWAITING;
                plan->render_failed = "kube-apiserver (waiting for this node's address)";
                return 0;
        }
        node_spec.kube_apiserver.advertise_address = (char *)advertise;
        ControlPlaneParams params = { .pod_annotations = plan->certs.managed ? annotations : NULL };
        int r = control_plane_render(&node_spec, &params, &plan->control_plane, &plan->render_failed);
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
        return plan_config_files(o, plan);
}

/* Each configuration file to write, atomically (its directory made first). false: one could not be
 * written (reported), so no manifest is: a pod pointed at a file that is not there would not start. */
static bool apply_config_files(PassContext *ctx) {
        const PassPlan *plan = ctx->plan;
        if (plan->config_error < 0) { /* what is there is not ours to replace unread */
                log_error_errno(plan->config_error, "Failed to read '%s'; not written over: %m",
                                plan->config_failed);
                pass_report_error(ctx->rep, PASS_STAGE_MANIFEST, plan->config_error,
                                  "cannot read a component's configuration file");
                return false;
        }
        for (size_t i = 0; i < plan->control_plane.n_files; i++) {
                const RenderedFile *f = &plan->control_plane.files[i];
                if (!plan->config_write[i])
                        continue;
                if (stop_requested())
                        return false;
                int r = manifest_write_file(f->path, f->text);
                if (r < 0) {
                        log_error_errno(r, "Failed to write '%s' (%s's configuration): %m", f->path,
                                        f->component);
                        pass_report_error(ctx->rep, PASS_STAGE_MANIFEST, r,
                                          "cannot write a component's configuration file");
                        return false;
                }
                log_info("Wrote '%s' (%s's configuration).", f->path, f->component);
                ctx->rep->actions_applied++;
        }
        return true;
}

static int control_plane_apply(PassContext *ctx, PassWave wave) {
        const Pass *p = ctx->pass;
        const PassPlan *plan = ctx->plan;
        PassReport *rep = ctx->rep;
        int r;
        pass_progress_step("control-plane manifests");
        if (plan->render_error == PK_EWAITING) { /* the provider's failure is reported as such */
                log_info("Control-plane manifests kept as they are: %s.", strna(plan->render_failed));
                return 0;
        }
        if (plan->render_error < 0) {
                log_error_errno(plan->render_error, "Failed to render '%s': %m", strna(plan->render_failed));
                pass_report_error(rep, PASS_STAGE_MANIFEST, plan->render_error,
                                  "cannot render the control-plane manifests");
                return 0;
        }
        /* the files first: a pod whose manifest names one must find it */
        if (!apply_config_files(ctx))
                return 0;
        for (size_t i = 0; i < plan->control_plane.n; i++) {
                if (!plan->control_plane_write[i])
                        continue;
                if (stop_requested())
                        return 0;
                _cleanup_free_ char *path =
                    strjoin(p->node.manifest_dir, "/", plan->control_plane.items[i].file_name);
                r = path ? mkdir_p(p->node.manifest_dir, 0755) : -ENOMEM;
                if (r >= 0)
                        r = manifest_write(path, plan->control_plane.items[i].text);
                if (r < 0) {
                        log_error_errno(r, "Failed to write the manifest '%s': %m", strna(path));
                        pass_report_error(rep, PASS_STAGE_MANIFEST, r,
                                          "cannot write a control-plane manifest");
                } else if (r > 0) {
                        log_info("Wrote manifest '%s'.", path);
                        rep->actions_applied++;
                }
        }
        return 0;
}

static int control_plane_print(const Pass *pass, const PassObservation *o, const PassPlan *plan, FILE *out) {
        if (plan->render_error == PK_EWAITING)
                fprintf(out, "control plane: waiting: %s\n", strna(plan->render_failed));
        else if (plan->render_error < 0)
                fprintf(out, "control plane: cannot render '%s': %s\n", strna(plan->render_failed),
                        pk_strerror(plan->render_error));
        if (plan->config_error < 0)
                fprintf(out, "control plane: cannot read '%s' (not written over): %s\n", plan->config_failed,
                        pk_strerror(plan->config_error));
        for (size_t i = 0; i < plan->control_plane.n_files; i++)
                if (plan->config_write[i])
                        fprintf(out, "write-config %s\n", plan->control_plane.files[i].path);
        for (size_t i = 0; i < plan->control_plane.n; i++)
                if (plan->control_plane_write[i])
                        fprintf(out, "write-manifest %s/%s\n", pass->node.manifest_dir,
                                plan->control_plane.items[i].file_name);
        return 0;
}

const PassStep pass_step_control_plane = {
        .name = "control-plane manifests",
        .stage = PASS_STAGE_MANIFEST,
        .roles = 1U << NODE_ROLE_MASTER,
        .observe = control_plane_observe,
        .plan = control_plane_plan,
        .apply = control_plane_apply,
        .print = control_plane_print,
};
