/* SPDX-License-Identifier: Apache-2.0 */
/* The spec's side of the certificates protokube issues (docs/pki.md): the shape of spec.stateStore, the
 * checks of spec.pki, and the defaults that point every certificate, key and kubeconfig path the user left
 * unset into the node's pki layout (model/pki-layout.h) when the state store is set. Applied once, at load,
 * so everything downstream (rendering, the certificate planner) reads one spec and derives nothing again. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/aws-names.h"
#include "basic/gce-names.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "model/pki-layout.h"
#include "spec/spec-check.h"

#define STATE_STORE_URL_MAX  1024U /* what store_open() accepts */
#define LIFETIME_MIN         (3600ULL * USEC_PER_SEC)
#define LIFETIME_MAX         (876000ULL * 3600ULL * USEC_PER_SEC) /* 100 years */
#define KUBELET_LIFETIME_MIN (5ULL * 60ULL * USEC_PER_SEC)        /* the signer backdates 5 minutes */

/* ---- spec.stateStore: its shape only (the spec cannot include store/; store_open() checks more) ---- */

/* No ".." segment and no empty one ("a//b"): a directory store refuses both. */
static bool path_segments_ok(const char *p) {
        return !strstr(p, "//") && !strstr(p, "/../") && !endswith(p, "/..");
}

int spec_check_state_store(const void *value, char **ret_message) {
        char b[SPEC_ECHO_MAX];
        const char *s = *(const char *const *)value, *rest;

        if (strlen(s) > STATE_STORE_URL_MAX)
                return spec_check_fail(ret_message, "%s is longer than %u characters", spec_echo(b, s),
                                       STATE_STORE_URL_MAX);
        if ((rest = startswith(s, "file://"))) {
                if (rest[0] != '/')
                        return spec_check_fail(ret_message,
                                               "%s: the directory must be absolute (file:///DIR)",
                                               spec_echo(b, s));
                if (!path_segments_ok(rest))
                        return spec_check_fail(ret_message,
                                               "%s: the directory must not contain '..' or empty segments",
                                               spec_echo(b, s));
                return 0;
        }
        if ((rest = startswith(s, "s3://"))) {
                size_t blen = strcspn(rest, "/?");
                const char *q = strchr(rest, '?'), *region = q ? startswith(q, "?region=") : NULL;
                if (!aws_bucket_name_valid(rest, blen))
                        return spec_check_fail(
                            ret_message,
                            "%s: the bucket name must be 3 to 63 characters of [a-z0-9.-] "
                            "(s3://BUCKET[/PREFIX])",
                            spec_echo(b, s));
                if (rest[blen] == '/' && !path_segments_ok(rest + blen))
                        return spec_check_fail(ret_message,
                                               "%s: the prefix must not contain '..' or empty segments",
                                               spec_echo(b, s));
                if (q && !aws_region_name_valid(region))
                        return spec_check_fail(ret_message,
                                               "%s: the only parameter is ?region=REGION, a region name of "
                                               "1-64 characters of [a-z0-9-] (eu-west-1)",
                                               spec_echo(b, s));
                return 0;
        }
        if ((rest = startswith(s, "gs://"))) {
                size_t blen = strcspn(rest, "/");
                if (!gce_bucket_name_valid(rest, blen) || strchr(rest, '?'))
                        return spec_check_fail(
                            ret_message,
                            "%s: the bucket name must be 3 to 63 characters of [a-z0-9_.-] "
                            "(gs://BUCKET[/PREFIX], no parameters)",
                            spec_echo(b, s));
                if (rest[blen] == '/' && !path_segments_ok(rest + blen))
                        return spec_check_fail(ret_message,
                                               "%s: the prefix must not contain '..' or empty segments",
                                               spec_echo(b, s));
                return 0;
        }
        return spec_check_fail(ret_message,
                               "%s is not a state store URL (file:///DIR, s3://BUCKET[/PREFIX] or "
                               "gs://BUCKET[/PREFIX])",
                               spec_echo(b, s));
}

/* ---- spec.pki ---- */

/* It ends up in flags and hostPath volumes, so the same rule as the components' paths. */
int spec_check_pki_dir(const void *value, char **ret_message) {
        char b[SPEC_ECHO_MAX];
        const char *s = *(const char *const *)value;

        if (s[0] != '/' || strlen(s) > 1024 || strstr(s, "/..") || strpbrk(s, " \t"))
                return spec_check_fail(ret_message, "%s is not an absolute path without '..' or spaces",
                                       spec_echo(b, s));
        return 0;
}

/* A lifetime from min to LIFETIME_MAX (100 years), said in Go's form. */
static int check_lifetime_from(const OptDuration *d, usec_t min, char **ret_message) {
        char b[GO_DURATION_MAX], m[GO_DURATION_MAX], x[GO_DURATION_MAX];

        if (d->value < min || d->value > LIFETIME_MAX)
                return spec_check_fail(ret_message, "'%s' is out of range %s..%s (100 years)",
                                       format_go_duration(b, d->value), format_go_duration(m, min),
                                       format_go_duration(x, LIFETIME_MAX));
        return 0;
}

int spec_check_lifetime(const void *value, char **ret_message) {
        return check_lifetime_from(value, LIFETIME_MIN, ret_message);
}

int spec_check_kubelet_lifetime(const void *value, char **ret_message) {
        return check_lifetime_from(value, KUBELET_LIFETIME_MIN, ret_message);
}

usec_t spec_pki_kubelet_lifetime(const PkiSpec *p) {
        return p->kubelet_certificate_lifetime.set ? p->kubelet_certificate_lifetime.value
                                                   : p->certificate_lifetime.value;
}

/* The deepest node along spec.<keys...> that exists, for placing an error. */
static const YamlNode *spec_node(const YamlNode *root, const char *a, const char *b) {
        const YamlNode *spec = yaml_tree_get(root, "spec"), *n = yaml_tree_get(spec, a);
        const YamlNode *m = b ? yaml_tree_get(n, b) : NULL;
        return m ?: n ?: spec ?: root;
}

/* The user wrote spec.<section>.<key> with a value (null counts as absent, as in the loader). */
static bool user_set(const YamlNode *root, const char *section, const char *key) {
        const YamlNode *v = yaml_tree_get(yaml_tree_get(yaml_tree_get(root, "spec"), section), key);
        return v && !yaml_tree_is_null(v);
}

static void check_lifetimes(const ClusterSpec *s, const YamlNode *root, SpecErrors *errs) {
        const PkiSpec *p = &s->pki;
        char c[GO_DURATION_MAX], l[GO_DURATION_MAX];

        /* A lifetime out of range is reported already; comparing it too would only repeat that. */
        if (!p->ca_lifetime.set || !p->certificate_lifetime.set ||
            spec_check_lifetime(&p->ca_lifetime, NULL) < 0 ||
            spec_check_lifetime(&p->certificate_lifetime, NULL) < 0 ||
            p->certificate_lifetime.value < p->ca_lifetime.value)
                return;
        bool cert_given = user_set(root, "pki", "certificateLifetime");
        spec_errors_add_at(
            errs, spec_node(root, "pki", cert_given ? "certificateLifetime" : "caLifetime"),
            "spec.pki.certificateLifetime: '%s' must be less than spec.pki.caLifetime '%s' (a "
            "certificate cannot outlive its CA)",
            format_go_duration(l, p->certificate_lifetime.value),
            format_go_duration(c, p->ca_lifetime.value));
}

/* ---- the defaults of a PKI-managed cluster ---- */

/* A key of a component's config and its value: a file in the component's pki directory, or a literal. */
typedef struct PkiDefault {
        const char *key;
        const char *file;  /* in <pki dir>/<subdir>; NULL: value is the literal below */
        const char *value; /* a literal (a list of one for a list key); "" clears the key */
} PkiDefault;

typedef struct PkiSection {
        const char *section; /* YAML key under spec */
        size_t offset;       /* of the config in ClusterSpec */
        const Field *fields;
        const char *subdir; /* the component's directory under pki.dir */
        const PkiDefault *defaults;
} PkiSection;

#define CRT(pair) pair PKI_CERT_SUFFIX
#define KEY(pair) pair PKI_KEY_SUFFIX

/* A file in the component's pki directory, or a literal value. */
#define IN_DIR(k, f) \
        { .key = k, .file = f }
#define LITERAL(k, v) \
        { .key = k, .value = v }

static const PkiDefault apiserver_defaults[] = {
        IN_DIR("tlsCertFile", CRT(PKI_APISERVER_PAIR)),
        IN_DIR("tlsPrivateKeyFile", KEY(PKI_APISERVER_PAIR)),
        IN_DIR("clientCAFile", PKI_CA_FILE),
        IN_DIR("etcdCAFile", PKI_APISERVER_ETCD_CA_FILE),
        IN_DIR("etcdCertFile", CRT(PKI_APISERVER_ETCD_CLIENT_PAIR)),
        IN_DIR("etcdKeyFile", KEY(PKI_APISERVER_ETCD_CLIENT_PAIR)),
        IN_DIR("kubeletClientCertificate", CRT(PKI_APISERVER_KUBELET_PAIR)),
        IN_DIR("kubeletClientKey", KEY(PKI_APISERVER_KUBELET_PAIR)),
        IN_DIR("requestheaderClientCAFile", PKI_FRONT_PROXY_CA_FILE),
        IN_DIR("proxyClientCertFile", CRT(PKI_FRONT_PROXY_CLIENT_PAIR)),
        IN_DIR("proxyClientKeyFile", KEY(PKI_FRONT_PROXY_CLIENT_PAIR)),
        IN_DIR("serviceAccountKeyFile", PKI_SA_PUBLIC_FILE),
        IN_DIR("serviceAccountSigningKeyFile", PKI_SA_KEY_FILE),
        /* kubeadm's front-proxy settings: the aggregator presents the front-proxy client certificate */
        LITERAL("requestheaderAllowedNames", SPEC_FRONT_PROXY_CLIENT_CN),
        LITERAL("requestheaderUsernameHeaders", "X-Remote-User"),
        LITERAL("requestheaderGroupHeaders", "X-Remote-Group"),
        LITERAL("requestheaderExtraHeaderPrefixes", "X-Remote-Extra-"),
        {},
};

/* A component that delegates authentication to the apiserver: its kubeconfig for the reviews, and the two
 * CAs in its own directory, so that it never needs the extension-apiserver-authentication ConfigMap
 * (component-config.h, DelegatedAuthentication). */
#define DELEGATING_DEFAULTS                                                                                 \
        IN_DIR("kubeconfig", PKI_KUBECONFIG_FILE), IN_DIR("authenticationKubeconfig", PKI_KUBECONFIG_FILE), \
            IN_DIR("authorizationKubeconfig", PKI_KUBECONFIG_FILE), IN_DIR("clientCAFile", PKI_CA_FILE),    \
            IN_DIR("requestheaderClientCAFile", PKI_FRONT_PROXY_CA_FILE)

static const PkiDefault controller_manager_defaults[] = {
        DELEGATING_DEFAULTS,
        IN_DIR("rootCAFile", PKI_CA_FILE),
        IN_DIR("serviceAccountPrivateKeyFile", PKI_SA_KEY_FILE),
        /* The layout puts no CA key on the node, and kube-controller-manager exits when a signing file it
         * is given is missing; without either it skips the CSR signer (an empty value emits no flag). */
        LITERAL("clusterSigningCertFile", ""),
        LITERAL("clusterSigningKeyFile", ""),
        {},
};

static const PkiDefault scheduler_defaults[] = {
        DELEGATING_DEFAULTS,
        {},
};

static const PkiDefault proxy_defaults[] = {
        IN_DIR("kubeconfig", PKI_KUBECONFIG_FILE),
        {},
};

/* The node's kubelet: its kubeconfig (system:node:<name>) and the cluster CA it checks clients against (the
 * API server's kubelet-client certificate). */
static const PkiDefault kubelet_defaults[] = {
        IN_DIR("kubeconfig", PKI_KUBECONFIG_FILE),
        IN_DIR("clientCAFile", PKI_CA_FILE),
        {},
};

#define SECTION(key, member, table, dir, d)                                                              \
        {                                                                                                \
                .section = key, .offset = offsetof(ClusterSpec, member), .fields = table, .subdir = dir, \
                .defaults = d                                                                            \
        }

static const PkiSection pki_sections[] = {
        SECTION("kubeAPIServer", kube_apiserver, kube_apiserver_config_fields, PKI_APISERVER_DIR,
                apiserver_defaults),
        SECTION("kubeControllerManager", kube_controller_manager, kube_controller_manager_config_fields,
                PKI_CONTROLLER_MANAGER_DIR, controller_manager_defaults),
        SECTION("kubeScheduler", kube_scheduler, kube_scheduler_config_fields, PKI_SCHEDULER_DIR,
                scheduler_defaults),
        SECTION("kubeProxy", kube_proxy, kube_proxy_config_fields, PKI_PROXY_DIR, proxy_defaults),
        SECTION("kubelet", kubelet, kubelet_config_fields, PKI_KUBELET_DIR, kubelet_defaults),
};

static const Field *field_find(const Field *fields, const char *key) {
        for (const Field *f = fields; f->name; f++)
                if (streq(f->name, key))
                        return f;
        return NULL;
}

/* Sets the key's field (a string, or a list of one) to value, which it takes. */
static int field_set(const Field *f, void *config, char *value) {
        _cleanup_free_ char *v = value;
        void *p = FIELD_PTR(config, f);

        if (!v)
                return -ENOMEM;
        if (f->type == FIELD_STRING) {
                free(*(char **)p);
                *(char **)p = TAKE_PTR(v);
                return 0;
        }
        if (f->type != FIELD_STRV)
                return -EINVAL; /* a table row names a key of another type: a bug */
        char **l = new0(char *, 2);
        if (!l)
                return -ENOMEM;
        l[0] = TAKE_PTR(v);
        strv_free(*(char ***)p);
        *(char ***)p = l;
        return 0;
}

static int apply_section(ClusterSpec *s, const PkiSection *sec, const YamlNode *root) {
        void *config = (uint8_t *)s + sec->offset;

        for (const PkiDefault *d = sec->defaults; d->key; d++) {
                const Field *f = field_find(sec->fields, d->key);
                if (!f)
                        return -EINVAL; /* a bug: the row names a key the table does not have */
                if (user_set(root, sec->section, d->key))
                        continue;
                int r = field_set(f, config,
                                  d->file ? pki_layout_file(s->pki.dir, sec->subdir, d->file)
                                          : strdup(d->value));
                if (r < 0)
                        return r;
        }
        return 0;
}

static int apply_etcd(ClusterSpec *s) {
        for (size_t i = 0; i < s->etcd_clusters.n; i++) {
                EtcdClusterSpec *e = &((EtcdClusterSpec *)s->etcd_clusters.items)[i];
                /* An invalid name is reported already; tlsDir has no table default, so NULL means unset. */
                if (e->tls_dir || !e->name || spec_check_dns_label(&e->name, NULL) < 0)
                        continue;
                e->tls_dir = pki_layout_etcd_dir(s->pki.dir, e->name);
                if (!e->tls_dir)
                        return -ENOMEM;
        }
        return 0;
}

int spec_check_pki(ClusterSpec *s, const YamlNode *root, SpecErrors *errs) {
        int r;

        check_lifetimes(s, root, errs);
        if (!s->state_store) {
                /* Settings that would do nothing are a forgotten stateStore more often than not. */
                const YamlNode *pki = yaml_tree_get(yaml_tree_get(root, "spec"), "pki");
                if (pki && !yaml_tree_is_null(pki))
                        spec_errors_add_at(
                            errs, spec_node(root, "pki", NULL),
                            "spec.pki: has no effect without spec.stateStore (protokube issues "
                            "certificates only from a state store)");
                return 0;
        }
        /* A bad pki.dir is reported already; paths under it would only repeat the error. */
        if (!s->pki.dir || spec_check_pki_dir(&s->pki.dir, NULL) < 0)
                return 0;
        for (size_t i = 0; i < ELEMENTSOF(pki_sections); i++) {
                r = apply_section(s, &pki_sections[i], root);
                if (r < 0)
                        return r;
        }
        return apply_etcd(s);
}
