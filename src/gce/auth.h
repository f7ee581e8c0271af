/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* OAuth2 access tokens for Google's APIs off GCE: a service account's JSON key (GOOGLE_APPLICATION_
 * CREDENTIALS) signs a JWT (RS256) that Google's token endpoint exchanges for an access token (Google
 * Identity, "Using OAuth 2.0 for Server to Server Applications"). On GCE the metadata server hands out
 * tokens instead (gce/metadata.h). Keys, assertions and tokens are secrets: erased when freed, never in a
 * message. */

#include <stddef.h>

#include "basic/macro.h"
#include "basic/time-util.h"

#define GCE_TOKEN_URI_DEFAULT    "https://oauth2.googleapis.com/token"
#define GCE_SCOPE_CLOUD_PLATFORM "https://www.googleapis.com/auth/cloud-platform"
/* Google accepts assertions valid for at most an hour. */
#define GCE_JWT_LIFETIME_SEC 3600
#define GCE_KEY_FILE_MAX     (64U * 1024)
#define GCE_TOKEN_MAX        4096

typedef struct GceServiceAccountKey {
        char *client_email;
        char *private_key_id;
        char *private_key; /* PKCS#8 PEM: secret */
        char *token_uri;
        char *project_id; /* NULL when the key names none */
} GceServiceAccountKey;

void gce_service_account_key_done(GceServiceAccountKey *k);

/* Parses a key document ("type": "service_account"); origin names it in messages (the file's path).
 * token_uri must pass http_endpoint_check() (https, or http to loopback): the assertion travels to it.
 * PK_EMALFORMED with *ret_error naming origin and the field. */
int gce_service_account_key_parse(const char *origin, const char *data, size_t len,
                                  GceServiceAccountKey *ret, char **ret_error);
/* Reads and parses the key file at path (into memory that is erased). */
int gce_service_account_key_load(const char *path, GceServiceAccountKey *ret, char **ret_error);

/* The signed assertion for key with scopes (space-separated) issued at now (CLOCK_REALTIME), valid for
 * GCE_JWT_LIFETIME_SEC: header {"alg":"RS256","typ":"JWT","kid"}, claims {"iss","scope","aud","iat","exp"},
 * base64url without padding (RFC 7515, 7519). *ret: a secret, caller erases (string_free_erase). */
int gce_jwt_assertion(const GceServiceAccountKey *key, const char *scopes, usec_t now, char **ret);

/* Renew a token this long before it expires (as Google's Go library does), or after three quarters of its
 * life when it is shorter. */
#define GCE_TOKEN_RENEW_MARGIN (225 * USEC_PER_SEC)

typedef struct GceToken {
        char *access_token; /* secret */
        usec_t expires_at;  /* CLOCK_MONOTONIC */
        usec_t renew_at;    /* CLOCK_MONOTONIC: fetch a new one from here on */
} GceToken;

void gce_token_done(GceToken *t);
/* A token answer ({"access_token","expires_in","token_type":"Bearer"}) received at now (CLOCK_MONOTONIC).
 * The token must be 1-GCE_TOKEN_MAX printable characters without spaces (it goes into a header line).
 * PK_EMALFORMED with a message naming the field (never the token). */
int gce_token_parse(const char *data, size_t len, usec_t now, GceToken *ret, char **ret_error);
/* The error of a token endpoint's answer ({"error","error_description"}), sanitized, or NULL. */
char *gce_token_error_parse(const char *data, size_t len);

/* Exchanges a fresh assertion of key for a token at key->token_uri (one POST, form-encoded; ca_file: the
 * CAs for https, NULL for the system's). Errors, with the endpoint's words: -EACCES when it refused the
 * assertion (4xx: an unknown or revoked key, a clock far off), PK_ECLOUD for 429 and 5xx (worth a retry),
 * transport errors as http_request()'s. */
int gce_token_from_key(const GceServiceAccountKey *key, const char *scopes, const char *ca_file,
                       GceToken *ret, char **ret_error);
