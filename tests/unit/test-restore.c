/* SPDX-License-Identifier: Apache-2.0 */
/* The restore (docs/etcd-restore.md): its request and state documents (a bad one is refused naming the
 * field and the value), the members' reports in a directory store, and the pure decision of a member's next
 * step at every point a master may stop (kill -9 anywhere resumes). */
#include "unit-test.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backup/restore.h"
#include "basic/errors.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "store/store.h"

#define ID  "20261124T011500Z-1a2b3c4d"
#define ID2 "20261124T021500Z-00000001"

static void test_id(void **state) {
        (void)state;
        char id[RESTORE_ID_LEN + 1], id2[RESTORE_ID_LEN + 1];
        assert_int_equal(restore_id_new(1795000000ULL * USEC_PER_SEC, id), 0);
        assert_int_equal(restore_id_new(1795000000ULL * USEC_PER_SEC, id2), 0);
        assert_true(restore_id_is_valid(id));
        assert_string_not_equal(id, id2); /* the same second, two requests */
        assert_true(restore_id_is_valid(ID));
        assert_false(restore_id_is_valid("20261124T011500Z-1A2B3C4D"));
        assert_false(restore_id_is_valid("20261324T011500Z-1a2b3c4d"));
        assert_false(restore_id_is_valid("20261124T011500Z/1a2b3c4d"));
        assert_false(restore_id_is_valid(""));
        assert_false(restore_id_is_valid(NULL));
}

static void parse_fails(const char *text, const char *want) {
        RestoreRequest r = { .id = "unchanged" };
        char *err = NULL;
        assert_int_equal(restore_request_parse(text, strlen(text), &r, &err), PK_EMALFORMED);
        assert_non_null(err);
        if (!strstr(err, want))
                fail_msg("'%s' does not say '%s'", err, want);
        assert_string_equal(r.id, "unchanged"); /* ret_* written only on success */
        free(err);
}

static void test_request(void **state) {
        (void)state;
        static const char good[] =
            "{\"id\": \"" ID "\", \"snapshot\": \"20261124T010000Z\", \"requested\": \"20261124T011500Z\"}";
        RestoreRequest r;
        char *text = NULL, *err = NULL;
        assert_int_equal(restore_request_parse(good, strlen(good), &r, &err), 0);
        assert_string_equal(r.id, ID);
        assert_string_equal(r.snapshot, "20261124T010000Z");
        assert_int_equal(restore_request_format(&r, &text), 0);
        assert_non_null(strstr(text, "\"requested\": \"20261124T011500Z\""));
        free(text);

        parse_fails("{\"snapshot\": \"20261124T010000Z\", \"requested\": \"20261124T011500Z\"}",
                    "field 'id' is missing");
        parse_fails("{\"id\": \"" ID "\", \"snapshot\": \"yesterday\", \"requested\": \"20261124T011500Z\"}",
                    "field 'snapshot': invalid value 'yesterday'");
        parse_fails("{\"id\": \"" ID "\", \"snapshot\": 5, \"requested\": \"20261124T011500Z\"}",
                    "field 'snapshot' is not a string");
        parse_fails("{\"id\": \"../../etc\", \"snapshot\": \"20261124T010000Z\", \"requested\": \"x\"}",
                    "field 'id': invalid value '../../etc'");
        parse_fails("{\"id\": \"" ID "\", \"snapshot\": \"20261124T010000Z\"}",
                    "field 'requested' is missing");
        parse_fails("[]", "not a JSON object");
        parse_fails("{\"id\": ", "not JSON");
        parse_fails("{\"id\": \"a\", \"id\": \"b\"}", "not JSON"); /* duplicate keys */
}

static void test_state(void **state) {
        (void)state;
        static const char good[] = "{\"id\": \"" ID "\", \"step\": \"moved\"}";
        static const char bad[] = "{\"id\": \"" ID "\", \"step\": \"sideways\"}";
        RestoreState s;
        char *text = NULL, *err = NULL;
        assert_int_equal(restore_state_parse(good, strlen(good), &s, NULL), 0);
        assert_int_equal(s.step, RESTORE_STEP_MOVED);
        assert_int_equal(restore_state_format(&s, &text), 0);
        assert_non_null(strstr(text, "\"step\": \"moved\""));
        free(text);
        assert_int_equal(restore_state_parse(bad, strlen(bad), &s, &err), PK_EMALFORMED);
        assert_non_null(strstr(err, "field 'step': invalid value 'sideways'"));
        free(err);
        for (int i = 0; i < _RESTORE_STEP_MAX; i++)
                assert_int_equal(restore_step_from_string(restore_step_to_string(i)), i);
        assert_int_equal(restore_step_from_string("x"), _RESTORE_STEP_INVALID);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
        (void)st, (void)flag, (void)f;
        return remove(p);
}

static void test_store(void **state) {
        (void)state;
        char root[] = "/tmp/pk-restore-store-XXXXXX", url[64];
        assert_non_null(mkdtemp(root));
        snprintf(url, sizeof(url), "file://%s", root);
        Store *s = NULL;
        RestoreRequest r = { .id = ID,
                             .snapshot = "20261124T010000Z",
                             .requested = 1795000000ULL * USEC_PER_SEC },
                       got;
        RestoreProgress p = {};
        char *members[] = { "a", "b", "c", NULL };
        assert_int_equal(store_open(url, &s, NULL), 0);
        assert_int_equal(restore_request_get(s, "main", &got, NULL), -ENOENT);
        assert_int_equal(restore_request_put(s, "main", &r, NULL), 0);
        assert_int_equal(restore_request_get(s, "main", &got, NULL), 0);
        assert_string_equal(got.id, ID);

        assert_int_equal(restore_progress_get(s, "main", ID, &p, NULL), 0);
        assert_false(p.finished); /* nobody reported */
        restore_progress_done(&p);
        assert_int_equal(restore_report_put(s, "main", ID, "a", members, RESTORE_STEP_DONE, "n1", NULL), 0);
        assert_int_equal(restore_report_put(s, "main", ID, "b", members, RESTORE_STEP_MOVED, "n2", NULL), 0);
        assert_int_equal(restore_progress_get(s, "main", ID, &p, NULL), 0);
        assert_false(p.finished);
        assert_int_equal(strv_length(p.members), 3);
        assert_int_equal(strv_length(p.done), 1);
        assert_int_equal(strv_length(p.reported), 2);
        restore_progress_done(&p);
        assert_int_equal(restore_report_put(s, "main", ID, "b", members, RESTORE_STEP_DONE, "n2", NULL), 0);
        assert_int_equal(restore_report_put(s, "main", ID, "c", members, RESTORE_STEP_DONE, "n3", NULL), 0);
        assert_int_equal(restore_progress_get(s, "main", ID, &p, NULL), 0);
        assert_true(p.finished);
        restore_progress_done(&p);

        /* a report that cannot be read is an error naming its key */
        char path[128], *err = NULL;
        snprintf(path, sizeof(path), "%s/restores/main/%s/c.json", root, ID);
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        fputs("{\"member\": \"c\", \"members\": [], \"step\": \"done\"}", f);
        fclose(f);
        assert_int_equal(restore_progress_get(s, "main", ID, &p, &err), PK_EMALFORMED);
        assert_non_null(strstr(err, "restores/main/" ID "/c.json: field 'members'"));
        free(err);
        store_free(s);
        nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The upgrade's record of its pre-upgrade backup: stored and read back; a bad one names the field and the
 * value; an absent one is ENOENT. */
static void test_upgrade_record(void **state) {
        (void)state;
        char root[] = "/tmp/pk-upgrade-record-XXXXXX", url[64], *err = NULL, *text = NULL;
        assert_non_null(mkdtemp(root));
        snprintf(url, sizeof(url), "file://%s", root);
        Store *s = NULL;
        UpgradeRecord rec = { .backup = "20261129T080000Z", .from = "3.4.23", .to = "3.5.16", .node = "a" },
                      got;
        assert_int_equal(store_open(url, &s, NULL), 0);
        assert_int_equal(upgrade_record_get(s, "main", &got, NULL), -ENOENT);
        assert_int_equal(upgrade_record_put(s, "main", &rec, NULL), 0);
        assert_int_equal(upgrade_record_get(s, "main", &got, NULL), 0);
        assert_memory_equal(&rec, &got, sizeof(rec));
        assert_int_equal(upgrade_record_get(s, "events", &got, NULL), -ENOENT);
        assert_int_equal(upgrade_record_get(s, "../x", &got, &err), -EINVAL);
        free(err), err = NULL;

        static const struct {
                const char *text, *message;
        } bad[] = {
                { "{\"backup\": \"x\", \"from\": \"3.4.23\", \"to\": \"3.5.16\", \"node\": \"a\"}",
                  "field 'backup': invalid value 'x'" },
                { "{\"backup\": \"20261129T080000Z\", \"from\": \"3.4\", \"to\": \"3.5.16\", \"node\": "
                  "\"a\"}",
                  "field 'from': invalid value '3.4'" },
                { "{\"backup\": \"20261129T080000Z\", \"from\": \"3.4.23\", \"to\": \"3.5.16\"}",
                  "field 'node' is missing" },
                { "{\"backup\": \"20261129T080000Z\", \"from\": \"3.4.23\", \"to\": \"3.5.16\", \"node\": "
                  "\"a b\"}",
                  "field 'node': invalid value 'a b'" },
                { "[]", "not a JSON object" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                assert_int_equal(upgrade_record_parse(bad[i].text, strlen(bad[i].text), &got, &err),
                                 PK_EMALFORMED);
                if (!strstr(err, bad[i].message))
                        fail_msg("case %zu: %s", i, err);
                free(err), err = NULL;
        }
        UpgradeRecord invalid = rec;
        snprintf(invalid.to, sizeof(invalid.to), "3.5");
        assert_int_equal(upgrade_record_format(&invalid, &text), -EINVAL);
        assert_null(text);
        store_free(s);
        nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static const RestoreRequest request = { .id = ID, .snapshot = "20261124T010000Z" };

static RestoreDecision decide(RestoreFacts f) {
        RestoreDecision d;
        restore_decide(&f, &d);
        return d;
}

static RestoreState at(const char *id, RestoreStep step) {
        RestoreState s = { .step = step };
        snprintf(s.id, sizeof(s.id), "%s", id);
        return s;
}

static void test_decide_walk(void **state) {
        (void)state;
        RestoreState st;
        RestoreDecision d;
        /* no request, no state: nothing */
        d = decide((RestoreFacts){ .data_present = true });
        assert_int_equal(d.action, RESTORE_NOTHING);
        assert_false(d.in_progress);
        /* a request: download first, etcd keeps running meanwhile */
        d = decide((RestoreFacts){ .request = &request, .data_present = true });
        assert_int_equal(d.action, RESTORE_DOWNLOAD);
        assert_int_equal(d.next, RESTORE_STEP_DOWNLOADED);
        assert_false(d.in_progress);
        assert_string_equal(d.id, ID);
        /* a crash after the download, before the state was written: the file is there, go on */
        d = decide((RestoreFacts){ .request = &request, .snapshot_present = true, .data_present = true });
        assert_int_equal(d.action, RESTORE_STOP);
        st = at(ID, RESTORE_STEP_DOWNLOADED);
        d = decide((RestoreFacts){
            .request = &request, .state = &st, .snapshot_present = true, .data_present = true });
        assert_int_equal(d.action, RESTORE_STOP);
        assert_int_equal(d.next, RESTORE_STEP_STOPPING);
        assert_true(d.in_progress);
        /* etcd has not stopped yet: wait, never move its data under it */
        st = at(ID, RESTORE_STEP_STOPPING);
        d = decide((RestoreFacts){ .request = &request,
                                   .state = &st,
                                   .snapshot_present = true,
                                   .data_present = true,
                                   .etcd_running = true });
        assert_int_equal(d.action, RESTORE_WAIT_STOPPED);
        assert_true(d.in_progress);
        d = decide((RestoreFacts){
            .request = &request, .state = &st, .snapshot_present = true, .data_present = true });
        assert_int_equal(d.action, RESTORE_MOVE_ASIDE);
        assert_int_equal(d.next, RESTORE_STEP_MOVED);
        /* a crash after the rename, before the state: no data, the aside is there: the move is done */
        d = decide((RestoreFacts){
            .request = &request, .state = &st, .snapshot_present = true, .aside_present = true });
        assert_int_equal(d.action, RESTORE_MOVE_ASIDE);
        /* both: never overwrite either */
        d = decide((RestoreFacts){ .request = &request,
                                   .state = &st,
                                   .snapshot_present = true,
                                   .data_present = true,
                                   .aside_present = true });
        assert_int_equal(d.action, RESTORE_CONFLICT);
        st = at(ID, RESTORE_STEP_MOVED);
        d = decide((RestoreFacts){
            .request = &request, .state = &st, .snapshot_present = true, .aside_present = true });
        assert_int_equal(d.action, RESTORE_WRITE_MANIFEST);
        assert_true(d.restore_manifest);
        st = at(ID, RESTORE_STEP_RESTORING);
        d = decide((RestoreFacts){
            .request = &request, .state = &st, .snapshot_present = true, .aside_present = true });
        assert_int_equal(d.action, RESTORE_WAIT_HEALTHY);
        assert_true(d.restore_manifest);
        /* healthy but without its data (an etcd that is not ours): not done */
        d = decide((RestoreFacts){
            .request = &request, .state = &st, .snapshot_present = true, .member_healthy = true });
        assert_int_equal(d.action, RESTORE_WAIT_HEALTHY);
        d = decide((RestoreFacts){ .request = &request,
                                   .state = &st,
                                   .snapshot_present = true,
                                   .data_present = true,
                                   .member_healthy = true });
        assert_int_equal(d.action, RESTORE_REPORT_DONE);
        assert_int_equal(d.next, RESTORE_STEP_DONE);
        assert_false(d.restore_manifest);
        st = at(ID, RESTORE_STEP_DONE);
        d = decide((RestoreFacts){ .request = &request, .state = &st, .data_present = true });
        assert_int_equal(d.action, RESTORE_NOTHING);
        assert_false(d.in_progress);
}

static void test_decide_edges(void **state) {
        (void)state;
        RestoreState st;
        RestoreDecision d;
        /* a finished request does not restore a volume that never took part (a member replaced since) */
        d = decide((RestoreFacts){ .request = &request, .request_finished = true });
        assert_int_equal(d.action, RESTORE_NOTHING);
        /* ... but a member that took part finishes even when the others are done */
        st = at(ID, RESTORE_STEP_RESTORING);
        d = decide((RestoreFacts){
            .request = &request, .request_finished = true, .state = &st, .snapshot_present = true });
        assert_int_equal(d.action, RESTORE_WAIT_HEALTHY);
        /* the request was taken away mid-way: the data is aside, so the member is still restored */
        d = decide((RestoreFacts){ .state = &st, .snapshot_present = true });
        assert_int_equal(d.action, RESTORE_WAIT_HEALTHY);
        assert_string_equal(d.id, ID);
        /* a new request (--force) replaces an unfinished one: from the start, with its own snapshot */
        RestoreRequest other = { .id = ID2, .snapshot = "20261124T020000Z" };
        d = decide((RestoreFacts){
            .request = &other, .state = &st, .snapshot_present = false, .data_present = true });
        assert_int_equal(d.action, RESTORE_DOWNLOAD);
        assert_string_equal(d.id, ID2);
        assert_int_equal(d.step, RESTORE_STEP_NONE);
        /* the snapshot went missing after the move, before the restore: fetched again */
        st = at(ID, RESTORE_STEP_MOVED);
        d = decide((RestoreFacts){ .request = &request, .state = &st, .aside_present = true });
        assert_int_equal(d.action, RESTORE_DOWNLOAD);
        assert_int_equal(d.next, RESTORE_STEP_MOVED);
        /* ... but not once the data is restored */
        st = at(ID, RESTORE_STEP_RESTORING);
        d = decide((RestoreFacts){
            .request = &request, .state = &st, .data_present = true, .member_healthy = true });
        assert_int_equal(d.action, RESTORE_REPORT_DONE);
        for (int a = 0; a < _RESTORE_ACTION_MAX; a++)
                assert_non_null(restore_action_to_string(a));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_id),
                cmocka_unit_test(test_request),
                cmocka_unit_test(test_state),
                cmocka_unit_test(test_store),
                cmocka_unit_test(test_upgrade_record),
                cmocka_unit_test(test_decide_walk),
                cmocka_unit_test(test_decide_edges),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
