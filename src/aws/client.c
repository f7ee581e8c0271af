/* SPDX-License-Identifier: Apache-2.0 */
#include "aws/client.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include "aws/sigv4.h"
#include "basic/aws-names.h"
#include "basic/errors.h"
#include "basic/in-addr-util.h"
#include "basic/string-util.h"
#include "shared/http-wire.h"
#include "shared/http.h"
#include "shared/retry.h"

#define CREDENTIALS_RENEW_MARGIN (5 * 60 * USEC_PER_SEC)
#define ERROR_TEXT_MAX           512

struct AwsClient {
        char *region;
        char *endpoints[_AWS_SERVICE_MAX];
        bool endpoint_given[_AWS_SERVICE_MAX]; /* from the environment, not the public default */
        char *ca_bundle; /* AWS_CA_BUNDLE: the CAs the endpoints' https certificates chain to */
        bool imds_disabled;
        AwsImds *imds;
        AwsCredentials *creds;
        bool creds_fixed; /* set by the caller: never looked up again */
        unsigned max_attempts;
        usec_t backoff_base, backoff_max;
        usec_t call_timeout, exchange_timeout;
        unsigned retries;
};

static const char *const service_names[_AWS_SERVICE_MAX] = {
        [AWS_SERVICE_EC2] = "ec2",
        [AWS_SERVICE_ROUTE53] = "route53",
        [AWS_SERVICE_S3] = "s3",
};

/* The SDKs' service-specific endpoint variables (AWS SDKs and Tools Reference, "Service-specific
 * endpoints"). */
static const char *const service_endpoint_env[_AWS_SERVICE_MAX] = {
        [AWS_SERVICE_EC2] = "AWS_ENDPOINT_URL_EC2",
        [AWS_SERVICE_ROUTE53] = "AWS_ENDPOINT_URL_ROUTE_53",
        [AWS_SERVICE_S3] = "AWS_ENDPOINT_URL_S3",
};

const char *aws_service_to_string(AwsService s) {
        return s >= 0 && s < _AWS_SERVICE_MAX ? service_names[s] : NULL;
}

AwsClient *aws_client_free(AwsClient *c) {
        if (!c)
                return NULL;
        free(c->region);
        free(c->ca_bundle);
        for (size_t i = 0; i < _AWS_SERVICE_MAX; i++)
                free(c->endpoints[i]);
        aws_imds_free(c->imds);
        aws_credentials_free(c->creds);
        free(c);
        return NULL;
}

int aws_client_new(AwsClient **ret, char **ret_error) {
        _cleanup_(aws_client_freep) AwsClient *c = new0(AwsClient, 1);
        const char *region, *region_var, *common = getenv("AWS_ENDPOINT_URL"),
                                         *dis = getenv("AWS_EC2_METADATA_DISABLED");
        int r;

        if (!c)
                return -ENOMEM;
        c->max_attempts = 8;
        c->backoff_base = 200 * USEC_PER_MSEC;
        c->backoff_max = 20 * USEC_PER_SEC;
        c->call_timeout = 120 * USEC_PER_SEC;
        c->exchange_timeout = 30 * USEC_PER_SEC;
        c->imds_disabled = dis && strcasecmp(dis, "true") == 0;

        region_var = "AWS_REGION";
        region = getenv(region_var);
        if (isempty(region)) {
                region_var = "AWS_DEFAULT_REGION";
                region = getenv(region_var);
        }
        if (!isempty(region)) {
                /* it becomes part of host names: "x#" would send the signed call to host ec2.x */
                if (!aws_region_name_valid(region))
                        return error_setf(ret_error, -EINVAL, "%s='%s' is not a region name", region_var,
                                          region);
                c->region = strdup(region);
                if (!c->region)
                        return -ENOMEM;
        }
        for (AwsService s = 0; s < _AWS_SERVICE_MAX; s++) {
                const char *var = service_endpoint_env[s], *e = getenv(var);
                if (isempty(e)) {
                        var = "AWS_ENDPOINT_URL";
                        e = common;
                }
                if (isempty(e))
                        continue; /* the public endpoint, once the region is known */
                r = http_endpoint_copy(var, e, &c->endpoints[s], ret_error);
                if (r < 0)
                        return r;
                c->endpoint_given[s] = true;
        }
        /* The SDKs' variable for a private CA (a VPC endpoint behind a TLS-inspecting proxy, a test double)
         */
        const char *ca = getenv("AWS_CA_BUNDLE");
        if (!isempty(ca) && !(c->ca_bundle = strdup(ca)))
                return -ENOMEM;
        *ret = TAKE_PTR(c);
        return 0;
}

void aws_client_set_credentials(AwsClient *c, AwsCredentials *creds) {
        aws_credentials_free(c->creds);
        c->creds = creds;
        c->creds_fixed = true;
}

void aws_client_set_retry(AwsClient *c, unsigned max_attempts, usec_t base, usec_t max) {
        c->max_attempts = MAX(max_attempts, 1U);
        c->backoff_base = base;
        c->backoff_max = MAX(max, base);
}

void aws_client_set_timeouts(AwsClient *c, usec_t call, usec_t exchange) {
        c->call_timeout = call;
        c->exchange_timeout = exchange;
}

unsigned aws_client_retries(const AwsClient *c) {
        return c->retries;
}

int aws_client_imds(AwsClient *c, AwsImds **ret) {
        if (c->imds_disabled)
                return -ENXIO;
        if (!c->imds) {
                int r = aws_imds_new(NULL, &c->imds);
                if (r < 0)
                        return r;
        }
        *ret = c->imds;
        return 0;
}

int aws_client_region(AwsClient *c, const char **ret, char **ret_error) {
        AwsImds *m;
        if (!c->region) {
                _cleanup_free_ char *err = NULL;
                int r = aws_client_imds(c, &m);
                if (r < 0)
                        return error_setf(ret_error, r,
                                          "no region: AWS_REGION is not set and IMDS is disabled");
                r = aws_imds_region(m, &c->region, &err);
                if (r < 0)
                        return error_setf(ret_error, r,
                                          "no region: AWS_REGION is not set and IMDS failed: %s",
                                          err ?: pk_strerror(r));
        }
        *ret = c->region;
        return 0;
}

int aws_client_set_region(AwsClient *c, const char *region) {
        if (!aws_region_name_valid(region))
                return -EINVAL;
        char *r = strdup(region);
        if (!r)
                return -ENOMEM;
        free_and_replace(c->region, r);
        /* the public endpoints were built from the old region; an endpoint from the environment stays */
        for (size_t i = 0; i < _AWS_SERVICE_MAX; i++)
                if (!c->endpoint_given[i]) {
                        free(c->endpoints[i]);
                        c->endpoints[i] = NULL;
                }
        return 0;
}

int aws_client_endpoint(AwsClient *c, AwsService svc, const char **ret, char **ret_error) {
        const char *region;
        if (svc < 0 || svc >= _AWS_SERVICE_MAX)
                return -EINVAL;
        if (!c->endpoints[svc]) {
                if (svc == AWS_SERVICE_ROUTE53)
                        c->endpoints[svc] = strdup("https://route53.amazonaws.com");
                else {
                        int r = aws_client_region(c, &region, ret_error);
                        if (r < 0)
                                return r;
                        c->endpoints[svc] =
                            strprintf("https://%s.%s.amazonaws.com", service_names[svc], region);
                }
                if (!c->endpoints[svc])
                        return -ENOMEM;
        }
        *ret = c->endpoints[svc];
        return 0;
}

static int credentials_lookup(AwsClient *c, char **ret_error) {
        AwsCredentials *creds = NULL;
        _cleanup_free_ char *err = NULL;
        AwsImds *m;
        int r;

        r = aws_credentials_from_env(&creds);
        if (r == -ENOENT)
                r = aws_credentials_from_file(NULL, NULL, &creds);
        if (r == -ENOENT) {
                r = aws_client_imds(c, &m);
                if (r == -ENXIO)
                        return error_setf(ret_error, -ENOKEY,
                                          "no AWS credentials: none in the environment or the shared "
                                          "credentials file, and IMDS is disabled");
                if (r >= 0)
                        r = aws_imds_role_credentials(m, &creds, &err);
                if (r < 0)
                        return error_setf(ret_error, r,
                                          "no AWS credentials: none in the environment or the shared "
                                          "credentials file, and the instance role failed: %s",
                                          err ?: pk_strerror(r));
        } else if (r < 0)
                return error_setf(ret_error, r, "AWS shared credentials file: %s", pk_strerror(r));
        aws_credentials_free(c->creds);
        c->creds = creds;
        return 0;
}

int aws_client_credentials(AwsClient *c, const AwsCredentials **ret, char **ret_error) {
        if (!c->creds || (!c->creds_fixed && aws_credentials_expiring(c->creds, CREDENTIALS_RENEW_MARGIN))) {
                if (c->creds_fixed)
                        return -ENOKEY;
                _cleanup_free_ char *err = NULL;
                int r = credentials_lookup(c, &err);
                /* Still-valid role credentials beat a failed renewal: the next call tries again. */
                if (r < 0 && !(c->creds && !aws_credentials_expiring(c->creds, 0))) {
                        if (ret_error)
                                free_and_replace(*ret_error, err);
                        return r;
                }
        }
        *ret = c->creds;
        return 0;
}

/* The Host header for an endpoint URL: the authority without userinfo and without a default port. */
static char *endpoint_host(const char *url, const char **ret_prefix) {
        bool https = startswith(url, "https://");
        const char *a = url + (https ? 8 : 7), *e = strchrnul(a, '/');
        size_t l = (size_t)(e - a);
        *ret_prefix = e;
        if (https && l > 4 && memcmp(e - 4, ":443", 4) == 0)
                l -= 4;
        else if (!https && l > 3 && memcmp(e - 3, ":80", 3) == 0)
                l -= 3;
        return memchr(a, '@', l) ? NULL : strndup(a, l);
}

/* Route53 is a global service: it signs with us-east-1 whatever the caller's region (AWS General Reference,
 * "Route 53 endpoints"). */
static int signing_region(AwsClient *c, AwsService svc, const char **ret, char **ret_error) {
        if (svc == AWS_SERVICE_ROUTE53) {
                *ret = "us-east-1";
                return 0;
        }
        return aws_client_region(c, ret, ret_error);
}

#define CALL_HEADERS_MAX 8

typedef struct PreparedCall {
        char *url;
        char *headers[6 + CALL_HEADERS_MAX];
        size_t n_headers;
} PreparedCall;

static void prepared_call_done(PreparedCall *p) {
        free(p->url);
        /* Authorization and X-Amz-Security-Token */
        for (size_t i = 0; i < p->n_headers; i++)
                string_free_erase(p->headers[i]);
        *p = (PreparedCall){};
}

/* Path-style below an endpoint given in the environment, since a local or private endpoint rarely has
 * per-bucket DNS names. */
char *aws_s3_base_url(const char *endpoint, const char *bucket, const char *region) {
        if (endpoint)
                return strprintf("%s/%s", endpoint, bucket);
        if (strchr(bucket, '.'))
                return strprintf("https://s3.%s.amazonaws.com/%s", region, bucket);
        return strprintf("https://%s.s3.%s.amazonaws.com", bucket, region);
}

/* The base URL of a call: the service's endpoint, or for S3 the bucket's. */
static int call_base_url(AwsClient *c, const AwsCall *call, char **ret, char **ret_error) {
        const char *endpoint, *region;
        int r = aws_client_endpoint(c, call->service, &endpoint, ret_error);
        if (r < 0)
                return r;
        if (call->service != AWS_SERVICE_S3)
                *ret = strdup(endpoint);
        else if (isempty(call->bucket) || strpbrk(call->bucket, "/?#@: "))
                return error_setf(ret_error, -EINVAL, "s3 %s: invalid bucket name '%s'", call->operation,
                                  strempty(call->bucket));
        else {
                r = aws_client_region(c, &region, ret_error);
                if (r < 0)
                        return r;
                *ret = aws_s3_base_url(c->endpoint_given[AWS_SERVICE_S3] ? endpoint : NULL, call->bucket,
                                       region);
        }
        return *ret ? 0 : -ENOMEM;
}

/* The headers signed besides host and x-amz-date: Content-Type, the call's own and, for S3, the payload
 * hash, which S3 takes from this header rather than computing it (AWS S3 API Reference, "Signature
 * Calculations for the Authorization Header"). */
static int call_sign_headers(const AwsCall *call, char sha[static 65], AwsHeader *h, size_t *ret_n) {
        size_t n = 0;
        if (call->n_headers > CALL_HEADERS_MAX || (call->n_headers > 0 && !call->headers))
                return -E2BIG;
        if (call->content_type)
                h[n++] = (AwsHeader){ "Content-Type", call->content_type };
        for (size_t i = 0; i < call->n_headers; i++)
                h[n++] = call->headers[i];
        if (call->service == AWS_SERVICE_S3) {
                int r = aws_sha256_hex(call->body ?: "", call->body_len, sha);
                if (r < 0)
                        return r;
                h[n++] = (AwsHeader){ "x-amz-content-sha256", sha };
        }
        *ret_n = n;
        return 0;
}

static int call_prepare(AwsClient *c, const AwsCall *call, PreparedCall *ret, char **ret_error) {
        const AwsCredentials *creds;
        const char *region, *prefix;
        _cleanup_free_ char *base = NULL;
        AwsHeader h[CALL_HEADERS_MAX + 2];
        char sha[65];
        size_t n_h = 0;
        AwsSigV4Result sig;
        int r;

        r = call_base_url(c, call, &base, ret_error);
        if (r >= 0)
                r = signing_region(c, call->service, &region, ret_error);
        if (r >= 0)
                r = aws_client_credentials(c, &creds, ret_error);
        if (r >= 0)
                r = call_sign_headers(call, sha, h, &n_h);
        if (r < 0)
                return r;
        _cleanup_free_ char *host = endpoint_host(base, &prefix);
        _cleanup_free_ char *path = strjoin(prefix, call->path);
        if (!host || !path)
                return -ENOMEM;

        AwsSigV4Request req = {
                .method = call->method,
                .host = host,
                .path = path,
                .query = call->query,
                .headers = h,
                .n_headers = n_h,
                .body = call->body,
                .body_len = call->body_len,
                .region = region,
                .service = service_names[call->service],
                .s3_style = call->service == AWS_SERVICE_S3,
        };
        r = aws_sigv4_sign(&req, creds, &sig);
        if (r < 0)
                return r;

        PreparedCall p = {};
        p.url =
            strprintf("%s%s%s%s", base, call->path, isempty(call->query) ? "" : "?", strempty(call->query));
        p.headers[p.n_headers++] = strjoin("Authorization: ", sig.authorization);
        p.headers[p.n_headers++] = strjoin("X-Amz-Date: ", sig.amz_date);
        for (size_t i = 0; i < n_h; i++)
                p.headers[p.n_headers++] = strjoin(h[i].name, ": ", h[i].value);
        if (creds->session_token)
                p.headers[p.n_headers++] = strjoin("X-Amz-Security-Token: ", creds->session_token);
        aws_sigv4_result_done(&sig);
        bool oom = !p.url;
        for (size_t i = 0; i < p.n_headers; i++)
                oom = oom || !p.headers[i];
        if (oom) {
                prepared_call_done(&p);
                return -ENOMEM;
        }
        *ret = p;
        return 0;
}

/* Server text goes into our messages: keep it printable and short. */
static char *sanitize(const char *s) {
        if (!s)
                return NULL;
        size_t l = MIN(strlen(s), (size_t)ERROR_TEXT_MAX);
        char *d = strndup(s, l);
        for (char *p = d; p && *p; p++)
                if ((unsigned char)*p < 0x20 || *p == 0x7f)
                        *p = ' ';
        return d;
}

/* EC2: <Response><Errors><Error><Code/><Message/></Error></Errors><RequestID/></Response>;
 * Route53: <ErrorResponse><Error><Type/><Code/><Message/></Error><RequestId/></ErrorResponse>. */
void aws_error_document_parse(const void *data, size_t len, char **ret_code, char **ret_message,
                              char **ret_id) {
        _cleanup_(xml_node_freep) XmlNode *doc = NULL;
        *ret_code = *ret_message = *ret_id = NULL;
        if (len == 0 || xml_parse(data, len, &doc) < 0)
                return;
        XmlNode *err = xml_path(doc, "Errors/Error") ?: xml_child(doc, "Error");
        if (!err && streq(doc->name, "Error"))
                err = doc;
        if (err) {
                *ret_code = sanitize(xml_path_text(err, "Code"));
                *ret_message = sanitize(xml_path_text(err, "Message"));
        }
        *ret_id = sanitize(xml_path_text(doc, "RequestID") ?: xml_path_text(doc, "RequestId"));
}

/* Throttling and server-side failures: worth another try after a pause. */
static bool code_is_retryable(const char *code) {
        static const char *const codes[] = {
                "RequestLimitExceeded",
                "Throttling",
                "ThrottlingException",
                "ThrottledException",
                "RequestThrottled",
                "TooManyRequestsException",
                "PriorRequestNotComplete",
                "SlowDown",
                "RequestThrottledException",
                "ConditionalRequestConflict", /* S3: a conditional write raced another; the retry decides */
                "EC2ThrottledException",
                "ServiceUnavailable",
                "InternalError",
                "Unavailable",
        };
        for (size_t i = 0; code && i < ELEMENTSOF(codes); i++)
                if (streq(code, codes[i]))
                        return true;
        return false;
}

/* The caller's own return value for an AWS error code (and message part), or PK_ECLOUD. */
static int error_code_map(const AwsCall *call, const char *code, const char *msg) {
        for (const AwsErrorCode *e = call->error_codes; code && e && e->code; e++)
                if (streq(code, e->code) && (!e->message_part || (msg && strstr(msg, e->message_part))))
                        return e->r;
        return PK_ECLOUD;
}

/* Judges one answer: 2xx is done, throttling and 5xx retry, anything else fails with the server's words. */
static RetryVerdict judge_response(const AwsCall *call, const HttpResponse *resp, int *ret_r,
                                   char **ret_error) {
        if (resp->status >= 200 && resp->status < 300) {
                *ret_r = 0;
                return RETRY_DONE;
        }
        _cleanup_free_ char *code = NULL, *msg = NULL, *id = NULL;
        aws_error_document_parse(resp->body, resp->body_len, &code, &msg, &id);
        if (!id) {
                _cleanup_free_ char *h = http_response_header(resp, "x-amzn-RequestId");
                id = sanitize(h);
        }
        *ret_r =
            error_setf(ret_error, error_code_map(call, code, msg), "%s %s: %s: %s (HTTP %ld, request id %s)",
                       service_names[call->service], call->operation, code ?: "UnknownError",
                       msg ?: "no error message", resp->status, id ?: "none");
        if (resp->status >= 500 || resp->status == 429 || code_is_retryable(code))
                return RETRY_AGAIN;
        return RETRY_FAIL;
}

/* Where a 2xx answer goes: parsed (xml), as received (raw) or nowhere (neither); and a header of every
 * answer (header_value, when header is set). */
typedef struct CallOutput {
        XmlNode **xml;
        char **raw;
        size_t *raw_len;
        const char *header;
        char **header_value;
} CallOutput;

static int take_output(const AwsCall *call, HttpResponse *resp, const CallOutput *out, char **ret_error) {
        XmlNode *doc = NULL;
        if (!out->xml && !out->raw)
                return 0;
        if (out->raw) {
                if (!resp->body && !(resp->body = strdup("")))
                        return -ENOMEM;
                *out->raw = TAKE_PTR(resp->body);
                *out->raw_len = resp->body_len;
                return 0;
        }
        if (resp->body_len > 0) {
                int r = xml_parse(resp->body, resp->body_len, &doc);
                if (r < 0)
                        return error_setf(ret_error, r,
                                          "%s %s: unparsable response (HTTP %ld, %zu bytes): %s",
                                          service_names[call->service], call->operation, resp->status,
                                          resp->body_len, pk_strerror(r));
        }
        *out->xml = doc;
        return 0;
}

static int send_once(AwsClient *c, const AwsCall *call, usec_t deadline, const CallOutput *out,
                     RetryVerdict *ret_outcome, char **ret_error) {
        PreparedCall p;
        HttpResponse resp;
        _cleanup_free_ char *err = NULL;
        usec_t t = now(CLOCK_MONOTONIC);
        int r;

        r = call_prepare(c, call, &p, &err);
        if (r < 0) {
                *ret_outcome = RETRY_FAIL;
                if (err && ret_error)
                        return free_and_replace(*ret_error, err), r;
                return error_setf(ret_error, r, "%s %s: cannot sign the request: %s",
                                  service_names[call->service], call->operation, pk_strerror(r));
        }
        HttpRequest hr = {
                .method = call->method,
                .url = p.url,
                .headers = (const char *const *)p.headers,
                .n_headers = p.n_headers,
                .body = call->body,
                .body_len = call->body_len,
                .timeout = MAX(MIN(c->exchange_timeout, deadline > t ? deadline - t : 0), USEC_PER_MSEC),
                .max_response = AWS_RESPONSE_MAX,
                .ca_file = c->ca_bundle,
                .via_proxy = true, /* the AWS APIs and S3: outside the cluster */
                .sensitive = call->sensitive,
        };
        r = http_request(&hr, &resp, &err);
        prepared_call_done(&p);
        if (r < 0) {
                *ret_outcome = retry_transport_error(r) ? RETRY_AGAIN : RETRY_FAIL;
                return error_setf(ret_error, r, "%s %s: %s", service_names[call->service], call->operation,
                                  err ?: pk_strerror(r));
        }
        if (out->header) {
                free(*out->header_value);
                *out->header_value = http_response_header(&resp, out->header);
        }
        *ret_outcome = judge_response(call, &resp, &r, ret_error);
        if (*ret_outcome == RETRY_DONE) {
                r = take_output(call, &resp, out, ret_error);
                if (r < 0)
                        *ret_outcome = RETRY_FAIL;
        }
        http_response_done(&resp);
        return r;
}

typedef struct CallAttempt {
        AwsClient *client;
        const AwsCall *call;
        const CallOutput *out;
} CallAttempt;

static int call_attempt(void *userdata, usec_t deadline, RetryVerdict *ret_verdict, char **ret_error) {
        CallAttempt *a = userdata;
        return send_once(a->client, a->call, deadline, a->out, ret_verdict, ret_error);
}

static int call_with_retries(AwsClient *c, const AwsCall *call, const CallOutput *out, char **ret_error) {
        if (!call || call->service < 0 || call->service >= _AWS_SERVICE_MAX || isempty(call->operation) ||
            isempty(call->method) || isempty(call->path))
                return error_setf(ret_error, -EINVAL, "invalid AWS call");
        RetryPolicy policy = { c->max_attempts, c->backoff_base, c->backoff_max, c->call_timeout };
        CallAttempt a = { c, call, out };
        return retry_call(&policy, call_attempt, &a, &c->retries, ret_error);
}

int aws_client_call(AwsClient *c, const AwsCall *call, XmlNode **ret, char **ret_error) {
        CallOutput out = { .xml = ret };
        return call_with_retries(c, call, &out, ret_error);
}

int aws_client_call_raw(AwsClient *c, const AwsCall *call, char **ret_body, size_t *ret_len,
                        char **ret_error) {
        CallOutput out = { .raw = ret_body, .raw_len = ret_len };
        return call_with_retries(c, call, &out, ret_error);
}

int aws_client_call_header(AwsClient *c, const AwsCall *call, const char *header, char **ret_value,
                           char **ret_error) {
        _cleanup_free_ char *value = NULL;
        CallOutput out = { .header = header, .header_value = &value };
        int r = call_with_retries(c, call, &out, ret_error);
        *ret_value = TAKE_PTR(value);
        return r;
}
