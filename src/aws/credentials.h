/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* AWS credentials and the SDK lookup chain: environment, shared credentials file, instance role (IMDSv2). */

#include <stdbool.h>

#include "basic/macro.h"
#include "basic/time-util.h"

typedef struct AwsCredentials {
        char *access_key_id;
        char *secret_access_key; /* secret: erased on free, never logged */
        char *session_token;     /* secret: erased on free, never logged; may be NULL */
        usec_t expiration;       /* CLOCK_REALTIME; USEC_INFINITY for static keys */
        const char *source;      /* "environment", "shared-credentials-file", "imds": for messages */
} AwsCredentials;

/* Copies the strings (token may be NULL). Caller frees with aws_credentials_free(). */
int aws_credentials_new(const char *access_key_id, const char *secret_access_key, const char *session_token,
                        AwsCredentials **ret);
AwsCredentials *aws_credentials_free(AwsCredentials *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(AwsCredentials *, aws_credentials_free);

/* From AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN. -ENOENT when the keys are not set. */
int aws_credentials_from_env(AwsCredentials **ret);

/* From the INI file at path (or AWS_SHARED_CREDENTIALS_FILE, or ~/.aws/credentials when path is NULL),
 * section profile (or AWS_PROFILE, or "default" when NULL). -ENOENT when the file or profile is missing,
 * PK_EMALFORMED when the profile lacks a key. */
int aws_credentials_from_file(const char *path, const char *profile, AwsCredentials **ret);

/* True when the credentials expire within margin of now (CLOCK_REALTIME). */
bool aws_credentials_expiring(const AwsCredentials *c, usec_t margin);
