/* SPDX-License-Identifier: Apache-2.0 */
#include "model/cluster-view.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "basic/strv.h"

static void member_holder_done(EtcdMemberHolder *h) {
        free(h->cluster);
        free(h->member);
        free(h->node);
}

ClusterView *cluster_view_free(ClusterView *v) {
        if (!v)
                return NULL;
        for (size_t i = 0; i < v->n_masters; i++) {
                free(v->masters[i].name);
                strv_free(v->masters[i].internal_ips);
                strv_free(v->masters[i].external_ips);
        }
        for (size_t i = 0; i < v->n_members; i++)
                member_holder_done(&v->members[i]);
        free(v->masters);
        free(v->members);
        free(v);
        return NULL;
}

const MasterNode *cluster_view_find_master(const ClusterView *v, const char *name) {
        for (size_t i = 0; i < v->n_masters; i++)
                if (streq(v->masters[i].name, name))
                        return &v->masters[i];
        return NULL;
}

static int strv_merge(char ***dst, char *const *src) {
        STRV_FOREACH (s, (char **)src)
                if (!strv_contains(*dst, *s) && strv_extend(dst, *s) < 0)
                        return -ENOMEM;
        if (!*dst) {
                *dst = calloc(1, sizeof(char *));
                if (!*dst)
                        return -ENOMEM;
        }
        strv_sort(*dst);
        return 0;
}

int cluster_view_add_master(ClusterView *v, const char *name, char *const *internal_ips,
                            char *const *external_ips) {
        MasterNode *m = (MasterNode *)cluster_view_find_master(v, name);
        if (!m) {
                MasterNode *n = realloc(v->masters, sizeof(MasterNode) * (v->n_masters + 1));
                if (!n)
                        return -ENOMEM;
                v->masters = n;
                m = &v->masters[v->n_masters];
                *m = (MasterNode){ .name = strdup(name) };
                if (!m->name)
                        return -ENOMEM;
                v->n_masters++;
        }
        if (strv_merge(&m->internal_ips, internal_ips) < 0 || strv_merge(&m->external_ips, external_ips) < 0)
                return -ENOMEM;
        return 0;
}

int cluster_view_add_member(ClusterView *v, const char *cluster, const char *member, const char *node) {
        EtcdMemberHolder *n = realloc(v->members, sizeof(EtcdMemberHolder) * (v->n_members + 1));
        if (!n)
                return -ENOMEM;
        v->members = n;
        EtcdMemberHolder *h = &v->members[v->n_members];
        *h = (EtcdMemberHolder){ .cluster = strdup(cluster),
                                 .member = strdup(member),
                                 .node = node ? strdup(node) : NULL };
        if (!h->cluster || !h->member || (node && !h->node)) {
                member_holder_done(h);
                return -ENOMEM;
        }
        v->n_members++;
        return 0;
}

static int cmp_master(const void *a, const void *b) {
        return strcmp(((const MasterNode *)a)->name, ((const MasterNode *)b)->name);
}

static int cmp_member(const void *a, const void *b) {
        const EtcdMemberHolder *x = a, *y = b;
        int c = strcmp(x->cluster, y->cluster);
        return c != 0 ? c : strcmp(x->member, y->member);
}

void cluster_view_sort(ClusterView *v) {
        if (v->n_masters > 1)
                qsort_safe(v->masters, v->n_masters, sizeof(MasterNode), cmp_master);
        if (v->n_members > 1)
                qsort_safe(v->members, v->n_members, sizeof(EtcdMemberHolder), cmp_member);
}

void cluster_view_sort_unique(ClusterView *v) {
        cluster_view_sort(v);
        size_t out = 0;
        for (size_t g = 0, end; g < v->n_members; g = end) {
                bool held = false;
                for (end = g; end < v->n_members && cmp_member(&v->members[g], &v->members[end]) == 0; end++)
                        held = held || v->members[end].node;
                bool unheld_kept = false;
                for (size_t i = g; i < end; i++) {
                        EtcdMemberHolder *h = &v->members[i];
                        if (!h->node && (held || unheld_kept)) {
                                member_holder_done(h);
                                continue;
                        }
                        unheld_kept = unheld_kept || !h->node;
                        v->members[out++] = *h;
                }
        }
        v->n_members = out;
}

static int json_strv(json_t *arr, char ***ret) {
        _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
        size_t i;
        json_t *e;

        if (!l)
                return -ENOMEM;
        if (!arr) {
                *ret = TAKE_PTR(l);
                return 0;
        }
        if (!json_is_array(arr))
                return PK_EMALFORMED;
        json_array_foreach(arr, i, e) {
                if (!json_is_string(e))
                        return PK_EMALFORMED;
                if (strv_extend(&l, json_string_value(e)) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

static const char *json_get_string(json_t *o, const char *key) {
        json_t *s = json_object_get(o, key);
        return json_is_string(s) ? json_string_value(s) : NULL;
}

static int parse_masters(ClusterView *v, json_t *arr, char **ret_error) {
        size_t i;
        json_t *m;
        json_array_foreach(arr, i, m) {
                _cleanup_strv_free_ char **in = NULL, **ex = NULL;
                const char *name = json_get_string(m, "name");
                if (!name || json_strv(json_object_get(m, "internalIPs"), &in) < 0 ||
                    json_strv(json_object_get(m, "externalIPs"), &ex) < 0) {
                        *ret_error = strprintf("masters[%zu]: needs a string 'name' and string arrays "
                                               "'internalIPs', 'externalIPs'",
                                               i);
                        return PK_EMALFORMED;
                }
                if (cluster_view_add_master(v, name, in, ex) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int parse_members(ClusterView *v, json_t *arr, char **ret_error) {
        size_t i;
        json_t *m;
        json_array_foreach(arr, i, m) {
                const char *c = json_get_string(m, "cluster"), *mem = json_get_string(m, "member"),
                           *node = json_get_string(m, "node");
                json_t *jn = json_object_get(m, "node");
                if (!c || !mem || (!node && jn && !json_is_null(jn))) {
                        *ret_error =
                            strprintf("members[%zu]: needs strings 'cluster', 'member' and a string "
                                      "or null 'node'",
                                      i);
                        return PK_EMALFORMED;
                }
                if (cluster_view_add_member(v, c, mem, node) < 0)
                        return -ENOMEM;
        }
        return 0;
}

int cluster_view_from_json(const char *text, size_t len, ClusterView **ret, char **ret_error) {
        _cleanup_(cluster_view_freep) ClusterView *v = new0(ClusterView, 1);
        json_error_t err;
        int r;

        *ret_error = NULL;
        if (!v)
                return -ENOMEM;
        json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
        if (!root) {
                *ret_error = strprintf("line %d column %d: %s", err.line, err.column, err.text);
                return PK_EMALFORMED;
        }
        json_t *masters = json_object_get(root, "masters"), *members = json_object_get(root, "members");
        if (!json_is_object(root) || (masters && !json_is_array(masters)) ||
            (members && !json_is_array(members))) {
                json_decref(root);
                *ret_error = strdup("expected an object with arrays 'masters' and 'members'");
                return PK_EMALFORMED;
        }
        r = parse_masters(v, masters, ret_error);
        if (r >= 0)
                r = parse_members(v, members, ret_error);
        json_decref(root);
        if (r < 0)
                return r;
        cluster_view_sort(v);
        *ret = TAKE_PTR(v);
        return 0;
}

static json_t *json_from_strv(char *const *l) {
        json_t *a = json_array();
        STRV_FOREACH (s, (char **)l)
                json_array_append_new(a, json_string(*s));
        return a;
}

int cluster_view_to_json(const ClusterView *v, char **ret) {
        json_t *root = json_object(), *masters = json_array(), *members = json_array();
        for (size_t i = 0; i < v->n_masters; i++)
                json_array_append_new(masters,
                                      json_pack("{s:s, s:o, s:o}", "name", v->masters[i].name, "internalIPs",
                                                json_from_strv(v->masters[i].internal_ips), "externalIPs",
                                                json_from_strv(v->masters[i].external_ips)));
        for (size_t i = 0; i < v->n_members; i++)
                json_array_append_new(
                    members, json_pack("{s:s, s:s, s:o}", "cluster", v->members[i].cluster, "member",
                                       v->members[i].member, "node",
                                       v->members[i].node ? json_string(v->members[i].node) : json_null()));
        json_object_set_new(root, "masters", masters);
        json_object_set_new(root, "members", members);
        char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        json_decref(root);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}
