/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The state store: a small object store every master can read and write, named by a URL in the spec
 * (`stateStore: file:///srv/protokube` or `s3://bucket/prefix[?region=REGION]`; kops' "configBase"). It
 * holds the cluster's
 * keystore (CAs, the service-account key) and, later, etcd backups. Keys are relative paths of
 * [A-Za-z0-9._-] segments ("pki/ca/cluster.crt"), never absolute, no segment starting with '.' (so never
 * "." or ".."; dot names are a directory store's temporary files). docs/store.md.
 *
 * One interface, two providers (file, s3), the same semantics:
 *   get           the object's bytes; -ENOENT when absent;
 *   put_if_absent create-if-absent: exactly one of N concurrent callers wins (0), the others get -EEXIST
 *                 and read the winner's object; a half-written object is never visible. Checked, not
 *                 trusted: the first put_if_absent of an open store probes that the store refuses a
 *                 second create of a scratch key (a store that does not is refused, -EOPNOTSUPP), and a
 *                 created object is read back: another writer's there gives -EEXIST too, with a message
 *                 saying the store did not honour the condition (a plain -EEXIST has no message);
 *   put           replace (atomic: readers see the old or the new object, never a mix);
 *   list          the keys under a prefix, sorted;
 *   list_dirs     the next segments of the keys under a directory prefix, each once, sorted;
 *   delete        0 whether or not it existed.
 * An object flagged private (STORE_PRIVATE: private keys) is never world-readable: mode 0600 in a
 * directory store, server-side encryption requested on S3.
 * Errors come back as a code and a message naming the store URL, the key and the cause (caller frees). */

#include <stdbool.h>
#include <stddef.h>

#include "basic/macro.h"

#define STORE_OBJECT_MAX (16U * 1024U * 1024U)

typedef enum StoreFlags {
        STORE_PRIVATE = 1 << 0, /* holds a secret: 0600 / server-side encryption */
} StoreFlags;

typedef struct Store Store;

/* Opens the store at url ("file:///abs/dir" or "s3://bucket[/prefix][?region=REGION]"; without a region
 * S3 names the bucket's). A missing or unreadable store is an error with a message naming it (a file
 * store's directory must exist; it is not created). */
int store_open(const char *url, Store **ret, char **ret_error);
Store *store_free(Store *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(Store *, store_free)
const char *store_url(const Store *s);

int store_get(Store *s, const char *key, char **ret_data, size_t *ret_len, char **ret_error);
int store_put_if_absent(Store *s, const char *key, const void *data, size_t len, StoreFlags flags,
                        char **ret_error);
int store_put(Store *s, const char *key, const void *data, size_t len, StoreFlags flags, char **ret_error);
int store_list(Store *s, const char *prefix, char ***ret_keys, char **ret_error);
/* store_list() with each object's version (parallel to the keys): an opaque text that changes whenever
 * the object is written with other bytes (S3: ETag and size; file: device, inode, size, mtime, ctime). One
 * listing tells which of many objects changed, without reading them. An empty version is unknown (an S3
 * gateway that lists no ETag): it must not be taken as unchanged. */
int store_list_versions(Store *s, const char *prefix, char ***ret_keys, char ***ret_versions,
                        char **ret_error);
int store_delete(Store *s, const char *key, char **ret_error);
/* The directories directly under prefix ("" or a key ending in '/'): the next segment of every key below it
 * that has one more segment, each name once however many objects lie below it, sorted ("backups/main/" ->
 * "20261123T221500Z", ...). One entry per directory, so the answer does not grow with what the directories
 * hold (S3: ListObjectsV2 with delimiter '/'). A directory that holds no object is not listed. */
int store_list_dirs(Store *s, const char *prefix, char ***ret_names, char **ret_error);

/* A key as above: 1-1024 characters, relative, segments of [A-Za-z0-9._-] that do not start with '.'. */
bool store_key_valid(const char *key);
