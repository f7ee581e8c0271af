/* SPDX-License-Identifier: Apache-2.0 */
/* A pass's certificate plan: pure, from the settings, the node and the observation. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "certs/certs-internal.h"
#include "model/pki-layout.h"
#include "pki/pki-kubeconfig.h"
#include "shared/crypto.h"

static void leaf_plan_done(CertsLeafPlan *p) {
        free(p->cn);
        strv_free(p->dns);
        strv_free(p->ips);
}

void certs_plan_done(CertsPlan *p) {
        free(p->note);
        strv_free(p->create);
        free(p->etcd_ready);
        for (size_t i = 0; p->leaves && i < p->n_leaves; i++)
                leaf_plan_done(&p->leaves[i]);
        free(p->leaves);
        for (size_t i = 0; p->files && i < p->n_files; i++)
                if (p->files[i].text)
                        erase_and_free(p->files[i].text, p->files[i].len);
        free(p->files);
        *p = (CertsPlan){};
}

mode_t certs_file_mode(CertsFileKind kind) {
        return kind == CERTS_FILE_CA || kind == CERTS_FILE_SA_PUBLIC ? 0644 : 0600;
}

static int ca_bundle(char *const *cas, const Keystore *k, char **ret, size_t *ret_len) {
        _cleanup_free_ char *all = strdup("");
        if (!all)
                return -ENOMEM;
        for (size_t i = 0; cas && cas[i]; i++) {
                const KeystoreEntry *e = keystore_find(k, cas[i]);
                _cleanup_free_ char *pem = NULL;
                size_t len = 0;
                if (!e || !e->cert)
                        return -ENOENT;
                int r = pki_cert_to_pem(e->cert, &pem, &len);
                if (r < 0)
                        return r;
                if (strextend_printf(&all, "%s", pem) < 0)
                        return -ENOMEM;
        }
        *ret_len = strlen(all);
        *ret = TAKE_PTR(all);
        return 0;
}

static int kubeconfig_text(const CertsFileSlot *f, char **ret, size_t *ret_len) {
        _cleanup_free_ char *dir = strndup(f->path, (size_t)(strrchr(f->path, '/') - f->path));
        if (!dir)
                return -ENOMEM;
        _cleanup_free_ char *ca = strjoin(dir, "/", PKI_CA_FILE),
                            *crt = strjoin(dir, "/", PKI_CLIENT_PAIR PKI_CERT_SUFFIX),
                            *key = strjoin(dir, "/", PKI_CLIENT_PAIR PKI_KEY_SUFFIX);
        if (!ca || !crt || !key)
                return -ENOMEM;
        PkiKubeconfig kc = {
                .cluster = "kubernetes",
                .server = f->server,
                .user = f->user,
                .ca_file = ca,
                .cert_file = crt,
                .key_file = key,
        };
        return pki_kubeconfig_render(&kc, ret, ret_len, NULL);
}

int certs_file_text(const CertsFileSlot *f, const Keystore *k, char **ret, size_t *ret_len,
                    bool *ret_secret) {
        const KeystoreEntry *sa = keystore_find(k, KEYSTORE_SERVICE_ACCOUNT);
        *ret_secret = f->kind == CERTS_FILE_SA_KEY;
        switch (f->kind) {
        case CERTS_FILE_CA:
                return ca_bundle(f->cas, k, ret, ret_len);
        case CERTS_FILE_SA_PUBLIC: {
                if (!sa || !sa->key)
                        return -ENOENT;
                int r = pki_key_public_to_pem(sa->key, ret);
                if (r >= 0)
                        *ret_len = strlen(*ret);
                return r;
        }
        case CERTS_FILE_SA_KEY:
                if (!sa || !sa->key)
                        return -ENOENT;
                return pki_key_to_pem(sa->key, ret, ret_len);
        case CERTS_FILE_KUBECONFIG:
                return kubeconfig_text(f, ret, ret_len);
        default:
                return -EINVAL;
        }
}

/* The member this node holds in the slot's etcd cluster, or NULL. */
static const char *held_member(const CertsSettings *s, const CertsNode *node, const char *cluster) {
        for (size_t i = 0; cluster && s->etcd_clusters && s->etcd_clusters[i]; i++)
                if (streq(s->etcd_clusters[i], cluster))
                        return node->held_members ? node->held_members[i] : NULL;
        return NULL;
}

/* The serial of a leaf issued in this pass: HMAC(nonce, "DIR/NAME"), so every leaf's differs and none is
 * predictable from outside. */
static int plan_serial(const CertsObservation *o, const CertsLeafSlot *slot, CertsLeafPlan *p) {
        uint8_t mac[CRYPTO_HMAC_MAX];
        _cleanup_free_ char *id = strjoin(slot->dir, "/", slot->name);
        if (!id)
                return -ENOMEM;
        int r = crypto_hmac(CRYPTO_HASH_SHA256, o->nonce, sizeof(o->nonce), id, strlen(id), mac);
        if (r < 0)
                return r;
        memcpy(p->serial, mac, PKI_SERIAL_BYTES);
        pki_serial_bytes_text(p->serial, p->serial_text);
        return 0;
}

static int plan_leaf(const CertsSettings *s, const CertsObservation *o, const CertsNode *node, size_t i,
                     usec_t now, CertsLeafPlan *p) {
        const CertsLeafSlot *slot = &o->layout.leaves[i];
        const PkiLeafState *have = &o->leaves[i];
        bool present = have->status != PKI_LEAF_MISSING;
        if (slot->kind == CERTS_KUBELET && !node->name) { /* the node's name is not known this pass */
                p->action = CERTS_KEEP;
                snprintf(p->serial_text, sizeof(p->serial_text), "%s", strempty(have->serial));
                return 0;
        }
        if (slot->etcd_cluster) {
                const char *member = held_member(s, node, slot->etcd_cluster);
                if (!node->held_known) { /* nothing known of the members: leave their pairs alone */
                        p->action = CERTS_KEEP;
                        snprintf(p->serial_text, sizeof(p->serial_text), "%s", strempty(have->serial));
                        return 0;
                }
                if (!member) {
                        p->action = present ? CERTS_REMOVE : CERTS_ABSENT;
                        return 0;
                }
                int r = certs_leaf_request(s, slot, member, node, p);
                if (r < 0)
                        return r;
        } else {
                int r = certs_leaf_request(s, slot, NULL, node, p);
                if (r < 0)
                        return r;
        }
        p->reason = pki_plan_leaf(have, p->dns, p->ips, now);
        if (p->reason == PKI_RENEW_NONE) {
                p->action = CERTS_KEEP;
                snprintf(p->serial_text, sizeof(p->serial_text), "%s", strempty(have->serial));
                return 0;
        }
        p->action = CERTS_ISSUE;
        return plan_serial(o, slot, p);
}

static bool file_of_held_cluster(const CertsSettings *s, const CertsNode *node, const CertsFileSlot *f) {
        return !f->etcd_cluster || !node->held_known || held_member(s, node, f->etcd_cluster);
}

static int plan_files(const CertsSettings *s, const CertsObservation *o, const CertsNode *node,
                      CertsPlan *plan) {
        plan->files = new0(CertsFilePlan, o->layout.n_files + 1);
        if (!plan->files)
                return -ENOMEM;
        plan->n_files = o->layout.n_files;
        for (size_t i = 0; i < o->layout.n_files; i++) {
                CertsFilePlan *f = &plan->files[i];
                bool secret;
                if (!file_of_held_cluster(s, node, &o->layout.files[i])) {
                        f->remove = o->file_texts[i] != NULL;
                        continue;
                }
                int r = certs_file_text(&o->layout.files[i], o->keystore, &f->text, &f->len, &secret);
                if (r == -ENOENT) { /* an entry to create first: written after it */
                        f->write = true;
                        continue;
                }
                if (r < 0)
                        return r;
                f->write = !o->file_texts[i] || o->file_lens[i] != f->len ||
                           memcmp(o->file_texts[i], f->text, f->len) != 0;
        }
        return 0;
}

/* SHA-256 over "DIR/NAME=SERIAL\n" of the leaves the control-plane components read once, in layout order:
 * the value of their manifests' annotation, so that a renewed certificate changes the manifest and kubelet
 * restarts the component. */
static int plan_digest_of(const CertsObservation *o, const CertsPlan *plan, bool observed, char *digest) {
        _cleanup_free_ char *text = strdup("");
        uint8_t md[EVP_MAX_MD_SIZE];
        unsigned md_len = 0;
        static const char hex[] = "0123456789abcdef";
        if (!text)
                return -ENOMEM;
        for (size_t i = 0; i < o->layout.n_leaves; i++) {
                const CertsLeafSlot *l = &o->layout.leaves[i];
                const char *serial = observed ? strempty(o->leaves[i].serial) : plan->leaves[i].serial_text;
                if (l->restarts_components &&
                    strextend_printf(&text, "%s/%s=%s\n", l->dir, l->name, serial) < 0)
                        return -ENOMEM;
        }
        if (EVP_Digest(text, strlen(text), md, &md_len, EVP_sha256(), NULL) != 1)
                return -EIO;
        for (size_t i = 0; i < CERTS_DIGEST_LEN / 2; i++) {
                digest[2 * i] = hex[md[i] >> 4];
                digest[2 * i + 1] = hex[md[i] & 15];
        }
        digest[CERTS_DIGEST_LEN] = 0;
        return 0;
}

static int plan_digest(const CertsObservation *o, CertsPlan *plan) {
        return plan_digest_of(o, plan, false, plan->digest);
}

static bool leaf_of_cluster(const CertsLeafSlot *slot, const char *cluster) {
        return slot->etcd_cluster && streq(slot->etcd_cluster, cluster);
}

/* Per etcd cluster: whether its member's pairs are there once the plan is applied. */
static int plan_etcd_ready(const CertsSettings *s, const CertsObservation *o, CertsPlan *plan) {
        size_t n = strv_length(s->etcd_clusters);
        plan->etcd_ready = new0(bool, n + 1);
        if (!plan->etcd_ready)
                return -ENOMEM;
        for (size_t c = 0; c < n; c++) {
                bool ready = true;
                for (size_t i = 0; i < o->layout.n_leaves; i++)
                        if (leaf_of_cluster(&o->layout.leaves[i], s->etcd_clusters[c]) &&
                            plan->leaves[i].action != CERTS_KEEP && plan->leaves[i].action != CERTS_ISSUE)
                                ready = false;
                plan->etcd_ready[c] = ready && plan->status >= 0;
        }
        return 0;
}

static int plan_unmanaged_or_failed(const CertsSettings *s, const CertsObservation *o, const CertsNode *node,
                                    CertsPlan *plan) {
        /* Without a store nothing is planned; with an unreadable one, the etcd members whose pairs are not
         * already there must wait. */
        plan->status = o->error;
        if (o->error < 0 && !(plan->note = strdup(strna(o->message))))
                return -ENOMEM;
        /* the certificates stay as they are: so do the manifests naming them */
        if (o->managed && o->leaves) {
                int r = plan_digest_of(o, plan, true, plan->digest);
                if (r < 0)
                        return r;
        }
        size_t n = strv_length(s->etcd_clusters);
        plan->etcd_ready = new0(bool, n + 1);
        if (!plan->etcd_ready)
                return -ENOMEM;
        for (size_t c = 0; c < n; c++) {
                bool ready = true;
                if (node->held_known && (!node->held_members || !node->held_members[c]))
                        goto done; /* nothing held: nothing waits */
                for (size_t i = 0; o->error < 0 && i < o->layout.n_leaves; i++)
                        if (leaf_of_cluster(&o->layout.leaves[i], s->etcd_clusters[c]) &&
                            (!o->leaves || o->leaves[i].status != PKI_LEAF_PRESENT))
                                ready = false;
done:
                plan->etcd_ready[c] = ready;
        }
        return 0;
}

static int plan_create(const CertsObservation *o, CertsPlan *plan) {
        plan->create = strv_new(NULL);
        if (!plan->create)
                return -ENOMEM;
        for (size_t i = 0; i < keystore_size(o->keystore); i++) {
                const KeystoreEntry *e = keystore_entry(o->keystore, i);
                if (!e->key && strv_extend(&plan->create, e->name) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int plan_managed(const CertsSettings *s, const CertsObservation *o, const CertsNode *node, usec_t now,
                        CertsPlan *plan) {
        int r = plan_create(o, plan);
        if (r < 0)
                return r;
        plan->leaves = new0(CertsLeafPlan, o->layout.n_leaves + 1);
        if (!plan->leaves)
                return -ENOMEM;
        plan->n_leaves = o->layout.n_leaves;
        for (size_t i = 0; i < o->layout.n_leaves; i++) {
                r = plan_leaf(s, o, node, i, now, &plan->leaves[i]);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) { /* a name that makes no certificate: the spec's, reported */
                        plan->status = r;
                        plan->note =
                            strprintf("cannot make the %s certificate: %s",
                                      certs_leaf_kind_to_string(o->layout.leaves[i].kind), pk_strerror(r));
                        return plan->note ? 0 : -ENOMEM;
                }
        }
        r = plan_files(s, o, node, plan);
        if (r >= 0)
                r = plan_digest(o, plan);
        if (r >= 0)
                r = plan_etcd_ready(s, o, plan);
        return r;
}

int certs_plan(const CertsSettings *s, const CertsObservation *o, const CertsNode *node, usec_t now,
               CertsPlan *ret) {
        CertsPlan plan = { .managed = o->managed };
        int r;
        if (!o->managed || o->error < 0)
                r = plan_unmanaged_or_failed(s, o, node, &plan);
        else {
                r = plan_managed(s, o, node, now, &plan);
                if (r >= 0 && plan.status < 0) { /* could not plan: drop the partial plan's actions */
                        certs_plan_done(&plan);
                        plan = (CertsPlan){ .managed = true };
                        CertsObservation failed = *o;
                        failed.error = -EINVAL;
                        r = plan_unmanaged_or_failed(s, &failed, node, &plan);
                }
        }
        if (r < 0) {
                certs_plan_done(&plan);
                return r;
        }
        *ret = plan;
        return 0;
}

int certs_plan_force_renewal(const CertsObservation *o, CertsPlan *p) {
        if (!p->managed || p->status < 0)
                return 0;
        for (size_t i = 0; i < p->n_leaves; i++) {
                CertsLeafPlan *l = &p->leaves[i];
                if (l->action != CERTS_KEEP || !l->cn) /* a member's pair while nothing is known: left */
                        continue;
                l->action = CERTS_ISSUE;
                l->reason = PKI_RENEW_FORCED;
                int r = plan_serial(o, &o->layout.leaves[i], l);
                if (r < 0)
                        return r;
        }
        return plan_digest(o, p);
}

size_t certs_plan_n_actions(const CertsObservation *o, const CertsPlan *p) {
        size_t n = strv_length(p->create);
        for (size_t i = 0; p->leaves && i < o->layout.n_leaves; i++)
                n += p->leaves[i].action == CERTS_ISSUE || p->leaves[i].action == CERTS_REMOVE;
        for (size_t i = 0; p->files && i < o->layout.n_files; i++)
                n += p->files[i].write || p->files[i].remove;
        return n;
}

void certs_plan_print(const CertsObservation *o, const CertsPlan *p, FILE *out) {
        if (!p->managed)
                return;
        if (p->status < 0) {
                fprintf(out, "certificates: cannot plan: %s\n", strna(p->note));
                return;
        }
        STRV_FOREACH (c, p->create)
                fprintf(out, "create-ca %s\n", *c);
        for (size_t i = 0; i < o->layout.n_leaves; i++) {
                const CertsLeafSlot *l = &o->layout.leaves[i];
                if (p->leaves[i].action == CERTS_ISSUE)
                        fprintf(out, "issue-certificate %s/%s.crt (%s)\n", l->dir, l->name,
                                pki_renew_reason_to_string(p->leaves[i].reason));
                else if (p->leaves[i].action == CERTS_REMOVE)
                        fprintf(out, "remove-certificate %s/%s.crt\n", l->dir, l->name);
        }
        for (size_t i = 0; i < o->layout.n_files; i++)
                if (p->files[i].write || p->files[i].remove)
                        fprintf(out, "%s %s\n", p->files[i].write ? "write-file" : "remove-file",
                                o->layout.files[i].path);
        if (certs_plan_n_actions(o, p) == 0)
                fprintf(out, "certificates: nothing to do\n");
}
