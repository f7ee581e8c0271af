/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The CA pin (kubeadm's --discovery-token-ca-cert-hash format): "sha256:" and the lowercase hex of the
 * SHA-256 of the cluster CA certificate's DER SubjectPublicKeyInfo. `protokube token create` prints it
 * beside the token; a worker trusts an API server only through a CA that has this pin, so a token alone
 * (which anyone who can read it may replay) never makes it trust a stranger's CA. The key, not the
 * certificate, is pinned: a CA re-issued with the same key keeps its pin. */

#include <stdbool.h>

#include <openssl/x509.h>

#include "pki/keystore.h"

#define JOIN_PIN_PREFIX   "sha256:"
#define JOIN_PIN_TEXT_MAX (sizeof(JOIN_PIN_PREFIX) - 1 + 64 + 1)

/* The pin of ca into buf. PK_EMALFORMED if its public key does not encode. */
int join_ca_pin(X509 *ca, char buf[static JOIN_PIN_TEXT_MAX]);
/* The pin of the keystore's cluster CA (KEYSTORE_CLUSTER_CA); -ENOENT with a message when the keystore
 * has none yet. */
int join_ca_pin_keystore(const Keystore *k, char buf[static JOIN_PIN_TEXT_MAX], char **ret_error);

/* "sha256:" and 64 hex digits (either case, as kubeadm accepts). */
bool join_pin_valid(const char *pin);

/* 0 when ca has pin; -EINVAL (a malformed pin) or -EKEYREJECTED (another CA: the message gives both pins
 * and the CA's subject) with a message. */
int join_ca_pin_check(X509 *ca, const char *pin, char **ret_error);
