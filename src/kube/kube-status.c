/* SPDX-License-Identifier: Apache-2.0 */
#include "kube/kube-status.h"

#include <errno.h>
#include <jansson.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "kube/kube-client.h"
#include "shared/json-secret.h"
#include "shared/json-util.h"

#define STATUS_TEXT_MAX   512U /* a message or a cause, as quoted */
#define STATUS_CAUSES_MAX 8U

int kube_status_to_errno(long http_status, const char *reason) {
        if (http_status >= 200 && http_status < 300)
                return 0;
        switch (http_status) {
        case 400:
        case 422:
                return -EINVAL;
        case 401: /* the credentials were refused (an unknown or expired token, an untrusted certificate) */
                return -EKEYREJECTED;
        case 403: /* authenticated, not allowed */
                return -EACCES;
        case 404:
                return -ENOENT;
        case 409:
                return streq(strempty(reason), "AlreadyExists") ? -EEXIST : PK_ECONFLICT;
        case 410:
                return -ESTALE;
        case 429:
                return -EBUSY;
        default:
                return http_status >= 500 && http_status < 600 ? -EIO : -EPROTO;
        }
}

char *kube_object_ref_to_string(const KubeObjectRef *ref) {
        if (!ref || !ref->kind)
                return strdup(ref && ref->what ? ref->what : "request");
        if (!isempty(ref->ns))
                return strprintf("%s %s/%s", ref->kind, ref->ns, strempty(ref->name));
        return strprintf("%s %s", ref->kind, strempty(ref->name));
}

/* A server's string as one bounded line: control characters become '?', the tail becomes "...". */
static int append_clean(char **s, const char *text) {
        _cleanup_free_ char *c = string_one_line(text, STATUS_TEXT_MAX);
        if (!c)
                return -ENOMEM;
        return strextend_printf(s, "%s", c);
}

static int append_causes(char **s, const json_t *causes, bool secret) {
        size_t n = json_array_size(causes);
        int r = 0;
        if (n == 0)
                return 0;
        r = strextend_printf(s, " (causes: ");
        for (size_t i = 0; r >= 0 && i < MIN(n, (size_t)STATUS_CAUSES_MAX); i++) {
                const json_t *c = json_array_get(causes, i);
                const char *field = json_get_string(c, "field"), *msg = json_get_string(c, "message");
                if (i > 0)
                        r = strextend_printf(s, "; ");
                if (r >= 0 && field)
                        r = append_clean(s, field);
                if (r >= 0 && !secret && msg)
                        r = strextend_printf(s, "%s", field ? ": " : "");
                if (r >= 0 && !secret && msg)
                        r = append_clean(s, msg);
                if (r >= 0 && !field && (secret || !msg))
                        r = append_clean(s, json_get_string(c, "reason") ?: "?");
        }
        if (r >= 0 && n > STATUS_CAUSES_MAX)
                r = strextend_printf(s, "; and %zu more", n - STATUS_CAUSES_MAX);
        return r < 0 ? r : strextend_printf(s, ")");
}

/* The Status in body, or NULL when it is none (not JSON, not an object of kind Status, too big). */
static json_t *status_parse(const char *body, size_t len, bool secret) {
        if (!body || len == 0 || len > KUBE_STATUS_MAX)
                return NULL;
        /* a Secret's answer that is no Status is the Secret: parsed without leaving copies */
        json_t *j = secret ? json_loadb_secret(body, len, JSON_REJECT_DUPLICATES, NULL)
                           : json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL);
        if (!json_is_object(j) || !streq(strempty(json_get_string(j, "kind")), "Status")) {
                if (secret)
                        json_erase_values(j);
                json_decref(j);
                return NULL;
        }
        return j;
}

static int status_format(long http_status, const json_t *st, size_t len, const KubeObjectRef *ref,
                         bool secret, char **ret) {
        _cleanup_free_ char *who = kube_object_ref_to_string(ref), *s = NULL;
        const char *reason = json_get_string(st, "reason"), *msg = json_get_string(st, "message");
        if (!who)
                return -ENOMEM;
        s = strprintf("%s: %ld ", who, http_status);
        int r = s ? 0 : -ENOMEM;
        if (r >= 0)
                r = append_clean(&s, reason ?: (st ? "(no reason)" : "(not a Status)"));
        if (r >= 0 && st && secret)
                r = strextend_printf(&s, ": (message withheld: it may quote a Secret's value)");
        else if (r >= 0 && st && msg)
                r = strextend_printf(&s, ": ");
        if (r >= 0 && st && !secret && msg)
                r = append_clean(&s, msg);
        if (r >= 0 && st)
                r = append_causes(&s, json_object_get(json_object_get(st, "details"), "causes"), secret);
        if (r >= 0 && !st)
                r = strextend_printf(&s, ", %zu bytes of body", len);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(s);
        return 0;
}

int kube_status_error(long http_status, const char *body, size_t len, const KubeObjectRef *ref, bool secret,
                      char **ret_error) {
        json_t *st = status_parse(body, len, secret);
        /* A Status' own code wins only when it agrees in class: the HTTP status is what happened. */
        int r = kube_status_to_errno(http_status, json_get_string(st, "reason"));
        if (r == 0)
                r = -EPROTO; /* a 2xx is no failure: the caller should not have asked */
        if (ret_error) {
                char *m = NULL;
                if (status_format(http_status, st, len, ref, secret, &m) >= 0) {
                        free(*ret_error);
                        *ret_error = m;
                }
        }
        if (secret)
                json_erase_values(st); /* its message may quote the value */
        json_decref(st);
        return r;
}
