/* SPDX-License-Identifier: Apache-2.0 */
#include "gce/compute.h"

#include <inttypes.h>
#include <string.h>

#include "basic/buf.h"
#include "basic/errors.h"
#include "basic/gce-names.h"
#include "basic/parse-util.h"
#include "basic/stop.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "shared/json-util.h"

#define OPERATION_POLL    (500 * USEC_PER_MSEC)
#define ERROR_MESSAGE_MAX 400
#define PAGE_TOKEN_MAX    1024

void gce_disk_done(GceDisk *d) {
        free(d->name);
        free(d->zone);
        free(d->status);
        free(d->source_snapshot);
        strv_free(d->labels);
        strv_free(d->users);
        *d = (GceDisk){};
}

void gce_disks_free(GceDisk *d, size_t n) {
        for (size_t i = 0; d && i < n; i++)
                gce_disk_done(&d[i]);
        free(d);
}

void gce_instance_done(GceInstance *i) {
        free(i->name);
        free(i->zone);
        free(i->status);
        free(i->internal_ip);
        free(i->external_ip);
        strv_free(i->labels);
        for (size_t k = 0; k < i->n_disks; k++) {
                free(i->disks[k].disk);
                free(i->disks[k].device_name);
        }
        free(i->disks);
        *i = (GceInstance){};
}

void gce_instances_free(GceInstance *i, size_t n) {
        for (size_t k = 0; i && k < n; k++)
                gce_instance_done(&i[k]);
        free(i);
}

void gce_operation_done(GceOperation *o) {
        free(o->name);
        free(o->status);
        free(o->error_code);
        free(o->error_message);
        *o = (GceOperation){};
}

const char *gce_labels_get(char *const *labels, const char *key) {
        for (size_t i = 0; labels && labels[i] && labels[i + 1]; i += 2)
                if (streq(labels[i], key))
                        return labels[i + 1];
        return NULL;
}

/* The name after "/<kind>/" in a resource URL (full or partial), checked as a resource name; NULL when the
 * URL has no such segment or the name is not one. */
static char *url_segment_after(const char *url, const char *kind) {
        _cleanup_free_ char *needle = strjoin("/", kind, "/");
        const char *p = needle && url ? strstr(url, needle) : NULL;
        if (!p)
                return NULL;
        p += strlen(needle);
        char *s = strndup(p, strcspn(p, "/"));
        if (s && !gce_name_valid(s)) {
                free(s);
                return NULL;
        }
        return s;
}

/* A copy of an optional string member; PK_EMALFORMED when present but not a one-line string. */
static int opt_string(const json_t *o, const char *key, char **ret) {
        const json_t *v = json_object_get(o, key);
        *ret = NULL;
        if (!v)
                return 0;
        if (!json_is_string(v) || string_has_cc(json_string_value(v)) || json_string_length(v) > 4096)
                return PK_EMALFORMED;
        *ret = strdup(json_string_value(v));
        return *ret ? 0 : -ENOMEM;
}

/* labels: an object of string values whose keys and values are in GCE's label alphabet. */
static int parse_labels(const json_t *o, char ***ret) {
        const json_t *labels = json_object_get(o, "labels"), *v;
        const char *k;
        char **l = NULL;
        *ret = NULL;
        if (!labels)
                return 0;
        if (!json_is_object(labels))
                return PK_EMALFORMED;
        json_object_foreach((json_t *)labels, k, v) {
                if (!json_is_string(v) || !gce_label_key_valid(k) ||
                    !gce_label_value_valid(json_string_value(v))) {
                        strv_free(l);
                        return PK_EMALFORMED;
                }
                if (strv_extend(&l, k) < 0 || strv_extend(&l, json_string_value(v)) < 0) {
                        strv_free(l);
                        return -ENOMEM;
                }
        }
        *ret = l;
        return 0;
}

/* users: instance URLs, kept as "ZONE/NAME". */
static int parse_users(const json_t *o, char ***ret) {
        const json_t *users = json_object_get(o, "users"), *u;
        size_t i;
        char **l = NULL;
        *ret = NULL;
        if (!users)
                return 0;
        if (!json_is_array(users))
                return PK_EMALFORMED;
        json_array_foreach(users, i, u) {
                _cleanup_free_ char *zone = url_segment_after(json_string_value(u), "zones"),
                                    *name = url_segment_after(json_string_value(u), "instances");
                _cleanup_free_ char *s = zone && name ? strjoin(zone, "/", name) : NULL;
                int r = !zone || !name ? PK_EMALFORMED : !s ? -ENOMEM : strv_extend(&l, s);
                if (r < 0) {
                        strv_free(l);
                        return r;
                }
        }
        *ret = l;
        return 0;
}

static int parse_disk(const json_t *o, GceDisk *ret) {
        GceDisk d = {};
        _cleanup_free_ char *zone_url = NULL, *size = NULL, *attach = NULL;
        int r;

        if (!json_is_object(o))
                return PK_EMALFORMED;
        r = opt_string(o, "name", &d.name);
        if (r >= 0)
                r = opt_string(o, "zone", &zone_url);
        if (r >= 0)
                r = opt_string(o, "status", &d.status);
        if (r >= 0)
                r = opt_string(o, "sizeGb", &size);
        if (r >= 0)
                r = opt_string(o, "sourceSnapshot", &d.source_snapshot);
        if (r >= 0)
                r = opt_string(o, "lastAttachTimestamp", &attach);
        if (r >= 0)
                r = parse_labels(o, &d.labels);
        if (r >= 0)
                r = parse_users(o, &d.users);
        if (r >= 0 &&
            (!gce_name_valid(d.name) || !zone_url || !(d.zone = url_segment_after(zone_url, "zones")) ||
             !d.status || !size || safe_atou64(size, &d.size_gb) < 0 ||
             (attach && parse_rfc3339(attach, &d.last_attach) < 0)))
                r = PK_EMALFORMED;
        if (r < 0) {
                gce_disk_done(&d);
                return r;
        }
        *ret = d;
        return 0;
}

static int parse_attached_disks(const json_t *o, GceInstance *inst) {
        const json_t *disks = json_object_get(o, "disks"), *d;
        size_t i;
        if (!disks)
                return 0;
        if (!json_is_array(disks) || json_array_size(disks) > 128)
                return PK_EMALFORMED;
        inst->disks = new0(GceAttachedDisk, json_array_size(disks) + 1);
        if (!inst->disks)
                return -ENOMEM;
        json_array_foreach(disks, i, d) {
                GceAttachedDisk *a = &inst->disks[inst->n_disks++];
                const json_t *boot = json_object_get(d, "boot");
                const char *dev = json_get_string(d, "deviceName");
                a->disk = url_segment_after(json_get_string(d, "source"), "disks");
                a->boot = json_is_true(boot);
                if (!a->disk || !gce_name_valid(dev) || (boot && !json_is_boolean(boot)))
                        return PK_EMALFORMED;
                a->device_name = strdup(dev);
                if (!a->device_name)
                        return -ENOMEM;
        }
        return 0;
}

/* The first interface's address and its first access config's external address. */
static int parse_interfaces(const json_t *o, GceInstance *inst) {
        const json_t *nic = json_array_get(json_object_get(o, "networkInterfaces"), 0);
        const json_t *ac = json_array_get(json_object_get(nic, "accessConfigs"), 0);
        int r = nic ? opt_string(nic, "networkIP", &inst->internal_ip) : 0;
        if (r >= 0 && ac)
                r = opt_string(ac, "natIP", &inst->external_ip);
        return r;
}

static int parse_instance(const json_t *o, GceInstance *ret) {
        GceInstance i = {};
        _cleanup_free_ char *zone_url = NULL;
        int r;

        if (!json_is_object(o))
                return PK_EMALFORMED;
        r = opt_string(o, "name", &i.name);
        if (r >= 0)
                r = opt_string(o, "zone", &zone_url);
        if (r >= 0)
                r = opt_string(o, "status", &i.status);
        if (r >= 0)
                r = parse_interfaces(o, &i);
        if (r >= 0)
                r = parse_labels(o, &i.labels);
        if (r >= 0)
                r = parse_attached_disks(o, &i);
        if (r >= 0 && (!gce_name_valid(i.name) || !zone_url ||
                       !(i.zone = url_segment_after(zone_url, "zones")) || !i.status))
                r = PK_EMALFORMED;
        if (r < 0) {
                gce_instance_done(&i);
                return r;
        }
        *ret = i;
        return 0;
}

/* A page's items (each through parse, into an array of size elements) and its nextPageToken. */
static int parse_page(const json_t *j, size_t size, int (*parse)(const json_t *, void *), void **ret,
                      size_t *ret_n, char **ret_next) {
        const json_t *items = json_object_get(j, "items"), *it;
        const json_t *next = json_object_get(j, "nextPageToken");
        size_t i, n = 0;
        int r = 0;

        *ret = NULL;
        *ret_n = 0;
        *ret_next = NULL;
        if (!json_is_object(j) || (items && !json_is_array(items)) ||
            (next && (!json_is_string(next) || json_string_length(next) == 0 ||
                      json_string_length(next) > PAGE_TOKEN_MAX)))
                return PK_EMALFORMED;
        uint8_t *a = calloc(json_array_size(items) + 1, size);
        if (!a)
                return -ENOMEM;
        json_array_foreach(items, i, it) {
                r = parse(it, a + n * size);
                if (r < 0)
                        break;
                n++;
        }
        if (r >= 0 && next && !(*ret_next = strdup(json_string_value(next))))
                r = -ENOMEM;
        *ret = a;
        *ret_n = n;
        return r;
}

static int parse_disk_any(const json_t *o, void *ret) {
        return parse_disk(o, ret);
}

static int parse_instance_any(const json_t *o, void *ret) {
        return parse_instance(o, ret);
}

int gce_compute_parse_disk_page(const char *data, size_t len, GceDisk **ret, size_t *ret_n,
                                char **ret_next) {
        json_t *j = json_loadb(data, len, 0, NULL);
        void *a;
        int r = parse_page(j, sizeof(GceDisk), parse_disk_any, &a, ret_n, ret_next);
        json_decref(j);
        *ret = a;
        if (r < 0) {
                gce_disks_free(*ret, *ret_n);
                free(*ret_next);
                *ret = NULL, *ret_n = 0, *ret_next = NULL;
        }
        return r;
}

int gce_compute_parse_instance_page(const char *data, size_t len, GceInstance **ret, size_t *ret_n,
                                    char **ret_next) {
        json_t *j = json_loadb(data, len, 0, NULL);
        void *a;
        int r = parse_page(j, sizeof(GceInstance), parse_instance_any, &a, ret_n, ret_next);
        json_decref(j);
        *ret = a;
        if (r < 0) {
                gce_instances_free(*ret, *ret_n);
                free(*ret_next);
                *ret = NULL, *ret_n = 0, *ret_next = NULL;
        }
        return r;
}

static int parse_operation(const json_t *o, GceOperation *ret) {
        GceOperation op = {};
        const json_t *err = json_array_get(json_get(o, "error", "errors"), 0);
        int r = json_is_object(o) ? 0 : PK_EMALFORMED;
        if (r >= 0)
                r = opt_string(o, "name", &op.name);
        if (r >= 0)
                r = opt_string(o, "status", &op.status);
        if (r >= 0 && err) {
                const char *code = json_get_string(err, "code"), *msg = json_get_string(err, "message");
                op.error_code = string_one_line(code ?: "UNKNOWN", 100);
                op.error_message = string_one_line(msg ?: "no message", ERROR_MESSAGE_MAX);
                if (!op.error_code || !op.error_message)
                        r = -ENOMEM;
        }
        if (r >= 0 &&
            (!gce_name_valid(op.name) || !op.status ||
             (!streq(op.status, "PENDING") && !streq(op.status, "RUNNING") && !streq(op.status, "DONE"))))
                r = PK_EMALFORMED;
        if (r < 0) {
                gce_operation_done(&op);
                return r;
        }
        *ret = op;
        return 0;
}

int gce_compute_parse_operation(const char *data, size_t len, GceOperation *ret) {
        json_t *j = json_loadb(data, len, 0, NULL);
        int r = parse_operation(j, ret);
        json_decref(j);
        return r;
}

/* "/projects/P/zones/Z/<rest>" with the project of c; zone and every name checked (they become path
 * segments). */
static int zone_path(GceClient *c, const char *zone, const char *rest, char **ret, char **ret_error) {
        const char *project;
        int r = gce_client_project(c, &project, ret_error);
        if (r < 0)
                return r;
        if (!zone) { /* every zone: the aggregated list */
                *ret = strprintf("/projects/%s/aggregated%s", project, rest);
                return *ret ? 0 : -ENOMEM;
        }
        if (!gce_zone_valid(zone))
                return error_setf(ret_error, -EINVAL, "'%s' is not a GCE zone", strna(zone));
        *ret = strprintf("/projects/%s/zones/%s%s", project, zone, rest);
        return *ret ? 0 : -ENOMEM;
}

static const GceErrorCode not_found[] = {
        { 404, NULL, -ENOENT },
        {},
};

/* An aggregated list page ({"items": {"zones/Z": {"<kind>": [...]} or {"warning": ...}}}) as a plain one:
 * {"items": [every zone's items], "nextPageToken"}. NULL when it is not such a page (or on OOM). */
static json_t *aggregated_flatten(const json_t *j, const char *kind) {
        const json_t *scopes = json_object_get(j, "items"), *scope,
                     *next = json_object_get(j, "nextPageToken");
        const char *key;
        json_t *flat = json_object(), *items = json_array();
        bool ok = flat && items && json_is_object(j) && (!scopes || json_is_object(scopes));

        json_object_foreach((json_t *)scopes, key, scope) {
                const json_t *l = json_object_get(scope, kind);
                if (!ok)
                        break;
                ok = json_is_object(scope) &&
                     (!l || (json_is_array(l) && json_array_extend(items, (json_t *)l) == 0));
        }
        if (ok)
                ok = json_object_set(flat, "items", items) == 0 &&
                     (!next || json_object_set(flat, "nextPageToken", (json_t *)next) == 0);
        json_decref(items);
        if (!ok) {
                json_decref(flat);
                return NULL;
        }
        return flat;
}

/* Every page of a list call: items appended to *items (element size size), pages bounded. An aggregated
 * list (all zones) names its kind of items. */
static int list_all(GceClient *c, const char *operation, const char *path, const char *aggregated_kind,
                    const char *filter, size_t size, void (*free_items)(void *, size_t),
                    int (*parse)(const json_t *, void *), void **ret, size_t *ret_n, char **ret_error) {
        _cleanup_free_ char *token = NULL, *efilter = filter ? uri_encode(filter, false) : NULL;
        uint8_t *all = NULL;
        size_t n_all = 0;
        int r = 0;

        if (filter && !efilter)
                return -ENOMEM;
        for (unsigned page = 0; r >= 0; page++) {
                _cleanup_free_ char *etoken = token ? uri_encode(token, false) : NULL, *next = NULL;
                _cleanup_free_ char *query =
                    strprintf("maxResults=%d%s%s%s%s", GCE_COMPUTE_PAGE_SIZE, efilter ? "&filter=" : "",
                              strempty(efilter), etoken ? "&pageToken=" : "", strempty(etoken));
                json_t *j = NULL;
                void *items = NULL;
                size_t n = 0;
                if (!query || (token && !etoken)) {
                        r = -ENOMEM;
                        break;
                }
                if (page >= GCE_COMPUTE_PAGES_MAX) {
                        r = error_setf(ret_error, PK_ETOOBIG, "compute %s: more than %d pages", operation,
                                       GCE_COMPUTE_PAGES_MAX);
                        break;
                }
                GceCall call = { .service = GCE_SERVICE_COMPUTE,
                                 .operation = operation,
                                 .method = "GET",
                                 .path = path,
                                 .query = query };
                r = gce_client_call(c, &call, &j, ret_error);
                if (r < 0)
                        break;
                if (aggregated_kind) {
                        json_t *flat = aggregated_flatten(j, aggregated_kind);
                        json_decref(j);
                        j = flat;
                }
                r = j ? parse_page(j, size, parse, &items, &n, &next) : PK_EMALFORMED;
                json_decref(j);
                if (r >= 0 && n > 0) {
                        uint8_t *m = realloc(all, (n_all + n) * size);
                        if (!m)
                                r = -ENOMEM;
                        else {
                                all = m;
                                memcpy(all + n_all * size, items, n * size);
                                n_all += n;
                                n = 0;
                        }
                }
                free_items(items, n);
                if (r < 0) {
                        if (r == PK_EMALFORMED)
                                error_setf(ret_error, r, "compute %s: an answer that is not a %s page",
                                           operation, operation);
                        break;
                }
                free_and_replace(token, next);
                if (!token)
                        break;
        }
        if (r < 0) {
                free_items(all, n_all);
                return r;
        }
        *ret = all;
        *ret_n = n_all;
        return 0;
}

static void disks_free_any(void *d, size_t n) {
        gce_disks_free(d, n);
}

static void instances_free_any(void *i, size_t n) {
        gce_instances_free(i, n);
}

int gce_compute_list_disks(GceClient *c, const char *zone, const char *filter, GceDisk **ret, size_t *ret_n,
                           char **ret_error) {
        _cleanup_free_ char *path = NULL;
        void *a;
        int r = zone_path(c, zone, "/disks", &path, ret_error);
        if (r >= 0)
                r = list_all(c, zone ? "disks.list" : "disks.aggregatedList", path, zone ? NULL : "disks",
                             filter, sizeof(GceDisk), disks_free_any, parse_disk_any, &a, ret_n, ret_error);
        if (r >= 0)
                *ret = a;
        return r;
}

int gce_compute_list_instances(GceClient *c, const char *zone, const char *filter, GceInstance **ret,
                               size_t *ret_n, char **ret_error) {
        _cleanup_free_ char *path = NULL;
        void *a;
        int r = zone_path(c, zone, "/instances", &path, ret_error);
        if (r >= 0)
                r = list_all(c, zone ? "instances.list" : "instances.aggregatedList", path,
                             zone ? NULL : "instances", filter, sizeof(GceInstance), instances_free_any,
                             parse_instance_any, &a, ret_n, ret_error);
        if (r >= 0)
                *ret = a;
        return r;
}

/* GET of one resource "<kind>/<name>" of zone, parsed by parse. */
static int get_one(GceClient *c, const char *operation, const char *zone, const char *kind, const char *name,
                   int (*parse)(const json_t *, void *), void *ret, char **ret_error) {
        _cleanup_free_ char *rest = strjoin("/", kind, "/", name), *path = NULL;
        json_t *j = NULL;
        if (!rest)
                return -ENOMEM;
        if (!gce_name_valid(name) || !gce_zone_valid(zone))
                return error_setf(ret_error, -EINVAL, "'%s' in zone '%s' is not a GCE resource", name,
                                  strna(zone));
        int r = zone_path(c, zone, rest, &path, ret_error);
        if (r < 0)
                return r;
        GceCall call = { .service = GCE_SERVICE_COMPUTE,
                         .operation = operation,
                         .method = "GET",
                         .path = path,
                         .error_codes = not_found };
        r = gce_client_call(c, &call, &j, ret_error);
        if (r < 0)
                return r;
        r = parse(j, ret);
        json_decref(j);
        if (r == PK_EMALFORMED)
                return error_setf(ret_error, r, "compute %s: the answer for %s is malformed", operation,
                                  name);
        return r;
}

int gce_compute_get_disk(GceClient *c, const char *zone, const char *name, GceDisk *ret, char **ret_error) {
        return get_one(c, "disks.get", zone, "disks", name, parse_disk_any, ret, ret_error);
}

int gce_compute_get_instance(GceClient *c, const char *zone, const char *name, GceInstance *ret,
                             char **ret_error) {
        return get_one(c, "instances.get", zone, "instances", name, parse_instance_any, ret, ret_error);
}

static int parse_operation_any(const json_t *o, void *ret) {
        return parse_operation(o, ret);
}

/* The operation polled (operations.get) until DONE; its error, if any, as our code. */
static int operation_wait(GceClient *c, const char *zone, const char *what, GceOperation *op, usec_t timeout,
                          char **ret_error) {
        usec_t deadline = now(CLOCK_MONOTONIC) + timeout;
        int r = 0;
        for (unsigned i = 0; !streq(op->status, "DONE"); i++) {
                GceOperation next = {};
                if (now(CLOCK_MONOTONIC) + OPERATION_POLL >= deadline)
                        return error_setf(ret_error, PK_ETIMEOUT, "%s: operation %s still %s after %llu s",
                                          what, op->name, op->status,
                                          (unsigned long long)(timeout / USEC_PER_SEC));
                if (sleep_usec(i == 0 ? OPERATION_POLL / 5 : OPERATION_POLL) < 0)
                        return -ECANCELED;
                r = get_one(c, "zoneOperations.get", zone, "operations", op->name, parse_operation_any,
                            &next, ret_error);
                if (r < 0)
                        return r;
                gce_operation_done(op);
                *op = next;
        }
        if (!op->error_code)
                return 0;
        r = streq(op->error_code, "RESOURCE_IN_USE_BY_ANOTHER_RESOURCE") ? PK_ECONFLICT
            : streq(op->error_code, "RESOURCE_NOT_FOUND")                ? -ENOENT
                                                                         : PK_ECLOUD;
        return error_setf(ret_error, r, "%s: operation %s failed: %s: %s", what, op->name, op->error_code,
                          op->error_message);
}

/* POST of an instance method that answers with an operation, then the operation to DONE. */
static int instance_method(GceClient *c, const char *zone, const char *instance, const char *method,
                           const char *query, const char *body, const char *what, usec_t timeout,
                           char **ret_error) {
        _cleanup_free_ char *rest = strjoin("/instances/", instance, "/", method), *path = NULL;
        _cleanup_free_ char *operation = strjoin("instances.", method);
        _cleanup_(gce_operation_done) GceOperation op = {};
        json_t *j = NULL;
        int r;

        if (!rest || !operation)
                return -ENOMEM;
        if (!gce_name_valid(instance) || !gce_zone_valid(zone))
                return error_setf(ret_error, -EINVAL, "'%s' in zone '%s' is not a GCE instance", instance,
                                  strna(zone));
        r = zone_path(c, zone, rest, &path, ret_error);
        if (r < 0)
                return r;
        GceCall call = { .service = GCE_SERVICE_COMPUTE,
                         .operation = operation,
                         .method = "POST",
                         .path = path,
                         .query = query,
                         .content_type = body ? "application/json" : NULL,
                         .body = body,
                         .body_len = body ? strlen(body) : 0,
                         .error_codes = not_found };
        r = gce_client_call(c, &call, &j, ret_error);
        if (r < 0)
                return r;
        r = parse_operation(j, &op);
        json_decref(j);
        if (r < 0)
                return error_setf(ret_error, r, "compute %s: the answer is not an operation", operation);
        return operation_wait(c, zone, what, &op, timeout, ret_error);
}

int gce_compute_attach_disk(GceClient *c, const char *zone, const char *instance, const char *disk,
                            const char *device_name, usec_t timeout, char **ret_error) {
        const char *project;
        _cleanup_free_ char *what = strprintf("attach disk %s to %s", disk, instance), *body = NULL,
                            *source = NULL;
        int r = gce_client_project(c, &project, ret_error);
        if (r < 0)
                return r;
        if (!what)
                return -ENOMEM;
        if (!gce_name_valid(disk) || !gce_name_valid(device_name) || !gce_zone_valid(zone))
                return error_setf(ret_error, -EINVAL, "%s: invalid disk, device or zone name", what);
        source = strprintf("projects/%s/zones/%s/disks/%s", project, zone, disk);
        if (!source)
                return -ENOMEM;
        json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "source", source, "deviceName", device_name, "mode",
                              "READ_WRITE", "type", "PERSISTENT");
        body = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        if (!body)
                return -ENOMEM;
        return instance_method(c, zone, instance, "attachDisk", NULL, body, what, timeout, ret_error);
}

int gce_compute_detach_disk(GceClient *c, const char *zone, const char *instance, const char *device_name,
                            usec_t timeout, char **ret_error) {
        _cleanup_free_ char *what = strprintf("detach device %s from %s", device_name, instance);
        _cleanup_free_ char *query = strjoin("deviceName=", device_name);
        if (!what || !query)
                return -ENOMEM;
        if (!gce_name_valid(device_name))
                return error_setf(ret_error, -EINVAL, "%s: invalid device name", what);
        return instance_method(c, zone, instance, "detachDisk", query, NULL, what, timeout, ret_error);
}
