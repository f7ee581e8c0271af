/* SPDX-License-Identifier: Apache-2.0 */
#include "gce/list.h"

#include <stdint.h>
#include <string.h>

#include "basic/buf.h"
#include "basic/errors.h"
#include "basic/string-util.h"

int gce_json_opt_string(const json_t *o, const char *key, char **ret) {
        const json_t *v = json_object_get(o, key);
        *ret = NULL;
        if (!v)
                return 0;
        if (!json_is_string(v) || string_has_cc(json_string_value(v)) || json_string_length(v) > 4096 ||
            strlen(json_string_value(v)) != json_string_length(v))
                return PK_EMALFORMED;
        *ret = strdup(json_string_value(v));
        return *ret ? 0 : -ENOMEM;
}

/* An aggregated page as a plain one: {"<items_key>": [every zone's items], "nextPageToken"}; NULL when it
 * is not such a page (or on OOM). */
static json_t *aggregated_flatten(const json_t *j, const GceList *l) {
        const json_t *scopes = json_object_get(j, "items"), *scope,
                     *next = json_object_get(j, "nextPageToken");
        const char *key;
        json_t *flat = json_object(), *items = json_array();
        bool ok = flat && items && json_is_object(j) && (!scopes || json_is_object(scopes));

        json_object_foreach((json_t *)scopes, key, scope) {
                const json_t *a = json_object_get(scope, l->aggregated_kind);
                if (!ok)
                        break;
                ok = json_is_object(scope) &&
                     (!a || (json_is_array(a) && json_array_extend(items, (json_t *)a) == 0));
        }
        if (ok)
                ok = json_object_set(flat, l->items_key, items) == 0 &&
                     (!next || json_object_set(flat, "nextPageToken", (json_t *)next) == 0);
        json_decref(items);
        if (!ok) {
                json_decref(flat);
                return NULL;
        }
        return flat;
}

static int parse_plain_page(const json_t *j, const GceList *l, void **ret, size_t *ret_n, char **ret_next) {
        const json_t *items = json_object_get(j, l->items_key), *it;
        const json_t *next = json_object_get(j, "nextPageToken");
        size_t i, n = 0;
        int r = 0;

        if (!json_is_object(j) || (items && !json_is_array(items)) ||
            (next &&
             (!json_is_string(next) || json_string_length(next) == 0 ||
              json_string_length(next) > GCE_PAGE_TOKEN_MAX || string_has_cc(json_string_value(next)))))
                return PK_EMALFORMED;
        uint8_t *a = calloc(json_array_size(items) + 1, l->size);
        if (!a)
                return -ENOMEM;
        json_array_foreach(items, i, it) {
                r = l->parse(it, a + n * l->size);
                if (r < 0)
                        break;
                n++;
        }
        if (r >= 0 && next && !(*ret_next = strdup(json_string_value(next))))
                r = -ENOMEM;
        if (r < 0) {
                l->free_items(a, n);
                return r;
        }
        *ret = a;
        *ret_n = n;
        return 0;
}

int gce_parse_page(const json_t *j, const GceList *l, void **ret, size_t *ret_n, char **ret_next) {
        *ret = NULL;
        *ret_n = 0;
        *ret_next = NULL;
        if (!l->aggregated_kind)
                return parse_plain_page(j, l, ret, ret_n, ret_next);
        json_t *flat = aggregated_flatten(j, l);
        if (!flat)
                return PK_EMALFORMED;
        int r = parse_plain_page(flat, l, ret, ret_n, ret_next);
        json_decref(flat);
        return r;
}

int gce_parse_page_text(const char *data, size_t len, const GceList *l, void **ret, size_t *ret_n,
                        char **ret_next) {
        json_t *j = json_loadb(data, len, 0, NULL);
        int r = gce_parse_page(j, l, ret, ret_n, ret_next);
        json_decref(j);
        return r;
}

/* Appends n elements of items to *all (*n_all of them). */
static int append_items(const GceList *l, uint8_t **all, size_t *n_all, const void *items, size_t n) {
        if (n == 0)
                return 0;
        uint8_t *m = realloc(*all, (*n_all + n) * l->size);
        if (!m)
                return -ENOMEM;
        memcpy(m + *n_all * l->size, items, n * l->size);
        *all = m;
        *n_all += n;
        return 0;
}

static int list_one_page(GceClient *c, const GceList *l, const char *token, uint8_t **all, size_t *n_all,
                         char **ret_next, char **ret_error) {
        _cleanup_free_ char *etoken = token ? uri_encode(token, false) : NULL, *query = NULL;
        json_t *j = NULL;
        void *items = NULL;
        size_t n = 0;

        query = strprintf("%s%s%s%s", strempty(l->query), l->query && etoken ? "&" : "",
                          etoken ? "pageToken=" : "", strempty(etoken));
        if (!query || (token && !etoken))
                return -ENOMEM;
        GceCall call = { .service = l->service,
                         .operation = l->operation,
                         .method = "GET",
                         .path = l->path,
                         .query = query };
        int r = gce_client_call(c, &call, &j, ret_error);
        if (r < 0)
                return r;
        r = gce_parse_page(j, l, &items, &n, ret_next);
        json_decref(j);
        if (r == PK_EMALFORMED)
                return error_setf(ret_error, r, "%s %s: an answer that is not a page of its list",
                                  gce_service_to_string(l->service), l->operation);
        if (r >= 0 && append_items(l, all, n_all, items, n) >= 0)
                n = 0; /* moved */
        else if (r >= 0)
                r = -ENOMEM;
        l->free_items(items, n);
        return r;
}

int gce_list_all(GceClient *c, const GceList *l, void **ret, size_t *ret_n, char **ret_error) {
        _cleanup_free_ char *token = NULL;
        uint8_t *all = NULL;
        size_t n_all = 0;
        int r = 0;

        for (unsigned page = 0;; page++) {
                char *next = NULL;
                if (page >= GCE_LIST_PAGES_MAX) {
                        r = error_setf(ret_error, PK_ETOOBIG, "%s %s: more than %d pages",
                                       gce_service_to_string(l->service), l->operation, GCE_LIST_PAGES_MAX);
                        break;
                }
                r = list_one_page(c, l, token, &all, &n_all, &next, ret_error);
                free_and_replace(token, next);
                if (r < 0 || !token)
                        break;
        }
        if (r < 0) {
                l->free_items(all, n_all);
                return r;
        }
        *ret = all;
        *ret_n = n_all;
        return 0;
}
