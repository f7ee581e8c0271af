/* SPDX-License-Identifier: Apache-2.0 */
/* The checkpoint's node side without an API (src/pivot/checkpoint-apply.c): activation and deactivation on a
 * real directory, and the decision when the API does not answer (a loopback port nobody serves), with the
 * running pods seen through a procfs laid out by the test. The refresh runs against a real API in
 * tests/integration/test_checkpoint.py. */
#include "unit-test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/string-util.h"
#include "checkpoint-fixture.h"
#include "kube/kube-client.h"
#include "pivot/checkpoint-apply.h"
#include "pivot/checkpoint.h"

#define UID "0f5c3e42-1b7a-4d2c-9a51-1f0c2d3e4b5a"

typedef CheckpointFixture Fixture;

static void put(const char *dir, const char *name, const char *text) {
        char *p = path_of(dir, name);
        assert_int_equal(mkdir_p(dir, 0755), 0);
        assert_true(write_file_atomic(p, text, strlen(text), 0644, 0) >= 0);
        free(p);
}

static int setup(void **state) {
        Fixture *f = checkpoint_fixture_new("/tmp/pk-ckpt-XXXXXX");
        /* a generation as a refresh leaves it */
        char *gen = path_of(f->base, "state/.checkpoint.0000000000000001"),
             *mdir = path_of(gen, "manifests"), *link = path_of(f->state, CHECKPOINT_LINK);
        put(mdir, "kube-apiserver-checkpoint.json",
            "{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": "
            "\"kube-apiserver-checkpoint\", \"labels\": {\"" CHECKPOINT_LABEL "\": \"true\"}, "
            "\"annotations\": {\"" CHECKPOINT_OF "\": \"DaemonSet/kube-apiserver\", \"" CHECKPOINT_UID
            "\": \"" UID "\"}}, \"spec\": {}}\n");
        assert_int_equal(symlink(".checkpoint.0000000000000001", link), 0);
        put(f->manifests, "etcd-server.manifest", "kind: Pod\n");
        free(gen);
        free(mdir);
        free(link);
        /* nobody serves port 1 on loopback: the API does not answer */
        KubeClient *api = NULL;
        assert_int_equal(kube_client_new(&(KubeClientConfig){ .server = "http://127.0.0.1:1" }, &api, NULL),
                         0);
        checkpoint_fixture_config(f, "a", api);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        checkpoint_fixture_free(*state);
        return 0;
}

static void test_activate_deactivate(void **state) {
        Fixture *f = *state;
        size_t n = 0;
        assert_int_equal(checkpoint_is_active(&f->c, NULL), 0);
        assert_int_equal(checkpoint_activate(&f->c, &n, NULL), 0);
        assert_int_equal(n, 1);
        assert_true(exists(f->manifests, "kube-apiserver-checkpoint.json"));
        assert_true(exists(f->state, CHECKPOINT_ACTIVATED_FILE));
        assert_int_equal(checkpoint_is_active(&f->c, NULL), 1);
        assert_int_equal(checkpoint_activate(&f->c, &n, NULL), 0); /* idempotent */
        assert_int_equal(checkpoint_deactivate(&f->c, &n, NULL), 0);
        assert_int_equal(n, 1);
        assert_false(exists(f->manifests, "kube-apiserver-checkpoint.json"));
        assert_false(exists(f->state, CHECKPOINT_ACTIVATED_FILE));
        assert_true(exists(f->manifests, "etcd-server.manifest")); /* not ours: untouched */
        assert_int_equal(checkpoint_deactivate(&f->c, &n, NULL), 0);
        assert_int_equal(n, 0);
}

static void test_missing_manifest_dir_named(void **state) {
        Fixture *f = *state;
        char *err = NULL;
        CheckpointConfig c = f->c;
        c.manifest_dir = "/nonexistent/pk-manifests";
        assert_true(checkpoint_is_active(&c, &err) < 0);
        assert_non_null(strstr(err, "/nonexistent/pk-manifests"));
        free(err);
}

static void step(Fixture *f, CheckpointStep want, const char *want_in_message) {
        CheckpointStep s = _CHECKPOINT_STEP_INVALID;
        char *msg = NULL, *err = NULL;
        int r = checkpoint_step(&f->c, 0, &s, &msg, &err);
        if (r < 0)
                fail_msg("checkpoint_step: %d %s", r, strnull(err));
        if (s != want || !strstr(msg, want_in_message))
                fail_msg("step %s '%s', wanted %s with '%s'", checkpoint_step_to_string(s), msg,
                         checkpoint_step_to_string(want), want_in_message);
        free(msg);
}

static void test_api_down(void **state) {
        Fixture *f = *state;
        char *pid = path_of(f->proc, "4242");
        /* a process of the checkpointed pod still runs (cgroupfs layout): the API is down for another reason
         */
        put(pid, "cgroup", "12:memory:/pk/kubepods/burstable/pod" UID "/3f1e\n");
        step(f, CHECKPOINT_STEP_WAIT, "runs here");
        assert_int_equal(checkpoint_is_active(&f->c, NULL), 0);
        /* the systemd driver's layout too */
        put(pid, "cgroup", "0::/kubepods.slice/kubepods-pod0f5c3e42_1b7a_4d2c_9a51_1f0c2d3e4b5a.slice/x\n");
        step(f, CHECKPOINT_STEP_WAIT, "runs here");
        /* another pod's process: activate, then nothing more while the API is away */
        put(pid, "cgroup",
            "12:memory:/pk/kubepods/burstable/pod11111111-2222-3333-4444-555555555555/3f1e\n");
        step(f, CHECKPOINT_STEP_ACTIVATE, "1 checkpoint manifests written");
        assert_int_equal(checkpoint_is_active(&f->c, NULL), 1);
        step(f, CHECKPOINT_STEP_WAIT, "the checkpoint is active");
        free(pid);
}

/* The apiserver's only pod replaced (a rolling update on one master) while the scheduler's still runs: the
 * apiserver's checkpoint alone comes up (the scheduler is not doubled); the scheduler's pod running does not
 * hold it back as "the API is down for another reason". */
#define SCHED_UID "22222222-3333-4444-5555-666666666666"
static void test_api_down_apiserver_alone(void **state) {
        Fixture *f = *state;
        char *gen = path_of(f->state, CHECKPOINT_LINK), *mdir = path_of(gen, "manifests"),
             *pid = path_of(f->proc, "4343");
        put(mdir, "kube-scheduler-checkpoint.json",
            "{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": "
            "\"kube-scheduler-checkpoint\", \"labels\": {\"" CHECKPOINT_LABEL "\": \"true\"}, "
            "\"annotations\": {\"" CHECKPOINT_OF "\": \"Deployment/kube-scheduler\", \"" CHECKPOINT_UID
            "\": \"" SCHED_UID "\"}}, \"spec\": {}}\n");
        put(pid, "cgroup", "12:memory:/pk/kubepods/burstable/pod" SCHED_UID "/3f1e\n");
        step(f, CHECKPOINT_STEP_ACTIVATE, "1 checkpoint manifests written");
        assert_true(exists(f->manifests, "kube-apiserver-checkpoint.json"));
        assert_false(exists(f->manifests, "kube-scheduler-checkpoint.json"));
        /* after a reboot nothing runs: both */
        char *active = path_of(f->manifests, "kube-apiserver-checkpoint.json");
        assert_int_equal(unlink(active), 0);
        put(pid, "cgroup",
            "12:memory:/pk/kubepods/burstable/pod11111111-2222-3333-4444-555555555555/3f1e\n");
        step(f, CHECKPOINT_STEP_ACTIVATE, "2 checkpoint manifests written");
        assert_true(exists(f->manifests, "kube-scheduler-checkpoint.json"));
        free(active);
        free(gen);
        free(mdir);
        free(pid);
}

static void test_api_down_no_checkpoint(void **state) {
        Fixture *f = *state;
        char *link = path_of(f->state, CHECKPOINT_LINK);
        assert_int_equal(unlink(link), 0);
        step(f, CHECKPOINT_STEP_WAIT, "no checkpoint of this node");
        assert_int_equal(checkpoint_is_active(&f->c, NULL), 0);
        free(link);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_activate_deactivate, setup, teardown),
                cmocka_unit_test_setup_teardown(test_missing_manifest_dir_named, setup, teardown),
                cmocka_unit_test_setup_teardown(test_api_down, setup, teardown),
                cmocka_unit_test_setup_teardown(test_api_down_no_checkpoint, setup, teardown),
                cmocka_unit_test_setup_teardown(test_api_down_apiserver_alone, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
