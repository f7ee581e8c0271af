/* SPDX-License-Identifier: Apache-2.0 */
#include "store/store.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "store/store-internal.h"

#define STORE_KEY_MAX 1024U
#define STORE_URL_MAX 1024U

static const StoreOps *const providers[] = {
        &store_file_ops,
        &store_s3_ops,
        &store_gs_ops,
};

static bool key_char_ok(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
               c == '_' || c == '-';
}

/* Segments never start with '.': that excludes "." and "..", and keeps the dot names free for a directory
 * store's temporary files, which are then never mistaken for objects. */
bool store_key_valid(const char *key) {
        if (isempty(key) || strlen(key) > STORE_KEY_MAX)
                return false;
        for (const char *p = key; *p;) {
                size_t len = strcspn(p, "/");
                if (len == 0 || p[0] == '.')
                        return false;
                for (size_t i = 0; i < len; i++)
                        if (!key_char_ok(p[i]))
                                return false;
                p += len;
                if (*p == '/' && !*++p)
                        return false; /* a trailing '/' */
        }
        return true;
}

/* A list prefix: "" (everything), or a key, optionally with one trailing '/'. */
static bool prefix_valid(const char *prefix) {
        if (isempty(prefix))
                return true;
        size_t l = strlen(prefix);
        if (prefix[l - 1] != '/')
                return store_key_valid(prefix);
        _cleanup_free_ char *k = strndup(prefix, l - 1);
        return k && store_key_valid(k);
}

int store_key_split(const char *key, char **ret_dir, const char **ret_name) {
        const char *slash = strrchr(key, '/');
        char *dir = slash ? strndup(key, (size_t)(slash - key)) : strdup("");
        if (!dir)
                return -ENOMEM;
        *ret_dir = dir;
        *ret_name = slash ? slash + 1 : key;
        return 0;
}

/* "state store 'URL': key 'K': cause" (the key part when there is one). Takes cause. */
static int store_fail(const char *url, const char *what, const char *key, int r, char *cause,
                      char **ret_error) {
        if (ret_error)
                *ret_error = strprintf("state store '%s': %s%s%s%s: %s", url, what, key ? " '" : "",
                                       strempty(key), key ? "'" : "", cause ?: pk_strerror(r));
        free(cause);
        return r;
}

int store_open(const char *url, Store **ret, char **ret_error) {
        const StoreOps *ops = NULL;
        const char *location = NULL;
        char *cause = NULL;
        int r;

        if (!url || strlen(url) > STORE_URL_MAX || string_has_cc(url))
                return store_fail(strempty(url), "open", NULL, -EINVAL,
                                  strdup("not a URL (at most 1024 printable characters)"), ret_error);
        for (size_t i = 0; i < ELEMENTSOF(providers) && !ops; i++)
                if ((location = startswith(url, providers[i]->scheme)))
                        ops = providers[i];
        if (!ops)
                return store_fail(url, "open", NULL, -EINVAL,
                                  strdup("unknown scheme (expected file:///DIR, s3://BUCKET[/PREFIX] or "
                                         "gs://BUCKET[/PREFIX])"),
                                  ret_error);
        _cleanup_(store_freep) Store *s = new0(Store, 1);
        if (!s || !(s->url = strdup(url)))
                return -ENOMEM;
        r = ops->open(s, location, &cause);
        if (r < 0)
                return store_fail(url, "open", NULL, r, cause, ret_error);
        s->ops = ops; /* set only now: store_free() calls ops->free for an opened store */
        *ret = TAKE_PTR(s);
        return 0;
}

Store *store_free(Store *s) {
        if (!s)
                return NULL;
        if (s->ops)
                s->ops->free(s);
        free(s->url);
        free(s->condition_cause);
        free(s);
        return NULL;
}

const char *store_url(const Store *s) {
        return s->url;
}

static int check_key(const Store *s, const char *key, char **ret_error) {
        if (store_key_valid(key))
                return 0;
        return store_fail(s->url, "key", strempty(key), -EINVAL,
                          strdup("invalid key (1-1024 characters, relative, segments of [A-Za-z0-9._-] not "
                                 "starting with '.')"),
                          ret_error);
}

int store_get(Store *s, const char *key, char **ret_data, size_t *ret_len, char **ret_error) {
        char *cause = NULL;
        int r = check_key(s, key, ret_error);
        if (r < 0)
                return r;
        r = s->ops->get(s, key, ret_data, ret_len, &cause);
        /* -ENOENT gets a message too: a caller that needed the object prints it as it is */
        if (r < 0)
                return store_fail(s->url, "get", key, r, cause, ret_error);
        return 0;
}

/* The verdict of condition_probe(): kept for the rest of this open. */
static int condition_verdict(Store *s, int verdict, char *cause, char **ret_cause) {
        s->condition_verdict = verdict;
        free(s->condition_cause);
        s->condition_cause = cause;
        if (verdict > 0)
                return 0;
        if (!cause)
                return -ENOMEM;
        *ret_cause = strdup(cause);
        return verdict;
}

/* Creates a new scratch key (named in key) twice, then deletes it: *ret_first and *ret_second are the two
 * answers (*ret_second is 0 when there was no second create); *ret_cause the reason of a failure. With the
 * caller's flags: a bucket policy that wants server-side encryption refuses the probe only when it would
 * refuse the caller's object too. */
static void probe_scratch_key(Store *s, StoreFlags flags, char key[static 64], int *ret_first,
                              int *ret_second, char **ret_cause) {
        uint64_t rnd = 0;
        char *ignored = NULL;
        if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
                rnd = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL);
        snprintf(key, 64, "put-if-absent-probe-%016llx", (unsigned long long)rnd);
        *ret_second = 0;
        *ret_first = s->ops->put(s, key, "1", 1, flags, true, ret_cause);
        if (*ret_first < 0)
                return;
        *ret_second = s->ops->put(s, key, "2", 1, flags, true, ret_cause);
        (void)s->ops->delete (s, key, &ignored); /* a scratch key left behind is harmless */
        free(ignored);
}

/* Whether the store honours create-if-absent, found once per open, before its first put-if-absent: a
 * scratch key created twice must be refused the second time. An S3-compatible gateway that ignores
 * If-None-Match answers 200 to both, and then every master's first start would make its own cluster CA.
 * A store that is only read (an idle pass, get, list) is never probed: that costs no request and needs no
 * right to write. A failure of the probe itself (a timeout) is returned and the next put-if-absent probes
 * again; the verdict on the store is kept. */
static int condition_probe(Store *s, StoreFlags flags, char **ret_cause) {
        _cleanup_free_ char *cause = NULL;
        char key[64];
        int first, second;

        if (s->condition_verdict > 0)
                return 0;
        if (s->condition_verdict < 0) {
                *ret_cause = strdup(s->condition_cause);
                return *ret_cause ? s->condition_verdict : -ENOMEM;
        }
        probe_scratch_key(s, flags, key, &first, &second, &cause);
        if (first == -EEXIST)
                return condition_verdict(
                    s, -EOPNOTSUPP,
                    strprintf("the store does not honour create-if-absent: it answered 'exists' for a new "
                              "scratch key '%s'",
                              key),
                    ret_cause);
        if (first >= 0 && second == 0)
                return condition_verdict(
                    s, -EOPNOTSUPP,
                    strprintf(
                        "the store does not honour create-if-absent (S3: PutObject with If-None-Match: "
                        "*): a second create of the scratch key '%s' succeeded, so two masters could "
                        "each create their own cluster CA; use a store that refuses it",
                        key),
                    ret_cause);
        if (first >= 0 && second == -EEXIST)
                return condition_verdict(s, 1, NULL, ret_cause);
        int r = first < 0 ? first : second;
        *ret_cause = strprintf("probing create-if-absent with the scratch key '%s': %s", key,
                               cause ?: pk_strerror(r));
        return r;
}

/* An object this call created, read back, must be the one written: a store that does not honour the
 * condition may have let another writer replace it. The stored one is then the truth: -EEXIST, as if the
 * key had existed (the caller reads it), with a message that says so. */
static int verify_created(Store *s, const char *key, const void *data, size_t len, char **ret_error) {
        char *back = NULL, *cause = NULL;
        size_t back_len = 0;
        int r = s->ops->get(s, key, &back, &back_len, &cause);
        if (r < 0) {
                char *why = strprintf("created, but reading it back failed: %s", cause ?: pk_strerror(r));
                free(cause);
                return store_fail(s->url, "put-if-absent", key, r, why, ret_error);
        }
        bool same = back_len == len && (len == 0 || memcmp(back, data, len) == 0);
        erase_and_free(back, back_len);
        if (same)
                return 0;
        return store_fail(s->url, "put-if-absent", key, -EEXIST,
                          strdup("the store did not honour create-if-absent: it answered 'created', but the "
                                 "object read back is another writer's; that one is kept and used"),
                          ret_error);
}

static int store_put_full(Store *s, const char *key, const void *data, size_t len, StoreFlags flags,
                          bool if_absent, char **ret_error) {
        char *cause = NULL;
        int r = check_key(s, key, ret_error);
        if (r < 0)
                return r;
        if (len > STORE_OBJECT_MAX || (len > 0 && !data))
                return store_fail(
                    s->url, "put", key, PK_ETOOBIG,
                    strprintf("%zu bytes: objects hold at most %u bytes", len, STORE_OBJECT_MAX), ret_error);
        if (if_absent && (r = condition_probe(s, flags, &cause)) < 0)
                return store_fail(s->url, "put-if-absent", key, r, cause, ret_error);
        r = s->ops->put(s, key, data, len, flags, if_absent, &cause);
        if (r == -EEXIST && if_absent) {
                free(cause); /* the answer create-if-absent is for: no message */
                return r;
        }
        if (r < 0)
                return store_fail(s->url, if_absent ? "put-if-absent" : "put", key, r, cause, ret_error);
        return if_absent ? verify_created(s, key, data, len, ret_error) : 0;
}

int store_put_if_absent(Store *s, const char *key, const void *data, size_t len, StoreFlags flags,
                        char **ret_error) {
        return store_put_full(s, key, data, len, flags, true, ret_error);
}

int store_put(Store *s, const char *key, const void *data, size_t len, StoreFlags flags, char **ret_error) {
        return store_put_full(s, key, data, len, flags, false, ret_error);
}

static int list_impl(Store *s, const char *prefix, bool versions, char ***ret_keys, char **ret_error) {
        char **keys = NULL, *cause = NULL;
        int r;

        if (!prefix_valid(prefix))
                return store_fail(s->url, "list prefix", strempty(prefix), -EINVAL,
                                  strdup("invalid prefix (a key, optionally ending in '/')"), ret_error);
        r = s->ops->list(s, strempty(prefix), versions, &keys, &cause);
        if (r < 0)
                return store_fail(s->url, "list prefix", strempty(prefix), r, cause, ret_error);
        if (!keys && !(keys = new0(char *, 1)))
                return -ENOMEM;
        strv_sort(keys); /* "KEY\tVERSION" sorts as KEY: a tab sorts before every character of a key */
        *ret_keys = keys;
        return 0;
}

int store_list(Store *s, const char *prefix, char ***ret_keys, char **ret_error) {
        return list_impl(s, prefix, false, ret_keys, ret_error);
}

int store_list_versions(Store *s, const char *prefix, char ***ret_keys, char ***ret_versions,
                        char **ret_error) {
        _cleanup_strv_free_ char **kv = NULL, **versions = NULL;
        int r = list_impl(s, prefix, true, &kv, ret_error);
        if (r < 0)
                return r;
        size_t n = strv_length(kv);
        versions = new0(char *, n + 1);
        if (!versions)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                char *tab = strchr(kv[i], '\t');
                if (!tab)
                        return -EIO; /* a provider's mistake */
                *tab = 0;
                if (!(versions[i] = strdup(tab + 1)))
                        return -ENOMEM;
        }
        *ret_keys = TAKE_PTR(kv);
        *ret_versions = TAKE_PTR(versions);
        return 0;
}

int store_delete(Store *s, const char *key, char **ret_error) {
        char *cause = NULL;
        int r = check_key(s, key, ret_error);
        if (r < 0)
                return r;
        r = s->ops->delete (s, key, &cause);
        if (r < 0)
                return store_fail(s->url, "delete", key, r, cause, ret_error);
        return 0;
}

int store_list_dirs(Store *s, const char *prefix, char ***ret_names, char **ret_error) {
        char **names = NULL, *cause = NULL;
        if (!isempty(prefix) && (!endswith(prefix, "/") || !prefix_valid(prefix)))
                return store_fail(s->url, "list directories under", strempty(prefix), -EINVAL,
                                  strdup("invalid prefix (empty or a key ending in '/')"), ret_error);
        int r = s->ops->list_dirs(s, strempty(prefix), &names, &cause);
        if (r < 0)
                return store_fail(s->url, "list directories under", strempty(prefix), r, cause, ret_error);
        if (!names && !(names = new0(char *, 1)))
                return -ENOMEM;
        strv_sort(names);
        *ret_names = names;
        return 0;
}

int store_provider_result(int r, bool expected, char *err, char **ret_cause) {
        if (r < 0 && !expected && ret_cause)
                *ret_cause = TAKE_PTR(err);
        free(err);
        return r;
}

int store_location_prefix(const char *p, size_t len, char **ret_prefix, char **ret_cause) {
        _cleanup_free_ char *d = strndup(p, len);
        if (!d)
                return -ENOMEM;
        if (len > 0 && d[len - 1] == '/')
                d[--len] = 0;
        if (len > 0 && !store_key_valid(d)) {
                *ret_cause =
                    strprintf("invalid prefix '%s' (segments of [A-Za-z0-9._-] not starting with '.')", d);
                return -EINVAL;
        }
        *ret_prefix = len == 0 ? strdup("") : strjoin(d, "/");
        return *ret_prefix ? 0 : -ENOMEM;
}
