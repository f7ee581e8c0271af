/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The GCE metadata server (Compute Engine, "About VM metadata"): GETs under /computeMetadata/v1/ with
 * "Metadata-Flavor: Google", plain http on the link-local address, never through a proxy. An answer without
 * that header did not come from the metadata server (a captive proxy, another service): refused. */

#include "basic/macro.h"
#include "gce/auth.h"

#define GCE_METADATA_HOST_ENV     "GCE_METADATA_HOST" /* host[:port], as Google's client libraries read it */
#define GCE_METADATA_HOST_DEFAULT "169.254.169.254"
#define GCE_METADATA_VALUE_MAX    (64U * 1024)

typedef struct GceMetadata GceMetadata;

/* host: NULL for $GCE_METADATA_HOST or the default. -EINVAL (with *ret_error naming the variable and value)
 * for anything but a host name or address with an optional port. */
int gce_metadata_new(const char *host, GceMetadata **ret, char **ret_error);
GceMetadata *gce_metadata_free(GceMetadata *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(GceMetadata *, gce_metadata_free);

/* GET /computeMetadata/v1/<path> ("instance/zone"). -ENOENT on 404. *ret: caller frees; the value must be
 * printable (no control characters but a final newline, which is dropped). */
int gce_metadata_get(GceMetadata *m, const char *path, char **ret, char **ret_error);
/* The default service account's access token (instance/service-accounts/default/token). */
int gce_metadata_token(GceMetadata *m, GceToken *ret, char **ret_error);
