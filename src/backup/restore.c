/* SPDX-License-Identifier: Apache-2.0 */
#include "backup/restore.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "basic/errors.h"
#include "basic/semver.h"
#include "basic/string-util.h"
#include "basic/strv.h"

#define RESTORE_MEMBERS_MAX 64U /* as many as an etcd cluster may name (components/etcd.c) */
#define RESTORE_NAME_MAX    63U /* a member name is a DNS label */

static const char *const step_names[_RESTORE_STEP_MAX] = {
        [RESTORE_STEP_NONE] = "none",           [RESTORE_STEP_DOWNLOADED] = "downloaded",
        [RESTORE_STEP_STOPPING] = "stopping",   [RESTORE_STEP_MOVED] = "moved",
        [RESTORE_STEP_RESTORING] = "restoring", [RESTORE_STEP_DONE] = "done",
};

static const char *const action_names[_RESTORE_ACTION_MAX] = {
        [RESTORE_NOTHING] = "nothing",
        [RESTORE_DOWNLOAD] = "download",
        [RESTORE_STOP] = "stop",
        [RESTORE_WAIT_STOPPED] = "wait-stopped",
        [RESTORE_MOVE_ASIDE] = "move-aside",
        [RESTORE_WRITE_MANIFEST] = "write-manifest",
        [RESTORE_WAIT_HEALTHY] = "wait-healthy",
        [RESTORE_REPORT_DONE] = "report-done",
        [RESTORE_CONFLICT] = "conflict",
};

const char *restore_step_to_string(RestoreStep s) {
        return s >= 0 && s < _RESTORE_STEP_MAX ? step_names[s] : NULL;
}

RestoreStep restore_step_from_string(const char *s) {
        for (int i = 0; s && i < _RESTORE_STEP_MAX; i++)
                if (streq(s, step_names[i]))
                        return (RestoreStep)i;
        return _RESTORE_STEP_INVALID;
}

const char *restore_action_to_string(RestoreAction a) {
        return a >= 0 && a < _RESTORE_ACTION_MAX ? action_names[a] : NULL;
}

int restore_id_new(usec_t t, char ret[static RESTORE_ID_LEN + 1]) {
        char ts[BACKUP_TIMESTAMP_LEN + 1];
        uint32_t rnd;
        int r = backup_timestamp_format(t, ts);
        if (r < 0)
                return r;
        if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
                return -errno;
        snprintf(ret, RESTORE_ID_LEN + 1, "%s-%08x", ts, rnd);
        return 0;
}

/* The id names a file, a directory on the volume and a store key, and goes into etcd's cluster token. */
bool restore_id_is_valid(const char *id) {
        usec_t t;
        if (!id || strlen(id) != RESTORE_ID_LEN || id[BACKUP_TIMESTAMP_LEN] != '-')
                return false;
        _cleanup_free_ char *ts = strndup(id, BACKUP_TIMESTAMP_LEN);
        if (!ts || backup_timestamp_parse(ts, &t) < 0)
                return false;
        for (const char *p = id + BACKUP_TIMESTAMP_LEN + 1; *p; p++)
                if (!strchr("0123456789abcdef", *p))
                        return false;
        return true;
}

static bool name_is_valid(const char *s) {
        if (isempty(s) || strlen(s) > RESTORE_NAME_MAX)
                return false;
        for (const char *p = s; *p; p++)
                if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789-", *p))
                        return false;
        return s[0] != '-';
}

/* The document as an object, or PK_EMALFORMED naming what it is. */
static int load_object(const char *what, const char *text, size_t len, json_t **ret, char **ret_error) {
        json_error_t jerr;
        if (len > RESTORE_TEXT_MAX)
                return error_setf(ret_error, PK_ETOOBIG, "%s: larger than %u bytes", what, RESTORE_TEXT_MAX);
        json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!o)
                return error_setf(ret_error, PK_EMALFORMED, "%s: not JSON: %s (line %d)", what, jerr.text,
                                  jerr.line);
        if (!json_is_object(o)) {
                json_decref(o);
                return error_setf(ret_error, PK_EMALFORMED, "%s: not a JSON object", what);
        }
        *ret = o;
        return 0;
}

/* A string field: its value, or PK_EMALFORMED naming the field (and the value, when it is printable). */
static int string_field(const char *what, json_t *o, const char *field, bool (*valid)(const char *),
                        const char **ret, char **ret_error) {
        json_t *v = json_object_get(o, field);
        if (!v)
                return error_setf(ret_error, PK_EMALFORMED, "%s: field '%s' is missing", what, field);
        const char *s = json_string_value(v);
        if (!s)
                return error_setf(ret_error, PK_EMALFORMED, "%s: field '%s' is not a string", what, field);
        if (valid && !valid(s))
                return error_setf(ret_error, PK_EMALFORMED, "%s: field '%s': invalid value '%.80s'", what,
                                  field, string_has_cc(s) ? "(control characters)" : s);
        *ret = s;
        return 0;
}

static bool timestamp_is_valid(const char *s) {
        usec_t t;
        return backup_timestamp_parse(s, &t) >= 0;
}

static bool step_is_valid(const char *s) {
        return restore_step_from_string(s) >= 0;
}

int restore_request_parse(const char *text, size_t len, RestoreRequest *ret, char **ret_error) {
        static const char what[] = "restore request";
        _cleanup_(json_decrefp) json_t *o = NULL;
        const char *id, *snapshot, *requested;
        RestoreRequest req = {};
        int r = load_object(what, text, len, &o, ret_error);
        if (r < 0)
                return r;
        if ((r = string_field(what, o, "id", restore_id_is_valid, &id, ret_error)) < 0 ||
            (r = string_field(what, o, "snapshot", timestamp_is_valid, &snapshot, ret_error)) < 0 ||
            (r = string_field(what, o, "requested", timestamp_is_valid, &requested, ret_error)) < 0)
                return r;
        memcpy(req.id, id, RESTORE_ID_LEN + 1);
        memcpy(req.snapshot, snapshot, BACKUP_TIMESTAMP_LEN + 1);
        (void)backup_timestamp_parse(requested, &req.requested);
        *ret = req;
        return 0;
}

static int dump(json_t *o, char **ret) {
        if (!o)
                return -ENOMEM;
        char *text = json_dumps(o, JSON_SORT_KEYS | JSON_INDENT(2));
        json_decref(o);
        if (!text)
                return -ENOMEM;
        *ret = text;
        return 0;
}

int restore_request_format(const RestoreRequest *r, char **ret) {
        char requested[BACKUP_TIMESTAMP_LEN + 1];
        if (!restore_id_is_valid(r->id) || !timestamp_is_valid(r->snapshot) ||
            backup_timestamp_format(r->requested, requested) < 0)
                return -EINVAL;
        return dump(
            json_pack("{s:s, s:s, s:s}", "id", r->id, "snapshot", r->snapshot, "requested", requested), ret);
}

int restore_state_parse(const char *text, size_t len, RestoreState *ret, char **ret_error) {
        static const char what[] = "restore state";
        _cleanup_(json_decrefp) json_t *o = NULL;
        const char *id, *step;
        int r = load_object(what, text, len, &o, ret_error);
        if (r < 0)
                return r;
        if ((r = string_field(what, o, "id", restore_id_is_valid, &id, ret_error)) < 0 ||
            (r = string_field(what, o, "step", step_is_valid, &step, ret_error)) < 0)
                return r;
        RestoreState s = { .step = restore_step_from_string(step) };
        memcpy(s.id, id, RESTORE_ID_LEN + 1);
        *ret = s;
        return 0;
}

int restore_state_format(const RestoreState *s, char **ret) {
        if (!restore_id_is_valid(s->id) || !restore_step_to_string(s->step))
                return -EINVAL;
        return dump(json_pack("{s:s, s:s}", "id", s->id, "step", restore_step_to_string(s->step)), ret);
}

static bool version_is_valid(const char *s) {
        Semver v;
        return strlen(s) < UPGRADE_VERSION_MAX && semver_parse(s, 0, &v) >= 0;
}

static bool node_is_valid(const char *s) {
        return !isempty(s) && strlen(s) < UPGRADE_NODE_MAX && !string_has_cc(s) && !strchr(s, ' ');
}

int upgrade_record_parse(const char *text, size_t len, UpgradeRecord *ret, char **ret_error) {
        static const char what[] = "upgrade record";
        _cleanup_(json_decrefp) json_t *o = NULL;
        const char *backup, *from, *to, *node;
        UpgradeRecord rec = {};
        int r = load_object(what, text, len, &o, ret_error);
        if (r < 0)
                return r;
        if ((r = string_field(what, o, "backup", timestamp_is_valid, &backup, ret_error)) < 0 ||
            (r = string_field(what, o, "from", version_is_valid, &from, ret_error)) < 0 ||
            (r = string_field(what, o, "to", version_is_valid, &to, ret_error)) < 0 ||
            (r = string_field(what, o, "node", node_is_valid, &node, ret_error)) < 0)
                return r;
        /* each checked to fit above */
        snprintf(rec.backup, sizeof(rec.backup), "%s", backup);
        snprintf(rec.from, sizeof(rec.from), "%s", from);
        snprintf(rec.to, sizeof(rec.to), "%s", to);
        snprintf(rec.node, sizeof(rec.node), "%s", node);
        *ret = rec;
        return 0;
}

int upgrade_record_format(const UpgradeRecord *r, char **ret) {
        if (!timestamp_is_valid(r->backup) || !version_is_valid(r->from) || !version_is_valid(r->to) ||
            !node_is_valid(r->node))
                return -EINVAL;
        return dump(json_pack("{s:s, s:s, s:s, s:s}", "backup", r->backup, "from", r->from, "to", r->to,
                              "node", r->node),
                    ret);
}

static char *cluster_key(const char *cluster, const char *name) {
        char *k = strprintf("restores/%s/%s", cluster, name);
        if (k && !store_key_valid(k)) {
                free(k);
                return NULL;
        }
        return k;
}

/* A cluster's document restores/<cluster>/<name>: its key and text (caller frees both). */
static int document_read(Store *s, const char *cluster, const char *name, char **ret_key, char **ret_text,
                         size_t *ret_len, char **ret_error) {
        _cleanup_free_ char *key = cluster_key(cluster, name);
        if (!key)
                return error_setf(ret_error, -EINVAL, "invalid etcd cluster name '%s'", cluster);
        int r = store_get(s, key, ret_text, ret_len, ret_error);
        if (r >= 0)
                *ret_key = TAKE_PTR(key);
        return r;
}

/* Writes the text a format function made (r: what it returned), under restores/<cluster>/<name>. */
static int document_write(Store *s, const char *cluster, const char *name, int r, char *text,
                          char **ret_error) {
        _cleanup_free_ char *key = cluster_key(cluster, name);
        if (r >= 0 && !key)
                r = error_setf(ret_error, -EINVAL, "invalid etcd cluster name '%s'", cluster);
        if (r >= 0)
                r = store_put(s, key, text, strlen(text), 0, ret_error);
        free(text);
        return r;
}

int upgrade_record_get(Store *s, const char *cluster, UpgradeRecord *ret, char **ret_error) {
        _cleanup_free_ char *key = NULL, *text = NULL, *err = NULL;
        size_t len;
        int r = document_read(s, cluster, "upgrade.json", &key, &text, &len, ret_error);
        if (r >= 0 && (r = upgrade_record_parse(text, len, ret, &err)) < 0)
                return error_setf(ret_error, r, "%s: %s", key, strna(err));
        return r < 0 ? r : 0;
}

int upgrade_record_put(Store *s, const char *cluster, const UpgradeRecord *rec, char **ret_error) {
        char *text = NULL;
        int r = upgrade_record_format(rec, &text);
        return document_write(s, cluster, "upgrade.json", r, text, ret_error);
}

int restore_request_get(Store *s, const char *cluster, RestoreRequest *ret, char **ret_error) {
        _cleanup_free_ char *key = NULL, *text = NULL, *err = NULL;
        size_t len;
        int r = document_read(s, cluster, "request.json", &key, &text, &len, ret_error);
        if (r >= 0 && (r = restore_request_parse(text, len, ret, &err)) < 0)
                return error_setf(ret_error, r, "%s: %s", key, strna(err));
        return r < 0 ? r : 0;
}

int restore_request_put(Store *s, const char *cluster, const RestoreRequest *req, char **ret_error) {
        char *text = NULL;
        int r = restore_request_format(req, &text);
        return document_write(s, cluster, "request.json", r, text, ret_error);
}

int restore_report_put(Store *s, const char *cluster, const char *id, const char *member,
                       char *const *members, RestoreStep step, const char *node, char **ret_error) {
        _cleanup_free_ char *key = strprintf("restores/%s/%s/%s.json", cluster, id, member), *text = NULL;
        if (!key)
                return -ENOMEM;
        if (!store_key_valid(key) || !name_is_valid(member) || !restore_step_to_string(step))
                return error_setf(ret_error, -EINVAL, "invalid restore report key '%s'", key);
        json_t *list = json_array();
        for (size_t i = 0; list && members && members[i]; i++)
                if (json_array_append_new(list, json_string(members[i])) < 0)
                        return json_decref(list), -ENOMEM;
        int r = dump(json_pack("{s:s, s:o, s:s, s:s}", "member", member, "members", list, "step",
                               restore_step_to_string(step), "node", strna(node)),
                     &text);
        if (r < 0)
                return r;
        return store_put(s, key, text, strlen(text), 0, ret_error);
}

void restore_progress_done(RestoreProgress *p) {
        strv_free(p->members);
        strv_free(p->done);
        strv_free(p->reported);
        *p = (RestoreProgress){};
}

static int extend_unique(char ***l, const char *s) {
        return strv_contains(*l, s) ? 0 : strv_extend(l, s);
}

/* One report into p; PK_EMALFORMED naming the key and the field. */
static int read_report(Store *s, const char *key, RestoreProgress *p, char **ret_error) {
        _cleanup_(json_decrefp) json_t *o = NULL;
        _cleanup_free_ char *text = NULL;
        const char *member, *step;
        size_t len, i;
        json_t *m;
        int r = store_get(s, key, &text, &len, ret_error);
        if (r < 0)
                return r;
        if ((r = load_object(key, text, len, &o, ret_error)) < 0 ||
            (r = string_field(key, o, "member", name_is_valid, &member, ret_error)) < 0 ||
            (r = string_field(key, o, "step", step_is_valid, &step, ret_error)) < 0)
                return r;
        json_t *list = json_object_get(o, "members");
        if (!json_is_array(list) || json_array_size(list) == 0 ||
            json_array_size(list) > RESTORE_MEMBERS_MAX)
                return error_setf(ret_error, PK_EMALFORMED,
                                  "%s: field 'members' is not a list of 1 to %u names", key,
                                  RESTORE_MEMBERS_MAX);
        json_array_foreach(list, i, m) {
                const char *name = json_string_value(m);
                if (!name || !name_is_valid(name))
                        return error_setf(ret_error, PK_EMALFORMED,
                                          "%s: field 'members'[%zu] is not a member name", key, i);
                if (extend_unique(&p->members, name) < 0)
                        return -ENOMEM;
        }
        if (extend_unique(&p->members, member) < 0 || extend_unique(&p->reported, member) < 0 ||
            (restore_step_from_string(step) == RESTORE_STEP_DONE && extend_unique(&p->done, member) < 0))
                return -ENOMEM;
        return 0;
}

int restore_progress_get(Store *s, const char *cluster, const char *id, RestoreProgress *ret,
                         char **ret_error) {
        _cleanup_(restore_progress_done) RestoreProgress p = {};
        _cleanup_free_ char *prefix = strprintf("restores/%s/%s/", cluster, id);
        _cleanup_strv_free_ char **keys = NULL;
        if (!prefix)
                return -ENOMEM;
        int r = store_list(s, prefix, &keys, ret_error);
        if (r < 0)
                return r;
        STRV_FOREACH (k, keys) {
                if (!endswith(*k, ".json"))
                        continue;
                r = read_report(s, *k, &p, ret_error);
                if (r < 0)
                        return r;
        }
        strv_sort(p.members);
        strv_sort(p.done);
        strv_sort(p.reported);
        p.finished = strv_length(p.members) > 0 && strv_length(p.done) == strv_length(p.members);
        *ret = p;
        p = (RestoreProgress){};
        return 0;
}

/* The request (or the unfinished state) this member serves; NULL: none. *ret_step: how far it got. */
static const char *served(const RestoreFacts *f, RestoreStep *ret_step) {
        const RestoreState *st = f->state;
        const char *id = NULL;
        if (f->request && (!f->request_finished || (st && streq(st->id, f->request->id))))
                id = f->request->id;
        else if (st && st->step != RESTORE_STEP_DONE && st->step != RESTORE_STEP_NONE)
                id = st->id; /* begun: its data may be aside already, so it is finished whatever happened */
        *ret_step = id && st && streq(st->id, id) ? st->step : RESTORE_STEP_NONE;
        return id;
}

void restore_decide(const RestoreFacts *f, RestoreDecision *ret) {
        RestoreDecision d = { .action = RESTORE_NOTHING };
        RestoreStep step;
        d.id = served(f, &step);
        d.step = d.next = step;
        if (!d.id || step == RESTORE_STEP_DONE) {
                d.reason = d.id ? "restored" : "no restore requested";
                *ret = d;
                return;
        }
        d.in_progress = step >= RESTORE_STEP_DOWNLOADED;
        /* the snapshot is needed until the init container has restored it */
        if (!f->snapshot_present && (step < RESTORE_STEP_MOVED || !f->data_present)) {
                d.action = RESTORE_DOWNLOAD;
                d.next = MAX(step, RESTORE_STEP_DOWNLOADED);
                d.reason = "download the snapshot to the volume";
        } else if (step <= RESTORE_STEP_DOWNLOADED) {
                d.action = RESTORE_STOP;
                d.next = RESTORE_STEP_STOPPING;
                d.in_progress = true;
                d.reason = "stop etcd: its manifest goes away";
        } else if (step == RESTORE_STEP_STOPPING && f->etcd_running) {
                d.action = RESTORE_WAIT_STOPPED;
                d.reason = "etcd still has files open on the volume";
        } else if (step == RESTORE_STEP_STOPPING && f->data_present && f->aside_present) {
                d.action = RESTORE_CONFLICT;
                d.reason = "the volume holds both the data dir and the one moved aside for this restore";
        } else if (step == RESTORE_STEP_STOPPING) {
                d.action = RESTORE_MOVE_ASIDE;
                d.next = RESTORE_STEP_MOVED;
                d.reason = "move the data aside";
        } else if (step == RESTORE_STEP_MOVED) {
                d.action = RESTORE_WRITE_MANIFEST;
                d.next = RESTORE_STEP_RESTORING;
                d.restore_manifest = true;
                d.reason = "restore the snapshot in an init container";
        } else if (f->member_healthy && f->data_present) {
                d.action = RESTORE_REPORT_DONE;
                d.next = RESTORE_STEP_DONE;
                d.reason = "the member answers healthy with the restored data";
        } else {
                d.action = RESTORE_WAIT_HEALTHY;
                d.restore_manifest = true;
                d.reason = "waiting for the restored member to answer healthy";
        }
        *ret = d;
}
