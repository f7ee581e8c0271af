/* SPDX-License-Identifier: Apache-2.0 */
#include "aws/imds.h"

#include <jansson.h>
#include <string.h>
#include <time.h>

#include "aws/client.h"
#include "basic/errors.h"
#include "basic/string-util.h"
#include "shared/http.h"
#include "shared/json-secret.h"

/* The metadata service answers in milliseconds; a host without one must not stall a pass. */
#define IMDS_TIMEOUT         (2 * USEC_PER_SEC)
#define IMDS_CONNECT_TIMEOUT (1 * USEC_PER_SEC)
/* Renew the token a minute before AWS would stop accepting it. */
#define IMDS_TOKEN_MARGIN (60 * USEC_PER_SEC)

struct AwsImds {
        char *endpoint; /* without a trailing slash */
        char *token;    /* secret-ish: never logged */
        usec_t token_expiry;
};

AwsImds *aws_imds_free(AwsImds *m) {
        if (!m)
                return NULL;
        free(m->endpoint);
        if (m->token)
                string_free_erase(m->token);
        free(m);
        return NULL;
}

int aws_imds_new(const char *endpoint, AwsImds **ret) {
        if (!endpoint)
                endpoint = getenv("AWS_EC2_METADATA_SERVICE_ENDPOINT");
        if (isempty(endpoint))
                endpoint = AWS_IMDS_DEFAULT_ENDPOINT;
        if ((!startswith(endpoint, "http://") && !startswith(endpoint, "https://")) ||
            string_has_cc(endpoint) || strlen(endpoint) > 1024)
                return -EINVAL;
        _cleanup_(aws_imds_freep) AwsImds *m = new0(AwsImds, 1);
        if (!m)
                return -ENOMEM;
        m->endpoint = strdup(endpoint);
        if (!m->endpoint)
                return -ENOMEM;
        size_t l = strlen(m->endpoint);
        while (l > 0 && m->endpoint[l - 1] == '/')
                m->endpoint[--l] = 0;
        *ret = TAKE_PTR(m);
        return 0;
}

static int imds_exchange(AwsImds *m, const char *method, const char *path, const char *header,
                         HttpResponse *resp, char **ret_error) {
        _cleanup_free_ char *url = strjoin(m->endpoint, "/latest/", path);
        const char *headers[] = { header };
        if (!url)
                return -ENOMEM;
        HttpRequest req = {
                .method = method,
                .url = url,
                .headers = headers,
                .n_headers = 1,
                .timeout = IMDS_TIMEOUT,
                .connect_timeout = IMDS_CONNECT_TIMEOUT,
                .max_response = AWS_IMDS_VALUE_MAX,
                .sensitive = true, /* the token, and the role credentials */
        };
        return http_request(&req, resp, ret_error);
}

static int imds_refresh_token(AwsImds *m, char **ret_error) {
        _cleanup_free_ char *hdr =
            strprintf("X-aws-ec2-metadata-token-ttl-seconds: %d", AWS_IMDS_TOKEN_TTL_SEC);
        HttpResponse resp;
        if (!hdr)
                return -ENOMEM;
        int r = imds_exchange(m, "PUT", "api/token", hdr, &resp, ret_error);
        if (r < 0)
                return r;
        if (resp.status != 200 || resp.body_len == 0 || string_has_cc(resp.body) || resp.body_len > 4096) {
                if (ret_error)
                        *ret_error =
                            strprintf("instance metadata token request answered HTTP %ld", resp.status);
                r = resp.status == 200 ? PK_EMALFORMED : PK_ECLOUD;
                http_response_done(&resp);
                return r;
        }
        if (m->token)
                string_free_erase(m->token);
        m->token = TAKE_PTR(resp.body);
        m->token_expiry = now(CLOCK_MONOTONIC) + AWS_IMDS_TOKEN_TTL_SEC * USEC_PER_SEC;
        http_response_done(&resp);
        return 0;
}

int aws_imds_get(AwsImds *m, const char *path, char **ret, char **ret_error) {
        HttpResponse resp = {};
        int r;

        for (unsigned attempt = 0; attempt < 2; attempt++) {
                if (!m->token || now(CLOCK_MONOTONIC) + IMDS_TOKEN_MARGIN >= m->token_expiry) {
                        r = imds_refresh_token(m, ret_error);
                        if (r < 0)
                                return r;
                }
                _cleanup_erase_free_ char *hdr = strjoin("X-aws-ec2-metadata-token: ", m->token);
                if (!hdr)
                        return -ENOMEM;
                r = imds_exchange(m, "GET", path, hdr, &resp, ret_error);
                if (r < 0)
                        return r;
                if (resp.status != 401)
                        break;
                /* The token expired or the service restarted: get a new one, once. */
                http_response_done(&resp);
                string_free_erase(m->token);
                m->token = NULL;
        }
        if (resp.status == 404) {
                http_response_done(&resp);
                return -ENOENT;
        }
        if (resp.status != 200) {
                if (ret_error)
                        *ret_error =
                            strprintf("instance metadata '%s' answered HTTP %ld", path, resp.status);
                http_response_done(&resp);
                return PK_ECLOUD;
        }
        *ret = TAKE_PTR(resp.body);
        http_response_done(&resp);
        return 0;
}

int aws_imds_region(AwsImds *m, char **ret, char **ret_error) {
        char *region = NULL;
        int r = aws_imds_get(m, "meta-data/placement/region", &region, ret_error);
        if (r < 0)
                return r;
        if (!aws_region_name_valid(region)) { /* it becomes part of host names */
                free(region);
                return PK_EMALFORMED;
        }
        *ret = region;
        return 0;
}

int aws_parse_iso8601(const char *s, usec_t *ret) {
        struct tm tm = {};
        const char *e = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
        if (!e)
                return -EINVAL;
        /* Fractional seconds to the microsecond (EC2's attachTime has milliseconds, and it orders two
         * claims); only UTC is accepted. */
        usec_t frac = 0, scale = USEC_PER_SEC;
        if (*e == '.')
                for (e++; *e >= '0' && *e <= '9'; e++)
                        if (scale >= 10) {
                                scale /= 10;
                                frac += (usec_t)(*e - '0') * scale;
                        }
        if (!streq(e, "Z") && !streq(e, "+00:00"))
                return -EINVAL;
        time_t t = timegm(&tm);
        if (t < 0)
                return -EINVAL;
        *ret = (usec_t)t * USEC_PER_SEC + frac;
        return 0;
}

static int parse_role_json(const char *text, AwsCredentials **ret) {
        json_t *j = json_loadb_secret(text, strlen(text), JSON_REJECT_DUPLICATES, NULL);
        const char *code, *id, *secret, *token, *exp;
        usec_t expiration;
        int r = PK_EMALFORMED;

        if (!j)
                return PK_EMALFORMED;
        code = json_string_value(json_object_get(j, "Code"));
        id = json_string_value(json_object_get(j, "AccessKeyId"));
        secret = json_string_value(json_object_get(j, "SecretAccessKey"));
        token = json_string_value(json_object_get(j, "Token"));
        exp = json_string_value(json_object_get(j, "Expiration"));
        if (code && !streq(code, "Success"))
                r = PK_ECLOUD;
        else if (id && secret && token && exp && aws_parse_iso8601(exp, &expiration) >= 0) {
                AwsCredentials *c;
                r = aws_credentials_new(id, secret, token, &c);
                if (r >= 0) {
                        c->expiration = expiration;
                        c->source = "imds";
                        *ret = c;
                } else if (r == -EINVAL)
                        r = PK_EMALFORMED;
        }
        json_erase_values(j);
        json_decref(j);
        return r;
}

int aws_imds_role_credentials(AwsImds *m, AwsCredentials **ret, char **ret_error) {
        _cleanup_free_ char *roles = NULL, *path = NULL;
        char *doc = NULL;
        int r = aws_imds_get(m, "meta-data/iam/security-credentials/", &roles, ret_error);
        if (r < 0)
                return r;
        /* One role per instance profile: the first line names it. */
        roles[strcspn(roles, "\r\n")] = 0;
        if (isempty(roles) || strchr(roles, '/') || string_has_cc(roles))
                return PK_EMALFORMED;
        path = strjoin("meta-data/iam/security-credentials/", roles);
        if (!path)
                return -ENOMEM;
        r = aws_imds_get(m, path, &doc, ret_error);
        if (r < 0)
                return r;
        r = parse_role_json(doc, ret);
        string_free_erase(doc);
        if (r < 0 && ret_error && !*ret_error)
                *ret_error = strprintf("instance role '%s' credentials: %s", roles,
                                       r == PK_ECLOUD ? "the metadata service reports a failure"
                                                      : "malformed document");
        return r;
}
