/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Google's list calls, one shape for every API: a page is {"<items>": [...], "nextPageToken": "..."}, the
 * next page is asked for with pageToken=; an aggregated list (Compute, every zone) has {"items": {"zones/Z":
 * {"<kind>": [...]}}}. Items are parsed one by one into an array of fixed-size elements. */

#include <jansson.h>
#include <stddef.h>

#include "gce/client.h"

#define GCE_PAGE_TOKEN_MAX 1024
#define GCE_LIST_PAGES_MAX 10000

typedef struct GceList {
        GceService service;
        const char *operation;       /* "disks.list": for messages */
        const char *path;            /* below the service's base, encoded */
        const char *query;           /* encoded, without pageToken; NULL for none */
        const char *items_key;       /* "items", "rrsets", "managedZones" */
        const char *aggregated_kind; /* "disks": an aggregated list of these; NULL: a plain list */
        size_t size;                 /* of one element */
        int (*parse)(const json_t *item, void *ret);
        void (*free_items)(void *items, size_t n);
} GceList;

/* A copy of an optional string member; PK_EMALFORMED when present but not a one-line string of at most
 * 4 KiB. *ret NULL when absent. */
int gce_json_opt_string(const json_t *o, const char *key, char **ret);

/* One page: its items (an array of *ret_n elements, caller frees with l->free_items) and nextPageToken
 * (NULL on the last page). PK_EMALFORMED for anything but a page of such items; nothing is returned then. */
int gce_parse_page(const json_t *j, const GceList *l, void **ret, size_t *ret_n, char **ret_next);
/* The same from text (the fuzz target and the unit tests). */
int gce_parse_page_text(const char *data, size_t len, const GceList *l, void **ret, size_t *ret_n,
                        char **ret_next);
/* Every page (at most GCE_LIST_PAGES_MAX), items concatenated. */
int gce_list_all(GceClient *c, const GceList *l, void **ret, size_t *ret_n, char **ret_error);
