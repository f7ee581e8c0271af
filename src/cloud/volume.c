/* SPDX-License-Identifier: Apache-2.0 */
#include "cloud/volume.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/string-util.h"
#include "basic/strv.h"
#include "cloud/provider-aws.h"

void node_identity_done(NodeIdentity *n) {
        free(n->name);
        free(n->machine_id);
        free(n->zone);
        strv_free(n->internal_ips);
        strv_free(n->external_ips);
        *n = (NodeIdentity){};
}

static int strv_copy_or_empty(char *const *l, char ***ret) {
        char **c = l ? strv_copy(l) : calloc(1, sizeof(char *));
        if (!c)
                return -ENOMEM;
        *ret = c;
        return 0;
}

static int strdup_or_null(const char *s, char **ret) {
        if (!s) {
                *ret = NULL;
                return 0;
        }
        *ret = strdup(s);
        return *ret ? 0 : -ENOMEM;
}

int node_identity_copy(const NodeIdentity *src, NodeIdentity *ret) {
        NodeIdentity n = {};
        if (strdup_or_null(src->name, &n.name) < 0 || strdup_or_null(src->machine_id, &n.machine_id) < 0 ||
            strdup_or_null(src->zone, &n.zone) < 0 ||
            strv_copy_or_empty(src->internal_ips, &n.internal_ips) < 0 ||
            strv_copy_or_empty(src->external_ips, &n.external_ips) < 0) {
                node_identity_done(&n);
                return -ENOMEM;
        }
        *ret = n;
        return 0;
}

static const char *const volume_content_names[_VOLUME_CONTENT_MAX] = {
        [VOLUME_CONTENT_UNKNOWN] = "unknown",
        [VOLUME_CONTENT_BLANK] = "blank",
        [VOLUME_CONTENT_DATA] = "data",
};

const char *volume_content_to_string(VolumeContent c) {
        return c >= 0 && c < _VOLUME_CONTENT_MAX ? volume_content_names[c] : NULL;
}

bool node_identity_holds(const NodeIdentity *node, const VolumeAttachment *a) {
        if (!a->node || !node->name || !streq(a->node, node->name))
                return false;
        if (!a->machine_id)
                return true; /* a record from before machine ids: name only (docs/volumes.md) */
        return node->machine_id && streq(a->machine_id, node->machine_id);
}

bool node_identity_name_clash(const NodeIdentity *node, const VolumeAttachment *a) {
        return a->node && node->name && streq(a->node, node->name) && !node_identity_holds(node, a);
}

void volume_done(Volume *v) {
        free(v->id);
        free(v->zone);
        strv_free(v->tags);
        free(v->attachment.node);
        free(v->attachment.machine_id);
        strv_free(v->attachment.internal_ips);
        strv_free(v->attachment.external_ips);
        free(v->attachment.device);
        free(v->damaged);
        *v = (Volume){};
}

void volume_list_done(VolumeList *l) {
        for (size_t i = 0; i < l->n; i++)
                volume_done(&l->items[i]);
        free(l->items);
        strv_free(l->warnings);
        *l = (VolumeList){};
}

int volume_copy(const Volume *src, Volume *ret) {
        Volume v = { .size = src->size, .content = src->content, .attachment.since = src->attachment.since };
        if (strdup_or_null(src->id, &v.id) < 0 || strdup_or_null(src->zone, &v.zone) < 0 ||
            strv_copy_or_empty(src->tags, &v.tags) < 0 ||
            strdup_or_null(src->attachment.node, &v.attachment.node) < 0 ||
            strdup_or_null(src->attachment.machine_id, &v.attachment.machine_id) < 0 ||
            strdup_or_null(src->damaged, &v.damaged) < 0 ||
            strv_copy_or_empty(src->attachment.internal_ips, &v.attachment.internal_ips) < 0 ||
            strv_copy_or_empty(src->attachment.external_ips, &v.attachment.external_ips) < 0 ||
            strdup_or_null(src->attachment.device, &v.attachment.device) < 0) {
                volume_done(&v);
                return -ENOMEM;
        }
        *ret = v;
        return 0;
}

const char *volume_tag(const Volume *v, const char *key) {
        for (char **t = v->tags; t && t[0] && t[1]; t += 2)
                if (streq(t[0], key))
                        return t[1];
        return NULL;
}

int volume_set_tag(Volume *v, const char *key, const char *value) {
        size_t n = strv_length(v->tags), i;
        for (i = 0; i + 1 < n; i += 2) {
                int c = strcmp(v->tags[i], key);
                if (c == 0)
                        return free_and_strdup(&v->tags[i + 1], value);
                if (c > 0)
                        break;
        }
        char **t = realloc(v->tags, sizeof(char *) * (n + 3));
        if (!t)
                return -ENOMEM;
        v->tags = t;
        char *k = strdup(key), *val = strdup(value);
        if (!k || !val) {
                free(k);
                free(val);
                t[n] = NULL;
                return -ENOMEM;
        }
        memmove(t + i + 2, t + i, sizeof(char *) * (n - i));
        t[i] = k;
        t[i + 1] = val;
        t[n + 2] = NULL;
        return 0;
}

int volume_list_append(VolumeList *l, const Volume *v) {
        Volume *n = realloc(l->items, sizeof(Volume) * (l->n + 1));
        if (!n)
                return -ENOMEM;
        l->items = n;
        int r = volume_copy(v, &l->items[l->n]);
        if (r < 0)
                return r;
        l->n++;
        return 0;
}

static int cmp_volume(const void *a, const void *b) {
        return strcmp(((const Volume *)a)->id, ((const Volume *)b)->id);
}

void volume_list_sort(VolumeList *l) {
        if (l->n > 1)
                qsort_safe(l->items, l->n, sizeof(Volume), cmp_volume);
}

int volume_provider_new(const VolumeProviderVTable *vt, void *state, VolumeProvider **ret) {
        VolumeProvider *p = new0(VolumeProvider, 1);
        if (!p)
                return -ENOMEM;
        p->vtable = vt;
        p->state = state;
        *ret = p;
        return 0;
}

VolumeProvider *volume_provider_free(VolumeProvider *p) {
        if (!p)
                return NULL;
        if (p->vtable && p->vtable->close)
                p->vtable->close(p->state);
        free(p);
        return NULL;
}

void cloud_machines_free(CloudMachine *l, size_t n) {
        for (size_t i = 0; l && i < n; i++) {
                free(l[i].id);
                free(l[i].node_name);
        }
        free(l);
}

int volume_provider_list_machines(const VolumeProvider *p, const char *cluster, CloudMachine **ret,
                                  size_t *ret_n, char **ret_error) {
        if (!p->vtable->list_machines)
                return -EOPNOTSUPP;
        return p->vtable->list_machines(p->state, cluster, ret, ret_n, ret_error);
}

int volume_provider_watch_paths(const VolumeProvider *p, char ***ret) {
        if (p->vtable->watch_paths)
                return p->vtable->watch_paths(p->state, ret);
        char **l = calloc(1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        *ret = l;
        return 0;
}

int node_identity_gather(const VolumeProviderConfig *cfg,
                         int (*ask)(void *userdata, IdentityField f, char **ret_value, char **ret_error),
                         int (*check)(const char *name, const char *zone, char **ret_error), void *userdata,
                         NodeIdentity *ret, char **ret_error) {
        const char *given[_IDENTITY_FIELD_MAX] = { cfg->node_name, cfg->zone, cfg->internal_ip,
                                                   cfg->external_ip };
        char *v[_IDENTITY_FIELD_MAX] = {};
        NodeIdentity n = {};
        int r = 0;

        for (int f = 0; f < _IDENTITY_FIELD_MAX && r >= 0; f++)
                if (given[f])
                        r = (v[f] = strdup(given[f])) ? 0 : -ENOMEM;
                else
                        r = ask(userdata, f, &v[f], ret_error);
        if (r >= 0)
                r = check(v[IDENTITY_NAME], v[IDENTITY_ZONE], ret_error);
        if (r >= 0 && (strv_new_or_enomem(v[IDENTITY_INTERNAL_IP], &n.internal_ips) < 0 ||
                       strv_new_or_enomem(v[IDENTITY_EXTERNAL_IP], &n.external_ips) < 0))
                r = -ENOMEM;
        if (r >= 0) {
                n.name = TAKE_PTR(v[IDENTITY_NAME]);
                n.zone = TAKE_PTR(v[IDENTITY_ZONE]);
                *ret = n;
                n = (NodeIdentity){};
        }
        node_identity_done(&n);
        for (int f = 0; f < _IDENTITY_FIELD_MAX; f++)
                free(v[f]);
        return r;
}
