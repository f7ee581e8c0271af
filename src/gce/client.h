/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The shared part of every Google Cloud call: endpoints, the project, the access token (a service account
 * key's, else the metadata server's, renewed before it expires), sending, retrying and turning Google's
 * error documents into messages. Compute calls live in gce/compute.h, Cloud DNS in gce/clouddns.h; Cloud
 * Storage is called from store/store-gs.c. Nothing here logs; messages never hold a token or a key. */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "gce/auth.h"
#include "gce/metadata.h"

typedef enum GceService {
        GCE_SERVICE_COMPUTE,
        GCE_SERVICE_DNS,
        GCE_SERVICE_STORAGE,
        GCE_SERVICE_STORAGE_UPLOAD,
        _GCE_SERVICE_MAX,
        _GCE_SERVICE_INVALID = -EINVAL,
} GceService;

/* Where the APIs are: PROTOKUBE_GCE_ENDPOINT (one base URL serving every API's path, a test double or a
 * private endpoint), else Google's public hosts. PROTOKUBE_GCE_CA_BUNDLE: the CAs of that endpoint. */
#define GCE_ENDPOINT_ENV  "PROTOKUBE_GCE_ENDPOINT"
#define GCE_CA_BUNDLE_ENV "PROTOKUBE_GCE_CA_BUNDLE"
#define GCE_KEY_FILE_ENV  "GOOGLE_APPLICATION_CREDENTIALS"
#define GCE_PROJECT_ENV   "GOOGLE_CLOUD_PROJECT"

/* Answers are read into memory up to this size (a disks.list page of 500 disks stays far below). */
#define GCE_RESPONSE_MAX (17U * 1024 * 1024)

typedef struct GceClient GceClient;

/* Reads the environment: the endpoint, the CA bundle, GOOGLE_APPLICATION_CREDENTIALS (a service account key:
 * read and checked here), else the metadata server ($GCE_METADATA_HOST) on first use. -EINVAL or
 * PK_EMALFORMED with *ret_error naming the variable or file. */
int gce_client_new(GceClient **ret, char **ret_error);
GceClient *gce_client_free(GceClient *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(GceClient *, gce_client_free);

/* The metadata server (created on first use). */
int gce_client_metadata(GceClient *c, GceMetadata **ret, char **ret_error);
/* The project: GOOGLE_CLOUD_PROJECT, else the key's project_id, else the metadata server's. */
int gce_client_project(GceClient *c, const char **ret, char **ret_error);

/* A Google error reason ("notFound", "conditionNotMet") or HTTP status a caller wants back as its own return
 * value instead of PK_ECLOUD: decided on the reason or status, never on the message's wording. status 0:
 * any; reason NULL: any. The list ends with an entry whose r is 0. */
typedef struct GceErrorCode {
        long status;
        const char *reason;
        int r;
} GceErrorCode;

typedef struct GceCall {
        GceService service;
        const char *operation; /* "disks.list": for messages */
        const char *method;
        const char *path;  /* below the service's base ("/projects/P/zones/Z/disks"), already encoded */
        const char *query; /* already encoded; NULL for none */
        const char *content_type;
        const void *body;
        size_t body_len;
        const GceErrorCode *error_codes;
        bool sensitive; /* the answer may hold a secret (a private key in the store): buffers erased */
} GceCall;

/* Sends call with the token, retrying 429, 5xx, rate limits and transport errors with backoff (a stop
 * request ends it: -ECANCELED), and once at once after a 401 with a new token. 2xx: *ret gets the parsed
 * JSON (NULL for an empty body; caller decrefs). Otherwise PK_ECLOUD (or the error_codes value),
 * PK_EMALFORMED for an unparsable answer, PK_ETIMEOUT at the call's deadline; *ret_error (may be NULL) then
 * says "compute disks.list: HTTP 403 PERMISSION_DENIED: <message> (reason forbidden)". */
int gce_client_call(GceClient *c, const GceCall *call, json_t **ret, char **ret_error);
/* The same for answers that are not JSON (an object's bytes): *ret_body NUL-terminated, *ret_len. */
int gce_client_call_raw(GceClient *c, const GceCall *call, char **ret_body, size_t *ret_len,
                        char **ret_error);

/* Google's error document ({"error": {"code", "message", "status", "errors": [{"reason"}]}}): message,
 * status and the first reason, each sanitized, or NULL. Callers free them. */
void gce_error_document_parse(const void *data, size_t len, char **ret_message, char **ret_status,
                              char **ret_reason);

const char *gce_service_to_string(GceService s) _pure_;
