/* SPDX-License-Identifier: Apache-2.0 */
/* The pivot's client and its steps (docs/pivot.md): the assets applied with their digest annotation, this
 * master's Node labelled and tainted, its bootstrap manifests moved to the state directory (and back, the
 * rollback), the completion recorded in the API; the local record kept before each step that needs it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "manifest/manifest-dir.h"
#include "pivot/pivot.h"
#include "shared/crypto.h"
#include "shared/http.h"

#define MANIFEST_MAX (1U * 1024U * 1024U)

const char *const pivot_bootstrap_manifests[] = {
        "kube-apiserver.manifest",
        "kube-controller-manager.manifest",
        "kube-scheduler.manifest",
        "kube-proxy.manifest",
        NULL,
};

bool pivot_record_keeps_bootstrap_away(const PivotRecord *rec, const char *file_name) {
        if (rec->removed_at == 0 && rec->complete_at == 0)
                return false;
        for (size_t i = 0; pivot_bootstrap_manifests[i]; i++)
                if (streq(pivot_bootstrap_manifests[i], file_name))
                        return true;
        return false;
}

static void texts_free(Pivot *p) {
        const SelfHostedAssets *a = p->settings ? p->settings->assets : NULL;
        for (size_t i = 0; p->texts && p->texts[i]; i++)
                if (a && i < a->n && a->items[i].secret)
                        erase_and_free(p->texts[i], strlen(p->texts[i]));
                else
                        free(p->texts[i]);
        free(p->texts);
        p->texts = NULL;
}

Pivot *pivot_free(Pivot *p) {
        if (!p)
                return NULL;
        kube_client_free(p->api);
        kube_client_free(p->local);
        texts_free(p);
        strv_free(p->digests);
        free(p->masters);
        strv_free(p->strings);
        free(p->stale);
        free(p->api_error);
        free(p->local_error);
        free(p);
        return NULL;
}

/* The text with "protokube.io/asset-digest" in its metadata's annotations: the object's live copy then says
 * which rendering it is, so the pivot applies only what changed. Top-level metadata is the line
 * "metadata:" at column 0 (the renderer's YAML). */
static int annotate(const SelfHostedObject *o, char **ret_text, char **ret_digest) {
        uint8_t md[32];
        char hex[65];
        _cleanup_(crypto_sha256_freep) CryptoSha256 *h = NULL;
        int r = crypto_sha256_new(&h);
        if (r >= 0)
                r = crypto_sha256_update(h, o->text, o->text_len);
        if (r >= 0)
                r = crypto_sha256_final(h, md);
        if (r < 0)
                return r;
        crypto_hex(md, sizeof(md), hex);
        const char *m = strstr(o->text, "\nmetadata:\n");
        if (!m)
                return -EINVAL;
        m += strlen("\nmetadata:\n");
        bool has = startswith(m, "  annotations:\n");
        if (has)
                m += strlen("  annotations:\n");
        char *t = strprintf("%.*s%s    " PIVOT_DIGEST_ANNOTATION ": \"%s\"\n%s", (int)(m - o->text), o->text,
                            has ? "" : "  annotations:\n", hex, m);
        char *d = strdup(hex);
        if (!t || !d) {
                if (t)
                        erase_and_free(t, strlen(t));
                free(d);
                return -ENOMEM;
        }
        *ret_text = t;
        *ret_digest = d;
        return 0;
}

static int open_client(const PivotSettings *s, const char *connect_to, KubeClient **ret, char **ret_error) {
        _cleanup_(kube_client_freep) KubeClient *c = NULL;
        _cleanup_free_ char *server = strprintf("https://%s:%u", s->api_host, s->api_port);
        if (!server)
                return -ENOMEM;
        int r = kube_client_new_from_kubeconfig(s->kubeconfig, &c, ret_error);
        if (r < 0)
                return r;
        r = kube_client_override(c, &(KubeClientConfig){ .server = server, .connect_to = connect_to },
                                 ret_error);
        if (r < 0)
                return r;
        /* An apiserver that is away must not hold a pass for minutes: few tries, a short call. */
        kube_client_set_retry(c, &(KubeRetryPolicy){ .max_tries = 3,
                                                     .backoff_max = 1 * USEC_PER_SEC,
                                                     .call_timeout = s->call_timeout ?: 10 * USEC_PER_SEC,
                                                     .request_timeout = 5 * USEC_PER_SEC });
        *ret = TAKE_PTR(c);
        return 0;
}

int pivot_new(const PivotSettings *s, Pivot **ret, char **ret_error) {
        _cleanup_(pivot_freep) Pivot *p = new0(Pivot, 1);
        int r;
        if (!p)
                return -ENOMEM;
        if (isempty(s->api_host) || isempty(s->node_name) || isempty(s->internal_ip) || !s->assets ||
            s->api_port == 0 || s->api_port > 65535)
                return error_setf(ret_error, -EINVAL,
                                  "the pivot needs the API's name and port, this node's name and address");
        p->settings = s;
        _cleanup_free_ char *to = http_connect_to_address(s->api_host, s->api_port, s->internal_ip);
        if (!to)
                return -ENOMEM;
        r = open_client(s, NULL, &p->api, ret_error);
        if (r >= 0)
                r = open_client(s, to, &p->local, ret_error);
        if (r < 0)
                return r;
        p->texts = new0(char *, s->assets->n + 1);
        p->digests = new0(char *, s->assets->n + 1);
        if (!p->texts || !p->digests)
                return -ENOMEM;
        for (size_t i = 0; i < s->assets->n; i++) {
                r = annotate(&s->assets->items[i], &p->texts[i], &p->digests[i]);
                if (r == -EINVAL)
                        return error_setf(ret_error, r, "self-hosted asset %s %s has no top-level metadata",
                                          s->assets->items[i].kind_name, s->assets->items[i].name);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(p);
        return 0;
}

static usec_t deadline(const Pivot *p) {
        return now(CLOCK_MONOTONIC) + (p->settings->call_timeout ?: 10 * USEC_PER_SEC);
}

/* This master's Node as protokube keeps it: labelled a master and tainted (kubelet 1.20 refuses node-role
 * labels in --node-labels, so protokube labels its own Node, and taints it so that only what tolerates the
 * masters runs there), labelled for its self-hosted apiserver once its turn started it, and annotated out of
 * the API's names during its turn. Server-side apply: protokube owns just these fields, and each apply
 * names all of them (a field it applied before and leaves out now is removed: how the annotation goes).
 *
 * Only a Node kubelet has registered: an apply would create a missing one without a status, and kubelet 1.20
 * then panics registering over it (reconcileHugePageResource writes into the nil capacity map) and the node
 * never joins. So the Node is read first (none yet: nothing to do, the next pass looks again), and the apply
 * carries its resourceVersion: if the Node went away in between, the API refuses instead of creating it. */
static int apply_node(Pivot *p, bool apiserver_started, bool names_out, char **ret_error) {
        _cleanup_(json_decrefp) json_t *node = NULL;
        _cleanup_free_ char *err = NULL;
        int r = kube_get(p->api, "v1", "Node", NULL, p->settings->node_name, deadline(p), &node, &err);
        if (r == -ENOENT)
                return 0;
        if (r < 0) {
                if (ret_error)
                        *ret_error = TAKE_PTR(err);
                return r;
        }
        const char *version =
            json_string_value(json_object_get(json_object_get(node, "metadata"), "resourceVersion"));
        if (!version)
                return error_setf(ret_error, -EBADMSG, "Node %s has no metadata.resourceVersion",
                                  p->settings->node_name);
        _cleanup_free_ char *text = strprintf(
            "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\","
            "\"resourceVersion\":\"%s\",%s"
            "\"labels\":{\"" PIVOT_MASTER_LABEL
            "\":\"\"%s}},\"spec\":{\"taints\":[{\"key\":\"" PIVOT_MASTER_LABEL
            "\",\"effect\":\"NoSchedule\"}]}}",
            p->settings->node_name, version,
            names_out ? "\"annotations\":{\"" PIVOT_NAMES_ANNOTATION "\":\"" PIVOT_NAMES_OUT "\"}," : "",
            apiserver_started ? ",\"" SELF_HOSTED_APISERVER_LABEL "\":\"true\"" : "");
        if (!text)
                return -ENOMEM;
        return kube_apply_document(p->api, text, strlen(text), deadline(p), NULL, ret_error);
}

static int save_record(Pivot *p, char **ret_error) {
        return pivot_record_save(p->settings->state_dir, &p->record, ret_error);
}

static int apply_assets(Pivot *p, char **ret_error) {
        const SelfHostedAssets *a = p->settings->assets;
        for (size_t i = 0; i < a->n; i++) {
                if (p->stale && !p->stale[i])
                        continue;
                _cleanup_free_ char *err = NULL;
                int r =
                    kube_apply_document(p->api, p->texts[i], strlen(p->texts[i]), deadline(p), NULL, &err);
                if (r < 0)
                        return error_setf(ret_error, r, "applying %s %s: %s", a->items[i].kind_name,
                                          a->items[i].name, strna(err));
        }
        if (p->record.assets_applied_at == 0) {
                p->record.assets_applied_at = now(CLOCK_REALTIME);
                return save_record(p, ret_error);
        }
        return 0;
}

/* {"spec":{"template":{"metadata":{"annotations":{...}}}}}: the rendered pod annotations, nothing else. */
static json_t *template_annotations_patch(char *const *pairs) {
        json_t *ann = json_object();
        for (size_t k = 0; ann && pairs && pairs[k] && pairs[k + 1]; k += 2)
                if (json_object_set_new(ann, pairs[k], json_string(pairs[k + 1])) < 0) {
                        json_decref(ann);
                        return NULL;
                }
        return ann ? json_pack("{s:{s:{s:{s:o}}}}", "spec", "template", "metadata", "annotations", ann)
                   : NULL;
}

/* After the pivot: the renewed Secrets applied whole (they are protokube's), then each workload's pod
 * template gets the new certificates digest by a merge patch that names only that annotation, so an upgrade
 * made through the API keeps its changes; the workload rolls (one master, one pod at a time) and its new
 * pods mount the renewed Secrets. */
static int renew_certificates(Pivot *p, char **ret_error) {
        const SelfHostedAssets *a = p->settings->assets;
        for (size_t pass = 0; pass < 2; pass++)
                for (size_t i = 0; i < a->n; i++) {
                        const SelfHostedObject *o = &a->items[i];
                        if (!p->stale || !p->stale[i] || o->secret != (pass == 0))
                                continue;
                        _cleanup_free_ char *err = NULL;
                        _cleanup_(json_decrefp) json_t *patch = NULL;
                        int r;
                        if (o->secret)
                                r = kube_apply_document(p->api, p->texts[i], strlen(p->texts[i]),
                                                        deadline(p), NULL, &err);
                        else if (!(patch = template_annotations_patch(p->settings->pod_annotations)))
                                return -ENOMEM;
                        else
                                r = kube_merge_patch(p->api, o->api_version, o->kind_name, o->namespace,
                                                     o->name, patch, deadline(p), &err);
                        if (r < 0)
                                return error_setf(ret_error, r, "renewing %s %s: %s", o->kind_name, o->name,
                                                  strna(err));
                }
        return 0;
}

static int remove_bootstrap(Pivot *p, char **ret_error) {
        const PivotSettings *s = p->settings;
        _cleanup_free_ char *backup = strjoin(s->state_dir, "/" PIVOT_BOOTSTRAP_SUBDIR);
        int r;
        if (!backup)
                return -ENOMEM;
        /* the time first: a crash after the first unlink must still find the rollback's deadline */
        if (p->record.removed_at == 0) {
                p->record.removed_at = now(CLOCK_REALTIME);
                r = save_record(p, ret_error);
                if (r < 0)
                        return r;
        }
        r = mkdir_p(backup, 0700);
        if (r < 0)
                return error_setf(ret_error, r, "cannot create '%s': %s", backup, strerror(-r));
        for (size_t i = 0; pivot_bootstrap_manifests[i]; i++) {
                _cleanup_free_ char *path = strjoin(s->manifest_dir, "/", pivot_bootstrap_manifests[i]),
                                    *keep = strjoin(backup, "/", pivot_bootstrap_manifests[i]), *text = NULL;
                size_t len;
                if (!path || !keep)
                        return -ENOMEM;
                r = read_full_file(path, MANIFEST_MAX, &text, &len);
                if (r == -ENOENT)
                        continue;
                if (r >= 0)
                        r = write_file_atomic(keep, text, len, 0600, false);
                if (r >= 0 && unlink(path) < 0 && errno != ENOENT)
                        r = -errno;
                if (r >= 0)
                        r = fsync_parent_dir(path);
                if (r < 0)
                        return error_setf(ret_error, r, "cannot move '%s' to '%s': %s", path, keep,
                                          strerror(-r));
        }
        return 0;
}

static int restore_bootstrap(Pivot *p, char **ret_error) {
        const PivotSettings *s = p->settings;
        int r;
        for (size_t i = 0; pivot_bootstrap_manifests[i]; i++) {
                _cleanup_free_ char *path = strjoin(s->manifest_dir, "/", pivot_bootstrap_manifests[i]),
                                    *keep = strjoin(s->state_dir, "/" PIVOT_BOOTSTRAP_SUBDIR "/",
                                                    pivot_bootstrap_manifests[i]),
                                    *text = NULL;
                if (!path || !keep)
                        return -ENOMEM;
                r = read_full_file(keep, MANIFEST_MAX, &text, NULL);
                if (r == -ENOENT)
                        continue;
                if (r >= 0)
                        r = manifest_write(path, text);
                if (r < 0)
                        return error_setf(ret_error, r, "cannot restore '%s' from '%s': %s", path, keep,
                                          strerror(-r));
        }
        p->record.removed_at = 0; /* the pass writes them again from now on */
        return save_record(p, ret_error);
}

static int mark_complete(Pivot *p, char **ret_error) {
        _cleanup_free_ char *text = strprintf(
            "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"" PIVOT_CONFIGMAP
            "\",\"namespace\":\"kube-system\"},\"data\":{\"complete\":\"true\",\"completedBy\":\"%s\"}}",
            p->settings->node_name);
        if (!text)
                return -ENOMEM;
        return kube_apply_document(p->api, text, strlen(text), deadline(p), NULL, ret_error);
}

static const PivotMaster *own_master(const Pivot *p) {
        for (size_t i = 0; i < p->obs.n_masters; i++)
                if (streq(p->masters[i].node, p->settings->node_name))
                        return &p->masters[i];
        return NULL;
}

/* The time of a step of this master's turn in the record, kept before the step acts: a crash after the
 * Node's change still finds when it began. */
static int record_once(Pivot *p, usec_t *at, char **ret_error) {
        if (*at != 0)
                return 0;
        *at = now(CLOCK_REALTIME);
        return save_record(p, ret_error);
}

/* The Node's labels and annotation after the step: what they are, changed by the steps of the turn; once
 * complete, every master runs the self-hosted apiserver (a master that joins later gets the label). */
static int keep_node(Pivot *p, const PivotDecision *d, char **ret_error) {
        const PivotMaster *me = own_master(p);
        bool started = me && me->apiserver_started, out = me && me->names_out;
        int r = 0;
        if (!p->obs.api_ready || (d->step == PIVOT_DONE && !p->self_labelled))
                return 0;
        switch (d->step) {
        case PIVOT_LEAVE_API_NAMES:
                r = record_once(p, &p->record.names_left_at, ret_error);
                out = true;
                break;
        case PIVOT_START_SELF_HOSTED:
                r = record_once(p, &p->record.started_at, ret_error);
                started = true;
                break;
        case PIVOT_REJOIN_API_NAMES:
                out = false;
                break;
        case PIVOT_DONE:
                started = true;
                out = false;
                break;
        default:
                break;
        }
        if (r < 0 || (p->self_labelled && me && started == me->apiserver_started && out == me->names_out))
                return r;
        _cleanup_free_ char *err = NULL;
        r = apply_node(p, started, out, &err);
        if (r < 0)
                return error_setf(ret_error, r, "applying Node %s's master label, taint and pivot turn: %s",
                                  p->settings->node_name, strna(err));
        return 0;
}

int pivot_apply(Pivot *p, const PivotDecision *d, char **ret_error) {
        int r = keep_node(p, d, ret_error);
        if (r < 0)
                return r;
        /* the names leave this master out as DNS was read: the clients' caches drain from now */
        if (d->step == PIVOT_WAIT_API_NAMES && p->settings->names_known && !p->settings->names_listed &&
            p->record.names_left_at != 0)
                return record_once(p, &p->record.names_gone_at, ret_error);
        switch (d->step) {
        case PIVOT_APPLY_ASSETS:
                return apply_assets(p, ret_error);
        case PIVOT_REMOVE_BOOTSTRAP:
                return remove_bootstrap(p, ret_error);
        case PIVOT_RESTORE_BOOTSTRAP:
                return restore_bootstrap(p, ret_error);
        case PIVOT_MARK_COMPLETE:
                return mark_complete(p, ret_error);
        case PIVOT_RENEW_CERTIFICATES:
                return renew_certificates(p, ret_error);
        case PIVOT_DONE:
                if (p->record.complete_at != 0)
                        return 0;
                p->record.complete_at = now(CLOCK_REALTIME);
                return save_record(p, ret_error);
        default:
                /* the assets may have been applied by another master: the ready deadline starts now */
                if (p->obs.api_ready && p->obs.assets_stale == 0 && p->record.assets_applied_at == 0 &&
                    d->step != PIVOT_WAIT_API) {
                        p->record.assets_applied_at = now(CLOCK_REALTIME);
                        return save_record(p, ret_error);
                }
                return 0;
        }
}
