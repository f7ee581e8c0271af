/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* AWS Signature Version 4, written here rather than through CURLOPT_AWS_SIGV4 (curl 7.88 signs removed
 * headers and duplicates X-Amz-Date). The steps follow the AWS General Reference, "Create a signed AWS API
 * request". */

#include <stdbool.h>
#include <stddef.h>

#include "aws/credentials.h"
#include "basic/time-util.h"

typedef struct AwsHeader {
        const char *name;
        const char *value;
} AwsHeader;

typedef struct AwsSigV4Request {
        const char *method; /* "GET", "POST" */
        const char *host;   /* the Host header value, with ":port" when not the default */
        const char *path;   /* the path as sent on the wire (already percent-encoded), "/" when empty */
        const char *query;  /* the query as sent on the wire, without '?'; NULL or "" for none */
        const AwsHeader *headers; /* further headers to sign (content-type...); never host or x-amz-date */
        size_t n_headers;
        const void *body;
        size_t body_len;
        const char *region;  /* "us-east-1" */
        const char *service; /* "ec2", "route53" */
        /* S3 signs the path as sent, without normalisation or a second encoding; other services do both. */
        bool s3_style;
} AwsSigV4Request;

/* authorization and canonical_request are sensitive: the first is a credential for the request's five-minute
 * window, the second holds the session token (x-amz-security-token). aws_sigv4_result_done() erases both;
 * never log them. */
typedef struct AwsSigV4Result {
        char *authorization;     /* the Authorization header value */
        char amz_date[17];       /* the X-Amz-Date header value, "20150830T123600Z" */
        char *canonical_request; /* for tests and debugging; holds the session token, if any */
        char *string_to_sign;
        char *signed_headers; /* "content-type;host;x-amz-date" */
} AwsSigV4Result;

void aws_sigv4_result_done(AwsSigV4Result *r);

/* Signs req at time t (CLOCK_REALTIME usec). With a session token, x-amz-security-token is signed too and
 * the caller must send it. Returns -EINVAL for header names/values with control characters or malformed
 * percent-escapes in the query. Fills *ret only on success; release it with aws_sigv4_result_done(), which
 * erases it. */
int aws_sigv4_sign_at(const AwsSigV4Request *req, const AwsCredentials *creds, usec_t t,
                      AwsSigV4Result *ret);

/* Same at now(CLOCK_REALTIME), so tests can fix the time with clock_override(). */
int aws_sigv4_sign(const AwsSigV4Request *req, const AwsCredentials *creds, AwsSigV4Result *ret);

/* The lowercase hex SHA-256 of data: the payload hash, which S3 also wants as x-amz-content-sha256. */
int aws_sha256_hex(const void *data, size_t len, char out[static 65]);
