/* SPDX-License-Identifier: Apache-2.0 */
/* A master's kubelet (docs/components.md, "The kubelet"): the files the init system starts it from, in the
 * node's kubelet directory, each written atomically and only when it changes:
 *   config.yaml  the KubeletConfiguration from spec.kubelet (the same field table as every component) with
 *                this node's manifest directory as its staticPodPath; its kubeconfig and client CA are the
 *                pki layout's (spec.stateStore: the client certificate the certificates step issues
 *                system:node:<name>), or the spec's own;
 *   kubelet.env  KUBELET_ARGS for the init system's unit: the flags the file has no field for, and the
 *                node's name and address.
 * A worker's kubelet has its own step (step-kubelet-boot.c): its credentials come from a bootstrap token. */
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "basic/trace.h"
#include "components/kubelet.h"
#include "daemon/pass-types.h"
#include "daemon/progress.h"
#include "daemon/step-kubelet-config.h"

#define CONFIG_FILE "config.yaml"
#define ENV_FILE    KUBELET_ENV_FILE

static int kubelet_config_observe(PassContext *ctx) {
        PassKubeletConfigObserved *k = &ctx->obs->kubelet_config;
        trace_mark("kubelet: reading its files");
        int r = pass_kubelet_read(ctx->pass, CONFIG_FILE, false, &k->config, NULL);
        if (r >= 0)
                r = pass_kubelet_read(ctx->pass, ENV_FILE, false, &k->env, NULL);
        if (r == -ENOMEM)
                return r;
        k->read_error = MIN(r, 0);
        return 0;
}

static int plan_status(PassKubeletConfigPlan *k, int status, char *note) {
        k->status = status;
        k->note = note;
        return note ? 0 : -ENOMEM;
}

/* Pure over (spec, node settings, observation). */
static int kubelet_config_plan(const Pass *p, const PassObservation *o, PassPlan *plan) {
        const PassKubeletConfigObserved *ob = &o->kubelet_config;
        PassKubeletConfigPlan *k = &plan->kubelet_config;
        _cleanup_free_ char *config_path = pass_kubelet_file(p, CONFIG_FILE);
        _cleanup_strv_free_ char **node_flags = NULL;
        if (!config_path)
                return -ENOMEM;
        if (ob->read_error < 0)
                return plan_status(k, ob->read_error,
                                   strprintf("cannot read its files in %s: %s", p->node.kubelet_dir,
                                             pk_strerror(ob->read_error)));
        ClusterSpec s = *p->spec; /* the node's copy: its strings alias the spec and the settings */
        s.kubelet.static_pod_path = (char *)p->node.manifest_dir;
        int r = pass_kubelet_node_flags(p, &s, &node_flags);
        if (r >= 0)
                r = kubelet_config_render(&s, &k->config);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return plan_status(k, r, strprintf("cannot render its configuration: %s", pk_strerror(r)));
        r = kubelet_env_render(&s, config_path, node_flags, &k->env);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return plan_status(k, r, strprintf("cannot render its flags: %s", pk_strerror(r)));
        k->write_config = !streq_ptr(ob->config, k->config);
        k->write_env = !streq_ptr(ob->env, k->env);
        return 0;
}

static int kubelet_config_apply(PassContext *ctx, PassWave wave) {
        const PassKubeletConfigPlan *k = &ctx->plan->kubelet_config;
        pass_progress_step("kubelet");
        if (pass_report_status(ctx, PASS_STAGE_KUBELET, "kubelet", k->status, k->note))
                return 0;
        /* the file first: the flags name it */
        int r =
            k->write_config ? pass_kubelet_write(ctx, CONFIG_FILE, k->config, strlen(k->config), 0644) : 0;
        if (r >= 0 && k->write_env)
                r = pass_kubelet_write(ctx, ENV_FILE, k->env, strlen(k->env), 0644);
        return r == -ENOMEM ? r : 0;
}

static int kubelet_config_print(const Pass *p, const PassObservation *o, const PassPlan *plan, FILE *out) {
        const PassKubeletConfigPlan *k = &plan->kubelet_config;
        int r = pass_print_status(out, "kubelet", "cannot plan", k->status, k->note);
        if (r != 0)
                return MIN(r, 0);
        _cleanup_free_ char *config = pass_kubelet_file(p, CONFIG_FILE),
                            *env = pass_kubelet_file(p, ENV_FILE);
        if (!config || !env)
                return -ENOMEM;
        if (k->write_config)
                fprintf(out, "kubelet-write %s\n", config);
        if (k->write_env)
                fprintf(out, "kubelet-write %s\n", env);
        if (!k->write_config && !k->write_env)
                fprintf(out, "kubelet: its files are current\n");
        return 0;
}

const PassStep pass_step_kubelet_config = {
        .name = "kubelet",
        .stage = PASS_STAGE_KUBELET,
        .roles = 1U << NODE_ROLE_MASTER,
        .observe = kubelet_config_observe,
        .plan = kubelet_config_plan,
        .apply = kubelet_config_apply,
        .print = kubelet_config_print,
};
