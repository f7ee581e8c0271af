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
#include "gce/list.h"
#include "shared/json-util.h"

#define OPERATION_POLL    (500 * USEC_PER_MSEC)
#define ERROR_MESSAGE_MAX 400

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
        r = gce_json_opt_string(o, "name", &d.name);
        if (r >= 0)
                r = gce_json_opt_string(o, "zone", &zone_url);
        if (r >= 0)
                r = gce_json_opt_string(o, "status", &d.status);
        if (r >= 0)
                r = gce_json_opt_string(o, "sizeGb", &size);
        if (r >= 0)
                r = gce_json_opt_string(o, "sourceSnapshot", &d.source_snapshot);
        if (r >= 0)
                r = gce_json_opt_string(o, "lastAttachTimestamp", &attach);
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
        int r = nic ? gce_json_opt_string(nic, "networkIP", &inst->internal_ip) : 0;
        if (r >= 0 && ac)
                r = gce_json_opt_string(ac, "natIP", &inst->external_ip);
        return r;
}

static int parse_instance(const json_t *o, GceInstance *ret) {
        GceInstance i = {};
        _cleanup_free_ char *zone_url = NULL;
        int r;

        if (!json_is_object(o))
                return PK_EMALFORMED;
        r = gce_json_opt_string(o, "name", &i.name);
        if (r >= 0)
                r = gce_json_opt_string(o, "zone", &zone_url);
        if (r >= 0)
                r = gce_json_opt_string(o, "status", &i.status);
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

static int parse_disk_any(const json_t *o, void *ret) {
        return parse_disk(o, ret);
}

static int parse_instance_any(const json_t *o, void *ret) {
        return parse_instance(o, ret);
}

static void disks_free_any(void *d, size_t n) {
        gce_disks_free(d, n);
}

static void instances_free_any(void *i, size_t n) {
        gce_instances_free(i, n);
}

static const GceList disk_list = { .service = GCE_SERVICE_COMPUTE,
                                   .operation = "disks.list",
                                   .items_key = "items",
                                   .size = sizeof(GceDisk),
                                   .parse = parse_disk_any,
                                   .free_items = disks_free_any };
static const GceList instance_list = { .service = GCE_SERVICE_COMPUTE,
                                       .operation = "instances.list",
                                       .items_key = "items",
                                       .size = sizeof(GceInstance),
                                       .parse = parse_instance_any,
                                       .free_items = instances_free_any };

int gce_compute_parse_disk_page(const char *data, size_t len, GceDisk **ret, size_t *ret_n,
                                char **ret_next) {
        void *a = NULL;
        int r = gce_parse_page_text(data, len, &disk_list, &a, ret_n, ret_next);
        *ret = a;
        return r;
}

int gce_compute_parse_instance_page(const char *data, size_t len, GceInstance **ret, size_t *ret_n,
                                    char **ret_next) {
        void *a = NULL;
        int r = gce_parse_page_text(data, len, &instance_list, &a, ret_n, ret_next);
        *ret = a;
        return r;
}

static int parse_operation(const json_t *o, GceOperation *ret) {
        GceOperation op = {};
        const json_t *err = json_array_get(json_get(o, "error", "errors"), 0);
        int r = json_is_object(o) ? 0 : PK_EMALFORMED;
        if (r >= 0)
                r = gce_json_opt_string(o, "name", &op.name);
        if (r >= 0)
                r = gce_json_opt_string(o, "status", &op.status);
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

/* Every page of list (its path and filter set here); zone NULL: the aggregated list of every zone. */
static int list_zone(GceClient *c, const GceList *base, const char *zone, const char *kind,
                     const char *filter, void **ret, size_t *ret_n, char **ret_error) {
        _cleanup_free_ char *rest = strjoin("/", kind), *path = NULL, *efilter = NULL, *query = NULL,
                            *operation = zone ? NULL : strjoin(kind, ".aggregatedList");
        if (!rest || (!zone && !operation))
                return -ENOMEM;
        int r = zone_path(c, zone, rest, &path, ret_error);
        if (r < 0)
                return r;
        efilter = filter ? uri_encode(filter, false) : NULL;
        query = strprintf("maxResults=%d%s%s", GCE_COMPUTE_PAGE_SIZE, efilter ? "&filter=" : "",
                          strempty(efilter));
        if (!query || (filter && !efilter))
                return -ENOMEM;
        GceList l = *base;
        l.path = path;
        l.query = query;
        if (!zone) {
                l.operation = operation;
                l.aggregated_kind = kind;
        }
        return gce_list_all(c, &l, ret, ret_n, ret_error);
}

int gce_compute_list_disks(GceClient *c, const char *zone, const char *filter, GceDisk **ret, size_t *ret_n,
                           char **ret_error) {
        void *a = NULL;
        int r = list_zone(c, &disk_list, zone, "disks", filter, &a, ret_n, ret_error);
        if (r >= 0)
                *ret = a;
        return r;
}

int gce_compute_list_instances(GceClient *c, const char *zone, const char *filter, GceInstance **ret,
                               size_t *ret_n, char **ret_error) {
        void *a = NULL;
        int r = list_zone(c, &instance_list, zone, "instances", filter, &a, ret_n, ret_error);
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
