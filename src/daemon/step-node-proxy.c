/* SPDX-License-Identifier: Apache-2.0 */
/* A worker's kube-proxy (docs/workers.md, "kube-proxy"): the same static pod as a master's, rendered from
 * spec.kubeProxy by the component table, with the node's own facts: a worker holds no credentials of the
 * cluster's but its kubelet's, so kube-proxy runs with the kubelet's kubeconfig (the node's identity; the
 * masters bind the nodes to system:node-proxier) and the node's name. Its KubeProxyConfiguration goes under
 * the node's --config-dir, then its manifest into the node's manifest directory, each atomically and only
 * when it changes, once the kubelet has joined (before that the kubeconfig it names does not exist). In a
 * self-hosted cluster kube-proxy is the cluster's DaemonSet: the step writes nothing. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "basic/trace.h"
#include "components/render.h"
#include "daemon/pass-types.h"
#include "daemon/progress.h"
#include "daemon/step-node-proxy.h"
#include "manifest/manifest-dir.h"

#define MANIFEST_MAX (1024U * 1024U)

void pass_node_proxy_plan_done(PassNodeProxyPlan *k) {
        free(k->note);
        free(k->path);
        free(k->text);
        free(k->config.path);
        free(k->config.text);
        *k = (PassNodeProxyPlan){};
}

/* The node's copy of the spec: its kubeconfig, name and configuration directory. Its strings alias the
 * spec, kubeconfig and the node settings. */
static ClusterSpec node_spec(const Pass *p, char *kubeconfig) {
        ClusterSpec s = *p->spec;
        s.kube_proxy.kubeconfig = kubeconfig;
        if (p->node.node_name)
                s.kube_proxy.hostname_override = (char *)p->node.node_name;
        s.node_config_dir = p->node.config_dir;
        return s;
}

static bool wanted(const Pass *p) {
        return !(p->spec->self_hosted.set && p->spec->self_hosted.value);
}

static int node_proxy_observe(PassContext *ctx) {
        const Pass *p = ctx->pass;
        PassNodeProxyObserved *k = &ctx->obs->node_proxy;
        _cleanup_free_ char *kubeconfig = pass_kubelet_file(p, PASS_KUBELET_KUBECONFIG),
                            *path = strjoin(p->node.manifest_dir, "/kube-proxy" MANIFEST_SUFFIX),
                            *config = NULL;
        if (!kubeconfig || !path)
                return -ENOMEM;
        if (!wanted(p))
                return 0;
        trace_mark("kube-proxy: its manifest");
        k->joined = access(kubeconfig, F_OK) == 0;
        ClusterSpec s = node_spec(p, kubeconfig);
        int r = component_config_path(COMPONENT_KUBE_PROXY, &s, &config);
        if (r < 0)
                return r;
        r = config ? read_full_file(config, MANIFEST_MAX, &k->config_text, NULL) : 0;
        if (r >= 0 || r == -ENOENT)
                r = read_full_file(path, MANIFEST_MAX, &k->text, NULL);
        if (r == -ENOENT)
                r = 0;
        k->read_error = r;
        return r == -ENOMEM ? r : 0;
}

static int plan_status(PassNodeProxyPlan *k, int status, char *note) {
        k->status = status;
        k->note = note;
        return note ? 0 : -ENOMEM;
}

/* Pure over (spec, node settings, observation). */
static int node_proxy_plan(const Pass *p, const PassObservation *o, PassPlan *plan) {
        const PassNodeProxyObserved *ob = &o->node_proxy;
        PassNodeProxyPlan *k = &plan->node_proxy;
        _cleanup_free_ char *kubeconfig = pass_kubelet_file(p, PASS_KUBELET_KUBECONFIG), *name = NULL;
        if (!kubeconfig)
                return -ENOMEM;
        if (!wanted(p))
                return 0;
        if (ob->read_error < 0)
                return plan_status(k, ob->read_error,
                                   strprintf("cannot read its manifest in %s or its file in %s: %s",
                                             p->node.manifest_dir, p->node.config_dir,
                                             pk_strerror(ob->read_error)));
        if (!ob->joined)
                return plan_status(k, PK_EWAITING, strdup("the kubelet has not joined yet (no kubeconfig)"));
        ClusterSpec s = node_spec(p, kubeconfig);
        int r = kube_proxy_manifest_render(&s, &name, &k->text, &k->config);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return plan_status(k, r, strprintf("cannot render kube-proxy's pod: %s", pk_strerror(r)));
        if (!k->text) /* kubeProxy.enabled: false */
                return 0;
        k->path = strjoin(p->node.manifest_dir, "/", name);
        if (!k->path)
                return -ENOMEM;
        k->write = !streq_ptr(ob->text, k->text);
        k->write_config = k->config.text && !streq_ptr(ob->config_text, k->config.text);
        return 0;
}

/* One file, atomically; a failure is reported (false). */
static bool write_one(PassContext *ctx, const char *path, const char *text) {
        int r = manifest_write_file(path, text);
        if (r < 0) {
                log_error_errno(r, "kube-proxy: cannot write %s: %m", path);
                _cleanup_free_ char *why =
                    strprintf("kube-proxy: cannot write %s: %s", path, pk_strerror(r));
                pass_report_error(ctx->rep, PASS_STAGE_MANIFEST, r, why);
                return false;
        }
        log_info("kube-proxy: wrote %s.", path);
        ctx->rep->actions_applied++;
        return true;
}

static int node_proxy_apply(PassContext *ctx, PassWave wave) {
        const PassNodeProxyPlan *k = &ctx->plan->node_proxy;
        if (!wanted(ctx->pass))
                return 0;
        pass_progress_step("kube-proxy");
        if (pass_report_status(ctx, PASS_STAGE_MANIFEST, "kube-proxy", k->status, k->note))
                return 0;
        /* the file first: the pod its manifest starts reads it */
        if (k->write_config && !write_one(ctx, k->config.path, k->config.text))
                return 0;
        if (k->write)
                write_one(ctx, k->path, k->text);
        return 0;
}

static int node_proxy_print(const Pass *p, const PassObservation *o, const PassPlan *plan, FILE *out) {
        const PassNodeProxyPlan *k = &plan->node_proxy;
        if (!wanted(p)) {
                fprintf(out, "kube-proxy: the self-hosted cluster's DaemonSet\n");
                return 0;
        }
        int r = pass_print_status(out, "kube-proxy", "cannot plan", k->status, k->note);
        if (r != 0)
                return MIN(r, 0);
        if (!k->text)
                fprintf(out, "kube-proxy: disabled (kubeProxy.enabled: false)\n");
        if (k->write_config)
                fprintf(out, "kube-proxy-write %s\n", k->config.path);
        if (k->text && k->write)
                fprintf(out, "kube-proxy-write %s\n", k->path);
        else if (k->text && !k->write_config)
                fprintf(out, "kube-proxy: %s is current\n", k->path);
        return 0;
}

const PassStep pass_step_node_proxy = {
        .name = "kube-proxy",
        .stage = PASS_STAGE_MANIFEST,
        .roles = 1U << NODE_ROLE_WORKER,
        .observe = node_proxy_observe,
        .plan = node_proxy_plan,
        .apply = node_proxy_apply,
        .print = node_proxy_print,
};
