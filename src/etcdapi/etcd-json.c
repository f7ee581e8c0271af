/* SPDX-License-Identifier: Apache-2.0 */
#include "etcdapi/etcd-json.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/parse-util.h"
#include "basic/semver.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "shared/crypto.h"

#define ETCD_STRING_MAX  1024U /* a name, a URL, a version */
#define ETCD_MESSAGE_MAX 512U  /* what we keep of etcd's error message */

void etcd_member_done(EtcdMember *m) {
        free(m->name);
        strv_free(m->peer_urls);
        strv_free(m->client_urls);
        *m = (EtcdMember){};
}

void etcd_member_list_done(EtcdMemberList *l) {
        for (size_t i = 0; i < l->n; i++)
                etcd_member_done(&l->items[i]);
        free(l->items);
        *l = (EtcdMemberList){};
}

void etcd_status_done(EtcdStatus *s) {
        free(s->version);
        strv_free(s->errors);
        *s = (EtcdStatus){};
}

void etcd_version_done(EtcdVersion *v) {
        free(v->server);
        free(v->cluster);
        *v = (EtcdVersion){};
}

void etcd_kv_list_done(EtcdKvList *l) {
        for (size_t i = 0; i < l->n; i++) {
                free(l->items[i].key);
                free(l->items[i].value);
        }
        free(l->items);
        *l = (EtcdKvList){};
}

const EtcdMember *etcd_member_list_find_peer(const EtcdMemberList *l, const char *peer_url) {
        for (size_t i = 0; i < l->n; i++)
                if (strv_contains(l->items[i].peer_urls, peer_url))
                        return &l->items[i];
        return NULL;
}

static int load(const char *body, size_t len, json_t **ret) {
        json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL);
        if (!root)
                return PK_EMALFORMED;
        if (!json_is_object(root)) {
                json_decref(root);
                return PK_EMALFORMED;
        }
        *ret = root;
        return 0;
}

/* A 64-bit integer as grpc-gateway writes it: a decimal string; a JSON integer is taken too. Absent: 0. */
static int get_u64(json_t *o, const char *key, uint64_t *ret) {
        json_t *v = json_object_get(o, key);
        if (!v) {
                *ret = 0;
                return 0;
        }
        if (json_is_integer(v) && json_integer_value(v) >= 0) {
                *ret = (uint64_t)json_integer_value(v);
                return 0;
        }
        if (!json_is_string(v) || json_string_length(v) > 20)
                return PK_EMALFORMED;
        return safe_atou64(json_string_value(v), ret) < 0 ? PK_EMALFORMED : 0;
}

static int get_i64(json_t *o, const char *key, int64_t *ret) {
        json_t *v = json_object_get(o, key);
        if (!v) {
                *ret = 0;
                return 0;
        }
        if (json_is_integer(v)) {
                *ret = json_integer_value(v);
                return 0;
        }
        if (!json_is_string(v) || json_string_length(v) > 20)
                return PK_EMALFORMED;
        return safe_atoi64(json_string_value(v), ret) < 0 ? PK_EMALFORMED : 0;
}

static int get_bool(json_t *o, const char *key, bool *ret) {
        json_t *v = json_object_get(o, key);
        if (v && !json_is_boolean(v))
                return PK_EMALFORMED;
        *ret = v && json_is_true(v);
        return 0;
}

/* An optional string without control characters (a name, a URL): absent is "". */
static int get_string(json_t *o, const char *key, char **ret) {
        json_t *v = json_object_get(o, key);
        const char *s = "";
        if (v) {
                if (!json_is_string(v) || json_string_length(v) > ETCD_STRING_MAX ||
                    strlen(json_string_value(v)) != json_string_length(v))
                        return PK_EMALFORMED;
                s = json_string_value(v);
                if (string_has_cc(s))
                        return PK_EMALFORMED;
        }
        char *c = strdup(s);
        if (!c)
                return -ENOMEM;
        *ret = c;
        return 0;
}

static int get_strings(json_t *o, const char *key, char ***ret) {
        _cleanup_strv_free_ char **l = new0(char *, 1);
        json_t *a = json_object_get(o, key), *v;
        size_t i;
        if (!l)
                return -ENOMEM;
        if (a && (!json_is_array(a) || json_array_size(a) > ETCD_URLS_MAX))
                return PK_EMALFORMED;
        json_array_foreach(a, i, v) {
                if (!json_is_string(v) || json_string_length(v) > ETCD_STRING_MAX ||
                    strlen(json_string_value(v)) != json_string_length(v) ||
                    string_has_cc(json_string_value(v)))
                        return PK_EMALFORMED;
                if (strv_extend(&l, json_string_value(v)) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

/* base64 bytes; absent is empty. The copy is NUL-terminated past its length. */
static int get_bytes(json_t *o, const char *key, uint8_t **ret, size_t *ret_len) {
        json_t *v = json_object_get(o, key);
        _cleanup_free_ uint8_t *d = NULL;
        size_t n = 0;
        if (v && !json_is_string(v))
                return PK_EMALFORMED;
        if (v && json_string_length(v) > 0) {
                int r = crypto_base64_decode(json_string_value(v), json_string_length(v), &d, &n);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return PK_EMALFORMED;
        }
        uint8_t *c = malloc(n + 1);
        if (!c)
                return -ENOMEM;
        if (n > 0)
                memcpy(c, d, n);
        c[n] = 0;
        *ret = c;
        *ret_len = n;
        return 0;
}

static int parse_member(json_t *o, EtcdMember *ret) {
        EtcdMember m = {};
        int r = json_is_object(o) ? 0 : PK_EMALFORMED;
        if (r >= 0)
                r = get_u64(o, "ID", &m.id);
        if (r >= 0 && m.id == 0) /* etcd never gives out 0: it is "none" */
                r = PK_EMALFORMED;
        if (r >= 0)
                r = get_string(o, "name", &m.name);
        if (r >= 0)
                r = get_strings(o, "peerURLs", &m.peer_urls);
        if (r >= 0)
                r = get_strings(o, "clientURLs", &m.client_urls);
        if (r >= 0)
                r = get_bool(o, "isLearner", &m.is_learner);
        if (r < 0) {
                etcd_member_done(&m);
                return r;
        }
        *ret = m;
        return 0;
}

static int parse_members(json_t *root, EtcdMemberList *ret) {
        EtcdMemberList l = {};
        json_t *a = json_object_get(root, "members"), *h = json_object_get(root, "header"), *v;
        size_t i;
        int r = 0;
        if ((a && !json_is_array(a)) || json_array_size(a) > ETCD_MEMBERS_MAX || (h && !json_is_object(h)))
                return PK_EMALFORMED;
        if (h && ((r = get_u64(h, "cluster_id", &l.cluster_id)) < 0 ||
                  (r = get_u64(h, "member_id", &l.member_id)) < 0))
                return r;
        l.items = new0(EtcdMember, json_array_size(a) + 1);
        if (!l.items)
                return -ENOMEM;
        json_array_foreach(a, i, v) {
                r = parse_member(v, &l.items[l.n]);
                if (r < 0)
                        break;
                l.n++;
                for (size_t j = 0; j + 1 < l.n; j++)
                        if (l.items[j].id == l.items[l.n - 1].id)
                                r = PK_EMALFORMED;
                if (r < 0)
                        break;
        }
        if (r < 0) {
                etcd_member_list_done(&l);
                return r;
        }
        *ret = l;
        return 0;
}

int etcd_parse_member_list(const char *body, size_t len, EtcdMemberList *ret) {
        _cleanup_(json_decrefp) json_t *root = NULL;
        int r = load(body, len, &root);
        return r < 0 ? r : parse_members(root, ret);
}

int etcd_parse_member_add(const char *body, size_t len, EtcdMember *ret_added, EtcdMemberList *ret_list) {
        _cleanup_(json_decrefp) json_t *root = NULL;
        EtcdMember m = {};
        int r = load(body, len, &root);
        if (r < 0)
                return r;
        if (!json_object_get(root, "member"))
                return PK_EMALFORMED;
        r = parse_member(json_object_get(root, "member"), &m);
        if (r < 0)
                return r;
        r = parse_members(root, ret_list);
        if (r < 0) {
                etcd_member_done(&m);
                return r;
        }
        *ret_added = m;
        return 0;
}

int etcd_parse_status(const char *body, size_t len, EtcdStatus *ret) {
        _cleanup_(json_decrefp) json_t *root = NULL;
        EtcdStatus s = {};
        json_t *h;
        int r = load(body, len, &root);
        if (r < 0)
                return r;
        h = json_object_get(root, "header");
        if (!json_is_object(h) || !json_object_get(root, "version"))
                return PK_EMALFORMED; /* every status carries both: anything else is not etcd's */
        r = get_u64(h, "member_id", &s.member_id);
        if (r >= 0)
                r = get_string(root, "version", &s.version);
        if (r >= 0)
                r = get_u64(root, "leader", &s.leader);
        if (r >= 0)
                r = get_u64(root, "raftIndex", &s.raft_index);
        if (r >= 0)
                r = get_u64(root, "raftTerm", &s.raft_term);
        if (r >= 0)
                r = get_u64(root, "dbSize", &s.db_size);
        if (r >= 0)
                r = get_bool(root, "isLearner", &s.is_learner);
        if (r >= 0)
                r = get_strings(root, "errors", &s.errors);
        if (r < 0) {
                etcd_status_done(&s);
                return r;
        }
        *ret = s;
        return 0;
}

/* A required MAJOR.MINOR.PATCH string (etcd never reports a pre-release in a release build). */
static int get_semver(json_t *o, const char *key, char **ret) {
        json_t *v = json_object_get(o, key);
        Semver s;
        if (!json_is_string(v) || json_string_length(v) > 32 ||
            semver_parse(json_string_value(v), 0, &s) < 0)
                return PK_EMALFORMED;
        char *c = strdup(json_string_value(v));
        if (!c)
                return -ENOMEM;
        *ret = c;
        return 0;
}

int etcd_parse_version(const char *body, size_t len, EtcdVersion *ret) {
        _cleanup_(json_decrefp) json_t *root = NULL;
        EtcdVersion v = {};
        int r = load(body, len, &root);
        if (r < 0)
                return r;
        json_t *cluster = json_object_get(root, "etcdcluster");
        r = get_semver(root, "etcdserver", &v.server);
        /* etcd's word for a cluster version not decided yet (api/version.go's "not_decided") */
        if (r >= 0 && !(json_is_string(cluster) && streq(json_string_value(cluster), "not_decided")))
                r = get_semver(root, "etcdcluster", &v.cluster);
        if (r < 0) {
                etcd_version_done(&v);
                return r;
        }
        *ret = v;
        return 0;
}

static int parse_kvs(json_t *o, EtcdKvList *l) {
        json_t *a = json_object_get(o, "kvs"), *v;
        size_t i;
        if (!a)
                return 0;
        if (!json_is_array(a) || l->n + json_array_size(a) > ETCD_KVS_MAX)
                return PK_EMALFORMED;
        EtcdKv *items = reallocarray(l->items, l->n + json_array_size(a) + 1, sizeof(EtcdKv));
        if (!items)
                return -ENOMEM;
        l->items = items;
        json_array_foreach(a, i, v) {
                EtcdKv kv = {};
                int r = json_is_object(v) ? 0 : PK_EMALFORMED;
                if (r >= 0)
                        r = get_bytes(v, "key", &kv.key, &kv.key_len);
                if (r >= 0)
                        r = get_bytes(v, "value", &kv.value, &kv.value_len);
                if (r >= 0)
                        r = get_i64(v, "create_revision", &kv.create_revision);
                if (r >= 0)
                        r = get_i64(v, "mod_revision", &kv.mod_revision);
                if (r >= 0)
                        r = get_i64(v, "version", &kv.version);
                if (r >= 0)
                        r = get_u64(v, "lease", &kv.lease);
                if (r < 0) {
                        free(kv.key);
                        free(kv.value);
                        return r;
                }
                l->items[l->n++] = kv;
        }
        return 0;
}

static int header_revision(json_t *root, int64_t *ret) {
        json_t *h = json_object_get(root, "header");
        if (!h) {
                *ret = 0;
                return 0;
        }
        return json_is_object(h) ? get_i64(h, "revision", ret) : PK_EMALFORMED;
}

int etcd_parse_range(const char *body, size_t len, EtcdKvList *ret) {
        _cleanup_(json_decrefp) json_t *root = NULL;
        EtcdKvList l = {};
        int r = load(body, len, &root);
        if (r < 0)
                return r;
        r = header_revision(root, &l.revision);
        if (r >= 0)
                r = parse_kvs(root, &l);
        if (r < 0) {
                etcd_kv_list_done(&l);
                return r;
        }
        *ret = l;
        return 0;
}

int etcd_parse_txn(const char *body, size_t len, bool *ret_succeeded, EtcdKvList *ret) {
        _cleanup_(json_decrefp) json_t *root = NULL;
        EtcdKvList l = {};
        bool ok = false;
        json_t *a, *v;
        size_t i;
        int r = load(body, len, &root);
        if (r < 0)
                return r;
        a = json_object_get(root, "responses");
        r = header_revision(root, &l.revision);
        if (r >= 0)
                r = get_bool(root, "succeeded", &ok);
        if (r >= 0 && a && !json_is_array(a))
                r = PK_EMALFORMED;
        json_array_foreach(a, i, v) {
                if (r < 0)
                        break;
                json_t *range = json_is_object(v) ? json_object_get(v, "response_range") : NULL;
                if (!json_is_object(v) || (range && !json_is_object(range)))
                        r = PK_EMALFORMED;
                else if (range)
                        r = parse_kvs(range, &l);
        }
        if (r < 0) {
                etcd_kv_list_done(&l);
                return r;
        }
        *ret_succeeded = ok;
        *ret = l;
        return 0;
}

int etcd_parse_lease_grant(const char *body, size_t len, uint64_t *ret_id, int64_t *ret_ttl) {
        _cleanup_(json_decrefp) json_t *root = NULL;
        uint64_t id;
        int64_t ttl;
        int r = load(body, len, &root);
        if (r < 0)
                return r;
        if ((r = get_u64(root, "ID", &id)) < 0 || (r = get_i64(root, "TTL", &ttl)) < 0)
                return r;
        if (id == 0 || ttl <= 0)
                return PK_EMALFORMED;
        *ret_id = id;
        *ret_ttl = ttl;
        return 0;
}

int etcd_parse_header(const char *body, size_t len, int64_t *ret_revision) {
        _cleanup_(json_decrefp) json_t *root = NULL;
        int64_t rev;
        int r = load(body, len, &root);
        if (r < 0)
                return r;
        r = header_revision(root, &rev);
        if (r < 0)
                return r;
        *ret_revision = rev;
        return 0;
}

int etcd_parse_error(const char *body, size_t len, char **ret_message, int *ret_code) {
        _cleanup_(json_decrefp) json_t *root = NULL;
        int r = load(body, len, &root);
        if (r < 0)
                return r;
        json_t *m = json_object_get(root, "message"), *e = json_object_get(root, "error"),
               *c = json_object_get(root, "code");
        if (!json_is_string(m))
                m = e;
        if (!json_is_string(m) || (c && !json_is_integer(c)))
                return PK_EMALFORMED;
        size_t n = MIN(json_string_length(m), (size_t)ETCD_MESSAGE_MAX);
        char *s = strndup(json_string_value(m), n);
        if (!s)
                return -ENOMEM;
        for (char *p = s; *p; p++) /* it is printed: no line breaks or escapes from the network */
                if ((unsigned char)*p < 0x20 || *p == 0x7f)
                        *p = '?';
        *ret_message = s;
        *ret_code = c ? (int)json_integer_value(c) : 0;
        return 0;
}
