/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Cloud Storage's objects.list (storage/v1): the objects under a prefix, or with the delimiter "/" the
 * "directories" below it (the answer's "prefixes"), every page. The object calls themselves (get, insert,
 * delete) are made by store/store-gs.c through gce_client_call(). */

#include <stdbool.h>
#include <stddef.h>

#include "gce/client.h"

#define GCE_STORAGE_PAGE_SIZE 1000 /* Cloud Storage's own maximum for maxResults */

typedef struct GceObject {
        char *name;       /* the whole object name; with dirs, a prefix ending in '/' */
        char *generation; /* changes with every write of the object; NULL for a prefix */
} GceObject;

void gce_objects_free(GceObject *o, size_t n);

/* Every page of objects.list of bucket under prefix (the whole name prefix, not encoded); with dirs the
 * prefixes one '/' below it instead of the objects. */
int gce_storage_list(GceClient *c, const char *bucket, const char *prefix, bool dirs, GceObject **ret,
                     size_t *ret_n, char **ret_error);

/* One page on its own (fuzz target, unit tests). */
int gce_storage_parse_list_page(const char *data, size_t len, bool dirs, GceObject **ret, size_t *ret_n,
                                char **ret_next);
