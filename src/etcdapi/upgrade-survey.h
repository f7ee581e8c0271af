/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What an upgrade's decision reads of a live cluster (docs/etcd-versions.md, "Reading versions"): the
 * voters the member list names, each tagged member's status at its client URL (the version it runs, its
 * health, leadership and raft index) and the cluster version, from the first member that answers
 * GET /version. A member without a URL (no master holds it) or that does not answer runs no known version.
 * The pass's upgrade step and the live unit test read a cluster through this alone. */

#include <stdbool.h>
#include <stddef.h>

#include "etcdapi/etcd-client.h"
#include "etcdapi/upgrade-plan.h"

typedef struct UpgradeSurvey {
        UpgradeMember *members; /* in the order given; names and versions point into the survey */
        size_t n_members;
        size_t n_listed; /* the voters the member list names, tagged or not */
        bool learner;    /* the list has a learner: a member's replacement is under way */
        char *cluster_version;
        int list_error; /* < 0: the member list could not be read (list_message) */
        char *list_message;
        EtcdStatus *status; /* parallel to members: what each answered (owns the versions) */
        char **names;
} UpgradeSurvey;

/* Asks the cluster through c. names: every tagged member's etcd name ("etcd-b"), urls: its client URL, NULL
 * or "" when it has none, both n long. Only -ENOMEM fails: what does not answer is recorded as such. */
int upgrade_survey(EtcdClient *c, char *const *names, const char *const *urls, size_t n, UpgradeSurvey *ret);
void upgrade_survey_done(UpgradeSurvey *s);
