/* SPDX-License-Identifier: Apache-2.0 */
/* protokube kube apply|get|delete|readyz|livez: the Kubernetes API client (docs/kube-client.md) by hand,
 * as protokube's own identity (<pki dir>/protokube/kubeconfig) unless told otherwise, and the integration
 * tests' way to drive the client against a real kube-apiserver. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/parse-util.h"
#include "basic/string-util.h"
#include "cli/cli.h"
#include "kube/kube-client.h"
#include "model/pki-layout.h"
#include "shared/json-secret.h"

#define KUBE_INPUT_MAX (4U * 1024U * 1024U)

static struct {
        const char *kubeconfig, *server, *ca, *cert, *key, *uid, *resource_version;
        usec_t timeout, wait;
} arg_kube = { .timeout = 60 * USEC_PER_SEC };

int cli_kube_option(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        const char **fields[] = {
                &arg_kube.kubeconfig, &arg_kube.server,          &arg_kube.ca, &arg_kube.cert, &arg_kube.key,
                &arg_kube.uid,        &arg_kube.resource_version
        };
        static const char *const names[] = { "kubeconfig",         "server",     "certificate-authority",
                                             "client-certificate", "client-key", "uid",
                                             "resource-version" };
        if (streq(o->name, "timeout") || streq(o->name, "wait")) {
                uint64_t u;
                if (parse_duration_usec(value, &u) < 0 || u == 0)
                        return cli_usage_error("kube", "invalid %s '%s' (a duration: 30s, 2m)", source,
                                               value),
                               -EINVAL;
                *(streq(o->name, "wait") ? &arg_kube.wait : &arg_kube.timeout) = u;
                return 0;
        }
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (streq(o->name, names[i]))
                        *fields[i] = value;
        return 0;
}

const CliOption verb_kube_options[] = {
        CLI_KUBE_CLIENT_OPTIONS,
        {},
};

const CliOption verb_kube_probe_options[] = {
        CLI_KUBE_CLIENT_OPTIONS,
        { .name = "wait",
          .arg_name = "DURATION",
          .help = "probe every second until ready, at most DURATION (default: once)",
          .parse = cli_kube_option },
        {},
};

const CliOption verb_kube_delete_options[] = {
        CLI_KUBE_CLIENT_OPTIONS,
        { .name = "uid",
          .arg_name = "UID",
          .help = "delete only if the object has this uid",
          .parse = cli_kube_option },
        { .name = "resource-version",
          .arg_name = "RV",
          .help = "delete only at this resourceVersion",
          .parse = cli_kube_option },
        {},
};

int cli_kube_open(KubeClient **ret) {
        _cleanup_free_ char *err = NULL, *def = NULL;
        const char *path = arg_kube.kubeconfig;
        int r;
        if (!path) {
                def = pki_layout_file(PKI_DIR_DEFAULT, PKI_PROTOKUBE_DIR, PKI_KUBECONFIG_FILE);
                if (!def)
                        return log_oom();
                path = def;
        }
        r = kube_client_new_from_kubeconfig(path, ret, &err);
        if (r < 0)
                return log_error_errno(r, "%s", strnull(err));
        KubeClientConfig o = { .server = arg_kube.server,
                               .ca_file = arg_kube.ca,
                               .cert_file = arg_kube.cert,
                               .key_file = arg_kube.key };
        r = kube_client_override(*ret, &o, &err);
        if (r < 0)
                return log_error_errno(r, "%s", strnull(err));
        kube_client_set_retry(*ret, &(KubeRetryPolicy){ .call_timeout = arg_kube.timeout });
        return 0;
}

usec_t cli_kube_deadline(void) {
        return now(CLOCK_MONOTONIC) + arg_kube.timeout;
}

/* "NS/NAME" or "NAME". */
static int split_name(const char *arg, char **ret_ns, const char **ret_name) {
        const char *slash = strchr(arg, '/');
        *ret_ns = slash ? strndup(arg, (size_t)(slash - arg)) : NULL;
        *ret_name = slash ? slash + 1 : arg;
        return slash && !*ret_ns ? -ENOMEM : 0;
}

static void print_applied(const json_t *obj) {
        const json_t *m = json_object_get(obj, "metadata");
        const char *ns = json_string_value(json_object_get(m, "namespace"));
        printf("%s %s%s%s applied, resourceVersion %s, uid %s\n",
               strnull(json_string_value(json_object_get(obj, "kind"))), strempty(ns), ns ? "/" : "",
               strnull(json_string_value(json_object_get(m, "name"))),
               strnull(json_string_value(json_object_get(m, "resourceVersion"))),
               strnull(json_string_value(json_object_get(m, "uid"))));
}

int verb_kube_apply(CliContext *ctx, char **args) {
        _cleanup_(kube_client_freep) KubeClient *c = NULL;
        if (cli_kube_open(&c) < 0)
                return EXIT_ERROR;
        for (size_t i = 0; args[i]; i++) {
                _cleanup_free_ char *err = NULL;
                char *text = NULL;
                size_t len = 0;
                json_t *applied = NULL;
                /* a file may hold Secrets: read and erased as one */
                int r = streq(args[i], "-") ? read_full_fd_secret(0, KUBE_INPUT_MAX, &text, &len)
                                            : read_full_file_secret(args[i], KUBE_INPUT_MAX, &text, &len);
                if (r < 0)
                        return log_error_errno(r, "Failed to read '%s': %m", args[i]), EXIT_ERROR;
                r = kube_apply_text(c, text, len, cli_kube_deadline(), &applied, &err);
                erase_and_free(text, len);
                if (r < 0)
                        return log_error_errno(r, "%s: %s", args[i], strnull(err)), EXIT_ERROR;
                size_t j;
                json_t *o;
                json_array_foreach(applied, j, o) print_applied(o);
                json_decref(applied);
        }
        return EXIT_SUCCESS;
}

int verb_kube_get(CliContext *ctx, char **args) {
        _cleanup_(kube_client_freep) KubeClient *c = NULL;
        _cleanup_free_ char *err = NULL, *ns = NULL;
        const char *name;
        json_t *obj = NULL;
        if (split_name(args[2], &ns, &name) < 0)
                return log_oom(), EXIT_ERROR;
        if (cli_kube_open(&c) < 0)
                return EXIT_ERROR;
        int r = kube_get(c, args[0], args[1], ns, name, cli_kube_deadline(), &obj, &err);
        if (r < 0)
                return log_error_errno(r, "%s", strnull(err)), EXIT_ERROR;
        json_dumpf(obj, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
        putchar('\n');
        json_erase_values(obj); /* a Secret's data: printed as asked, not left in freed memory */
        json_decref(obj);
        return EXIT_SUCCESS;
}

int verb_kube_delete(CliContext *ctx, char **args) {
        _cleanup_(kube_client_freep) KubeClient *c = NULL;
        _cleanup_free_ char *err = NULL, *ns = NULL;
        const char *name;
        if (split_name(args[2], &ns, &name) < 0)
                return log_oom(), EXIT_ERROR;
        if (cli_kube_open(&c) < 0)
                return EXIT_ERROR;
        KubePreconditions pre = { .uid = arg_kube.uid, .resource_version = arg_kube.resource_version };
        int r = kube_delete(c, args[0], args[1], ns, name, &pre, cli_kube_deadline(), &err);
        if (r < 0)
                return log_error_errno(r, "%s", strnull(err)), EXIT_ERROR;
        printf("%s %s deleted\n", args[1], args[2]);
        return EXIT_SUCCESS;
}

static int probe(const char *endpoint) {
        _cleanup_(kube_client_freep) KubeClient *c = NULL;
        _cleanup_free_ char *err = NULL;
        if (cli_kube_open(&c) < 0)
                return EXIT_ERROR;
        int r = arg_kube.wait > 0
                    ? kube_wait_probe(c, endpoint, USEC_PER_SEC, now(CLOCK_MONOTONIC) + arg_kube.wait, &err)
                    : kube_probe(c, endpoint, cli_kube_deadline(), &err);
        if (r < 0)
                return log_error_errno(r, "%s", strnull(err)), EXIT_ERROR;
        printf("%s: ok\n", kube_client_server(c));
        return EXIT_SUCCESS;
}

int verb_kube_readyz(CliContext *ctx, char **args) {
        return probe("readyz");
}

int verb_kube_livez(CliContext *ctx, char **args) {
        return probe("livez");
}
