/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What one pass reports, and the running totals the daemon exposes on /metrics and /healthz. Pure data and
 * formatting: no I/O here, so it is unit-testable. */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "basic/buf.h"
#include "basic/time-util.h"
#include "daemon/progress.h"
#include "dns/dns-pending.h"

typedef enum PassStage {
        PASS_STAGE_SPEC,
        PASS_STAGE_DISCOVER,
        PASS_STAGE_CLAIM,
        PASS_STAGE_DEVICE,
        PASS_STAGE_FSCK,
        PASS_STAGE_FORMAT,
        PASS_STAGE_MOUNT,
        PASS_STAGE_MANIFEST,
        PASS_STAGE_DNS,
        PASS_STAGE_CERTS,
        PASS_STAGE_ETCD,        /* etcd membership: a member's replacement (docs/etcd-members.md) */
        PASS_STAGE_BACKUP,      /* etcd backups into the state store (docs/etcd-backups.md) */
        PASS_STAGE_PIVOT,       /* the pivot to a self-hosted control plane (docs/pivot.md) */
        PASS_STAGE_CHECKPOINT,  /* the self-hosted pods' checkpoint (docs/pivot.md, "The checkpoint") */
        PASS_STAGE_KUBELET,     /* a worker's kubelet bootstrap (docs/workers.md) */
        PASS_STAGE_POD_NETWORK, /* kubenet: the CNI network and the routes (docs/workers.md) */
        PASS_STAGE_JOIN,        /* the approver and signer of the workers' CSRs (docs/workers.md) */
        _PASS_STAGE_MAX,
        _PASS_STAGE_INVALID = -EINVAL,
} PassStage;

const char *pass_stage_to_string(PassStage s);

#define PASS_CERTS_MAX      64  /* certificates a master manages: far fewer (docs/pki.md) */
#define PASS_CERT_NAME_MAX  192 /* "DIR/NAME.crt" or "ca/NAME" */
#define CERT_EXPIRY_WARNING (30ULL * 24ULL * 3600ULL * USEC_PER_SEC)

typedef struct PassCertExpiry {
        char name[PASS_CERT_NAME_MAX];
        usec_t not_after; /* CLOCK_REALTIME */
} PassCertExpiry;

/* The newest complete backup of an etcd cluster in the state store (docs/etcd-backups.md). */
#define PASS_BACKUPS_MAX 16
typedef struct PassBackupInfo {
        char cluster[64];
        usec_t newest;       /* CLOCK_REALTIME of its timestamp; 0: no backup yet */
        uint64_t size;       /* bytes */
        usec_t interval;     /* the spec's: /healthz warns past twice this */
        unsigned unreadable; /* backups whose manifest is there but cannot be read: retention holds */
} PassBackupInfo;

/* The etcd versions a master sees while one of its members may change version (docs/etcd-versions.md):
 * every member of the cluster as it answered, the wanted version, the cluster version and this master's
 * step of the change. */
#define PASS_ETCD_VERSIONS_MAX 32
typedef struct PassEtcdVersionInfo {
        char cluster[64];
        char member[64];          /* "etcd-b" */
        char running[24];         /* "3.4.23"; "": it did not answer */
        char wanted[24];          /* the spec's */
        char cluster_version[24]; /* "": not known */
        char step[48]; /* this master's decision: "upgrade-member", "wait:turn", "refuse:downgrade" */
} PassEtcdVersionInfo;

/* The outcomes of the masters' approver and signer, by kind (join/join-round.h's JoinOutcomeKind: approved,
 * signed, refused, lost-race, failed, adopted; a static assertion in report.c keeps them equal). */
#define PASS_JOIN_OUTCOME_KINDS 6

/* Which kubelet holds the node (spec.kubelet.selfHosted; docs/kubelet-handoff.md). */
typedef struct PassKubeletHolderInfo {
        bool known;      /* the pass looked (selfHosted kubelet): the rest replaces the last's */
        char holder[16]; /* "bootstrap", "managed", "none", "unknown" */
        char pod[40];    /* the managed kubelet's pod uid, "" otherwise */
        usec_t since;    /* CLOCK_REALTIME when the holder started, 0: none */
} PassKubeletHolderInfo;

typedef struct PassReport {
        int status;   /* 0 converged, PK_EWAITING waiting on something outside us, < 0 error */
        char *reason; /* why not converged / what failed; NULL when converged */
        usec_t duration;
        unsigned errors[_PASS_STAGE_MAX]; /* errors by stage during the pass */
        unsigned volumes_held;
        unsigned volumes_member_conflicts; /* volumes naming a member another volume holds */
        unsigned records_published;        /* records in the desired set that the provider now serves */
        unsigned actions_applied;          /* changes made; 0 on a quiet pass */
        bool repass_soon; /* the pivot is under way: the next pass after backoff_min, not the interval */
        bool checkpoint_known;     /* the pass took the checkpoint's step (selfHosted) */
        bool checkpoint_active;    /* its manifests are in kubelet's directory after the step */
        usec_t checkpoint_written; /* CLOCK_REALTIME when the current generation was written, 0: none */
        bool certs_known;          /* the pass saw the certificates: the list below replaces the last */
        unsigned n_certs;
        PassCertExpiry certs[PASS_CERTS_MAX]; /* every certificate it manages, after the pass */
        bool backups_known; /* the pass looked at the backups: the list below replaces the last */
        unsigned n_backups;
        PassBackupInfo backups[PASS_BACKUPS_MAX];
        bool dns_pending_known;    /* the fields below replace the last pass's */
        unsigned dns_pending;      /* DNS changes accepted and still propagating (Route 53: not INSYNC) */
        usec_t dns_pending_oldest; /* CLOCK_MONOTONIC when the oldest of them was submitted */
        char dns_pending_oldest_id[DNS_CHANGE_ID_MAX + 1];
        /* what the approver and signer did this pass, as logged (a refusal once per reason) */
        unsigned join_outcomes[PASS_JOIN_OUTCOME_KINDS];
        unsigned n_etcd_versions; /* this pass's, replacing the last's */
        PassEtcdVersionInfo etcd_versions[PASS_ETCD_VERSIONS_MAX];
        PassKubeletHolderInfo kubelet;
} PassReport;

void pass_report_done(PassReport *r);
/* Records an error of a stage and keeps the first reason. */
void pass_report_error(PassReport *r, PassStage stage, int error, const char *reason);

#define PASS_DURATION_BUCKETS 10
extern const double pass_duration_buckets[PASS_DURATION_BUCKETS];

typedef struct Metrics {
        uint64_t passes;
        uint64_t passes_failed;
        uint64_t duration_bucket[PASS_DURATION_BUCKETS]; /* cumulative counts, Prometheus style */
        double duration_sum;
        uint64_t errors[_PASS_STAGE_MAX];
        uint64_t join_outcomes[PASS_JOIN_OUTCOME_KINDS];
        unsigned volumes_held;
        unsigned volumes_member_conflicts;
        unsigned records_published;
        usec_t last_success_realtime; /* 0 = never */
        unsigned n_certs;
        PassCertExpiry certs[PASS_CERTS_MAX];
        char cert_warning[PASS_CERT_NAME_MAX + 64]; /* the soonest expiry within 30 days, "" if none */
        unsigned n_backups;
        PassBackupInfo backups[PASS_BACKUPS_MAX];
        char backup_warning[128]; /* the stalest backup older than twice its interval, "" if none */
        unsigned n_etcd_versions;
        PassEtcdVersionInfo etcd_versions[PASS_ETCD_VERSIONS_MAX];
        PassKubeletHolderInfo kubelet; /* as in the last PassReport that knew it */
        unsigned dns_pending;          /* as in the last PassReport */
        usec_t dns_pending_oldest;     /* CLOCK_MONOTONIC; the age is taken when asked */
        char dns_pending_oldest_id[DNS_CHANGE_ID_MAX + 1];
        bool checkpoint_known; /* a pass took the checkpoint's step: the two below are exposed */
        bool checkpoint_active;
        usec_t checkpoint_written; /* CLOCK_REALTIME, 0: no generation */
        bool have_pass;
        int last_status;
        char last_reason[512];
        /* the pass running now (metrics_set_running), "" when none */
        bool running;
        double running_seconds;
        char running_step[PASS_STEP_MAX + 32];
} Metrics;

/* Copies what the running pass does now into m (the loop's thread, before it answers a request). */
void metrics_set_running(Metrics *m, const PassProgress *p, usec_t now_monotonic);

void metrics_observe(Metrics *m, const PassReport *r, usec_t realtime_now);
/* Prometheus text exposition format 0.0.4. */
int metrics_format(const Metrics *m, Buf *out);
/* 200 when the last pass converged or is waiting (converging), 503 with a reason otherwise; with a
 * self-hosted kubelet, "ok (kubelet: managed since T)" says which kubelet holds the node (a certificate
 * expiring within 30 days adds "(warning: certificate X expires in N days)" to "ok", a DNS change pending
 * for longer than DNS_PENDING_WARNING "(warning: DNS change C is still PENDING after N s)"); before the
 * first pass, 503 "starting". While a pass runs, its step is said: "converging: e2fsck vol-x (12 s)" (200,
 * unless the last pass failed: then 503 with the last error and the step it is retrying). One-line body. */
int health_status(const Metrics *m, char *body, size_t size);
