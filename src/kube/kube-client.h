/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A Kubernetes API client over shared/http.h and jansson (docs/kube-client.md): mutual TLS with a client
 * certificate, get / list / delete / server-side apply (fieldManager protokube, force: every write is
 * idempotent), the API's Status objects as errors, retries on 429, 5xx and transport errors with bounded
 * exponential backoff that honours Retry-After, /readyz and /livez probes, and a bounded poll.
 *
 * Every call takes a deadline (CLOCK_MONOTONIC, absolute; 0: now + the policy's call_timeout) that bounds
 * all of its tries and waits; waits go through sleep_usec(), so a stop request ends them (-ECANCELED).
 * Errors: a code (kube_status_to_errno(), PK_ETIMEOUT when the deadline ended the retries, the transport's
 * codes) and a message in *ret_error (caller frees) naming the object: "ConfigMap ns/x: 422 Invalid: ...".
 * A request or response body is never put in a message, and those of a Secret are erased after use. */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "basic/macro.h"
#include "basic/time-util.h"

#define KUBE_FIELD_MANAGER "protokube"
#define KUBE_RESPONSE_MAX  (16U * 1024U * 1024U)

typedef struct KubeClient KubeClient;

typedef struct KubeClientConfig {
        const char *server;    /* https://host[:port] (http:// only for tests on loopback) */
        const char *ca_file;   /* the cluster CA (PEM); NULL: the system's CAs */
        const char *ca_pem;    /* or the cluster CA as text (held in memory only); not with ca_file */
        const char *cert_file; /* client certificate and its key (PEM), both or neither */
        const char *key_file;
        /* "HOST:PORT:ADDR:PORT": connect to ADDR:PORT where the server URL names HOST:PORT, checking the
         * certificate against HOST (shared/http.h): one apiserver among those behind a shared name. */
        const char *connect_to;
        /* A bearer token (a worker's bootstrap token before its kubelet has a certificate): sent as
         * "Authorization: Bearer" on every request, never logged, erased when the client is freed; not
         * with a client certificate (one identity per client). Plain http stays loopback's alone. */
        const char *bearer_token;
} KubeClientConfig;

typedef struct KubeRetryPolicy {
        unsigned max_tries;     /* tries of one request, the first included; default 8 */
        usec_t backoff_initial; /* the wait after the first failure, doubled after each; default 200 ms */
        usec_t backoff_max;     /* cap of the backoff; default 10 s (a Retry-After is capped at 60 s) */
        usec_t call_timeout;    /* a call's deadline when it is given none; default 60 s */
        usec_t request_timeout; /* one exchange; default 30 s (never past the deadline) */
} KubeRetryPolicy;

int kube_client_new(const KubeClientConfig *cfg, KubeClient **ret, char **ret_error);
/* From a kubeconfig naming files (certificate-authority, client-certificate, client-key), as protokube's
 * are (pki/pki-kubeconfig.h): the current context's cluster and user. Embedded *-data credentials are
 * refused with a clear error. Relative paths are relative to the kubeconfig's directory. */
int kube_client_new_from_kubeconfig(const char *path, KubeClient **ret, char **ret_error);
KubeClient *kube_client_free(KubeClient *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(KubeClient *, kube_client_free)

/* Fields left 0 keep their defaults. */
void kube_client_set_retry(KubeClient *c, const KubeRetryPolicy *p);
/* Overrides the kubeconfig's (or config's) values; NULL keeps one. */
int kube_client_override(KubeClient *c, const KubeClientConfig *cfg, char **ret_error);
const char *kube_client_server(const KubeClient *c);
/* The CA file the client trusts the server by; NULL: the system's CAs. */
const char *kube_client_ca_file(const KubeClient *c);

/* The object, or -ENOENT (and a message) when it does not exist. Caller decrefs *ret; a Secret's holds its
 * data: the caller keeps it from logs and erases it before the decref (json_erase_values()). A Secret's
 * body is parsed without leaving copies (shared/json-secret.h). */
int kube_get(KubeClient *c, const char *api_version, const char *kind, const char *ns, const char *name,
             usec_t deadline, json_t **ret, char **ret_error);
#define KUBE_LIST_PAGE_SIZE 500U /* objects per page: ~2 MB of pods, far below KUBE_RESPONSE_MAX */
#define KUBE_LIST_PAGES_MAX 100U /* pages of one list: a list that can grow without bound is an error */

typedef struct KubeListOptions {
        const char
            *label_selector; /* "app.kubernetes.io/managed-by=protokube,k8s-app in (a,b)"; NULL: none */
        const char *field_selector; /* "spec.nodeName=m1"; NULL: none */
        unsigned page_size;         /* the limit of each request; 0: KUBE_LIST_PAGE_SIZE */
        unsigned max_pages;         /* 0: KUBE_LIST_PAGES_MAX; more is PK_ETOOBIG */
} KubeListOptions;

/* The list object (its "items") of every page: GET of the collection with limit, the selectors and, while
 * the server returns one, its continue token. One deadline bounds every page; a continue token that
 * expired (410) starts the list again once. ns NULL or "" for a namespaced kind: every namespace. o may be
 * NULL (no selectors). A list of Secrets has each page's body erased. */
int kube_list_with(KubeClient *c, const char *api_version, const char *kind, const char *ns,
                   const KubeListOptions *o, usec_t deadline, json_t **ret, char **ret_error);
/* kube_list_with() with a label selector only (may be NULL). */
int kube_list(KubeClient *c, const char *api_version, const char *kind, const char *ns,
              const char *label_selector, usec_t deadline, json_t **ret, char **ret_error);

typedef struct KubePreconditions {
        const char *uid;              /* NULL: any */
        const char *resource_version; /* NULL: any */
} KubePreconditions;
/* Deletes (propagationPolicy Background). -ENOENT when already gone, PK_ECONFLICT when a precondition does
 * not hold. pre may be NULL. */
int kube_delete(KubeClient *c, const char *api_version, const char *kind, const char *ns, const char *name,
                const KubePreconditions *pre, usec_t deadline, char **ret_error);

/* Server-side apply of one object: PATCH with Content-Type application/apply-patch+yaml, fieldManager
 * protokube, force=true. A namespaced object without metadata.namespace goes to "default". *ret (may be
 * NULL) gets the object as the server stored it; a Secret's without its data and stringData (erased: the
 * caller has them). */
int kube_apply(KubeClient *c, const json_t *obj, usec_t deadline, json_t **ret, char **ret_error);
/* A JSON merge patch (RFC 7386) of one object, fieldManager protokube: only the fields it names change, so
 * it leaves what others own alone (an upgrade made through the API keeps its changes). Not for Secrets.
 * -ENOENT when the object does not exist. */
int kube_merge_patch(KubeClient *c, const char *api_version, const char *kind, const char *ns,
                     const char *name, const json_t *patch, usec_t deadline, char **ret_error);
/* Creates obj (POST to its collection, fieldManager protokube): the API's create-if-absent, -EEXIST when an
 * object of that name exists (409 AlreadyExists). A namespaced object without metadata.namespace goes to
 * "default". *ret (may be NULL) gets the stored object; a Secret's without its data (erased). The body is
 * erased after the call. A create whose answer was lost is tried again and then answers -EEXIST: a caller
 * that must know reads the object back. */
int kube_create(KubeClient *c, const json_t *obj, usec_t deadline, json_t **ret, char **ret_error);
/* Replaces obj (PUT), or its subresource ("status", "approval"; NULL: the object itself), as a
 * compare-and-set: obj's metadata.resourceVersion is required, and PK_ECONFLICT (409 Conflict) says the
 * object changed since it was read at that version (another writer won; read it again). -ENOENT when it
 * does not exist. *ret as for kube_create(). A replace whose answer was lost is tried again and then answers
 * PK_ECONFLICT: the object is read again in any case. */
int kube_replace(KubeClient *c, const json_t *obj, const char *subresource, usec_t deadline, json_t **ret,
                 char **ret_error);
/* One object as YAML or JSON text, sent as written; its identity (apiVersion, kind, metadata.name and
 * namespace) read from it. */
int kube_apply_document(KubeClient *c, const char *text, size_t len, usec_t deadline, json_t **ret,
                        char **ret_error);
/* The same for the objects of a text: YAML documents separated by "---" lines (kubectl's rule: "---" and
 * nothing but blanks; JSON is YAML), each sent as
 * written. Applied in order; the first failure ends it, its message naming the document ("document 2:
 * ..."). *ret (may be NULL) gets an array of the stored objects. Empty documents are skipped. */
int kube_apply_text(KubeClient *c, const char *text, size_t len, usec_t deadline, json_t **ret,
                    char **ret_error);

/* GET /readyz or /livez (endpoint "readyz", "livez") once, no retry: 0 when the server answers 200, else
 * -EIO (or the transport's code) and a message with the failing checks ("[-]etcd failed"). */
int kube_probe(KubeClient *c, const char *endpoint, usec_t deadline, char **ret_error);

/* Probes every interval until the server answers 200 (0) or the deadline passes (PK_ETIMEOUT, with the
 * last probe's failure in the message); -ECANCELED on a stop request. Each probe is given at least 5 s
 * (or an interval), the last one too: an apiserver without etcd answers /readyz only after seconds. */
int kube_wait_probe(KubeClient *c, const char *endpoint, usec_t interval, usec_t deadline, char **ret_error);

/* A condition over a fetched object: obj is NULL when the object does not exist. > 0 met, 0 not yet (*why
 * may say what is missing; caller of the predicate frees), < 0 an error that ends the poll. */
typedef int (*KubePredicate)(const json_t *obj, void *userdata, char **why);

/* Gets the object every interval until pred holds (0; *ret, may be NULL, gets the object, may be NULL for
 * an absent one) or the deadline passes (PK_ETIMEOUT, the message holds the predicate's last why). A failed
 * get other than 404 is tried again at the next interval; its message is kept for the timeout's. The last
 * try falls on the deadline (deadline_sleep()) and is given at least 5 s (or an interval) to answer. */
int kube_poll(KubeClient *c, const char *api_version, const char *kind, const char *ns, const char *name,
              KubePredicate pred, void *userdata, usec_t interval, usec_t deadline, json_t **ret,
              char **ret_error);
