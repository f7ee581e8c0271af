/* SPDX-License-Identifier: Apache-2.0 */
/* protokube render: the control-plane static pods for the spec and the configuration files they and the
 * node's kubelet read (kube-scheduler.yaml, kube-proxy.yaml, kubelet.yaml), written to --out DIR (atomic,
 * only when changed, no other file touched) or printed to stdout as one YAML stream. The etcd pods need to
 * know which member this node is: --etcd-member main=a/a,b,c (the volume tag's value) and --etcd-mount
 * main=/mnt/x. */
#include <stdio.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "cli/cli.h"
#include "components/kubelet.h"
#include "components/render.h"
#include "components/self-hosted.h"
#include "daemon/pass-pivot.h"
#include "manifest/manifest-dir.h"
#include "model/conventions.h"
#include "spec/spec.h"

#define MAX_ETCD_CLUSTERS 8

typedef struct EtcdArg {
        char *cluster;
        char *member;
        char **members;
        char *mount;
} EtcdArg;

typedef struct RenderArgs {
        const char *out;
        bool self_hosted;
        EtcdArg etcd[MAX_ETCD_CLUSTERS];
        size_t n_etcd;
} RenderArgs;

static void render_args_done(RenderArgs *a) {
        for (size_t i = 0; i < a->n_etcd; i++) {
                free(a->etcd[i].cluster);
                free(a->etcd[i].member);
                strv_free(a->etcd[i].members);
                free(a->etcd[i].mount);
        }
}

static EtcdArg *etcd_arg(RenderArgs *a, const char *cluster, size_t len) {
        for (size_t i = 0; i < a->n_etcd; i++)
                if (strlen(a->etcd[i].cluster) == len && strneq(a->etcd[i].cluster, cluster, len))
                        return &a->etcd[i];
        if (a->n_etcd >= MAX_ETCD_CLUSTERS || len == 0)
                return NULL;
        char *c = strndup(cluster, len);
        if (!c)
                return NULL;
        a->etcd[a->n_etcd] = (EtcdArg){ .cluster = c };
        return &a->etcd[a->n_etcd++];
}

/* "main=a/a,b,c": the volume tag k8s.io/etcd/main=a/a,b,c as kops writes it. */
static int parse_member(RenderArgs *a, const char *arg) {
        const char *eq = strchr(arg, '='), *slash = eq ? strchr(eq, '/') : NULL;
        if (!eq || !slash || slash == eq + 1 || strlen(arg) > 1024)
                return cli_usage_error("render", "invalid --etcd-member '%s' (expected CLUSTER=ME/ALL,...)",
                                       arg);
        EtcdArg *e = etcd_arg(a, arg, (size_t)(eq - arg));
        if (!e)
                return cli_usage_error("render", "invalid --etcd-member '%s'", arg);
        if (e->member)
                return cli_usage_error("render", "--etcd-member given twice for '%s'", e->cluster);
        e->member = strndup(eq + 1, (size_t)(slash - eq - 1));
        if (!e->member || strv_split(slash + 1, ",", &e->members) < 0)
                return log_oom(), -ENOMEM;
        return 0;
}

static int parse_mount(RenderArgs *a, const char *arg) {
        const char *eq = strchr(arg, '=');
        if (!eq || eq[1] != '/' || strlen(arg) > 4096)
                return cli_usage_error("render", "invalid --etcd-mount '%s' (expected CLUSTER=/PATH)", arg);
        EtcdArg *e = etcd_arg(a, arg, (size_t)(eq - arg));
        if (!e)
                return cli_usage_error("render", "invalid --etcd-mount '%s'", arg);
        if (e->mount)
                return cli_usage_error("render", "--etcd-mount given twice for '%s'", e->cluster);
        e->mount = strdup(eq + 1);
        return e->mount ? 0 : (log_oom(), -ENOMEM);
}

/* The verb's options; render_args_done() in verb_render() releases them. */
static RenderArgs arg_render = {};

static int parse_out(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        arg_render.out = value;
        return 0;
}

static int parse_self_hosted(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        arg_render.self_hosted = true;
        return 0;
}

static int parse_etcd_member(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        return parse_member(&arg_render, value) == 0 ? 0 : -EINVAL;
}

static int parse_etcd_mount(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        return parse_mount(&arg_render, value) == 0 ? 0 : -EINVAL;
}

const CliOption verb_render_options[] = {
        { .name = "out",
          .arg_name = "DIR",
          .help = "write the manifests to DIR (atomically, only when changed) instead of stdout",
          .parse = parse_out },
        { .name = "etcd-member",
          .arg_name = "CLUSTER=ME/ALL,...",
          .help = "this node's member of an etcd cluster, as the volume tag says (main=a/a,b,c)",
          .parse = parse_etcd_member },
        { .name = "etcd-mount",
          .arg_name = "CLUSTER=/PATH",
          .help = "where that member's volume is mounted (main=/mnt/vol-x)",
          .parse = parse_etcd_mount },
        { .name = "self-hosted",
          .help = "write the self-hosted control plane instead (docs/self-hosted.md): Secrets, ConfigMaps, "
                  "RBAC, DaemonSets, Deployments; needs --etcd-member main=ME/ALL (one replica per master); "
                  "Secrets are written 0600 with --out and never printed",
          .parse = parse_self_hosted },
        { .name = "kubelet-dir",
          .arg_name = "DIR",
          .help = "with --self-hosted: the nodes' kubelet directory, the managed kubelet's host path "
                  "(spec.kubelet.selfHosted; default /var/lib/kubelet)",
          .parse = cli_parse_absolute_dir,
          .field = offsetof(CliContext, node.kubelet_dir) },
        { .name = "manifest-dir",
          .arg_name = "DIR",
          .help = "with --self-hosted: the nodes' static pods' directory, the managed kubelet's host path "
                  "(default /etc/kubernetes/manifests)",
          .parse = cli_parse_absolute_dir,
          .field = offsetof(CliContext, node.manifest_dir) },
        { .name = "mount-root",
          .arg_name = "DIR",
          .help = "with --self-hosted: where the nodes mount their etcd volumes, the managed kubelet's host "
                  "path (default /mnt)",
          .parse = cli_parse_absolute_dir,
          .field = offsetof(CliContext, node.mount_root) },
        { .name = "config-dir",
          .arg_name = "DIR",
          .help = "with --self-hosted: the nodes' components' configuration directory, the managed "
                  "kubelet's host path (default /var/lib)",
          .parse = cli_parse_absolute_dir,
          .field = offsetof(CliContext, node.config_dir) },
        {},
};

static int write_one(const char *dir, const char *file_name, const char *text) {
        _cleanup_free_ char *path = strjoin(dir, "/", file_name);
        if (!path)
                return log_oom();
        int r = manifest_write(path, text);
        if (r < 0)
                return log_error_errno(r, "Failed to write '%s': %m", path);
        log_info("%s '%s'", r > 0 ? "Wrote" : "Unchanged", path);
        return 0;
}

/* The manifests, then the configuration files under their render names (on a node they live where the
 * manifests say: RenderedFile.path). */
static int write_out(const char *dir, const RenderedManifests *m) {
        int r = mkdir_p(dir, 0755);
        if (r < 0)
                return log_error_errno(r, "Failed to create '%s': %m", dir);
        for (size_t i = 0; i < m->n; i++) {
                r = write_one(dir, m->items[i].file_name, m->items[i].text);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < m->n_files; i++) {
                r = write_one(dir, m->files[i].file_name, m->files[i].text);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int print_all(const RenderedManifests *m) {
        for (size_t i = 0; i < m->n; i++)
                if (printf("%s%s", i > 0 ? "---\n" : "", m->items[i].text) < 0)
                        return -EIO;
        for (size_t i = 0; i < m->n_files; i++)
                if (printf("---\n# %s\n%s", m->files[i].path, m->files[i].text) < 0)
                        return -EIO;
        return fflush(stdout) == 0 ? 0 : -EIO;
}

/* The node's kubelet reads a file too: it joins the others (its manifest is the init system's). */
static int add_kubelet(const ClusterSpec *spec, RenderedManifests *m) {
        _cleanup_free_ char *text = NULL, *path = component_file_path(&kubelet_file, NULL);
        int r = kubelet_config_render(spec, &text);
        if (r < 0)
                return log_error_errno(r, "Failed to render the kubelet's configuration: %m");
        RenderedFile *files = path ? reallocarray(m->files, m->n_files + 1, sizeof(RenderedFile)) : NULL;
        if (!files)
                return log_oom();
        m->files = files;
        m->files[m->n_files++] =
            (RenderedFile){ "kubelet", TAKE_PTR(path), kubelet_file.out_name, TAKE_PTR(text) };
        return 0;
}

/* One file per object, in apply order; the Secrets' files 0600 in a directory only root enters. */
static int write_assets(const char *dir, const SelfHostedAssets *a) {
        int r = mkdir_p(dir, 0700);
        if (r < 0)
                return log_error_errno(r, "Failed to create '%s': %m", dir);
        for (size_t i = 0; i < a->n; i++) {
                const SelfHostedObject *o = &a->items[i];
                _cleanup_free_ char *path = strjoin(dir, "/", o->file_name);
                if (!path)
                        return log_oom();
                r = write_file_atomic(path, o->text, o->text_len, o->secret ? 0600 : 0644, 1);
                if (r < 0)
                        return log_error_errno(r, "Failed to write '%s': %m", path);
                log_info("%s '%s'", r > 0 ? "Wrote" : "Unchanged", path);
        }
        return 0;
}

/* Key material never goes to a terminal (or a pipe): a Secret is named in a comment, its data left out. */
static int print_assets(const SelfHostedAssets *a) {
        bool first = true;
        for (size_t i = 0; i < a->n; i++) {
                const SelfHostedObject *o = &a->items[i];
                int n = o->secret
                            ? printf("# Secret %s/%s: not printed (key material); written by --out DIR\n",
                                     o->namespace, o->name)
                            : printf("%s%s", first ? "" : "---\n", o->text);
                if (n < 0)
                        return -EIO;
                first = first && o->secret;
        }
        return fflush(stdout) == 0 ? 0 : -EIO;
}

/* The masters are the main etcd cluster's members (its volume tag), as for the static pods. */
static int masters_of(const RenderArgs *a, unsigned *ret) {
        for (size_t i = 0; i < a->n_etcd; i++)
                if (streq(a->etcd[i].cluster, ETCD_MAIN_CLUSTER) && a->etcd[i].member) {
                        *ret = (unsigned)strv_length(a->etcd[i].members);
                        return 0;
                }
        return cli_usage_error("render",
                               "--self-hosted needs --etcd-member %s=ME/ALL: one replica per master",
                               ETCD_MAIN_CLUSTER);
}

static int render_self_hosted(const RenderArgs *a, const ClusterSpec *spec, const NodeSettings *node,
                              unsigned n_masters) {
        _cleanup_(self_hosted_assets_done) SelfHostedAssets assets = {};
        int r = pass_render_self_hosted(spec, node, n_masters, &assets, NULL);
        if (r < 0)
                return r;
        r = a->out ? write_assets(a->out, &assets) : print_assets(&assets);
        return r;
}

int verb_render(CliContext *ctx, char **args) {
        _cleanup_(render_args_done) RenderArgs a = arg_render;
        _cleanup_(cluster_spec_freep) ClusterSpec *spec = NULL;
        _cleanup_(rendered_manifests_done) RenderedManifests m = {};
        EtcdMemberAssignment assign[MAX_ETCD_CLUSTERS];
        const char *failed = NULL;
        int r;

        arg_render = (RenderArgs){}; /* a owns them now */
        unsigned n_masters = 0;
        if (a.self_hosted && masters_of(&a, &n_masters) != 0)
                return EXIT_USAGE;
        for (size_t i = 0; i < a.n_etcd; i++) {
                if (!a.etcd[i].member)
                        return cli_usage_error("render", "--etcd-mount for '%s' without --etcd-member",
                                               a.etcd[i].cluster);
                if (!a.etcd[i].mount && !a.self_hosted) /* etcd is not among the self-hosted assets */
                        return cli_usage_error("render", "--etcd-member for '%s' without --etcd-mount",
                                               a.etcd[i].cluster);
                assign[i] = (EtcdMemberAssignment){
                        .cluster = a.etcd[i].cluster,
                        .member = a.etcd[i].member,
                        .members = a.etcd[i].members,
                        .mount_path = a.etcd[i].mount,
                };
        }

        if (cli_load_spec(ctx, &spec) < 0)
                return EXIT_ERROR;
        if (a.self_hosted)
                return render_self_hosted(&a, spec, &ctx->node, n_masters) < 0 ? EXIT_ERROR : EXIT_SUCCESS;
        ControlPlaneParams params = { .etcd = assign, .n_etcd = a.n_etcd };
        r = control_plane_render(spec, &params, &m, &failed);
        if (r == -ENOENT && failed && streq(failed, "etcd")) {
                log_error("An --etcd-member names an etcd cluster that is not in the spec's etcdClusters.");
                return EXIT_ERROR;
        }
        if (r < 0) {
                log_error_errno(r, "Failed to render %s: %m", strna(failed));
                return EXIT_ERROR;
        }
        if (add_kubelet(spec, &m) < 0)
                return EXIT_ERROR;
        r = a.out ? write_out(a.out, &m) : print_all(&m);
        return r < 0 ? EXIT_ERROR : EXIT_SUCCESS;
}
