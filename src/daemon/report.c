/* SPDX-License-Identifier: Apache-2.0 */
#include "daemon/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/macro.h"
#include "join/join-round.h"

static const char *const pass_stage_table[_PASS_STAGE_MAX] = {
        [PASS_STAGE_SPEC] = "spec",         [PASS_STAGE_DISCOVER] = "discover",
        [PASS_STAGE_CLAIM] = "claim",       [PASS_STAGE_DEVICE] = "device",
        [PASS_STAGE_FSCK] = "fsck",         [PASS_STAGE_FORMAT] = "format",
        [PASS_STAGE_MOUNT] = "mount",       [PASS_STAGE_MANIFEST] = "manifest",
        [PASS_STAGE_DNS] = "dns",           [PASS_STAGE_CERTS] = "certificates",
        [PASS_STAGE_ETCD] = "etcd-members", [PASS_STAGE_BACKUP] = "etcd-backups",
        [PASS_STAGE_PIVOT] = "pivot",       [PASS_STAGE_CHECKPOINT] = "checkpoint",
        [PASS_STAGE_KUBELET] = "kubelet",   [PASS_STAGE_POD_NETWORK] = "pod-network",
        [PASS_STAGE_JOIN] = "join",
};
assert_cc(PASS_JOIN_OUTCOME_KINDS == _JOIN_OUTCOME_KIND_MAX);

const char *pass_stage_to_string(PassStage s) {
        return s >= 0 && s < _PASS_STAGE_MAX ? pass_stage_table[s] : NULL;
}

/* Seconds; a pass on the local pool takes milliseconds, a format or a slow DNS server seconds. */
const double pass_duration_buckets[PASS_DURATION_BUCKETS] = { 0.005, 0.01, 0.025, 0.05, 0.1,
                                                              0.25,  0.5,  1,     2.5,  10 };

void pass_report_done(PassReport *r) {
        free(r->reason);
        r->reason = NULL;
}

void pass_report_error(PassReport *r, PassStage stage, int error, const char *reason) {
        if (stage >= 0 && stage < _PASS_STAGE_MAX && error != PK_EWAITING)
                r->errors[stage]++;
        if (r->status == 0 || (r->status == PK_EWAITING && error != PK_EWAITING))
                r->status = error;
        if (!r->reason && reason)
                r->reason = strdup(reason);
}

/* The certificates' expiries, and the warning for the soonest one within 30 days. */
static void metrics_observe_certs(Metrics *m, const PassReport *r, usec_t realtime_now) {
        const PassCertExpiry *soonest = NULL;
        m->n_certs = MIN(r->n_certs, (unsigned)PASS_CERTS_MAX);
        memcpy(m->certs, r->certs, sizeof(m->certs[0]) * m->n_certs);
        for (unsigned i = 0; i < m->n_certs; i++)
                if (m->certs[i].not_after < realtime_now + CERT_EXPIRY_WARNING &&
                    (!soonest || m->certs[i].not_after < soonest->not_after))
                        soonest = &m->certs[i];
        m->cert_warning[0] = 0;
        if (soonest && soonest->not_after <= realtime_now)
                snprintf(m->cert_warning, sizeof(m->cert_warning), "certificate %s has expired",
                         soonest->name);
        else if (soonest)
                snprintf(m->cert_warning, sizeof(m->cert_warning), "certificate %s expires in %llu days",
                         soonest->name,
                         (unsigned long long)((soonest->not_after - realtime_now) /
                                              (24ULL * 3600ULL * USEC_PER_SEC)));
}

/* The newest backup of each cluster, and the warning for one older than twice its interval. */
static void metrics_observe_backups(Metrics *m, const PassReport *r, usec_t realtime_now) {
        m->n_backups = MIN(r->n_backups, (unsigned)PASS_BACKUPS_MAX);
        memcpy(m->backups, r->backups, sizeof(m->backups[0]) * m->n_backups);
        m->backup_warning[0] = 0;
        for (unsigned i = 0; i < m->n_backups; i++) {
                const PassBackupInfo *b = &m->backups[i];
                if (b->newest == 0 || b->interval == 0 || realtime_now <= b->newest ||
                    realtime_now - b->newest <= 2 * b->interval)
                        continue;
                snprintf(m->backup_warning, sizeof(m->backup_warning),
                         "the newest etcd backup of %s is %llu min old (interval %llu min)", b->cluster,
                         (unsigned long long)((realtime_now - b->newest) / (60 * USEC_PER_SEC)),
                         (unsigned long long)(b->interval / (60 * USEC_PER_SEC)));
                break;
        }
}

void metrics_observe(Metrics *m, const PassReport *r, usec_t realtime_now) {
        double secs = (double)r->duration / USEC_PER_SEC;

        m->passes++;
        for (size_t i = 0; i < PASS_DURATION_BUCKETS; i++)
                if (secs <= pass_duration_buckets[i])
                        m->duration_bucket[i]++;
        m->duration_sum += secs;
        for (size_t i = 0; i < _PASS_STAGE_MAX; i++)
                m->errors[i] += r->errors[i];
        for (size_t i = 0; i < PASS_JOIN_OUTCOME_KINDS; i++)
                m->join_outcomes[i] += r->join_outcomes[i];
        m->volumes_held = r->volumes_held;
        m->volumes_member_conflicts = r->volumes_member_conflicts;
        m->records_published = r->records_published;
        m->have_pass = true;
        m->last_status = r->status;
        if (r->status == 0)
                m->last_success_realtime = realtime_now;
        if (r->status < 0 && r->status != PK_EWAITING)
                m->passes_failed++;
        snprintf(m->last_reason, sizeof(m->last_reason), "%s", r->reason ? r->reason : "");
        if (r->certs_known)
                metrics_observe_certs(m, r, realtime_now);
        if (r->backups_known)
                metrics_observe_backups(m, r, realtime_now);
        m->n_etcd_versions = MIN(r->n_etcd_versions, (unsigned)PASS_ETCD_VERSIONS_MAX);
        memcpy(m->etcd_versions, r->etcd_versions, sizeof(m->etcd_versions[0]) * m->n_etcd_versions);
        if (r->dns_pending_known) {
                m->dns_pending = r->dns_pending;
                m->dns_pending_oldest = r->dns_pending_oldest;
                snprintf(m->dns_pending_oldest_id, sizeof(m->dns_pending_oldest_id), "%s",
                         r->dns_pending_oldest_id);
        }
        if (r->kubelet.known)
                m->kubelet = r->kubelet;
        if (r->checkpoint_known) {
                m->checkpoint_known = true;
                m->checkpoint_active = r->checkpoint_active;
                m->checkpoint_written = r->checkpoint_written;
        }
}

static usec_t dns_pending_age(const Metrics *m) {
        usec_t t = now(CLOCK_MONOTONIC);
        return m->dns_pending > 0 && t > m->dns_pending_oldest ? t - m->dns_pending_oldest : 0;
}

int metrics_format(const Metrics *m, Buf *out) {
        int r = 0;

#define EMIT(...)                                         \
        do {                                              \
                if (r >= 0)                               \
                        r = buf_printf(out, __VA_ARGS__); \
        } while (0)

        EMIT("# HELP protokube_passes_total Reconcile passes run.\n# TYPE protokube_passes_total counter\n");
        EMIT("protokube_passes_total %llu\n", (unsigned long long)m->passes);
        EMIT("# HELP protokube_passes_failed_total Passes that ended in an error.\n"
             "# TYPE protokube_passes_failed_total counter\n");
        EMIT("protokube_passes_failed_total %llu\n", (unsigned long long)m->passes_failed);
        EMIT("# HELP protokube_pass_duration_seconds Duration of a reconcile pass.\n"
             "# TYPE protokube_pass_duration_seconds histogram\n");
        for (size_t i = 0; i < PASS_DURATION_BUCKETS; i++)
                EMIT("protokube_pass_duration_seconds_bucket{le=\"%g\"} %llu\n", pass_duration_buckets[i],
                     (unsigned long long)m->duration_bucket[i]);
        EMIT("protokube_pass_duration_seconds_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)m->passes);
        EMIT("protokube_pass_duration_seconds_sum %.6f\n", m->duration_sum);
        EMIT("protokube_pass_duration_seconds_count %llu\n", (unsigned long long)m->passes);
        EMIT("# HELP protokube_errors_total Errors by pipeline stage.\n# TYPE protokube_errors_total "
             "counter\n");
        for (size_t i = 0; i < _PASS_STAGE_MAX; i++)
                EMIT("protokube_errors_total{stage=\"%s\"} %llu\n", pass_stage_table[i],
                     (unsigned long long)m->errors[i]);
        EMIT(
            "# HELP protokube_join_csr_outcomes_total What the masters' approver and signer of kubelet CSRs "
            "did, by outcome (a refusal counts when its reason for that CSR changes).\n"
            "# TYPE protokube_join_csr_outcomes_total counter\n");
        for (size_t i = 0; i < PASS_JOIN_OUTCOME_KINDS; i++)
                EMIT("protokube_join_csr_outcomes_total{outcome=\"%s\"} %llu\n",
                     join_outcome_kind_to_string((JoinOutcomeKind)i),
                     (unsigned long long)m->join_outcomes[i]);
        EMIT("# HELP protokube_volumes_held etcd volumes this node holds and has mounted.\n"
             "# TYPE protokube_volumes_held gauge\n");
        EMIT("protokube_volumes_held %u\n", m->volumes_held);
        EMIT("# HELP protokube_volumes_member_conflicts Volumes naming an etcd member that another volume "
             "holds (ineligible; see the log).\n"
             "# TYPE protokube_volumes_member_conflicts gauge\n");
        EMIT("protokube_volumes_member_conflicts %u\n", m->volumes_member_conflicts);
        EMIT("# HELP protokube_dns_records_published Desired DNS records the provider serves.\n"
             "# TYPE protokube_dns_records_published gauge\n");
        EMIT("protokube_dns_records_published %u\n", m->records_published);
        EMIT("# HELP protokube_dns_changes_pending DNS changes accepted by the provider and not yet served "
             "by "
             "all its name servers (Route 53: not INSYNC).\n# TYPE protokube_dns_changes_pending gauge\n");
        EMIT("protokube_dns_changes_pending %u\n", m->dns_pending);
        EMIT("# HELP protokube_dns_change_pending_seconds How long the oldest pending DNS change has been "
             "propagating, 0 when none.\n# TYPE protokube_dns_change_pending_seconds gauge\n");
        EMIT("protokube_dns_change_pending_seconds %.3f\n", (double)dns_pending_age(m) / USEC_PER_SEC);
        EMIT("# HELP protokube_pass_running 1 while a pass runs.\n"
             "# TYPE protokube_pass_running gauge\n");
        EMIT("protokube_pass_running %d\n", m->running ? 1 : 0);
        EMIT("# HELP protokube_pass_running_seconds How long the running pass has run, 0 when none.\n"
             "# TYPE protokube_pass_running_seconds gauge\n");
        EMIT("protokube_pass_running_seconds %.3f\n", m->running_seconds);
        EMIT("# HELP protokube_last_success_timestamp_seconds Unix time of the last converged pass.\n"
             "# TYPE protokube_last_success_timestamp_seconds gauge\n");
        EMIT("protokube_last_success_timestamp_seconds %.3f\n",
             (double)m->last_success_realtime / USEC_PER_SEC);
        EMIT("# HELP protokube_certificate_expiry_timestamp_seconds Unix time at which a certificate "
             "protokube manages expires (notAfter).\n"
             "# TYPE protokube_certificate_expiry_timestamp_seconds gauge\n");
        for (unsigned i = 0; i < m->n_certs; i++)
                EMIT("protokube_certificate_expiry_timestamp_seconds{certificate=\"%s\"} %llu\n",
                     m->certs[i].name, (unsigned long long)(m->certs[i].not_after / USEC_PER_SEC));
        usec_t realtime = now(CLOCK_REALTIME);
        EMIT("# HELP protokube_etcd_backup_age_seconds Age of the newest complete backup of an etcd cluster "
             "in the state store.\n# TYPE protokube_etcd_backup_age_seconds gauge\n");
        for (unsigned i = 0; i < m->n_backups; i++)
                if (m->backups[i].newest)
                        EMIT("protokube_etcd_backup_age_seconds{cluster=\"%s\"} %llu\n",
                             m->backups[i].cluster,
                             (unsigned long long)((realtime > m->backups[i].newest
                                                       ? realtime - m->backups[i].newest
                                                       : 0) /
                                                  USEC_PER_SEC));
        EMIT("# HELP protokube_etcd_backup_size_bytes Size of the newest complete backup of an etcd "
             "cluster.\n# TYPE protokube_etcd_backup_size_bytes gauge\n");
        for (unsigned i = 0; i < m->n_backups; i++)
                if (m->backups[i].newest)
                        EMIT("protokube_etcd_backup_size_bytes{cluster=\"%s\"} %llu\n",
                             m->backups[i].cluster, (unsigned long long)m->backups[i].size);
        EMIT("# HELP protokube_etcd_version_info The etcd version each member runs (\"\": it did not "
             "answer), the wanted and the cluster version, and this master's step of the change, while one "
             "of its members may change version.\n# TYPE protokube_etcd_version_info gauge\n");
        for (unsigned i = 0; i < m->n_etcd_versions; i++) {
                const PassEtcdVersionInfo *v = &m->etcd_versions[i];
                EMIT("protokube_etcd_version_info{cluster=\"%s\",member=\"%s\",running=\"%s\",wanted=\"%s\","
                     "cluster_version=\"%s\",step=\"%s\"} 1\n",
                     v->cluster, v->member, v->running, v->wanted, v->cluster_version, v->step);
        }
        EMIT("# HELP protokube_etcd_backups_unreadable Backups of an etcd cluster whose manifest is in the "
             "state store but cannot be read (retention deletes nothing while there are any).\n"
             "# TYPE protokube_etcd_backups_unreadable gauge\n");
        for (unsigned i = 0; i < m->n_backups; i++)
                EMIT("protokube_etcd_backups_unreadable{cluster=\"%s\"} %u\n", m->backups[i].cluster,
                     m->backups[i].unreadable);
        if (m->kubelet.known) {
                EMIT("# HELP protokube_kubelet_holder_info Which kubelet holds the node's lock: the "
                     "bootstrap one of the init system, the managed one of the DaemonSet (its pod), or "
                     "none.\n"
                     "# TYPE protokube_kubelet_holder_info gauge\n");
                EMIT("protokube_kubelet_holder_info{holder=\"%s\",pod=\"%s\"} 1\n", m->kubelet.holder,
                     m->kubelet.pod);
                EMIT("# HELP protokube_kubelet_holder_since_seconds When the kubelet holding the node "
                     "started (Unix time).\n# TYPE protokube_kubelet_holder_since_seconds gauge\n");
                if (m->kubelet.since)
                        EMIT("protokube_kubelet_holder_since_seconds %llu\n",
                             (unsigned long long)(m->kubelet.since / USEC_PER_SEC));
        }
        if (m->checkpoint_known) {
                EMIT("# HELP protokube_checkpoint_active 1 while the checkpoint of the self-hosted pods is "
                     "in "
                     "kubelet's manifest directory (the API was down at boot).\n"
                     "# TYPE protokube_checkpoint_active gauge\n");
                EMIT("protokube_checkpoint_active %d\n", m->checkpoint_active ? 1 : 0);
                EMIT("# HELP protokube_checkpoint_generation_age_seconds Age of the checkpoint's current "
                     "generation (written when the self-hosted pods changed).\n"
                     "# TYPE protokube_checkpoint_generation_age_seconds gauge\n");
                if (m->checkpoint_written)
                        EMIT("protokube_checkpoint_generation_age_seconds %llu\n",
                             (unsigned long long)((realtime > m->checkpoint_written
                                                       ? realtime - m->checkpoint_written
                                                       : 0) /
                                                  USEC_PER_SEC));
        }
#undef EMIT
        return r;
}

void metrics_set_running(Metrics *m, const PassProgress *p, usec_t now_monotonic) {
        m->running = p->running;
        m->running_seconds = p->running && now_monotonic > p->pass_started
                                 ? (double)(now_monotonic - p->pass_started) / USEC_PER_SEC
                                 : 0;
        pass_progress_describe(p, now_monotonic, m->running_step, sizeof(m->running_step));
}

/* "kubelet: managed since 2026-11-29T11:40:01Z", "kubelet: bootstrap since ...", "kubelet: none holds
 * the node"; "" without a self-hosted kubelet. */
static void kubelet_held(const Metrics *m, char *buf, size_t size) {
        char since[RFC3339_MAX];
        if (!m->kubelet.known)
                return;
        if (m->kubelet.since)
                snprintf(buf, size, "kubelet: %s since %s", m->kubelet.holder,
                         format_rfc3339(since, m->kubelet.since));
        else
                snprintf(buf, size, "kubelet: %s holds the node", m->kubelet.holder);
}

int health_status(const Metrics *m, char *body, size_t size) {
        bool failed = m->have_pass && m->last_status < 0 && m->last_status != PK_EWAITING;
        if (m->running && !failed) {
                snprintf(body, size, "converging: %s\n", m->running_step);
                return 200;
        }
        if (m->running) {
                snprintf(body, size, "error: %s (retrying: %s)\n",
                         m->last_reason[0] ? m->last_reason : pk_strerror(m->last_status), m->running_step);
                return 503;
        }
        if (!m->have_pass) {
                snprintf(body, size, "starting: no pass has finished yet\n");
                return 503;
        }
        char dns[DNS_CHANGE_ID_MAX + 80] = "";
        usec_t age = dns_pending_age(m);
        if (age > DNS_PENDING_WARNING)
                snprintf(dns, sizeof(dns), "DNS change %s is still PENDING after %llu s",
                         m->dns_pending_oldest_id, (unsigned long long)(age / USEC_PER_SEC));
        char held[96] = "";
        kubelet_held(m, held, sizeof(held));
        if (m->last_status == 0) {
                const char *w[3] = { m->cert_warning, m->backup_warning, dns };
                char warnings[sizeof(m->cert_warning) + sizeof(m->backup_warning) + sizeof(dns) + 8] = "";
                for (size_t i = 0, at = 0; i < ELEMENTSOF(w); i++)
                        if (w[i][0] && at < sizeof(warnings))
                                at += (size_t)snprintf(warnings + at, sizeof(warnings) - at, "%s%s",
                                                       at ? "; " : "", w[i]);
                char notes[sizeof(held) + sizeof(warnings) + 16];
                snprintf(notes, sizeof(notes), "%s%s%s%s", held, held[0] && warnings[0] ? "; " : "",
                         warnings[0] ? "warning: " : "", warnings);
                if (notes[0])
                        snprintf(body, size, "ok (%s)\n", notes);
                else
                        snprintf(body, size, "ok\n");
                return 200;
        }
        if (m->last_status == PK_EWAITING) {
                snprintf(body, size, "converging: %s%s%s%s%s%s%s\n", m->last_reason, held[0] ? " (" : "",
                         held, held[0] ? ")" : "", dns[0] ? " (warning: " : "", dns, dns[0] ? ")" : "");
                return 200;
        }
        snprintf(body, size, "error: %s\n",
                 m->last_reason[0] ? m->last_reason : pk_strerror(m->last_status));
        return 503;
}
