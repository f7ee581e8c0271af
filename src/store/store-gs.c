/* SPDX-License-Identifier: Apache-2.0 */
/* The Cloud Storage store (gs://BUCKET[/PREFIX]): each object is the object PREFIX/KEY of the bucket,
 * through the JSON API and the Google Cloud client of gce/. Create-if-absent is an upload with
 * ifGenerationMatch=0 (Cloud Storage answers 412 when the object exists: exactly one concurrent writer
 * wins, "Request preconditions"); an upload replaces an object atomically, so readers see the old or the
 * new one. No ACL is ever sent: objects take the bucket's (uniform bucket-level access, public access
 * prevention; docs/gce.md) and its default encryption. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/buf.h"
#include "basic/errors.h"
#include "basic/gce-names.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "gce/client.h"
#include "gce/storage.h"
#include "store/store-internal.h"

typedef struct GsStore {
        GceClient *client;
        char *bucket;
        char *prefix; /* "" or "a/b/": prepended to every key */
} GsStore;

static void gs_free(Store *s) {
        GsStore *t = s->data;
        if (!t)
                return;
        gce_client_free(t->client);
        free(t->bucket);
        free(t->prefix);
        free(t);
}

static const GceErrorCode gs_not_found[] = {
        { 404, NULL, -ENOENT },
        {},
};
static const GceErrorCode gs_exists[] = {
        { 412, NULL, -EEXIST },
        {},
};

/* "/b/BUCKET/o/<PREFIX/KEY, every '/' encoded>" (the JSON API names an object by one path segment). */
static char *object_path(GsStore *t, const char *key) {
        _cleanup_free_ char *full = strjoin(t->prefix, key), *e = full ? uri_encode(full, false) : NULL;
        return e ? strjoin("/b/", t->bucket, "/o/", e) : NULL;
}

/* Every listed object (or, with dirs, directory) under the store's prefix + prefix; capped as every store's
 * listing is. */
static int gs_list_items(GsStore *t, const char *prefix, bool dirs, GceObject **ret, size_t *ret_n,
                         char **ret_cause) {
        _cleanup_free_ char *full = strjoin(t->prefix, prefix);
        if (!full)
                return -ENOMEM;
        int r = gce_storage_list(t->client, t->bucket, full, dirs, ret, ret_n, ret_cause);
        if (r >= 0 && *ret_n > STORE_LIST_MAX) {
                gce_objects_free(*ret, *ret_n);
                *ret_cause = strprintf("more than %u %s", STORE_LIST_MAX, dirs ? "directories" : "objects");
                return -E2BIG;
        }
        return r;
}

/* location: BUCKET[/PREFIX] */
static int gs_parse(GsStore *t, const char *location, char **ret_cause) {
        size_t blen = strcspn(location, "/");
        if (!gce_bucket_name_valid(location, blen) || strchr(location, '?')) {
                *ret_cause = strdup("expected gs://BUCKET[/PREFIX] with a bucket name of 3-63 characters "
                                    "[a-z0-9_.-] (up to 222 with dots)");
                return -EINVAL;
        }
        const char *p = location[blen] == '/' ? location + blen + 1 : "";
        int r = store_location_prefix(p, strlen(p), &t->prefix, ret_cause);
        if (r < 0)
                return r;
        t->bucket = strndup(location, blen);
        return t->bucket ? 0 : -ENOMEM;
}

/* One listed object: a missing bucket or missing rights show at open, naming the store. */
static int gs_probe(GsStore *t, char **ret_cause) {
        _cleanup_free_ char *path = strjoin("/b/", t->bucket, "/o"), *body = NULL;
        size_t len = 0;
        if (!path)
                return -ENOMEM;
        GceCall call = { .service = GCE_SERVICE_STORAGE,
                         .operation = "objects.list",
                         .method = "GET",
                         .path = path,
                         .query = "maxResults=1" };
        return gce_client_call_raw(t->client, &call, &body, &len, ret_cause);
}

/* Cloud Storage answers 404 "notFound" for a missing object and for a missing bucket alike (the reason is
 * the same; only the message differs, and we never decide on wording). A 404 is read as "no such object"
 * only once the bucket answers a listing: a bucket deleted or made unreadable since the open is an error,
 * never an absent key (a missing CA would be created anew). Absent reads are rare (a first start), so this
 * costs an idle pass nothing. */
static int gs_confirm_absent(GsStore *t, char *err, char **ret_cause) {
        _cleanup_free_ char *why = NULL;
        int r = gs_probe(t, &why);
        if (r >= 0) {
                free(err);
                return -ENOENT;
        }
        if (ret_cause)
                *ret_cause = strprintf("%s; and the bucket itself: %s", strnull(err), strnull(why));
        free(err);
        return r;
}

static int gs_open(Store *s, const char *location, char **ret_cause) {
        GsStore *t = new0(GsStore, 1);
        if (!t)
                return -ENOMEM;
        s->data = t;
        int r = gs_parse(t, location, ret_cause);
        if (r >= 0)
                r = gce_client_new(&t->client, ret_cause);
        if (r >= 0)
                r = gs_probe(t, ret_cause);
        if (r < 0) {
                gs_free(s);
                s->data = NULL;
        }
        return r;
}

static int gs_get(Store *s, const char *key, char **ret_data, size_t *ret_len, char **ret_cause) {
        GsStore *t = s->data;
        _cleanup_free_ char *path = object_path(t, key);
        char *err = NULL;
        if (!path)
                return -ENOMEM;
        GceCall call = { .service = GCE_SERVICE_STORAGE,
                         .operation = "objects.get",
                         .method = "GET",
                         .path = path,
                         .query = "alt=media",
                         .error_codes = gs_not_found,
                         .sensitive = true /* it may be a private key */ };
        int r = gce_client_call_raw(t->client, &call, ret_data, ret_len, &err);
        if (r == -ENOENT)
                return gs_confirm_absent(t, err, ret_cause);
        return store_provider_result(r, false, err, ret_cause);
}

static int gs_put(Store *s, const char *key, const void *data, size_t len, StoreFlags flags, bool if_absent,
                  char **ret_cause) {
        GsStore *t = s->data;
        _cleanup_free_ char *path = strjoin("/b/", t->bucket, "/o"), *full = strjoin(t->prefix, key);
        _cleanup_free_ char *ename = full ? uri_encode(full, false) : NULL, *query = NULL, *body = NULL;
        size_t body_len = 0;
        char *err = NULL;
        if (!path || !ename)
                return -ENOMEM;
        query = strprintf("uploadType=media&name=%s%s", ename, if_absent ? "&ifGenerationMatch=0" : "");
        if (!query)
                return -ENOMEM;
        GceCall call = { .service = GCE_SERVICE_STORAGE_UPLOAD,
                         .operation = if_absent ? "objects.insert (ifGenerationMatch=0)" : "objects.insert",
                         .method = "POST",
                         .path = path,
                         .query = query,
                         .content_type = "application/octet-stream",
                         .body = data,
                         .body_len = len,
                         .error_codes = if_absent ? gs_exists : NULL };
        int r = gce_client_call_raw(t->client, &call, &body, &body_len, &err);
        return store_provider_result(r, r == -EEXIST, err, ret_cause);
}

static int gs_delete(Store *s, const char *key, char **ret_cause) {
        GsStore *t = s->data;
        _cleanup_free_ char *path = object_path(t, key), *body = NULL;
        size_t len = 0;
        char *err = NULL;
        if (!path)
                return -ENOMEM;
        GceCall call = { .service = GCE_SERVICE_STORAGE,
                         .operation = "objects.delete",
                         .method = "DELETE",
                         .path = path,
                         .error_codes = gs_not_found };
        int r = gce_client_call_raw(t->client, &call, &body, &len, &err);
        if (r == -ENOENT) { /* already gone, what delete wants: if the bucket is there */
                r = gs_confirm_absent(t, TAKE_PTR(err), ret_cause);
                return r == -ENOENT ? 0 : r;
        }
        return store_provider_result(r, false, err, ret_cause);
}

static int gs_list(Store *s, const char *prefix, bool versions, char ***ret_keys, char **ret_cause) {
        GsStore *t = s->data;
        GceObject *items = NULL;
        size_t n = 0, pl = strlen(t->prefix);
        char **keys = NULL;
        int r = gs_list_items(t, prefix, false, &items, &n, ret_cause);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                const char *k = items[i].name;
                if (strncmp(k, t->prefix, pl) != 0 || !store_key_valid(k + pl))
                        continue; /* written by something else */
                _cleanup_free_ char *kv =
                    versions ? strprintf("%s\t%s", k + pl, strempty(items[i].generation)) : NULL;
                r = versions && !kv ? -ENOMEM : strv_extend(&keys, kv ?: k + pl);
        }
        gce_objects_free(items, n);
        if (r < 0) {
                strv_free(keys);
                return r;
        }
        *ret_keys = keys ?: calloc(1, sizeof(char *));
        return *ret_keys ? 0 : -ENOMEM;
}

static int gs_list_dirs(Store *s, const char *prefix, char ***ret_names, char **ret_cause) {
        GsStore *t = s->data;
        GceObject *items = NULL;
        size_t n = 0, pl = strlen(t->prefix), ql = strlen(prefix);
        char **names = NULL;
        int r = gs_list_items(t, prefix, true, &items, &n, ret_cause);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                char *p = items[i].name;
                size_t len = strlen(p);
                if (len < pl + ql + 2 || strncmp(p, t->prefix, pl) != 0 ||
                    strncmp(p + pl, prefix, ql) != 0 || p[len - 1] != '/') {
                        *ret_cause = strdup("objects.list: a prefix that was not asked for");
                        r = PK_EMALFORMED;
                        break;
                }
                p[len - 1] = 0;
                const char *name = p + pl + ql;
                if (!strchr(name, '/') && store_key_valid(name))
                        r = strv_extend(&names, name);
        }
        gce_objects_free(items, n);
        if (r < 0) {
                strv_free(names);
                return r;
        }
        *ret_names = names ?: calloc(1, sizeof(char *));
        return *ret_names ? 0 : -ENOMEM;
}

const StoreOps store_gs_ops = {
        .scheme = "gs://",
        .open = gs_open,
        .free = gs_free,
        .get = gs_get,
        .put = gs_put,
        .list = gs_list,
        .delete = gs_delete,
        .list_dirs = gs_list_dirs,
};
