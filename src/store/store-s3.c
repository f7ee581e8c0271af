/* SPDX-License-Identifier: Apache-2.0 */
/* The S3 store (s3://BUCKET[/PREFIX][?region=REGION]): each object is the S3 object PREFIX/KEY, through the
 * SigV4 client of aws/, which addresses and signs every call of the store for the bucket's region (the
 * URL's, else the one S3 names when the open's first call went to another). Create-if-absent is PutObject
 * with If-None-Match: * (S3 answers 412 PreconditionFailed when the key exists: exactly one concurrent
 * writer wins, S3 User Guide "Conditional writes"); PutObject is atomic per object, so readers see the old
 * or the new object. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "aws/client.h"
#include "aws/sigv4.h"
#include "basic/aws-names.h"
#include "basic/buf.h"
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

static char *object_path(S3Store *t, const char *key) {
        _cleanup_free_ char *full = strjoin(t->prefix, key);
        char *p = full ? uri_encode(full, true) : NULL;
        char *r = p ? strjoin("/", p) : NULL;
        free(p);
        return r;
}

/* The ListObjectsV2 query of one page (caller frees). delimiter: NULL, or "/" to get the keys' next
 * segments as CommonPrefixes instead of the keys. */
static char *list_query(S3Store *t, const char *prefix, const char *delimiter, const char *token,
                        unsigned max_keys) {
        _cleanup_free_ char *full = strjoin(t->prefix, prefix);
        _cleanup_free_ char *ep = full ? uri_encode(full, false) : NULL;
        _cleanup_free_ char *et = token ? uri_encode(token, false) : NULL;
        _cleanup_free_ char *ed = delimiter ? uri_encode(delimiter, false) : NULL;
        if (!ep || (token && !et) || (delimiter && !ed))
                return NULL;
        return strprintf("list-type=2&max-keys=%u&prefix=%s%s%s%s%s", max_keys, ep,
                         delimiter ? "&delimiter=" : "", strempty(ed), token ? "&continuation-token=" : "",
                         strempty(et));
}

/* One ListObjectsV2 page. With ret_region (the open's probe), the answer's document is not kept, and the
 * region S3 names for the bucket in it goes to *ret_region (NULL when none). */
static int s3_list_page(S3Store *t, const char *prefix, const char *delimiter, const char *token,
                        unsigned max_keys, XmlNode **ret, char **ret_region, char **ret_cause) {
        _cleanup_free_ char *query = list_query(t, prefix, delimiter, token, max_keys);
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
        if (ret_region)
                return aws_client_call_header(t->client, &call, "x-amz-bucket-region", ret_region,
                                              ret_cause);
        return aws_client_call(t->client, &call, ret, ret_cause);
}

/* One listed key, and the region S3 names for the bucket in the answer (*ret_region, NULL when none). */
static int s3_list_probe(S3Store *t, char **ret_region, char **ret_cause) {
        return s3_list_page(t, "", NULL, NULL, 1, NULL, ret_region, ret_cause);
}

/* The region S3 names for the bucket in a HeadBucket answer, whatever its status (NULL when none). */
static char *s3_head_bucket_region(S3Store *t) {
        char *region = NULL;
        AwsCall call = {
                .service = AWS_SERVICE_S3,
                .operation = "HeadBucket",
                .method = "HEAD",
                .path = "/",
                .bucket = t->bucket,
        };
        (void)aws_client_call_header(t->client, &call, "x-amz-bucket-region", &region, NULL);
        return region;
}

/* One listed key: a missing bucket or missing rights show at open, naming the store, not at the first key.
 * It also finds the bucket's region when the URL does not give it: S3 refuses a call addressed or signed
 * for another region (301 PermanentRedirect from another region's endpoint, 400
 * AuthorizationHeaderMalformed from the bucket's own) and names the bucket's region in
 * x-amz-bucket-region; when that answer does not, a HeadBucket does (on 200, 301, 400 and 403 alike). The
 * store then addresses and signs every call for that region. A call in the right region costs nothing
 * more than before: the HEAD and the second listing happen only after a failed first one. */
static int s3_probe(S3Store *t, bool region_given, char **ret_cause) {
        _cleanup_free_ char *found = NULL, *err = NULL, *again = NULL;
        const char *region = NULL;
        int r = s3_list_probe(t, &found, &err);
        if (r == PK_ECLOUD && !aws_region_name_valid(found)) {
                free(found);
                found = s3_head_bucket_region(t);
        }
        if (r != PK_ECLOUD || !aws_region_name_valid(found) ||
            aws_client_region(t->client, &region, NULL) < 0 || streq(found, region)) {
                if (r < 0)
                        *ret_cause = TAKE_PTR(err);
                return r;
        }
        if (region_given) {
                *ret_cause = strprintf("the bucket is in region '%s', not in the URL's region '%s': %s",
                                       found, region, strnull(err));
                return r;
        }
        r = aws_client_set_region(t->client, found);
        if (r < 0)
                return r;
        return s3_list_probe(t, &again, ret_cause);
}

/* The client for the bucket's region, then the probe. Without a region in the URL, the first guess is the
 * client's (AWS_REGION, the instance's), else us-east-1: the probe corrects it. */
static int s3_connect(S3Store *t, const char *region, char **ret_cause) {
        const char *guess;
        int r = aws_client_new(&t->client, ret_cause);
        if (r < 0)
                return r;
        if (region)
                r = aws_client_set_region(t->client, region);
        else if (aws_client_region(t->client, &guess, NULL) < 0)
                r = aws_client_set_region(t->client, "us-east-1");
        if (r < 0)
                return r;
        return s3_probe(t, region != NULL, ret_cause);
}

/* "?region=REGION", the only parameter of an S3 store's URL: *ret_region (a pointer into query). */
static int parse_query(const char *query, const char **ret_region, char **ret_cause) {
        const char *v = startswith(query, "region=");
        if (!v) {
                *ret_cause = strprintf("unknown parameter '%s' (the only one is region=REGION)", query);
                return -EINVAL;
        }
        if (!aws_region_name_valid(v)) {
                *ret_cause =
                    strprintf("invalid region '%s' (1-64 characters of [a-z0-9-], as eu-west-1)", v);
                return -EINVAL;
        }
        *ret_region = v;
        return 0;
}

/* location: BUCKET[/PREFIX][?region=REGION] */
static int s3_parse(S3Store *t, const char *location, const char **ret_region, char **ret_cause) {
        size_t blen = strcspn(location, "/?");
        const char *q = strchr(location, '?');
        size_t end = q ? (size_t)(q - location) : strlen(location);
        int r;

        *ret_region = NULL;
        if (!aws_bucket_name_valid(location, blen)) {
                *ret_cause =
                    strdup("expected s3://BUCKET[/PREFIX][?region=REGION] with a bucket name of 3-63 "
                           "characters [a-z0-9.-]");
                return -EINVAL;
        }
        if (q && (r = parse_query(q + 1, ret_region, ret_cause)) < 0)
                return r;
        r = store_location_prefix(location[blen] == '/' ? location + blen + 1 : "",
                                  location[blen] == '/' ? end - blen - 1 : 0, &t->prefix, ret_cause);
        if (r < 0)
                return r;
        t->bucket = strndup(location, blen);
        return t->bucket ? 0 : -ENOMEM;
}

static int s3_open(Store *s, const char *location, char **ret_cause) {
        const char *region;
        S3Store *t = new0(S3Store, 1);
        if (!t)
                return -ENOMEM;
        s->data = t;
        int r = s3_parse(t, location, &region, ret_cause);
        if (r >= 0)
                r = s3_connect(t, region, ret_cause);
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
        return store_provider_result(r, r == -ENOENT, err, ret_cause);
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
        return store_provider_result(r, r == -EEXIST, err, ret_cause);
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
        return store_provider_result(r, false, err, ret_cause);
}

/* What a listing gathers, page by page: keys (or, with a delimiter, the names of the directories under
 * prefix), with their versions when asked. */
typedef struct S3Listing {
        const char *prefix;
        const char *delimiter; /* NULL: keys; "/": directories */
        bool versions;
        char **items;
        size_t n;
} S3Listing;

static int listing_add(S3Listing *l, const char *item) {
        if (l->n >= STORE_LIST_MAX)
                return -E2BIG;
        int r = strv_extend(&l->items, item);
        if (r >= 0)
                l->n++;
        return r;
}

/* Appends the page's keys, without the store's prefix; objects that are not valid keys (written by
 * something else) are left out. */
static int take_keys(S3Store *t, const XmlNode *doc, S3Listing *l) {
        size_t pl = strlen(t->prefix);
        XML_FOREACH_NAMED(c, doc, "Contents") {
                _cleanup_free_ char *k = NULL, *kv = NULL;
                int r = xml_path_text_dup(c, "Key", S3_KEY_TEXT_MAX, &k);
                if (r < 0)
                        return r;
                if (!k || strncmp(k, t->prefix, pl) != 0 || !store_key_valid(k + pl))
                        continue;
                if (l->versions) {
                        /* the ETag changes with every write of other bytes (MD5 or, encrypted with KMS, an
                         * opaque value); the size with it. Without an ETag (a gateway that leaves it out)
                         * the version is empty: unknown, never equal to an earlier one. */
                        const char *etag = xml_path_text(c, "ETag"), *size = xml_path_text(c, "Size");
                        kv = isempty(etag) ? strprintf("%s\t", k + pl)
                                           : strprintf("%s\t%s:%s", k + pl, etag, strempty(size));
                        if (!kv)
                                return -ENOMEM;
                }
                if ((r = listing_add(l, kv ?: k + pl)) < 0)
                        return r;
        }
        return 0;
}

/* Appends the page's CommonPrefixes as names: "<store prefix><prefix>NAME/" -> "NAME". */
static int take_dirs(S3Store *t, const XmlNode *doc, S3Listing *l) {
        size_t pl = strlen(t->prefix), ql = strlen(l->prefix);
        XML_FOREACH_NAMED(c, doc, "CommonPrefixes") {
                _cleanup_free_ char *p = NULL;
                int r = xml_path_text_dup(c, "Prefix", S3_KEY_TEXT_MAX, &p);
                if (r < 0)
                        return r;
                size_t len = p ? strlen(p) : 0;
                if (len < pl + ql + 2 || strncmp(p, t->prefix, pl) != 0 ||
                    strncmp(p + pl, l->prefix, ql) != 0 || p[len - 1] != '/')
                        return PK_EMALFORMED; /* not what was asked for */
                p[len - 1] = 0;
                const char *name = p + pl + ql;
                if (strchr(name, '/') || !store_key_valid(name))
                        continue; /* written by something else */
                if ((r = listing_add(l, name)) < 0)
                        return r;
        }
        return 0;
}

/* Every page of a listing, following continuation tokens, at most S3_LIST_PAGES of them. */
static int s3_list_all(S3Store *t, S3Listing *l, char **ret_cause) {
        _cleanup_free_ char *token = NULL;
        for (unsigned page = 0; page < S3_LIST_PAGES; page++) {
                _cleanup_(xml_node_freep) XmlNode *doc = NULL;
                int r = s3_list_page(t, l->prefix, l->delimiter, token, S3_LIST_PAGE, &doc, NULL, ret_cause);
                if (r < 0)
                        return r;
                r = !doc ? PK_EMALFORMED : l->delimiter ? take_dirs(t, doc, l) : take_keys(t, doc, l);
                if (r < 0) {
                        *ret_cause = r == -E2BIG
                                         ? strprintf("more than %u %s", STORE_LIST_MAX,
                                                     l->delimiter ? "directories" : "objects")
                                         : strprintf("ListObjectsV2: bad answer: %s", pk_strerror(r));
                        return r;
                }
                const char *trunc = xml_path_text(doc, "IsTruncated");
                free(token);
                token = NULL;
                if (!trunc || !streq(trunc, "true"))
                        return 0;
                r = xml_path_text_dup(doc, "NextContinuationToken", S3_TOKEN_MAX, &token);
                if (r < 0 || isempty(token)) {
                        *ret_cause = strdup("ListObjectsV2: truncated answer without a continuation token");
                        return PK_EMALFORMED;
                }
        }
        *ret_cause = strprintf("ListObjectsV2: more than %u pages", S3_LIST_PAGES);
        return -E2BIG;
}

static int s3_list(Store *s, const char *prefix, bool versions, char ***ret_keys, char **ret_cause) {
        S3Listing l = { .prefix = prefix, .versions = versions };
        int r = s3_list_all(s->data, &l, ret_cause);
        if (r >= 0)
                *ret_keys = TAKE_PTR(l.items);
        strv_free(l.items);
        return r;
}

static int s3_list_dirs(Store *s, const char *prefix, char ***ret_names, char **ret_cause) {
        S3Listing l = { .prefix = prefix, .delimiter = "/" };
        int r = s3_list_all(s->data, &l, ret_cause);
        if (r >= 0)
                *ret_names = TAKE_PTR(l.items);
        strv_free(l.items);
        return r;
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
