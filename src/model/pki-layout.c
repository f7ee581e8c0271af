/* SPDX-License-Identifier: Apache-2.0 */
#include "model/pki-layout.h"

#include <string.h>

#include "basic/dns-name.h"
#include "basic/string-util.h"

static const char *sep(const char *dir) {
        return endswith(dir, "/") ? "" : "/";
}

char *pki_layout_dir(const char *pki_dir, const char *subdir) {
        return strjoin(pki_dir, sep(pki_dir), subdir);
}

char *pki_layout_file(const char *pki_dir, const char *subdir, const char *file) {
        return strjoin(pki_dir, sep(pki_dir), subdir, "/", file);
}

char *pki_layout_etcd_dir(const char *pki_dir, const char *cluster) {
        if (!cluster || !dns_label_is_valid(cluster, strlen(cluster)))
                return NULL;
        return strjoin(pki_dir, sep(pki_dir), PKI_ETCD_DIR_PREFIX, cluster);
}
