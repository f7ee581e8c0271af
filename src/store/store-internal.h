/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What a provider implements (store.c checks keys and composes messages; the providers do the I/O). Each
 * operation returns 0 or -errno/PK_E*; on failure it may set *ret_cause to the reason in its own words
 * (caller frees), which store.c puts after the URL and the key. */

#include <stdbool.h>
#include <stddef.h>

#include "store/store.h"

typedef struct StoreOps {
        const char *scheme; /* "file://", "s3://", "gs://" */
        /* location: the URL after the scheme */
        int (*open)(Store *s, const char *location, char **ret_cause);
        void (*free)(Store *s);
        int (*get)(Store *s, const char *key, char **ret_data, size_t *ret_len, char **ret_cause);
        /* if_absent: create-if-absent, -EEXIST when the key exists */
        int (*put)(Store *s, const char *key, const void *data, size_t len, StoreFlags flags, bool if_absent,
                   char **ret_cause);
        /* prefix: "" or valid; keys come back unsorted; with versions, each as "KEY\tVERSION" (a key has no
         * tab): VERSION changes whenever the object is written (S3: ETag and size; file: the file's
         * identity) */
        int (*list)(Store *s, const char *prefix, bool versions, char ***ret_keys, char **ret_cause);
        int (*delete)(Store *s, const char *key, char **ret_cause);
        /* prefix: "" or valid and ending in '/'; names (one segment each, valid as a key) unsorted */
        int (*list_dirs)(Store *s, const char *prefix, char ***ret_names, char **ret_cause);
} StoreOps;

struct Store {
        const StoreOps *ops;
        char *url;
        void *data; /* the provider's */
        /* whether this open of the store honours create-if-absent: 0 not probed yet, 1 yes, < 0 no, with
         * the cause (store.c) */
        int condition_verdict;
        char *condition_cause;
};

extern const StoreOps store_file_ops;
extern const StoreOps store_s3_ops;
extern const StoreOps store_gs_ops;

/* Lists stop here: a store is a keystore and backups, not a bucket of millions of objects. */
#define STORE_LIST_MAX 100000U

/* A cloud store's result: the client's message becomes the cause, except for the answers the store expects
 * (-ENOENT, -EEXIST: expected), which carry no cause of their own, as the file provider's do. Takes err. */
int store_provider_result(int r, bool expected, char *err, char **ret_cause);
/* The object prefix of a bucket store's URL, from the len bytes after "BUCKET/": "" or "a/b/" (a trailing
 * '/' given or not), each segment a valid key segment; -EINVAL with *ret_cause naming it otherwise. */
int store_location_prefix(const char *p, size_t len, char **ret_prefix, char **ret_cause);

/* "pki/ca/cluster.crt" -> dir "pki/ca" (or "" at the top), name "cluster.crt"; key must be valid. */
int store_key_split(const char *key, char **ret_dir, const char **ret_name);
