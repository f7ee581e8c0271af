/* SPDX-License-Identifier: Apache-2.0 */
#include "aws/ec2.h"

#include <string.h>
#include <time.h>

#include "aws/imds.h"
#include "aws/sigv4.h"
#include "basic/buf.h"
#include "basic/errors.h"
#include "basic/parse-util.h"
#include "basic/stop.h"
#include "basic/string-util.h"
#include "basic/strv.h"

/* An EC2 id or name we accept from a response or a caller: printable, bounded. */
#define EC2_VALUE_MAX 1024
#define EC2_ITEMS_MAX (1U << 20)

static int form_add(char **body, const char *key, const char *value) {
        int r = strextend_printf(body, "%s%s=", *body ? "&" : "", key);
        if (r >= 0)
                r = uri_encode_append(body, value, strlen(value), false);
        return r;
}

static int form_new(const char *action, char **ret) {
        char *b = NULL;
        int r = form_add(&b, "Action", action);
        if (r >= 0)
                r = form_add(&b, "Version", AWS_EC2_API_VERSION);
        if (r < 0) {
                free(b);
                return r;
        }
        *ret = b;
        return 0;
}

/* Filter.N.Name / Filter.N.Value.M (EC2 API Reference, "Query parameters for filtering"). */
static int form_add_filters(char **body, const AwsFilter *filters, size_t n) {
        char key[64];
        int r = 0;
        for (size_t i = 0; r >= 0 && i < n; i++) {
                if (isempty(filters[i].name) || !filters[i].values || !filters[i].values[0])
                        return -EINVAL;
                snprintf(key, sizeof(key), "Filter.%zu.Name", i + 1);
                r = form_add(body, key, filters[i].name);
                for (size_t j = 0; r >= 0 && filters[i].values[j]; j++) {
                        snprintf(key, sizeof(key), "Filter.%zu.Value.%zu", i + 1, j + 1);
                        r = form_add(body, key, filters[i].values[j]);
                }
        }
        return r;
}

static int form_add_list(char **body, const char *prefix, const char *const *values) {
        char key[64];
        int r = 0;
        for (size_t i = 0; r >= 0 && values && values[i]; i++) {
                snprintf(key, sizeof(key), "%s.%zu", prefix, i + 1);
                r = form_add(body, key, values[i]);
        }
        return r;
}

static int ec2_call(AwsClient *c, const char *action, const char *body, const AwsErrorCode *error_codes,
                    XmlNode **ret, char **ret_error) {
        AwsCall call = {
                .service = AWS_SERVICE_EC2,
                .operation = action,
                .method = "POST",
                .path = "/",
                .content_type = "application/x-www-form-urlencoded; charset=utf-8",
                .body = body,
                .body_len = strlen(body),
                .error_codes = error_codes,
        };
        XmlNode *doc = NULL;
        int r = aws_client_call(c, &call, &doc, ret_error);
        if (r < 0)
                return r;
        if (!doc)
                return error_setf(ret_error, PK_EMALFORMED, "ec2 %s: empty response", action);
        *ret = doc;
        return 0;
}

static int dup_text(const XmlNode *n, const char *path, char **ret) {
        return xml_path_text_dup(n, path, EC2_VALUE_MAX, ret);
}

static size_t count_items(const XmlNode *set) {
        size_t n = 0;
        XML_FOREACH_NAMED(i, set, "item")
        n++;
        return n;
}

static void tags_free(AwsTag *t, size_t n) {
        for (size_t i = 0; t && i < n; i++) {
                free(t[i].key);
                free(t[i].value);
        }
        free(t);
}

static int parse_tags(const XmlNode *item, AwsTag **ret, size_t *ret_n) {
        const XmlNode *set = xml_child(item, "tagSet");
        size_t n = count_items(set), k = 0;
        AwsTag *t = new0(AwsTag, n);
        int r = 0;
        if (!t)
                return -ENOMEM;
        XML_FOREACH_NAMED(i, set, "item") {
                r = dup_text(i, "key", &t[k].key);
                if (r >= 0)
                        r = dup_text(i, "value", &t[k].value);
                if (r >= 0 && !t[k].value)
                        t[k].value = strdup(""); /* a tag may have an empty value */
                if (r >= 0 && !t[k].value)
                        r = -ENOMEM;
                if (r >= 0 && !t[k].key)
                        r = PK_EMALFORMED;
                k++;
                if (r < 0) {
                        tags_free(t, k);
                        return r;
                }
        }
        *ret = t;
        *ret_n = k;
        return 0;
}

const char *aws_tags_get(const AwsTag *tags, size_t n, const char *key) {
        for (size_t i = 0; i < n; i++)
                if (streq(tags[i].key, key))
                        return tags[i].value;
        return NULL;
}

void aws_volume_done(AwsVolume *v) {
        free(v->volume_id);
        free(v->availability_zone);
        free(v->state);
        free(v->volume_type);
        free(v->snapshot_id);
        tags_free(v->tags, v->n_tags);
        for (size_t i = 0; i < v->n_attachments; i++) {
                free(v->attachments[i].instance_id);
                free(v->attachments[i].device);
                free(v->attachments[i].state);
        }
        free(v->attachments);
        *v = (AwsVolume){};
}

void aws_volumes_free(AwsVolume *v, size_t n) {
        for (size_t i = 0; v && i < n; i++)
                aws_volume_done(&v[i]);
        free(v);
}

static int parse_attachments(const XmlNode *item, AwsVolume *v) {
        const XmlNode *set = xml_child(item, "attachmentSet");
        size_t n = count_items(set);
        int r = 0;
        v->attachments = new0(AwsVolumeAttachment, n);
        if (!v->attachments)
                return -ENOMEM;
        XML_FOREACH_NAMED(i, set, "item") {
                AwsVolumeAttachment *a = &v->attachments[v->n_attachments++];
                r = dup_text(i, "instanceId", &a->instance_id);
                if (r >= 0)
                        r = dup_text(i, "device", &a->device);
                if (r >= 0)
                        r = dup_text(i, "status", &a->state);
                if (r >= 0 && (!a->instance_id || !a->state))
                        r = PK_EMALFORMED;
                const char *t = r >= 0 ? xml_path_text(i, "attachTime") : NULL;
                if (t && aws_parse_iso8601(t, &a->attach_time) < 0)
                        r = PK_EMALFORMED;
                if (r < 0)
                        return r;
        }
        return 0;
}

static int parse_volume(const XmlNode *item, AwsVolume *v) {
        const char *size = xml_path_text(item, "size");
        int r = dup_text(item, "volumeId", &v->volume_id);
        if (r >= 0)
                r = dup_text(item, "availabilityZone", &v->availability_zone);
        if (r >= 0)
                r = dup_text(item, "status", &v->state);
        if (r >= 0)
                r = dup_text(item, "volumeType", &v->volume_type);
        if (r >= 0)
                r = dup_text(item, "snapshotId", &v->snapshot_id);
        if (r >= 0 && (!v->volume_id || !v->availability_zone || !v->state))
                r = PK_EMALFORMED;
        if (r >= 0 && size && safe_atou64(size, &v->size_gib) < 0)
                r = PK_EMALFORMED;
        if (r >= 0)
                r = parse_tags(item, &v->tags, &v->n_tags);
        if (r >= 0)
                r = parse_attachments(item, v);
        return r;
}

/* Appends the items of one page to *all (reallocating). */
static int append_volumes(const XmlNode *doc, AwsVolume **all, size_t *n_all) {
        const XmlNode *set = xml_child(doc, "volumeSet");
        size_t n = count_items(set);
        if (!set)
                return PK_EMALFORMED;
        if (n > EC2_ITEMS_MAX || *n_all > EC2_ITEMS_MAX - n)
                return PK_ETOOBIG;
        AwsVolume *a = realloc(*all, (*n_all + n) * sizeof(AwsVolume) ?: 1);
        if (!a)
                return -ENOMEM;
        *all = a;
        XML_FOREACH_NAMED(i, set, "item") {
                AwsVolume *v = &a[(*n_all)++];
                *v = (AwsVolume){};
                int r = parse_volume(i, v);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Follows NextToken, refusing a token the server already gave (a loop) and stopping at AWS_EC2_PAGES_MAX. */
static int ec2_paginate(AwsClient *c, const char *action, const char *base_body, bool max_results,
                        int (*parse)(const XmlNode *, void **, size_t *), void **all, size_t *n_all,
                        char **ret_error) {
        _cleanup_free_ char *token = NULL, *prev = NULL;
        for (unsigned page = 0; page < AWS_EC2_PAGES_MAX; page++) {
                _cleanup_free_ char *body = strdup(base_body);
                _cleanup_(xml_node_freep) XmlNode *doc = NULL;
                int r = body ? 0 : -ENOMEM;
                /* MaxResults may not be combined with ids; 500 is DescribeVolumes' largest page. */
                if (r >= 0 && max_results)
                        r = form_add(&body, "MaxResults", "500");
                if (r >= 0 && token)
                        r = form_add(&body, "NextToken", token);
                if (r >= 0)
                        r = ec2_call(c, action, body, NULL, &doc, ret_error);
                if (r < 0)
                        return r;
                r = parse(doc, all, n_all);
                if (r < 0)
                        return error_setf(ret_error, r, "ec2 %s: malformed response page %u: %s", action,
                                          page + 1, pk_strerror(r));
                free(prev);
                prev = TAKE_PTR(token);
                r = dup_text(doc, "nextToken", &token);
                if (r < 0)
                        return r;
                if (!token)
                        return 0;
                if (prev && streq(prev, token))
                        return error_setf(ret_error, PK_EMALFORMED, "ec2 %s: the server repeated NextToken",
                                          action);
        }
        return error_setf(ret_error, PK_ETOOBIG, "ec2 %s: more than %u pages", action, AWS_EC2_PAGES_MAX);
}

static int parse_volumes_page(const XmlNode *doc, void **all, size_t *n_all) {
        return append_volumes(doc, (AwsVolume **)all, n_all);
}

int aws_ec2_describe_volumes(AwsClient *c, const AwsFilter *filters, size_t n_filters,
                             const char *const *volume_ids, AwsVolume **ret, size_t *ret_n,
                             char **ret_error) {
        _cleanup_free_ char *body = NULL;
        AwsVolume *all = NULL;
        size_t n = 0;
        int r = form_new("DescribeVolumes", &body);
        if (r >= 0)
                r = form_add_filters(&body, filters, n_filters);
        if (r >= 0)
                r = form_add_list(&body, "VolumeId", volume_ids);
        if (r >= 0)
                r = ec2_paginate(c, "DescribeVolumes", body, !volume_ids || !volume_ids[0],
                                 parse_volumes_page, (void **)&all, &n, ret_error);
        if (r < 0) {
                aws_volumes_free(all, n);
                return r;
        }
        *ret = all;
        *ret_n = n;
        return 0;
}

void aws_instance_done(AwsInstance *i) {
        free(i->instance_id);
        free(i->availability_zone);
        free(i->state);
        free(i->private_ip);
        free(i->private_dns_name);
        free(i->public_ip);
        free(i->root_device_name);
        strv_free(i->block_devices);
        tags_free(i->tags, i->n_tags);
        *i = (AwsInstance){};
}

void aws_instances_free(AwsInstance *i, size_t n) {
        for (size_t k = 0; i && k < n; k++)
                aws_instance_done(&i[k]);
        free(i);
}

static int parse_block_devices(const XmlNode *item, char ***ret) {
        const XmlNode *set = xml_child(item, "blockDeviceMapping");
        char **l = new0(char *, count_items(set) + 1);
        size_t k = 0;
        if (!l)
                return -ENOMEM;
        XML_FOREACH_NAMED(i, set, "item") {
                int r = dup_text(i, "deviceName", &l[k]);
                if (r < 0) {
                        strv_free(l);
                        return r;
                }
                if (l[k])
                        k++;
        }
        *ret = l;
        return 0;
}

static int parse_instance(const XmlNode *item, AwsInstance *v) {
        int r = dup_text(item, "instanceId", &v->instance_id);
        if (r >= 0)
                r = dup_text(item, "placement/availabilityZone", &v->availability_zone);
        if (r >= 0)
                r = dup_text(item, "instanceState/name", &v->state);
        if (r >= 0)
                r = dup_text(item, "privateIpAddress", &v->private_ip);
        if (r >= 0)
                r = dup_text(item, "privateDnsName", &v->private_dns_name);
        if (r >= 0)
                r = dup_text(item, "ipAddress", &v->public_ip);
        if (r >= 0)
                r = dup_text(item, "rootDeviceName", &v->root_device_name);
        if (r >= 0 && (!v->instance_id || !v->availability_zone))
                r = PK_EMALFORMED;
        if (r >= 0)
                r = parse_block_devices(item, &v->block_devices);
        if (r >= 0)
                r = parse_tags(item, &v->tags, &v->n_tags);
        return r;
}

/* Instances come grouped by reservation: reservationSet/item/instancesSet/item. */
static int parse_instances_page(const XmlNode *doc, void **all, size_t *n_all) {
        const XmlNode *set = xml_child(doc, "reservationSet");
        size_t n = 0;
        if (!set)
                return PK_EMALFORMED;
        XML_FOREACH_NAMED(res, set, "item")
        n += count_items(xml_child(res, "instancesSet"));
        if (n > EC2_ITEMS_MAX || *n_all > EC2_ITEMS_MAX - n)
                return PK_ETOOBIG;
        AwsInstance *a = realloc(*all, (*n_all + n) * sizeof(AwsInstance) ?: 1);
        if (!a)
                return -ENOMEM;
        *all = a;
        XML_FOREACH_NAMED(res, set, "item") {
                XML_FOREACH_NAMED(i, xml_child(res, "instancesSet"), "item") {
                        AwsInstance *v = &a[(*n_all)++];
                        *v = (AwsInstance){};
                        int r = parse_instance(i, v);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int aws_ec2_describe_instances(AwsClient *c, const AwsFilter *filters, size_t n_filters,
                               const char *const *instance_ids, AwsInstance **ret, size_t *ret_n,
                               char **ret_error) {
        _cleanup_free_ char *body = NULL;
        AwsInstance *all = NULL;
        size_t n = 0;
        int r = form_new("DescribeInstances", &body);
        if (r >= 0)
                r = form_add_filters(&body, filters, n_filters);
        if (r >= 0)
                r = form_add_list(&body, "InstanceId", instance_ids);
        if (r >= 0)
                r = ec2_paginate(c, "DescribeInstances", body, !instance_ids || !instance_ids[0],
                                 parse_instances_page, (void **)&all, &n, ret_error);
        if (r < 0) {
                aws_instances_free(all, n);
                return r;
        }
        *ret = all;
        *ret_n = n;
        return 0;
}

int aws_ec2_describe_self(AwsClient *c, AwsInstance *ret, char **ret_error) {
        _cleanup_free_ char *id = NULL, *err = NULL;
        AwsImds *m;
        AwsInstance *all = NULL;
        size_t n = 0;
        int r = aws_client_imds(c, &m);
        if (r >= 0)
                r = aws_imds_get(m, "meta-data/instance-id", &id, &err);
        if (r < 0)
                return error_setf(ret_error, r, "cannot learn this instance's id from IMDS: %s",
                                  err ?: pk_strerror(r));
        if (isempty(id) || strlen(id) > 64 || strpbrk(id, "/ \r\n\t"))
                return error_setf(ret_error, PK_EMALFORMED, "IMDS returned a malformed instance id");
        const char *ids[] = { id, NULL };
        r = aws_ec2_describe_instances(c, NULL, 0, ids, &all, &n, ret_error);
        if (r < 0)
                return r;
        if (n != 1 || !streq(all[0].instance_id, id)) {
                aws_instances_free(all, n);
                return error_setf(ret_error, PK_ECLOUD,
                                  "ec2 DescribeInstances: %zu instances for '%s', expected 1", n, id);
        }
        *ret = all[0];
        free(all);
        return 0;
}

static bool ec2_id_ok(const char *s) {
        return !isempty(s) && strlen(s) <= 64 && !string_has_cc(s);
}

int aws_ec2_attach_volume(AwsClient *c, const char *volume_id, const char *instance_id, const char *device,
                          char **ret_error) {
        /* VolumeInUse: somebody attached it between our look and our call (the compare-and-set failed);
         * IncorrectState: it is being attached or detached right now. EC2 says a device name is taken
         * only in the message of an InvalidParameterValue. */
        static const AwsErrorCode codes[] = {
                { "VolumeInUse", NULL, PK_ECONFLICT },
                { "IncorrectState", NULL, PK_ECONFLICT },
                { "InvalidParameterValue", "already in use", -EADDRINUSE },
                {},
        };
        _cleanup_free_ char *body = NULL;
        _cleanup_(xml_node_freep) XmlNode *doc = NULL;
        if (!ec2_id_ok(volume_id) || !ec2_id_ok(instance_id) || !ec2_id_ok(device))
                return error_setf(ret_error, -EINVAL,
                                  "ec2 AttachVolume: invalid volume '%s', instance '%s' or device '%s'",
                                  strnull(volume_id), strnull(instance_id), strnull(device));
        int r = form_new("AttachVolume", &body);
        if (r >= 0)
                r = form_add(&body, "VolumeId", volume_id);
        if (r >= 0)
                r = form_add(&body, "InstanceId", instance_id);
        if (r >= 0)
                r = form_add(&body, "Device", device);
        if (r >= 0)
                r = ec2_call(c, "AttachVolume", body, codes, &doc, ret_error);
        return r;
}

int aws_ec2_detach_volume(AwsClient *c, const char *volume_id, const char *instance_id, char **ret_error) {
        _cleanup_free_ char *body = NULL;
        _cleanup_(xml_node_freep) XmlNode *doc = NULL;
        if (!ec2_id_ok(volume_id) || (instance_id && !ec2_id_ok(instance_id)))
                return error_setf(ret_error, -EINVAL,
                                  "ec2 DetachVolume: invalid volume '%s' or instance '%s'",
                                  strnull(volume_id), strnull(instance_id));
        int r = form_new("DetachVolume", &body);
        if (r >= 0)
                r = form_add(&body, "VolumeId", volume_id);
        if (r >= 0 && instance_id)
                r = form_add(&body, "InstanceId", instance_id);
        if (r >= 0)
                r = ec2_call(c, "DetachVolume", body, NULL, &doc, ret_error);
        return r;
}

/* One look at the volume: 1 attached here, 0 not yet, PK_ECONFLICT attached elsewhere. */
static int check_attached(AwsClient *c, const char *volume_id, const char *instance_id, char **ret_device,
                          char **ret_error) {
        const char *ids[] = { volume_id, NULL };
        AwsVolume *v = NULL;
        size_t n = 0;
        int r = aws_ec2_describe_volumes(c, NULL, 0, ids, &v, &n, ret_error);
        if (r < 0)
                return r;
        r = 0;
        for (size_t i = 0; n == 1 && i < v[0].n_attachments; i++) {
                AwsVolumeAttachment *a = &v[0].attachments[i];
                if (!streq(a->instance_id, instance_id)) {
                        if (!streq(a->state, "detached"))
                                r = error_setf(ret_error, PK_ECONFLICT,
                                               "volume '%s' is attached to '%s', not '%s'", volume_id,
                                               a->instance_id, instance_id);
                } else if (streq(a->state, "attached")) {
                        *ret_device = TAKE_PTR(a->device);
                        r = 1;
                }
        }
        if (n != 1 && r == 0)
                r = error_setf(ret_error, PK_ECLOUD, "ec2 DescribeVolumes: %zu volumes for '%s', expected 1",
                               n, volume_id);
        aws_volumes_free(v, n);
        return r;
}

int aws_ec2_wait_attached(AwsClient *c, const char *volume_id, const char *instance_id, usec_t timeout,
                          usec_t interval, char **ret_device, char **ret_error) {
        usec_t deadline = now(CLOCK_MONOTONIC) + timeout;
        unsigned polls = 0;
        if (!ec2_id_ok(volume_id) || !ec2_id_ok(instance_id))
                return error_setf(ret_error, -EINVAL, "ec2: invalid volume '%s' or instance '%s'",
                                  strnull(volume_id), strnull(instance_id));
        for (;;) {
                char *device = NULL;
                int r = check_attached(c, volume_id, instance_id, &device, ret_error);
                polls++;
                if (r < 0)
                        return r;
                if (r > 0) {
                        if (ret_device)
                                *ret_device = device;
                        else
                                free(device);
                        return 0;
                }
                usec_t t = now(CLOCK_MONOTONIC);
                if (t + interval > deadline)
                        return error_setf(ret_error, PK_ETIMEOUT,
                                          "volume '%s' not attached to '%s' after %u polls", volume_id,
                                          instance_id, polls);
                r = sleep_usec(interval);
                if (r < 0)
                        return error_setf(ret_error, r, "waiting for volume '%s' to attach: stop requested",
                                          volume_id);
        }
}

static int parse_document(const void *data, size_t len, int (*parse)(const XmlNode *, void **, size_t *),
                          void **all, size_t *n) {
        _cleanup_(xml_node_freep) XmlNode *doc = NULL;
        int r = xml_parse(data, len, &doc);
        return r < 0 ? r : parse(doc, all, n);
}

int aws_ec2_parse_volumes(const void *data, size_t len, AwsVolume **ret, size_t *ret_n) {
        AwsVolume *all = NULL;
        size_t n = 0;
        int r = parse_document(data, len, parse_volumes_page, (void **)&all, &n);
        if (r < 0) {
                aws_volumes_free(all, n);
                return r;
        }
        *ret = all;
        *ret_n = n;
        return 0;
}

int aws_ec2_parse_instances(const void *data, size_t len, AwsInstance **ret, size_t *ret_n) {
        AwsInstance *all = NULL;
        size_t n = 0;
        int r = parse_document(data, len, parse_instances_page, (void **)&all, &n);
        if (r < 0) {
                aws_instances_free(all, n);
                return r;
        }
        *ret = all;
        *ret_n = n;
        return 0;
}

int aws_ebs_by_id_name(const char *volume_id, char **ret) {
        const char *hex = startswith(volume_id, "vol-");
        if (!hex || isempty(hex) || strlen(hex) > 32 ||
            strspn(hex, "0123456789abcdefghijklmnopqrstuvwxyz") != strlen(hex))
                return -EINVAL;
        char *s = strjoin("nvme-Amazon_Elastic_Block_Store_vol", hex);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

/* "/dev/sdf", "sdf", "/dev/xvdf", "xvdf" -> "f"; NULL for other names. */
static const char *device_suffix(const char *name) {
        const char *n = startswith(name, "/dev/") ?: name, *s;
        if ((s = startswith(n, "xvd")) || (s = startswith(n, "sd")))
                return s;
        return NULL;
}

static bool device_used(const char *letter, char *const *list) {
        for (size_t i = 0; list && list[i]; i++) {
                const char *s = device_suffix(list[i]);
                /* "/dev/xvda1" (a partition of the root device) blocks "a" as well */
                if (s && s[0] == letter[0] && (s[1] == 0 || (s[1] >= '0' && s[1] <= '9')))
                        return true;
        }
        return false;
}

int aws_ec2_pick_device(const AwsInstance *instance, const char *const *extra_used, char **ret) {
        char letter[2] = {};
        for (char c = 'f'; c <= 'z'; c++) {
                letter[0] = c;
                char *const root[] = { instance->root_device_name, NULL };
                if (device_used(letter, instance->block_devices) ||
                    device_used(letter, (char *const *)extra_used) ||
                    (instance->root_device_name && device_used(letter, root)))
                        continue;
                char *s = strjoin("/dev/xvd", letter);
                if (!s)
                        return -ENOMEM;
                *ret = s;
                return 0;
        }
        return -ENOSPC;
}
