/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "basic/errors.h"
#include "daemon/http-server.h"
#include "daemon/loop.h"
#include "daemon/pass.h"
#include "daemon/report.h"
#include "daemon/step-backups.h"
#include "unit-test.h"

static void test_backoff(void **state) {
        usec_t s = USEC_PER_SEC;
        assert_int_equal(backoff_delay(s, 10 * s, 1, 0), s);
        assert_int_equal(backoff_delay(s, 10 * s, 2, 0), 2 * s);
        assert_int_equal(backoff_delay(s, 10 * s, 3, 0), 4 * s);
        assert_int_equal(backoff_delay(s, 10 * s, 5, 0), 10 * s);
        assert_int_equal(backoff_delay(s, 10 * s, 500, 0), 10 * s);
        /* jitter keeps the delay within [80%, 100%] */
        usec_t j = backoff_delay(s, 10 * s, 2, 0.999);
        assert_true(j > 16 * s / 10 && j <= 2 * s);
}

/* While a pass runs, /healthz says which step it is in and for how long. */
static void test_health_while_running(void **state) {
        Metrics m = {};
        char body[600];
        PassProgress p = { .running = true,
                           .pass_started = 10 * USEC_PER_SEC,
                           .step_started = 20 * USEC_PER_SEC };
        snprintf(p.step, sizeof(p.step), "e2fsck vol-x");
        metrics_set_running(&m, &p, 32 * USEC_PER_SEC + 1);
        assert_int_equal(health_status(&m, body, sizeof(body)), 200); /* first pass still running */
        assert_string_equal(body, "converging: e2fsck vol-x (12 s)\n");

        PassReport bad = { .duration = 1 };
        pass_report_error(&bad, PASS_STAGE_DNS, PK_ETIMEOUT, "server timed out");
        metrics_observe(&m, &bad, 0);
        pass_report_done(&bad);
        assert_int_equal(health_status(&m, body, sizeof(body)), 503);
        assert_string_equal(body, "error: server timed out (retrying: e2fsck vol-x (12 s))\n");

        Buf b;
        buf_init(&b, 1 << 16);
        assert_int_equal(metrics_format(&m, &b), 0);
        assert_non_null(strstr((const char *)b.data, "protokube_pass_running 1\n"));
        assert_non_null(strstr((const char *)b.data, "protokube_pass_running_seconds 22.000\n"));
        buf_free(&b);

        p.running = false;
        metrics_set_running(&m, &p, 40 * USEC_PER_SEC);
        assert_int_equal(health_status(&m, body, sizeof(body)), 503);
        assert_non_null(strstr(body, "error: server timed out\n"));
}

static void test_metrics_and_health(void **state) {
        Metrics m = {};
        char body[600];
        Buf b;

        assert_int_equal(health_status(&m, body, sizeof(body)), 503);
        assert_non_null(strstr(body, "starting"));

        PassReport ok = {
                .status = 0, .duration = 3 * USEC_PER_MSEC, .volumes_held = 2, .records_published = 5
        };
        metrics_observe(&m, &ok, 1700000000ULL * USEC_PER_SEC);
        assert_int_equal(health_status(&m, body, sizeof(body)), 200);

        PassReport wait = { .duration = 1 };
        pass_report_error(&wait, PASS_STAGE_CLAIM, PK_EWAITING, "no free volume for etcd cluster 'main'");
        metrics_observe(&m, &wait, 0);
        assert_int_equal(health_status(&m, body, sizeof(body)), 200);
        assert_non_null(strstr(body, "converging: no free volume"));
        assert_int_equal(m.errors[PASS_STAGE_CLAIM], 0);
        pass_report_done(&wait);

        PassReport bad = { .duration = 2 * USEC_PER_SEC };
        pass_report_error(&bad, PASS_STAGE_DNS, PK_ETIMEOUT, "server 127.0.0.1:53 timed out");
        pass_report_error(&bad, PASS_STAGE_MOUNT, -EIO, "second error keeps the first reason");
        metrics_observe(&m, &bad, 0);
        assert_int_equal(health_status(&m, body, sizeof(body)), 503);
        assert_non_null(strstr(body, "127.0.0.1:53 timed out"));
        pass_report_done(&bad);

        buf_init(&b, 1 << 16);
        assert_int_equal(metrics_format(&m, &b), 0);
        const char *t = (const char *)b.data;
        assert_non_null(strstr(t, "protokube_passes_total 3\n"));
        assert_non_null(strstr(t, "protokube_passes_failed_total 1\n"));
        assert_non_null(strstr(t, "protokube_errors_total{stage=\"dns\"} 1\n"));
        assert_non_null(strstr(t, "protokube_errors_total{stage=\"mount\"} 1\n"));
        assert_non_null(strstr(t, "protokube_errors_total{stage=\"pivot\"} 0\n")); /* docs/pivot.md */
        assert_non_null(strstr(t, "protokube_pass_duration_seconds_bucket{le=\"0.005\"} 2\n"));
        assert_non_null(strstr(t, "protokube_pass_duration_seconds_bucket{le=\"+Inf\"} 3\n"));
        assert_non_null(strstr(t, "protokube_last_success_timestamp_seconds 1700000000.000\n"));
        buf_free(&b);
}

/* The etcd versions a pass saw while a member may change version: one line each; a pass that saw none (the
 * change over) leaves none. */
static void test_etcd_versions(void **state) {
        Metrics m = {};
        Buf b;
        PassReport r = { .n_etcd_versions = 2 };
        r.etcd_versions[0] = (PassEtcdVersionInfo){ .cluster = "main",
                                                    .member = "etcd-a",
                                                    .running = "3.5.16",
                                                    .wanted = "3.5.16",
                                                    .cluster_version = "3.4.0",
                                                    .step = "wait:turn" };
        r.etcd_versions[1] = (PassEtcdVersionInfo){ .cluster = "main",
                                                    .member = "etcd-b",
                                                    .wanted = "3.5.16",
                                                    .cluster_version = "3.4.0",
                                                    .step = "wait:turn" };
        metrics_observe(&m, &r, 0);
        buf_init(&b, 1 << 16);
        assert_int_equal(metrics_format(&m, &b), 0);
        assert_non_null(strstr((const char *)b.data, "# TYPE protokube_etcd_version_info gauge\n"));
        assert_non_null(
            strstr((const char *)b.data,
                   "protokube_etcd_version_info{cluster=\"main\",member=\"etcd-a\",running=\"3.5.16\","
                   "wanted=\"3.5.16\",cluster_version=\"3.4.0\",step=\"wait:turn\"} 1\n"));
        assert_non_null(strstr((const char *)b.data, "member=\"etcd-b\",running=\"\","));
        buf_free(&b);
        PassReport quiet = {};
        metrics_observe(&m, &quiet, 0);
        buf_init(&b, 1 << 16);
        assert_int_equal(metrics_format(&m, &b), 0);
        assert_null(strstr((const char *)b.data, "protokube_etcd_version_info{"));
        buf_free(&b);
}

/* Which kubelet holds the node: /healthz's "ok (kubelet: ... since ...)" beside the warnings, /metrics'
 * holder; a pass that does not look (no self-hosted kubelet) keeps the last. */
static void test_kubelet_holder(void **state) {
        Metrics m = {};
        Buf b;
        char body[1024];
        PassReport r = { .kubelet = { .known = true,
                                      .holder = "managed",
                                      .pod = "3f1c0000-0000-4000-8000-00000000abcd",
                                      .since = 1795000000ULL * USEC_PER_SEC } };
        assert_int_equal(health_status(&m, body, sizeof(body)), 503); /* no pass yet */
        metrics_observe(&m, &r, 0);
        assert_int_equal(health_status(&m, body, sizeof(body)), 200);
        assert_string_equal(body, "ok (kubelet: managed since 2026-11-18T11:06:40Z)\n");
        buf_init(&b, 1 << 16);
        assert_int_equal(metrics_format(&m, &b), 0);
        assert_non_null(strstr((const char *)b.data, "protokube_kubelet_holder_info{holder=\"managed\","
                                                     "pod=\"3f1c0000-0000-4000-8000-00000000abcd\"} 1\n"));
        assert_non_null(strstr((const char *)b.data, "protokube_kubelet_holder_since_seconds 1795000000\n"));
        buf_free(&b);
        PassReport quiet = {};
        metrics_observe(&m, &quiet, 0);
        assert_int_equal(health_status(&m, body, sizeof(body)), 200);
        assert_non_null(strstr(body, "kubelet: managed since"));
        PassReport waiting = { .status = PK_EWAITING,
                               .reason = (char *)"pivot: wait-api",
                               .kubelet = { .known = true, .holder = "bootstrap", .since = 0 } };
        metrics_observe(&m, &waiting, 0);
        assert_int_equal(health_status(&m, body, sizeof(body)), 200);
        assert_string_equal(body, "converging: pivot: wait-api (kubelet: bootstrap holds the node)\n");
}

/* The newest backup of each cluster: its size, an age, and a warning past twice its interval. */
static void test_backups(void **state) {
        Metrics m = {};
        char body[600];
        Buf b;
        usec_t t = 1700000000ULL * USEC_PER_SEC, interval = 15 * 60 * USEC_PER_SEC;
        PassReport r = { .backups_known = true, .n_backups = 2 };
        r.backups[0] = (PassBackupInfo){
                .cluster = "main", .newest = t - 5 * 60 * USEC_PER_SEC, .size = 4096, .interval = interval
        };
        r.backups[1] = (PassBackupInfo){ .cluster = "events", .newest = 0, .interval = interval };
        metrics_observe(&m, &r, t);
        assert_int_equal(health_status(&m, body, sizeof(body)), 200);
        assert_string_equal(body, "ok\n"); /* 5 min old; none yet for events is no warning */
        buf_init(&b, 1 << 16);
        assert_int_equal(metrics_format(&m, &b), 0);
        const char *text = (const char *)b.data;
        assert_non_null(strstr(text, "protokube_etcd_backup_size_bytes{cluster=\"main\"} 4096\n"));
        assert_non_null(strstr(text, "protokube_etcd_backup_age_seconds{cluster=\"main\"} "));
        assert_null(strstr(text, "protokube_etcd_backup_age_seconds{cluster=\"events\""));
        assert_null(strstr(text, "protokube_etcd_backup_size_bytes{cluster=\"events\""));
        assert_non_null(strstr(text, "# TYPE protokube_etcd_backups_unreadable gauge\n"));
        assert_non_null(strstr(text, "protokube_etcd_backups_unreadable{cluster=\"events\"} 0\n"));
        buf_free(&b);

        /* backups that cannot be read: the gauge counts them, the pass's error says why */
        PassReport bad = { .backups_known = true, .n_backups = 1 };
        bad.backups[0] = r.backups[0];
        bad.backups[0].unreadable = 2;
        pass_report_error(&bad, PASS_STAGE_BACKUP, -EIO,
                          "etcd main: 2 backup(s) cannot be read, so none is deleted until they can");
        metrics_observe(&m, &bad, t);
        pass_report_done(&bad);
        assert_int_equal(health_status(&m, body, sizeof(body)), 503);
        assert_string_equal(
            body, "error: etcd main: 2 backup(s) cannot be read, so none is deleted until they can\n");
        buf_init(&b, 1 << 16);
        assert_int_equal(metrics_format(&m, &b), 0);
        assert_non_null(
            strstr((const char *)b.data, "protokube_etcd_backups_unreadable{cluster=\"main\"} 2\n"));
        assert_non_null(strstr((const char *)b.data, "protokube_errors_total{stage=\"etcd-backups\"} 1\n"));
        buf_free(&b);

        r.backups[0].newest = t - 31 * 60 * USEC_PER_SEC;
        metrics_observe(&m, &r, t);
        assert_int_equal(health_status(&m, body, sizeof(body)), 200);
        assert_string_equal(
            body, "ok (warning: the newest etcd backup of main is 31 min old (interval 15 min))\n");
        /* a pass that did not look at backups keeps what the last one saw */
        PassReport quiet = {};
        metrics_observe(&m, &quiet, t);
        assert_int_equal(m.n_backups, 2);
}

static usec_t fake_monotonic;

static usec_t fake_clock(clockid_t clock, void *userdata) {
        struct timespec ts;
        if (clock == CLOCK_MONOTONIC)
                return fake_monotonic;
        clock_gettime(clock, &ts);
        return (usec_t)ts.tv_sec * USEC_PER_SEC + (usec_t)ts.tv_nsec / NSEC_PER_USEC;
}

/* DNS changes still propagating (Route 53 not INSYNC yet): counted and aged on /metrics at the time of the
 * request; /healthz warns, naming the change, once the oldest is pending past DNS_PENDING_WARNING (the old
 * in-pass wait's bound); a pass that did not look keeps what the last one saw; INSYNC clears it. */
static void test_dns_pending(void **state) {
        Metrics m = {};
        char body[600];
        Buf b;
        fake_monotonic = 1000 * USEC_PER_SEC;
        clock_override(fake_clock, NULL);
        PassReport r = { .dns_pending_known = true,
                         .dns_pending = 2,
                         .dns_pending_oldest = 990 * USEC_PER_SEC };
        snprintf(r.dns_pending_oldest_id, sizeof(r.dns_pending_oldest_id), "C2682N5HXP0BZ4");
        metrics_observe(&m, &r, 1700000000ULL * USEC_PER_SEC);
        assert_int_equal(health_status(&m, body, sizeof(body)), 200);
        assert_string_equal(body, "ok\n"); /* 10 s: propagating, as Route 53 does */
        buf_init(&b, 1 << 16);
        assert_int_equal(metrics_format(&m, &b), 0);
        assert_non_null(strstr((const char *)b.data, "protokube_dns_changes_pending 2\n"));
        assert_non_null(strstr((const char *)b.data, "protokube_dns_change_pending_seconds 10.000\n"));
        buf_free(&b);

        PassReport quiet = {};
        metrics_observe(&m, &quiet, 1700000000ULL * USEC_PER_SEC);
        fake_monotonic = 1105 * USEC_PER_SEC; /* the age grows between passes: 115 s */
        assert_int_equal(health_status(&m, body, sizeof(body)), 200);
        assert_string_equal(body, "ok\n");
        fake_monotonic = 1121 * USEC_PER_SEC;
        assert_int_equal(health_status(&m, body, sizeof(body)), 200);
        assert_string_equal(body, "ok (warning: DNS change C2682N5HXP0BZ4 is still PENDING after 131 s)\n");

        PassReport wait = { .dns_pending_known = true,
                            .dns_pending = 1,
                            .dns_pending_oldest = 990 * USEC_PER_SEC };
        snprintf(wait.dns_pending_oldest_id, sizeof(wait.dns_pending_oldest_id), "C2682N5HXP0BZ4");
        pass_report_error(&wait, PASS_STAGE_CLAIM, PK_EWAITING, "no free volume");
        metrics_observe(&m, &wait, 0);
        pass_report_done(&wait);
        assert_int_equal(health_status(&m, body, sizeof(body)), 200);
        assert_string_equal(
            body, "converging: no free volume (warning: DNS change C2682N5HXP0BZ4 is still PENDING "
                  "after 131 s)\n");

        PassReport insync = { .dns_pending_known = true };
        metrics_observe(&m, &insync, 0);
        assert_int_equal(health_status(&m, body, sizeof(body)), 200);
        assert_string_equal(body, "ok\n");
        buf_init(&b, 1 << 16);
        assert_int_equal(metrics_format(&m, &b), 0);
        assert_non_null(strstr((const char *)b.data, "protokube_dns_changes_pending 0\n"));
        assert_non_null(strstr((const char *)b.data, "protokube_dns_change_pending_seconds 0.000\n"));
        buf_free(&b);
        clock_override(NULL, NULL);
}

/* The checkpoint (docs/pivot.md): absent without selfHosted; active and its generation's age once a pass
 * took its step; an active checkpoint is a converging pass that says so. */
static void test_checkpoint(void **state) {
        Metrics m = {};
        char body[600];
        Buf b;
        PassReport quiet = { .duration = 1 };
        metrics_observe(&m, &quiet, 0);
        buf_init(&b, 1 << 16);
        assert_int_equal(metrics_format(&m, &b), 0);
        assert_null(strstr((const char *)b.data, "protokube_checkpoint_active"));
        assert_non_null(strstr((const char *)b.data, "protokube_errors_total{stage=\"checkpoint\"} 0\n"));
        buf_free(&b);

        usec_t written = now(CLOCK_REALTIME) - 90 * USEC_PER_SEC;
        PassReport r = { .checkpoint_known = true,
                         .checkpoint_active = true,
                         .checkpoint_written = written };
        pass_report_error(&r, PASS_STAGE_CHECKPOINT, PK_EWAITING,
                          "checkpoint active: wait: the self-hosted "
                          "kube-apiserver on a has not been Ready");
        metrics_observe(&m, &r, now(CLOCK_REALTIME));
        assert_int_equal(health_status(&m, body, sizeof(body)), 200);
        assert_string_equal(body,
                            "converging: checkpoint active: wait: the self-hosted kube-apiserver on a has "
                            "not been Ready\n");
        assert_int_equal(m.errors[PASS_STAGE_CHECKPOINT], 0);
        buf_init(&b, 1 << 16);
        assert_int_equal(metrics_format(&m, &b), 0);
        const char *t = (const char *)b.data;
        assert_non_null(strstr(t, "protokube_checkpoint_active 1\n"));
        const char *age = strstr(t, "\nprotokube_checkpoint_generation_age_seconds ");
        assert_non_null(age);
        unsigned long long secs =
            strtoull(age + 1 + strlen("protokube_checkpoint_generation_age_seconds "), NULL, 10);
        assert_true(secs >= 90 && secs < 120);
        buf_free(&b);
        pass_report_done(&r);

        /* retired, and no generation: active 0, no age */
        PassReport off = { .checkpoint_known = true };
        metrics_observe(&m, &off, now(CLOCK_REALTIME));
        buf_init(&b, 1 << 16);
        assert_int_equal(metrics_format(&m, &b), 0);
        assert_non_null(strstr((const char *)b.data, "protokube_checkpoint_active 0\n"));
        assert_null(strstr((const char *)b.data, "\nprotokube_checkpoint_generation_age_seconds "));
        buf_free(&b);
}

static void test_listen_address(void **state) {
        struct sockaddr_storage sa;
        unsigned len;
        assert_int_equal(parse_listen_address("127.0.0.1:9797", &sa, &len), 0);
        assert_int_equal(sa.ss_family, AF_INET);
        assert_int_equal(parse_listen_address("[::1]:0", &sa, &len), 0);
        assert_int_equal(sa.ss_family, AF_INET6);
        assert_int_equal(parse_listen_address("localhost:80", &sa, &len), -EINVAL);
        assert_int_equal(parse_listen_address("127.0.0.1", &sa, &len), -EINVAL);
        assert_int_equal(parse_listen_address("127.0.0.1:99999", &sa, &len), -EINVAL);
}

/* When an idle pass lists an etcd cluster's backups again: never listed, a new slot, or the slot's backup
 * not seen yet and the last listing a minute old; not while the slot's backup is known to be there. */
static void test_backup_list_due(void **state) {
        usec_t slot = 1767225600ULL * USEC_PER_SEC, interval = 15 * 60 * USEC_PER_SEC,
               t = 5000 * USEC_PER_SEC;
        assert_true(pass_backup_list_due(NULL, slot, t));
        PassBackupSeen seen = { .slot = slot,
                                .listed_at = t,
                                .info = { .newest = slot, .interval = interval } };
        /* the slot's backup was listed: not again within the slot, however long it lasts */
        assert_false(pass_backup_list_due(&seen, slot, t + 1));
        assert_false(pass_backup_list_due(&seen, slot, t + interval - 1));
        /* the next slot: its backup is due, listed at once */
        assert_true(pass_backup_list_due(&seen, slot + interval, t + interval));
        /* the slot's backup not seen yet (another master may take it): again after PASS_BACKUP_RELIST_USEC
         */
        seen.info.newest = slot - interval;
        assert_false(pass_backup_list_due(&seen, slot, t + 1));
        assert_false(pass_backup_list_due(&seen, slot, t + PASS_BACKUP_RELIST_USEC - 1));
        assert_true(pass_backup_list_due(&seen, slot, t + PASS_BACKUP_RELIST_USEC));
        seen.info.newest = 0; /* no backup at all yet */
        assert_true(pass_backup_list_due(&seen, slot, t + PASS_BACKUP_RELIST_USEC));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_backoff),
                cmocka_unit_test(test_metrics_and_health),
                cmocka_unit_test(test_health_while_running),
                cmocka_unit_test(test_backups),
                cmocka_unit_test(test_etcd_versions),
                cmocka_unit_test(test_kubelet_holder),
                cmocka_unit_test(test_backup_list_due),
                cmocka_unit_test(test_dns_pending),
                cmocka_unit_test(test_checkpoint),
                cmocka_unit_test(test_listen_address),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
