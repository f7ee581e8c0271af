/* SPDX-License-Identifier: Apache-2.0 */
#include "gce/storage.h"

#include <stdlib.h>
#include <string.h>

#include "basic/buf.h"
#include "basic/errors.h"
#include "basic/gce-names.h"
#include "basic/string-util.h"
#include "gce/list.h"

void gce_objects_free(GceObject *o, size_t n) {
        for (size_t i = 0; o && i < n; i++) {
                free(o[i].name);
                free(o[i].generation);
        }
        free(o);
}

static void objects_free_any(void *o, size_t n) {
        gce_objects_free(o, n);
}

static int parse_object(const json_t *j, void *ret) {
        GceObject o = {};
        int r = json_is_object(j) ? gce_json_opt_string(j, "name", &o.name) : PK_EMALFORMED;
        if (r >= 0)
                r = gce_json_opt_string(j, "generation", &o.generation);
        if (r >= 0 && (isempty(o.name) ||
                       (o.generation && strspn(o.generation, "0123456789") != strlen(o.generation))))
                r = PK_EMALFORMED;
        if (r < 0) {
                free(o.name);
                free(o.generation);
                return r;
        }
        *(GceObject *)ret = o;
        return 0;
}

static int parse_prefix(const json_t *j, void *ret) {
        if (!json_is_string(j) || json_string_length(j) == 0 || string_has_cc(json_string_value(j)) ||
            strlen(json_string_value(j)) != json_string_length(j))
                return PK_EMALFORMED;
        GceObject o = { .name = strdup(json_string_value(j)) };
        if (!o.name)
                return -ENOMEM;
        *(GceObject *)ret = o;
        return 0;
}

static const GceList object_list = { .service = GCE_SERVICE_STORAGE,
                                     .operation = "objects.list",
                                     .items_key = "items",
                                     .size = sizeof(GceObject),
                                     .parse = parse_object,
                                     .free_items = objects_free_any };
static const GceList prefix_list = { .service = GCE_SERVICE_STORAGE,
                                     .operation = "objects.list",
                                     .items_key = "prefixes",
                                     .size = sizeof(GceObject),
                                     .parse = parse_prefix,
                                     .free_items = objects_free_any };

int gce_storage_parse_list_page(const char *data, size_t len, bool dirs, GceObject **ret, size_t *ret_n,
                                char **ret_next) {
        void *a = NULL;
        int r = gce_parse_page_text(data, len, dirs ? &prefix_list : &object_list, &a, ret_n, ret_next);
        *ret = a;
        return r;
}

int gce_storage_list(GceClient *c, const char *bucket, const char *prefix, bool dirs, GceObject **ret,
                     size_t *ret_n, char **ret_error) {
        _cleanup_free_ char *path = NULL, *ep = uri_encode(prefix, false), *query = NULL;
        void *a = NULL;
        if (!gce_bucket_name_valid(bucket, strlen(bucket)))
                return error_setf(ret_error, -EINVAL, "'%s' is not a Cloud Storage bucket name", bucket);
        path = strjoin("/b/", bucket, "/o");
        query = ep ? strprintf("prefix=%s&maxResults=%u%s", ep, GCE_STORAGE_PAGE_SIZE,
                               dirs ? "&delimiter=%2F" : "")
                   : NULL;
        if (!path || !query)
                return -ENOMEM;
        GceList l = dirs ? prefix_list : object_list;
        l.path = path;
        l.query = query;
        int r = gce_list_all(c, &l, &a, ret_n, ret_error);
        if (r >= 0)
                *ret = a;
        return r;
}
