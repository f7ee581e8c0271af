/* SPDX-License-Identifier: Apache-2.0 */
#include "cloud/pool-meta.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/in-addr-util.h"
#include "basic/machine-id.h"
#include "basic/string-util.h"
#include "basic/strv.h"

void pool_volume_done(PoolVolume *v) {
        volume_done(&v->volume);
        free(v->image);
        free(v->device);
        *v = (PoolVolume){};
}

bool pool_id_valid(const char *id) {
        size_t n = strlen(id);
        if (n == 0 || n > POOL_ID_MAX || id[0] == '.')
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = id[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.'))
                        return false;
        }
        return true;
}

bool pool_node_name_valid(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > POOL_NODE_MAX)
                return false;
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char)s[i];
                if (c <= ' ' || c >= 0x7f || c == '/' || c == '"' || c == '\'' || c == '\\')
                        return false;
        }
        return true;
}

bool pool_tag_valid(const char *key, const char *value) {
        size_t k = strlen(key), v = strlen(value);
        return k > 0 && k <= POOL_TAG_KEY_MAX && v <= POOL_TAG_VALUE_MAX && !string_has_cc(key) &&
               !string_has_cc(value);
}

static bool path_valid(const char *s) {
        size_t n = strlen(s);
        return n > 1 && n < 4096 && s[0] == '/' && !string_has_cc(s);
}

_printf_(2, 3) static int bad(char **ret_error, const char *fmt, ...) {
        va_list ap;
        if (ret_error) {
                va_start(ap, fmt);
                if (vasprintf(ret_error, fmt, ap) < 0)
                        *ret_error = NULL;
                va_end(ap);
        }
        return PK_EMALFORMED;
}

/* Only keys of allowed may appear. */
static int check_keys(json_t *o, const char *const *allowed, const char *where, char **ret_error) {
        const char *k;
        json_t *v;
        json_object_foreach(o, k, v) {
                bool ok = false;
                for (const char *const *a = allowed; *a; a++)
                        if (streq(*a, k))
                                ok = true;
                if (!ok) {
                        if (ret_error)
                                *ret_error = strprintf("%s: unknown key '%.64s'", where, k);
                        return PK_EMALFORMED;
                }
        }
        return 0;
}

static int get_string(json_t *o, const char *key, bool required, const char **ret, char **ret_error) {
        json_t *v = json_object_get(o, key);
        if (!v) {
                if (required)
                        return bad(ret_error, "missing '%s'", key);
                *ret = NULL;
                return 0;
        }
        if (!json_is_string(v))
                return bad(ret_error, "'%s' must be a string", key);
        const char *s = json_string_value(v);
        /* an embedded NUL would make C see a different string than the file holds */
        if (strlen(s) != json_string_length(v) || string_has_cc(s))
                return bad(ret_error, "'%s' holds control characters", key);
        *ret = s;
        return 0;
}

static int get_ips(json_t *o, const char *key, char ***ret, char **ret_error) {
        _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
        json_t *a = json_object_get(o, key), *e;
        size_t i;

        if (!l)
                return -ENOMEM;
        if (a) {
                if (!json_is_array(a) || json_array_size(a) > POOL_IPS_MAX)
                        return bad(ret_error, "'%s' must be an array of at most %d addresses", key,
                                   POOL_IPS_MAX);
                json_array_foreach(a, i, e) {
                        if (!json_is_string(e) || strlen(json_string_value(e)) != json_string_length(e) ||
                            !in_addr_literal_valid(json_string_value(e)))
                                return bad(ret_error, "'%s' holds something that is not an IP address", key);
                        if (strv_extend(&l, json_string_value(e)) < 0)
                                return -ENOMEM;
                }
        }
        *ret = TAKE_PTR(l);
        return 0;
}

static int parse_tags(json_t *t, Volume *v, char **ret_error) {
        const char *k;
        json_t *val;

        if (!t) {
                v->tags = calloc(1, sizeof(char *));
                return v->tags ? 0 : -ENOMEM;
        }
        if (!json_is_object(t) || json_object_size(t) > POOL_TAGS_MAX)
                return bad(ret_error, "'%s' must be an object of at most 50 strings", "tags");
        json_object_foreach(t, k, val) {
                if (!json_is_string(val) || strlen(json_string_value(val)) != json_string_length(val) ||
                    !pool_tag_valid(k, json_string_value(val)))
                        return bad(ret_error, "tag '%.128s' is not a valid key=value", k);
                if (volume_set_tag(v, k, json_string_value(val)) < 0)
                        return -ENOMEM;
        }
        if (!v->tags)
                v->tags = calloc(1, sizeof(char *));
        return v->tags ? 0 : -ENOMEM;
}

static int parse_attachment(json_t *a, VolumeAttachment *att, char **ret_error) {
        static const char *const keys[] = {
                "node", "machineID", "internalIPs", "externalIPs", "device", NULL
        };
        const char *node, *device, *machine_id;
        int r;

        if (!json_is_object(a))
                return bad(ret_error, "'%s' must be an object", "attachment");
        r = check_keys(a, keys, "attachment", ret_error);
        if (r < 0)
                return r;
        if ((r = get_string(a, "node", true, &node, ret_error)) < 0 ||
            (r = get_string(a, "device", false, &device, ret_error)) < 0 ||
            (r = get_string(a, "machineID", false, &machine_id, ret_error)) < 0)
                return r;
        if (!pool_node_name_valid(node))
                return bad(ret_error, "attachment: invalid node name");
        if (machine_id && !machine_id_valid(machine_id))
                return bad(ret_error, "attachment: 'machineID' must be 32 lowercase hexadecimal digits");
        if (device && !path_valid(device))
                return bad(ret_error, "attachment: '%s' must be an absolute path", "device");
        if ((r = get_ips(a, "internalIPs", &att->internal_ips, ret_error)) < 0 ||
            (r = get_ips(a, "externalIPs", &att->external_ips, ret_error)) < 0)
                return r;
        att->node = strdup(node);
        if (!att->node || (device && !(att->device = strdup(device))) ||
            (machine_id && !(att->machine_id = strdup(machine_id))))
                return -ENOMEM;
        return 0;
}

static int parse_backing(json_t *root, PoolVolume *pv, char **ret_error) {
        const char *image, *device;
        int r;

        if ((r = get_string(root, "image", false, &image, ret_error)) < 0 ||
            (r = get_string(root, "device", false, &device, ret_error)) < 0)
                return r;
        if (!!image == !!device)
                return bad(ret_error, "exactly one of 'image' and 'device' is needed");
        if (image) {
                _cleanup_free_ char *want = strjoin(pv->volume.id, ".img");
                if (!want)
                        return -ENOMEM;
                if (!streq(image, want))
                        return bad(ret_error, "'image' must be '%s'", want);
                pv->image = strdup(image);
                return pv->image ? 0 : -ENOMEM;
        }
        if (!path_valid(device))
                return bad(ret_error, "'%s' must be an absolute path", "device");
        pv->device = strdup(device);
        return pv->device ? 0 : -ENOMEM;
}

static int parse_root(json_t *root, PoolVolume *pv, char **ret_error) {
        static const char *const keys[] = { "version", "id",   "zone",       "size", "image",
                                            "device",  "tags", "attachment", NULL };
        const char *id, *zone;
        json_t *j;
        int r;

        if (!json_is_object(root))
                return bad(ret_error, "the metadata must be a JSON object");
        if ((r = check_keys(root, keys, "metadata", ret_error)) < 0)
                return r;
        j = json_object_get(root, "version");
        if (!json_is_integer(j) || json_integer_value(j) != 1)
                return bad(ret_error, "'%s' must be 1", "version");
        if ((r = get_string(root, "id", true, &id, ret_error)) < 0 ||
            (r = get_string(root, "zone", true, &zone, ret_error)) < 0)
                return r;
        if (!pool_id_valid(id))
                return bad(ret_error, "'%s' must be 1-63 characters of [A-Za-z0-9._-]", "id");
        if (strlen(zone) == 0 || strlen(zone) > 63)
                return bad(ret_error, "'%s' must be 1-63 characters", "zone");
        j = json_object_get(root, "size");
        if (!json_is_integer(j) || json_integer_value(j) < 0)
                return bad(ret_error, "'%s' must be a non-negative integer", "size");
        pv->volume.size = (uint64_t)json_integer_value(j);
        pv->volume.id = strdup(id);
        pv->volume.zone = strdup(zone);
        if (!pv->volume.id || !pv->volume.zone)
                return -ENOMEM;
        if ((r = parse_backing(root, pv, ret_error)) < 0 ||
            (r = parse_tags(json_object_get(root, "tags"), &pv->volume, ret_error)) < 0)
                return r;
        j = json_object_get(root, "attachment");
        if (j && !json_is_null(j)) {
                r = parse_attachment(j, &pv->volume.attachment, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

int pool_meta_parse(const char *text, size_t len, PoolVolume *ret, char **ret_error) {
        _cleanup_(json_decrefp) json_t *root = NULL;
        PoolVolume pv = {};
        json_error_t err;

        if (len > POOL_META_MAX)
                return bad(ret_error, "metadata larger than 64 KiB");
        /* REJECT_DUPLICATES: two "attachment" keys must not let two readers see different owners. */
        root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
        if (!root) {
                if (ret_error)
                        *ret_error = strprintf("line %d: %s", err.line, err.text);
                return PK_EMALFORMED;
        }
        int r = parse_root(root, &pv, ret_error);
        if (r < 0) {
                pool_volume_done(&pv);
                return r;
        }
        *ret = pv;
        return 0;
}

/* The holder as far as it can be read: a valid node name, and the machine id if that is valid too. */
static int salvage_holder(json_t *root, VolumeAttachment *att) {
        json_t *a = json_object_get(root, "attachment");
        json_t *node = json_object_get(a, "node"), *mid = json_object_get(a, "machineID");
        const char *s = json_string_value(node);

        if (!s || strlen(s) != json_string_length(node) || !pool_node_name_valid(s))
                return 0;
        if (!(att->node = strdup(s)))
                return -ENOMEM;
        s = json_string_value(mid);
        if (s && strlen(s) == json_string_length(mid) && machine_id_valid(s) &&
            !(att->machine_id = strdup(s)))
                return -ENOMEM;
        return 0;
}

int pool_meta_salvage(const char *text, size_t len, const char *id, const char *reason, PoolVolume *ret) {
        _cleanup_(json_decrefp) json_t *root = NULL;
        PoolVolume pv = {}, core = {};
        int r = 0;

        if (text && len <= POOL_META_MAX)
                root = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
        if (json_is_object(root)) {
                r = salvage_holder(root, &pv.volume.attachment);
                /* Everything but the attachment: if that reads, the damage was in the attachment only
                 * and the record can be rewritten without it once the volume is released. */
                json_object_del(root, "attachment");
                if (r >= 0 && parse_root(root, &core, NULL) >= 0 && streq(core.volume.id, id)) {
                        VolumeAttachment att = pv.volume.attachment;
                        pv = core;
                        pv.volume.attachment = att;
                        pv.core_valid = true;
                        core = (PoolVolume){};
                }
                pool_volume_done(&core);
        }
        if (r >= 0 && !pv.volume.id && !(pv.volume.id = strdup(id)))
                r = -ENOMEM;
        if (r >= 0 && !pv.volume.tags && !(pv.volume.tags = calloc(1, sizeof(char *))))
                r = -ENOMEM;
        if (r >= 0 && !(pv.volume.damaged = strdup(reason ?: "unreadable")))
                r = -ENOMEM;
        if (r < 0) {
                pool_volume_done(&pv);
                return r;
        }
        *ret = pv;
        return 0;
}

static json_t *json_strv(char *const *l) {
        json_t *a = json_array();
        if (!a)
                return NULL;
        STRV_FOREACH (s, (char **)l)
                if (json_array_append_new(a, json_string(*s)) < 0) {
                        json_decref(a);
                        return NULL;
                }
        return a;
}

static json_t *format_attachment(const VolumeAttachment *att) {
        _cleanup_(json_decrefp) json_t *a = json_object();
        if (!a || json_object_set_new(a, "node", json_string(att->node)) < 0 ||
            json_object_set_new(a, "internalIPs", json_strv(att->internal_ips)) < 0 ||
            json_object_set_new(a, "externalIPs", json_strv(att->external_ips)) < 0 ||
            (att->machine_id && json_object_set_new(a, "machineID", json_string(att->machine_id)) < 0) ||
            (att->device && json_object_set_new(a, "device", json_string(att->device)) < 0))
                return NULL;
        return TAKE_PTR(a);
}

int pool_meta_format(const PoolVolume *v, char **ret) {
        _cleanup_(json_decrefp) json_t *root = json_object();
        json_t *tags = json_object();

        if (!root || !tags || json_object_set_new(root, "tags", tags) < 0)
                return -ENOMEM;
        for (char **t = v->volume.tags; t && t[0] && t[1]; t += 2)
                if (json_object_set_new(tags, t[0], json_string(t[1])) < 0)
                        return -ENOMEM;
        if (json_object_set_new(root, "version", json_integer(1)) < 0 ||
            json_object_set_new(root, "id", json_string(v->volume.id)) < 0 ||
            json_object_set_new(root, "zone", json_string(v->volume.zone)) < 0 ||
            json_object_set_new(root, "size", json_integer((json_int_t)v->volume.size)) < 0 ||
            (v->image && json_object_set_new(root, "image", json_string(v->image)) < 0) ||
            (v->device && json_object_set_new(root, "device", json_string(v->device)) < 0))
                return -ENOMEM;
        if (v->volume.attachment.node &&
            json_object_set_new(root, "attachment", format_attachment(&v->volume.attachment)) < 0)
                return -ENOMEM;
        char *s = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS);
        if (!s)
                return -ENOMEM;
        char *withnl = strjoin(s, "\n");
        free(s);
        if (!withnl)
                return -ENOMEM;
        *ret = withnl;
        return 0;
}
