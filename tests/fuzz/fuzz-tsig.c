/* SPDX-License-Identifier: Apache-2.0 */
/* The TSIG verifier on arbitrary messages, as a request and as a response to a request MAC, with and
 * without the time check. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dns/dns-tsig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        /* The key of tests/vectors/tsig (ASCII "secret-key-for-testing-32bytes!!"), so the seed corpus
         * holds messages that verify. */
        static const char secret[] = "secret-key-for-testing-32bytes!!";
        static const uint8_t request_mac[32] = { 1, 2, 3 };
        _cleanup_(tsig_key_freep) TsigKey *k = NULL;
        TsigVerdict v;

        if (tsig_key_new("protokube-key.", "hmac-sha256", (const uint8_t *)secret, strlen(secret), &k) < 0)
                return 0;
        (void)tsig_verify(data, size, k, NULL, 0, TSIG_VERIFY_SKIP_TIME, &v);
        (void)tsig_verify(data, size, k, NULL, 0, 0, &v);
        (void)tsig_verify(data, size, k, request_mac, sizeof(request_mac), TSIG_VERIFY_SKIP_TIME, &v);
        /* The key-file parser sees the same bytes as text. */
        _cleanup_(tsig_key_freep) TsigKey *parsed = NULL;
        char *error = NULL;
        (void)tsig_key_parse((const char *)data, size, &parsed, &error);
        free(error);
        return 0;
}
