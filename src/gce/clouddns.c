/* SPDX-License-Identifier: Apache-2.0 */
#include "gce/clouddns.h"

#include <string.h>

#include "basic/buf.h"
#include "basic/errors.h"
#include "basic/gce-names.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "gce/list.h"
#include "shared/json-util.h"

#define RRDATAS_MAX 1000 /* Cloud DNS: at most 1,000 records per set */

void gce_managed_zones_free(GceManagedZone *z, size_t n) {
        for (size_t i = 0; z && i < n; i++) {
                free(z[i].name);
                free(z[i].dns_name);
        }
        free(z);
}

static void record_set_done(GceRecordSet *s) {
        free(s->name);
        free(s->type);
        strv_free(s->rrdatas);
        *s = (GceRecordSet){};
}

void gce_record_sets_free(GceRecordSet *s, size_t n) {
        for (size_t i = 0; s && i < n; i++)
                record_set_done(&s[i]);
        free(s);
}

static int parse_zone(const json_t *o, void *ret) {
        GceManagedZone z = {};
        _cleanup_free_ char *visibility = NULL;
        int r = json_is_object(o) ? 0 : PK_EMALFORMED;
        if (r >= 0)
                r = gce_json_opt_string(o, "name", &z.name);
        if (r >= 0)
                r = gce_json_opt_string(o, "dnsName", &z.dns_name);
        if (r >= 0)
                r = gce_json_opt_string(o, "visibility", &visibility);
        if (r >= 0 && (!gce_name_valid(z.name) || isempty(z.dns_name)))
                r = PK_EMALFORMED;
        if (r < 0) {
                free(z.name);
                free(z.dns_name);
                return r;
        }
        z.private_zone = streq_ptr(visibility, "private");
        *(GceManagedZone *)ret = z;
        return 0;
}

static int parse_record_set(const json_t *o, void *ret) {
        GceRecordSet s = {};
        const json_t *ttl = json_object_get(o, "ttl"), *datas = json_object_get(o, "rrdatas"), *d;
        size_t i;
        int r = json_is_object(o) ? 0 : PK_EMALFORMED;
        if (r >= 0)
                r = gce_json_opt_string(o, "name", &s.name);
        if (r >= 0)
                r = gce_json_opt_string(o, "type", &s.type);
        if (r >= 0 && (isempty(s.name) || isempty(s.type) || (ttl && !json_is_integer(ttl)) ||
                       (ttl && (json_integer_value(ttl) < 0 || json_integer_value(ttl) > INT32_MAX)) ||
                       (datas && (!json_is_array(datas) || json_array_size(datas) > RRDATAS_MAX))))
                r = PK_EMALFORMED;
        json_array_foreach(datas, i, d) {
                if (r < 0)
                        break;
                if (!json_is_string(d) || string_has_cc(json_string_value(d)))
                        r = PK_EMALFORMED;
                else
                        r = strv_extend(&s.rrdatas, json_string_value(d));
        }
        if (r < 0) {
                record_set_done(&s);
                return r;
        }
        s.ttl = ttl ? (uint32_t)json_integer_value(ttl) : 0;
        *(GceRecordSet *)ret = s;
        return 0;
}

static void zones_free_any(void *z, size_t n) {
        gce_managed_zones_free(z, n);
}

static void record_sets_free_any(void *s, size_t n) {
        gce_record_sets_free(s, n);
}

static const GceList zone_list = { .service = GCE_SERVICE_DNS,
                                   .operation = "managedZones.list",
                                   .items_key = "managedZones",
                                   .size = sizeof(GceManagedZone),
                                   .parse = parse_zone,
                                   .free_items = zones_free_any };
static const GceList record_set_list = { .service = GCE_SERVICE_DNS,
                                         .operation = "resourceRecordSets.list",
                                         .items_key = "rrsets",
                                         .size = sizeof(GceRecordSet),
                                         .parse = parse_record_set,
                                         .free_items = record_sets_free_any };

int gce_dns_parse_zone_page(const char *data, size_t len, GceManagedZone **ret, size_t *ret_n,
                            char **ret_next) {
        void *a = NULL;
        int r = gce_parse_page_text(data, len, &zone_list, &a, ret_n, ret_next);
        *ret = a;
        return r;
}

int gce_dns_parse_record_set_page(const char *data, size_t len, GceRecordSet **ret, size_t *ret_n,
                                  char **ret_next) {
        void *a = NULL;
        int r = gce_parse_page_text(data, len, &record_set_list, &a, ret_n, ret_next);
        *ret = a;
        return r;
}

static int project_path(GceClient *c, const char *rest, char **ret, char **ret_error) {
        const char *project;
        int r = gce_client_project(c, &project, ret_error);
        if (r < 0)
                return r;
        *ret = strjoin("/projects/", project, rest);
        return *ret ? 0 : -ENOMEM;
}

int gce_dns_find_zones(GceClient *c, const char *dns_name, GceManagedZone **ret, size_t *ret_n,
                       char **ret_error) {
        _cleanup_free_ char *path = NULL, *name = uri_encode(dns_name, false), *query = NULL;
        GceManagedZone *all = NULL;
        void *a = NULL;
        size_t n = 0, k = 0;
        if (!name || !(query = strjoin("dnsName=", name)))
                return -ENOMEM;
        int r = project_path(c, "/managedZones", &path, ret_error);
        if (r < 0)
                return r;
        GceList l = zone_list;
        l.path = path;
        l.query = query;
        r = gce_list_all(c, &l, &a, &n, ret_error);
        if (r < 0)
                return r;
        all = a;
        /* the filter is Google's; what we act on is checked here */
        for (size_t i = 0; i < n; i++)
                if (strcasecmp(all[i].dns_name, dns_name) == 0)
                        all[k++] = all[i];
                else {
                        free(all[i].name);
                        free(all[i].dns_name);
                }
        *ret = all;
        *ret_n = k;
        return 0;
}

static int zone_rest(const char *zone, const char *rest, char **ret, char **ret_error) {
        if (!gce_name_valid(zone))
                return error_setf(ret_error, -EINVAL, "'%s' is not a Cloud DNS managed zone name", zone);
        *ret = strjoin("/managedZones/", zone, rest);
        return *ret ? 0 : -ENOMEM;
}

int gce_dns_list_record_sets(GceClient *c, const char *zone, const char *name, const char *type,
                             GceRecordSet **ret, size_t *ret_n, char **ret_error) {
        _cleanup_free_ char *rest = NULL, *path = NULL, *ename = uri_encode(name, false), *query = NULL;
        void *a = NULL;
        int r = zone_rest(zone, "/rrsets", &rest, ret_error);
        if (r >= 0)
                r = project_path(c, rest, &path, ret_error);
        if (r < 0)
                return r;
        query = ename ? strprintf("name=%s%s%s", ename, type ? "&type=" : "", strempty(type)) : NULL;
        if (!query)
                return -ENOMEM;
        GceList l = record_set_list;
        l.path = path;
        l.query = query;
        r = gce_list_all(c, &l, &a, ret_n, ret_error);
        if (r >= 0)
                *ret = a;
        return r;
}

static json_t *record_sets_json(const GceRecordSet *s, size_t n) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < n; i++) {
                json_t *datas = json_array();
                for (char **d = s[i].rrdatas; datas && d && *d; d++)
                        if (json_array_append_new(datas, json_string(*d)) < 0) {
                                json_decref(datas);
                                datas = NULL;
                        }
                json_t *o = datas ? json_pack("{s:s, s:s, s:I, s:o}", "name", s[i].name, "type", s[i].type,
                                              "ttl", (json_int_t)s[i].ttl, "rrdatas", datas)
                                  : NULL;
                if (!o || json_array_append_new(a, o) < 0) {
                        json_decref(a);
                        return NULL;
                }
        }
        return a;
}

int gce_dns_parse_change(const char *data, size_t len, char **ret_id, bool *ret_done) {
        json_t *j = json_loadb(data, len, 0, NULL);
        const char *id = json_get_string(j, "id"), *status = json_get_string(j, "status");
        int r = 0;
        if (!id || isempty(id) || strlen(id) > 64 ||
            strspn(id, "0123456789abcdefghijklmnopqrstuvwxyz-") != strlen(id) || !status ||
            (!streq(status, "pending") && !streq(status, "done")))
                r = PK_EMALFORMED;
        else if (!(*ret_id = strdup(id)))
                r = -ENOMEM;
        else
                *ret_done = streq(status, "done");
        json_decref(j);
        return r;
}

static const GceErrorCode change_conflicts[] = {
        { 412, NULL, PK_ECONFLICT },
        { 409, NULL, PK_ECONFLICT },
        {},
};

int gce_dns_change(GceClient *c, const char *zone, const GceRecordSet *additions, size_t n_additions,
                   const GceRecordSet *deletions, size_t n_deletions, char **ret_id, bool *ret_done,
                   char **ret_error) {
        _cleanup_free_ char *rest = NULL, *path = NULL, *body = NULL, *text = NULL;
        size_t len = 0;
        int r = zone_rest(zone, "/changes", &rest, ret_error);
        if (r >= 0)
                r = project_path(c, rest, &path, ret_error);
        if (r < 0)
                return r;
        json_t *o = json_pack("{s:o, s:o}", "additions", record_sets_json(additions, n_additions),
                              "deletions", record_sets_json(deletions, n_deletions));
        body = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        if (!body)
                return -ENOMEM;
        GceCall call = { .service = GCE_SERVICE_DNS,
                         .operation = "changes.create",
                         .method = "POST",
                         .path = path,
                         .content_type = "application/json",
                         .body = body,
                         .body_len = strlen(body),
                         .error_codes = change_conflicts };
        r = gce_client_call_raw(c, &call, &text, &len, ret_error);
        if (r < 0)
                return r;
        r = gce_dns_parse_change(text, len, ret_id, ret_done);
        if (r == PK_EMALFORMED)
                return error_setf(ret_error, r, "dns changes.create: the answer is not a change");
        return r;
}

int gce_dns_get_change(GceClient *c, const char *zone, const char *id, bool *ret_done, char **ret_error) {
        static const GceErrorCode not_found[] = { { 404, NULL, -ENOENT }, {} };
        _cleanup_free_ char *rest = NULL, *path = NULL, *text = NULL, *got = NULL,
                            *sub = strjoin("/changes/", id);
        size_t len = 0;
        if (!sub)
                return -ENOMEM;
        if (isempty(id) || strspn(id, "0123456789abcdefghijklmnopqrstuvwxyz-") != strlen(id))
                return error_setf(ret_error, -EINVAL, "'%s' is not a Cloud DNS change id", id);
        int r = zone_rest(zone, sub, &rest, ret_error);
        if (r >= 0)
                r = project_path(c, rest, &path, ret_error);
        if (r < 0)
                return r;
        GceCall call = { .service = GCE_SERVICE_DNS,
                         .operation = "changes.get",
                         .method = "GET",
                         .path = path,
                         .error_codes = not_found };
        r = gce_client_call_raw(c, &call, &text, &len, ret_error);
        if (r < 0)
                return r;
        r = gce_dns_parse_change(text, len, &got, ret_done);
        if (r == PK_EMALFORMED)
                return error_setf(ret_error, r, "dns changes.get: the answer is not a change");
        return r;
}
