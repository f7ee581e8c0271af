/* SPDX-License-Identifier: Apache-2.0 */
/* protokube token create|list|delete: the bootstrap tokens a worker joins with (docs/workers.md), through
 * the API as protokube's own identity, like `protokube kube`. `create` prints the token once (it is a
 * credential: never logged, erased after printing) and the pin of the CA the API server is trusted by. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/parse-util.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "cli/cli.h"
#include "join/join-pin.h"
#include "join/join-rbac.h"
#include "join/join-token.h"
#include "kube/kube-client.h"
#include "pki/pki-cert.h"
#include "shared/openssl-util.h"

#define CA_FILE_MAX (256U * 1024U)

static struct {
        usec_t ttl;
        const char *description;
} arg_token = { .ttl = JOIN_TOKEN_TTL_DEFAULT };

static int parse_token_value(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        if (streq(o->name, "description")) {
                if (strlen(value) > JOIN_TOKEN_DESCRIPTION_MAX || string_has_cc(value))
                        return cli_usage_error("token create",
                                               "invalid %s: at most %u characters, no control characters",
                                               source, JOIN_TOKEN_DESCRIPTION_MAX),
                               -EINVAL;
                arg_token.description = value;
                return 0;
        }
        uint64_t u;
        /* "0": never expires, as kubeadm's --ttl 0 */
        if (!streq(value, "0") && (parse_duration_usec(value, &u) < 0 || u < USEC_PER_SEC))
                return cli_usage_error("token create",
                                       "invalid %s '%s' (a duration: 30m, 24h; 0: never expires)", source,
                                       value),
                       -EINVAL;
        arg_token.ttl = streq(value, "0") ? 0 : u;
        return 0;
}

const CliOption verb_token_create_options[] = {
        CLI_KUBE_CLIENT_OPTIONS,
        { .name = "ttl",
          .arg_name = "DURATION",
          .help = "how long the token authenticates (default 24h; 0: until deleted)",
          .parse = parse_token_value },
        { .name = "description",
          .arg_name = "TEXT",
          .help = "what the token is for (shown by 'token list')",
          .parse = parse_token_value },
        {},
};

const CliOption verb_token_options[] = {
        CLI_KUBE_CLIENT_OPTIONS,
        {},
};

static bool arg_expired;

static int parse_expired(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        arg_expired = true;
        return 0;
}

const CliOption verb_token_delete_options[] = {
        CLI_KUBE_CLIENT_OPTIONS,
        { .name = "expired", .help = "delete every expired token instead of one", .parse = parse_expired },
        {},
};

/* The pin of the one CA certificate in the client's CA file: the CA a worker must find the API server's
 * certificate signed by. A file of several certificates has no one pin. */
static int ca_pin(const KubeClient *c, char pin[static JOIN_PIN_TEXT_MAX]) {
        const char *path = kube_client_ca_file(c);
        _cleanup_free_ char *pem = NULL;
        _cleanup_(X509_freep) X509 *ca = NULL;
        size_t len = 0, n = 0;
        if (!path)
                return log_error_errno(-EINVAL,
                                       "The API client trusts the system's CAs: no cluster CA to pin "
                                       "(give --certificate-authority or a kubeconfig that names one).");
        int r = read_full_file(path, CA_FILE_MAX, &pem, &len);
        if (r < 0)
                return log_error_errno(r, "Failed to read the CA file '%s': %m", path);
        n = pki_pem_count(pem, len, PKI_PEM_BEGIN_CERT);
        if (n != 1)
                return log_error_errno(
                    -EINVAL, "The CA file '%s' holds %zu certificates, not one: which to pin?", path, n);
        r = pki_cert_from_pem(pem, len, &ca);
        if (r >= 0)
                r = join_ca_pin(ca, pin);
        if (r < 0)
                return log_error_errno(r, "The CA file '%s' does not hold a certificate to pin.", path);
        return 0;
}

int verb_token_create(CliContext *ctx, char **args) {
        _cleanup_(kube_client_freep) KubeClient *c = NULL;
        _cleanup_free_ char *err = NULL;
        char pin[JOIN_PIN_TEXT_MAX], text[JOIN_TOKEN_TEXT_MAX], when[RFC3339_MAX];
        JoinToken t;
        if (cli_kube_open(&c) < 0 || ca_pin(c, pin) < 0)
                return EXIT_ERROR;
        /* a token is useless without the RBAC that lets its holders ask for a node certificate */
        int r = join_rbac_apply(c, cli_kube_deadline(), &err);
        if (r < 0)
                return log_error_errno(r, "Failed to apply the bootstrap RBAC: %s", strnull(err)),
                       EXIT_ERROR;
        JoinTokenSpec spec = { .description = arg_token.description,
                               .expiration = arg_token.ttl > 0 ? now(CLOCK_REALTIME) + arg_token.ttl : 0 };
        r = join_token_create(c, &spec, cli_kube_deadline(), &t, &err);
        if (r < 0)
                return log_error_errno(r, "Failed to create a token: %s", strnull(err)), EXIT_ERROR;
        /* written past stdio, whose buffer would keep the token: this one is erased */
        char out[256];
        int n =
            snprintf(out, sizeof(out), "token: %s\nca-pin: %s\nexpires: %s\n", join_token_format(&t, text),
                     pin, spec.expiration > 0 ? format_rfc3339(when, spec.expiration) ?: "?" : "never");
        r = n > 0 && (size_t)n < sizeof(out) && fflush(stdout) == 0
                ? loop_write(STDOUT_FILENO, out, (size_t)n)
                : -EIO;
        explicit_bzero(out, sizeof(out));
        explicit_bzero(text, sizeof(text));
        join_token_erase(&t);
        if (r < 0)
                return log_error_errno(r, "Failed to print the token: %m"), EXIT_ERROR;
        return EXIT_SUCCESS;
}

static void print_info(const JoinTokenInfo *i, usec_t at) {
        char when[RFC3339_MAX];
        if (i->invalid) {
                printf("%-6s  invalid: %s\n", isempty(i->id) ? "?" : i->id, i->invalid);
                return;
        }
        _cleanup_free_ char *groups = strv_join(i->extra_groups, ",");
        printf("%-6s  %-20s%s  %s%s%s  %s  %s\n", i->id,
               i->expiration > 0 ? format_rfc3339(when, i->expiration) ?: "?" : "never",
               join_token_expired(i, at) ? " (expired)" : "", i->authentication ? "authentication" : "",
               i->authentication && i->signing ? "," : "", i->signing ? "signing" : "", strempty(groups),
               strempty(i->description));
}

int verb_token_list(CliContext *ctx, char **args) {
        _cleanup_(kube_client_freep) KubeClient *c = NULL;
        _cleanup_free_ char *err = NULL;
        JoinTokenInfo *l = NULL;
        size_t n = 0;
        if (cli_kube_open(&c) < 0)
                return EXIT_ERROR;
        int r = join_token_list(c, cli_kube_deadline(), &l, &n, &err);
        if (r < 0)
                return log_error_errno(r, "Failed to list the tokens: %s", strnull(err)), EXIT_ERROR;
        usec_t at = now(CLOCK_REALTIME);
        printf("%-6s  %-20s  %s  %s  %s\n", "ID", "EXPIRES", "USAGES", "GROUPS", "DESCRIPTION");
        for (size_t i = 0; i < n; i++)
                print_info(&l[i], at);
        join_token_infos_free(l, n);
        return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_ERROR;
}

static int delete_expired(void) {
        _cleanup_(kube_client_freep) KubeClient *c = NULL;
        _cleanup_strv_free_ char **deleted = NULL;
        _cleanup_free_ char *err = NULL;
        if (cli_kube_open(&c) < 0)
                return EXIT_ERROR;
        int r = join_token_cleanup_expired(c, now(CLOCK_REALTIME), cli_kube_deadline(), &deleted, &err);
        if (r < 0)
                return log_error_errno(r, "Failed to delete the expired tokens: %s", strnull(err)),
                       EXIT_ERROR;
        STRV_FOREACH (id, deleted)
                printf("token %s deleted (expired)\n", *id);
        if (strv_length(deleted) == 0)
                printf("no expired token\n");
        return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_ERROR;
}

int verb_token_delete(CliContext *ctx, char **args) {
        _cleanup_(kube_client_freep) KubeClient *c = NULL;
        _cleanup_free_ char *err = NULL;
        if (arg_expired != !args[0])
                return cli_usage_error("token delete", "give a token's ID or --expired (one of them)");
        if (arg_expired)
                return delete_expired();
        if (strchr(args[0], '.')) /* a whole token: its secret is not echoed */
                return cli_usage_error("token delete",
                                       "give the token's id (the 6 characters before the '.')");
        if (!join_token_id_valid(args[0]))
                return cli_usage_error("token delete", "invalid token id '%s': 6 characters of [a-z0-9]",
                                       args[0]);
        if (cli_kube_open(&c) < 0)
                return EXIT_ERROR;
        int r = join_token_delete(c, args[0], cli_kube_deadline(), &err);
        if (r < 0)
                return log_error_errno(r, "Failed to delete token '%s': %s", args[0], strnull(err)),
                       EXIT_ERROR;
        printf("token %s deleted\n", args[0]);
        return EXIT_SUCCESS;
}
