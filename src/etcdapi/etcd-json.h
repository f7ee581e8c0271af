/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The bodies of etcd's v3 HTTP/JSON gateway (etcd 3.4, grpc-gateway): parsed, never trusted. proto3 JSON
 * leaves out defaults (no "name" for an unstarted member, no "isLearner" for a voter, no "succeeded" for a
 * failed txn, no "kvs" for an absent key), writes 64-bit integers as strings and bytes as base64 (RFC 4648
 * §4). Every parser returns PK_EMALFORMED for a body that does not have the expected shape and caps what it
 * keeps (ETCD_MEMBERS_MAX members, ETCD_KVS_MAX keys). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/macro.h"

#define ETCD_MEMBERS_MAX 64U
#define ETCD_KVS_MAX     1024U
#define ETCD_URLS_MAX    16U

typedef struct EtcdMember {
        uint64_t id;
        /* "" for a member added through the API that has not started; the members of a bootstrapped cluster
         * carry their names from initial-cluster before they ever run */
        char *name;
        char **peer_urls;   /* strv, never NULL after a parse */
        char **client_urls; /* empty until the member started and published them */
        bool is_learner;
} EtcdMember;

typedef struct EtcdMemberList {
        EtcdMember *items;
        size_t n;
        uint64_t cluster_id; /* the answering member's header */
        uint64_t member_id;
} EtcdMemberList;

typedef struct EtcdStatus {
        char *version;
        uint64_t member_id; /* the member that answered */
        uint64_t leader;    /* 0: no leader */
        uint64_t raft_index, raft_term, db_size;
        bool is_learner;
        char **errors; /* etcd's own complaints ("etcdserver: no leader"), strv, never NULL */
} EtcdStatus;

/* GET /version of one member (not the gateway: etcd's own HTTP handler, on the client URL): the version of
 * the binary it runs and the cluster version, which the leader moves to the lowest MAJOR.MINOR.0 that every
 * member runs once they all run it ("3.4.0" while any member runs 3.4). */
typedef struct EtcdVersion {
        char *server;  /* "3.5.16" */
        char *cluster; /* "3.5.0"; NULL while etcd has not decided it (a cluster that is starting) */
} EtcdVersion;

typedef struct EtcdKv {
        uint8_t *key, *value; /* decoded bytes, each NUL-terminated past its length */
        size_t key_len, value_len;
        int64_t create_revision, mod_revision, version;
        uint64_t lease;
} EtcdKv;

typedef struct EtcdKvList {
        EtcdKv *items;
        size_t n;
        int64_t revision; /* the header's */
} EtcdKvList;

void etcd_member_done(EtcdMember *m);
void etcd_member_list_done(EtcdMemberList *l);
void etcd_status_done(EtcdStatus *s);
void etcd_version_done(EtcdVersion *v);
void etcd_kv_list_done(EtcdKvList *l);

/* The member with this peer URL, or NULL. */
const EtcdMember *etcd_member_list_find_peer(const EtcdMemberList *l, const char *peer_url);

/* An error body ({"error":...,"message":...,"code":N}): etcd's message (caller frees; control characters
 * replaced, capped) and its gRPC code. PK_EMALFORMED when it is not one. */
int etcd_parse_error(const char *body, size_t len, char **ret_message, int *ret_code);
/* member list, remove, promote: {"header":..., "members":[...]} ("members" may be absent: none). */
int etcd_parse_member_list(const char *body, size_t len, EtcdMemberList *ret);
/* member add: the new member and the list after it. */
int etcd_parse_member_add(const char *body, size_t len, EtcdMember *ret_added, EtcdMemberList *ret_list);
int etcd_parse_status(const char *body, size_t len, EtcdStatus *ret);
/* /version: {"etcdserver":"3.5.16","etcdcluster":"3.5.0"}; each a MAJOR.MINOR.PATCH, the cluster's also
 * "not_decided". */
int etcd_parse_version(const char *body, size_t len, EtcdVersion *ret);
/* kv range: the keys in the body's "kvs". */
int etcd_parse_range(const char *body, size_t len, EtcdKvList *ret);
/* kv txn: whether the compares held, and the keys of every range in "responses" (in order). */
int etcd_parse_txn(const char *body, size_t len, bool *ret_succeeded, EtcdKvList *ret);
/* lease grant: the lease's ID and granted TTL (seconds). */
int etcd_parse_lease_grant(const char *body, size_t len, uint64_t *ret_id, int64_t *ret_ttl);
/* Any success body (put, lease revoke): the header's revision (0 when absent). */
int etcd_parse_header(const char *body, size_t len, int64_t *ret_revision);
