/* SPDX-License-Identifier: Apache-2.0 */
#include "aws/sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <string.h>

#include "basic/buf.h"
#include "basic/errors.h"
#include "basic/string-util.h"

/* Canonical requests are built from our own requests; the cap only guards against a runaway caller. */
#define SIGV4_TEXT_MAX    (4U * 1024 * 1024)
#define SIGV4_HEADERS_MAX 64

static const char hexdigits[] = "0123456789abcdef";

static void hex_encode(const unsigned char *in, size_t len, char *out) {
        for (size_t i = 0; i < len; i++) {
                out[2 * i] = hexdigits[in[i] >> 4];
                out[2 * i + 1] = hexdigits[in[i] & 15];
        }
        out[2 * len] = 0;
}

static int sha256_hex(const void *data, size_t len, char out[static 65]) {
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned n = 0;
        if (EVP_Digest(data, len, md, &n, EVP_sha256(), NULL) != 1 || n != 32)
                return -EIO;
        hex_encode(md, 32, out);
        return 0;
}

int aws_sha256_hex(const void *data, size_t len, char out[static 65]) {
        return sha256_hex(data, len, out);
}

static int hmac_sha256(const void *key, size_t key_len, const void *data, size_t len,
                       unsigned char out[32]) {
        unsigned n = 0;
        if (!HMAC(EVP_sha256(), key, (int)key_len, data, len, out, &n) || n != 32)
                return -EIO;
        return 0;
}

/* Decodes %XX in s[0..len) into a new string. '+' stays '+': SigV4 reads queries as RFC 3986, not as HTML
 * forms, and our own client never sends '+' for a space. */
static int percent_decode(const char *s, size_t len, char **ret, size_t *ret_len) {
        _cleanup_free_ char *d = malloc(len + 1);
        size_t n = 0;
        if (!d)
                return -ENOMEM;
        for (size_t i = 0; i < len; i++) {
                if (s[i] != '%') {
                        d[n++] = s[i];
                        continue;
                }
                if (i + 2 >= len)
                        return -EINVAL;
                int a = unhexchar(s[i + 1]), b = unhexchar(s[i + 2]);
                if (a < 0 || b < 0)
                        return -EINVAL;
                d[n++] = (char)(a << 4 | b);
                i += 2;
        }
        d[n] = 0;
        *ret_len = n;
        *ret = TAKE_PTR(d);
        return 0;
}

/* Removes dot segments (RFC 3986 §5.2.4) and empty segments: AWS services other than S3 sign the normalised
 * path, and its segments encoded a second time. */
static int canonical_uri(const char *path, bool s3_style, Buf *out) {
        if (isempty(path))
                return buf_add_str(out, "/");
        if (s3_style)
                return buf_add_str(out, path);

        size_t len = strlen(path);
        _cleanup_free_ const char **segs = new0(const char *, len + 1);
        _cleanup_free_ size_t *lens = new0(size_t, len + 1);
        size_t n = 0;
        if (!segs || !lens)
                return -ENOMEM;
        for (const char *p = path; *p;) {
                const char *e = strchrnul(p, '/');
                size_t l = (size_t)(e - p);
                if (l == 0 || (l == 1 && p[0] == '.')) {
                        /* skip */
                } else if (l == 2 && p[0] == '.' && p[1] == '.') {
                        if (n > 0)
                                n--;
                } else {
                        segs[n] = p;
                        lens[n++] = l;
                }
                p = *e ? e + 1 : e;
        }
        int r = 0;
        if (path[0] == '/')
                r = buf_add_str(out, "/");
        for (size_t i = 0; r >= 0 && i < n; i++) {
                if (i > 0)
                        r = buf_add_str(out, "/");
                if (r >= 0)
                        r = buf_add_uri_encoded(out, segs[i], lens[i], false);
        }
        if (r >= 0 && n > 0 && path[len - 1] == '/')
                r = buf_add_str(out, "/");
        return r;
}

typedef struct QueryParam {
        char *key; /* encoded */
        char *value;
} QueryParam;

static int query_param_cmp(const void *a, const void *b) {
        const QueryParam *x = a, *y = b;
        int c = strcmp(x->key, y->key);
        return c != 0 ? c : strcmp(x->value, y->value);
}

static void query_params_free(QueryParam *q, size_t n) {
        for (size_t i = 0; q && i < n; i++) {
                free(q[i].key);
                free(q[i].value);
        }
        free(q);
}

static int encode_component(const char *s, size_t len, char **ret) {
        _cleanup_free_ char *d = NULL;
        size_t dl;
        int r = percent_decode(s, len, &d, &dl);
        if (r < 0)
                return r;
        _cleanup_buf_ Buf b;
        buf_init(&b, SIGV4_TEXT_MAX);
        r = buf_add_uri_encoded(&b, d, dl, false);
        if (r < 0)
                return r;
        *ret = buf_steal_str(&b);
        return *ret ? 0 : -ENOMEM;
}

/* Every name and value is decoded and encoded again the strict way, then pairs are sorted by name, then
 * value (byte order), so a query sent with or without escapes for unreserved characters signs the same. */
static int canonical_query(const char *query, Buf *out) {
        if (isempty(query))
                return 0;
        size_t n = 1;
        for (const char *p = query; *p; p++)
                n += *p == '&';
        QueryParam *q = new0(QueryParam, n);
        size_t m = 0;
        int r = 0;
        if (!q)
                return -ENOMEM;
        for (const char *p = query; r >= 0;) {
                const char *e = strchrnul(p, '&');
                if (e > p) {
                        const char *eq = memchr(p, '=', (size_t)(e - p));
                        const char *vs = eq ? eq + 1 : e;
                        r = encode_component(p, (size_t)((eq ?: e) - p), &q[m].key);
                        if (r >= 0)
                                r = encode_component(vs, (size_t)(e - vs), &q[m].value);
                        m++;
                }
                if (!*e)
                        break;
                p = e + 1;
        }
        if (r >= 0) {
                qsort_safe(q, m, sizeof(QueryParam), query_param_cmp);
                for (size_t i = 0; r >= 0 && i < m; i++)
                        r = buf_printf(out, "%s%s=%s", i > 0 ? "&" : "", q[i].key, q[i].value);
        }
        query_params_free(q, m);
        return r;
}

typedef struct CanonHeader {
        char *name;  /* lowercased */
        char *value; /* trimmed, runs of blanks collapsed */
        size_t index;
} CanonHeader;

static int canon_header_cmp(const void *a, const void *b) {
        const CanonHeader *x = a, *y = b;
        int c = strcmp(x->name, y->name);
        return c != 0 ? c : (x->index > y->index) - (x->index < y->index);
}

static int canon_header_init(CanonHeader *h, const char *name, const char *value, size_t index) {
        if (isempty(name) || !value || string_has_cc(name) || string_has_cc(value) || strchr(name, ':'))
                return -EINVAL;
        h->name = strdup(name);
        h->value = malloc(strlen(value) + 1);
        h->index = index;
        if (!h->name || !h->value)
                return -ENOMEM;
        for (char *p = h->name; *p; p++)
                if (*p >= 'A' && *p <= 'Z')
                        *p = (char)(*p - 'A' + 'a');
        /* Trim and collapse sequential blanks (the "get-header-value-trim" case of the AWS suite). */
        size_t n = 0;
        for (const char *p = value; *p; p++) {
                bool blank = *p == ' ' || *p == '\t';
                if (blank && (n == 0 || h->value[n - 1] == ' '))
                        continue;
                h->value[n++] = blank ? ' ' : *p;
        }
        while (n > 0 && h->value[n - 1] == ' ')
                n--;
        h->value[n] = 0;
        return 0;
}

/* One of the values is the session token: every value is erased. */
static void canon_headers_free(CanonHeader *h, size_t n) {
        for (size_t i = 0; h && i < n; i++) {
                free(h[i].name);
                string_free_erase(h[i].value);
        }
        free(h);
}

/* Writes "name:v1,v2\n" lines (duplicates joined in the order given) to out and "a;b;c" to signed. */
static int canonical_headers(const AwsSigV4Request *req, const char *amz_date, const char *token, Buf *out,
                             Buf *signed_out) {
        if (req->n_headers > SIGV4_HEADERS_MAX)
                return -E2BIG;
        size_t total = req->n_headers + 3, n = 0;
        CanonHeader *h = new0(CanonHeader, total);
        int r = 0;
        if (!h)
                return -ENOMEM;
        r = canon_header_init(&h[n], "host", req->host, n);
        n++;
        if (r >= 0)
                r = canon_header_init(&h[n], "x-amz-date", amz_date, n);
        n++;
        if (r >= 0 && token) {
                r = canon_header_init(&h[n], "x-amz-security-token", token, n);
                n++;
        }
        for (size_t i = 0; r >= 0 && i < req->n_headers; i++, n++) {
                r = canon_header_init(&h[n], req->headers[i].name, req->headers[i].value, n);
                if (r >= 0 &&
                    (streq(h[n].name, "host") || streq(h[n].name, "x-amz-date") ||
                     streq(h[n].name, "authorization") || streq(h[n].name, "x-amz-security-token")))
                        r = -EINVAL; /* the signer owns these */
        }
        if (r >= 0) {
                qsort_safe(h, n, sizeof(CanonHeader), canon_header_cmp);
                for (size_t i = 0; r >= 0 && i < n; i++) {
                        bool same = i > 0 && streq(h[i].name, h[i - 1].name);
                        if (same)
                                r = buf_printf(out, ",%s", h[i].value);
                        else {
                                r = buf_printf(out, "%s%s:%s", i > 0 ? "\n" : "", h[i].name, h[i].value);
                                if (r >= 0)
                                        r = buf_printf(signed_out, "%s%s", i > 0 ? ";" : "", h[i].name);
                        }
                }
                if (r >= 0)
                        r = buf_add_str(out, "\n");
        }
        canon_headers_free(h, n);
        return r;
}

static int format_amz_date(usec_t t, char out[static 17]) {
        struct tm tm;
        time_t s = (time_t)(t / USEC_PER_SEC);
        if (!gmtime_r(&s, &tm) || strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm) != 16)
                return -EINVAL;
        return 0;
}

/* kSecret -> kDate -> kRegion -> kService -> kSigning, each an HMAC-SHA256 keyed by the previous one. */
static int derive_signing_key(const char *secret, const char *date, const char *region, const char *service,
                              unsigned char key[32]) {
        size_t sl = strlen(secret);
        char *k0 = malloc(sl + 5);
        int r;
        if (!k0)
                return -ENOMEM;
        memcpy(k0, "AWS4", 4);
        memcpy(k0 + 4, secret, sl + 1);
        r = hmac_sha256(k0, sl + 4, date, 8, key);
        erase_and_free(k0, sl + 5);
        if (r >= 0)
                r = hmac_sha256(key, 32, region, strlen(region), key);
        if (r >= 0)
                r = hmac_sha256(key, 32, service, strlen(service), key);
        if (r >= 0)
                r = hmac_sha256(key, 32, "aws4_request", 12, key);
        return r;
}

void aws_sigv4_result_done(AwsSigV4Result *r) {
        /* The Authorization value is a credential for the next five minutes; the canonical request holds
         * x-amz-security-token. */
        string_free_erase(r->authorization);
        string_free_erase(r->canonical_request);
        free(r->string_to_sign);
        free(r->signed_headers);
        *r = (AwsSigV4Result){};
}

static int sigv4_check_request(const AwsSigV4Request *req, const AwsCredentials *creds) {
        if (!req || !creds || isempty(req->method) || isempty(req->host) || isempty(req->region) ||
            isempty(req->service) || isempty(creds->access_key_id) || isempty(creds->secret_access_key))
                return -EINVAL;
        if (strpbrk(req->region, "/ \n") || strpbrk(req->service, "/ \n") ||
            strpbrk(creds->access_key_id, "/ ,\n"))
                return -EINVAL;
        if (req->body_len > 0 && !req->body)
                return -EINVAL;
        return 0;
}

int aws_sigv4_sign_at(const AwsSigV4Request *req, const AwsCredentials *creds, usec_t t,
                      AwsSigV4Result *ret) {
        _cleanup_buf_ Buf creq, headers, signed_headers, sts;
        char payload_hash[65], creq_hash[65], amz_date[17], date[9], sig_hex[65];
        unsigned char key[32], sig[32];
        const char *token = isempty(creds ? creds->session_token : NULL) ? NULL : creds->session_token;
        int r;

        r = sigv4_check_request(req, creds);
        if (r < 0)
                return r;
        /* Both hold x-amz-security-token when there is a session token. */
        buf_init_secret(&creq, SIGV4_TEXT_MAX);
        buf_init_secret(&headers, SIGV4_TEXT_MAX);
        buf_init(&signed_headers, SIGV4_TEXT_MAX);
        buf_init(&sts, SIGV4_TEXT_MAX);

        r = format_amz_date(t, amz_date);
        if (r < 0)
                return r;
        memcpy(date, amz_date, 8);
        date[8] = 0;
        r = sha256_hex(req->body ?: "", req->body_len, payload_hash);
        if (r < 0)
                return r;

        /* CanonicalRequest = Method \n URI \n Query \n Headers \n SignedHeaders \n HashedPayload */
        r = buf_printf(&creq, "%s\n", req->method);
        if (r >= 0)
                r = canonical_uri(req->path, req->s3_style, &creq);
        if (r >= 0)
                r = buf_add_str(&creq, "\n");
        if (r >= 0)
                r = canonical_query(req->query, &creq);
        if (r >= 0)
                r = canonical_headers(req, amz_date, token, &headers, &signed_headers);
        if (r >= 0)
                r = buf_printf(&creq, "\n%s\n%s\n%s", (char *)headers.data, (char *)signed_headers.data,
                               payload_hash);
        if (r < 0)
                return r;

        r = sha256_hex(creq.data, creq.len, creq_hash);
        if (r >= 0)
                r = buf_printf(&sts, "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s", amz_date, date,
                               req->region, req->service, creq_hash);
        if (r < 0)
                return r;

        r = derive_signing_key(creds->secret_access_key, date, req->region, req->service, key);
        if (r >= 0)
                r = hmac_sha256(key, sizeof(key), sts.data, sts.len, sig);
        explicit_bzero(key, sizeof(key));
        if (r < 0)
                return r;
        hex_encode(sig, sizeof(sig), sig_hex);
        explicit_bzero(sig, sizeof(sig));

        _cleanup_erase_free_ char *authz = strprintf(
            "AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/aws4_request, SignedHeaders=%s, Signature=%s",
            creds->access_key_id, date, req->region, req->service, (char *)signed_headers.data, sig_hex);
        explicit_bzero(sig_hex, sizeof(sig_hex));
        _cleanup_erase_free_ char *c = buf_steal_str(&creq);
        _cleanup_free_ char *s = buf_steal_str(&sts), *sh = buf_steal_str(&signed_headers);
        if (!authz || !c || !s || !sh)
                return -ENOMEM;

        *ret = (AwsSigV4Result){
                .authorization = TAKE_PTR(authz),
                .canonical_request = TAKE_PTR(c),
                .string_to_sign = TAKE_PTR(s),
                .signed_headers = TAKE_PTR(sh),
        };
        memcpy(ret->amz_date, amz_date, sizeof(amz_date));
        return 0;
}

int aws_sigv4_sign(const AwsSigV4Request *req, const AwsCredentials *creds, AwsSigV4Result *ret) {
        return aws_sigv4_sign_at(req, creds, now(CLOCK_REALTIME), ret);
}
