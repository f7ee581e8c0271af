/* SPDX-License-Identifier: Apache-2.0 */
/* protokube pki demo-issue: the PKI primitives end to end on one directory, for operators to try and for
 * tests/integration/test_pki.py to check with the openssl tool. It creates (or reuses) a CA pair "ca" in
 * --out DIR, then issues the leaf pair --name (default "leaf") for --cn, --dns and --ip, unless the leaf
 * there is still good for exactly those names: the renewal decision the pass will make. Nothing here
 * touches the state store (the keystore is wired into the pass separately).
 * protokube pki init: the keystore in the state store, created once (below). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/errors.h"
#include "basic/in-addr-util.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "certs/certs.h"
#include "cli/cli.h"
#include "daemon/pass.h"
#include "pki/keystore.h"
#include "pki/pki-cert.h"
#include "pki/pki-files.h"
#include "pki/pki-key.h"
#include "pki/pki-kubeconfig.h"
#include "pki/pki-plan.h"
#include "shared/openssl-util.h"
#include "store/store.h"

#define DEMO_CA_CN "protokube-demo-ca"

static struct {
        const char *out, *cn, *org, *name, *server;
        char **dns, **ips;
        PkiKeyType key_type;
} arg_pki = { .name = "leaf", .key_type = PKI_KEY_ECDSA_P256 };

static int parse_value(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        if (streq(o->name, "out"))
                arg_pki.out = value;
        else if (streq(o->name, "cn"))
                arg_pki.cn = value;
        else if (streq(o->name, "org"))
                arg_pki.org = value;
        else if (streq(o->name, "server"))
                arg_pki.server = value;
        else if (!pki_pair_name_is_valid(value))
                return cli_usage_error("pki demo-issue", "invalid %s '%s' (expected [a-z0-9-]+)", source,
                                       value),
                       -EINVAL;
        else
                arg_pki.name = value;
        return 0;
}

static int parse_san(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        bool ip = streq(o->name, "ip");
        if (ip && !in_addr_literal_valid(value))
                return cli_usage_error("pki demo-issue",
                                       "invalid %s '%s' (expected an IPv4 or IPv6 address)", source, value),
                       -EINVAL;
        if (strv_extend(ip ? &arg_pki.ips : &arg_pki.dns, value) < 0)
                return log_oom();
        return 0;
}

static int parse_key_type(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        PkiKeyType t = pki_key_type_from_string(value);
        if (t < 0)
                return cli_usage_error("pki demo-issue", "invalid %s '%s' (ecdsa-p256, rsa-2048)", source,
                                       value),
                       -EINVAL;
        arg_pki.key_type = t;
        return 0;
}

const CliOption verb_pki_demo_issue_options[] = {
        { .name = "out",
          .arg_name = "DIR",
          .help = "the directory of the pairs (created 0700)",
          .parse = parse_value },
        { .name = "cn",
          .arg_name = "NAME",
          .help = "the leaf's common name (required)",
          .parse = parse_value },
        { .name = "dns",
          .arg_name = "NAME",
          .help = "a DNS name in the leaf's SANs (repeatable)",
          .parse = parse_san },
        { .name = "ip",
          .arg_name = "ADDRESS",
          .help = "an IP address in the leaf's SANs (repeatable)",
          .parse = parse_san },
        { .name = "org",
          .arg_name = "O",
          .help = "the leaf's organization (system:masters for an admin)",
          .parse = parse_value },
        { .name = "name",
          .arg_name = "NAME",
          .help = "the leaf pair's file name (default leaf)",
          .parse = parse_value },
        { .name = "key-type",
          .arg_name = "TYPE",
          .help = "the leaf's key: ecdsa-p256 (default) or rsa-2048",
          .parse = parse_key_type },
        { .name = "server",
          .arg_name = "URL",
          .help = "also write NAME.kubeconfig for this API server",
          .parse = parse_value },
        {},
};

/* The CA pair "ca" in dir, created on first use. */
static int demo_ca(const char *dir, usec_t at, X509 **ret_ca, EVP_PKEY **ret_key) {
        _cleanup_(X509_freep) X509 *ca = NULL;
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *key = NULL;
        int r = pki_pair_load(dir, "ca", &ca, &key);
        if (r >= 0) {
                printf("ca: kept '%s/ca.crt'\n", dir);
        } else if (r == -ENOENT) {
                r = pki_key_generate(PKI_KEY_ECDSA_P256, &key);
                if (r >= 0)
                        r = pki_ca_create(DEMO_CA_CN, key, 0, at, &ca);
                if (r >= 0)
                        r = pki_pair_save(dir, "ca", ca, key);
                if (r < 0)
                        return log_error_errno(r, "Failed to create the CA in '%s': %m", dir);
                printf("ca: created '%s/ca.crt' (CN=%s)\n", dir, DEMO_CA_CN);
        } else
                return log_error_errno(r, "Failed to read the CA pair in '%s': %m", dir);
        *ret_ca = TAKE_PTR(ca);
        *ret_key = TAKE_PTR(key);
        return 0;
}

static int demo_kubeconfig(const char *dir, X509 *ca, X509 *leaf, EVP_PKEY *key) {
        _cleanup_free_ char *ca_pem = NULL, *cert_pem = NULL, *err = NULL;
        _cleanup_free_ char *path = strjoin(dir, "/", arg_pki.name, ".kubeconfig");
        char *key_pem = NULL;
        size_t key_len = 0;
        if (!path)
                return log_oom();
        int r = pki_cert_to_pem(ca, &ca_pem, NULL);
        if (r >= 0)
                r = pki_cert_to_pem(leaf, &cert_pem, NULL);
        if (r >= 0)
                r = pki_key_to_pem(key, &key_pem, &key_len);
        if (r < 0)
                return log_error_errno(r, "Failed to encode the kubeconfig's credentials: %m");
        PkiKubeconfig kc = { .cluster = "protokube-demo",
                             .server = arg_pki.server,
                             .user = arg_pki.cn,
                             .ca_pem = ca_pem,
                             .cert_pem = cert_pem,
                             .key_pem = key_pem };
        r = pki_kubeconfig_write(path, &kc, &err);
        erase_and_free(key_pem, key_len);
        if (r == -EINVAL && err)
                return log_error_errno(r, "Not writing '%s': %s", path, err);
        if (r < 0)
                return log_error_errno(r, "Failed to write '%s': %m", path);
        printf("kubeconfig: wrote '%s'\n", path);
        return 0;
}

static int demo_leaf(const char *dir, X509 *ca, EVP_PKEY *ca_key, usec_t at) {
        _cleanup_(pki_leaf_state_done) PkiLeafState have = {};
        _cleanup_(X509_freep) X509 *leaf = NULL;
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *key = NULL;
        _cleanup_free_ char *err = NULL;
        int r = pki_leaf_observe(dir, arg_pki.name, ca, &have);
        if (r < 0)
                return log_error_errno(r, "Failed to read the pair '%s' in '%s': %m", arg_pki.name, dir);
        PkiRenewReason why = pki_plan_leaf(&have, arg_pki.dns, arg_pki.ips, at);
        if (why == PKI_RENEW_NONE) {
                printf("%s: kept '%s/%s.crt'\n", arg_pki.name, dir, arg_pki.name);
                return 0;
        }
        PkiCertRequest req = { .cn = arg_pki.cn,
                               .org = arg_pki.org,
                               .dns = arg_pki.dns,
                               .ips = arg_pki.ips,
                               .usage = PKI_USAGE_SERVER | PKI_USAGE_CLIENT };
        r = pki_key_generate(arg_pki.key_type, &key);
        if (r < 0)
                return log_error_errno(r, "Failed to generate a %s key: %m",
                                       pki_key_type_to_string(arg_pki.key_type));
        r = pki_cert_issue(&req, key, ca, ca_key, at, &leaf, &err);
        if (r == -EINVAL && err)
                return log_error_errno(r, "Not issuing '%s': %s", arg_pki.name, err);
        if (r < 0)
                return log_error_errno(r, "Failed to issue '%s': %m", arg_pki.name);
        r = pki_pair_save(dir, arg_pki.name, leaf, key);
        if (r < 0)
                return log_error_errno(r, "Failed to write the pair '%s' in '%s': %m", arg_pki.name, dir);
        printf("%s: issued '%s/%s.crt' (CN=%s, reason: %s)\n", arg_pki.name, dir, arg_pki.name, arg_pki.cn,
               pki_renew_reason_to_string(why));
        return arg_pki.server ? demo_kubeconfig(dir, ca, leaf, key) : 0;
}

int verb_pki_demo_issue(CliContext *ctx, char **args) {
        _cleanup_(X509_freep) X509 *ca = NULL;
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *ca_key = NULL;
        _cleanup_strv_free_ char **dns = TAKE_PTR(arg_pki.dns), **ips = TAKE_PTR(arg_pki.ips);
        arg_pki.dns = dns;
        arg_pki.ips = ips;
        if (isempty(arg_pki.out) || isempty(arg_pki.cn))
                return cli_usage_error("pki demo-issue", "--out DIR and --cn NAME are required");
        if (streq(arg_pki.name, "ca"))
                return cli_usage_error("pki demo-issue", "invalid --name 'ca': the CA's pair has that name");
        /* the leaf's fields are checked before anything is written, the CA included */
        _cleanup_free_ char *err = NULL;
        PkiCertRequest req = { .cn = arg_pki.cn,
                               .org = arg_pki.org,
                               .dns = dns,
                               .ips = ips,
                               .usage = PKI_USAGE_SERVER | PKI_USAGE_CLIENT };
        if (pki_cert_request_check(&req, &err) < 0)
                return cli_usage_error("pki demo-issue", "%s", strnull(err));
        usec_t at = now(CLOCK_REALTIME);
        if (demo_ca(arg_pki.out, at, &ca, &ca_key) < 0 || demo_leaf(arg_pki.out, ca, ca_key, at) < 0)
                return EXIT_ERROR;
        return EXIT_SUCCESS;
}

/* protokube pki init --store URL [--etcd-cluster NAME]...: the keystore's get-or-create (docs/pki.md), as a
 * master's first pass does it; one line per entry: its name, the SHA-256 fingerprint of its certificate (of
 * its public key for the service-account key) and whether this process created it or read it. */
static struct {
        const char *store;
        char **etcd_clusters;
} arg_init;

static int parse_init_store(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        arg_init.store = value;
        return 0;
}

static int parse_init_etcd_cluster(const CliOption *o, CliContext *ctx, const char *value,
                                   const char *source) {
        if (!keystore_etcd_cluster_valid(value))
                return cli_usage_error("pki init",
                                       "invalid %s '%s' (expected [a-z0-9][a-z0-9-]*, at most %d)", source,
                                       value, KEYSTORE_ETCD_CLUSTER_MAX),
                       -EINVAL;
        if (strv_contains(arg_init.etcd_clusters, value))
                return cli_usage_error("pki init", "%s '%s' given twice", source, value), -EINVAL;
        if (strv_length(arg_init.etcd_clusters) >= KEYSTORE_ETCD_CLUSTERS_MAX)
                return cli_usage_error("pki init", "at most %d etcd clusters", KEYSTORE_ETCD_CLUSTERS_MAX),
                       -EINVAL;
        if (strv_extend(&arg_init.etcd_clusters, value) < 0)
                return log_oom();
        return 0;
}

const CliOption verb_pki_init_options[] = {
        { .name = "store",
          .arg_name = "URL",
          .help = "the state store (file:///DIR, s3://BUCKET[/PREFIX] or gs://BUCKET[/PREFIX]; required)",
          .parse = parse_init_store },
        { .name = "etcd-cluster",
          .arg_name = "NAME",
          .help = "an etcd cluster whose peer and client CAs to keep (repeatable: main, events)",
          .parse = parse_init_etcd_cluster },
        {},
};

int verb_pki_init(CliContext *ctx, char **args) {
        _cleanup_strv_free_ char **clusters = TAKE_PTR(arg_init.etcd_clusters);
        _cleanup_(store_freep) Store *s = NULL;
        _cleanup_(keystore_freep) Keystore *k = NULL;
        _cleanup_free_ char *err = NULL;
        int r;

        if (isempty(arg_init.store))
                return cli_usage_error("pki init", "--store URL is required");
        r = store_open(arg_init.store, &s, &err);
        if (r < 0) {
                log_error_errno(r, "%s", err ?: pk_strerror(r));
                return EXIT_ERROR;
        }
        KeystoreSpec spec = KEYSTORE_SPEC_DEFAULTS;
        spec.etcd_clusters = clusters;
        r = keystore_get_or_create(s, &spec, now(CLOCK_REALTIME), &k, &err);
        if (r < 0) {
                log_error_errno(r, "%s", err ?: pk_strerror(r));
                return EXIT_ERROR;
        }
        for (size_t i = 0; i < keystore_size(k); i++) {
                const KeystoreEntry *e = keystore_entry(k, i);
                char fp[KEYSTORE_FINGERPRINT_TEXT_MAX];
                if (e->store_warning)
                        log_warning("%s", e->store_warning);
                printf("%s %s %s\n", e->name, keystore_fingerprint_text(e, fp),
                       e->created ? "created" : "read");
        }
        return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_ERROR;
}

/* The pass of a spec whose certificates protokube manages (it names a stateStore) on a node whose role keeps
 * them. Logs what failed. */
static int pass_new_managed(CliContext *ctx, const char *verb, Pass **ret) {
        _cleanup_(pass_freep) Pass *pass = NULL;
        int r = pass_new(ctx->spec_path, &ctx->node, &pass);
        if (r >= 0)
                r = pass_check_certificates(pass, verb);
        if (r < 0)
                return r;
        if (!pass_pki_dir(pass)) {
                log_error("The spec '%s' names no stateStore: protokube manages no certificates.",
                          ctx->spec_path);
                return -EINVAL;
        }
        *ret = TAKE_PTR(pass);
        return 0;
}

int verb_pki_show(CliContext *ctx, char **args) {
        _cleanup_(pass_freep) Pass *pass = NULL;
        if (pass_new_managed(ctx, "pki show", &pass) < 0 || pass_print_certificates(pass, stdout) < 0)
                return EXIT_ERROR;
        return EXIT_SUCCESS;
}

/* protokube pki renew: one pass that reissues every certificate of the node (the control-plane manifests
 * follow, so the components restart with them; etcd reads its files per handshake). */
int verb_pki_renew(CliContext *ctx, char **args) {
        _cleanup_(pass_freep) Pass *pass = NULL;
        PassReport rep = {};

        if (pass_new_managed(ctx, "pki renew", &pass) < 0)
                return EXIT_ERROR;
        pass_renew_all(pass);
        pass_run(pass, &rep);
        int r = rep.status;
        if (rep.errors[PASS_STAGE_CERTS] > 0)
                log_error("Renewal failed: %s.", strna(rep.reason));
        else if (r < 0 && r != PK_EWAITING) /* the pass did not reach the certificates */
                log_error("Renewal not done: %s.", strna(rep.reason));
        else
                log_info("Renewed the node's certificates (%u change(s)).", rep.actions_applied);
        pass_report_done(&rep);
        if (rep.errors[PASS_STAGE_CERTS] > 0)
                return EXIT_ERROR;
        return r == 0 ? EXIT_CONVERGED : r == PK_EWAITING ? EXIT_NOT_CONVERGED : EXIT_ERROR;
}
