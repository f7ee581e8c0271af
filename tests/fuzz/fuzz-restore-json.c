/* SPDX-License-Identifier: Apache-2.0 */
/* A restore request and an upgrade's record come from the state store and a restore state from a volume:
 * each parser takes any bytes without a crash, and what one accepts formats back to a document it accepts
 * again, unchanged. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backup/restore.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        RestoreRequest req, again_req;
        RestoreState st, again_st;
        UpgradeRecord rec, again_rec;
        char *err = NULL, *text = NULL;
        if (restore_request_parse((const char *)data, size, &req, &err) >= 0) {
                if (restore_request_format(&req, &text) < 0 ||
                    restore_request_parse(text, strlen(text), &again_req, NULL) < 0 ||
                    strcmp(req.id, again_req.id) != 0 || strcmp(req.snapshot, again_req.snapshot) != 0 ||
                    req.requested != again_req.requested)
                        abort();
                free(text), text = NULL;
        } else if (!err)
                abort(); /* a refusal always says why */
        free(err), err = NULL;
        if (restore_state_parse((const char *)data, size, &st, &err) >= 0) {
                if (restore_state_format(&st, &text) < 0 ||
                    restore_state_parse(text, strlen(text), &again_st, NULL) < 0 ||
                    strcmp(st.id, again_st.id) != 0 || st.step != again_st.step)
                        abort();
                free(text), text = NULL;
        } else if (!err)
                abort();
        free(err), err = NULL;
        if (upgrade_record_parse((const char *)data, size, &rec, &err) >= 0) {
                if (upgrade_record_format(&rec, &text) < 0 ||
                    upgrade_record_parse(text, strlen(text), &again_rec, NULL) < 0 ||
                    memcmp(&rec, &again_rec, sizeof(rec)) != 0)
                        abort();
                free(text);
        } else if (!err)
                abort();
        free(err);
        return 0;
}
