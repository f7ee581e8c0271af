/* SPDX-License-Identifier: Apache-2.0 */
#include "aws/route53.h"

#include <string.h>
#include <time.h>

#include "aws/sigv4.h"
#include "basic/buf.h"
#include "basic/dns-name.h"
#include "basic/errors.h"
#include "basic/parse-util.h"
#include "basic/stop.h"
#include "basic/string-util.h"
#include "basic/strv.h"

#define R53_PREFIX    "/" AWS_ROUTE53_API_VERSION
#define R53_VALUE_MAX 4096 /* a TXT value is at most 4,000 characters */
#define R53_ITEMS_MAX (1U << 20)

static const char *const record_actions[_AWS_RECORD_ACTION_MAX] = {
        [AWS_RECORD_UPSERT] = "UPSERT",
        [AWS_RECORD_DELETE] = "DELETE",
        [AWS_RECORD_CREATE] = "CREATE",
};

const char *aws_record_action_to_string(AwsRecordAction a) {
        return a >= 0 && a < _AWS_RECORD_ACTION_MAX ? record_actions[a] : NULL;
}

static int r53_call(AwsClient *c, const char *operation, const char *method, const char *path,
                    const char *query, const char *body, XmlNode **ret, char **ret_error) {
        AwsCall call = {
                .service = AWS_SERVICE_ROUTE53,
                .operation = operation,
                .method = method,
                .path = path,
                .query = query,
                .content_type = body ? "application/xml" : NULL,
                .body = body,
                .body_len = body ? strlen(body) : 0,
        };
        XmlNode *doc = NULL;
        int r = aws_client_call(c, &call, &doc, ret_error);
        if (r < 0)
                return r;
        if (!doc)
                return error_setf(ret_error, PK_EMALFORMED, "route53 %s: empty response", operation);
        *ret = doc;
        return 0;
}

static int dup_text(const XmlNode *n, const char *path, char **ret) {
        return xml_path_text_dup(n, path, R53_VALUE_MAX, ret);
}

/* Route 53 ids come as "/hostedzone/Z..." or "/change/C..."; we keep the bare id and check it is one. */
static int dup_id(const XmlNode *n, const char *path, const char *prefix, char **ret) {
        const char *t = xml_path_text(n, path), *id;
        if (!t)
                return PK_EMALFORMED;
        id = startswith(t, prefix) ?: t;
        if (isempty(id) || strlen(id) > 64 || strpbrk(id, "/?&%# ") || string_has_cc(id))
                return PK_EMALFORMED;
        *ret = strdup(id);
        return *ret ? 0 : -ENOMEM;
}

static bool id_ok(const char *id) {
        return !isempty(id) && strlen(id) <= 64 && !strpbrk(id, "/?&%# ") && !string_has_cc(id);
}

void aws_hosted_zones_free(AwsHostedZone *z, size_t n) {
        for (size_t i = 0; z && i < n; i++) {
                free(z[i].id);
                free(z[i].name);
        }
        free(z);
}

int aws_route53_find_zones(AwsClient *c, const char *name, AwsHostedZone **ret, size_t *ret_n,
                           char **ret_error) {
        _cleanup_(xml_node_freep) XmlNode *doc = NULL;
        _cleanup_free_ char *query = NULL;
        AwsHostedZone *z = NULL;
        size_t n = 0;
        int r;

        if (isempty(name) || strlen(name) > 255 || string_has_cc(name))
                return error_setf(ret_error, -EINVAL, "route53: invalid zone name");
        /* Zones come sorted by name from dnsname on; the ones named exactly so come first. 100 is the page
         * maximum and more zones of one name do not exist in practice. */
        r = strextend_printf(&query, "dnsname=");
        if (r >= 0)
                r = uri_encode_append(&query, name, strlen(name), false);
        if (r >= 0)
                r = strextend_printf(&query, "&maxitems=100");
        if (r >= 0)
                r = r53_call(c, "ListHostedZonesByName", "GET", R53_PREFIX "/hostedzonesbyname", query, NULL,
                             &doc, ret_error);
        if (r < 0)
                return r;
        XmlNode *set = xml_child(doc, "HostedZones");
        if (!set)
                return error_setf(ret_error, PK_EMALFORMED,
                                  "route53 ListHostedZonesByName: no HostedZones in the response");
        size_t max = 0;
        XML_FOREACH_NAMED(h, set, "HostedZone")
        max++;
        z = new0(AwsHostedZone, max);
        if (!z)
                return -ENOMEM;
        XML_FOREACH_NAMED(h, set, "HostedZone") {
                const char *zname = xml_path_text(h, "Name"), *priv = xml_path_text(h, "Config/PrivateZone");
                if (!zname || !dns_name_equal(zname, name))
                        continue;
                AwsHostedZone *e = &z[n++];
                r = dup_id(h, "Id", "/hostedzone/", &e->id);
                if (r >= 0)
                        r = dup_text(h, "Name", &e->name);
                e->private_zone = priv && streq(priv, "true");
                if (r < 0) {
                        aws_hosted_zones_free(z, n);
                        return error_setf(ret_error, r, "route53 ListHostedZonesByName: malformed zone");
                }
        }
        *ret = z;
        *ret_n = n;
        return 0;
}

void aws_record_sets_free(AwsRecordSet *s, size_t n) {
        for (size_t i = 0; s && i < n; i++) {
                free(s[i].name);
                free(s[i].type);
                free(s[i].set_identifier);
                strv_free(s[i].values);
        }
        free(s);
}

static int parse_record_set(const XmlNode *x, AwsRecordSet *s) {
        const char *ttl = xml_path_text(x, "TTL");
        XmlNode *records = xml_child(x, "ResourceRecords");
        size_t n = 0, k = 0;
        int r = dup_text(x, "Name", &s->name);
        if (r >= 0)
                r = dup_text(x, "Type", &s->type);
        if (r >= 0)
                r = dup_text(x, "SetIdentifier", &s->set_identifier);
        if (r >= 0 && (!s->name || !s->type))
                r = PK_EMALFORMED;
        if (r >= 0 && ttl && safe_atou(ttl, &(unsigned){ 0 }) < 0)
                r = PK_EMALFORMED;
        if (r < 0)
                return r;
        if (ttl) {
                unsigned t;
                (void)safe_atou(ttl, &t);
                s->ttl = t;
        }
        s->alias = xml_child(x, "AliasTarget") != NULL;
        XML_FOREACH_NAMED(v, records, "ResourceRecord")
        n++;
        s->values = new0(char *, n + 1);
        if (!s->values)
                return -ENOMEM;
        XML_FOREACH_NAMED(v, records, "ResourceRecord") {
                r = dup_text(v, "Value", &s->values[k]);
                if (r < 0)
                        return r;
                if (!s->values[k])
                        return PK_EMALFORMED;
                k++;
        }
        return 0;
}

typedef struct RecordCursor {
        char *name, *type, *identifier;
} RecordCursor;

static void record_cursor_done(RecordCursor *k) {
        free(k->name);
        free(k->type);
        free(k->identifier);
        *k = (RecordCursor){};
}

static int record_query(const RecordCursor *k, char **ret) {
        char *q = NULL;
        int r = strextend_printf(&q, "maxitems=300");
        const char *keys[] = { "name", "type", "identifier" }, *vals[] = { k->name, k->type, k->identifier };
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(keys); i++) {
                if (!vals[i])
                        continue;
                r = strextend_printf(&q, "&%s=", keys[i]);
                if (r >= 0)
                        r = uri_encode_append(&q, vals[i], strlen(vals[i]), false);
        }
        if (r < 0) {
                free(q);
                return r;
        }
        *ret = q;
        return 0;
}

static int append_record_sets(const XmlNode *doc, AwsRecordSet **all, size_t *n_all) {
        XmlNode *set = xml_child(doc, "ResourceRecordSets");
        size_t n = 0;
        if (!set)
                return PK_EMALFORMED;
        XML_FOREACH_NAMED(x, set, "ResourceRecordSet")
        n++;
        if (n > R53_ITEMS_MAX || *n_all > R53_ITEMS_MAX - n)
                return PK_ETOOBIG;
        AwsRecordSet *a = realloc(*all, (*n_all + n) * sizeof(AwsRecordSet) ?: 1);
        if (!a)
                return -ENOMEM;
        *all = a;
        XML_FOREACH_NAMED(x, set, "ResourceRecordSet") {
                AwsRecordSet *s = &a[(*n_all)++];
                *s = (AwsRecordSet){};
                int r = parse_record_set(x, s);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int list_page(AwsClient *c, const char *path, RecordCursor *cur, AwsRecordSet **all, size_t *n_all,
                     bool *ret_more, char **ret_error) {
        _cleanup_(xml_node_freep) XmlNode *doc = NULL;
        _cleanup_free_ char *query = NULL;
        int r = record_query(cur, &query);
        if (r >= 0)
                r = r53_call(c, "ListResourceRecordSets", "GET", path, query, NULL, &doc, ret_error);
        if (r < 0)
                return r;
        r = append_record_sets(doc, all, n_all);
        if (r < 0)
                return error_setf(ret_error, r, "route53 ListResourceRecordSets: malformed response: %s",
                                  pk_strerror(r));
        const char *trunc = xml_path_text(doc, "IsTruncated");
        *ret_more = trunc && streq(trunc, "true");
        if (!*ret_more)
                return 0;
        RecordCursor next = {};
        r = dup_text(doc, "NextRecordName", &next.name);
        if (r >= 0)
                r = dup_text(doc, "NextRecordType", &next.type);
        if (r >= 0)
                r = dup_text(doc, "NextRecordIdentifier", &next.identifier);
        if (r >= 0 && !next.name)
                r = PK_EMALFORMED;
        /* The same cursor twice would loop forever. */
        if (r >= 0 && cur->name && streq(cur->name, next.name) &&
            streq(strempty(cur->type), strempty(next.type)) &&
            streq(strempty(cur->identifier), strempty(next.identifier)))
                r = PK_EMALFORMED;
        if (r < 0) {
                record_cursor_done(&next);
                return error_setf(ret_error, r, "route53 ListResourceRecordSets: bad pagination cursor");
        }
        record_cursor_done(cur);
        *cur = next;
        return 0;
}

int aws_route53_list_record_sets(AwsClient *c, const char *zone_id, const char *start_name,
                                 AwsRecordSet **ret, size_t *ret_n, char **ret_error) {
        _cleanup_free_ char *path = NULL;
        RecordCursor cur = {};
        AwsRecordSet *all = NULL;
        size_t n = 0;
        bool more = true;
        int r = 0;

        if (!id_ok(zone_id))
                return error_setf(ret_error, -EINVAL, "route53: invalid hosted zone id");
        path = strjoin(R53_PREFIX "/hostedzone/", zone_id, "/rrset");
        if (!path || (start_name && !(cur.name = strdup(start_name))))
                r = -ENOMEM;
        for (unsigned page = 0; r >= 0 && more; page++) {
                if (page >= AWS_ROUTE53_PAGES_MAX) {
                        r = error_setf(ret_error, PK_ETOOBIG,
                                       "route53 ListResourceRecordSets: more than %u pages",
                                       AWS_ROUTE53_PAGES_MAX);
                        break;
                }
                r = list_page(c, path, &cur, &all, &n, &more, ret_error);
        }
        record_cursor_done(&cur);
        if (r < 0) {
                aws_record_sets_free(all, n);
                return r;
        }
        *ret = all;
        *ret_n = n;
        return 0;
}

static int change_xml_append(char **body, const AwsRecordChange *ch) {
        const char *action = aws_record_action_to_string(ch->action);
        int r;
        if (!action || isempty(ch->name) || isempty(ch->type) || !ch->values || !ch->values[0])
                return -EINVAL;
        r = strextend_printf(body, "<Change><Action>%s</Action><ResourceRecordSet><Name>", action);
        if (r >= 0)
                r = xml_escape_append(body, ch->name);
        if (r >= 0)
                r = strextend_printf(body, "</Name><Type>");
        if (r >= 0)
                r = xml_escape_append(body, ch->type);
        if (r >= 0)
                r = strextend_printf(body, "</Type><TTL>%u</TTL><ResourceRecords>", ch->ttl);
        for (size_t i = 0; r >= 0 && ch->values[i]; i++) {
                r = strextend_printf(body, "<ResourceRecord><Value>");
                if (r >= 0)
                        r = xml_escape_append(body, ch->values[i]);
                if (r >= 0)
                        r = strextend_printf(body, "</Value></ResourceRecord>");
        }
        if (r >= 0)
                r = strextend_printf(body, "</ResourceRecords></ResourceRecordSet></Change>");
        return r;
}

int aws_route53_change(AwsClient *c, const char *zone_id, const AwsRecordChange *changes, size_t n_changes,
                       char **ret_change_id, char **ret_error) {
        _cleanup_(xml_node_freep) XmlNode *doc = NULL;
        _cleanup_free_ char *path = NULL, *body = NULL, *id = NULL;
        size_t n_records = 0;
        int r;

        if (!id_ok(zone_id) || n_changes == 0)
                return error_setf(ret_error, -EINVAL, "route53: invalid hosted zone id or no changes");
        for (size_t i = 0; i < n_changes; i++)
                n_records += changes[i].values ? strv_length((char **)changes[i].values) : 0;
        if (n_records > AWS_ROUTE53_CHANGE_RECORDS_MAX)
                return error_setf(ret_error, -E2BIG, "route53: %zu records in one change, at most %u",
                                  n_records, AWS_ROUTE53_CHANGE_RECORDS_MAX);
        path = strjoin(R53_PREFIX "/hostedzone/", zone_id, "/rrset/");
        r = path ? strextend_printf(&body,
                                    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
                                    "<ChangeResourceRecordSetsRequest xmlns=\"https://route53.amazonaws.com/"
                                    "doc/2013-04-01/\"><ChangeBatch><Changes>")
                 : -ENOMEM;
        for (size_t i = 0; r >= 0 && i < n_changes; i++)
                r = change_xml_append(&body, &changes[i]);
        if (r >= 0)
                r = strextend_printf(&body, "</Changes></ChangeBatch></ChangeResourceRecordSetsRequest>");
        if (r >= 0)
                r = r53_call(c, "ChangeResourceRecordSets", "POST", path, NULL, body, &doc, ret_error);
        if (r < 0)
                return r;
        r = dup_id(doc, "ChangeInfo/Id", "/change/", &id);
        if (r < 0)
                return error_setf(ret_error, r,
                                  "route53 ChangeResourceRecordSets: no change id in the response");
        if (ret_change_id)
                *ret_change_id = TAKE_PTR(id);
        return 0;
}

int aws_route53_get_change(AwsClient *c, const char *change_id, bool *ret_insync, char **ret_error) {
        static const AwsErrorCode codes[] = { { "NoSuchChange", NULL, -ENOENT }, {} };
        _cleanup_(xml_node_freep) XmlNode *doc = NULL;
        _cleanup_free_ char *path = NULL;

        if (!id_ok(change_id))
                return error_setf(ret_error, -EINVAL, "route53: invalid change id");
        path = strjoin(R53_PREFIX "/change/", change_id);
        if (!path)
                return -ENOMEM;
        AwsCall call = {
                .service = AWS_SERVICE_ROUTE53,
                .operation = "GetChange",
                .method = "GET",
                .path = path,
                .error_codes = codes,
        };
        int r = aws_client_call(c, &call, &doc, ret_error);
        if (r < 0)
                return r;
        const char *st = doc ? xml_path_text(doc, "ChangeInfo/Status") : NULL;
        if (!st)
                return error_setf(ret_error, PK_EMALFORMED, "route53 GetChange: no status in the response");
        /* the API knows two states; anything else is not INSYNC either */
        *ret_insync = streq(st, "INSYNC");
        return 0;
}

int aws_route53_wait_insync(AwsClient *c, const char *change_id, usec_t timeout, usec_t interval,
                            char **ret_error) {
        usec_t deadline = now(CLOCK_MONOTONIC) + timeout;

        for (unsigned polls = 1;; polls++) {
                bool insync = false;
                int r = aws_route53_get_change(c, change_id, &insync, ret_error);
                if (r < 0)
                        return r;
                if (insync)
                        return 0;
                if (now(CLOCK_MONOTONIC) + interval > deadline)
                        return error_setf(ret_error, PK_ETIMEOUT,
                                          "route53 change '%s' still PENDING after %u polls", change_id,
                                          polls);
                r = sleep_usec(interval);
                if (r < 0)
                        return error_setf(ret_error, r, "waiting for route53 change '%s': stop requested",
                                          change_id);
        }
}

int aws_route53_parse_record_sets(const void *data, size_t len, AwsRecordSet **ret, size_t *ret_n) {
        _cleanup_(xml_node_freep) XmlNode *doc = NULL;
        AwsRecordSet *all = NULL;
        size_t n = 0;
        int r = xml_parse(data, len, &doc);
        if (r >= 0)
                r = append_record_sets(doc, &all, &n);
        if (r < 0) {
                aws_record_sets_free(all, n);
                return r;
        }
        *ret = all;
        *ret_n = n;
        return 0;
}
