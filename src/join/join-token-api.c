/* SPDX-License-Identifier: Apache-2.0 */
/* Bootstrap tokens through the API: create, list, delete, clean up the expired. */
#include <errno.h>
#include <stdlib.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "join/join-token.h"
#include "shared/json-secret.h"
#include "shared/json-util.h"

#define CREATE_TRIES 3U

int join_token_create(KubeClient *c, const JoinTokenSpec *spec, usec_t deadline, JoinToken *ret,
                      char **ret_error) {
        for (unsigned tries = 0; tries < CREATE_TRIES; tries++) {
                _cleanup_free_ char *err = NULL;
                JoinToken t;
                json_t *secret = NULL;
                int r = join_token_generate(&t);
                if (r < 0)
                        return error_setf(ret_error, r, "no random bytes for a token");
                r = join_token_secret_new(&t, spec, &secret, ret_error);
                if (r >= 0) {
                        r = kube_create(c, secret, deadline, NULL, &err);
                        json_erase_values(secret);
                        json_decref(secret);
                }
                if (r == -EEXIST) { /* the id is taken: another one, never a replaced token */
                        join_token_erase(&t);
                        continue;
                }
                if (r < 0) {
                        join_token_erase(&t);
                        return err ? error_setf(ret_error, r, "%s", err) : r;
                }
                *ret = t;
                join_token_erase(&t);
                return 0;
        }
        return error_setf(ret_error, -EEXIST, "%u new token ids were all taken in %s", CREATE_TRIES,
                          JOIN_TOKEN_NAMESPACE);
}

void join_token_infos_free(JoinTokenInfo *l, size_t n) {
        for (size_t i = 0; l && i < n; i++)
                join_token_info_done(&l[i]);
        free(l);
}

/* A Secret that does not check: its name, the id its name gives, and why. */
static int invalid_info(const json_t *secret, char **why, JoinTokenInfo *ret) {
        const char *name = json_get_string(secret, "metadata", "name");
        const char *id = name ? startswith(name, JOIN_TOKEN_SECRET_PREFIX) : NULL;
        *ret = (JoinTokenInfo){ .name = strdup(strnull(name)), .invalid = TAKE_PTR(*why) };
        if (id && join_token_id_valid(id))
                memcpy(ret->id, id, sizeof(ret->id));
        return ret->name && ret->invalid ? 0 : -ENOMEM;
}

static int infos_from_list(const json_t *items, JoinTokenInfo **ret, size_t *ret_n) {
        size_t n = json_array_size(items), i;
        const json_t *item;
        JoinTokenInfo *l = new0(JoinTokenInfo, n);
        if (!l)
                return -ENOMEM;
        json_array_foreach(items, i, item) {
                _cleanup_free_ char *why = NULL;
                int r = join_token_secret_parse(item, &l[i], NULL, &why);
                if (r == -ENOMEM || (r < 0 && !why) || (r < 0 && invalid_info(item, &why, &l[i]) < 0)) {
                        join_token_infos_free(l, n);
                        return -ENOMEM;
                }
        }
        *ret = l;
        *ret_n = n;
        return 0;
}

int join_token_list(KubeClient *c, usec_t deadline, JoinTokenInfo **ret, size_t *ret_n, char **ret_error) {
        json_t *list = NULL;
        KubeListOptions o = { .field_selector = "type=" JOIN_TOKEN_SECRET_TYPE };
        int r = kube_list_with(c, "v1", "Secret", JOIN_TOKEN_NAMESPACE, &o, deadline, &list, ret_error);
        if (r < 0)
                return r;
        r = infos_from_list(json_get(list, "items"), ret, ret_n);
        json_erase_values(list); /* every token's secret */
        json_decref(list);
        return r;
}

int join_token_delete(KubeClient *c, const char *id, usec_t deadline, char **ret_error) {
        if (!join_token_id_valid(id))
                return error_setf(ret_error, -EINVAL, "invalid token id '%s': want 6 characters of [a-z0-9]",
                                  strnull(id));
        _cleanup_free_ char *name = strjoin(JOIN_TOKEN_SECRET_PREFIX, id);
        if (!name)
                return -ENOMEM;
        return kube_delete(c, "v1", "Secret", JOIN_TOKEN_NAMESPACE, name, NULL, deadline, ret_error);
}

int join_token_cleanup_expired(KubeClient *c, usec_t now, usec_t deadline, char ***ret_deleted,
                               char **ret_error) {
        _cleanup_strv_free_ char **deleted = new0(char *, 1);
        JoinTokenInfo *l = NULL;
        size_t n = 0;
        if (!deleted)
                return -ENOMEM;
        int r = join_token_list(c, deadline, &l, &n, ret_error);
        if (r < 0)
                return r;
        for (size_t i = 0; r >= 0 && i < n; i++) {
                if (l[i].invalid || !join_token_expired(&l[i], now))
                        continue;
                _cleanup_free_ char *err = NULL;
                KubePreconditions pre = { .uid = l[i].uid };
                r = kube_delete(c, "v1", "Secret", JOIN_TOKEN_NAMESPACE, l[i].name, &pre, deadline, &err);
                if (r >= 0 || r == -ENOENT) /* gone meanwhile: another master cleaned it */
                        r = strv_extend(&deleted, l[i].id);
                else if (r == PK_ECONFLICT) /* made again under that name: not the expired one */
                        r = 0;
                else
                        r = error_setf(ret_error, r, "%s", strnull(err));
        }
        join_token_infos_free(l, n);
        if (r < 0)
                return r;
        if (ret_deleted)
                *ret_deleted = TAKE_PTR(deleted);
        return 0;
}
