/* SPDX-License-Identifier: Apache-2.0 */
/* A worker's kube-proxy (docs/workers.md, "kube-proxy"): the same static pod as a master's, rendered from
 * spec.kubeProxy by the component table, with the node's own facts: a worker holds no credentials of the
 * cluster's but its kubelet's, so kube-proxy runs with the kubelet's kubeconfig (the node's identity; the
 * masters bind the nodes to system:node-proxier) and the node's name. It is written into the node's
 * manifest directory, atomically and only when it changes, once the kubelet has joined (before that the
 * kubeconfig it names does not exist). In a self-hosted cluster kube-proxy is the cluster's DaemonSet: the
 * step writes nothing. */
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

#define MANIFEST_MAX (1024U * 1024U)

void pass_node_proxy_plan_done(PassNodeProxyPlan *k) {
        free(k->note);
        free(k->path);
        free(k->text);
        *k = (PassNodeProxyPlan){};
}

static bool wanted(const Pass *p) {
        return !(p->spec->self_hosted.set && p->spec->self_hosted.value);
}

static int node_proxy_observe(PassContext *ctx) {
        const Pass *p = ctx->pass;
        PassNodeProxyObserved *k = &ctx->obs->node_proxy;
        _cleanup_free_ char *kubeconfig = pass_kubelet_file(p, PASS_KUBELET_KUBECONFIG),
                            *path = strjoin(p->node.manifest_dir, "/kube-proxy" MANIFEST_SUFFIX);
        if (!kubeconfig || !path)
                return -ENOMEM;
        if (!wanted(p))
                return 0;
        trace_mark("kube-proxy: its manifest");
        k->joined = access(kubeconfig, F_OK) == 0;
        int r = read_full_file(path, MANIFEST_MAX, &k->text, NULL);
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
                                   strprintf("cannot read its manifest in %s: %s", p->node.manifest_dir,
                                             pk_strerror(ob->read_error)));
        if (!ob->joined)
                return plan_status(k, PK_EWAITING, strdup("the kubelet has not joined yet (no kubeconfig)"));
        ClusterSpec s = *p->spec; /* the node's copy: its strings alias the spec and the settings */
        s.kube_proxy.kubeconfig = kubeconfig;
        if (p->node.node_name)
                s.kube_proxy.hostname_override = (char *)p->node.node_name;
        int r = kube_proxy_manifest_render(&s, &name, &k->text);
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
        return 0;
}

static int node_proxy_apply(PassContext *ctx, PassWave wave) {
        const PassNodeProxyPlan *k = &ctx->plan->node_proxy;
        if (!wanted(ctx->pass))
                return 0;
        pass_progress_step("kube-proxy");
        if (pass_report_status(ctx, PASS_STAGE_MANIFEST, "kube-proxy", k->status, k->note))
                return 0;
        if (!k->write)
                return 0;
        int r = write_file_atomic(k->path, k->text, strlen(k->text), 0644, true);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                log_error_errno(r, "kube-proxy: cannot write %s: %m", k->path);
                _cleanup_free_ char *why =
                    strprintf("kube-proxy: cannot write %s: %s", k->path, pk_strerror(r));
                pass_report_error(ctx->rep, PASS_STAGE_MANIFEST, r, why);
                return 0;
        }
        log_info("kube-proxy: wrote %s.", k->path);
        ctx->rep->actions_applied++;
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
        else if (k->write)
                fprintf(out, "kube-proxy-write %s\n", k->path);
        else
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
