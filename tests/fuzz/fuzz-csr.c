/* SPDX-License-Identifier: Apache-2.0 */
/* Certificate requests from the API (pki/pki-csr.h): any input is a request with its fields in bounds or
 * a one-line error, never a crash. Input that starts as PEM is parsed as it is; anything else is taken for
 * DER and wrapped in a PEM block first, so that the fuzzer reaches the ASN.1 behind the armour. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/in-addr-util.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "pki/pki-csr.h"
#include "shared/crypto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const char *pem, size_t len) {
        PkiCsr *c = NULL;
        char *err = NULL;
        int r = pki_csr_parse(pem, len, &c, &err);
        if (r < 0) {
                if (!err && r != -ENOMEM)
                        abort(); /* every refusal says why */
                if (err && (string_has_cc(err) || strlen(err) > 512))
                        abort();
                free(err);
                return;
        }
        if (err || !c || !c->key || !c->orgs || !c->dns || !c->ips || (c->n_cn == 0) != (c->cn == NULL))
                abort();
        if ((c->cn && string_has_cc(c->cn)) || strv_length(c->dns) > 64 || strv_length(c->ips) > 64)
                abort();
        STRV_FOREACH (d, c->dns)
                if (string_has_cc(*d))
                        abort();
        STRV_FOREACH (ip, c->ips)
                if (!in_addr_literal_valid(*ip))
                        abort();
        pki_csr_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const char begin[] = "-----BEGIN CERTIFICATE REQUEST-----\n",
                          end[] = "\n-----END CERTIFICATE REQUEST-----\n";
        if (size > 70000)
                return 0;
        if (size >= 10 && memcmp(data, "-----BEGIN", 10) == 0) {
                check((const char *)data, size);
                return 0;
        }
        char *b64 = NULL;
        if (crypto_base64_encode(data, size, &b64) < 0)
                return 0;
        /* PEM's 64 columns */
        size_t n = strlen(b64), len = 0;
        char *pem = malloc(sizeof(begin) + n + n / 64 + sizeof(end) + 1);
        if (pem) {
                memcpy(pem, begin, sizeof(begin) - 1);
                len = sizeof(begin) - 1;
                for (size_t i = 0; i < n; i += 64) {
                        if (i > 0)
                                pem[len++] = '\n';
                        memcpy(pem + len, b64 + i, MIN((size_t)64, n - i));
                        len += MIN((size_t)64, n - i);
                }
                memcpy(pem + len, end, sizeof(end));
                len += sizeof(end) - 1;
                check(pem, len);
        }
        free(b64);
        free(pem);
        return 0;
}
