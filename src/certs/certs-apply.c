/* SPDX-License-Identifier: Apache-2.0 */
/* Applying a certificate plan: the keystore's absent entries, then the leaves, then the files. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "certs/certs-internal.h"
#include "pki/pki-files.h"
#include "shared/openssl-util.h"

void certs_result_done(CertsResult *r) {
        strv_free(r->errors);
        free(r->etcd_failed);
        *r = (CertsResult){};
}

/* "cannot VERB 'WHAT': DETAIL" */
static int record_error(CertsResult *res, int error, const char *verb, const char *what,
                        const char *detail) {
        _cleanup_free_ char *m =
            what ? strprintf("cannot %s '%s': %s", verb, what, detail ?: pk_strerror(error))
                 : strprintf("cannot %s: %s", verb, detail ?: pk_strerror(error));
        if (!m || strv_push(&res->errors, m) < 0)
                return -ENOMEM;
        TAKE_PTR(m);
        return 0;
}

static void mark_etcd_failed(const CertsSettings *s, const char *cluster, CertsResult *res) {
        for (size_t c = 0; cluster && s->etcd_clusters && s->etcd_clusters[c]; c++)
                if (streq(s->etcd_clusters[c], cluster))
                        res->etcd_failed[c] = true;
}

/* Whether an action of cluster (NULL: the node's own) is part's. */
static bool in_part(const CertsSettings *s, const CertsPart *part, const char *cluster) {
        if (!part)
                return true;
        /* a cluster the settings no longer name goes with the node's own */
        for (size_t c = 0; cluster && s->etcd_clusters && s->etcd_clusters[c]; c++)
                if (streq(s->etcd_clusters[c], cluster))
                        return part->later[c] != part->first;
        return part->first;
}

/* Creates what the plan says is absent; on success o's keystore is the complete one. */
static int create_entries(const CertsSettings *s, Store *store, CertsObservation *o, usec_t now,
                          CertsResult *res) {
        _cleanup_free_ char *error = NULL;
        Keystore *k = NULL;
        KeystoreSpec spec = certs_keystore_spec(s);
        if (!store) /* the observation could not open it: o->error says so, and the plan holds no action */
                return record_error(res, -ENXIO, "create the keystore's entries", NULL, "no state store");
        int r = keystore_get_or_create(store, &spec, now, &k, &error);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return record_error(res, r, "create the keystore's entries", NULL, error);
        for (size_t i = 0; i < keystore_size(k); i++) {
                const KeystoreEntry *e = keystore_entry(k, i);
                res->changes += e->created;
                /* the stored entry is used, but another master may have taken its own: say so */
                if (e->store_warning &&
                    record_error(res, -EEXIST, "create", e->name, e->store_warning) < 0) {
                        keystore_free(k);
                        return -ENOMEM;
                }
        }
        keystore_free(o->keystore);
        o->keystore = k;
        return 1;
}

static int issue_leaf(const CertsSettings *s, const CertsObservation *o, const CertsLeafSlot *slot,
                      const CertsLeafPlan *p, usec_t now, char **ret_error) {
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *key = NULL;
        _cleanup_(X509_freep) X509 *cert = NULL;
        const KeystoreEntry *ca = keystore_find(o->keystore, slot->signer);
        if (!ca || !ca->cert || !ca->key)
                return -ENOENT;
        PkiCertRequest req = {
                .cn = p->cn,
                .org = p->org,
                .dns = p->dns,
                .ips = p->ips,
                .usage = p->usage,
                .lifetime = s->leaf_lifetime,
                .serial = p->serial,
        };
        int r = pki_key_generate(s->key_type, &key);
        if (r >= 0)
                r = pki_cert_issue(&req, key, ca->cert, ca->key, now, &cert, ret_error);
        if (r >= 0)
                r = pki_pair_save(slot->dir, slot->name, cert, key);
        return r;
}

static int apply_leaves(const CertsSettings *s, const CertsObservation *o, const CertsPlan *p,
                        const CertsPart *part, usec_t now, bool (*stop)(void), CertsResult *res) {
        for (size_t i = 0; i < o->layout.n_leaves; i++) {
                const CertsLeafSlot *slot = &o->layout.leaves[i];
                if (!in_part(s, part, slot->etcd_cluster))
                        continue;
                _cleanup_free_ char *error = NULL, *what = strjoin(slot->dir, "/", slot->name, ".crt");
                int r = 0;
                if (!what)
                        return -ENOMEM;
                if (stop && stop())
                        return -ECANCELED;
                if (p->leaves[i].action == CERTS_ISSUE)
                        r = issue_leaf(s, o, slot, &p->leaves[i], now, &error);
                else if (p->leaves[i].action == CERTS_REMOVE)
                        r = pki_pair_remove(slot->dir, slot->name);
                else
                        continue;
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        if (p->leaves[i].action == CERTS_ISSUE)
                                mark_etcd_failed(s, slot->etcd_cluster, res);
                        if (record_error(res, r, p->leaves[i].action == CERTS_ISSUE ? "issue" : "remove",
                                         what, error) < 0)
                                return -ENOMEM;
                        continue;
                }
                res->changes++;
        }
        return 0;
}

static int write_one_file(const CertsFileSlot *f, const CertsFilePlan *fp, const Keystore *k) {
        char *text = fp->text;
        size_t len = fp->len;
        bool secret = f->kind == CERTS_FILE_SA_KEY, computed = false;
        if (!text) {
                int r = certs_file_text(f, k, &text, &len, &secret);
                if (r < 0)
                        return r;
                computed = true;
        }
        _cleanup_free_ char *dir = strndup(f->path, (size_t)(strrchr(f->path, '/') - f->path));
        int r = dir ? mkdir_p(dir, 0700) : -ENOMEM;
        if (r >= 0)
                r = write_file_atomic(f->path, text, len, certs_file_mode(f->kind), true);
        if (computed)
                erase_and_free(text, len);
        return r;
}

static int apply_files(const CertsSettings *s, const CertsObservation *o, const CertsPlan *p,
                       const CertsPart *part, bool (*stop)(void), CertsResult *res) {
        for (size_t i = 0; i < o->layout.n_files; i++) {
                const CertsFileSlot *f = &o->layout.files[i];
                int r;
                if (!in_part(s, part, f->etcd_cluster))
                        continue;
                if (stop && stop())
                        return -ECANCELED;
                if (p->files[i].write)
                        r = write_one_file(f, &p->files[i], o->keystore);
                else if (p->files[i].remove)
                        r = unlink(f->path) < 0 && errno != ENOENT ? -errno : 0;
                else
                        continue;
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        mark_etcd_failed(s, f->etcd_cluster, res);
                        if (record_error(res, r, p->files[i].write ? "write" : "remove", f->path, NULL) < 0)
                                return -ENOMEM;
                        continue;
                }
                res->changes++;
        }
        return 0;
}

/* Whether every entry the plan creates is in o's keystore: created by this pass (an earlier part's call). */
static bool entries_created(const CertsObservation *o, const CertsPlan *p) {
        STRV_FOREACH (n, p->create) {
                const KeystoreEntry *e = keystore_find(o->keystore, *n);
                if (!e || !e->key) /* absent entries have no key */
                        return false;
        }
        return true;
}

/* Without the CAs nothing can be issued: every member of the part must wait. */
static void fail_part_clusters(const CertsSettings *s, const CertsPart *part, CertsResult *res) {
        for (size_t c = 0; s->etcd_clusters && s->etcd_clusters[c]; c++)
                if (in_part(s, part, s->etcd_clusters[c]))
                        res->etcd_failed[c] = true;
}

int certs_apply_part(const CertsSettings *s, Store *store, CertsObservation *o, const CertsPlan *p,
                     const CertsPart *part, usec_t now, bool (*stop)(void), CertsResult *ret) {
        CertsResult res = { .errors = strv_new(NULL),
                            .etcd_failed = new0(bool, strv_length(s->etcd_clusters) + 1) };
        int r = res.errors && res.etcd_failed ? 0 : -ENOMEM;
        if (r >= 0 && p->managed && p->status >= 0) {
                bool creates = strv_length(p->create) > 0;
                if (creates && (!part || part->first))
                        r = create_entries(s, store, o, now, &res);
                else if (creates)
                        r = entries_created(o, p) ? 1 : 0;
                if (r == 0 && creates)
                        fail_part_clusters(s, part, &res);
                else if (r >= 0) {
                        r = apply_leaves(s, o, p, part, now, stop, &res);
                        if (r >= 0)
                                r = apply_files(s, o, p, part, stop, &res);
                }
        }
        if (r < 0) {
                certs_result_done(&res);
                return r;
        }
        *ret = res;
        return 0;
}

int certs_apply(const CertsSettings *s, Store *store, CertsObservation *o, const CertsPlan *p, usec_t now,
                bool (*stop)(void), CertsResult *ret) {
        return certs_apply_part(s, store, o, p, NULL, now, stop, ret);
}

static int push_expiry(CertsExpiry **l, size_t *n, char *name, usec_t not_after) {
        if (!name)
                return -ENOMEM;
        CertsExpiry *m = reallocarray(*l, *n + 1, sizeof(**l));
        if (!m) {
                free(name);
                return -ENOMEM;
        }
        *l = m;
        m[(*n)++] = (CertsExpiry){ .name = name, .not_after = not_after };
        return 0;
}

void certs_expiries_free(CertsExpiry *e, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(e[i].name);
        free(e);
}

int certs_expiries(const CertsSettings *s, const CertsObservation *o, const CertsPlan *p, usec_t now,
                   CertsExpiry **ret, size_t *ret_n) {
        CertsExpiry *l = NULL;
        size_t n = 0;
        int r = 0;
        for (size_t i = 0; r >= 0 && p->managed && p->status >= 0 && i < o->layout.n_leaves; i++) {
                const CertsLeafSlot *slot = &o->layout.leaves[i];
                usec_t until = p->leaves[i].action == CERTS_ISSUE
                                   ? now + (s->leaf_lifetime ?: PKI_LEAF_LIFETIME)
                               : p->leaves[i].action == CERTS_KEEP && o->leaves[i].status == PKI_LEAF_PRESENT
                                   ? o->leaves[i].not_after
                                   : 0;
                if (until > 0)
                        r = push_expiry(&l, &n, strjoin(slot->dir, "/", slot->name, ".crt"), until);
        }
        for (size_t i = 0; r >= 0 && i < keystore_size(o->keystore); i++) {
                const KeystoreEntry *e = keystore_entry(o->keystore, i);
                usec_t from, until;
                if (e->cert && pki_cert_validity(e->cert, &from, &until) >= 0)
                        r = push_expiry(&l, &n, strjoin("ca/", e->name), until);
        }
        if (r < 0) {
                certs_expiries_free(l, n);
                return r;
        }
        *ret = l;
        *ret_n = n;
        return 0;
}
