/* SPDX-License-Identifier: Apache-2.0 */
#include "gce/auth.h"

#include <jansson.h>
#include <openssl/pem.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/string-util.h"
#include "shared/crypto.h"
#include "shared/http-wire.h"
#include "shared/http.h"
#include "shared/json-secret.h"
#include "shared/json-util.h"
#include "shared/openssl-util.h"

#define TOKEN_ERROR_MAX 300
#define TOKEN_TIMEOUT   (30 * USEC_PER_SEC)

void gce_service_account_key_done(GceServiceAccountKey *k) {
        free(k->client_email);
        free(k->private_key_id);
        string_free_erase(k->private_key);
        free(k->token_uri);
        free(k->project_id);
        *k = (GceServiceAccountKey){};
}

/* A field of the key as a copy: required ones must be there, and none may hold control characters (the
 * email and key id go into the JWT, the URI into a request line). The PEM key is checked by OpenSSL. */
static int key_field(const char *origin, const json_t *j, const char *name, bool required, bool pem,
                     char **ret, char **ret_error) {
        const char *v = json_get_string(j, name);
        *ret = NULL;
        if (!v && !required)
                return 0;
        if (isempty(v) || (!pem && (string_has_cc(v) || strlen(v) > 1024)))
                return error_setf(ret_error, PK_EMALFORMED, "%s: field '%s' %s", origin, name,
                                  v ? "is not a valid value" : "is missing or not a string");
        *ret = strdup(v);
        return *ret ? 0 : -ENOMEM;
}

int gce_service_account_key_parse(const char *origin, const char *data, size_t len,
                                  GceServiceAccountKey *ret, char **ret_error) {
        json_error_t jerr;
        json_t *j = json_loadb_secret(data, len, 0, &jerr);
        GceServiceAccountKey k = {};
        int r;

        if (!j || !json_is_object(j)) {
                json_erase_values(j);
                json_decref(j);
                return error_setf(ret_error, PK_EMALFORMED, "%s: not a JSON object (line %d: %s)", origin,
                                  jerr.line, j ? "not an object" : jerr.text);
        }
        const char *type = json_get_string(j, "type");
        if (!streq_ptr(type, "service_account"))
                r = error_setf(ret_error, PK_EMALFORMED,
                               "%s: field 'type' is '%s', not 'service_account' (only service account keys "
                               "are supported)",
                               origin, strna(type));
        else
                r = key_field(origin, j, "client_email", true, false, &k.client_email, ret_error);
        if (r >= 0)
                r = key_field(origin, j, "private_key_id", true, false, &k.private_key_id, ret_error);
        if (r >= 0)
                r = key_field(origin, j, "private_key", true, true, &k.private_key, ret_error);
        if (r >= 0)
                r = key_field(origin, j, "token_uri", false, false, &k.token_uri, ret_error);
        if (r >= 0)
                r = key_field(origin, j, "project_id", false, false, &k.project_id, ret_error);
        json_erase_values(j);
        json_decref(j);
        if (r >= 0 && !k.token_uri && !(k.token_uri = strdup(GCE_TOKEN_URI_DEFAULT)))
                r = -ENOMEM;
        if (r >= 0) {
                _cleanup_free_ char *what = strprintf("%s: token_uri", origin);
                r = what ? http_endpoint_check(what, k.token_uri, ret_error) : -ENOMEM;
                if (r < 0)
                        r = PK_EMALFORMED;
        }
        if (r < 0) {
                gce_service_account_key_done(&k);
                return r;
        }
        *ret = k;
        return 0;
}

int gce_service_account_key_load(const char *path, GceServiceAccountKey *ret, char **ret_error) {
        char *data = NULL;
        size_t len = 0;
        int r = read_full_file_secret(path, GCE_KEY_FILE_MAX, &data, &len);
        if (r < 0)
                return error_setf(ret_error, r, "cannot read the service account key %s: %s", path,
                                  pk_strerror(r));
        r = gce_service_account_key_parse(path, data, len, ret, ret_error);
        erase_and_free(data, len);
        return r;
}

/* base64url without padding (RFC 7515 §2). */
static int base64url(const void *data, size_t len, char **ret) {
        char *s;
        int r = crypto_base64_encode(data, len, &s);
        if (r < 0)
                return r;
        for (char *p = s; *p; p++)
                if (*p == '+')
                        *p = '-';
                else if (*p == '/')
                        *p = '_';
                else if (*p == '=') {
                        *p = 0;
                        break;
                }
        *ret = s;
        return 0;
}

static int json_part(json_t *j, char **ret) {
        if (!j)
                return -ENOMEM;
        char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(j);
        if (!s)
                return -ENOMEM;
        int r = base64url(s, strlen(s), ret);
        free(s);
        return r;
}

static int rs256_sign(const char *pem, const char *input, char **ret) {
        _cleanup_(BIO_free_allp) BIO *bio = BIO_new_mem_buf(pem, -1);
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *pkey = NULL;
        _cleanup_(EVP_MD_CTX_freep) EVP_MD_CTX *md = EVP_MD_CTX_new();
        size_t n = 0;

        if (!bio || !md)
                return -ENOMEM;
        pkey = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
        if (!pkey || EVP_PKEY_get_base_id(pkey) != EVP_PKEY_RSA)
                return PK_EMALFORMED;
        if (EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, pkey) != 1 ||
            EVP_DigestSign(md, NULL, &n, (const unsigned char *)input, strlen(input)) != 1)
                return -EIO;
        _cleanup_free_ unsigned char *sig = malloc(n);
        if (!sig)
                return -ENOMEM;
        if (EVP_DigestSign(md, sig, &n, (const unsigned char *)input, strlen(input)) != 1)
                return -EIO;
        return base64url(sig, n, ret);
}

int gce_jwt_assertion(const GceServiceAccountKey *key, const char *scopes, usec_t now, char **ret) {
        _cleanup_free_ char *header = NULL, *claims = NULL, *sig = NULL, *input = NULL;
        json_int_t iat = (json_int_t)(now / USEC_PER_SEC);
        int r;

        r = json_part(json_pack("{s:s, s:s, s:s}", "alg", "RS256", "typ", "JWT", "kid", key->private_key_id),
                      &header);
        if (r >= 0)
                r = json_part(json_pack("{s:s, s:s, s:s, s:I, s:I}", "iss", key->client_email, "scope",
                                        scopes, "aud", key->token_uri, "iat", iat, "exp",
                                        iat + GCE_JWT_LIFETIME_SEC),
                              &claims);
        if (r < 0)
                return r;
        input = strjoin(header, ".", claims);
        if (!input)
                return -ENOMEM;
        r = rs256_sign(key->private_key, input, &sig);
        if (r < 0)
                return r;
        *ret = strjoin(input, ".", sig);
        return *ret ? 0 : -ENOMEM;
}

void gce_token_done(GceToken *t) {
        string_free_erase(t->access_token);
        *t = (GceToken){};
}

static bool token_text_ok(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > GCE_TOKEN_MAX)
                return false;
        for (const char *p = s; *p; p++)
                if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
                        return false;
        return true;
}

int gce_token_parse(const char *data, size_t len, usec_t now, GceToken *ret, char **ret_error) {
        json_t *j = json_loadb_secret(data, len, 0, NULL);
        const char *tok = json_get_string(j, "access_token"), *type = json_get_string(j, "token_type");
        const json_t *exp = json_get(j, "expires_in");
        const char *why = NULL;
        int r = 0;

        if (!json_is_object(j))
                why = "the answer is not a JSON object";
        else if (!tok || !token_text_ok(tok))
                why = "'access_token' is missing or malformed";
        else if (!type || strcasecmp(type, "Bearer") != 0)
                why = "'token_type' is not 'Bearer'";
        else if (!json_is_integer(exp) || json_integer_value(exp) <= 0 ||
                 json_integer_value(exp) > 24 * 3600)
                why = "'expires_in' is not a number of seconds between 1 and 86400";
        if (why)
                r = error_setf(ret_error, PK_EMALFORMED, "token answer: %s", why);
        else {
                usec_t life = (usec_t)json_integer_value(exp) * USEC_PER_SEC;
                ret->access_token = strdup(tok);
                ret->expires_at = now + life;
                ret->renew_at = now + MAX(life > GCE_TOKEN_RENEW_MARGIN ? life - GCE_TOKEN_RENEW_MARGIN : 0,
                                          life / 4 * 3);
                if (!ret->access_token)
                        r = -ENOMEM;
        }
        json_erase_values(j);
        json_decref(j);
        return r;
}

char *gce_token_error_parse(const char *data, size_t len) {
        json_t *j = json_loadb(data, len, 0, NULL);
        const char *e = json_get_string(j, "error"), *d = json_get_string(j, "error_description");
        char *s = e ? strprintf("%s%s%s", e, d ? ": " : "", strempty(d)) : NULL;
        json_decref(j);
        if (!s)
                return NULL;
        char *line = string_one_line(s, TOKEN_ERROR_MAX);
        free(s);
        return line;
}

int gce_token_from_key(const GceServiceAccountKey *key, const char *scopes, const char *ca_file,
                       GceToken *ret, char **ret_error) {
        _cleanup_erase_free_ char *assertion = NULL, *body = NULL;
        _cleanup_free_ char *err = NULL, *why = NULL;
        const char *headers[] = { "Content-Type: application/x-www-form-urlencoded",
                                  "Accept: application/json" };
        HttpResponse resp = {};
        int r;

        r = gce_jwt_assertion(key, scopes, now(CLOCK_REALTIME), &assertion);
        if (r < 0)
                return error_setf(ret_error, r, "cannot sign a token request with the key of %s: %s",
                                  key->client_email, pk_strerror(r));
        /* base64url and '.' need no form encoding; the grant type's colons do. */
        body = strjoin("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=",
                       assertion);
        if (!body)
                return -ENOMEM;
        HttpRequest req = {
                .method = "POST",
                .url = key->token_uri,
                .headers = headers,
                .n_headers = ELEMENTSOF(headers),
                .body = body,
                .body_len = strlen(body),
                .timeout = TOKEN_TIMEOUT,
                .max_response = 64 * 1024,
                .via_proxy = true, /* Google's token endpoint: outside the cluster */
                .ca_file = ca_file,
                .sensitive = true,
        };
        r = http_request(&req, &resp, &err);
        if (r < 0)
                return error_setf(ret_error, r, "token request to %s: %s", key->token_uri,
                                  err ?: pk_strerror(r));
        if (resp.status == 200)
                r = gce_token_parse(resp.body, resp.body_len, now(CLOCK_MONOTONIC), ret, ret_error);
        else {
                why = gce_token_error_parse(resp.body, resp.body_len);
                /* a refusal (a bad key, a clock off by minutes) stays one; throttling and 5xx may pass */
                r = error_setf(ret_error, resp.status == 429 || resp.status >= 500 ? PK_ECLOUD : -EACCES,
                               "token request to %s for %s: HTTP %ld: %s", key->token_uri, key->client_email,
                               resp.status, why ?: "no error description");
        }
        http_response_done(&resp);
        return r;
}
