/* SPDX-License-Identifier: Apache-2.0 */
/* A pass's observation of the certificates: the store's keystore (read only) and the node's pairs and
 * files. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "certs/certs-internal.h"
#include "pki/pki-files.h"

void certs_observation_done(CertsObservation *o) {
        for (size_t i = 0; o->leaves && i < o->layout.n_leaves; i++)
                pki_leaf_state_done(&o->leaves[i]);
        free(o->leaves);
        for (size_t i = 0; o->file_texts && i < o->layout.n_files; i++)
                if (o->file_texts[i])
                        erase_and_free(o->file_texts[i], o->file_lens[i]);
        free(o->file_texts);
        free(o->file_lens);
        certs_layout_done(&o->layout);
        keystore_free(o->keystore);
        free(o->message);
        OPENSSL_cleanse(o->nonce, sizeof(o->nonce));
        *o = (CertsObservation){};
}

/* The keystore's settings from the pass's. */
KeystoreSpec certs_keystore_spec(const CertsSettings *s) {
        return (KeystoreSpec){
                .etcd_clusters = s->etcd_clusters,
                .ca_key_type = s->key_type,
                .sa_key_type = s->sa_key_type,
                .ca_lifetime = s->ca_lifetime,
        };
}

static int observe_store(const CertsSettings *s, Store **store, CertsObservation *o) {
        _cleanup_free_ char *error = NULL;
        KeystoreSpec ks = certs_keystore_spec(s);
        int r = *store ? 0 : store_open(s->store_url, store, &error);
        if (r >= 0)
                r = keystore_read_cached(*store, &ks, s->keystore_cache, &o->keystore, &error);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                o->error = r;
                o->message = error ? TAKE_PTR(error)
                                   : strprintf("state store '%s': %s", s->store_url, pk_strerror(r));
                if (!o->message)
                        return -ENOMEM;
        }
        return 0;
}

static X509 *signer_cert(const CertsObservation *o, const char *signer) {
        const KeystoreEntry *e = keystore_find(o->keystore, signer);
        return e ? e->cert : NULL;
}

static int observe_files(CertsObservation *o) {
        o->file_texts = new0(char *, o->layout.n_files + 1);
        o->file_lens = new0(size_t, o->layout.n_files + 1);
        if (!o->file_texts || !o->file_lens)
                return -ENOMEM;
        for (size_t i = 0; i < o->layout.n_files; i++) {
                /* the service-account key is a secret: read_file_secret erases its buffers */
                int r = read_full_file_secret(o->layout.files[i].path, CERTS_FILE_MAX, &o->file_texts[i],
                                              &o->file_lens[i]);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) /* absent or unreadable: written anew */
                        o->file_texts[i] = NULL;
        }
        return 0;
}

int certs_observe(const CertsSettings *s, Store **store, CertsObservation *ret) {
        CertsObservation *o = ret;
        *o = (CertsObservation){ .managed = s->store_url != NULL };
        if (!o->managed)
                return 0;
        int r = certs_layout(s, &o->layout);
        if (r == -EINVAL) {
                o->error = r;
                o->message = strdup("the spec's settings make no certificate names");
                return o->message ? 0 : -ENOMEM;
        }
        if (r >= 0)
                r = observe_store(s, store, o);
        if (r >= 0 && RAND_bytes(o->nonce, sizeof(o->nonce)) != 1)
                r = -EIO;
        if (r >= 0)
                o->leaves = new0(PkiLeafState, o->layout.n_leaves + 1);
        if (r >= 0 && !o->leaves)
                r = -ENOMEM;
        for (size_t i = 0; r >= 0 && i < o->layout.n_leaves; i++) {
                const CertsLeafSlot *l = &o->layout.leaves[i];
                r = pki_leaf_observe_cached(s->pair_cache, l->dir, l->name, signer_cert(o, l->signer),
                                            &o->leaves[i]);
        }
        if (r >= 0)
                r = observe_files(o);
        if (r < 0) {
                certs_observation_done(o);
                return r;
        }
        return 0;
}

int certs_node_digest(const CertsSettings *s, char ret[static CERTS_DIGEST_LEN + 1]) {
        /* Only the node's pairs: the store is not opened, and the CA is not checked (the digest does not
         * depend on it). */
        _cleanup_(certs_observation_done) CertsObservation o = { .managed = true };
        if (!s->store_url)
                return -EINVAL;
        int r = certs_layout(s, &o.layout);
        if (r < 0)
                return r;
        o.leaves = new0(PkiLeafState, o.layout.n_leaves + 1);
        if (!o.leaves)
                return -ENOMEM;
        for (size_t i = 0; i < o.layout.n_leaves; i++) {
                const CertsLeafSlot *l = &o.layout.leaves[i];
                if (!l->restarts_components)
                        continue;
                r = pki_leaf_observe(l->dir, l->name, NULL, &o.leaves[i]);
                if (r < 0)
                        return r;
        }
        return certs_digest_of(&o, NULL, true, ret);
}
