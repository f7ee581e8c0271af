/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Bootstrap tokens (docs/workers.md, "Tokens"): Kubernetes' own format, so that kube-apiserver's
 * bootstrap-token authenticator (--enable-bootstrap-token-auth) takes them and kubelet's TLS bootstrap
 * works unchanged. A token is "<id>.<secret>", id [a-z0-9]{6}, secret [a-z0-9]{16}; it lives in the
 * Secret kube-system/bootstrap-token-<id> of type bootstrap.kubernetes.io/token, whose data says its
 * expiration (RFC 3339), its usages and the extra groups its user (system:bootstrap:<id>) is in.
 *
 * A token's secret is a credential: it is never put in a message, and every buffer that held it is erased
 * (join_token_erase(), json_erase_values() on a Secret object). Library code: returns errors with a
 * message, never logs. */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "kube/kube-client.h"

#define JOIN_TOKEN_ID_LEN        6
#define JOIN_TOKEN_SECRET_LEN    16
#define JOIN_TOKEN_TEXT_MAX      (JOIN_TOKEN_ID_LEN + 1 + JOIN_TOKEN_SECRET_LEN + 1)
#define JOIN_TOKEN_NAMESPACE     "kube-system"
#define JOIN_TOKEN_SECRET_PREFIX "bootstrap-token-"
#define JOIN_TOKEN_SECRET_TYPE   "bootstrap.kubernetes.io/token"
/* Every bootstrap token's user is system:bootstrap:<id>, in this group and its extra groups. */
#define JOIN_BOOTSTRAP_USER_PREFIX "system:bootstrap:"
#define JOIN_BOOTSTRAP_GROUP       "system:bootstrappers"
/* The extra group of protokube's tokens: the RBAC that lets a joining node ask for its certificate binds it
 * (join-rbac.h), as kubeadm binds system:bootstrappers:kubeadm:default-node-token. */
#define JOIN_TOKEN_GROUP           "system:bootstrappers:protokube:default-node-token"
#define JOIN_TOKEN_TTL_DEFAULT     (24ULL * 3600ULL * USEC_PER_SEC) /* kubeadm's */
#define JOIN_TOKEN_DESCRIPTION_MAX 256
#define JOIN_TOKEN_GROUPS_MAX      16

typedef struct JoinToken {
        char id[JOIN_TOKEN_ID_LEN + 1];
        char secret[JOIN_TOKEN_SECRET_LEN + 1];
} JoinToken;

/* Overwrites the token (the secret and the id). */
void join_token_erase(JoinToken *t);

/* A new token from the kernel's random pool (getrandom), each character uniform over [a-z0-9]. */
int join_token_generate(JoinToken *ret);

/* "<id>.<secret>" into buf, NUL-terminated; the caller erases buf. Returns buf. */
char *join_token_format(const JoinToken *t, char buf[static JOIN_TOKEN_TEXT_MAX]);

/* Parses "<id>.<secret>" (a worker's option, a test's). -EINVAL with a message that never quotes the
 * secret ("bootstrap token for id 'abcdef': the secret must be 16 characters of [a-z0-9]"). */
int join_token_parse(const char *text, JoinToken *ret, char **ret_error);

bool join_token_id_valid(const char *id);
/* A group of auth-extra-groups: system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9] (kube-apiserver's own
 * pattern: another is refused by the authenticator, and the token authenticates no one). */
bool join_token_group_valid(const char *group);

typedef struct JoinTokenSpec {
        usec_t expiration;         /* CLOCK_REALTIME; 0: never expires */
        const char *description;   /* NULL: none; at most 256 characters, no control characters */
        char *const *extra_groups; /* NULL: JOIN_TOKEN_GROUP alone */
        bool signing;              /* usage-bootstrap-signing (the cluster-info ConfigMap's JWS) */
} JoinTokenSpec;

/* The Secret of token t (apiVersion v1, kube-system/bootstrap-token-<id>, its type, data base64, the
 * labels of protokube's objects). The object holds the secret: the caller erases it (json_erase_values())
 * before json_decref(). -EINVAL with a message for a bad spec. */
int join_token_secret_new(const JoinToken *t, const JoinTokenSpec *spec, json_t **ret, char **ret_error);

/* What a token's Secret says, the secret left out. */
typedef struct JoinTokenInfo {
        char id[JOIN_TOKEN_ID_LEN + 1]; /* "" when the name does not say */
        char *name;                     /* the Secret's */
        char *uid;                      /* its metadata.uid: a delete with this precondition */
        usec_t expiration;              /* CLOCK_REALTIME; 0: never expires */
        char *description;              /* NULL: none */
        char **extra_groups;            /* never NULL */
        bool authentication, signing;   /* the usages */
        /* NULL when kube-apiserver would take it; else why not (join_token_list() keeps such Secrets so
         * that an operator sees them) */
        char *invalid;
} JoinTokenInfo;

void join_token_info_done(JoinTokenInfo *i);

/* Reads a token's Secret as the API returns it (data base64) and checks it as kube-apiserver's
 * authenticator does: the name bootstrap-token-<id>, the type, token-id equal to <id>, a well-formed
 * token-secret, an RFC 3339 expiration, "true" usages, the extra groups' pattern. ret_token (may be NULL)
 * gets the token (the caller erases it). -EINVAL (PK_EMALFORMED for undecodable data) with a message
 * naming the Secret and the key; a secret's value is never quoted. */
int join_token_secret_parse(const json_t *secret, JoinTokenInfo *ret, JoinToken *ret_token,
                            char **ret_error);

/* True once the token has expired at now (CLOCK_REALTIME): kube-apiserver refuses it from then on. */
bool join_token_expired(const JoinTokenInfo *i, usec_t now);

/* Through the API (kube-system's Secrets; deadline as kube-client.h's). */

/* A new token and its Secret, created (never replacing one: a taken id draws another, at most 3 times).
 * *ret gets the token: the caller prints it once and erases it. */
int join_token_create(KubeClient *c, const JoinTokenSpec *spec, usec_t deadline, JoinToken *ret,
                      char **ret_error);
/* Every Secret of type bootstrap.kubernetes.io/token in kube-system, by name; one that does not check is
 * listed with its reason in .invalid. The Secrets' bodies are erased as read. Caller frees with
 * join_token_infos_free(). */
int join_token_list(KubeClient *c, usec_t deadline, JoinTokenInfo **ret, size_t *ret_n, char **ret_error);
void join_token_infos_free(JoinTokenInfo *l, size_t n);
/* Deletes the token's Secret; -ENOENT (and a message) when there is none. */
int join_token_delete(KubeClient *c, const char *id, usec_t deadline, char **ret_error);
/* Deletes every token expired at now (CLOCK_REALTIME), each with its uid as the precondition (a Secret
 * made again under the same name meanwhile stays). *ret_deleted (may be NULL) gets their ids. A Secret
 * deleted by another master meanwhile counts as deleted. */
int join_token_cleanup_expired(KubeClient *c, usec_t now, usec_t deadline, char ***ret_deleted,
                               char **ret_error);
