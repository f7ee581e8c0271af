/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Restoring a whole etcd cluster from a backup (docs/etcd-restore.md). The request and the
 * members' reports live in the state store:
 *   restores/<cluster>/request.json          {"id", "snapshot", "requested"}: written by `etcd restore`
 *   restores/<cluster>/<id>/<member>.json    {"member", "members", "step", "node"}: each member's progress,
 *                                            "step": "done" once it answers healthy with the restored data
 * and each member's own progress in a state file on its volume (<mount>/k8s.io/restore-<cluster>.json,
 * {"id", "step"}), so that a master that dies anywhere resumes where it was. restore_decide() is the pure
 * decision of a member's next step from what the pass observed. */

#include <stdbool.h>
#include <stddef.h>

#include "backup/backup.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "store/store.h"

#define RESTORE_ID_LEN   (BACKUP_TIMESTAMP_LEN + 1 + 8) /* "20261124T011500Z-1a2b3c4d" */
#define RESTORE_TEXT_MAX (64U * 1024U)                  /* a request, a report or a state file */

typedef enum RestoreStep {
        RESTORE_STEP_NONE,       /* nothing done for this request yet */
        RESTORE_STEP_DOWNLOADED, /* the snapshot is on the volume, checked */
        RESTORE_STEP_STOPPING,   /* the manifest is taken away: kubelet stops etcd */
        RESTORE_STEP_MOVED,      /* etcd stopped, its data moved aside */
        RESTORE_STEP_RESTORING,  /* the manifest with the restore's init container is written */
        RESTORE_STEP_DONE,       /* the member answered healthy with the restored data; reported */
        _RESTORE_STEP_MAX,
        _RESTORE_STEP_INVALID = -EINVAL,
} RestoreStep;

const char *restore_step_to_string(RestoreStep s);
RestoreStep restore_step_from_string(const char *s);

typedef struct RestoreRequest {
        char id[RESTORE_ID_LEN + 1];
        char snapshot[BACKUP_TIMESTAMP_LEN + 1]; /* the backup's timestamp */
        usec_t requested;                        /* µs since the epoch */
} RestoreRequest;

/* A new id for a request made at t: its second and 32 random bits (two requests in one second differ). */
int restore_id_new(usec_t t, char ret[static RESTORE_ID_LEN + 1]);
bool restore_id_is_valid(const char *id);

/* Parsing is strict: a missing or malformed field is PK_EMALFORMED with a message naming the field and the
 * value. */
int restore_request_parse(const char *text, size_t len, RestoreRequest *ret, char **ret_error);
int restore_request_format(const RestoreRequest *r, char **ret);

typedef struct RestoreState {
        char id[RESTORE_ID_LEN + 1];
        RestoreStep step;
} RestoreState;

int restore_state_parse(const char *text, size_t len, RestoreState *ret, char **ret_error);
int restore_state_format(const RestoreState *s, char **ret);

/* The state store. -ENOENT when the cluster has no request. */
int restore_request_get(Store *s, const char *cluster, RestoreRequest *ret, char **ret_error);
int restore_request_put(Store *s, const char *cluster, const RestoreRequest *r, char **ret_error);
/* A member's progress on request id: members are every member of the cluster (the volume's tag). */
int restore_report_put(Store *s, const char *cluster, const char *id, const char *member,
                       char *const *members, RestoreStep step, const char *node, char **ret_error);

typedef struct RestoreProgress {
        char **members;  /* every member any report names, sorted */
        char **done;     /* those that reported done, sorted */
        char **reported; /* those that reported at all */
        bool finished;   /* at least one report and every member named is done */
} RestoreProgress;

void restore_progress_done(RestoreProgress *p);
/* What the members reported on request id. A report that cannot be read is an error naming its key. */
int restore_progress_get(Store *s, const char *cluster, const char *id, RestoreProgress *ret,
                         char **ret_error);

/* The way back of an etcd upgrade (docs/etcd-versions.md): restores/<cluster>/upgrade.json
 *   {"backup": TIMESTAMP, "from": "3.4.23", "to": "3.5.16", "node": "a"}
 * written by the master that took the backup before the first member of an upgrade changed: the version
 * the members ran then, the version they go to, and the backup an explicit downgrade restores. The backups'
 * retention keeps that backup. */
#define UPGRADE_VERSION_MAX 24  /* "MAJOR.MINOR.PATCH" of three 6-digit numbers, and its NUL */
#define UPGRADE_NODE_MAX    254 /* a DNS name, and its NUL */

typedef struct UpgradeRecord {
        char backup[BACKUP_TIMESTAMP_LEN + 1];
        char from[UPGRADE_VERSION_MAX];
        char to[UPGRADE_VERSION_MAX];
        char node[UPGRADE_NODE_MAX]; /* the master that took it */
} UpgradeRecord;

int upgrade_record_parse(const char *text, size_t len, UpgradeRecord *ret, char **ret_error);
int upgrade_record_format(const UpgradeRecord *r, char **ret);
/* -ENOENT when the cluster has none. */
int upgrade_record_get(Store *s, const char *cluster, UpgradeRecord *ret, char **ret_error);
int upgrade_record_put(Store *s, const char *cluster, const UpgradeRecord *r, char **ret_error);

/* What a pass observed of one member's volume and its cluster's request. */
typedef struct RestoreFacts {
        const RestoreRequest *request; /* NULL: none in the store */
        bool request_finished;         /* every member reported done on it */
        const RestoreState *state;     /* NULL: no state file on the volume */
        bool snapshot_present;         /* the request's snapshot, downloaded and checked, on the volume */
        bool etcd_running;             /* a process has a file open on the volume's file system */
        bool data_present;             /* <data dir>/member */
        bool aside_present;            /* <data dir>.pre-restore-<id> */
        bool member_healthy;           /* the member answers with a leader and no errors */
} RestoreFacts;

typedef enum RestoreAction {
        RESTORE_NOTHING,        /* no restore for this member */
        RESTORE_DOWNLOAD,       /* fetch the snapshot to the volume */
        RESTORE_STOP,           /* take the manifest and its link away */
        RESTORE_WAIT_STOPPED,   /* etcd still has files open on the volume: the next pass looks again */
        RESTORE_MOVE_ASIDE,     /* rename the data dir to <data dir>.pre-restore-<id> (none: nothing) */
        RESTORE_WRITE_MANIFEST, /* the manifest with the init container that restores the snapshot */
        RESTORE_WAIT_HEALTHY,   /* keep that manifest until the member answers healthy */
        RESTORE_REPORT_DONE,    /* report done; the manifest without the init container */
        RESTORE_CONFLICT,       /* the volume holds both a data dir and the aside one: a human looks */
        _RESTORE_ACTION_MAX,
        _RESTORE_ACTION_INVALID = -EINVAL,
} RestoreAction;

const char *restore_action_to_string(RestoreAction a);

typedef struct RestoreDecision {
        RestoreAction action;
        const char *id;        /* the request served (points into the facts) */
        RestoreStep step;      /* where the member is */
        RestoreStep next;      /* the step recorded once the action succeeded */
        bool in_progress;      /* the member's etcd is (being) restored: no replacement, no backup */
        bool restore_manifest; /* the manifest to write is the one with the init container */
        const char *reason;
} RestoreDecision;

/* Pure. A request is served when it is not finished, or when this volume's state names it (a master that
 * died mid-way finishes); a state in progress for a request that is gone or finished is finished too. */
void restore_decide(const RestoreFacts *f, RestoreDecision *ret);
