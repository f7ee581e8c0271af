/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The EC2 instance metadata service, IMDSv2 only: a session token from "PUT /latest/api/token", then GETs
 * carrying it (AWS EC2 User Guide, "Use IMDSv2"). */

#include "aws/credentials.h"
#include "basic/macro.h"
#include "basic/time-util.h"

#define AWS_IMDS_DEFAULT_ENDPOINT "http://169.254.169.254"
#define AWS_IMDS_TOKEN_TTL_SEC    21600
#define AWS_IMDS_VALUE_MAX        (64U * 1024)

typedef struct AwsImds AwsImds;

/* endpoint: NULL for AWS_EC2_METADATA_SERVICE_ENDPOINT or the link-local default. */
int aws_imds_new(const char *endpoint, AwsImds **ret);
AwsImds *aws_imds_free(AwsImds *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(AwsImds *, aws_imds_free);

/* GET /latest/<path> ("meta-data/instance-id"). Fetches or renews the token as needed (and once more after a
 * 401). -ENOENT on 404. *ret: caller frees. On failure *ret_error (may be NULL) gets a message. */
int aws_imds_get(AwsImds *m, const char *path, char **ret, char **ret_error);

/* The region of the instance (meta-data/placement/region). */
int aws_imds_region(AwsImds *m, char **ret, char **ret_error);

/* Credentials of the instance role: meta-data/iam/security-credentials/ names the role, then its document
 * (JSON: Code, AccessKeyId, SecretAccessKey, Token, Expiration). */
int aws_imds_role_credentials(AwsImds *m, AwsCredentials **ret, char **ret_error);

/* Parses "2026-11-22T17:35:00Z" (the Expiration of a role document) into CLOCK_REALTIME usec. */
int aws_parse_iso8601(const char *s, usec_t *ret);
