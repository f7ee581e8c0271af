/* SPDX-License-Identifier: Apache-2.0 */
#include "etcdapi/upgrade-survey.h"

#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "basic/strv.h"

void upgrade_survey_done(UpgradeSurvey *s) {
        for (size_t i = 0; s->status && i < s->n_members; i++)
                etcd_status_done(&s->status[i]);
        free(s->status);
        free(s->members);
        strv_free(s->names);
        free(s->cluster_version);
        free(s->list_message);
        *s = (UpgradeSurvey){};
}

static void read_list(EtcdClient *c, UpgradeSurvey *s) {
        EtcdMemberList l = {};
        s->list_error = etcd_member_list(c, &l, &s->list_message);
        if (s->list_error < 0)
                return;
        for (size_t j = 0; j < l.n; j++) {
                if (l.items[j].is_learner) {
                        s->learner = true;
                        continue;
                }
                s->n_listed++;
                for (size_t i = 0; i < s->n_members; i++)
                        if (streq_ptr(l.items[j].name, s->members[i].name))
                                s->members[i].listed = true;
        }
        etcd_member_list_done(&l);
}

/* One member's status; the cluster version from the first that answers GET /version with one. */
static int read_member(EtcdClient *c, const char *url, UpgradeSurvey *s, size_t i) {
        _cleanup_free_ char *err = NULL;
        UpgradeMember *m = &s->members[i];
        EtcdStatus *st = &s->status[i];
        int r = etcd_maintenance_status(c, url, st, &err);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                log_debug("etcd member %s does not answer: %s", m->name, strna(err));
                return 0;
        }
        m->version = st->version;
        m->healthy = st->leader != 0 && strv_length(st->errors) == 0 && !st->is_learner;
        m->is_leader = st->leader != 0 && st->leader == st->member_id;
        m->raft_index = st->raft_index;
        if (s->cluster_version)
                return 0;
        EtcdVersion v = {};
        r = etcd_version(c, url, &v, NULL);
        if (r >= 0 && v.cluster)
                s->cluster_version = TAKE_PTR(v.cluster);
        etcd_version_done(&v);
        return r == -ENOMEM ? r : 0;
}

int upgrade_survey(EtcdClient *c, char *const *names, const char *const *urls, size_t n,
                   UpgradeSurvey *ret) {
        _cleanup_(upgrade_survey_done) UpgradeSurvey s = {};
        s.members = new0(UpgradeMember, n + 1);
        s.status = new0(EtcdStatus, n + 1);
        s.names = new0(char *, n + 1);
        if (!s.members || !s.status || !s.names)
                return -ENOMEM;
        s.n_members = n;
        for (size_t i = 0; i < n; i++) {
                if (!(s.names[i] = strdup(names[i])))
                        return -ENOMEM;
                s.members[i].name = s.names[i];
        }
        read_list(c, &s);
        if (s.list_error == -ENOMEM)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                if (isempty(urls[i]))
                        continue;
                int r = read_member(c, urls[i], &s, i);
                if (r < 0)
                        return r;
        }
        *ret = s;
        s = (UpgradeSurvey){};
        return 0;
}
