/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The shared part of every AWS call: endpoints, region, the credential chain, signing, sending, retrying and
 * turning error documents into messages. Service calls live in aws/ec2.h and aws/route53.h; S3 objects are
 * called from store/store-s3.c. */

#include <stdbool.h>
#include <stddef.h>

#include "aws/credentials.h"
#include "aws/imds.h"
#include "aws/sigv4.h"
#include "basic/aws-names.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "shared/xml.h"

typedef enum AwsService {
        AWS_SERVICE_EC2,
        AWS_SERVICE_ROUTE53,
        AWS_SERVICE_S3,
        _AWS_SERVICE_MAX,
        _AWS_SERVICE_INVALID = -EINVAL,
} AwsService;

/* Responses are read into memory up to this size; DescribeVolumes pages of 500 volumes stay far below. */
#define AWS_RESPONSE_MAX (16U * 1024 * 1024)

typedef struct AwsClient AwsClient;

/* Reads the environment the way the AWS SDKs do: AWS_REGION (then AWS_DEFAULT_REGION, then IMDS on first
 * use), AWS_ENDPOINT_URL_EC2 / AWS_ENDPOINT_URL_ROUTE_53 / AWS_ENDPOINT_URL_S3, then AWS_ENDPOINT_URL, then
 * the public endpoints; AWS_EC2_METADATA_SERVICE_ENDPOINT; AWS_EC2_METADATA_DISABLED=true turns IMDS off.
 * Credentials are looked up on first use (aws_client_credentials). An endpoint must be https, except on a
 * loopback host (http_endpoint_check). On -EINVAL *ret_error (when not NULL) names the variable and its
 * value (caller frees). */
int aws_client_new(AwsClient **ret, char **ret_error);
AwsClient *aws_client_free(AwsClient *c);

DEFINE_TRIVIAL_CLEANUP_FUNC(AwsClient *, aws_client_free);

/* Uses these credentials instead of the chain (takes ownership). */
void aws_client_set_credentials(AwsClient *c, AwsCredentials *creds);
/* Retry policy: at most max_attempts tries; before try n+1 a random delay in [0, min(max, base * 2^n)]
 * ("full jitter"). The defaults are 8, 200 ms, 20 s. */
void aws_client_set_retry(AwsClient *c, unsigned max_attempts, usec_t base, usec_t max);
/* Deadline for one whole call including retries (default 2 min), and for each HTTP exchange (default 30 s).
 */
void aws_client_set_timeouts(AwsClient *c, usec_t call, usec_t exchange);

/* How many retries the client has made since it was created (for tests and metrics). */
unsigned aws_client_retries(const AwsClient *c);

/* The region: the one set by aws_client_set_region(), else AWS_REGION / AWS_DEFAULT_REGION, else the
 * instance's region from IMDS. */
int aws_client_region(AwsClient *c, const char **ret, char **ret_error);
/* Addresses and signs every later call of c for region instead (the public endpoints of EC2 and S3 follow
 * it; an endpoint from the environment stays): an S3 bucket lives in its own region, whatever the
 * instance's. -EINVAL unless aws_region_name_valid(region). */
int aws_client_set_region(AwsClient *c, const char *region);
/* The metadata client (created on first use); -ENXIO when AWS_EC2_METADATA_DISABLED. */
int aws_client_imds(AwsClient *c, AwsImds **ret);
/* The credential chain: environment, shared credentials file, instance role; role credentials are renewed 5
 * minutes before they expire. */
int aws_client_credentials(AwsClient *c, const AwsCredentials **ret, char **ret_error);
/* The endpoint base URL for svc, without a trailing slash. */
int aws_client_endpoint(AwsClient *c, AwsService svc, const char **ret, char **ret_error);
/* The base URL of an S3 bucket's calls, without a trailing slash (caller frees; NULL on OOM). Below an
 * endpoint from the environment (endpoint not NULL): path-style, ENDPOINT/BUCKET. Else virtual-hosted,
 * https://BUCKET.s3.REGION.amazonaws.com, except for a bucket name with a dot: the certificate of that
 * host, *.s3.REGION.amazonaws.com, covers one label only, so TLS would fail; such a bucket is addressed
 * path-style, https://s3.REGION.amazonaws.com/BUCKET (S3 User Guide, "Virtual hosting of buckets"). */
char *aws_s3_base_url(const char *endpoint, const char *bucket, const char *region);

/* An AWS error code that a caller wants back as a return value of its own instead of PK_ECLOUD
 * ("VolumeInUse" -> PK_ECONFLICT): the caller decides on the code, never on the message's wording. With
 * message_part, the error's message must contain it too. */
typedef struct AwsErrorCode {
        const char *code;
        const char *message_part;
        int r;
} AwsErrorCode;

typedef struct AwsCall {
        AwsService service;
        const char *operation; /* "DescribeVolumes": for messages */
        const char *method;
        const char *path;  /* already encoded */
        const char *query; /* already encoded; NULL for none */
        const char *content_type;
        const void *body;
        size_t body_len;
        const AwsErrorCode *error_codes; /* terminated by a NULL code; NULL for none */
        const AwsHeader *headers;        /* further headers, sent and signed ("If-None-Match: *") */
        size_t n_headers;
        /* S3: the bucket, addressed as aws_s3_base_url() says. S3 calls also send and sign
         * x-amz-content-sha256, the body's SHA-256 (S3 refuses a request without it). */
        const char *bucket;
        bool sensitive; /* the answer may hold a secret (a private key): its buffers are erased */
} AwsCall;

/* Signs and sends call, retrying throttling, 5xx and transport errors with backoff (a stop request ends the
 * backoff: -ECANCELED). 2xx: *ret gets the parsed XML document (caller frees; an empty body gives a NULL
 * document). Otherwise PK_ECLOUD (or the call's error_codes value), PK_EMALFORMED for an unparsable answer,
 * PK_ETIMEOUT when the call's deadline passed, PK_ETOOBIG past AWS_RESPONSE_MAX; *ret_error (may be NULL)
 * then gets the message ("ec2 DescribeVolumes: SignatureDoesNotMatch: ... (HTTP 403, request id ...)",
 * caller frees), which never holds a secret. Every function of src/aws that calls AWS does the same. */
int aws_client_call(AwsClient *c, const AwsCall *call, XmlNode **ret, char **ret_error);
/* The same for answers that are not XML (S3 GetObject): on 2xx *ret_body gets the body as received,
 * NUL-terminated (caller frees), *ret_len its length. Errors and *ret_error as aws_client_call(). */
int aws_client_call_raw(AwsClient *c, const AwsCall *call, char **ret_body, size_t *ret_len,
                        char **ret_error);

/* aws_client_call_raw() for an answer whose body does not matter (dropped): *ret_value gets the value of
 * the last answer's header `header` (caller frees), NULL when it had none, on success and on failure alike.
 * S3 names a bucket's region in x-amz-bucket-region on 200, 301, 400 and 403 answers. Errors and
 * *ret_error as aws_client_call(). */
int aws_client_call_header(AwsClient *c, const AwsCall *call, const char *header, char **ret_value,
                           char **ret_error);

/* Code, Message and RequestID (EC2) / RequestId (Route 53) of an error document, each sanitized and capped,
 * or NULL when absent. Callers free the three strings. */
void aws_error_document_parse(const void *data, size_t len, char **ret_code, char **ret_message,
                              char **ret_id);

const char *aws_service_to_string(AwsService s) _pure_;
