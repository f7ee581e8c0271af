/* SPDX-License-Identifier: Apache-2.0 */
/* The S3 store (s3://BUCKET[/PREFIX]): each object is the S3 object PREFIX/KEY, through the SigV4 client of
 * aws/. Create-if-absent is PutObject with If-None-Match: * (S3 answers 412 PreconditionFailed when the key
 * exists: exactly one concurrent writer wins, S3 User Guide "Conditional writes"); PutObject is atomic per
 * object, so readers see the old or the new object. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "aws/client.h"
#include "aws/sigv4.h"
#include "basic/errors.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "shared/xml.h"
#include "store/store-internal.h"

#define S3_LIST_PAGE    1000 /* S3's own maximum for max-keys */
#define S3_LIST_PAGES   (STORE_LIST_MAX / S3_LIST_PAGE + 1)
#define S3_KEY_TEXT_MAX 2048
#define S3_TOKEN_MAX    4096

typedef struct S3Store {
        AwsClient *client;
        char *bucket;
        char *prefix; /* "" or "a/b/": prepended to every key */
} S3Store;

/* Bucket names as S3 allows them for new buckets (S3 User Guide, "Bucket naming rules"), which also keeps
 * them usable as a DNS label for virtual-hosted addressing. */
static bool bucket_valid(const char *b, size_t len) {
        if (len < 3 || len > 63 || b[0] == '.' || b[0] == '-' || b[len - 1] == '.' || b[len - 1] == '-')
                return false;
        for (size_t i = 0; i < len; i++)
                if (!((b[i] >= 'a' && b[i] <= 'z') || (b[i] >= '0' && b[i] <= '9') || b[i] == '.' ||
                      b[i] == '-'))
                        return false;
        return true;
}

static void s3_free(Store *s) {
        S3Store *t = s->data;
        if (!t)
                return;
        aws_client_free(t->client);
        free(t->bucket);
        free(t->prefix);
        free(t);
}

/* The S3 answers a caller decides on (by code, never by the message's wording). */
static const AwsErrorCode s3_no_such_key[] = {
        { .code = "NoSuchKey", .r = -ENOENT },
        {},
};
static const AwsErrorCode s3_precondition_failed[] = {
        { .code = "PreconditionFailed", .r = -EEXIST },
        {},
};

/* The client's message becomes the cause, except for the answers the provider expects (-ENOENT, -EEXIST):
 * like the file provider, those carry no cause of their own. */
static int client_result(int r, bool expected, char *err, char **ret_cause) {
        if (r < 0 && !expected && ret_cause)
                *ret_cause = TAKE_PTR(err);
        free(err);
        return r;
}

static char *object_path(S3Store *t, const char *key) {
        _cleanup_free_ char *full = strjoin(t->prefix, key);
        char *p = full ? aws_uri_encode(full, true) : NULL;
        char *r = p ? strjoin("/", p) : NULL;
        free(p);
        return r;
}

/* delimiter: NULL, or "/" to get the keys' next segments as CommonPrefixes instead of the keys. */
static int s3_list_call(S3Store *t, const char *prefix, const char *delimiter, const char *token,
                        unsigned max_keys, XmlNode **ret, char **ret_cause) {
        _cleanup_free_ char *full = strjoin(t->prefix, prefix);
        _cleanup_free_ char *ep = full ? aws_uri_encode(full, false) : NULL;
        _cleanup_free_ char *et = token ? aws_uri_encode(token, false) : NULL;
        _cleanup_free_ char *ed = delimiter ? aws_uri_encode(delimiter, false) : NULL;
        if (!ep || (token && !et) || (delimiter && !ed))
                return -ENOMEM;
        _cleanup_free_ char *query = strprintf("list-type=2&max-keys=%u&prefix=%s%s%s%s%s", max_keys, ep,
                                               delimiter ? "&delimiter=" : "", strempty(ed),
                                               token ? "&continuation-token=" : "", strempty(et));
        if (!query)
                return -ENOMEM;
        AwsCall call = {
                .service = AWS_SERVICE_S3,
                .operation = "ListObjectsV2",
                .method = "GET",
                .path = "/",
                .query = query,
                .bucket = t->bucket,
        };
        return aws_client_call(t->client, &call, ret, ret_cause);
}

static int s3_list_page(S3Store *t, const char *prefix, const char *token, unsigned max_keys, XmlNode **ret,
                        char **ret_cause) {
        return s3_list_call(t, prefix, NULL, token, max_keys, ret, ret_cause);
}

/* The client, and one listed key: a missing bucket or missing rights show at open, naming the store, not at
 * the first key. */
static int s3_connect(S3Store *t, const char *bucket, size_t blen, const char *prefix, char **ret_cause) {
        _cleanup_(xml_node_freep) XmlNode *doc = NULL;
        int r;

        t->bucket = strndup(bucket, blen);
        t->prefix = isempty(prefix) ? strdup("") : strjoin(prefix, "/");
        if (!t->bucket || !t->prefix)
                return -ENOMEM;
        r = aws_client_new(&t->client, ret_cause);
        if (r < 0)
                return r;
        return s3_list_page(t, "", NULL, 1, &doc, ret_cause);
}

static int s3_open(Store *s, const char *location, char **ret_cause) {
        size_t blen = strcspn(location, "/");
        const char *prefix = location[blen] == '/' ? location + blen + 1 : "";
        int r;

        if (!bucket_valid(location, blen)) {
                *ret_cause = strdup("expected s3://BUCKET[/PREFIX] with a bucket name of 3-63 characters "
                                    "[a-z0-9.-]");
                return -EINVAL;
        }
        _cleanup_free_ char *p = strdup(prefix);
        if (!p)
                return -ENOMEM;
        size_t pl = strlen(p);
        if (pl > 0 && p[pl - 1] == '/')
                p[--pl] = 0;
        if (pl > 0 && !store_key_valid(p)) {
                *ret_cause =
                    strprintf("invalid prefix '%s' (segments of [A-Za-z0-9._-] not starting with '.')", p);
                return -EINVAL;
        }
        S3Store *t = new0(S3Store, 1);
        if (!t)
                return -ENOMEM;
        s->data = t;
        r = s3_connect(t, location, blen, p, ret_cause);
        if (r < 0) {
                s3_free(s);
                s->data = NULL;
        }
        return r;
}

static int s3_get(Store *s, const char *key, char **ret_data, size_t *ret_len, char **ret_cause) {
        S3Store *t = s->data;
        _cleanup_free_ char *path = object_path(t, key);
        if (!path)
                return -ENOMEM;
        AwsCall call = {
                .service = AWS_SERVICE_S3,
                .operation = "GetObject",
                .method = "GET",
                .path = path,
                .error_codes = s3_no_such_key,
                .bucket = t->bucket,
                .sensitive = true, /* it may be a private key */
        };
        char *err = NULL;
        int r = aws_client_call_raw(t->client, &call, ret_data, ret_len, &err);
        return client_result(r, r == -ENOENT, err, ret_cause);
}

static int s3_put(Store *s, const char *key, const void *data, size_t len, StoreFlags flags, bool if_absent,
                  char **ret_cause) {
        S3Store *t = s->data;
        _cleanup_free_ char *path = object_path(t, key), *body = NULL;
        AwsHeader h[2];
        size_t n = 0;
        size_t body_len = 0;
        if (!path)
                return -ENOMEM;
        if (if_absent)
                h[n++] = (AwsHeader){ "If-None-Match", "*" };
        if (flags & STORE_PRIVATE)
                h[n++] = (AwsHeader){ "x-amz-server-side-encryption", "AES256" };
        AwsCall call = {
                .service = AWS_SERVICE_S3,
                .operation = if_absent ? "PutObject (If-None-Match)" : "PutObject",
                .method = "PUT",
                .path = path,
                .content_type = "application/octet-stream",
                .body = data,
                .body_len = len,
                .headers = h,
                .n_headers = n,
                .error_codes = if_absent ? s3_precondition_failed : NULL,
                .bucket = t->bucket,
        };
        char *err = NULL;
        int r = aws_client_call_raw(t->client, &call, &body, &body_len, &err);
        return client_result(r, r == -EEXIST, err, ret_cause);
}

static int s3_delete(Store *s, const char *key, char **ret_cause) {
        S3Store *t = s->data;
        _cleanup_free_ char *path = object_path(t, key), *body = NULL;
        size_t body_len = 0;
        if (!path)
                return -ENOMEM;
        AwsCall call = {
                .service = AWS_SERVICE_S3,
                .operation = "DeleteObject",
                .method = "DELETE",
                .path = path,
                .error_codes = s3_no_such_key,
                .bucket = t->bucket,
        };
        char *err = NULL;
        int r = aws_client_call_raw(t->client, &call, &body, &body_len, &err);
        if (r == -ENOENT)
                r = 0; /* S3 answers 204 for an absent key; a gateway may say 404 */
        return client_result(r, false, err, ret_cause);
}

/* Appends the page's keys, without the store's prefix; objects that are not valid keys (written by
 * something else) are left out. */
static int list_take_page(S3Store *t, const XmlNode *doc, bool versions, char ***keys, size_t *n) {
        size_t pl = strlen(t->prefix);
        XML_FOREACH_NAMED(c, doc, "Contents") {
                _cleanup_free_ char *k = NULL;
                int r = xml_path_text_dup(c, "Key", S3_KEY_TEXT_MAX, &k);
                if (r < 0)
                        return r;
                if (!k || strncmp(k, t->prefix, pl) != 0 || !store_key_valid(k + pl))
                        continue;
                if (*n >= STORE_LIST_MAX)
                        return -E2BIG;
                if (versions) {
                        /* the ETag changes with every write of other bytes (MD5 or, encrypted with KMS, an
                         * opaque value); the size with it. Without an ETag (a gateway that leaves it out)
                         * the version is empty: unknown, never equal to an earlier one. */
                        const char *etag = xml_path_text(c, "ETag"), *size = xml_path_text(c, "Size");
                        _cleanup_free_ char *kv = isempty(etag)
                                                      ? strprintf("%s\t", k + pl)
                                                      : strprintf("%s\t%s:%s", k + pl, etag, strempty(size));
                        if (!kv)
                                return -ENOMEM;
                        r = strv_extend(keys, kv);
                } else
                        r = strv_extend(keys, k + pl);
                if (r < 0)
                        return r;
                (*n)++;
        }
        return 0;
}

static int s3_list(Store *s, const char *prefix, bool versions, char ***ret_keys, char **ret_cause) {
        S3Store *t = s->data;
        _cleanup_strv_free_ char **keys = NULL;
        _cleanup_free_ char *token = NULL;
        size_t n = 0;
        int r;

        for (unsigned page = 0; page < S3_LIST_PAGES; page++) {
                _cleanup_(xml_node_freep) XmlNode *doc = NULL;
                r = s3_list_page(t, prefix, token, S3_LIST_PAGE, &doc, ret_cause);
                if (r < 0)
                        return r;
                r = doc ? list_take_page(t, doc, versions, &keys, &n) : PK_EMALFORMED;
                if (r < 0) {
                        *ret_cause = r == -E2BIG
                                         ? strprintf("more than %u objects", STORE_LIST_MAX)
                                         : strprintf("ListObjectsV2: bad answer: %s", pk_strerror(r));
                        return r;
                }
                const char *trunc = xml_path_text(doc, "IsTruncated");
                free(token);
                token = NULL;
                if (!trunc || !streq(trunc, "true")) {
                        *ret_keys = TAKE_PTR(keys);
                        return 0;
                }
                r = xml_path_text_dup(doc, "NextContinuationToken", S3_TOKEN_MAX, &token);
                if (r < 0 || isempty(token)) {
                        *ret_cause = strdup("ListObjectsV2: truncated answer without a continuation token");
                        return PK_EMALFORMED;
                }
        }
        *ret_cause = strprintf("ListObjectsV2: more than %u pages", S3_LIST_PAGES);
        return -E2BIG;
}

/* Appends the page's CommonPrefixes as names: "<store prefix><prefix>NAME/" -> "NAME". */
static int dirs_take_page(S3Store *t, const char *prefix, const XmlNode *doc, char ***names, size_t *n) {
        size_t pl = strlen(t->prefix), ql = strlen(prefix);
        XML_FOREACH_NAMED(c, doc, "CommonPrefixes") {
                _cleanup_free_ char *p = NULL;
                int r = xml_path_text_dup(c, "Prefix", S3_KEY_TEXT_MAX, &p);
                if (r < 0)
                        return r;
                size_t len = p ? strlen(p) : 0;
                if (len < pl + ql + 2 || strncmp(p, t->prefix, pl) != 0 ||
                    strncmp(p + pl, prefix, ql) != 0 || p[len - 1] != '/')
                        return PK_EMALFORMED; /* not what was asked for */
                p[len - 1] = 0;
                const char *name = p + pl + ql;
                if (strchr(name, '/') || !store_key_valid(name))
                        continue; /* written by something else */
                if (*n >= STORE_LIST_MAX)
                        return -E2BIG;
                if ((r = strv_extend(names, name)) < 0)
                        return r;
                (*n)++;
        }
        return 0;
}

static int s3_list_dirs(Store *s, const char *prefix, char ***ret_names, char **ret_cause) {
        S3Store *t = s->data;
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_free_ char *token = NULL;
        size_t n = 0;
        int r;

        for (unsigned page = 0; page < S3_LIST_PAGES; page++) {
                _cleanup_(xml_node_freep) XmlNode *doc = NULL;
                r = s3_list_call(t, prefix, "/", token, S3_LIST_PAGE, &doc, ret_cause);
                if (r < 0)
                        return r;
                r = doc ? dirs_take_page(t, prefix, doc, &names, &n) : PK_EMALFORMED;
                if (r < 0) {
                        *ret_cause = r == -E2BIG
                                         ? strprintf("more than %u directories", STORE_LIST_MAX)
                                         : strprintf("ListObjectsV2: bad answer: %s", pk_strerror(r));
                        return r;
                }
                const char *trunc = xml_path_text(doc, "IsTruncated");
                free(token);
                token = NULL;
                if (!trunc || !streq(trunc, "true")) {
                        *ret_names = TAKE_PTR(names);
                        return 0;
                }
                r = xml_path_text_dup(doc, "NextContinuationToken", S3_TOKEN_MAX, &token);
                if (r < 0 || isempty(token)) {
                        *ret_cause = strdup("ListObjectsV2: truncated answer without a continuation token");
                        return PK_EMALFORMED;
                }
        }
        *ret_cause = strprintf("ListObjectsV2: more than %u pages", S3_LIST_PAGES);
        return -E2BIG;
}

const StoreOps store_s3_ops = {
        .scheme = "s3://",
        .open = s3_open,
        .free = s3_free,
        .get = s3_get,
        .put = s3_put,
        .list = s3_list,
        .delete = s3_delete,
        .list_dirs = s3_list_dirs,
};
