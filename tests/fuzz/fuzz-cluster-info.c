/* SPDX-License-Identifier: Apache-2.0 */
/* kube-public/cluster-info as a worker reads it before it trusts anything (join/join-clusterinfo.h): any
 * input is a CA and an https:// server, or a one-line error, never a crash. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/x509v3.h>

#include "basic/string-util.h"
#include "join/join-clusterinfo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        X509 *ca = NULL;
        char *server = NULL, *err = NULL;
        int r = join_cluster_info_ca((const char *)data, size, &ca, &server, &err);
        if (r < 0) {
                if (ca || server || (!err && r != -ENOMEM))
                        abort(); /* every refusal says why, and returns nothing else */
                if (err && (string_has_cc(err) || strlen(err) > 512))
                        abort();
                free(err);
                return 0;
        }
        if (err || !ca || !server || !startswith(server, "https://") || string_has_cc(server) ||
            X509_check_ca(ca) != 1)
                abort();
        X509_free(ca);
        free(server);
        return 0;
}
