/* SPDX-License-Identifier: Apache-2.0 */
/* A worker's kubelet bootstrap (docs/workers.md, "A worker's bootstrap"): the files its kubelet starts
 * from, under the node's kubelet directory, each written atomically and only when it changes:
 *   ca.crt                the cluster CA, fetched from the API's cluster-info and taken only with the pin
 *                         the node was given (join-discovery.h); nothing else is written before it is;
 *   config.yaml           the KubeletConfiguration from spec.kubelet (the same field table as every
 *                         component), with this node's facts: the pinned CA as the client CA, its own
 *                         kubeconfig, certificate rotation and serving certificates through CSRs;
 *   bootstrap-kubeconfig  the API's internal name, the pinned CA and the bootstrap token (mode 0600);
 *   kubelet.env           KUBELET_ARGS for the init system's unit: the flags the file has no field for,
 *                         --bootstrap-kubeconfig and the node's name and address.
 * Once the kubelet has its certificate (its kubeconfig exists) its own rotation takes over; the token is no
 * longer needed. A worker never reads the state store and holds no CA key: it has neither the means nor
 * the need. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "basic/trace.h"
#include "components/kubelet.h"
#include "daemon/pass-types.h"
#include "daemon/progress.h"
#include "daemon/step-kubelet-boot.h"
#include "join/join-discovery.h"
#include "join/join-pin.h"
#include "model/cluster-view.h"
#include "model/conventions.h"
#include "pki/pki-cert.h"
#include "pki/pki-kubeconfig.h"
#include "shared/http.h"
#include "shared/openssl-util.h"

#define DISCOVERY_TIMEOUT (10ULL * USEC_PER_SEC) /* each master asked for the CA */
#define BOOTSTRAP_USER    "kubelet-bootstrap"

typedef enum KubeletFile {
        KUBELET_FILE_CONFIG,
        KUBELET_FILE_CA,
        KUBELET_FILE_BOOTSTRAP,
        KUBELET_FILE_KUBECONFIG, /* the kubelet's own, written by it once its certificate is issued */
        KUBELET_FILE_ENV,
        _KUBELET_FILE_MAX,
} KubeletFile;

static const char *const kubelet_file_names[_KUBELET_FILE_MAX] = {
        [KUBELET_FILE_CONFIG] = "config.yaml",
        [KUBELET_FILE_CA] = "ca.crt",
        [KUBELET_FILE_BOOTSTRAP] = "bootstrap-kubeconfig",
        [KUBELET_FILE_KUBECONFIG] = PASS_KUBELET_KUBECONFIG,
        [KUBELET_FILE_ENV] = KUBELET_ENV_FILE,
};

/* "<kubelet dir>/<file>". NULL: out of memory. */
static char *kubelet_path(const Pass *p, KubeletFile f) {
        return pass_kubelet_file(p, kubelet_file_names[f]);
}

void pass_kubelet_observed_done(PassKubeletObserved *k) {
        free(k->config);
        free(k->ca_pem);
        free(k->env);
        if (k->bootstrap)
                erase_and_free(k->bootstrap, k->bootstrap_len);
        free(k->ca_message);
        free(k->token_message);
        join_token_erase(&k->token);
        free(k->ca_found);
        free(k->ca_fetch_message);
        *k = (PassKubeletObserved){};
}

void pass_kubelet_plan_done(PassKubeletPlan *k) {
        free(k->note);
        free(k->ca);
        free(k->config);
        free(k->env);
        if (k->bootstrap)
                erase_and_free(k->bootstrap, k->bootstrap_len);
        *k = (PassKubeletPlan){};
}

/* The text of a file of the kubelet directory; NULL when absent. Other failures: < 0. */
static int read_kubelet_file(const Pass *p, KubeletFile f, bool secret, char **ret, size_t *ret_len) {
        return pass_kubelet_read(p, kubelet_file_names[f], secret, ret, ret_len);
}

/* Whether the CA on disk is the pinned one (a file the node wrote after checking it, or the operator's). */
static int observe_ca(const Pass *p, PassKubeletObserved *k) {
        _cleanup_(X509_freep) X509 *ca = NULL;
        if (!k->ca_pem)
                return 0;
        int r = pki_cert_from_pem(k->ca_pem, strlen(k->ca_pem), &ca);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                k->ca_message = strdup("it holds no certificate");
                return k->ca_message ? 0 : -ENOMEM;
        }
        if (!p->node.ca_pin)
                return 0;
        r = join_ca_pin_check(ca, p->node.ca_pin, &k->ca_message);
        if (r == -ENOMEM)
                return r;
        k->ca_pinned = r >= 0;
        return 0;
}

/* The CA from the first master that serves one with the pin, through its internal address with the API's
 * name. NULL in *ret_pem and the last failure's words in *ret_error when none did. */
static int discover_ca(const Pass *p, const ClusterView *view, char **ret_pem, char **ret_error) {
        _cleanup_free_ char *server = api_server_url(p->spec->dns.internal_suffix, p->certs.apiserver_port),
                            *host = NULL;
        int r = api_dns_name(p->spec->dns.internal_suffix, &host);
        if (r < 0 || !server)
                return r < 0 ? r : -ENOMEM;
        r = -EHOSTUNREACH;
        for (size_t i = 0; i < view->n_masters; i++) {
                const MasterNode *m = &view->masters[i];
                if (strv_length(m->internal_ips) == 0)
                        continue;
                _cleanup_free_ char *to =
                    http_connect_to_address(host, (unsigned)p->certs.apiserver_port, m->internal_ips[0]);
                if (!to)
                        return -ENOMEM;
                free(*ret_error);
                *ret_error = NULL;
                r = join_discover_ca(server, to, p->node.ca_pin, DISCOVERY_TIMEOUT, ret_pem, ret_error);
                if (r >= 0 || r == -ENOMEM)
                        return r;
        }
        return r;
}

/* When the CA on disk is not the pinned one: the masters of the view (read only, as the API view step
 * lists them) are asked for theirs. Reads only: the plan decides, the apply writes. */
static int observe_ca_fetch(PassContext *ctx, PassKubeletObserved *k) {
        const Pass *p = ctx->pass;
        _cleanup_(cluster_view_freep) ClusterView *view = NULL;
        if (!p->node.ca_pin || k->ca_pinned)
                return 0;
        int r =
            ctx->obs->volumes_error < 0 ? ctx->obs->volumes_error : volumes_view(&ctx->obs->in, NULL, &view);
        if (r == -ENOMEM)
                return r;
        if (r < 0 || !view || view->n_masters == 0) {
                k->ca_fetch_error = PK_EWAITING;
                k->ca_fetch_message = strdup("no master in the view yet to fetch the cluster's CA from");
                return k->ca_fetch_message ? 0 : -ENOMEM;
        }
        _cleanup_free_ char *error = NULL;
        trace_mark("kubelet: fetching the cluster's CA");
        r = discover_ca(p, view, &k->ca_found, &error);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                k->ca_fetch_error = r;
                k->ca_fetch_message =
                    strprintf("no CA with the pin %s: %s", p->node.ca_pin, error ?: pk_strerror(r));
                return k->ca_fetch_message ? 0 : -ENOMEM;
        }
        return 0;
}

static int kubelet_boot_observe(PassContext *ctx) {
        const Pass *p = ctx->pass;
        PassKubeletObserved *k = &ctx->obs->kubelet;
        _cleanup_free_ char *kubeconfig = kubelet_path(p, KUBELET_FILE_KUBECONFIG);
        trace_mark("kubelet: reading its files");
        if (!kubeconfig)
                return -ENOMEM;
        int r = read_kubelet_file(p, KUBELET_FILE_CONFIG, false, &k->config, NULL);
        if (r >= 0)
                r = read_kubelet_file(p, KUBELET_FILE_CA, false, &k->ca_pem, NULL);
        if (r >= 0)
                r = read_kubelet_file(p, KUBELET_FILE_ENV, false, &k->env, NULL);
        if (r >= 0)
                r = read_kubelet_file(p, KUBELET_FILE_BOOTSTRAP, true, &k->bootstrap, &k->bootstrap_len);
        if (r >= 0)
                r = observe_ca(p, k);
        if (r == -ENOMEM)
                return r;
        if (r < 0) { /* a file there that cannot be read: nothing is written over it */
                k->token_error = r;
                k->token_message = strprintf("cannot read the kubelet's files in %s: %s",
                                             p->node.kubelet_dir, pk_strerror(r));
                return k->token_message ? 0 : -ENOMEM;
        }
        k->joined = access(kubeconfig, F_OK) == 0;
        k->observed = true;
        r = observe_ca_fetch(ctx, k);
        if (r < 0)
                return r;
        if (!p->node.token_file) {
                k->token_error = -ENOKEY;
                k->token_message =
                    strdup("no bootstrap token: give --token-file (protokube token create on a "
                           "master makes one)");
                return k->token_message ? 0 : -ENOMEM;
        }
        r = join_token_file_read(p->node.token_file, &k->token, &k->token_message);
        if (r == -ENOMEM)
                return r;
        k->has_token = r >= 0;
        k->token_error = MIN(r, 0);
        return 0;
}

/* The node's copy of the spec for its kubelet: the cluster's settings, and this node's files. Its strings
 * alias the spec, the paths and the node settings. */
static ClusterSpec node_spec(const Pass *p, char *const paths[_KUBELET_FILE_MAX]) {
        ClusterSpec s = *p->spec;
        s.kubelet.static_pod_path = (char *)p->node.manifest_dir;
        s.kubelet.client_ca_file = paths[KUBELET_FILE_CA];
        s.kubelet.kubeconfig = paths[KUBELET_FILE_KUBECONFIG];
        s.kubelet.rotate_certificates = (OptBool){ .set = true, .value = true };
        s.kubelet.server_tls_bootstrap = (OptBool){ .set = true, .value = true };
        return s;
}

/* KUBELET_ARGS="--a=b --c=d" for a systemd unit's EnvironmentFile=: the flags beside the file, where the
 * kubelet's bootstrap kubeconfig and certificates are, and the node's name and address when it was given
 * them. A value with a space or quote cannot be written there and is refused. */
static int render_env(const Pass *p, const ClusterSpec *s, char *const paths[_KUBELET_FILE_MAX],
                      char **ret) {
        _cleanup_strv_free_ char **flags = NULL;
        _cleanup_free_ char *boot = strjoin("--bootstrap-kubeconfig=", paths[KUBELET_FILE_BOOTSTRAP]);
        if (!boot || strv_extend(&flags, boot) < 0)
                return -ENOMEM;
        int r = pass_kubelet_node_flags(p, s, &flags);
        if (r < 0)
                return r;
        return kubelet_env_render(s, paths[KUBELET_FILE_CONFIG], flags, ret);
}

static int plan_status(PassKubeletPlan *k, PassJoinStage stage, int status, char *note) {
        k->stage = stage;
        k->status = status;
        k->note = note;
        return note ? 0 : -ENOMEM;
}

/* The bootstrap kubeconfig, from the token read; without one (a joined node) the file stays as it is. */
static int render_bootstrap(const Pass *p, const PassKubeletObserved *o,
                            char *const paths[_KUBELET_FILE_MAX], PassKubeletPlan *k) {
        _cleanup_free_ char *server = api_server_url(p->spec->dns.internal_suffix, p->certs.apiserver_port),
                            *error = NULL;
        char token[JOIN_TOKEN_TEXT_MAX];
        if (!server)
                return -ENOMEM;
        if (!o->has_token)
                return 0;
        int r = pki_kubeconfig_render(&(PkiKubeconfig){ .cluster = p->spec->name,
                                                        .server = server,
                                                        .user = BOOTSTRAP_USER,
                                                        .ca_file = paths[KUBELET_FILE_CA],
                                                        .token = join_token_format(&o->token, token) },
                                      &k->bootstrap, &k->bootstrap_len, &error);
        explicit_bzero(token, sizeof(token));
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return plan_status(k, PASS_JOIN_TOKEN, r,
                                   strprintf("cannot write the bootstrap kubeconfig: %s", strna(error)));
        k->write_bootstrap = !o->bootstrap || o->bootstrap_len != k->bootstrap_len ||
                             memcmp(o->bootstrap, k->bootstrap, k->bootstrap_len) != 0;
        return 0;
}

/* Whether the plan can go on: a token unless the kubelet has its certificate already, a pin, and the
 * pinned CA, on disk or found at a master. 0 when it can. */
static int plan_preconditions(const Pass *p, const PassKubeletObserved *o, PassKubeletPlan *k) {
        if (o->token_error < 0 && (!o->joined || o->token_error != -ENOKEY))
                return plan_status(k, PASS_JOIN_TOKEN, o->token_error, strdup(strna(o->token_message)));
        if (!p->node.ca_pin)
                return plan_status(
                    k, PASS_JOIN_PIN, -ENOKEY,
                    strdup("no CA pin: give --ca-pin (protokube token create on a master prints it)"));
        if (o->ca_pinned)
                return 0;
        if (!o->ca_found)
                return plan_status(k, PASS_JOIN_PIN, o->ca_fetch_error ?: -EIO,
                                   strdup(strna(o->ca_fetch_message)));
        k->ca = strdup(o->ca_found);
        return k->ca ? 0 : -ENOMEM;
}

/* Pure over (spec, node settings, observation, the API view's plan). */
static int kubelet_boot_plan(const Pass *p, const PassObservation *o, PassPlan *plan) {
        PassKubeletPlan *k = &plan->kubelet;
        char *paths[_KUBELET_FILE_MAX] = {};
        int r = 0;
        if (!o->kubelet.observed)
                return plan_status(k, PASS_JOIN_TOKEN, o->kubelet.token_error ?: -EIO,
                                   strdup(strna(o->kubelet.token_message)));
        for (size_t i = 0; i < _KUBELET_FILE_MAX; i++)
                if (!(paths[i] = kubelet_path(p, (KubeletFile)i)))
                        r = -ENOMEM;
        if (r >= 0)
                r = plan_preconditions(p, &o->kubelet, k);
        ClusterSpec s = node_spec(p, paths);
        if (r >= 0 && k->status == 0 && (r = kubelet_config_render(&s, &k->config)) < 0 && r != -ENOMEM)
                r = plan_status(k, PASS_JOIN_TOKEN, r,
                                strprintf("cannot render the kubelet's configuration: %s", pk_strerror(r)));
        if (r >= 0 && k->status == 0 && (r = render_env(p, &s, paths, &k->env)) < 0 && r != -ENOMEM)
                r = plan_status(k, PASS_JOIN_TOKEN, r,
                                strprintf("cannot render the kubelet's flags: %s", pk_strerror(r)));
        if (r >= 0 && k->status == 0)
                r = render_bootstrap(p, &o->kubelet, paths, k);
        if (r >= 0 && k->status == 0) {
                k->write_config = !streq_ptr(o->kubelet.config, k->config);
                k->write_env = !streq_ptr(o->kubelet.env, k->env);
        }
        for (size_t i = 0; i < _KUBELET_FILE_MAX; i++)
                free(paths[i]);
        return r;
}

/* One file of the kubelet directory, atomically and only when its bytes change. */
static int write_kubelet_file(PassContext *ctx, KubeletFile f, const char *text, size_t len, mode_t mode) {
        return pass_kubelet_write(ctx, kubelet_file_names[f], text, len, mode);
}

static int kubelet_boot_apply(PassContext *ctx, PassWave wave) {
        const PassKubeletPlan *k = &ctx->plan->kubelet;
        pass_progress_step("kubelet");
        if (pass_report_status(ctx, PASS_STAGE_KUBELET, "kubelet", k->status, k->note))
                return 0;
        int r = mkdir_p(ctx->pass->node.kubelet_dir, 0755);
        if (r < 0) {
                log_error_errno(r, "kubelet: cannot create %s: %m", ctx->pass->node.kubelet_dir);
                pass_report_error(ctx->rep, PASS_STAGE_KUBELET, r, "kubelet: cannot create its directory");
                return 0;
        }
        /* the CA first: the other files name it, and the kubelet must not start with another */
        if (k->ca) {
                log_info("kubelet: the cluster's CA has the pin %s.", ctx->pass->node.ca_pin);
                if ((r = write_kubelet_file(ctx, KUBELET_FILE_CA, k->ca, strlen(k->ca), 0644)) < 0)
                        return r == -ENOMEM ? r : 0;
        }
        if (k->write_config &&
            (r = write_kubelet_file(ctx, KUBELET_FILE_CONFIG, k->config, strlen(k->config), 0644)) < 0)
                return r == -ENOMEM ? r : 0;
        if (k->write_bootstrap &&
            (r = write_kubelet_file(ctx, KUBELET_FILE_BOOTSTRAP, k->bootstrap, k->bootstrap_len, 0600)) < 0)
                return r == -ENOMEM ? r : 0;
        if (k->write_env &&
            (r = write_kubelet_file(ctx, KUBELET_FILE_ENV, k->env, strlen(k->env), 0644)) < 0)
                return r == -ENOMEM ? r : 0;
        return 0;
}

static int kubelet_boot_print(const Pass *p, const PassObservation *o, const PassPlan *plan, FILE *out) {
        const PassKubeletPlan *k = &plan->kubelet;
        int r = pass_print_status(out, "kubelet", "cannot bootstrap", k->status, k->note);
        if (r != 0)
                return MIN(r, 0);
        const struct {
                bool write;
                KubeletFile f;
        } files[] = { { k->ca, KUBELET_FILE_CA },
                      { k->write_config, KUBELET_FILE_CONFIG },
                      { k->write_bootstrap, KUBELET_FILE_BOOTSTRAP },
                      { k->write_env, KUBELET_FILE_ENV } };
        bool any = false;
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                _cleanup_free_ char *path = kubelet_path(p, files[i].f);
                if (!files[i].write)
                        continue;
                if (files[i].f == KUBELET_FILE_CA)
                        fprintf(out, "kubelet-write %s (the CA a master serves has the pin %s)\n",
                                strna(path), p->node.ca_pin);
                else
                        fprintf(out, "kubelet-write %s\n", strna(path));
                any = true;
        }
        if (!any)
                fprintf(out, "kubelet: its files are current%s\n",
                        o->kubelet.joined ? "; it has its certificate" : "; waiting for its certificate");
        return 0;
}

/* `join plan`: the token and the pin, as far as the node itself can tell (the API's answer to the token
 * is the node step's). */
static int kubelet_boot_stages(const Pass *p, const PassObservation *o, const PassPlan *plan,
                               PassJoinStatus stages[static _PASS_JOIN_STAGE_MAX]) {
        const PassKubeletPlan *k = &plan->kubelet;
        if (k->status != 0)
                return pass_join_status_set(&stages[k->stage], k->status, strdup(strna(k->note)));
        if (!o->kubelet.joined || o->kubelet.has_token) {
                int r = pass_join_status_set(&stages[PASS_JOIN_TOKEN], 0,
                                             o->kubelet.has_token
                                                 ? strprintf("bootstrap token %s read from %s",
                                                             o->kubelet.token.id, p->node.token_file)
                                                 : strdup("the kubelet has its certificate"));
                if (r < 0)
                        return r;
        }
        return pass_join_status_set(&stages[PASS_JOIN_PIN], 0,
                                    strprintf("the cluster's CA has the pin %s%s", p->node.ca_pin,
                                              k->ca ? " (ca.crt is to be written)" : ""));
}

const PassStep pass_step_kubelet_boot = {
        .name = "kubelet",
        .stage = PASS_STAGE_KUBELET,
        .roles = 1U << NODE_ROLE_WORKER,
        .observe = kubelet_boot_observe,
        .plan = kubelet_boot_plan,
        .apply = kubelet_boot_apply,
        .print = kubelet_boot_print,
        .join = kubelet_boot_stages,
};
