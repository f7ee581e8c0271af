/* SPDX-License-Identifier: Apache-2.0 */
/* protokube checkpoint: this master's checkpoint of its self-hosted control-plane pods (docs/pivot.md, "The
 * checkpoint"): one decision and its step per try (refresh, activate, deactivate or wait), with --once a
 * single one, else tries every --interval until the checkpoint is refreshed with the API answering and no
 * checkpoint manifest left in kubelet's directory, at most --timeout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/log.h"
#include "basic/parse-util.h"
#include "basic/stop.h"
#include "basic/string-util.h"
#include "cli/cli.h"
#include "daemon/node-lock.h"
#include "kube/kube-client.h"
#include "model/conventions.h"
#include "model/pki-layout.h"
#include "pivot/checkpoint-apply.h"

static struct {
        const char *manifest_dir, *node, *kubeconfig, *internal, *proc;
        bool once;
        usec_t interval, timeout;
} arg_ckpt = {
        .manifest_dir = KUBELET_STATIC_POD_PATH_DEFAULT,
        .interval = 5 * USEC_PER_SEC,
        .timeout = 600 * USEC_PER_SEC,
};

static int parse_ckpt(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        if (streq(o->name, "once")) {
                arg_ckpt.once = true;
                return 0;
        }
        if (streq(o->name, "interval") || streq(o->name, "timeout")) {
                uint64_t u;
                if (parse_duration_usec(value, &u) < 0 || u == 0)
                        return cli_usage_error("checkpoint", "invalid %s '%s' (a duration: 5s, 10m)", source,
                                               value),
                               -EINVAL;
                *(streq(o->name, "interval") ? &arg_ckpt.interval : &arg_ckpt.timeout) = u;
                return 0;
        }
        if (isempty(value))
                return cli_usage_error("checkpoint", "%s must not be empty", source), -EINVAL;
        const char **fields[] = { &arg_ckpt.manifest_dir, &arg_ckpt.node, &arg_ckpt.kubeconfig,
                                  &arg_ckpt.internal, &arg_ckpt.proc };
        static const char *const names[] = { "manifest-dir", "node-name", "kubeconfig", "api-internal",
                                             "proc" };
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (streq(o->name, names[i]))
                        *fields[i] = value;
        return 0;
}

const CliOption verb_checkpoint_options[] = {
        /* the global option's field: one state directory for the pivot's record and the checkpoint */
        { .name = "state-dir",
          .arg_name = "DIR",
          .env = "PROTOKUBE_STATE_DIR",
          .help = "where the checkpoint lives: DIR/checkpoint (default /var/lib/protokube, as the global "
                  "--state-dir)",
          .parse = cli_option_string,
          .field = offsetof(CliContext, node.state_dir) },
        { .name = "manifest-dir",
          .arg_name = "DIR",
          .env = "PROTOKUBE_MANIFEST_DIR",
          .help = "kubelet's static pod directory (default /etc/kubernetes/manifests)",
          .parse = parse_ckpt },
        { .name = "node-name",
          .arg_name = "NAME",
          .env = "PROTOKUBE_NODE_NAME",
          .help = "this node's Node name (default: the host name)",
          .parse = parse_ckpt },
        { .name = "kubeconfig",
          .arg_name = "FILE",
          .env = "PROTOKUBE_KUBECONFIG",
          .help = "the local apiserver (default " PKI_DIR_DEFAULT "/protokube/kubeconfig)",
          .parse = parse_ckpt },
        { .name = "api-internal",
          .arg_name = "URL",
          .help = "the API through api.internal.<cluster>, asked when the local one does not answer",
          .parse = parse_ckpt },
        { .name = "once", .help = "one decision and its step, then exit", .parse = parse_ckpt },
        { .name = "interval",
          .arg_name = "DURATION",
          .help = "between two tries (default 5s)",
          .parse = parse_ckpt },
        { .name = "timeout",
          .arg_name = "DURATION",
          .help = "give up after DURATION (default 10m)",
          .parse = parse_ckpt },
        { .name = "proc",
          .arg_name = "DIR",
          .help = "procfs, where running pods are seen (default /proc)",
          .parse = parse_ckpt },
        {},
};

static int open_clients(KubeClient **ret_local, KubeClient **ret_internal) {
        _cleanup_free_ char *err = NULL, *def = NULL;
        const char *path = arg_ckpt.kubeconfig;
        int r;
        if (!path &&
            !(path = def = pki_layout_file(PKI_DIR_DEFAULT, PKI_PROTOKUBE_DIR, PKI_KUBECONFIG_FILE)))
                return log_oom();
        r = kube_client_new_from_kubeconfig(path, ret_local, &err);
        if (r < 0)
                return log_error_errno(r, "%s", strnull(err));
        if (!arg_ckpt.internal)
                return 0;
        /* the same identity and CA, another server */
        r = kube_client_new_from_kubeconfig(path, ret_internal, &err);
        if (r >= 0)
                r = kube_client_override(*ret_internal, &(KubeClientConfig){ .server = arg_ckpt.internal },
                                         &err);
        if (r < 0)
                return log_error_errno(r, "--api-internal '%s': %s", arg_ckpt.internal, strnull(err));
        return 0;
}

static int one_step(const CheckpointConfig *c, usec_t deadline, CheckpointStep *ret_step) {
        _cleanup_free_ char *message = NULL, *err = NULL;
        _cleanup_close_ int lock = -1;
        int r = node_lock_take(c->state_dir, NODE_LOCK_WAIT, &lock, &err);
        if (r < 0)
                return log_error_errno(r, "checkpoint: %s", err ?: pk_strerror(r));
        r = checkpoint_step(c, deadline, ret_step, &message, &err);
        if (r < 0)
                return log_error_errno(r, "checkpoint: %s", err ? err : pk_strerror(r));
        printf("%s: %s\n", checkpoint_step_to_string(*ret_step), strnull(message));
        fflush(stdout);
        return 0;
}

int verb_checkpoint(CliContext *ctx, char **args) {
        _cleanup_(kube_client_freep) KubeClient *local = NULL, *internal = NULL;
        char host[256] = "";
        CheckpointStep step;
        int r;

        if (!arg_ckpt.node) {
                if (gethostname(host, sizeof(host) - 1) < 0 || host[0] == 0)
                        return log_error_errno(-errno, "no --node-name and no host name: %m"), EXIT_ERROR;
                arg_ckpt.node = host;
        }
        if (open_clients(&local, &internal) < 0)
                return EXIT_ERROR;
        /* bounded calls: a try never outlasts an interval by much, whatever the server does */
        kube_client_set_retry(local,
                              &(KubeRetryPolicy){ .max_tries = 3, .call_timeout = 30 * USEC_PER_SEC });
        if (internal)
                kube_client_set_retry(
                    internal, &(KubeRetryPolicy){ .max_tries = 3, .call_timeout = 30 * USEC_PER_SEC });
        CheckpointConfig c = { .state_dir = ctx->node.state_dir,
                               .manifest_dir = arg_ckpt.manifest_dir,
                               .node_name = arg_ckpt.node,
                               .local = local,
                               .internal = internal,
                               .proc_dir = arg_ckpt.proc };
        if (arg_ckpt.once)
                return one_step(&c, now(CLOCK_MONOTONIC) + 30 * USEC_PER_SEC, &step) < 0 ? EXIT_ERROR
                                                                                         : EXIT_SUCCESS;
        usec_t end = now(CLOCK_MONOTONIC) + arg_ckpt.timeout;
        for (;;) {
                r = one_step(&c, now(CLOCK_MONOTONIC) + 30 * USEC_PER_SEC, &step);
                if (r < 0)
                        return EXIT_ERROR;
                if (step == CHECKPOINT_STEP_REFRESH)
                        return EXIT_SUCCESS;
                if (now(CLOCK_MONOTONIC) + arg_ckpt.interval > end) {
                        log_error("checkpoint: not settled within the --timeout; last step above");
                        return EXIT_NOT_CONVERGED;
                }
                r = sleep_usec(arg_ckpt.interval);
                if (r < 0)
                        return EXIT_ERROR; /* a stop request */
        }
}
