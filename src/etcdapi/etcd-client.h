/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A client of etcd's v3 HTTP/JSON gateway (etcd 3.4 and 3.5: POST /v3/...), over shared/http.h with a
 * client certificate for etcd's client-cert-auth. No gRPC: the gateway is part of every etcd 3.4 and 3.5
 * server.
 *
 * A call goes to the endpoints in turn: one that cannot be reached (refused, unresolvable, timed out) or
 * that answers "unavailable" (no leader) is passed over for the next; any other answer is final. Every
 * exchange is bounded by the client's timeout. On failure *ret_error (when not NULL) says which endpoint
 * and what etcd or the transport said (caller frees); etcd's refusals are PK_EETCD. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/time-util.h"
#include "etcdapi/etcd-json.h"

typedef struct EtcdClientConfig {
        char *const *endpoints; /* "https://etcd-a.internal.example.com:4001", tried in this order */
        const char *ca_file;    /* the CAs of etcd's server certificates; NULL: the system's */
        const char *cert_file;  /* client certificate and key; NULL: none (plain http, or no client auth) */
        const char *key_file;
        usec_t timeout; /* per exchange; 0: 5 s */
} EtcdClientConfig;

typedef struct EtcdClient EtcdClient;

int etcd_client_new(const EtcdClientConfig *cfg, EtcdClient **ret);
EtcdClient *etcd_client_free(EtcdClient *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(EtcdClient *, etcd_client_free)

/* The gRPC code of etcd's last refusal (PK_EETCD) from this client: 9 FailedPrecondition ("can only promote
 * a learner member which is in sync with leader"), 5 NotFound, ...; 0 otherwise. */
int etcd_client_last_code(const EtcdClient *c);

/* Cluster */
int etcd_member_list(EtcdClient *c, EtcdMemberList *ret, char **ret_error);
int etcd_member_add(EtcdClient *c, char *const *peer_urls, bool learner, EtcdMember *ret_added,
                    EtcdMemberList *ret_list, char **ret_error);
int etcd_member_remove(EtcdClient *c, uint64_t id, char **ret_error);
int etcd_member_promote(EtcdClient *c, uint64_t id, char **ret_error);

/* Maintenance: the status of the one member at endpoint (not in turn: it is that member's health). */
int etcd_maintenance_status(EtcdClient *c, const char *endpoint, EtcdStatus *ret, char **ret_error);

/* The version of the one member at endpoint and the cluster version it knows (GET /version, not in turn). An
 * upgrade reads each member's running version here or in its status, and the cluster version here. */
int etcd_version(EtcdClient *c, const char *endpoint, EtcdVersion *ret, char **ret_error);

/* KV. Keys and values are bytes. range_end NULL: the one key. */
int etcd_kv_range(EtcdClient *c, const void *key, size_t key_len, const void *range_end,
                  size_t range_end_len, EtcdKvList *ret, char **ret_error);
int etcd_kv_put(EtcdClient *c, const void *key, size_t key_len, const void *value, size_t value_len,
                uint64_t lease, char **ret_error);

typedef enum EtcdCompareTarget {
        ETCD_COMPARE_VERSION,
        ETCD_COMPARE_CREATE,
        ETCD_COMPARE_MOD,
        ETCD_COMPARE_VALUE,
        _ETCD_COMPARE_TARGET_MAX,
        _ETCD_COMPARE_TARGET_INVALID = -EINVAL,
} EtcdCompareTarget;

typedef enum EtcdCompareResult {
        ETCD_COMPARE_EQUAL,
        ETCD_COMPARE_GREATER,
        ETCD_COMPARE_LESS,
        ETCD_COMPARE_NOT_EQUAL,
        _ETCD_COMPARE_RESULT_MAX,
        _ETCD_COMPARE_RESULT_INVALID = -EINVAL,
} EtcdCompareResult;

typedef struct EtcdCompare {
        const void *key;
        size_t key_len;
        EtcdCompareTarget target;
        EtcdCompareResult result;
        int64_t number;    /* VERSION, CREATE, MOD */
        const void *value; /* VALUE */
        size_t value_len;
} EtcdCompare;

typedef enum EtcdOpType {
        ETCD_OP_RANGE,
        ETCD_OP_PUT,
        ETCD_OP_DELETE,
        _ETCD_OP_TYPE_MAX,
        _ETCD_OP_TYPE_INVALID = -EINVAL,
} EtcdOpType;

typedef struct EtcdOp {
        EtcdOpType type;
        const void *key;
        size_t key_len;
        const void *value; /* PUT */
        size_t value_len;
        uint64_t lease; /* PUT; 0: none */
} EtcdOp;

typedef struct EtcdTxn {
        const EtcdCompare *compares;
        size_t n_compares;
        const EtcdOp *success, *failure;
        size_t n_success, n_failure;
} EtcdTxn;

/* One transaction: whether the compares held, and the keys every range of the branch taken returned. */
int etcd_kv_txn(EtcdClient *c, const EtcdTxn *t, bool *ret_succeeded, EtcdKvList *ret, char **ret_error);

/* Leases */
int etcd_lease_grant(EtcdClient *c, int64_t ttl_sec, uint64_t *ret_id, char **ret_error);
int etcd_lease_revoke(EtcdClient *c, uint64_t id, char **ret_error);
