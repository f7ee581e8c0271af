/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A master's certificates in a pass (docs/pki.md, "A pass's certificates"), in the pass's three
 * steps:
 *   observe: open the state store and read the keystore (creating nothing), every certificate pair and file
 *            of the node's layout (model/pki-layout.h), and 32 random bytes for the serials to plan;
 *   plan:    pure: for this node's identity and the etcd members it holds after this pass's claims, every
 *            wanted leaf (subject, SANs, usage, signer) against what is on the node: issue, renew (with the
 *            reason), keep or remove; every file (the CA certificates, the service-account key, the
 *            kubeconfigs) to write; the keystore entries to create; and the serials the leaves will have,
 *            whose digest goes into the control-plane manifests so that a renewal restarts the components
 *            that read their files once;
 *   apply:   create the absent keystore entries (put-if-absent), issue, write, remove.
 * Library code: errors come back as messages; only daemon/ and cli/ log. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "pki/keystore.h"
#include "pki/pki-cert.h"
#include "pki/pki-files.h"
#include "pki/pki-key.h"
#include "pki/pki-plan.h"
#include "store/store.h"

#define CERTS_ANNOTATION     "protokube.io/certificates"
#define CERTS_DIGEST_LEN     16 /* hex characters of the annotation's value */
#define CERTS_NONCE_SIZE     32
#define CERTS_FILE_MAX       (256U * 1024U)
#define CERTS_EXPIRY_WARNING (30ULL * PKI_USEC_PER_DAY)

/* What the pass gives: the spec's settings for this cluster (the daemon maps the spec onto this). */
typedef struct CertsSettings {
        const char *store_url; /* NULL: protokube manages no certificates; nothing below is used */
        const char *pki_dir;
        PkiKeyType key_type; /* the CAs' and the leaves' keys */
        PkiKeyType sa_key_type;
        usec_t ca_lifetime, leaf_lifetime;
        const char *cluster_name;      /* metadata.name */
        const char *internal_suffix;   /* dns.internalSuffix, no final dot */
        const char *cluster_domain;    /* clusterDNSDomain: cluster.local */
        const char *service_range;     /* kube-apiserver's serviceClusterIPRange: its first address */
        int apiserver_port;            /* kube-apiserver's securePort */
        char *const *etcd_clusters;    /* names, in the spec's order; the first "main" or else the first
                                          is the one kube-apiserver's etcd client certificate is for */
        bool kube_proxy;               /* kube-proxy runs on the master: its kubeconfig */
        bool self_hosted;              /* spec selfHosted: kubelet reaches the API through api.internal */
        PkiPairCache *pair_cache;      /* NULL, or the daemon's: pairs decoded in earlier passes */
        KeystoreCache *keystore_cache; /* NULL, or the daemon's: keystore objects decoded before */
} CertsSettings;

typedef enum CertsLeafKind {
        CERTS_ETCD_SERVER,
        CERTS_ETCD_PEER,
        CERTS_APISERVER,
        CERTS_APISERVER_ETCD_CLIENT,
        CERTS_APISERVER_KUBELET_CLIENT,
        CERTS_FRONT_PROXY_CLIENT,
        CERTS_CONTROLLER_MANAGER,
        CERTS_SCHEDULER,
        CERTS_PROXY,
        CERTS_ADMIN,
        CERTS_KUBELET,
        CERTS_PROTOKUBE,
        _CERTS_LEAF_KIND_MAX,
        _CERTS_LEAF_KIND_INVALID = -EINVAL,
} CertsLeafKind;

typedef enum CertsFileKind {
        CERTS_FILE_CA,         /* one or more CA certificates (PEM, concatenated), 0644 */
        CERTS_FILE_SA_PUBLIC,  /* the service-account public key, 0644 */
        CERTS_FILE_SA_KEY,     /* the service-account private key, 0600 */
        CERTS_FILE_KUBECONFIG, /* naming its directory's ca.crt and client pair, 0600 */
        _CERTS_FILE_KIND_MAX,
        _CERTS_FILE_KIND_INVALID = -EINVAL,
} CertsFileKind;

/* A pair of the layout. */
typedef struct CertsLeafSlot {
        CertsLeafKind kind;
        char *dir;                /* absolute */
        const char *name;         /* the pair's name: "server", "apiserver", "client" ... */
        char *signer;             /* the keystore entry that signs it */
        char *etcd_cluster;       /* etcd server and peer: the cluster; else NULL */
        bool restarts_components; /* its serial goes into the control-plane manifests' digest */
} CertsLeafSlot;

/* A plain file of the layout. */
typedef struct CertsFileSlot {
        CertsFileKind kind;
        char *path;
        char **cas;         /* CERTS_FILE_CA: the keystore entries, in order */
        const char *user;   /* CERTS_FILE_KUBECONFIG: the kubeconfig's user */
        char *server;       /*   and the API server's URL */
        char *etcd_cluster; /* the etcd dirs' files: the cluster (removed with the member) */
} CertsFileSlot;

typedef struct CertsLayout {
        CertsLeafSlot *leaves;
        size_t n_leaves;
        CertsFileSlot *files;
        size_t n_files;
} CertsLayout;

void certs_layout_done(CertsLayout *l);
/* Every pair and file of the node for settings (every etcd cluster's, held or not). -EINVAL for settings
 * that do not make names (a cluster name that is not a label). */
int certs_layout(const CertsSettings *s, CertsLayout *ret);

typedef struct CertsObservation {
        bool managed; /* settings name a store */
        int error;    /* < 0: the store could not be opened or read: no actions (message says why) */
        char *message;
        Keystore *keystore; /* absent entries have no key */
        CertsLayout layout;
        PkiLeafState *leaves; /* parallel to layout.leaves */
        char **file_texts;    /* parallel to layout.files: the file's bytes, NULL when absent */
        size_t *file_lens;
        uint8_t nonce[CERTS_NONCE_SIZE];
} CertsObservation;

void certs_observation_done(CertsObservation *o);
/* -ENOMEM only; a store that cannot be read is o->error (the node's pairs and files are still observed).
 * *store: the state store the keystore is read through, a session the caller owns: when NULL, it is opened
 * here into *store (left NULL when it cannot be). The observation itself holds data only. */
int certs_observe(const CertsSettings *s, Store **store, CertsObservation *ret);

/* What the node is: its addresses, and per etcd cluster (parallel to settings.etcd_clusters) the member it
 * holds after this pass's claims (NULL: none). held_known false: the volumes could not be observed, so
 * nothing is known of the members: their certificates are neither issued nor removed. */
typedef struct CertsNode {
        const char *name; /* the node's name (kubelet's client certificate); NULL: not known this pass */
        char *const *ips; /* NULL-terminated: internal then external, deduplicated by the caller or not */
        const char *const *held_members;
        bool held_known;
} CertsNode;

typedef enum CertsLeafAction {
        CERTS_KEEP,
        CERTS_ISSUE, /* missing, or renewed for a reason */
        CERTS_REMOVE,
        CERTS_ABSENT, /* not wanted and not there */
        _CERTS_LEAF_ACTION_MAX,
} CertsLeafAction;

typedef struct CertsLeafPlan {
        CertsLeafAction action;
        PkiRenewReason reason; /* CERTS_ISSUE: why */
        char *cn;
        const char *org;
        char **dns, **ips;
        PkiUsage usage;
        uint8_t serial[PKI_SERIAL_BYTES];      /* CERTS_ISSUE: the serial it will have */
        char serial_text[PKI_SERIAL_TEXT_MAX]; /* the serial after apply (kept: the observed one) */
} CertsLeafPlan;

typedef struct CertsFilePlan {
        bool write;  /* differs, absent, or (text NULL) depends on an entry still to create */
        bool remove; /* an etcd dir's file of a cluster this node holds no member of */
        char *text;  /* NULL if it cannot be known before apply */
        size_t len;  /* a secret's text is erased when the plan is freed */
} CertsFilePlan;

typedef struct CertsPlan {
        bool managed;
        int status; /* < 0: nothing can be planned (note says why) */
        char *note;
        char **create;         /* keystore entries to create */
        CertsLeafPlan *leaves; /* parallel to the observation's layout */
        size_t n_leaves;
        CertsFilePlan *files;
        size_t n_files;
        char digest[CERTS_DIGEST_LEN + 1]; /* "" when unmanaged */
        bool *etcd_ready; /* per settings etcd cluster: its member's pairs are there after the plan */
} CertsPlan;

void certs_plan_done(CertsPlan *p);
/* Pure. -ENOMEM only (and -EINVAL for a programming error); what cannot be planned is p->status. */
int certs_plan(const CertsSettings *s, const CertsObservation *o, const CertsNode *node, usec_t now,
               CertsPlan *ret);
/* `protokube pki renew`: every leaf the plan keeps is reissued (reason "forced") with a new serial, and the
 * digest follows. */
int certs_plan_force_renewal(const CertsObservation *o, CertsPlan *p);

/* One line per action: "create-ca NAME", "issue DIR/NAME.crt (reason)", "remove DIR/NAME.crt",
 * "write PATH". */
void certs_plan_print(const CertsObservation *o, const CertsPlan *p, FILE *out);
/* The digest (CERTS_ANNOTATION's value) of the pairs now on the node, from their serials, without opening
 * the store: what the manifests of a pass that renews nothing carry (`render --self-hosted`). -EINVAL
 * without a store URL (protokube manages no certificates, the manifests carry no digest). */
int certs_node_digest(const CertsSettings *s, char ret[static CERTS_DIGEST_LEN + 1]);
/* Actions in the plan. */
size_t certs_plan_n_actions(const CertsObservation *o, const CertsPlan *p);

typedef struct CertsResult {
        unsigned changes;
        char **errors;     /* one message per failed action */
        bool *etcd_failed; /* per settings etcd cluster: a pair of its member could not be issued */
} CertsResult;

void certs_result_done(CertsResult *r);
/* Applies the plan. A failing action is recorded and the others go on. stop: checked between actions
 * (true: return -ECANCELED). -ENOMEM only otherwise. */
int certs_apply(const CertsSettings *s, Store *store, CertsObservation *o, const CertsPlan *p, usec_t now,
                bool (*stop)(void), CertsResult *ret);

/* A plan applied in two calls, split by later (parallel to settings.etcd_clusters): the first call (first
 * true) takes the keystore's absent entries, every pair and file of no etcd cluster and those of the
 * clusters later does not mark; the second (first false) those of the clusters it marks. A pass that brings
 * up two members takes the one it starts first, then the other's pairs after that member's manifest is
 * written (each pair is four fsyncs: its time is the failover's). */
typedef struct CertsPart {
        bool first;
        const bool *later; /* never NULL */
} CertsPart;

/* certs_apply() of part's actions only (NULL: all). The second call: when the keystore's entries could not
 * be created in the first, its clusters fail as they did there (without a message again). */
int certs_apply_part(const CertsSettings *s, Store *store, CertsObservation *o, const CertsPlan *p,
                     const CertsPart *part, usec_t now, bool (*stop)(void), CertsResult *ret);

/* The expiry of every certificate a plan leaves on the node and of the keystore's CAs, for /metrics and
 * /healthz: "DIR/NAME.crt" or "ca/NAME", and notAfter. A leaf issued in this pass: now + its lifetime. */
typedef struct CertsExpiry {
        char *name;
        usec_t not_after;
} CertsExpiry;
int certs_expiries(const CertsSettings *s, const CertsObservation *o, const CertsPlan *p, usec_t now,
                   CertsExpiry **ret, size_t *ret_n);
void certs_expiries_free(CertsExpiry *e, size_t n);

const char *certs_leaf_kind_to_string(CertsLeafKind k);
