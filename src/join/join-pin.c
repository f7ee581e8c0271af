/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "join/join-pin.h"
#include "pki/pki-cert.h"
#include "shared/crypto.h"

#define PIN_HEX_LEN (PKI_SPKI_SHA256_SIZE * 2)
assert_cc(JOIN_PIN_TEXT_MAX == sizeof(JOIN_PIN_PREFIX) + PIN_HEX_LEN);

int join_ca_pin(X509 *ca, char buf[static JOIN_PIN_TEXT_MAX]) {
        uint8_t d[PKI_SPKI_SHA256_SIZE];
        int r = pki_cert_spki_sha256(ca, d);
        if (r < 0)
                return r;
        memcpy(buf, JOIN_PIN_PREFIX, sizeof(JOIN_PIN_PREFIX) - 1);
        crypto_hex(d, sizeof(d), buf + sizeof(JOIN_PIN_PREFIX) - 1);
        return 0;
}

int join_ca_pin_keystore(const Keystore *k, char buf[static JOIN_PIN_TEXT_MAX], char **ret_error) {
        const KeystoreEntry *e = keystore_find(k, KEYSTORE_CLUSTER_CA);
        if (!e || !e->cert)
                return error_setf(ret_error, -ENOENT, "the keystore has no cluster CA ('%s') yet",
                                  KEYSTORE_CLUSTER_CA);
        return join_ca_pin(e->cert, buf);
}

static bool is_hex(char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

bool join_pin_valid(const char *pin) {
        const char *hex = pin ? startswith(pin, JOIN_PIN_PREFIX) : NULL;
        if (!hex || strlen(hex) != PIN_HEX_LEN)
                return false;
        for (size_t i = 0; i < PIN_HEX_LEN; i++)
                if (!is_hex(hex[i]))
                        return false;
        return true;
}

int join_ca_pin_check(X509 *ca, const char *pin, char **ret_error) {
        char have[JOIN_PIN_TEXT_MAX];
        if (!join_pin_valid(pin))
                return error_setf(ret_error, -EINVAL, "invalid CA pin '%.80s': want sha256:<64 hex digits>",
                                  strnull(pin));
        int r = join_ca_pin(ca, have);
        if (r < 0)
                return error_setf(ret_error, r, "the CA's public key does not encode");
        if (strcasecmp(have, pin) == 0)
                return 0;
        _cleanup_free_ char *cn = NULL;
        (void)pki_cert_subject_cn(ca, &cn);
        return error_setf(ret_error, -EKEYREJECTED,
                          "the API server's CA '%s' has pin %s, not the pin given (%s): a wrong pin, or not "
                          "this cluster's API server",
                          strna(cn), have, pin);
}
