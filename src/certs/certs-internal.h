/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared by the certs room's files only. */

#include "certs/certs.h"

#define KUBE_APISERVER_CN "kube-apiserver"

/* The etcd cluster whose client CA signs kube-apiserver's etcd client certificate: "main" if there is one,
 * else the first; NULL without etcd clusters. */
const char *certs_apiserver_etcd_cluster(const CertsSettings *s);

/* Fills p's subject, SANs and usage for slot (member: the etcd member for etcd slots). */
int certs_leaf_request(const CertsSettings *s, const CertsLeafSlot *slot, const char *member,
                       const CertsNode *node, CertsLeafPlan *p);

/* The bytes of a file of the layout from the keystore: -ENOENT if an entry it needs is absent. A secret's
 * text (the service-account key) is marked: the caller erases it. */
int certs_file_text(const CertsFileSlot *f, const Keystore *k, char **ret, size_t *ret_len,
                    bool *ret_secret);

/* The keystore settings of the pass's. */
KeystoreSpec certs_keystore_spec(const CertsSettings *s);

/* The file's mode. */
mode_t certs_file_mode(CertsFileKind kind);

/* The digest of the leaves that restart components: of the observed serials (observed; plan unused, may be
 * NULL) or of the plan's. digest has room for CERTS_DIGEST_LEN + 1. */
int certs_digest_of(const CertsObservation *o, const CertsPlan *plan, bool observed, char *digest);
