/* SPDX-License-Identifier: Apache-2.0 */
/* The API's Status bodies (kube/kube-status.h) and the document splitter: any body gives a code and a
 * one-line message (no control characters, bounded), never a crash; a Secret's message never quotes the
 * Status' message. The first byte picks the HTTP status. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube-internal.h"
#include "kube/kube-status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_line(const char *m) {
        if (!m)
                abort(); /* every failure says why */
        for (const char *p = m; *p; p++)
                if ((unsigned char)*p < 0x20)
                        abort();
        if (strlen(m) > 16384)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const long statuses[] = { 400, 401, 403, 404, 409, 410, 422, 429, 500, 503, 302, 418 };
        KubeObjectRef ref = { .kind = "Secret", .ns = "kube-system", .name = "x" };
        char *err = NULL;
        long st = size > 0 ? statuses[data[0] % (sizeof(statuses) / sizeof(statuses[0]))] : 500;
        const char *body = size > 0 ? (const char *)data + 1 : "";
        size_t len = size > 0 ? size - 1 : 0;

        for (int secret = 0; secret < 2; secret++) {
                if (kube_status_error(st, body, len, &ref, secret, &err) >= 0)
                        abort();
                check_line(err);
                if (secret && strstr(err, "FUZZ-SECRET"))
                        abort();
                free(err);
                err = NULL;
        }

        const char *doc;
        size_t pos = 0, dlen, total = 0, n = 0;
        while (kube_next_document((const char *)data, size, &pos, &doc, &dlen)) {
                if (doc < (const char *)data || doc + dlen > (const char *)data + size || ++n > size + 1)
                        abort();
                total += dlen;
        }
        if (total > size)
                abort();
        return 0;
}
