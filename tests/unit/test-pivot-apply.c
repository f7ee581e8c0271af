/* SPDX-License-Identifier: Apache-2.0 */
/* The pivot's steps on this master's disk (pivot/pivot.h), in real directories, with the API away (a port
 * nothing listens on): the assets' digest annotation; the removal of the bootstrap manifests (the time
 * recorded first, the files moved to the state dir 0600, etcd's left alone); a removal killed half way
 * decided again as "finishing the removal"; the rollback writing them back byte for byte. */
#include "unit-test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/string-util.h"
#include "pivot-fixture.h"
#include "pivot/pivot.h"

static const char *const manifests[] = { "kube-apiserver.manifest", "kube-controller-manager.manifest",
                                         "kube-scheduler.manifest", "kube-proxy.manifest", "etcd.manifest" };

static char *path_in(const char *dir, const char *name) {
        char *p = strjoin(dir, "/", name);
        assert_non_null(p);
        return p;
}

static void put(const char *dir, const char *name, const char *text) {
        _cleanup_free_ char *p = path_in(dir, name);
        assert_true(write_file_atomic(p, text, strlen(text), 0644, false) >= 0);
}

static bool exists(const char *dir, const char *name) {
        _cleanup_free_ char *p = path_in(dir, name);
        return access(p, F_OK) == 0;
}

static PivotStep decide_now(Pivot *p, char **ret_why) {
        char *err = NULL;
        PivotDecision d;
        assert_int_equal(pivot_observe(p, &err), 0);
        assert_false(p->obs.api_ready); /* nothing listens on port 1 */
        assert_int_equal(pivot_decide(&p->obs, &d), 0);
        PivotStep s = d.step;
        *ret_why = strdup(d.why);
        pivot_decision_done(&d);
        return s;
}

static void test_steps_on_disk(void **state) {
        char base[] = "/tmp/pk-pivot-apply-XXXXXX";
        assert_non_null(mkdtemp(base));
        char cm_text[] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: kube-system\n"
                         "data:\n  a: b\n";
        _cleanup_(pivot_fixture_done) PivotFixture t;
        pivot_fixture_init(&t, base, "a", 2 * USEC_PER_SEC, cm_text);
        const char *mdir = t.manifest_dir, *sdir = t.state_dir;
        _cleanup_free_ char *backup = path_in(sdir, PIVOT_BOOTSTRAP_SUBDIR);
        assert_int_equal(mkdir(mdir, 0755), 0);
        for (size_t i = 0; i < ELEMENTSOF(manifests); i++) {
                _cleanup_free_ char *text = strprintf("# %s\nkind: Pod\n", manifests[i]);
                put(mdir, manifests[i], text);
        }
        put(base, "kubeconfig",
            "apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts:\n- name: c\n  context: {cluster: "
            "k, "
            "user: u}\nclusters:\n- name: k\n  cluster: {server: 'https://127.0.0.1:1', "
            "certificate-authority: ca.crt}\nusers:\n- name: u\n  user: {client-certificate: c.crt, "
            "client-key: c.key}\n");
        _cleanup_(pivot_freep) Pivot *p = NULL;
        char *err = NULL, *why = NULL;
        assert_int_equal(pivot_new(&t.settings, &p, &err), 0);

        /* the digest annotation goes into the object's own metadata, quoted (hex may look like a number) */
        assert_non_null(
            strstr(p->texts[0], "metadata:\n  annotations:\n    " PIVOT_DIGEST_ANNOTATION ": \""));
        assert_non_null(strstr(p->texts[0], "\"\n  name: x\n"));
        assert_int_equal(strlen(p->digests[0]), 64);

        /* the API away and nothing removed: wait for it */
        assert_int_equal(decide_now(p, &why), PIVOT_WAIT_API);
        free(why);

        /* the removal: the time first, the four files moved, etcd's kept */
        PivotDecision rm = { .step = PIVOT_REMOVE_BOOTSTRAP };
        assert_int_equal(pivot_apply(p, &rm, &err), 0);
        PivotRecord rec;
        assert_int_equal(pivot_record_load(sdir, &rec, &err), 0);
        assert_true(rec.removed_at > 0);
        for (size_t i = 0; i < 4; i++) {
                assert_false(exists(mdir, manifests[i]));
                _cleanup_free_ char *kept = path_in(backup, manifests[i]);
                struct stat st;
                assert_int_equal(stat(kept, &st), 0);
                assert_int_equal(st.st_mode & 0777, 0600);
        }
        assert_true(exists(mdir, "etcd.manifest"));

        /* this master saw the pivot complete and the API is away long after the removal (a reboot, the
         * rolling upgrade of a single master's apiserver): done, no rollback (the checkpoint's business) */
        PivotRecord seen = rec;
        seen.removed_at = 1; /* far past the restore deadline */
        seen.complete_at = 2;
        assert_int_equal(pivot_record_save(sdir, &seen, &err), 0);
        assert_int_equal(decide_now(p, &why), PIVOT_DONE);
        free(why);
        assert_int_equal(pivot_record_save(sdir, &rec, &err), 0);

        /* killed half way through a removal: a manifest still there with the time recorded */
        put(mdir, "kube-scheduler.manifest", "# kube-scheduler.manifest\nkind: Pod\n");
        assert_int_equal(decide_now(p, &why), PIVOT_REMOVE_BOOTSTRAP);
        assert_non_null(strstr(why, "finishing the removal"));
        free(why);

        /* the rollback: back byte for byte, the record cleared */
        PivotDecision back = { .step = PIVOT_RESTORE_BOOTSTRAP };
        assert_int_equal(pivot_apply(p, &back, &err), 0);
        for (size_t i = 0; i < 4; i++) {
                _cleanup_free_ char *mp = path_in(mdir, manifests[i]), *text = NULL,
                                    *want = strprintf("# %s\nkind: Pod\n", manifests[i]);
                assert_int_equal(read_full_file(mp, 4096, &text, NULL), 0);
                assert_string_equal(text, want);
        }
        assert_int_equal(pivot_record_load(sdir, &rec, &err), 0);
        assert_int_equal(rec.removed_at, 0);

        /* cleanup */
        for (size_t i = 0; i < ELEMENTSOF(manifests); i++) {
                _cleanup_free_ char *a = path_in(mdir, manifests[i]), *b = path_in(backup, manifests[i]);
                unlink(a);
                unlink(b);
        }
        _cleanup_free_ char *rf = path_in(sdir, PIVOT_RECORD_FILE);
        unlink(rf);
        unlink(t.kubeconfig);
        rmdir(backup);
        rmdir(sdir);
        rmdir(mdir);
        rmdir(base);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_steps_on_disk),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
