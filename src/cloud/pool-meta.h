/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The metadata file of one volume of the local pool, <pool>/<id>.json (ARCHITECTURE.md, "The local pool"):
 *   {"version":1,"id":"v1","zone":"z1","size":16777216,"image":"v1.img" | "device":"/dev/sdb",
 *    "tags":{"KubernetesCluster":"c",...},
 *    "attachment":{"node":"n1","machineID":"<32 hex>","internalIPs":["10.0.0.1"],"externalIPs":[],
 *                  "device":"/dev/loop3"}}
 * "attachment" is absent when the volume is free. The parser is strict: unknown keys, wrong types, bad
 * names and oversized strings are errors (the pool directory is shared by every node's process). */

#include "cloud/volume.h"

#define POOL_META_MAX      (64U * 1024U)
#define POOL_TAGS_MAX      50  /* as EC2 */
#define POOL_TAG_KEY_MAX   128 /* as EC2 */
#define POOL_TAG_VALUE_MAX 256
#define POOL_ID_MAX        63
#define POOL_NODE_MAX      253
#define POOL_IPS_MAX       16 /* per list; the writer refuses more (node-addrs.h) */

typedef struct PoolVolume {
        Volume volume;
        char *image;  /* file name of the image in the pool dir ("<id>.img"), or NULL */
        char *device; /* absolute path of a plain block device, or NULL */
        /* Only for a damaged record (volume.damaged): id, zone, size, tags and image/device were read,
         * so the record can be rewritten once its attachment is cleared. */
        bool core_valid;
} PoolVolume;

void pool_volume_done(PoolVolume *v);

/* A pool volume id: 1-63 characters of [A-Za-z0-9._-], not starting with '.'. */
bool pool_id_valid(const char *id);
/* A node name: 1-253 printable characters without whitespace, '/' or quotes. */
bool pool_node_name_valid(const char *s);
/* Tag key and value limits and no control characters. */
bool pool_tag_valid(const char *key, const char *value);

/* On PK_EMALFORMED, *ret_error (caller frees) says what is wrong. */
int pool_meta_parse(const char *text, size_t len, PoolVolume *ret, char **ret_error);
/* For a record pool_meta_parse() rejected (reason: its error) or that could not be read at all (text
 * NULL): a volume with id (from the file name) and volume.damaged = reason, plus what can still be read:
 * the holder's node name (and machine id) if they are valid, and everything else (core_valid) if all of it
 * but the attachment parses. Never fails but for -ENOMEM. */
int pool_meta_salvage(const char *text, size_t len, const char *id, const char *reason, PoolVolume *ret);
/* Canonical JSON (sorted keys, trailing newline); caller frees. */
int pool_meta_format(const PoolVolume *v, char **ret);
