/* SPDX-License-Identifier: Apache-2.0 */
#include "etcdapi/etcd-client.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "shared/crypto.h"
#include "shared/http.h"

#define ETCD_TIMEOUT_DEFAULT  (5 * USEC_PER_SEC)
#define ETCD_ENDPOINTS_MAX    16U
#define ETCD_RESPONSE_MAX     (4U * 1024 * 1024) /* a range of up to ETCD_KVS_MAX keys; snapshots stream */
#define ETCD_CODE_UNAVAILABLE 14                 /* gRPC: no leader, or the member is stopping */

struct EtcdClient {
        char **endpoints;
        char *ca_file, *cert_file, *key_file;
        usec_t timeout;
        int last_code;
};

static bool endpoint_ok(const char *e) {
        return (startswith(e, "https://") || startswith(e, "http://")) && strlen(e) < 512 &&
               !string_has_cc(e) && !strchr(e, ' ');
}

int etcd_client_new(const EtcdClientConfig *cfg, EtcdClient **ret) {
        size_t n = strv_length(cfg->endpoints);
        if (n == 0 || n > ETCD_ENDPOINTS_MAX)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (!endpoint_ok(cfg->endpoints[i]))
                        return -EINVAL;
        EtcdClient *c = new0(EtcdClient, 1);
        if (!c)
                return -ENOMEM;
        c->timeout = cfg->timeout ?: ETCD_TIMEOUT_DEFAULT;
        c->endpoints = strv_copy(cfg->endpoints);
        if (!c->endpoints || (cfg->ca_file && !(c->ca_file = strdup(cfg->ca_file))) ||
            (cfg->cert_file && !(c->cert_file = strdup(cfg->cert_file))) ||
            (cfg->key_file && !(c->key_file = strdup(cfg->key_file)))) {
                etcd_client_free(c);
                return -ENOMEM;
        }
        /* an endpoint without a trailing slash: paths are appended */
        for (size_t i = 0; i < n; i++) {
                size_t l = strlen(c->endpoints[i]);
                while (l > 0 && c->endpoints[i][l - 1] == '/')
                        c->endpoints[i][--l] = 0;
        }
        *ret = c;
        return 0;
}

EtcdClient *etcd_client_free(EtcdClient *c) {
        if (!c)
                return NULL;
        strv_free(c->endpoints);
        free(c->ca_file);
        free(c->cert_file);
        free(c->key_file);
        free(c);
        return NULL;
}

int etcd_client_last_code(const EtcdClient *c) {
        return c->last_code;
}

/* One exchange with one endpoint. 0 with a 2xx body; PK_EETCD for etcd's refusal (*ret_code set); a
 * transport error otherwise. */
static int call_endpoint(EtcdClient *c, const char *endpoint, const char *path, const char *body,
                         HttpResponse *ret, int *ret_code, char **ret_error) {
        _cleanup_free_ char *url = strjoin(endpoint, path), *detail = NULL;
        const char *hdr[] = { "Content-Type: application/json" };
        HttpResponse resp = {};
        if (!url)
                return -ENOMEM;
        /* the gateway's calls are POSTs with a JSON body; without a body, a GET (etcd's /version) */
        HttpRequest req = {
                .method = body ? "POST" : "GET",
                .url = url,
                .headers = body ? hdr : NULL,
                .n_headers = body ? ELEMENTSOF(hdr) : 0,
                .body = body,
                .body_len = body ? strlen(body) : 0,
                .timeout = c->timeout,
                .connect_timeout = MIN(c->timeout, 2 * USEC_PER_SEC),
                .max_response = ETCD_RESPONSE_MAX,
                .ca_file = c->ca_file,
                .cert_file = c->cert_file,
                .key_file = c->key_file,
        };
        *ret_code = 0;
        int r = http_request(&req, &resp, &detail);
        if (r < 0)
                return error_setf(ret_error, r, "%s", detail ?: pk_strerror(r));
        if (resp.status >= 200 && resp.status < 300) {
                *ret = resp;
                return 0;
        }
        _cleanup_free_ char *message = NULL;
        int code = 0;
        r = etcd_parse_error(resp.body, resp.body_len, &message, &code);
        long status = resp.status;
        http_response_done(&resp);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return error_setf(ret_error, PK_EMALFORMED, "%s%s: HTTP %ld without etcd's error body",
                                  endpoint, path, status);
        *ret_code = code;
        return error_setf(ret_error, PK_EETCD, "%s%s: %s (HTTP %ld, code %d)", endpoint, path, message,
                          status, code);
}

/* The endpoints in turn, until one answers with anything but "unreachable" or "unavailable". */
static int call(EtcdClient *c, const char *path, json_t *request, HttpResponse *ret, char **ret_error) {
        _cleanup_free_ char *body = json_dumps(request, JSON_COMPACT), *errors = NULL;
        int r = -EHOSTUNREACH;
        if (!body)
                return -ENOMEM;
        c->last_code = 0;
        STRV_FOREACH (e, c->endpoints) {
                _cleanup_free_ char *error = NULL;
                int code = 0;
                r = call_endpoint(c, *e, path, body, ret, &code, &error);
                if (r >= 0 || r == -ENOMEM)
                        return r;
                if (r == PK_EETCD && code != ETCD_CODE_UNAVAILABLE) {
                        c->last_code = code;
                        if (ret_error) {
                                free(*ret_error);
                                *ret_error = TAKE_PTR(error);
                        }
                        return r;
                }
                if (strextend_printf(&errors, "%s%s: %s", errors ? "; " : "", *e, error ?: pk_strerror(r)) <
                    0)
                        return -ENOMEM;
                if (r == PK_EETCD)
                        c->last_code = code;
        }
        return error_setf(ret_error, r, "no etcd endpoint answered %s: %s", path, strna(errors));
}

/* Parses the 2xx body with the parser's result; a body that does not parse names the path. */
#define PARSED(r, path, resp, ret_error)                                                                    \
        ({                                                                                                  \
                int _r = (r);                                                                               \
                http_response_done(&(resp));                                                                \
                _r == PK_EMALFORMED ? error_setf(ret_error, _r, "etcd %s: the answer does not parse", path) \
                                    : _r;                                                                   \
        })

static json_t *b64(const void *data, size_t len) {
        _cleanup_free_ char *s = NULL;
        if (crypto_base64_encode(data, len, &s) < 0)
                return NULL;
        return json_string(s);
}

static json_t *u64_string(uint64_t v) {
        char buf[32];
        snprintf(buf, sizeof(buf), "%" PRIu64, v);
        return json_string(buf);
}

/* Builds {k1: v1, ...}: a NULL value (out of memory) makes the whole object NULL. */
static json_t *object_set(json_t *o, const char *key, json_t *v) {
        if (!o || !v || json_object_set_new(o, key, v) < 0) {
                json_decref(o);
                if (v && !o)
                        json_decref(v);
                return NULL;
        }
        return o;
}

int etcd_member_list(EtcdClient *c, EtcdMemberList *ret, char **ret_error) {
        _cleanup_(json_decrefp) json_t *req = json_object();
        HttpResponse resp;
        if (!req)
                return -ENOMEM;
        int r = call(c, "/v3/cluster/member/list", req, &resp, ret_error);
        if (r < 0)
                return r;
        return PARSED(etcd_parse_member_list(resp.body, resp.body_len, ret), "member list", resp, ret_error);
}

int etcd_member_add(EtcdClient *c, char *const *peer_urls, bool learner, EtcdMember *ret_added,
                    EtcdMemberList *ret_list, char **ret_error) {
        json_t *urls = json_array();
        for (size_t i = 0; urls && peer_urls && peer_urls[i]; i++)
                if (json_array_append_new(urls, json_string(peer_urls[i])) < 0) {
                        json_decref(urls);
                        urls = NULL;
                }
        _cleanup_(json_decrefp) json_t *req = object_set(json_object(), "peerURLs", urls);
        req = object_set(req, "isLearner", json_boolean(learner));
        HttpResponse resp;
        if (!req)
                return -ENOMEM;
        int r = call(c, "/v3/cluster/member/add", req, &resp, ret_error);
        if (r < 0)
                return r;
        return PARSED(etcd_parse_member_add(resp.body, resp.body_len, ret_added, ret_list), "member add",
                      resp, ret_error);
}

static int member_by_id(EtcdClient *c, const char *path, uint64_t id, char **ret_error) {
        _cleanup_(json_decrefp) json_t *req = object_set(json_object(), "ID", u64_string(id));
        EtcdMemberList l = {};
        HttpResponse resp;
        if (!req)
                return -ENOMEM;
        int r = call(c, path, req, &resp, ret_error);
        if (r < 0)
                return r;
        r = PARSED(etcd_parse_member_list(resp.body, resp.body_len, &l), path, resp, ret_error);
        etcd_member_list_done(&l);
        return r;
}

int etcd_member_remove(EtcdClient *c, uint64_t id, char **ret_error) {
        return member_by_id(c, "/v3/cluster/member/remove", id, ret_error);
}

int etcd_member_promote(EtcdClient *c, uint64_t id, char **ret_error) {
        return member_by_id(c, "/v3/cluster/member/promote", id, ret_error);
}

int etcd_maintenance_status(EtcdClient *c, const char *endpoint, EtcdStatus *ret, char **ret_error) {
        _cleanup_(json_decrefp) json_t *req = json_object();
        _cleanup_free_ char *body = NULL;
        HttpResponse resp;
        int code;
        if (!endpoint_ok(endpoint))
                return error_setf(ret_error, -EINVAL, "not an etcd endpoint: '%s'", endpoint);
        if (!req || !(body = json_dumps(req, JSON_COMPACT)))
                return -ENOMEM;
        int r = call_endpoint(c, endpoint, "/v3/maintenance/status", body, &resp, &code, ret_error);
        if (r < 0)
                return r;
        return PARSED(etcd_parse_status(resp.body, resp.body_len, ret), "maintenance status", resp,
                      ret_error);
}

int etcd_version(EtcdClient *c, const char *endpoint, EtcdVersion *ret, char **ret_error) {
        HttpResponse resp;
        int code;
        if (!endpoint_ok(endpoint))
                return error_setf(ret_error, -EINVAL, "not an etcd endpoint: '%s'", endpoint);
        int r = call_endpoint(c, endpoint, "/version", NULL, &resp, &code, ret_error);
        if (r < 0)
                return r;
        return PARSED(etcd_parse_version(resp.body, resp.body_len, ret), "version", resp, ret_error);
}

int etcd_kv_range(EtcdClient *c, const void *key, size_t key_len, const void *range_end,
                  size_t range_end_len, EtcdKvList *ret, char **ret_error) {
        _cleanup_(json_decrefp) json_t *req = object_set(json_object(), "key", b64(key, key_len));
        if (range_end)
                req = object_set(req, "range_end", b64(range_end, range_end_len));
        HttpResponse resp;
        if (!req)
                return -ENOMEM;
        int r = call(c, "/v3/kv/range", req, &resp, ret_error);
        if (r < 0)
                return r;
        return PARSED(etcd_parse_range(resp.body, resp.body_len, ret), "range", resp, ret_error);
}

static json_t *put_request(const void *key, size_t key_len, const void *value, size_t value_len,
                           uint64_t lease) {
        json_t *o = object_set(json_object(), "key", b64(key, key_len));
        o = object_set(o, "value", b64(value, value_len));
        if (lease != 0)
                o = object_set(o, "lease", u64_string(lease));
        return o;
}

int etcd_kv_put(EtcdClient *c, const void *key, size_t key_len, const void *value, size_t value_len,
                uint64_t lease, char **ret_error) {
        _cleanup_(json_decrefp) json_t *req = put_request(key, key_len, value, value_len, lease);
        HttpResponse resp;
        int64_t rev;
        if (!req)
                return -ENOMEM;
        int r = call(c, "/v3/kv/put", req, &resp, ret_error);
        if (r < 0)
                return r;
        return PARSED(etcd_parse_header(resp.body, resp.body_len, &rev), "put", resp, ret_error);
}

static json_t *compare_json(const EtcdCompare *k) {
        static const char *const targets[_ETCD_COMPARE_TARGET_MAX] = { "VERSION", "CREATE", "MOD", "VALUE" };
        static const char *const results[_ETCD_COMPARE_RESULT_MAX] = { "EQUAL", "GREATER", "LESS",
                                                                       "NOT_EQUAL" };
        static const char *const fields[_ETCD_COMPARE_TARGET_MAX] = { "version", "create_revision",
                                                                      "mod_revision", "value" };
        if (k->target < 0 || k->target >= _ETCD_COMPARE_TARGET_MAX || k->result < 0 ||
            k->result >= _ETCD_COMPARE_RESULT_MAX)
                return NULL;
        json_t *o = object_set(json_object(), "key", b64(k->key, k->key_len));
        o = object_set(o, "target", json_string(targets[k->target]));
        o = object_set(o, "result", json_string(results[k->result]));
        char num[32];
        snprintf(num, sizeof(num), "%" PRId64, k->number);
        return object_set(o, fields[k->target],
                          k->target == ETCD_COMPARE_VALUE ? b64(k->value, k->value_len) : json_string(num));
}

static json_t *op_json(const EtcdOp *op) {
        switch (op->type) {
        case ETCD_OP_RANGE:
                return object_set(json_object(), "request_range",
                                  object_set(json_object(), "key", b64(op->key, op->key_len)));
        case ETCD_OP_PUT:
                return object_set(json_object(), "request_put",
                                  put_request(op->key, op->key_len, op->value, op->value_len, op->lease));
        case ETCD_OP_DELETE:
                return object_set(json_object(), "request_delete_range",
                                  object_set(json_object(), "key", b64(op->key, op->key_len)));
        default:
                return NULL;
        }
}

static json_t *ops_json(const EtcdOp *ops, size_t n) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < n; i++)
                if (json_array_append_new(a, op_json(&ops[i])) < 0) {
                        json_decref(a);
                        a = NULL;
                }
        return a;
}

int etcd_kv_txn(EtcdClient *c, const EtcdTxn *t, bool *ret_succeeded, EtcdKvList *ret, char **ret_error) {
        json_t *compares = json_array();
        for (size_t i = 0; compares && i < t->n_compares; i++)
                if (json_array_append_new(compares, compare_json(&t->compares[i])) < 0) {
                        json_decref(compares);
                        compares = NULL;
                }
        _cleanup_(json_decrefp) json_t *req = object_set(json_object(), "compare", compares);
        req = object_set(req, "success", ops_json(t->success, t->n_success));
        req = object_set(req, "failure", ops_json(t->failure, t->n_failure));
        HttpResponse resp;
        if (!req)
                return -ENOMEM; /* or a compare or op out of its enum: the caller's bug */
        int r = call(c, "/v3/kv/txn", req, &resp, ret_error);
        if (r < 0)
                return r;
        return PARSED(etcd_parse_txn(resp.body, resp.body_len, ret_succeeded, ret), "txn", resp, ret_error);
}

int etcd_lease_grant(EtcdClient *c, int64_t ttl_sec, uint64_t *ret_id, char **ret_error) {
        char ttl[32];
        snprintf(ttl, sizeof(ttl), "%" PRId64, ttl_sec);
        _cleanup_(json_decrefp) json_t *req = object_set(json_object(), "TTL", json_string(ttl));
        HttpResponse resp;
        int64_t granted;
        if (!req)
                return -ENOMEM;
        int r = call(c, "/v3/lease/grant", req, &resp, ret_error);
        if (r < 0)
                return r;
        return PARSED(etcd_parse_lease_grant(resp.body, resp.body_len, ret_id, &granted), "lease grant",
                      resp, ret_error);
}

int etcd_lease_revoke(EtcdClient *c, uint64_t id, char **ret_error) {
        _cleanup_(json_decrefp) json_t *req = object_set(json_object(), "ID", u64_string(id));
        HttpResponse resp;
        int64_t rev;
        if (!req)
                return -ENOMEM;
        int r = call(c, "/v3/lease/revoke", req, &resp, ret_error);
        if (r < 0)
                return r;
        return PARSED(etcd_parse_header(resp.body, resp.body_len, &rev), "lease revoke", resp, ret_error);
}
