/* SPDX-License-Identifier: Apache-2.0 */
/* Bootstrap tokens: generation, text, their Secret both ways (no API calls: join-token-api.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "join/join-internal.h"
#include "join/join-token.h"

#define JOIN_TOKEN_DESCRIPTION_SHOWN 256U /* characters of another tool's description shown */
#include "shared/crypto.h"
#include "shared/json-secret.h"
#include "shared/json-util.h"

#define TOKEN_ALPHABET "abcdefghijklmnopqrstuvwxyz0123456789"
#define ALPHABET_SIZE  36U

void join_token_erase(JoinToken *t) {
        explicit_bzero(t, sizeof(*t));
}

/* n characters uniform over the alphabet: a byte is used only below 252 (7 * 36), so that no character is
 * likelier than another. */
static int random_chars(char *out, size_t n) {
        uint8_t buf[64];
        size_t have = 0, used = 0;
        for (unsigned rounds = 0; have < n; rounds++) {
                if (rounds >= 16) { /* a pool that gives 252 and above sixteen times running is broken */
                        explicit_bzero(buf, sizeof(buf));
                        return -EIO;
                }
                if (getrandom(buf, sizeof(buf), 0) != (ssize_t)sizeof(buf)) {
                        explicit_bzero(buf, sizeof(buf));
                        return -errno ?: -EIO;
                }
                for (used = 0; used < sizeof(buf) && have < n; used++)
                        if (buf[used] < 7 * ALPHABET_SIZE)
                                out[have++] = TOKEN_ALPHABET[buf[used] % ALPHABET_SIZE];
        }
        explicit_bzero(buf, sizeof(buf));
        return 0;
}

int join_token_generate(JoinToken *ret) {
        JoinToken t = {};
        int r = random_chars(t.id, JOIN_TOKEN_ID_LEN);
        if (r >= 0)
                r = random_chars(t.secret, JOIN_TOKEN_SECRET_LEN);
        if (r >= 0)
                *ret = t;
        join_token_erase(&t);
        return r;
}

char *join_token_format(const JoinToken *t, char buf[static JOIN_TOKEN_TEXT_MAX]) {
        memcpy(buf, t->id, JOIN_TOKEN_ID_LEN);
        buf[JOIN_TOKEN_ID_LEN] = '.';
        memcpy(buf + JOIN_TOKEN_ID_LEN + 1, t->secret, JOIN_TOKEN_SECRET_LEN);
        buf[JOIN_TOKEN_TEXT_MAX - 1] = 0;
        return buf;
}

static bool token_chars(const char *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!s[i] || !strchr(TOKEN_ALPHABET, s[i]))
                        return false;
        return s[n] == 0;
}

bool join_token_id_valid(const char *id) {
        return id && strlen(id) == JOIN_TOKEN_ID_LEN && token_chars(id, JOIN_TOKEN_ID_LEN);
}

static bool secret_valid(const char *s, size_t len) {
        if (len != JOIN_TOKEN_SECRET_LEN)
                return false;
        for (size_t i = 0; i < len; i++)
                if (!s[i] || !strchr(TOKEN_ALPHABET, s[i]))
                        return false;
        return true;
}

int join_token_parse(const char *text, JoinToken *ret, char **ret_error) {
        const char *dot = text ? strchr(text, '.') : NULL;
        if (!dot || dot - text != JOIN_TOKEN_ID_LEN)
                return error_setf(ret_error, -EINVAL,
                                  "a bootstrap token is '<id>.<secret>': an id of 6 and a secret of 16 "
                                  "characters of [a-z0-9]");
        JoinToken t = {};
        memcpy(t.id, text, JOIN_TOKEN_ID_LEN);
        if (!join_token_id_valid(t.id)) {
                join_token_erase(&t);
                return error_setf(ret_error, -EINVAL,
                                  "bootstrap token: the id must be 6 characters of [a-z0-9]");
        }
        if (!secret_valid(dot + 1, strlen(dot + 1))) {
                int r = error_setf(
                    ret_error, -EINVAL,
                    "bootstrap token for id '%s': the secret must be 16 characters of [a-z0-9]", t.id);
                join_token_erase(&t);
                return r;
        }
        memcpy(t.secret, dot + 1, JOIN_TOKEN_SECRET_LEN);
        *ret = t;
        join_token_erase(&t);
        return 0;
}

bool join_token_group_valid(const char *g) {
        const char *rest = g ? startswith(g, JOIN_BOOTSTRAP_GROUP ":") : NULL;
        size_t n = rest ? strlen(rest) : 0;
        if (n < 1 || n > 256)
                return false;
        for (size_t i = 0; i < n; i++) {
                bool alnum = (rest[i] >= 'a' && rest[i] <= 'z') || (rest[i] >= '0' && rest[i] <= '9');
                if (!alnum && (i == n - 1 || (rest[i] != ':' && rest[i] != '-')))
                        return false;
        }
        return true;
}

static int check_spec(const JoinTokenSpec *spec, char **ret_error) {
        const char *d = spec->description;
        if (d && (strlen(d) > JOIN_TOKEN_DESCRIPTION_MAX || string_has_cc(d)))
                return error_setf(ret_error, -EINVAL,
                                  "token description: at most %u characters, no control characters",
                                  JOIN_TOKEN_DESCRIPTION_MAX);
        if (strv_length(spec->extra_groups) > JOIN_TOKEN_GROUPS_MAX)
                return error_setf(ret_error, -EINVAL, "token: more than %u extra groups",
                                  JOIN_TOKEN_GROUPS_MAX);
        STRV_FOREACH (g, (char **)spec->extra_groups)
                if (!join_token_group_valid(*g))
                        return error_setf(ret_error, -EINVAL,
                                          "token group '%s': want system:bootstrappers:[a-z0-9:-]*[a-z0-9]",
                                          *g);
        return 0;
}

/* data[key] = base64(value); value may be a secret: the encoding is erased after. */
static int set_data(json_t *data, const char *key, const char *value) {
        char *b64 = NULL;
        int r = crypto_base64_encode(value, strlen(value), &b64);
        if (r < 0)
                return r;
        r = json_object_set_new(data, key, json_string(b64)) < 0 ? -ENOMEM : 0;
        string_free_erase(b64);
        return r;
}

static int fill_data(json_t *data, const JoinToken *t, const JoinTokenSpec *spec) {
        char when[RFC3339_MAX];
        _cleanup_free_ char *groups =
            strv_join(spec->extra_groups ?: (char *const[]){ (char *)JOIN_TOKEN_GROUP, NULL }, ",");
        int r;
        if (!groups)
                return -ENOMEM;
        if ((r = set_data(data, "token-id", t->id)) < 0 ||
            (r = set_data(data, "token-secret", t->secret)) < 0 ||
            (r = set_data(data, "usage-bootstrap-authentication", "true")) < 0 ||
            (r = set_data(data, "auth-extra-groups", groups)) < 0)
                return r;
        if (spec->signing && (r = set_data(data, "usage-bootstrap-signing", "true")) < 0)
                return r;
        if (spec->description && (r = set_data(data, "description", spec->description)) < 0)
                return r;
        if (spec->expiration > 0) {
                if (!format_rfc3339(when, spec->expiration))
                        return -EINVAL;
                r = set_data(data, "expiration", when);
        }
        return r;
}

int join_token_secret_new(const JoinToken *t, const JoinTokenSpec *spec, json_t **ret, char **ret_error) {
        if (!join_token_id_valid(t->id) || !secret_valid(t->secret, strlen(t->secret)))
                return error_setf(ret_error, -EINVAL, "not a bootstrap token");
        int r = check_spec(spec, ret_error);
        if (r < 0)
                return r;
        _cleanup_free_ char *name = strjoin(JOIN_TOKEN_SECRET_PREFIX, t->id);
        json_t *data = json_object();
        json_t *s =
            json_pack("{s:s,s:s,s:{s:s?,s:s,s:{s:s}},s:s,s:o?}", "apiVersion", "v1", "kind", "Secret",
                      "metadata", "name", name, "namespace", JOIN_TOKEN_NAMESPACE, "labels",
                      JOIN_MANAGED_BY_LABEL, "protokube", "type", JOIN_TOKEN_SECRET_TYPE, "data", data);
        if (!name || !s)
                return json_decref(s), -ENOMEM;
        r = fill_data(data, t, spec);
        if (r < 0) {
                json_erase_values(s);
                json_decref(s);
                return r == -EINVAL ? error_setf(ret_error, r, "token expiration out of range") : r;
        }
        *ret = s;
        return 0;
}

void join_token_info_done(JoinTokenInfo *i) {
        free(i->name);
        free(i->uid);
        free(i->description);
        strv_free(i->extra_groups);
        free(i->invalid);
        *i = (JoinTokenInfo){};
}

bool join_token_expired(const JoinTokenInfo *i, usec_t now) {
        return i->expiration > 0 && now >= i->expiration;
}

/* data[key] decoded, NUL-terminated; NULL (and 0) when absent. The caller erases it (a secret's). */
static int get_data(const json_t *secret, const char *key, char **ret) {
        const char *b64 = json_get_string(secret, "data", key);
        uint8_t *raw = NULL;
        size_t len = 0;
        *ret = NULL;
        if (!b64)
                return json_get(secret, "data", key) ? PK_EMALFORMED : 0;
        int r = crypto_base64_decode(b64, strlen(b64), &raw, &len);
        if (r < 0)
                return r;
        char *s = malloc(len + 1);
        if (s) {
                memcpy(s, raw, len);
                s[len] = 0;
        }
        erase_and_free(raw, len);
        if (!s)
                return -ENOMEM;
        if (strlen(s) != len) { /* a NUL inside */
                erase_and_free(s, len);
                return PK_EMALFORMED;
        }
        *ret = s;
        return 0;
}

static int bad(char **ret_error, int r, const char *name, const char *key, const char *why) {
        return error_setf(ret_error, r, "Secret %s/%s: %s%s%s", JOIN_TOKEN_NAMESPACE, name, strempty(key),
                          key ? ": " : "", why);
}

/* token-id and token-secret against the name's id; the secret copied to ret_token (may be NULL). */
static int read_credentials(const json_t *secret, const char *name, const char *id, JoinToken *ret_token,
                            char **ret_error) {
        _cleanup_erase_free_ char *tid = NULL, *tsecret = NULL;
        int r = get_data(secret, "token-id", &tid);
        if (r < 0)
                return bad(ret_error, r, name, "token-id", "not base64 text");
        if (!streq_ptr(tid, id))
                return bad(ret_error, -EINVAL, name, "token-id", "absent or not the id of the name");
        r = get_data(secret, "token-secret", &tsecret);
        if (r < 0)
                return bad(ret_error, r, name, "token-secret", "not base64 text");
        if (!tsecret || !secret_valid(tsecret, strlen(tsecret)))
                return bad(ret_error, -EINVAL, name, "token-secret",
                           "absent or not 16 characters of [a-z0-9]");
        if (ret_token) {
                memcpy(ret_token->id, id, sizeof(ret_token->id));
                memcpy(ret_token->secret, tsecret, sizeof(ret_token->secret));
        }
        return 0;
}

static int read_groups(const char *text, const char *name, char ***ret, char **ret_error) {
        _cleanup_strv_free_ char **raw = NULL, **groups = new0(char *, 1);
        int r;
        if (!groups)
                return -ENOMEM;
        if (text && (r = strv_split(text, ",", &raw)) < 0)
                return r;
        if (strv_length(raw) > JOIN_TOKEN_GROUPS_MAX)
                return bad(ret_error, -EINVAL, name, "auth-extra-groups", "more than 16 groups");
        STRV_FOREACH (g, raw) {
                /* kube-apiserver trims blanks around each */
                char *b = *g + strspn(*g, " \t");
                size_t n = strlen(b);
                while (n > 0 && (b[n - 1] == ' ' || b[n - 1] == '\t'))
                        b[--n] = 0;
                if (!join_token_group_valid(b))
                        return error_setf(ret_error, -EINVAL,
                                          "Secret %s/%s: auth-extra-groups: '%s' is not "
                                          "system:bootstrappers:[a-z0-9:-]*[a-z0-9]",
                                          JOIN_TOKEN_NAMESPACE, name, b);
                if ((r = strv_extend(&groups, b)) < 0)
                        return r;
        }
        *ret = TAKE_PTR(groups);
        return 0;
}

static int read_info(const json_t *secret, const char *name, JoinTokenInfo *i, char **ret_error) {
        _cleanup_free_ char *auth = NULL, *sign = NULL, *exp = NULL, *groups = NULL;
        int r;
        if ((r = get_data(secret, "usage-bootstrap-authentication", &auth)) < 0 ||
            (r = get_data(secret, "usage-bootstrap-signing", &sign)) < 0 ||
            (r = get_data(secret, "expiration", &exp)) < 0 ||
            (r = get_data(secret, "auth-extra-groups", &groups)) < 0 ||
            (r = get_data(secret, "description", &i->description)) < 0)
                return bad(ret_error, r, name, NULL, "a value that is not base64 text");
        i->authentication = streq_ptr(auth, "true");
        i->signing = streq_ptr(sign, "true");
        if (!i->authentication)
                return bad(ret_error, -EINVAL, name, "usage-bootstrap-authentication",
                           "not \"true\": the token authenticates no one");
        if (exp && parse_rfc3339(exp, &i->expiration) < 0)
                return error_setf(ret_error, -EINVAL,
                                  "Secret %s/%s: expiration: '%s' is not an RFC 3339 time (the API server "
                                  "takes the token for expired)",
                                  JOIN_TOKEN_NAMESPACE, name, exp);
        /* another tool's description may be anything: it is shown, so as one bounded line */
        if (i->description) {
                char *d = string_one_line(i->description, JOIN_TOKEN_DESCRIPTION_SHOWN);
                if (!d)
                        return -ENOMEM;
                free(i->description);
                i->description = d;
        }
        return read_groups(groups, name, &i->extra_groups, ret_error);
}

int join_token_secret_parse(const json_t *secret, JoinTokenInfo *ret, JoinToken *ret_token,
                            char **ret_error) {
        const char *name = json_get_string(secret, "metadata", "name");
        const char *id = name ? startswith(name, JOIN_TOKEN_SECRET_PREFIX) : NULL;
        _cleanup_(join_token_info_done) JoinTokenInfo i = {};
        JoinToken t = {};
        if (!id || !join_token_id_valid(id))
                return error_setf(ret_error, -EINVAL, "Secret %s/%s: not named %s<id>", JOIN_TOKEN_NAMESPACE,
                                  strnull(name), JOIN_TOKEN_SECRET_PREFIX);
        if (!streq_ptr(json_get_string(secret, "type"), JOIN_TOKEN_SECRET_TYPE))
                return bad(ret_error, -EINVAL, name, "type", "not " JOIN_TOKEN_SECRET_TYPE);
        if (!json_is_object(json_get(secret, "data")))
                return bad(ret_error, -EINVAL, name, "data", "absent");
        int r = read_credentials(secret, name, id, ret_token ? &t : NULL, ret_error);
        if (r >= 0)
                r = read_info(secret, name, &i, ret_error);
        if (r < 0) {
                join_token_erase(&t);
                return r;
        }
        memcpy(i.id, id, sizeof(i.id));
        i.name = strdup(name);
        i.uid = strdup(strempty(json_get_string(secret, "metadata", "uid")));
        if (!i.name || !i.uid) {
                join_token_erase(&t);
                return -ENOMEM;
        }
        if (ret_token)
                *ret_token = t;
        join_token_erase(&t);
        *ret = i;
        i = (JoinTokenInfo){};
        return 0;
}
