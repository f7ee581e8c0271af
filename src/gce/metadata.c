/* SPDX-License-Identifier: Apache-2.0 */
#include "gce/metadata.h"

#include <string.h>
#include <strings.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "shared/http-wire.h"
#include "shared/http.h"

/* The metadata server answers in milliseconds; a machine without one must not stall a pass. */
#define METADATA_TIMEOUT         (3 * USEC_PER_SEC)
#define METADATA_CONNECT_TIMEOUT (1 * USEC_PER_SEC)

struct GceMetadata {
        char *base; /* http://HOST[:PORT]/computeMetadata/v1/ */
};

GceMetadata *gce_metadata_free(GceMetadata *m) {
        if (!m)
                return NULL;
        free(m->base);
        free(m);
        return NULL;
}

int gce_metadata_new(const char *host, GceMetadata **ret, char **ret_error) {
        const char *var = host ? "the metadata host" : GCE_METADATA_HOST_ENV;
        HttpUrl u;
        if (!host)
                host = getenv(GCE_METADATA_HOST_ENV);
        if (isempty(host))
                host = GCE_METADATA_HOST_DEFAULT;
        _cleanup_free_ char *url = strjoin("http://", host, "/computeMetadata/v1/");
        if (!url)
                return -ENOMEM;
        if (strlen(host) > 255 || strpbrk(host, "/?#@ ") || http_url_parse(url, &u) < 0)
                return error_setf(ret_error, -EINVAL, "%s='%s': must be HOST or HOST:PORT", var, host);
        GceMetadata *m = new0(GceMetadata, 1);
        if (!m)
                return -ENOMEM;
        m->base = TAKE_PTR(url);
        *ret = m;
        return 0;
}

static int metadata_exchange(GceMetadata *m, const char *path, bool sensitive, HttpResponse *resp,
                             char **ret_error) {
        _cleanup_free_ char *url = strjoin(m->base, path), *err = NULL;
        const char *headers[] = { "Metadata-Flavor: Google" };
        if (!url)
                return -ENOMEM;
        HttpRequest req = {
                .method = "GET",
                .url = url,
                .headers = headers,
                .n_headers = 1,
                .timeout = METADATA_TIMEOUT,
                .connect_timeout = METADATA_CONNECT_TIMEOUT,
                .max_response = GCE_METADATA_VALUE_MAX,
                .sensitive = sensitive,
        };
        int r = http_request(&req, resp, &err);
        if (r < 0) /* http_request()'s message names the URL */
                return error_setf(ret_error, r, "metadata server: %s", err ?: pk_strerror(r));
        _cleanup_free_ char *flavor = http_response_header(resp, "Metadata-Flavor");
        if (!flavor || strcasecmp(flavor, "Google") != 0) {
                http_response_done(resp);
                return error_setf(ret_error, PK_EMALFORMED,
                                  "%s answered without 'Metadata-Flavor: Google': not the metadata server",
                                  url);
        }
        if (resp->status == 404) {
                http_response_done(resp);
                return -ENOENT;
        }
        if (resp->status != 200) {
                long status = resp->status;
                http_response_done(resp);
                return error_setf(ret_error, PK_ECLOUD, "metadata server %s: HTTP %ld", url, status);
        }
        return 0;
}

int gce_metadata_get(GceMetadata *m, const char *path, char **ret, char **ret_error) {
        HttpResponse resp = {};
        int r = metadata_exchange(m, path, false, &resp, ret_error);
        if (r < 0)
                return r;
        if (!resp.body && !(resp.body = strdup(""))) {
                http_response_done(&resp);
                return -ENOMEM;
        }
        size_t n = resp.body_len;
        if (n > 0 && resp.body[n - 1] == '\n')
                resp.body[--n] = 0;
        if (strlen(resp.body) != n || string_has_cc(resp.body)) {
                http_response_done(&resp);
                return error_setf(ret_error, PK_EMALFORMED, "metadata value '%s' is not one printable line",
                                  path);
        }
        *ret = TAKE_PTR(resp.body);
        http_response_done(&resp);
        return 0;
}

int gce_metadata_token(GceMetadata *m, GceToken *ret, char **ret_error) {
        HttpResponse resp = {};
        int r = metadata_exchange(m, "instance/service-accounts/default/token", true, &resp, ret_error);
        if (r == -ENOENT)
                return error_setf(ret_error, -ENOENT,
                                  "this instance has no service account (metadata: 404)");
        if (r < 0)
                return r;
        r = gce_token_parse(resp.body, resp.body_len, now(CLOCK_MONOTONIC), ret, ret_error);
        http_response_done(&resp);
        return r;
}
