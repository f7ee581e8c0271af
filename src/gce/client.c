/* SPDX-License-Identifier: Apache-2.0 */
#include "gce/client.h"

#include <pthread.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/gce-names.h"
#include "basic/string-util.h"
#include "shared/http-wire.h"
#include "shared/http.h"
#include "shared/json-secret.h"
#include "shared/json-util.h"
#include "shared/retry.h"

#define ERROR_TEXT_MAX 512
/* Each exchange, and each call with its retries: at most 8 tries, pauses of full jitter over 200 ms doubling
 * up to 20 s, 2 minutes in all (as the AWS client's defaults). */
#define EXCHANGE_TIMEOUT (30 * USEC_PER_SEC)
static const RetryPolicy call_policy = {
        .max_attempts = 8,
        .backoff_base = 200 * USEC_PER_MSEC,
        .backoff_max = 20 * USEC_PER_SEC,
        .call_timeout = 120 * USEC_PER_SEC,
};

struct GceClient {
        char *endpoints[_GCE_SERVICE_MAX];
        char *ca_bundle;
        GceServiceAccountKey *key; /* GOOGLE_APPLICATION_CREDENTIALS; NULL: the metadata server */
        GceMetadata *metadata;
        GceToken token;
        char *project;
};

static const char *const service_names[_GCE_SERVICE_MAX] = {
        [GCE_SERVICE_COMPUTE] = "compute",
        [GCE_SERVICE_DNS] = "dns",
        [GCE_SERVICE_STORAGE] = "storage",
        [GCE_SERVICE_STORAGE_UPLOAD] = "storage",
};

/* Google's public hosts, and each API's path below them (the same path below PROTOKUBE_GCE_ENDPOINT). */
static const char *const service_hosts[_GCE_SERVICE_MAX] = {
        [GCE_SERVICE_COMPUTE] = "https://compute.googleapis.com",
        [GCE_SERVICE_DNS] = "https://dns.googleapis.com",
        [GCE_SERVICE_STORAGE] = "https://storage.googleapis.com",
        [GCE_SERVICE_STORAGE_UPLOAD] = "https://storage.googleapis.com",
};
static const char *const service_paths[_GCE_SERVICE_MAX] = {
        [GCE_SERVICE_COMPUTE] = "/compute/v1",
        [GCE_SERVICE_DNS] = "/dns/v1",
        [GCE_SERVICE_STORAGE] = "/storage/v1",
        [GCE_SERVICE_STORAGE_UPLOAD] = "/upload/storage/v1",
};

/* Process-wide, for every client: the token cache below and the metadata server's project. */
static pthread_mutex_t token_cache_lock = PTHREAD_MUTEX_INITIALIZER;
static char *metadata_project;

const char *gce_service_to_string(GceService s) {
        return s >= 0 && s < _GCE_SERVICE_MAX ? service_names[s] : NULL;
}

GceClient *gce_client_free(GceClient *c) {
        if (!c)
                return NULL;
        for (size_t i = 0; i < _GCE_SERVICE_MAX; i++)
                free(c->endpoints[i]);
        free(c->ca_bundle);
        if (c->key) {
                gce_service_account_key_done(c->key);
                free(c->key);
        }
        gce_metadata_free(c->metadata);
        gce_token_done(&c->token);
        free(c->project);
        free(c);
        return NULL;
}

static int client_read_key(GceClient *c, const char *path, char **ret_error) {
        c->key = new0(GceServiceAccountKey, 1);
        if (!c->key)
                return -ENOMEM;
        int r = gce_service_account_key_load(path, c->key, ret_error);
        if (r < 0) {
                free(c->key);
                c->key = NULL;
        }
        return r;
}

int gce_client_new(GceClient **ret, char **ret_error) {
        _cleanup_(gce_client_freep) GceClient *c = new0(GceClient, 1);
        _cleanup_free_ char *base = NULL;
        const char *endpoint = getenv(GCE_ENDPOINT_ENV), *ca = getenv(GCE_CA_BUNDLE_ENV),
                   *key = getenv(GCE_KEY_FILE_ENV);
        int r;

        if (!c)
                return -ENOMEM;
        if (!isempty(endpoint)) {
                r = http_endpoint_copy(GCE_ENDPOINT_ENV, endpoint, &base, ret_error);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < _GCE_SERVICE_MAX; i++) {
                c->endpoints[i] = strjoin(base ?: service_hosts[i], service_paths[i]);
                if (!c->endpoints[i])
                        return -ENOMEM;
        }
        if (!isempty(ca) && !(c->ca_bundle = strdup(ca)))
                return -ENOMEM;
        if (!isempty(key)) {
                r = client_read_key(c, key, ret_error);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(c);
        return 0;
}

int gce_client_metadata(GceClient *c, GceMetadata **ret, char **ret_error) {
        if (!c->metadata) {
                int r = gce_metadata_new(NULL, &c->metadata, ret_error);
                if (r < 0)
                        return r;
        }
        *ret = c->metadata;
        return 0;
}

/* The metadata server's project, asked once per process (it never changes); NULL until then. */
static char *metadata_project_copy(void) {
        pthread_mutex_lock(&token_cache_lock);
        char *p = metadata_project ? strdup(metadata_project) : NULL;
        pthread_mutex_unlock(&token_cache_lock);
        return p;
}

static void metadata_project_keep(const char *project) {
        pthread_mutex_lock(&token_cache_lock);
        if (!metadata_project)
                metadata_project = strdup(project);
        pthread_mutex_unlock(&token_cache_lock);
}

static int project_from_metadata(GceClient *c, char **ret, char **ret_error) {
        _cleanup_free_ char *err = NULL;
        GceMetadata *m;
        if ((*ret = metadata_project_copy()))
                return 0;
        int r = gce_client_metadata(c, &m, &err);
        if (r >= 0)
                r = gce_metadata_get(m, "project/project-id", ret, &err);
        if (r < 0)
                return error_setf(ret_error, r, "no project: set %s, or run on GCE (%s)", GCE_PROJECT_ENV,
                                  err ?: pk_strerror(r));
        if (gce_project_valid(*ret))
                metadata_project_keep(*ret);
        return 0;
}

int gce_client_project(GceClient *c, const char **ret, char **ret_error) {
        const char *env = getenv(GCE_PROJECT_ENV);
        int r = 0;

        if (!c->project) {
                if (!isempty(env))
                        c->project = strdup(env);
                else if (c->key && c->key->project_id)
                        c->project = strdup(c->key->project_id);
                else if ((r = project_from_metadata(c, &c->project, ret_error)) < 0)
                        return r;
                if (!c->project)
                        return -ENOMEM;
                if (!gce_project_valid(c->project)) {
                        r = error_setf(ret_error, -EINVAL, "project '%s' is not a valid project id",
                                       c->project);
                        free(c->project);
                        c->project = NULL;
                        return r;
                }
        }
        *ret = c->project;
        return 0;
}

/* One token per credential (the key's account, or the metadata server) for the whole process: the volume
 * provider, the DNS provider and the store each have a client, and a pass opens some of them anew, but a
 * token serves them all until it is due for renewal (a JWT exchange per client and pass would be a token
 * request per API call). */
static struct {
        char *source;
        GceToken token;
} token_cache;

static char *token_source(GceClient *c) {
        return c->key ? strjoin("key:", c->key->client_email, " ", c->key->token_uri) : strdup("metadata");
}

/* A copy of the cached token of source when it is not due for renewal. */
static int token_cache_get(const char *source, GceToken *ret) {
        int r = -ENOENT;
        pthread_mutex_lock(&token_cache_lock);
        if (token_cache.token.access_token && streq_ptr(token_cache.source, source) &&
            now(CLOCK_MONOTONIC) < token_cache.token.renew_at) {
                *ret = token_cache.token;
                ret->access_token = strdup(token_cache.token.access_token);
                r = ret->access_token ? 0 : -ENOMEM;
        }
        pthread_mutex_unlock(&token_cache_lock);
        return r;
}

static void token_cache_put(const char *source, const GceToken *t) {
        char *copy = strdup(t->access_token), *src = strdup(source);
        pthread_mutex_lock(&token_cache_lock);
        if (copy && src) {
                gce_token_done(&token_cache.token);
                free(token_cache.source);
                token_cache.token = *t;
                token_cache.token.access_token = TAKE_PTR(copy);
                token_cache.source = TAKE_PTR(src);
        }
        pthread_mutex_unlock(&token_cache_lock);
        string_free_erase(copy);
        free(src);
}

/* Forgets the cached token of source (the API refused it: revoked, or expired early). */
static void token_cache_drop(const char *source) {
        pthread_mutex_lock(&token_cache_lock);
        if (streq_ptr(token_cache.source, source))
                gce_token_done(&token_cache.token);
        pthread_mutex_unlock(&token_cache_lock);
}

static int token_fetch(GceClient *c, GceToken *ret, char **ret_error) {
        GceMetadata *m;
        if (c->key)
                return gce_token_from_key(c->key, GCE_SCOPE_CLOUD_PLATFORM, c->ca_bundle, ret, ret_error);
        int r = gce_client_metadata(c, &m, ret_error);
        return r < 0 ? r : gce_metadata_token(m, ret, ret_error);
}

/* A token that is not due for renewal: this client's, the process's, or a new one. */
static int client_token(GceClient *c, const char **ret, char **ret_error) {
        _cleanup_free_ char *source = NULL;
        GceToken t = {};
        int r;

        if (c->token.access_token && now(CLOCK_MONOTONIC) < c->token.renew_at) {
                *ret = c->token.access_token;
                return 0;
        }
        source = token_source(c);
        if (!source)
                return -ENOMEM;
        r = token_cache_get(source, &t);
        if (r == -ENOENT) {
                r = token_fetch(c, &t, ret_error);
                if (r >= 0) {
                        token_cache_put(source, &t);
                }
        }
        if (r < 0) {
                /* A token still valid serves until it expires: the next call tries again. */
                if (c->token.access_token && now(CLOCK_MONOTONIC) < c->token.expires_at) {
                        *ret = c->token.access_token;
                        return 0;
                }
                return r;
        }
        gce_token_done(&c->token);
        c->token = t;
        *ret = c->token.access_token;
        return 0;
}

/* The API refused the token: neither this client nor the process uses it again. */
static void client_token_drop(GceClient *c) {
        _cleanup_free_ char *source = token_source(c);
        if (source)
                token_cache_drop(source);
        gce_token_done(&c->token);
}

/* Server text goes into our messages: one bounded printable line. */
static char *sanitize(const char *s) {
        return s ? string_one_line(s, ERROR_TEXT_MAX) : NULL;
}

void gce_error_document_parse(const void *data, size_t len, char **ret_message, char **ret_status,
                              char **ret_reason) {
        json_t *j = len > 0 ? json_loadb(data, len, 0, NULL) : NULL;
        const json_t *errs = json_get(j, "error", "errors");
        *ret_message = sanitize(json_get_string(j, "error", "message"));
        *ret_status = sanitize(json_get_string(j, "error", "status"));
        *ret_reason = sanitize(json_get_string(json_array_get(errs, 0), "reason"));
        json_decref(j);
}

static int error_code_map(const GceCall *call, long status, const char *reason) {
        for (const GceErrorCode *e = call->error_codes; e && e->r != 0; e++)
                if ((e->status == 0 || e->status == status) && (!e->reason || streq_ptr(reason, e->reason)))
                        return e->r;
        return PK_ECLOUD;
}

/* Throttling and server-side failures are worth another try; Google says "rate limit" with 429, and with
 * 403 and these reasons in older APIs (Cloud DNS, Cloud Storage). */
static bool is_retryable(long status, const char *reason) {
        return status == 429 || status >= 500 ||
               (status == 403 &&
                (streq_ptr(reason, "rateLimitExceeded") || streq_ptr(reason, "userRateLimitExceeded")));
}

static RetryVerdict judge_response(const GceCall *call, const HttpResponse *resp, int *ret_r,
                                   char **ret_error) {
        if (resp->status >= 200 && resp->status < 300) {
                *ret_r = 0;
                return RETRY_DONE;
        }
        _cleanup_free_ char *msg = NULL, *status = NULL, *reason = NULL;
        gce_error_document_parse(resp->body, resp->body_len, &msg, &status, &reason);
        *ret_r =
            error_setf(ret_error, error_code_map(call, resp->status, reason),
                       "%s %s: HTTP %ld %s: %s (reason %s)", service_names[call->service], call->operation,
                       resp->status, status ?: "", msg ?: "no error message", reason ?: "none");
        if (resp->status == 401)
                return RETRY_AGAIN_NOW;
        return is_retryable(resp->status, reason) ? RETRY_AGAIN : RETRY_FAIL;
}

typedef struct CallOutput {
        json_t **json;
        char **raw;
        size_t *raw_len;
} CallOutput;

static int take_output(const GceCall *call, HttpResponse *resp, const CallOutput *out, char **ret_error) {
        if (out->raw) {
                if (!resp->body && !(resp->body = strdup("")))
                        return -ENOMEM;
                *out->raw = TAKE_PTR(resp->body);
                *out->raw_len = resp->body_len;
                return 0;
        }
        json_t *j = NULL;
        if (resp->body_len > 0) {
                j = call->sensitive ? json_loadb_secret(resp->body, resp->body_len, 0, NULL)
                                    : json_loadb(resp->body, resp->body_len, 0, NULL);
                if (!j)
                        return error_setf(
                            ret_error, PK_EMALFORMED, "%s %s: unparsable response (HTTP %ld, %zu bytes)",
                            service_names[call->service], call->operation, resp->status, resp->body_len);
        }
        if (out->json)
                *out->json = j;
        else
                json_decref(j);
        return 0;
}

static int send_once(GceClient *c, const GceCall *call, usec_t deadline, const CallOutput *out,
                     RetryVerdict *ret_outcome, char **ret_error) {
        _cleanup_free_ char *err = NULL, *url = NULL, *ctype = NULL;
        _cleanup_erase_free_ char *auth = NULL;
        const char *token, *headers[3];
        size_t n_headers = 0;
        HttpResponse resp;
        usec_t t = now(CLOCK_MONOTONIC);
        int r;

        *ret_outcome = RETRY_FAIL;
        r = client_token(c, &token, &err);
        if (r < 0) {
                *ret_outcome = retry_transport_error(r) || r == PK_ECLOUD ? RETRY_AGAIN : RETRY_FAIL;
                return error_setf(ret_error, r, "%s %s: no access token: %s", service_names[call->service],
                                  call->operation, err ?: pk_strerror(r));
        }
        url = strprintf("%s%s%s%s", c->endpoints[call->service], call->path, isempty(call->query) ? "" : "?",
                        strempty(call->query));
        auth = strjoin("Authorization: Bearer ", token);
        ctype = call->content_type ? strjoin("Content-Type: ", call->content_type) : NULL;
        if (!url || !auth || (call->content_type && !ctype))
                return -ENOMEM;
        headers[n_headers++] = auth;
        headers[n_headers++] = "Accept: application/json";
        if (ctype)
                headers[n_headers++] = ctype;
        HttpRequest hr = {
                .method = call->method,
                .url = url,
                .headers = headers,
                .n_headers = n_headers,
                .body = call->body,
                .body_len = call->body_len,
                .timeout = MAX(MIN(EXCHANGE_TIMEOUT, deadline > t ? deadline - t : 0), USEC_PER_MSEC),
                .max_response = GCE_RESPONSE_MAX,
                .ca_file = c->ca_bundle,
                .via_proxy = true, /* Google's APIs and the store: outside the cluster */
                .sensitive = call->sensitive,
        };
        r = http_request(&hr, &resp, &err);
        if (r < 0) {
                *ret_outcome = retry_transport_error(r) ? RETRY_AGAIN : RETRY_FAIL;
                return error_setf(ret_error, r, "%s %s: %s", service_names[call->service], call->operation,
                                  err ?: pk_strerror(r));
        }
        *ret_outcome = judge_response(call, &resp, &r, ret_error);
        if (*ret_outcome == RETRY_AGAIN_NOW)
                client_token_drop(c);
        if (*ret_outcome == RETRY_DONE) {
                r = take_output(call, &resp, out, ret_error);
                if (r < 0)
                        *ret_outcome = RETRY_FAIL;
        }
        http_response_done(&resp);
        return r;
}

typedef struct CallAttempt {
        GceClient *client;
        const GceCall *call;
        const CallOutput *out;
} CallAttempt;

static int call_attempt(void *userdata, usec_t deadline, RetryVerdict *ret_verdict, char **ret_error) {
        CallAttempt *a = userdata;
        return send_once(a->client, a->call, deadline, a->out, ret_verdict, ret_error);
}

static int call_with_retries(GceClient *c, const GceCall *call, const CallOutput *out, char **ret_error) {
        if (!call || call->service < 0 || call->service >= _GCE_SERVICE_MAX || isempty(call->operation) ||
            isempty(call->method) || isempty(call->path))
                return error_setf(ret_error, -EINVAL, "invalid Google API call");
        CallAttempt a = { c, call, out };
        return retry_call(&call_policy, call_attempt, &a, NULL, ret_error);
}

int gce_client_call(GceClient *c, const GceCall *call, json_t **ret, char **ret_error) {
        CallOutput out = { .json = ret };
        if (ret)
                *ret = NULL;
        return call_with_retries(c, call, &out, ret_error);
}

int gce_client_call_raw(GceClient *c, const GceCall *call, char **ret_body, size_t *ret_len,
                        char **ret_error) {
        CallOutput out = { .raw = ret_body, .raw_len = ret_len };
        return call_with_retries(c, call, &out, ret_error);
}
