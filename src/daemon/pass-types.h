/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The pass's own data, shared by its steps (docs/ARCHITECTURE.md, "One pass, in one direction"):
 *   Pass            what lives across passes: the spec, the node's settings, the volume provider, caches and
 *                   what earlier passes left to follow (DNS changes propagating, backups seen);
 *   PassObservation what one pass saw, data only: every read of the pass, made once;
 *   PassPlan        what it will do, a pure function of (spec, node settings, observation);
 *   PassContext     one run of a pass: the sessions it opened (DNS, state store), the apply's working state
 *                   and the report; owned by the run, never by the observation or the plan;
 *   PassStep        one step (volumes, DNS, certificates...): its observe, plan, apply and print;
 *   PassRole        a role's table of steps: in which order they observe, plan, apply and print.
 * A step's file includes this header and the rooms it needs, never another step's header: steps meet only
 * in the observation, the plan and the context. The CLI sees none of this (daemon/pass.h). */

#include <stdbool.h>
#include <stdio.h>

#include "backup/backup-snapshot.h"
#include "backup/backup.h"
#include "backup/restore.h"
#include "basic/flock-holder.h"
#include "certs/certs.h"
#include "components/render.h"
#include "daemon/node-settings.h"
#include "daemon/pass.h"
#include "daemon/report.h"
#include "dns/dns-provider.h"
#include "etcdapi/etcd-json.h"
#include "etcdapi/member-plan.h"
#include "etcdapi/upgrade-survey.h"
#include "join/join-progress.h"
#include "join/join-round.h"
#include "join/join-token.h"
#include "kube/kube-client.h"
#include "kube/kube-node.h"
#include "kube/kube-rollout.h"
#include "model/conventions.h"
#include "pivot/pivot.h"
#include "shared/netlink-route.h"
#include "spec/spec.h"
#include "store/store.h"
#include "volumes/volumes.h"

/* What the last listing of an etcd cluster's backups found, kept across passes: an idle pass does not list
 * the store's backups again while nothing can have changed (step-backups.c). */
typedef struct PassBackupSeen {
        char cluster[64];
        usec_t slot;      /* CLOCK_REALTIME start of the slot the listing was made in */
        usec_t listed_at; /* CLOCK_MONOTONIC of the listing */
        PassBackupInfo info;
} PassBackupSeen;

/* Relist a cluster's backups this long after a listing that did not show the current slot's backup yet
 * (another master may take it): the report follows another master's backup within this. */
#define PASS_BACKUP_RELIST_USEC (60ULL * USEC_PER_SEC)

/* The refusals of kubelet CSRs the last pass logged, each a hash of (CSR, reason), kept across passes: a
 * pending CSR is refused every pass, and its refusal is logged again only when its reason changes
 * (step-join.c). Past the bound, the rest are logged every pass. */
#define PASS_JOIN_REFUSALS_MAX 512U
typedef struct PassJoinSeen {
        unsigned n_refusals;
        uint64_t refusals[PASS_JOIN_REFUSALS_MAX];
        bool waiting; /* the last pass waited for the API: said once, and once when it answers */
} PassJoinSeen;

struct Pass {
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
         * passes stop reading them (step-api-names.c; docs/dns.md, "While the apiservers come up") */
        bool api_pods_all_seen;
        PassJoinSeen join_seen; /* what the approver step said in the last pass (step-join.c) */
};

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

/* A held, mounted etcd member's version (docs/etcd-versions.md, step-etcd-upgrade.c): the image its manifest
 * on the volume runs and, while its version may change, what the cluster says. */
typedef struct PassEtcdUpgrade {
        bool observed;    /* the volume is held, mounted and eligible */
        char *held_image; /* the image of the member's manifest on the volume; NULL: no manifest */
        bool held_wanted; /* that image is the spec's (its version the wanted one) */
        bool marker;      /* ours on the volume: this member's change was started here and is not over */
        bool surveyed;    /* the cluster was asked (survey, lock, record) */
        int client_error; /* < 0: no client (client_message) */
        char *client_message;
        UpgradeSurvey survey;
        size_t self;       /* this member, an index into survey.members */
        char *lock_holder; /* another master's name, when it holds the upgrade lock */
        bool lock_ours;
        int record_error; /* 0: record read; -ENOENT: none; < 0: it could not be read (record_message) */
        char *record_message;
        UpgradeRecord record;
        bool restore_requested; /* the store's restore request names the record's backup */
} PassEtcdUpgrade;

void pass_etcd_upgrade_done(PassEtcdUpgrade *u);

/* A worker's kubelet files as they are (step-kubelet-boot.c), and its bootstrap token's file. */
/* The stages of a worker's join, in order (`protokube join plan` names the first that is not done): the
 * API's internal name, the bootstrap token, the CA's pin, the kubelet's client CSR, its Node Ready. */
typedef enum PassJoinStage {
        PASS_JOIN_DNS,
        PASS_JOIN_TOKEN,
        PASS_JOIN_PIN,
        PASS_JOIN_CSR,
        PASS_JOIN_NODE,
        _PASS_JOIN_STAGE_MAX,
} PassJoinStage;

const char *pass_join_stage_to_string(PassJoinStage s);

/* Where one stage stands, as the step that keeps it says (its join hook). */
typedef struct PassJoinStatus {
        bool known; /* a step of the role's table spoke for this stage */
        int status; /* 0 done; PK_EWAITING; < 0 refused or failed */
        char *note; /* what was seen, or why it blocks */
} PassJoinStatus;

void pass_join_statuses_done(PassJoinStatus s[static _PASS_JOIN_STAGE_MAX]);
/* Says where s stands (note: taken; NULL is out of memory). */
int pass_join_status_set(PassJoinStatus *s, int status, char *note);

typedef struct PassKubeletObserved {
        bool observed;
        char *config, *ca_pem, *env; /* the texts on disk; NULL: absent */
        char *bootstrap;             /* the bootstrap kubeconfig: it holds the token, erased after use */
        size_t bootstrap_len;
        bool joined;      /* the kubelet's own kubeconfig exists: its certificate was issued */
        bool ca_pinned;   /* ca_pem parses and has the pin */
        char *ca_message; /* ca_pem is there but not taken: why */
        bool has_token;   /* token was read from the token file (a secret: erased) */
        JoinToken token;
        int token_error; /* the token file could not be taken: token_message says why */
        char *token_message;
        /* When the CA on disk is not the pinned one: the CA a master's cluster-info serves with the pin
         * (ca_found, checked), or why none was taken (ca_fetch_error: PK_EWAITING no master yet, < 0 none
         * had the pin or none answered; ca_fetch_message). */
        char *ca_found;
        int ca_fetch_error;
        char *ca_fetch_message;
} PassKubeletObserved;

void pass_kubelet_observed_done(PassKubeletObserved *k);

/* What a worker's kubelet bootstrap will write: the texts rendered, and whether each differs. */
typedef struct PassKubeletPlan {
        int status; /* 0; PK_EWAITING (no master to ask the CA of yet); < 0: cannot bootstrap (note) */
        char *note;
        PassJoinStage stage; /* status != 0: the join's stage it stops (the token or the pin) */
        char *ca;            /* the pinned CA to write first (the others name it); NULL: ca.crt is current */
        char *config, *env;
        char *bootstrap; /* holds the token: erased */
        size_t bootstrap_len;
        bool write_config, write_bootstrap, write_env;
} PassKubeletPlan;

void pass_kubelet_plan_done(PassKubeletPlan *k);

/* A master's kubelet (step-kubelet-config.c): its KubeletConfiguration and flags from the spec, with the
 * kubeconfig and CA protokube issues it (the pki layout's kubelet directory). */
typedef struct PassKubeletConfigObserved {
        char *config, *env; /* on disk; NULL: absent */
        int read_error;     /* < 0: a file there could not be read (nothing is written over it) */
} PassKubeletConfigObserved;

/* Which kubelet holds the node (step-kubelet-handoff.c, spec.kubelet.selfHosted): the holder of the lock
 * file's flock, from /proc/locks (the file is never opened: an open hands the node over). */
typedef enum PassKubeletHolder {
        PASS_KUBELET_HOLDER_NONE,      /* no lock file yet, or nobody holds it */
        PASS_KUBELET_HOLDER_BOOTSTRAP, /* a process outside every pod: the init system's */
        PASS_KUBELET_HOLDER_MANAGED,   /* a process in a pod's cgroup: the DaemonSet's */
} PassKubeletHolder;

typedef struct PassKubeletHandoffObserved {
        bool enabled; /* spec.kubelet.selfHosted */
        int status;   /* 0, or < 0: the holder could not be read (note says why) */
        char *note;
        PassKubeletHolder holder;
        ProcessFacts facts; /* the holder's: pid, pod, start */
        /* A master: every Node, through its own apiserver (NULL: not read, node_note says why). */
        json_t *nodes;
        char *node_note;
} PassKubeletHandoffObserved;

/* The managed kubelet's DaemonSet and where its rollout stands (step-kubelet-rollout.c). */
typedef struct PassKubeletRolloutObserved {
        bool read;          /* the DaemonSet and its revisions were read */
        json_t *daemon_set; /* NULL: not applied */
        KubeRollout rollout;
        char *note; /* why they were not read */
} PassKubeletRolloutObserved;

/* A change of one Node: its holder annotation (each node reports its own), and on a master's pass the
 * bootstrap taint of any Node. */
typedef struct PassKubeletNodeChange {
        char *name;
        const char *holder; /* the annotation's new value (static), NULL: as it is */
        int taint;          /* +1 put back, -1 take off, 0 as it is */
} PassKubeletNodeChange;

typedef struct PassKubeletHandoffPlan {
        PassKubeletNodeChange *changes;
        size_t n_changes;
} PassKubeletHandoffPlan;

typedef struct PassKubeletConfigPlan {
        int status; /* 0, or < 0: cannot be rendered (note says why) */
        char *note;
        char *config, *env;
        bool write_config, write_env;
} PassKubeletConfigPlan;

/* The kubelet's own kubeconfig in the node's kubelet directory: the kubelet writes it once its client
 * certificate is issued (a worker's bootstrap step, its pod network step). */
#define PASS_KUBELET_KUBECONFIG "kubeconfig"

/* "<the node's kubelet directory>/<name>"; NULL on allocation failure. */
char *pass_kubelet_file(const Pass *p, const char *name);
/* The text of a file of the kubelet directory (at most 1 MiB); *ret NULL when absent. Other failures: < 0.
 */
int pass_kubelet_read(const Pass *p, const char *name, bool secret, char **ret, size_t *ret_len);
/* Where the kubelet keeps the certificates it makes or is issued (--cert-dir), in the kubelet directory. */
#define PASS_KUBELET_CERT_DIR "pki"
/* The node's own kubelet flags, appended to *flags: where its certificates go, its name and address (where
 * the node was given them), and with spec.kubelet.selfHosted the lock and the node's settings from
 * node_spec, the node's copy of the spec (kubelet_handoff_flags()). */
int pass_kubelet_node_flags(const Pass *p, const ClusterSpec *node_spec, char ***flags);

/* The pods' network in kubenet mode (step-pod-network.c): the Nodes, the node's CNI file, the routes. */
typedef struct PassPodNetworkObserved {
        bool observed; /* all of it was read */
        int status;    /* not observed: PK_EWAITING (no API yet) or < 0 */
        char *message;
        char *self; /* this node's Node name */
        KubeNodeNetwork *nodes;
        size_t n_nodes;
        char **warnings;      /* the Nodes' values left out */
        char *conflist;       /* the CNI file as it is; NULL: absent */
        NetlinkRoute *routes; /* the main table's unicast routes of every owner */
        size_t n_routes;
} PassPodNetworkObserved;

void pass_pod_network_observed_done(PassPodNetworkObserved *n);

typedef struct PassPodNetworkPlan {
        bool enabled; /* spec.networking.provider kubenet */
        int status;   /* 0; PK_EWAITING; < 0 */
        char *note;
        char *conflist, *conflist_path;
        bool write_conflist;
        NetlinkRoutePlan routes;
} PassPodNetworkPlan;

void pass_pod_network_plan_done(PassPodNetworkPlan *n);

/* A worker's kube-proxy (step-node-proxy.c): its manifest as it is, and whether the kubelet has joined. */
typedef struct PassNodeProxyObserved {
        bool joined;
        char *text;        /* the manifest on disk; NULL: absent */
        char *config_text; /* its configuration file on disk; NULL: absent */
        int read_error; /* < 0: the manifest or the file could not be read (nothing is written over them) */
} PassNodeProxyObserved;

typedef struct PassNodeProxyPlan {
        int status; /* 0; PK_EWAITING (the kubelet has not joined); < 0 */
        char *note;
        char *path, *text; /* text NULL: kubeProxy.enabled false */
        bool write;
        ComponentConfigFile config; /* the file it reads (config.text NULL: none) */
        bool write_config;
} PassNodeProxyPlan;

void pass_node_proxy_plan_done(PassNodeProxyPlan *k);

/* A worker's join as the API shows it (step-node-join.c): before its kubelet has a certificate, its client
 * CSR (listed with the bootstrap token), after, its Node's Ready condition (with the kubelet's identity). */
typedef struct PassNodeJoinObserved {
        bool observed; /* the API answered */
        int status;    /* not observed: PK_EWAITING (no master, no CA or token on disk yet) or < 0 */
        char *message;
        bool joined;        /* the kubelet's own kubeconfig exists */
        bool token_refused; /* the API answered 401 to the bootstrap token */
        bool csrs_denied;   /* 403: the token may not list CSRs (the masters bind it) */
        JoinCsrProgress csr;
        int ready; /* joined: 1 Ready, 0 not (ready_words), -1 no Node of that name */
        char *ready_words;
        bool node_read;       /* its Node was read: the annotation below is what it says */
        char *kubelet_holder; /* its protokube.io/kubelet-holder annotation (NULL: none) */
} PassNodeJoinObserved;

typedef struct PassNodeJoinPlan {
        PassJoinStage stage; /* the stage it speaks for: the token, the CSR or the Node */
        int status;          /* 0 Ready; PK_EWAITING; < 0 refused */
        char *note;
} PassNodeJoinPlan;

/* What one observation saw: data only (the sessions it read through are the context's). */
typedef struct PassObservation {
        int volumes_error;     /* the provider could not be observed (logged): no volume steps, no DNS */
        char *volumes_message; /* the provider's words on it */
        VolumesObservation volumes;
        VolumesInput in;     /* the volume planner's view of it (points into volumes and the pass) */
        bool dns_enabled;    /* the spec names a DNS provider and it could be opened and read */
        bool dns_tracks_ttl; /* its provider stores TTLs (hosts does not): they are compared */
        int dns_error;       /* reading what DNS serves failed: the plan carries it to the report */
        char *dns_message;
        DnsRRsetList dns_served;
        bool dns_repair;       /* the store needs a write even if nothing differs */
        char **manifest_names; /* control-plane manifests in the manifest dir (regular files) */
        char **manifest_texts; /* parallel to manifest_names */
        /* the control-plane components' configuration files on disk (NULL: absent), by component; a file
         * that is there but cannot be read has its error in config_errors and is never written over */
        char *config_texts[_COMPONENT_MAX];
        int config_errors[_COMPONENT_MAX];
        CertsObservation certs;         /* the state store's keystore and the node's certificates */
        usec_t realtime;                /* when it was observed: "now" for the certificates' plan */
        PassEtcdMember *etcd_members;   /* parallel to in.volumes */
        PassEtcdUpgrade *etcd_upgrades; /* parallel to in.volumes */
        PivotRecord pivot_record;       /* the pivot's local record: which bootstrap manifests stay away */
        /* The apiservers asked for the API's names (step-api-names.c). api_gated: this node can ask (DNS,
         * a kubeconfig of its own); false: no master is left out of the names. */
        bool api_gated;
        DnsApiReadiness api;
        char **api_why; /* parallel to api.probed: "ADDRESS: why" it is not ready, "" when it is */
        PassKubeletObserved kubelet;                /* a worker's kubelet files */
        PassKubeletConfigObserved kubelet_config;   /* a master's kubelet files */
        PassKubeletHandoffObserved kubelet_handoff; /* which kubelet holds the node */
        PassKubeletRolloutObserved kubelet_rollout; /* a master's view of the managed kubelet's rollout */
        PassPodNetworkObserved pod_network;         /* kubenet: the Nodes, the CNI file, the routes */
        PassNodeProxyObserved node_proxy;           /* a worker's kube-proxy */
        PassNodeJoinObserved node_join;             /* a worker's CSR and Node */
        /* The approver and signer of kubelet CSRs (step-join.c), through this master's own apiserver.
         * join_enabled: it has a client of its own (its certificates are managed here). join_status: 0
         * the round was read (join); PK_EWAITING the apiserver does not answer; < 0 the round could not be
         * read; join_message says why. */
        bool join_enabled;
        int join_status;
        char *join_message;
        JoinObservation join;
        /* The cloud's machines of the cluster (aws), when it lists them: a joining node's name must be one's
         * (join_machines point into cloud_machines) */
        bool join_machines_known;
        CloudMachine *cloud_machines;
        JoinMachine *join_machines;
        size_t n_machines;
} PassObservation;

void pass_observation_done(PassObservation *o);

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
        bool *config_write;        /* parallel to control_plane.files: the same */
        int config_error; /* < 0: a file on disk could not be read (config_failed): nothing is written */
        const char *config_failed; /* points into control_plane.files */
        const char *render_failed; /* the control plane could not be rendered: which component */
        int render_error;
        CertsPlan certs; /* the node's certificates for the members held after this pass's claims */
        const char **held_members;  /* per etcd cluster (parallel to Pass.etcd_clusters): the member this
                                       node holds after the plan, NULL: none (points into volumes) */
        MemberPlan *member_plans;   /* parallel to in.volumes: the decision for each observed member */
        UpgradePlan *upgrade_plans; /* parallel to in.volumes: each observed member's version change */
        /* parallel to in.volumes: the image an upgrade holds the member at (the one it runs: points into
         * the observation), NULL: the spec's */
        const char **held_images;
        /* A worker's view of the API (step-api-view.c) plans into view (as observed: a worker claims
         * nothing), dns_status, dns_note, dns_desired (api.<internalSuffix> only), dns_changes, dns_send
         * and: */
        bool api_view_check; /* the records are not the node's to write (rfc2136, route53): only compared */
        bool api_view_answers; /* api_view_check: the name serves exactly the masters' internal addresses */
        PassKubeletPlan kubelet;                /* a worker's kubelet bootstrap (step-kubelet-boot.c) */
        PassKubeletConfigPlan kubelet_config;   /* a master's kubelet files (step-kubelet-config.c) */
        PassKubeletHandoffPlan kubelet_handoff; /* the bootstrap taint (step-kubelet-handoff.c) */
        bool kubelet_rollback;          /* the managed kubelet's DaemonSet back to its previous template */
        PassPodNetworkPlan pod_network; /* kubenet (step-pod-network.c) */
        PassNodeProxyPlan node_proxy;   /* a worker's kube-proxy (step-node-proxy.c) */
        PassNodeJoinPlan node_join;     /* a worker's CSR and Node (step-node-join.c) */
        bool join_planned;              /* the approver's round was observed and planned (join) */
        JoinPlan join;
        char *join_server; /* cluster-info's server: https://api.internal.CLUSTER:PORT */
        bool join_has_ca;  /* the keystore's cluster CA was read: cluster-info is published, CSRs signed */
} PassPlan;

void pass_plan_done(PassPlan *p);

/* Which selections an apply row works on. A pass that brings up the main etcd cluster's volume and
 * another's does main's first (its devices, certificates, member and manifest), then the others': the
 * API's etcd does not wait for the events volume (on EC2 an attachment). */
typedef enum PassWave {
        PASS_WAVE_ALL,   /* every selection; a step that works per wave does all of them here */
        PASS_WAVE_FIRST, /* the first wave: every selection when the pass has one wave */
        PASS_WAVE_REST,  /* the second wave: nothing when the pass has one wave */
        _PASS_WAVE_MAX,
        _PASS_WAVE_INVALID = -EINVAL,
} PassWave;

/* One run of a pass: created by pass_run() (or `plan`), freed at its end. */
typedef struct PassContext {
        Pass *pass;
        PassObservation *obs;
        const PassPlan *plan;
        PassReport *rep;
        bool last_round; /* a lost claim is not observed again: PASS_ROUNDS_MAX rounds were made */
        /* sessions, opened by the observation's steps and used again by their apply */
        DnsSession *dns;      /* NULL: no DNS in the spec, or it could not be opened (obs->dns_error) */
        Store *store;         /* the state store the certificates' observation opened (NULL: none) */
        KubeClient *join_api; /* this master's apiserver, as the approver's observation reached it */
        /* the apply's working state */
        VolumesApply *volumes_apply; /* the volume steps of the plan, in their three phases */
        bool *first, *rest;          /* the waves' selections; NULL: one wave of every selection */
        bool *rest_etcd; /* the etcd clusters of the rest wave (a mask over Pass.etcd_clusters) */
        /* The etcd manifest each selection will have written: the plan's texts, which the steps that act
         * between the plan and the write may hold back (NULL) or replace with one rendered anew (kept in
         * etcd_owned) through their revise hook, never by editing the plan. */
        char **etcd_texts;
        char **etcd_owned;
        /* The members' decisions as the apply takes them: the plan's, and for a volume mounted in this
         * pass the members step's revise hook observes it now and decides (parallel to in.volumes). */
        MemberPlan *member_plans;
        /* The same for the upgrade's decisions and the images it holds members at (step-etcd-upgrade.c) */
        UpgradePlan *upgrade_plans;
        const char **held_images;
        bool *restoring; /* parallel to in.volumes: the restore step found a restore under way on it */
        bool volumes_interrupted; /* a claim or manifest step saw a stop or a lost race */
        bool apply_failed;        /* an apply failed (out of memory): only after_failure steps run on */
} PassContext;

/* The selections of a wave, as a mask over plan->volumes.selections: NULL for every one (PASS_WAVE_ALL, and
 * PASS_WAVE_FIRST when the pass has one wave). */
static inline const bool *pass_wave_selections(const PassContext *ctx, PassWave wave) {
        return wave == PASS_WAVE_REST ? ctx->rest : wave == PASS_WAVE_FIRST ? ctx->first : NULL;
}
/* Whether the wave has no selection at all (PASS_WAVE_REST when the pass has one wave). */
static inline bool pass_wave_empty(const PassContext *ctx, PassWave wave) {
        return wave == PASS_WAVE_REST && !ctx->rest;
}
/* Whether a restore is under way on volume i: as observed, or as the restore step found it this pass. */
static inline bool pass_restoring(const PassContext *ctx, size_t i) {
        return (ctx->obs->etcd_members && ctx->obs->etcd_members[i].restoring) ||
               (ctx->restoring && ctx->restoring[i]);
}

/* One step of a pass. Every entry may be NULL. observe reads (once per pass) into ctx->obs; plan is pure
 * over (pass, observation) and writes only its part of the plan; revise re-observes what the pass itself
 * changed since the observation (a volume mounted in this pass) and re-decides, writing only the
 * context's etcd_texts; apply acts on the wave's selections (0, 1 to observe and plan again: a lost
 * claim, < 0 on a failure the report cannot carry: out of memory); finish reports what the round did;
 * print shows the plan's part for `protokube plan`. Failures of the cluster (a DNS server down) go to the
 * report, and the pass goes on with the next step. */
typedef struct PassStep {
        const char *name;   /* for the progress line and the docs */
        PassStage stage;    /* where its failures count in the report */
        unsigned roles;     /* the roles whose tables may hold it: 1 << NodeRole */
        bool after_failure; /* its apply runs even after an earlier apply failed (the checkpoint) */
        int (*observe)(PassContext *ctx);
        int (*plan)(const Pass *pass, const PassObservation *o, PassPlan *plan);
        int (*revise)(PassContext *ctx, PassWave wave);
        int (*apply)(PassContext *ctx, PassWave wave);
        int (*finish)(PassContext *ctx);
        int (*print)(const Pass *pass, const PassObservation *o, const PassPlan *plan, FILE *out);
        /* `join plan`: where the stages it keeps stand (-ENOMEM only) */
        int (*join)(const Pass *pass, const PassObservation *o, const PassPlan *plan,
                    PassJoinStatus stages[static _PASS_JOIN_STAGE_MAX]);
} PassStep;

typedef enum PassPhase {
        PASS_PHASE_OBSERVE,
        PASS_PHASE_PLAN,
        PASS_PHASE_APPLY, /* revise, then apply */
        PASS_PHASE_FINISH,
        PASS_PHASE_PRINT,
        PASS_PHASE_JOIN, /* `join plan`: the stages of a node's join, from the plan */
        _PASS_PHASE_MAX,
        _PASS_PHASE_INVALID = -EINVAL,
} PassPhase;

/* One line of a role's table: in this phase, this step (on this wave). */
typedef struct PassRow {
        PassPhase phase;
        const PassStep *step;
        PassWave wave;
} PassRow;

typedef struct PassRole {
        NodeRole role;
        const PassRow *rows; /* in order; ended by a row without a step */
} PassRole;

/* The table of a role (pass-roles.c); NULL for a role without one. */
const PassRole *pass_role(NodeRole role);

/* Whether the pass's role's table holds step (in any phase). */
bool pass_has_step(const Pass *pass, const PassStep *step);
/* For a verb that shows or runs one step's part (`volumes`, `pki show`, `pki renew`): 0 when the role's
 * table holds step, else -EOPNOTSUPP, logged with the verb, the step and the role (a worker holds no
 * volume and keeps no master's certificates). */
int pass_require_step(const Pass *pass, const PassStep *step, const char *verb);

/* Runs every row of phase of the pass's role, in order: observe and plan (-ENOMEM only), apply (0; 1:
 * observe and plan again; < 0), finish, print. */
int pass_run_phase(PassContext *ctx, PassPhase phase);
int pass_plan_steps(const Pass *pass, const PassObservation *o, PassPlan *plan);
int pass_print_steps(const Pass *pass, const PassObservation *o, const PassPlan *plan, FILE *out);

/* A run's context: pass_context_done() closes its sessions and frees its working state. */
void pass_context_done(PassContext *ctx);
/* The observation of one run, into o (which ctx then points at); -ENOMEM and the fatal failures (logged). */
int pass_observe_with(PassContext *ctx, PassObservation *o);
/* Before the apply: the context's working copies of the plan's etcd texts and members' decisions. */
int pass_context_prepare_apply(PassContext *ctx, const PassPlan *plan);
/* For the verbs that print (`plan`, `volumes`, `pki show`): observe and plan with a context of their own,
 * its sessions closed at the end. A provider that cannot be observed is an error here (logged). */
int pass_observe_and_plan(Pass *p, PassObservation *o, PassPlan *plan);

/* Helpers more than one step needs (pass-common.c). */

/* kube-apiserver's port (the spec's securePort, APISERVER_PORT_DEFAULT in a spec made in code). */
static inline unsigned pass_apiserver_port(const ClusterSpec *spec) {
        return spec->kube_apiserver.secure_port.set ? (unsigned)spec->kube_apiserver.secure_port.value
                                                    : APISERVER_PORT_DEFAULT;
}

/* The spec's certificate settings (pointing into spec and etcd_clusters, the etcd clusters' names in the
 * spec's order), as a pass gives them to certs/. */
CertsSettings pass_certs_settings(const ClusterSpec *spec, char *const *etcd_clusters);

/* The pass's state store: the context's (the certificates' observation opened it, when it could: one open
 * per pass), else one opened now into *owned (the caller frees it). NULL with an error message when it
 * cannot be opened. */
Store *pass_store(PassContext *ctx, Store **owned, char **ret_error);

/* The etcd manifest of volume i's member, at the image an upgrade holds it at (NULL: the spec's). */
int pass_render_member(const Pass *pass, const VolumeEligibility *e, const char *id, bool existing,
                       const char *image, char **ret);
/* The image the plan holds volume i's member at, NULL: the spec's. */
static inline const char *pass_held_image(const PassPlan *plan, size_t i) {
        return plan->held_images ? plan->held_images[i] : NULL;
}

/* Whether volume i's member gets initial-cluster-state=existing: as decided, and once written, for good: a
 * member with data ignores the flag, so keeping it spares etcd a restart for a changed manifest. */
bool pass_member_existing(const PassObservation *o, const PassPlan *plan, size_t i);

/* Whether DNS can be planned this pass: the provider was observed and read, and the view has masters or
 * members (an empty view is likelier a failed observation than a cluster without them: it must not wipe
 * the records). */
bool pass_dns_plannable(const PassObservation *o, const PassPlan *plan);

/* The end of a step's DNS read (r and error: what opening the provider and reading came to): the provider's
 * note logged; a failure kept in the observation's dns_error and dns_message, the session closed; the
 * observation's dns_enabled and dns_tracks_ttl set from the session. -ENOMEM only. */
int pass_dns_observed(PassContext *ctx, int r, char **error);

/* One log line per RRset a DNS provider replaced ("DNS (hosts): api.internal.c. A -> 10.0.0.1 (TTL 60).").
 */
void pass_dns_log_changes(const DnsRRsetList *changes, const char *provider);

/* Whether a restore of cluster is under way on the volume mounted at mount: 1, 0 when not (no restore
 * record, or a finished one), < 0 when its record cannot be read or parsed (*ret_error: the path and why).
 * Read by the restore step, and by the members' observation: a member whose data a restore moved aside is
 * not blank. */
int pass_restore_in_progress(const char *mount, const char *cluster, char **ret_error);

/* What `protokube plan` prints of a step whose plan waits or cannot be made: "NAME: waiting: NOTE" (1), or
 * "NAME: CANNOT: NOTE" and the failure logged (its code, below zero); 0 and nothing for a plan made
 * (status 0), which the step then prints itself. */
int pass_print_status(FILE *out, const char *name, const char *cannot, int status, const char *note);
/* The same for a pass: a step's wait (logged at info, "NAME: NOTE.") or failure (logged as an error), and
 * in the report as "NAME: NOTE" under stage. 1 when status was one of them, 0 for a plan made. */
int pass_report_status(PassContext *ctx, PassStage stage, const char *name, int status, const char *note);
/* One file of the kubelet directory, atomically and only when its bytes change (the directory made first); a
 * failure is logged and reported in the kubelet stage, and returned. */
int pass_kubelet_write(PassContext *ctx, const char *name, const void *data, size_t len, mode_t mode);

/* protokube's own kubeconfig on this master (the certificates step writes it: its server is this master's
 * own apiserver on 127.0.0.1). Caller frees; NULL on allocation failure. */
char *pass_api_kubeconfig(const ClusterSpec *spec);

/* protokube's client of the API from kubeconfig, each request one try of timeout. host (may be NULL: the
 * kubeconfig's server): https://host:port instead, connected to address when not NULL. */
int pass_open_api(const char *kubeconfig, const char *host, unsigned port, const char *address,
                  usec_t timeout, KubeClient **ret, char **ret_error);
/* pass_open_api() at the API's internal name (api.<internalSuffix>, the spec's apiserver port), connected
 * to one master's address. */
int pass_open_api_at(const ClusterSpec *spec, const char *kubeconfig, const char *address, usec_t timeout,
                     KubeClient **ret, char **ret_error);
/* A master's own apiserver, with protokube's identity, at the master's first internal address (the
 * volumes step's observation of the node). PK_EWAITING (message) before the master has an address or an
 * identity of protokube's. */
int pass_open_own_api(const PassContext *ctx, usec_t timeout, KubeClient **ret, char **ret_error);

/* A node outside the control plane: the internal address of the first master of the observed view that
 * has one, to reach the API at (caller frees). PK_EWAITING when there is none yet (or the listing failed).
 */
int pass_view_master_address(const PassObservation *o, char **ret);

/* The pass's volume provider, from the spec's cloud and the node's settings; logs what failed. */
int pass_open_volume_provider(const ClusterSpec *spec, const NodeSettings *node, VolumeProvider **ret);
