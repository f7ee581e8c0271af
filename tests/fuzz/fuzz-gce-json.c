/* SPDX-License-Identifier: Apache-2.0 */
/* Every reader of Google's answers over one input: the error document, a token answer and a token
 * endpoint's error, a service account key, disks.list and instances.list pages, an operation, Cloud DNS's
 * zone and record set pages and a change, Cloud Storage's object and prefix pages, and kops' label
 * decoding. Malformed input must be an error, never a crash. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/gce-names.h"
#include "gce/auth.h"
#include "gce/client.h"
#include "gce/clouddns.h"
#include "gce/compute.h"
#include "gce/storage.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *text = (const char *)data;
        char *msg, *status, *reason, *next, *s;
        gce_error_document_parse(data, size, &msg, &status, &reason);
        free(msg);
        free(status);
        free(reason);

        GceToken t = {};
        if (gce_token_parse(text, size, 0, &t, NULL) >= 0)
                gce_token_done(&t);
        free(gce_token_error_parse(text, size));

        GceServiceAccountKey k = {};
        if (gce_service_account_key_parse("fuzz", text, size, &k, NULL) >= 0)
                gce_service_account_key_done(&k);

        GceDisk *d;
        GceInstance *i;
        GceOperation op = {};
        size_t n;
        if (gce_compute_parse_disk_page(text, size, &d, &n, &next) >= 0) {
                gce_disks_free(d, n);
                free(next);
        }
        if (gce_compute_parse_instance_page(text, size, &i, &n, &next) >= 0) {
                gce_instances_free(i, n);
                free(next);
        }
        if (gce_compute_parse_operation(text, size, &op) >= 0)
                gce_operation_done(&op);

        GceManagedZone *mz;
        GceRecordSet *rs;
        GceObject *obj;
        bool done;
        if (gce_dns_parse_zone_page(text, size, &mz, &n, &next) >= 0) {
                gce_managed_zones_free(mz, n);
                free(next);
        }
        if (gce_dns_parse_record_set_page(text, size, &rs, &n, &next) >= 0) {
                gce_record_sets_free(rs, n);
                free(next);
        }
        if (gce_dns_parse_change(text, size, &s, &done) >= 0)
                free(s);
        for (int dirs = 0; dirs < 2; dirs++)
                if (gce_storage_parse_list_page(text, size, dirs, &obj, &n, &next) >= 0) {
                        gce_objects_free(obj, n);
                        free(next);
                }

        char *z = strndup(text, size);
        if (z && gce_label_decode(z, &s) >= 0)
                free(s);
        free(z);
        return 0;
}
