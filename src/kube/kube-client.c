/* SPDX-License-Identifier: Apache-2.0 */
/* The client and its one way to the server: a call with bounded retries. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/backoff.h"
#include "basic/errors.h"
#include "basic/in-addr-util.h"
#include "basic/parse-util.h"
#include "basic/stop.h"
#include "basic/string-util.h"
#include "kube/kube-internal.h"
#include "shared/http-wire.h"
#include "shared/json-secret.h"

#define RETRY_AFTER_MAX (60 * USEC_PER_SEC)

static const KubeRetryPolicy retry_default = {
        .max_tries = 8,
        .backoff_initial = 200 * USEC_PER_MSEC,
        .backoff_max = 10 * USEC_PER_SEC,
        .call_timeout = 60 * USEC_PER_SEC,
        .request_timeout = 30 * USEC_PER_SEC,
};

KubeClient *kube_client_free(KubeClient *c) {
        if (!c)
                return NULL;
        free(c->server);
        free(c->ca_file);
        free(c->ca_pem);
        free(c->cert_file);
        free(c->key_file);
        free(c->connect_to);
        string_free_erase(c->authorization);
        free(c);
        return NULL;
}

static int set_server(KubeClient *c, const char *server, char **ret_error) {
        HttpUrl u;
        if (isempty(server) || string_has_cc(server) || strlen(server) > 2048 || strpbrk(server, " ?#") ||
            http_url_parse(server, &u) < 0)
                return error_setf(ret_error, -EINVAL,
                                  "invalid API server URL '%s': want https://HOST[:PORT]", strnull(server));
        /* Client certificates prove who we are, but on plain http the API's answers (Secrets) and our
         * requests travel readable and unauthenticated: only a server on this machine may be spoken to so
         * (a test's double). */
        if (!u.tls && !in_addr_host_is_loopback(u.host, strlen(u.host)))
                return error_setf(ret_error, -EINVAL,
                                  "API server URL '%s': plain http is allowed only for a loopback host "
                                  "(127.0.0.0/8, ::1, localhost): use https",
                                  server);
        char *s = strdup(server);
        if (!s)
                return -ENOMEM;
        size_t n = strlen(s);
        while (n > 0 && s[n - 1] == '/')
                s[--n] = 0;
        free(c->server);
        c->server = s;
        return 0;
}

/* The address of "HOST:PORT:ADDR:PORT" (HOST and ADDR may be bracketed IPv6 literals) is loopback. */
static bool connect_to_is_loopback(const char *to) {
        const char *p = to;
        if (*p == '[' && !(p = strchr(p, ']')))
                return false;
        if (!(p = strchr(p, ':')) || !(p = strchr(p + 1, ':')))
                return false;
        const char *addr = p + 1, *end = strrchr(addr, ':');
        return end && in_addr_host_is_loopback(addr, (size_t)(end - addr));
}

int kube_client_override(KubeClient *c, const KubeClientConfig *cfg, char **ret_error) {
        int r;
        if (cfg->server && (r = set_server(c, cfg->server, ret_error)) < 0)
                return r;
        if (cfg->ca_file && cfg->ca_pem)
                return error_setf(ret_error, -EINVAL, "the cluster's CA as a file or as text, not both");
        if ((cfg->ca_file && free_and_strdup(&c->ca_file, cfg->ca_file) < 0) ||
            (cfg->ca_pem && free_and_strdup(&c->ca_pem, cfg->ca_pem) < 0) ||
            (cfg->cert_file && free_and_strdup(&c->cert_file, cfg->cert_file) < 0) ||
            (cfg->key_file && free_and_strdup(&c->key_file, cfg->key_file) < 0))
                return -ENOMEM;
        if (cfg->connect_to) {
                if (string_has_cc(cfg->connect_to) || strlen(cfg->connect_to) > 512 ||
                    strchr(cfg->connect_to, ' ') || !strchr(cfg->connect_to, ':'))
                        return error_setf(ret_error, -EINVAL,
                                          "invalid connect-to '%s': want HOST:PORT:ADDRESS:PORT",
                                          cfg->connect_to);
                if (free_and_strdup(&c->connect_to, cfg->connect_to) < 0)
                        return -ENOMEM;
        }
        if (c->connect_to && c->server && startswith(c->server, "http://") &&
            !connect_to_is_loopback(c->connect_to))
                return error_setf(ret_error, -EINVAL,
                                  "connect-to '%s' with the plain http server '%s': plain http is allowed "
                                  "only to a loopback address",
                                  c->connect_to, c->server);
        if (cfg->bearer_token) {
                if (isempty(cfg->bearer_token) || string_has_cc(cfg->bearer_token) ||
                    strpbrk(cfg->bearer_token, " \t") || strlen(cfg->bearer_token) > 4096)
                        return error_setf(ret_error, -EINVAL, "invalid bearer token (not shown)");
                string_free_erase(c->authorization);
                if (!(c->authorization = strjoin("Authorization: Bearer ", cfg->bearer_token)))
                        return -ENOMEM;
        }
        if (c->authorization && c->cert_file)
                return error_setf(ret_error, -EINVAL,
                                  "a bearer token and a client certificate ('%s'): one identity per client",
                                  c->cert_file);
        if (!c->cert_file != !c->key_file)
                return error_setf(ret_error, -EINVAL,
                                  "a client certificate needs its key (and the other "
                                  "way round): certificate '%s', key '%s'",
                                  strnull(c->cert_file), strnull(c->key_file));
        return 0;
}

int kube_client_new(const KubeClientConfig *cfg, KubeClient **ret, char **ret_error) {
        _cleanup_(kube_client_freep) KubeClient *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->retry = retry_default;
        if (!cfg->server)
                return error_setf(ret_error, -EINVAL, "no API server URL given");
        int r = kube_client_override(c, cfg, ret_error);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(c);
        return 0;
}

void kube_client_set_retry(KubeClient *c, const KubeRetryPolicy *p) {
        c->retry.max_tries = p->max_tries ?: c->retry.max_tries;
        c->retry.backoff_initial = p->backoff_initial ?: c->retry.backoff_initial;
        c->retry.backoff_max = p->backoff_max ?: c->retry.backoff_max;
        c->retry.call_timeout = p->call_timeout ?: c->retry.call_timeout;
        c->retry.request_timeout = p->request_timeout ?: c->retry.request_timeout;
}

const char *kube_client_server(const KubeClient *c) {
        return c->server;
}

const char *kube_client_ca_file(const KubeClient *c) {
        return c->ca_file;
}

char *kube_query_escape(const char *s) {
        static const char hex[] = "0123456789ABCDEF";
        size_t n = strlen(s);
        char *e = malloc(n * 3 + 1), *p = e;
        if (!e)
                return NULL;
        for (const unsigned char *i = (const unsigned char *)s; *i; i++) {
                if ((*i >= 'a' && *i <= 'z') || (*i >= 'A' && *i <= 'Z') || (*i >= '0' && *i <= '9') ||
                    strchr("-._~", *i))
                        *p++ = (char)*i;
                else {
                        *p++ = '%';
                        *p++ = hex[*i >> 4];
                        *p++ = hex[*i & 15];
                }
        }
        *p = 0;
        return e;
}

static bool status_is_retryable(long status) {
        return status == 429 || status == 500 || status == 502 || status == 503 || status == 504;
}

/* A transport failure worth another try: not a refused certificate (the message names it), not our own
 * bad request. A server that restarts resets or refuses connections, or times out. */
static bool transport_is_retryable(int r, const char *error) {
        if (r == -EINVAL || r == -ENOMEM || r == PK_ETOOBIG || r == -ECANCELED)
                return false;
        if (error && (strstr(error, "certificate") || strstr(error, "alert") || strstr(error, "unable to")))
                return false;
        return true;
}

/* The server's wish (Retry-After in seconds, RFC 9110 §10.2.3; an HTTP-date is not used by the API), else
 * the doubling backoff; capped. */
static usec_t retry_wait(const KubeClient *c, const HttpResponse *resp, unsigned tries) {
        usec_t wait = backoff_cap(c->retry.backoff_initial, c->retry.backoff_max, tries);
        if (resp) {
                _cleanup_free_ char *ra = http_response_header(resp, "Retry-After");
                unsigned secs;
                if (ra && safe_atou(ra, &secs) >= 0)
                        wait = MIN((usec_t)secs * USEC_PER_SEC, (usec_t)RETRY_AFTER_MAX);
        }
        return wait;
}

static int call_once(KubeClient *c, const KubeCall *k, usec_t deadline, HttpResponse *ret,
                     char **ret_error) {
        _cleanup_free_ char *url = strjoin(c->server, k->path), *ct = NULL;
        const char *headers[3] = { "Accept: application/json" };
        size_t n_headers = 1;
        if (!url)
                return -ENOMEM;
        if (c->authorization)
                headers[n_headers++] = c->authorization;
        if (k->content_type) {
                ct = strjoin("Content-Type: ", k->content_type);
                if (!ct)
                        return -ENOMEM;
                headers[n_headers++] = ct;
        }
        usec_t n = now(CLOCK_MONOTONIC);
        HttpRequest req = {
                .method = k->method,
                .url = url,
                .headers = headers,
                .n_headers = n_headers,
                .body = k->body,
                .body_len = k->body_len,
                .timeout = MIN(c->retry.request_timeout, deadline > n ? deadline - n : 1),
                .max_response = KUBE_RESPONSE_MAX,
                .ca_file = c->ca_file,
                .ca_pem = c->ca_pem,
                .cert_file = c->cert_file,
                .key_file = c->key_file,
                .connect_to = c->connect_to,
                .sensitive = k->secret,
        };
        return http_request(&req, ret, ret_error);
}

/* After the last try: the last failure as it was, or the deadline's end with the last failure in it. */
static int give_up(int r, bool deadline_hit, unsigned tries, const KubeObjectRef *ref, char **last,
                   char **ret_error) {
        if (!deadline_hit) {
                if (ret_error) {
                        free(*ret_error);
                        *ret_error = TAKE_PTR(*last);
                }
                return r;
        }
        _cleanup_free_ char *who = kube_object_ref_to_string(ref);
        if (tries == 0)
                return error_setf(ret_error, PK_ETIMEOUT, "%s: the deadline passed before the first try",
                                  strnull(who));
        return error_setf(ret_error, PK_ETIMEOUT, "%s: gave up at the deadline after %u tries; last: %s",
                          strnull(who), tries, strnull(*last));
}

int kube_call(KubeClient *c, const KubeCall *k, HttpResponse *ret, char **ret_error) {
        usec_t deadline = k->deadline ?: now(CLOCK_MONOTONIC) + c->retry.call_timeout;
        _cleanup_free_ char *last = NULL;
        int r = PK_ETIMEOUT;

        for (unsigned tries = 1;; tries++) {
                HttpResponse resp = {};
                bool again;
                usec_t wait;
                free(last);
                last = NULL;
                if (now(CLOCK_MONOTONIC) >= deadline)
                        return give_up(r, true, tries - 1, k->ref, &last, ret_error);
                r = call_once(c, k, deadline, &resp, &last);
                if (r >= 0 && (k->any_status || (resp.status >= 200 && resp.status < 300))) {
                        *ret = resp;
                        return 0;
                }
                if (r < 0) {
                        again = transport_is_retryable(r, last);
                        wait = retry_wait(c, NULL, tries);
                } else {
                        again = status_is_retryable(resp.status);
                        r = kube_status_error(resp.status, resp.body, resp.body_len, k->ref, k->secret,
                                              &last);
                        wait = retry_wait(c, &resp, tries);
                        http_response_done(&resp);
                }
                if (!again || k->no_retry || tries >= c->retry.max_tries)
                        return give_up(r, false, tries, k->ref, &last, ret_error);
                /* A wait that would end past the deadline ends the retries now: no try would follow it. */
                if (now(CLOCK_MONOTONIC) + wait >= deadline)
                        return give_up(r, true, tries, k->ref, &last, ret_error);
                int s = sleep_usec(wait);
                if (s < 0)
                        return error_setf(ret_error, s, "stopped while waiting to retry: %s", strnull(last));
        }
}

int kube_response_json(const HttpResponse *resp, const KubeObjectRef *ref, json_t **ret, char **ret_error) {
        json_error_t e;
        /* a Secret's body (the request said so): parsed without leaving copies in freed memory */
        json_t *j = resp->sensitive ? json_loadb_secret(resp->body, resp->body_len, 0, &e)
                                    : json_loadb(resp->body, resp->body_len, 0, &e);
        if (!json_is_object(j)) {
                _cleanup_free_ char *who = kube_object_ref_to_string(ref);
                if (resp->sensitive)
                        json_erase_values(j);
                json_decref(j);
                /* e.text may quote the body: only the position is given */
                return error_setf(ret_error, PK_EMALFORMED,
                                  "%s: the server's answer (%zu bytes) is not a JSON object (at byte %d)",
                                  strnull(who), resp->body_len, e.position);
        }
        *ret = j;
        return 0;
}
