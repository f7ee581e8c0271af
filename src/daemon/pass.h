/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* One pass of protokube, in one direction (docs/ARCHITECTURE.md):
 *   observe: once per pass: the provider's volumes and this node's identity, per held volume its device,
 *            mount, etcd manifest and link; the records DNS serves for the names we own; the control-plane
 *            manifests on disk;
 *   plan:    a pure function of (spec, node settings, observation) returning every action as data: volume
 *            steps, the DNS changes (computed from the cluster view with this pass's claims folded in),
 *            the etcd manifests of the selected members and the control-plane manifests to write;
 *   apply:   volume steps, then DNS, then the certificates, then the etcd manifests, then the control
 *            plane (an etcd member's certificates are in place before its manifest is written). DNS goes
 * before the etcd manifests so that when kubelet starts etcd its own name already points here
 *            (docs/etcd-dns.md). A failing part is reported and the pass goes on with the others: a DNS
 *            outage must not stop etcd's manifest from being kept, and a bad volume must not stop the
 *            records. A lost claim (another node was first) observes and plans again, bounded.
 * `protokube plan` prints the plan of the same observation and applies nothing. */

#include <stdbool.h>
#include <stdio.h>

#include "backup/backup-snapshot.h"
#include "backup/backup.h"
#include "certs/certs.h"
#include "components/render.h"
#include "daemon/report.h"
#include "dns/dns-provider.h"
#include "etcdapi/etcd-json.h"
#include "etcdapi/member-plan.h"
#include "pivot/pivot.h"
#include "spec/spec.h"
#include "volumes/volumes.h"

typedef struct NodeSettings {
        const char *node_name, *zone, *internal_ip, *external_ip; /* NULL = detect */
        const char *machine_id_file;                              /* NULL = /etc/machine-id */
        const char *manifest_dir;
        const char *mount_root;
        const char *pool_dir;
        const char *state_dir; /* protokube's own state (the pivot's record); NULL: STATE_DIR_DEFAULT */
} NodeSettings;

/* What the last listing of an etcd cluster's backups found, kept across passes: an idle pass does not list
 * the store's backups again while nothing can have changed (pass_backup_list_due). */
typedef struct PassBackupSeen {
        char cluster[64];
        usec_t slot;      /* CLOCK_REALTIME start of the slot the listing was made in */
        usec_t listed_at; /* CLOCK_MONOTONIC of the listing */
        PassBackupInfo info;
} PassBackupSeen;

/* Relist a cluster's backups this long after a listing that did not show the current slot's backup yet
 * (another master may take it): the report follows another master's backup within this. */
#define PASS_BACKUP_RELIST_USEC (60ULL * USEC_PER_SEC)

typedef struct Pass {
        char *spec_path;
        ClusterSpec *spec;
        char **etcd_clusters;
        VolumeProvider *provider;
        NodeSettings node; /* node.mount_root points at mount_root */
        char *mount_root;  /* canonical (path_canonicalize), resolved once: mountinfo is compared with it */
        VolumesPassConfig cfg; /* the volume steps' settings for this node; report fields set per pass */
        CertsSettings certs;   /* the spec's certificate settings (point into spec) */
        bool force_renew;      /* `pki renew`: every certificate is reissued in the next pass */
        /* DNS changes accepted and still propagating (Route 53: until INSYNC), kept across passes and
         * asked about once per pass; a pass never waits for them */
        DnsPending dns_pending;
        PkiPairCache *pair_cache;      /* the node's certificate pairs as decoded in earlier passes */
        KeystoreCache *keystore_cache; /* the keystore's objects as decoded in earlier passes */
        unsigned n_backups_seen;
        PassBackupSeen backups_seen[PASS_BACKUPS_MAX];
        /* this process's backup uploads name themselves by it in their claims (made at the first): a
         * later pass of the same process retries its own failed upload, nobody else takes it up */
        char backup_upload_id[BACKUP_UPLOAD_ID_LEN + 1];
        /* every master's apiserver pod has been seen Ready in the API since this process started: the
         * passes stop reading them (pass-api.c; docs/dns.md, "While the apiservers come up") */
        bool api_pods_all_seen;
} Pass;

/* Loads the spec and opens its volume provider. Spec errors are logged one per line (FILE:LINE:COL). */
int pass_new(const char *spec_path, const NodeSettings *node, Pass **ret);
Pass *pass_free(Pass *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(Pass *, pass_free)

/* SIGHUP: loads the spec again; on any error keeps the old one (and says so). */
int pass_reload(Pass *p);

/* Runs one pass (observe, plan, apply) and fills the report. */
void pass_run(Pass *p, PassReport *rep);

/* For the one-shot commands (`once`): waits, at most timeout, until the DNS changes the pass submitted are
 * served by all the provider's name servers (Route 53: INSYNC). 0 when none is left; PK_ETIMEOUT, or the
 * provider's error; logged. */
int pass_dns_wait(Pass *p, usec_t timeout);

/* A held, mounted etcd member's volume and, when its data is gone or a replacement of ours is under way,
 * what the other members say (docs/etcd-members.md). */
typedef struct PassEtcdMember {
        bool observed; /* the volume is held, mounted and eligible: its data was looked at */
        EtcdDataState data;
        bool change_pending; /* our marker on the volume */
        unsigned promote_attempts;
        bool queried;      /* the other members were asked */
        int cluster_error; /* < 0: no other member answered the member list (cluster_message) */
        char *cluster_message;
        EtcdMemberList members;
        size_t n_others, n_others_healthy;
        char *lock_holder; /* another node's name, when it holds the membership lock */
        char *peer_url;
        char **tagged_peer_urls;
        char **other_endpoints; /* the other members' client URLs */
        int client_error;       /* the client could not be set up (no client certificate): why */
        char *client_message;
        bool restoring; /* a restore of its cluster is under way on the volume: no replacement, no backup */
        char *data_message; /* data == ETCD_DATA_UNREADABLE: what could not be read, and why */
} PassEtcdMember;

void pass_etcd_member_done(PassEtcdMember *m);

/* What one observation saw. */
typedef struct PassObservation {
        int volumes_error;     /* the provider could not be observed (logged): no volume steps, no DNS */
        char *volumes_message; /* the provider's words on it */
        VolumesObservation volumes;
        VolumesInput in; /* the volume planner's view of it (points into volumes and the pass) */
        DnsSession *dns; /* NULL: no DNS in the spec, or it could not be opened (dns_error) */
        int dns_error;   /* reading what DNS serves failed: the plan carries it to the report */
        char *dns_message;
        DnsRRsetList dns_served;
        bool dns_repair;              /* the store needs a write even if nothing differs */
        char **manifest_names;        /* control-plane manifests in the manifest dir (regular files) */
        char **manifest_texts;        /* parallel to manifest_names */
        CertsObservation certs;       /* the state store's keystore and the node's certificates */
        usec_t realtime;              /* when it was observed: "now" for the certificates' plan */
        PassEtcdMember *etcd_members; /* parallel to in.volumes */
        PivotRecord pivot_record;     /* the pivot's local record: which bootstrap manifests stay away */
        /* The apiservers asked for the API's names (pass-api.c). api_gated: this node can ask (DNS, a
         * kubeconfig of its own); false: no master is left out of the names. */
        bool api_gated;
        DnsApiReadiness api;
        char **api_why; /* parallel to api.probed: "ADDRESS: why" it is not ready, "" when it is */
} PassObservation;

void pass_observation_done(PassObservation *o);
/* Logs what failed; -ENOMEM only: a provider that cannot be observed is volumes_error, and the rest (the
 * control-plane manifests) is still observed and planned. Fills *ret in
 * place (its input points into it): it must not be moved until pass_observation_done(). */
int pass_observe(Pass *p, PassObservation *ret);

typedef struct PassPlan {
        VolumeObserved *observed; /* the observation's, with manifest_current set from the rendered text */
        VolumesInput in;          /* in.observed = observed */
        VolumesPlan volumes;
        char **etcd_texts;       /* per volume selection: the etcd manifest for its member (NULL: none) */
        char *etcd_render_error; /* rendering an etcd manifest failed: why */
        ClusterView *view;       /* the masters and members after this pass's claims */
        int dns_status;          /* 0; PK_EWAITING (nothing to publish yet); < 0 DNS cannot be planned */
        char *dns_note;          /* why, when dns_status != 0 */
        DnsRRsetList dns_desired;
        DnsRRsetList dns_changes; /* the RRsets to replace, in one batch */
        bool dns_send;            /* changes, or a repair the store needs */
        char **api_withheld;      /* masters the API's names leave out this pass (dns_api_withheld()) */
        char *api_note;           /* who and why, for the log, the report and `plan` */
        RenderedManifests control_plane;
        bool *control_plane_write; /* parallel to control_plane.items: differs from what is on disk */
        const char *render_failed; /* the control plane could not be rendered: which component */
        int render_error;
        CertsPlan certs; /* the node's certificates for the members held after this pass's claims */
        const char **held_members; /* per etcd cluster (parallel to Pass.etcd_clusters): the member this
                                      node holds after the plan, NULL: none (points into volumes) */
        MemberPlan *member_plans;  /* parallel to in.volumes: the decision for each observed member */
} PassPlan;

void pass_plan_done(PassPlan *p);
/* Pure: spec, node settings and observation in, every action out. -ENOMEM only; what cannot be planned
 * (a component that does not render, DNS with nothing to publish) is carried in the plan. */
int pass_plan(const Pass *pass, const PassObservation *o, PassPlan *ret);
/* For `plan` and `volumes`: observe (a provider that cannot be observed is an error here) and plan. Logs
 * what failed; on success the caller frees both. */
int pass_observe_and_plan(Pass *p, PassObservation *o, PassPlan *plan);
/* Prints the plan: the volume selections and steps, "dns-replace NAME TYPE ADDRESSES", "write-manifest
 * PATH", one line each. */
void pass_plan_print(const Pass *pass, const PassObservation *o, const PassPlan *plan, FILE *out);

/* kube-apiserver's port (the spec's securePort, 443 by default). */
static inline unsigned pass_apiserver_port(const ClusterSpec *spec) {
        return spec->kube_apiserver.secure_port.set ? (unsigned)spec->kube_apiserver.secure_port.value : 443;
}

/* A master joins the API's names when its apiserver serves (pass-api.c, docs/dns.md). After the DNS read,
 * with the view as observed: asks the /readyz of the unlisted masters (and this master's own, when another
 * is unlisted) into o->api; with more than one master and one listed, reads the masters' pivot turns (while
 * the pivot is under way) and their apiserver pods (until all have been seen Ready, and when an unlisted one
 * answered). In the plan, with the plan's view: plan->api_withheld and api_note. -ENOMEM
 * only. */
int pass_api_observe(Pass *p, PassObservation *o, const ClusterView *view);
int pass_api_plan(const Pass *p, const PassObservation *o, PassPlan *plan);

/* The spec's certificate settings (pointing into spec and etcd_clusters, the etcd clusters' names in the
 * spec's order), as a pass gives them to certs/. */
CertsSettings pass_certs_settings(const ClusterSpec *spec, char *const *etcd_clusters);

/* The etcd member of volume i (pass-etcd.c): observe it (its data, our marker and, when needed, the other
 * members), decide (pure), and, in apply, carry out the decision of each selection: the etcd texts to write
 * are adjusted in place (texts[k] set to NULL: held back; to a text in *owned: rendered anew). */
int pass_etcd_observe(Pass *p, PassObservation *o);
int pass_etcd_observe_member(const Pass *p, const VolumesInput *in, const ClusterView *view, size_t i,
                             PassEtcdMember *ret);
void pass_etcd_decide(const PassEtcdMember *m, MemberPlan *ret);
/* Of the selections where only[k] is true (NULL: every one). */
int pass_etcd_apply(Pass *p, PassObservation *o, const PassPlan *plan, const bool *only, char **texts,
                    char ***owned, PassReport *rep);
void pass_etcd_plan_print(const Pass *pass, const PassObservation *o, const PassPlan *plan, FILE *out);
/* The etcd manifest of volume i's member (pass-plan.c). */
int pass_render_member(const Pass *pass, const VolumeEligibility *e, const char *id, bool existing,
                       char **ret);

/* A whole cluster's restore (pass-restore.c, docs/etcd-restore.md): after the certificates, before the
 * membership step, each held member's next restore steps; texts[k] adjusted in place like
 * pass_etcd_apply(), and o->etcd_members[i].restoring set for a member whose restore is under way; of the
 * selections where only[k] is true (NULL: every one). */
int pass_restore_apply(Pass *p, PassObservation *o, const PassPlan *plan, const bool *only, char **texts,
                       char ***owned, PassReport *rep);
/* 1 when a restore of cluster is under way on the volume at mount, 0 when not (no restore record, or a
 * finished one), < 0 when its record cannot be read or parsed (*ret_error: the path and why). */
int pass_restore_in_progress(const char *mount, const char *cluster, char **ret_error);

/* The pass's state store: the one the certificates' observation opened when it could (opening asks the
 * store once, to name a missing bucket there: one open per pass, not one per stage), else one opened now
 * into *owned (the caller frees it). NULL with an error message when it cannot be opened. */
Store *pass_store(const Pass *p, const PassObservation *o, Store **owned, char **ret_error);

/* etcd backups (pass-backup.c): after the manifests, the slot's backup of each cluster whose member this
 * node holds and leads, the retention, and the newest backup of each into the report. */
void pass_backups_run(Pass *p, const PassObservation *o, const PassPlan *plan, PassReport *rep);
/* Whether a cluster's backups must be listed again (seen: the last listing, NULL: none) in the slot starting
 * at slot, at now_mono: a new slot, or this slot's backup not seen yet and the listing older than
 * PASS_BACKUP_RELIST_USEC. A backup this node takes is listed at once (the caller's). */
bool pass_backup_list_due(const PassBackupSeen *seen, usec_t slot, usec_t now_mono);
/* Where this node's member of e answers at address (NULL: 127.0.0.1): its endpoint, newly allocated, and
 * the client pair to use. */
int pass_backup_source(const ClusterSpec *spec, const EtcdClusterSpec *e, const char *address,
                       char **ret_endpoint, BackupEtcdSource *ret);
/* Takes a snapshot of src into an unnamed file in tmp_dir and stores it as the backup timestamp, upload
 * upload_id of node (backup_upload). */
int pass_backup_take(Store *s, const char *cluster, const char *timestamp, const char *node,
                     const char *upload_id, const BackupEtcdSource *src, const char *tmp_dir,
                     uint64_t *ret_size, char **ret_error);

/* Opens the volume provider of spec's cloud with the node's settings; logs what failed. */
int pass_open_volume_provider(const ClusterSpec *spec, const NodeSettings *node, VolumeProvider **ret);

/* The pivot (docs/pivot.md) of this node: settings from the spec and the node, the assets rendered with
 * the certificates' digest; deadlines from PROTOKUBE_PIVOT_READY_DEADLINE / _RESTORE_DEADLINE. n_masters:
 * the main etcd cluster's members. Logs what failed. */
typedef struct PassPivot PassPivot;
/* The pod templates' annotations: protokube.io/certificates with the digest of this node's certificates
 * (the static pods' annotation after a pass); list is NULL without a state store (no digest). */
typedef struct PassPodAnnotations {
        char digest[CERTS_DIGEST_LEN + 1];
        char *kv[3];       /* key, value, NULL */
        char *const *list; /* kv, or NULL */
} PassPodAnnotations;
/* The self-hosted assets of spec for n_masters, their pods annotated as *ret_annotations says (filled here;
 * may be NULL); logs what failed. */
int pass_render_self_hosted(const ClusterSpec *spec, size_t n_masters, SelfHostedAssets *ret,
                            PassPodAnnotations *ret_annotations);
int pass_pivot_open(const ClusterSpec *spec, const NodeSettings *node, const char *node_name,
                    const char *internal_ip, size_t n_masters, PassPivot **ret);
PassPivot *pass_pivot_free(PassPivot *pp);
DEFINE_TRIVIAL_CLEANUP_FUNC(PassPivot *, pass_pivot_free)
/* Observes and decides; with apply, takes the step. *ret: the decision (pivot_decision_done() it). Logs. */
int pass_pivot_step(PassPivot *pp, bool apply, PivotDecision *ret);
const PivotRecord *pass_pivot_record(const PassPivot *pp);
/* What the pass read of the API's names: whether they hold this master's address (the pivot's turn waits
 * for them to leave it out). Without it the pivot waits PIVOT_NAMES_SETTLE instead. */
void pass_pivot_set_names_listed(PassPivot *pp, bool listed);
/* The checkpoint's step of this pass (checkpoint_step(), docs/pivot.md): logs a change, reports the
 * checkpoint (active, its generation's time) and, while it is active, waits with the next pass soon. */
void pass_checkpoint_run(PassPivot *pp, PassReport *rep);
/* For `plan` with selfHosted: "pivot STEP: why", the pivot's next step; nothing without selfHosted. */
int pass_pivot_plan_print(Pass *p, const PassObservation *o, const PassPlan *plan, FILE *out);
