/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared by the files of the kube room; not for other rooms. */

#include "kube/kube-client.h"
#include "kube/kube-status.h"
#include "shared/http.h"

/* The time a poll's or a wait's try has at least: deadline_sleep() lets the last try fall on the deadline,
 * and an apiserver whose etcd is down answers /readyz only after its etcd check's own timeout (seconds). */
#define KUBE_LAST_TRY_MIN (5 * USEC_PER_SEC)

struct KubeClient {
        char *server; /* without a trailing slash */
        char *ca_file, *ca_pem, *cert_file, *key_file;
        char *connect_to;    /* NULL: where the server URL says */
        char *authorization; /* "Authorization: Bearer ..." (a secret: erased when freed); NULL: none */
        KubeRetryPolicy retry;
};

typedef struct KubeCall {
        const char *method;
        const char *path; /* "/api/v1/...?query", already escaped */
        const char *content_type;
        const char *body;
        size_t body_len;
        const KubeObjectRef *ref; /* for messages */
        bool secret;              /* a Secret's body travels: erase both bodies */
        bool no_retry;            /* probes: one try */
        bool any_status;          /* probes: every HTTP status is an answer (0 and *ret) */
        usec_t deadline;          /* absolute, CLOCK_MONOTONIC; 0: now + call_timeout */
} KubeCall;

/* One call with its retries. 0 with *ret holding a 2xx response (http_response_done() it); else the code
 * and a message. */
int kube_call(KubeClient *c, const KubeCall *k, HttpResponse *ret, char **ret_error);

/* The body of a 2xx response as a JSON object; PK_EMALFORMED otherwise. */
int kube_response_json(const HttpResponse *resp, const KubeObjectRef *ref, json_t **ret, char **ret_error);

/* Percent-encodes s for a query value (RFC 3986 §2.3 unreserved characters stay). Caller frees. */
char *kube_query_escape(const char *s);

/* The identity of one YAML document (JSON is YAML). -EINVAL with a message naming the missing field. */
typedef struct KubeDocIdentity {
        char *api_version, *kind, *ns, *name;
} KubeDocIdentity;
int kube_doc_identity(const char *text, size_t len, KubeDocIdentity *ret, char **ret_error);
void kube_doc_identity_done(KubeDocIdentity *id);

/* The next document of a YAML stream: starts at *pos, ends before a line of "---" and blanks (kubectl's
 * separator) or at len; *pos moves past it. false once the text is consumed. */
bool kube_next_document(const char *text, size_t len, size_t *pos, const char **ret_doc, size_t *ret_len);
