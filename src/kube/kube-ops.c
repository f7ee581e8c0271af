/* SPDX-License-Identifier: Apache-2.0 */
/* What the client does with objects: get, list, delete, apply, probe, poll. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/stop.h"
#include "basic/string-util.h"
#include "kube/kube-internal.h"
#include "kube/kube-resource.h"
#include "shared/json-secret.h"
#include "shared/json-util.h"

#define APPLY_CONTENT_TYPE "application/apply-patch+yaml"
#define PROBE_TEXT_MAX     (64U * 1024U)

static bool is_secret(const KubeResource *res) {
        return streq(res->api_version, "v1") && streq(res->kind, "Secret");
}

/* The resource and the object's path; ns_default fills in an absent namespace of a namespaced kind. */
static int object_path(const char *api_version, const char *kind, const char *ns, const char *name,
                       const KubeResource **ret_res, char **ret_path, char **ret_error) {
        int r = kube_resource_find(api_version, kind, ret_res, ret_error);
        if (r < 0)
                return r;
        return kube_resource_path(*ret_res, (*ret_res)->namespaced ? ns : NULL, name, ret_path, ret_error);
}

static int get_json(KubeClient *c, const char *path, const KubeObjectRef *ref, bool secret, usec_t deadline,
                    json_t **ret, char **ret_error) {
        HttpResponse resp = {};
        KubeCall k = { .method = "GET", .path = path, .ref = ref, .secret = secret, .deadline = deadline };
        int r = kube_call(c, &k, &resp, ret_error);
        if (r < 0)
                return r;
        r = kube_response_json(&resp, ref, ret, ret_error);
        http_response_done(&resp);
        return r;
}

int kube_get(KubeClient *c, const char *api_version, const char *kind, const char *ns, const char *name,
             usec_t deadline, json_t **ret, char **ret_error) {
        _cleanup_free_ char *path = NULL;
        const KubeResource *res;
        KubeObjectRef ref = { .kind = kind, .ns = ns, .name = name };
        int r = object_path(api_version, kind, ns, name ?: "", &res, &path, ret_error);
        if (r < 0)
                return r;
        if (!res->namespaced)
                ref.ns = NULL;
        return get_json(c, path, &ref, is_secret(res), deadline, ret, ret_error);
}

/* The collection's query: limit, the selectors and the continue token, each escaped. */
static int list_query(const KubeListOptions *o, unsigned limit, const char *cont, char **path) {
        const struct {
                const char *key, *value;
        } q[] = {
                { "labelSelector", o->label_selector },
                { "fieldSelector", o->field_selector },
                { "continue", cont },
        };
        if (strextend_printf(path, "?limit=%u", limit) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(q); i++) {
                if (!q[i].value)
                        continue;
                _cleanup_free_ char *e = kube_query_escape(q[i].value);
                if (!e || strextend_printf(path, "&%s=%s", q[i].key, e) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* One page: its object, the items checked to be an array; *ret_continue points into it (NULL: the last). */
static int list_page(KubeClient *c, const char *base, const KubeListOptions *o, unsigned limit,
                     const char *cont, const KubeObjectRef *ref, bool secret, usec_t deadline, json_t **ret,
                     const char **ret_continue, char **ret_error) {
        _cleanup_free_ char *path = strdup(base);
        json_t *page = NULL;
        if (!path || list_query(o, limit, cont, &path) < 0)
                return -ENOMEM;
        int r = get_json(c, path, ref, secret, deadline, &page, ret_error);
        if (r < 0)
                return r;
        const json_t *next = json_object_get(json_object_get(page, "metadata"), "continue");
        if (!json_is_array(json_object_get(page, "items")) || (next && !json_is_string(next))) {
                if (secret)
                        json_erase_values(page);
                json_decref(page);
                return error_setf(ret_error, PK_EMALFORMED, "%s: a page without an items array",
                                  strnull(ref->what));
        }
        *ret = page;
        *ret_continue = isempty(json_string_value(next)) ? NULL : json_string_value(next);
        return 0;
}

static void list_drop(json_t *list, bool secret) {
        if (secret)
                json_erase_values(list);
        json_decref(list);
}

/* Every page, limit objects each, at most max_pages: the first page's object with every page's items. */
static int list_pages(KubeClient *c, const char *base, const KubeListOptions *o, const KubeObjectRef *ref,
                      bool secret, usec_t deadline, json_t **ret, char **ret_error) {
        unsigned limit = o->page_size ?: KUBE_LIST_PAGE_SIZE,
                 max_pages = o->max_pages ?: KUBE_LIST_PAGES_MAX;
        json_t *all = NULL, *page = NULL;
        const char *cont = NULL;
        int r = list_page(c, base, o, limit, NULL, ref, secret, deadline, &all, &cont, ret_error);
        if (r < 0)
                return r;
        for (unsigned n = 1; cont; n++) {
                if (n >= max_pages) {
                        if (page)
                                list_drop(page, secret);
                        list_drop(all, secret);
                        return error_setf(ret_error, PK_ETOOBIG, "%s: more than %u pages of %u objects",
                                          strnull(ref->what), max_pages, limit);
                }
                /* cont points into the previous page: kept until the next one is read */
                json_t *prev = page;
                r = list_page(c, base, o, limit, cont, ref, secret, deadline, &page, &cont, ret_error);
                if (prev)
                        list_drop(prev, secret);
                if (r >= 0 &&
                    json_array_extend(json_object_get(all, "items"), json_object_get(page, "items")) < 0)
                        r = -ENOMEM;
                if (r < 0) {
                        list_drop(all, secret);
                        return r;
                }
        }
        if (page)
                list_drop(page, secret);
        json_t *meta = json_object_get(all, "metadata");
        json_object_del(meta, "continue");
        json_object_del(meta, "remainingItemCount");
        *ret = all;
        return 0;
}

int kube_list_with(KubeClient *c, const char *api_version, const char *kind, const char *ns,
                   const KubeListOptions *o, usec_t deadline, json_t **ret, char **ret_error) {
        _cleanup_free_ char *path = NULL;
        const KubeResource *res;
        int r = kube_resource_find(api_version, kind, &res, ret_error);
        if (r < 0)
                return r;
        /* every namespace: the cluster-wide collection path of a namespaced kind */
        KubeResource all = *res;
        if (isempty(ns))
                all.namespaced = false;
        r = kube_resource_path(&all, isempty(ns) ? NULL : ns, NULL, &path, ret_error);
        if (r < 0)
                return r;
        _cleanup_free_ char *what = strprintf("%s list%s%s", kind, isempty(ns) ? "" : " in ", strempty(ns));
        if (!what)
                return -ENOMEM;
        KubeObjectRef ref = { .what = what };
        /* one deadline for every page; a continue token the server let expire (410) starts the list again,
         * once */
        deadline = deadline ?: now(CLOCK_MONOTONIC) + c->retry.call_timeout;
        r = list_pages(c, path, o ?: &(KubeListOptions){}, &ref, is_secret(res), deadline, ret, ret_error);
        if (r == -ESTALE) {
                free(*ret_error);
                *ret_error = NULL;
                r = list_pages(c, path, o ?: &(KubeListOptions){}, &ref, is_secret(res), deadline, ret,
                               ret_error);
        }
        return r;
}

int kube_list(KubeClient *c, const char *api_version, const char *kind, const char *ns,
              const char *label_selector, usec_t deadline, json_t **ret, char **ret_error) {
        return kube_list_with(c, api_version, kind, ns,
                              &(KubeListOptions){ .label_selector = label_selector }, deadline, ret,
                              ret_error);
}

static int delete_body(const KubePreconditions *pre, char **ret) {
        json_t *o = json_pack("{s:s,s:s,s:s}", "kind", "DeleteOptions", "apiVersion", "v1",
                              "propagationPolicy", "Background");
        if (o && pre && (pre->uid || pre->resource_version)) {
                json_t *p = json_object();
                if (!p || json_object_set_new(o, "preconditions", p) < 0 ||
                    (pre->uid && json_object_set_new(p, "uid", json_string(pre->uid)) < 0) ||
                    (pre->resource_version &&
                     json_object_set_new(p, "resourceVersion", json_string(pre->resource_version)) < 0)) {
                        json_decref(o);
                        return -ENOMEM;
                }
        }
        *ret = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        return *ret ? 0 : -ENOMEM;
}

/* A call that sends body and needs nothing of the answer but its status. */
static int call_with_body(KubeClient *c, const char *method, const char *path, const char *content_type,
                          const char *body, const KubeObjectRef *ref, bool secret, usec_t deadline,
                          char **ret_error) {
        KubeCall k = { .method = method,
                       .path = path,
                       .content_type = content_type,
                       .body = body,
                       .body_len = strlen(body),
                       .ref = ref,
                       .secret = secret,
                       .deadline = deadline };
        HttpResponse resp = {};
        int r = kube_call(c, &k, &resp, ret_error);
        http_response_done(&resp);
        return r;
}

int kube_delete(KubeClient *c, const char *api_version, const char *kind, const char *ns, const char *name,
                const KubePreconditions *pre, usec_t deadline, char **ret_error) {
        _cleanup_free_ char *path = NULL, *body = NULL;
        const KubeResource *res;
        int r = object_path(api_version, kind, ns, name ?: "", &res, &path, ret_error);
        if (r < 0)
                return r;
        if (delete_body(pre, &body) < 0)
                return -ENOMEM;
        KubeObjectRef ref = { .kind = kind, .ns = res->namespaced ? ns : NULL, .name = name };
        return call_with_body(c, "DELETE", path, "application/json", body, &ref, is_secret(res), deadline,
                              ret_error);
}

/* The stored object a write answered with, for the caller (ret may be NULL); a Secret's without its data
 * (erased: the caller has it). */
static int hand_over(json_t *obj, bool secret, json_t **ret) {
        if (secret) {
                json_erase_values(json_object_get(obj, "data"));
                json_erase_values(json_object_get(obj, "stringData"));
                json_object_del(obj, "data");
                json_object_del(obj, "stringData");
        }
        if (ret)
                *ret = obj;
        else
                json_decref(obj);
        return 0;
}

int kube_apply_document(KubeClient *c, const char *text, size_t len, usec_t deadline, json_t **ret,
                        char **ret_error) {
        _cleanup_(kube_doc_identity_done) KubeDocIdentity id = {};
        _cleanup_free_ char *path = NULL;
        const KubeResource *res;
        int r = kube_doc_identity(text, len, &id, ret_error);
        if (r < 0)
                return r;
        if (!id.ns && (kube_resource_find(id.api_version, id.kind, &res, NULL) >= 0 && res->namespaced) &&
            !(id.ns = strdup("default")))
                return -ENOMEM;
        r = object_path(id.api_version, id.kind, id.ns, id.name, &res, &path, ret_error);
        if (r < 0)
                return r;
        if (strextend_printf(&path, "?fieldManager=%s&force=true", KUBE_FIELD_MANAGER) < 0)
                return -ENOMEM;
        KubeObjectRef ref = { .kind = id.kind, .ns = res->namespaced ? id.ns : NULL, .name = id.name };
        KubeCall k = { .method = "PATCH",
                       .path = path,
                       .content_type = APPLY_CONTENT_TYPE,
                       .body = text,
                       .body_len = len,
                       .ref = &ref,
                       .secret = is_secret(res),
                       .deadline = deadline };
        HttpResponse resp = {};
        r = kube_call(c, &k, &resp, ret_error);
        if (r < 0)
                return r;
        json_t *obj = NULL;
        r = kube_response_json(&resp, &ref, &obj, ret_error);
        http_response_done(&resp);
        if (r < 0)
                return r;
        return hand_over(obj, k.secret, ret);
}

int kube_merge_patch(KubeClient *c, const char *api_version, const char *kind, const char *ns,
                     const char *name, const json_t *patch, usec_t deadline, char **ret_error) {
        _cleanup_free_ char *path = NULL, *body = NULL;
        const KubeResource *res;
        if (!json_is_object(patch))
                return error_setf(ret_error, -EINVAL, "merge patch of %s %s: not a JSON object", kind, name);
        int r = object_path(api_version, kind, ns, name, &res, &path, ret_error);
        if (r < 0)
                return r;
        if (is_secret(res)) /* its body would hold key material: Secrets are applied whole (kube_apply) */
                return error_setf(ret_error, -EINVAL, "merge patch of Secret %s: not supported", name);
        if (strextend_printf(&path, "?fieldManager=%s", KUBE_FIELD_MANAGER) < 0 ||
            !(body = json_dumps(patch, JSON_COMPACT)))
                return -ENOMEM;
        KubeObjectRef ref = { .kind = kind, .ns = res->namespaced ? ns : NULL, .name = name };
        return call_with_body(c, "PATCH", path, "application/merge-patch+json", body, &ref, false, deadline,
                              ret_error);
}

int kube_apply(KubeClient *c, const json_t *obj, usec_t deadline, json_t **ret, char **ret_error) {
        /* JSON is YAML: the object goes as its compact JSON text (erased after: it may be a Secret's). */
        size_t len = json_dumpb(obj, NULL, 0, JSON_COMPACT);
        if (len == 0 || !json_is_object(obj))
                return error_setf(ret_error, -EINVAL, "apply: not a JSON object");
        char *text = malloc(len);
        if (!text)
                return -ENOMEM;
        (void)json_dumpb(obj, text, len, JSON_COMPACT);
        int r = kube_apply_document(c, text, len, deadline, ret, ret_error);
        erase_and_free(text, len);
        return r;
}

/* An object's identity: its resource and the path of the object (with_name) or of its collection. */
static int json_object_path(const json_t *obj, bool with_name, const KubeResource **ret_res,
                            KubeObjectRef *ret_ref, char **ret_path, char **ret_error) {
        const char *api_version = json_get_string(obj, "apiVersion"), *kind = json_get_string(obj, "kind"),
                   *name = json_get_string(obj, "metadata", "name"),
                   *ns = json_get_string(obj, "metadata", "namespace");
        if (!json_is_object(obj) || !api_version || !kind || isempty(name))
                return error_setf(ret_error, -EINVAL,
                                  "not an object with apiVersion, kind and metadata.name");
        int r = kube_resource_find(api_version, kind, ret_res, ret_error);
        if (r < 0)
                return r;
        if ((*ret_res)->namespaced && !ns)
                ns = "default";
        /* the name is checked by its kind's rule even where only the collection is in the path */
        _cleanup_free_ char *object = NULL;
        r = kube_resource_path(*ret_res, (*ret_res)->namespaced ? ns : NULL, name, &object, ret_error);
        if (r < 0)
                return r;
        if (!with_name)
                r = kube_resource_path(*ret_res, (*ret_res)->namespaced ? ns : NULL, NULL, ret_path,
                                       ret_error);
        else
                *ret_path = TAKE_PTR(object);
        if (r < 0)
                return r;
        *ret_ref = (KubeObjectRef){ .kind = kind, .ns = (*ret_res)->namespaced ? ns : NULL, .name = name };
        return 0;
}

/* A write of obj's whole JSON text: its body erased after (it may be a Secret's). */
static int write_object(KubeClient *c, const char *method, const char *path, const json_t *obj,
                        const KubeObjectRef *ref, bool secret, usec_t deadline, json_t **ret,
                        char **ret_error) {
        size_t len = json_dumpb(obj, NULL, 0, JSON_COMPACT);
        char *body = len > 0 ? malloc(len) : NULL;
        if (!body)
                return -ENOMEM;
        (void)json_dumpb(obj, body, len, JSON_COMPACT);
        KubeCall k = { .method = method,
                       .path = path,
                       .content_type = "application/json",
                       .body = body,
                       .body_len = len,
                       .ref = ref,
                       .secret = secret,
                       .deadline = deadline };
        HttpResponse resp = {};
        int r = kube_call(c, &k, &resp, ret_error);
        erase_and_free(body, len);
        if (r < 0)
                return r;
        json_t *stored = NULL;
        r = kube_response_json(&resp, ref, &stored, ret_error);
        http_response_done(&resp);
        if (r < 0)
                return r;
        return hand_over(stored, secret, ret);
}

int kube_create(KubeClient *c, const json_t *obj, usec_t deadline, json_t **ret, char **ret_error) {
        _cleanup_free_ char *path = NULL;
        const KubeResource *res;
        KubeObjectRef ref;
        int r = json_object_path(obj, false, &res, &ref, &path, ret_error);
        if (r < 0)
                return r;
        if (strextend_printf(&path, "?fieldManager=%s", KUBE_FIELD_MANAGER) < 0)
                return -ENOMEM;
        return write_object(c, "POST", path, obj, &ref, is_secret(res), deadline, ret, ret_error);
}

static bool subresource_valid(const char *s) {
        if (isempty(s) || strlen(s) > 32)
                return false;
        for (; *s; s++)
                if (*s < 'a' || *s > 'z')
                        return false;
        return true;
}

int kube_replace(KubeClient *c, const json_t *obj, const char *subresource, usec_t deadline, json_t **ret,
                 char **ret_error) {
        _cleanup_free_ char *path = NULL;
        const KubeResource *res;
        KubeObjectRef ref;
        int r = json_object_path(obj, true, &res, &ref, &path, ret_error);
        if (r < 0)
                return r;
        if (subresource && !subresource_valid(subresource))
                return error_setf(ret_error, -EINVAL, "invalid subresource '%s'", subresource);
        /* without it the API replaces whatever is there, undoing a change made since it was read */
        if (isempty(json_get_string(obj, "metadata", "resourceVersion")))
                return error_setf(ret_error, -EINVAL, "replace of %s %s: no metadata.resourceVersion",
                                  ref.kind, ref.name);
        if ((subresource && strextend_printf(&path, "/%s", subresource) < 0) ||
            strextend_printf(&path, "?fieldManager=%s", KUBE_FIELD_MANAGER) < 0)
                return -ENOMEM;
        return write_object(c, "PUT", path, obj, &ref, is_secret(res), deadline, ret, ret_error);
}

/* The failing checks of a probe's verbose answer ("[-]etcd failed: reason withheld"), one line. */
static char *probe_failures(const HttpResponse *resp) {
        _cleanup_free_ char *s = strdup("");
        const char *p = resp->body ?: "";
        for (size_t lines = 0; s && p && *p && lines < 32; lines++) {
                const char *e = strchr(p, '\n');
                size_t l = e ? (size_t)(e - p) : strlen(p);
                if (l > 3 && startswith(p, "[-]") &&
                    strextend_printf(&s, "%s%.*s", *s ? ", " : "", (int)MIN(l, (size_t)200), p) < 0)
                        return NULL;
                p = e ? e + 1 : NULL;
        }
        for (char *i = s; i && *i; i++)
                if ((unsigned char)*i < 0x20)
                        *i = '?';
        return TAKE_PTR(s);
}

int kube_probe(KubeClient *c, const char *endpoint, usec_t deadline, char **ret_error) {
        if (!streq(strempty(endpoint), "readyz") && !streq(strempty(endpoint), "livez"))
                return error_setf(ret_error, -EINVAL, "unknown probe '%s' (readyz, livez)",
                                  strnull(endpoint));
        _cleanup_free_ char *path = strjoin("/", endpoint, "?verbose"), *what = strjoin("/", endpoint);
        if (!path || !what)
                return -ENOMEM;
        KubeObjectRef ref = { .what = what };
        KubeCall k = { .method = "GET",
                       .path = path,
                       .ref = &ref,
                       .no_retry = true,
                       .any_status = true,
                       .deadline = deadline };
        HttpResponse resp = {};
        int r = kube_call(c, &k, &resp, ret_error);
        if (r < 0)
                return r;
        if (resp.status == 200) {
                r = 0;
        } else if (resp.body && resp.body[0] == '{') {
                /* a refusal (401, 403) is a Status that says who may not read what */
                r = kube_status_error(resp.status, resp.body, resp.body_len, &ref, false, ret_error);
        } else {
                /* a failing check is text: its [-] lines say which */
                _cleanup_free_ char *failed = probe_failures(&resp);
                r = kube_status_to_errno(resp.status, NULL);
                r = error_setf(ret_error, r < 0 ? r : -EPROTO, "%s: %ld%s%s", what, resp.status,
                               isempty(failed) ? "" : ": ", strempty(failed));
        }
        http_response_done(&resp);
        return r;
}

int kube_wait_probe(KubeClient *c, const char *endpoint, usec_t interval, usec_t deadline,
                    char **ret_error) {
        _cleanup_free_ char *last = NULL;
        if (deadline == 0 || interval == 0)
                return error_setf(ret_error, -EINVAL, "wait: a deadline and an interval are required");
        for (;;) {
                free(last);
                last = NULL;
                usec_t n = now(CLOCK_MONOTONIC);
                int r = kube_probe(c, endpoint, MAX(deadline, n + MAX(interval, KUBE_LAST_TRY_MIN)), &last);
                if (r >= 0 || r == -EINVAL)
                        return r < 0 ? error_setf(ret_error, r, "%s", strnull(last)) : 0;
                r = deadline_sleep(deadline, interval);
                if (r == PK_ETIMEOUT)
                        return error_setf(ret_error, r, "not ready by the deadline: %s", strnull(last));
                if (r < 0)
                        return error_setf(ret_error, r, "stopped while waiting for /%s", endpoint);
        }
}

int kube_poll(KubeClient *c, const char *api_version, const char *kind, const char *ns, const char *name,
              KubePredicate pred, void *userdata, usec_t interval, usec_t deadline, json_t **ret,
              char **ret_error) {
        _cleanup_free_ char *why = NULL;
        const KubeResource *res;
        int r = kube_resource_find(api_version, kind, &res, ret_error);
        if (r < 0)
                return r;
        if (deadline == 0 || interval == 0)
                return error_setf(ret_error, -EINVAL, "poll: a deadline and an interval are required");
        for (;;) {
                _cleanup_free_ char *err = NULL;
                json_t *obj = NULL;
                usec_t n = now(CLOCK_MONOTONIC);
                r = kube_get(c, api_version, kind, ns, name,
                             MAX(deadline, n + MAX(interval, KUBE_LAST_TRY_MIN)), &obj, &err);
                if (r >= 0 || r == -ENOENT) {
                        char *w = NULL;
                        int p = pred(obj, userdata, &w);
                        if (p != 0 || w) {
                                free(why);
                                why = w;
                        }
                        if (p > 0 && ret) {
                                *ret = obj;
                                return 0;
                        }
                        json_decref(obj);
                        if (p > 0)
                                return 0;
                        if (p < 0)
                                return error_setf(ret_error, p, "%s %s: %s", kind, name, strnull(why));
                } else if (r == -ECANCELED || r == -EINVAL || r == -EACCES || r == -EKEYREJECTED)
                        return error_setf(ret_error, r, "%s", strnull(err));
                else {
                        free(why);
                        why = TAKE_PTR(err);
                }
                r = deadline_sleep(deadline, interval);
                if (r == PK_ETIMEOUT)
                        return error_setf(ret_error, r, "%s %s%s%s: condition not met by the deadline: %s",
                                          kind, strempty(ns), isempty(ns) ? "" : "/", name,
                                          why ?: "(no reason given)");
                if (r < 0)
                        return error_setf(ret_error, r, "%s %s: stopped while polling", kind, name);
        }
}
