/* SPDX-License-Identifier: Apache-2.0 */
/* The checkpoint's refresh and its decisions against the API double (tests/fakes/kube/server.py): a master
 * m1 with protokube's DaemonSet kube-apiserver and Deployment kube-scheduler (its ReplicaSet), their pods
 * on m1, the Secret and ConfigMap the apiserver mounts. What the refresh takes (protokube's own workloads
 * by name and uid, names that stay in their directory, one checkpoint per workload), what it keeps (a
 * component whose workload still wants a pod here), and the activation's time. */
#include "unit-test.h"

#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/string-util.h"
#include "checkpoint-fixture.h"
#include "components/self-hosted.h"
#include "kube-fake.h"
#include "kube/kube-client.h"
#include "pivot/checkpoint-apply.h"
#include "pivot/checkpoint.h"
#include "vectors.h"

#define DS_UID     "0d6f2b7e-2a55-4c1b-8a3e-6c1f0b9d2e44"
#define DEP_UID    "7a1e9c3b-5d2f-4e8a-b6c0-1f2e3d4c5b6a"
#define RS_UID     "3c9d8e7f-6a5b-4c3d-2e1f-0a9b8c7d6e5f"
#define API_UID    "5b0c2f4e-3f1a-4d0e-9a59-0e0f2b7d9c11"
#define SCHED_UID  "9e8d7c6b-5a49-4838-2716-05f4e3d2c1b0"
#define RS_NAME    "kube-scheduler-5d9f7c8b6"
#define MANAGED    "\"app.kubernetes.io/managed-by\": \"protokube\""
#define SECRET_B64 "c2VjcmV0LWtleS1tYXRlcmlhbA==" /* "secret-key-material" */

typedef CheckpointFixture Fixture;

/* The API double of the test running (one at a time). */
static KubeFake fake;

/* The workloads, the Node and what the apiserver mounts. */
static const char *const cluster =
    "[{\"apiVersion\": \"v1\", \"kind\": \"Node\", \"metadata\": {\"name\": \"m1\", \"labels\": "
    "{\"node-role.kubernetes.io/master\": \"\", \"protokube.io/self-hosted-apiserver\": \"true\"}}},"
    " {\"apiVersion\": \"apps/v1\", \"kind\": \"DaemonSet\", \"metadata\": {\"name\": \"kube-apiserver\", "
    "\"namespace\": \"kube-system\", \"uid\": \"" DS_UID "\", \"labels\": {" MANAGED
    ", \"k8s-app\": \"kube-apiserver\"}}, \"spec\": {\"template\": {\"spec\": {\"nodeSelector\": "
    "{\"node-role.kubernetes.io/master\": \"\", \"protokube.io/self-hosted-apiserver\": \"true\"}}}}},"
    " {\"apiVersion\": \"apps/v1\", \"kind\": \"Deployment\", \"metadata\": {\"name\": \"kube-scheduler\", "
    "\"namespace\": \"kube-system\", \"uid\": \"" DEP_UID "\", \"generation\": 1, \"labels\": {" MANAGED
    ", \"k8s-app\": \"kube-scheduler\"}}, \"spec\": {\"replicas\": 1}, \"status\": {\"observedGeneration\": "
    "1, "
    "\"replicas\": 1, \"updatedReplicas\": 1, \"readyReplicas\": 1, \"availableReplicas\": 1}},"
    " {\"apiVersion\": \"apps/v1\", \"kind\": \"ReplicaSet\", \"metadata\": {\"name\": \"" RS_NAME "\", "
    "\"namespace\": \"kube-system\", \"uid\": \"" RS_UID "\", \"labels\": {" MANAGED
    ", \"k8s-app\": \"kube-scheduler\"}, \"ownerReferences\": [{\"apiVersion\": \"apps/v1\", \"kind\": "
    "\"Deployment\", \"name\": \"kube-scheduler\", \"uid\": \"" DEP_UID "\", \"controller\": true}]}},"
    " {\"apiVersion\": \"v1\", \"kind\": \"Secret\", \"metadata\": {\"name\": \"kube-apiserver\", "
    "\"namespace\": \"kube-system\"}, \"data\": {\"apiserver.key\": \"" SECRET_B64 "\"}},"
    " {\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"kube-apiserver-config\", "
    "\"namespace\": \"kube-system\"}, \"data\": {\"audit.yaml\": \"kind: Policy\\n\"}}]";

static void set_status(json_t *pod, const char *phase, bool ready, const char *started) {
        json_t *st =
            json_pack("{s:s, s:[{s:s, s:s}], s:[{s:s, s:b, s:{s:{s:s}}}]}", "phase", phase, "conditions",
                      "type", "Ready", "status", ready ? "True" : "False", "containerStatuses", "name", "c",
                      "ready", ready, "state", "running", "startedAt", started);
        assert_non_null(st);
        json_object_set_new(pod, "status", st);
}

/* The apiserver's pod as kube-apiserver 1.20 returns it, on m1, owned by (kind, name, uid). */
static json_t *apiserver_pod(const char *name, const char *uid, const char *owner_kind,
                             const char *owner_name, const char *owner_uid) {
        json_t *pod = checkpoint_fixture_apiserver_pod();
        json_t *meta = json_object_get(pod, "metadata");
        json_object_set_new(meta, "name", json_string(name));
        json_object_set_new(meta, "uid", json_string(uid));
        json_object_set_new(json_object_get(meta, "labels"), "app.kubernetes.io/managed-by",
                            json_string("protokube"));
        json_t *o = json_array_get(json_object_get(meta, "ownerReferences"), 0);
        json_object_set_new(o, "kind", json_string(owner_kind));
        json_object_set_new(o, "name", json_string(owner_name));
        json_object_set_new(o, "uid", json_string(owner_uid));
        json_object_set_new(json_object_get(pod, "spec"), "nodeName", json_string("m1"));
        set_status(pod, "Running", true, "2026-11-23T22:20:30Z");
        return pod;
}

static json_t *scheduler_pod(void) {
        json_t *pod =
            json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:{s:s, s:s, s:s}, s:[{s:s, s:s, s:s, s:s, s:b}]}, "
                      "s:{s:s, s:[{s:s, s:s}]}}",
                      "apiVersion", "v1", "kind", "Pod", "metadata", "name", RS_NAME "-x2x9q", "namespace",
                      "kube-system", "uid", SCHED_UID, "labels", "app.kubernetes.io/managed-by", "protokube",
                      "k8s-app", "kube-scheduler", "pod-template-hash", "5d9f7c8b6", "ownerReferences",
                      "apiVersion", "apps/v1", "kind", "ReplicaSet", "name", RS_NAME, "uid", RS_UID,
                      "controller", 1, "spec", "nodeName", "m1", "containers", "name", "kube-scheduler",
                      "image", "registry.k8s.io/kube-scheduler:v1.20.2");
        assert_non_null(pod);
        set_status(pod, "Running", true, "2026-11-23T22:20:30Z");
        return pod;
}

static void put_pods(json_t *a, json_t *b) {
        json_t *arr = json_array();
        json_array_append_new(arr, a);
        if (b)
                json_array_append_new(arr, b);
        kube_fake_objects_json(&fake, arr);
}

static void delete_pod(const char *name) {
        _cleanup_free_ char *d = strprintf(
            "{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"namespace\": \"kube-system\", \"name\": \"%s\"}",
            name);
        kube_fake_post(&fake, "/_fake/delete", d);
}

static int setup(void **state) {
        Fixture *f = checkpoint_fixture_new("/tmp/pk-ckref-XXXXXX");
        kube_fake_start(&fake);
        kube_fake_objects(&fake, cluster);
        put_pods(apiserver_pod("kube-apiserver-x7k2p", API_UID, "DaemonSet", "kube-apiserver", DS_UID),
                 scheduler_pod());
        checkpoint_fixture_config(f, "m1", kube_fake_client(&fake));
        kube_client_set_retry(f->api,
                              &(KubeRetryPolicy){ .max_tries = 1, .call_timeout = 10 * USEC_PER_SEC });
        *state = f;
        return 0;
}

static int teardown(void **state) {
        kube_fake_stop(&fake);
        checkpoint_fixture_free(*state);
        return 0;
}

/* Files and directories below dir, symlinks not followed. */
static size_t n_entries;
static int count_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        n_entries++;
        return 0;
}

static size_t count_tree(const char *dir) {
        n_entries = 0;
        assert_int_equal(nftw(dir, count_entry, 16, FTW_PHYS), 0);
        return n_entries;
}

/* How many generations the state directory holds. */
static unsigned generations(const Fixture *f) {
        DIR *d = opendir(f->state);
        unsigned n = 0;
        assert_non_null(d);
        for (struct dirent *de; (de = readdir(d));)
                n += startswith(de->d_name, ".checkpoint") != NULL;
        closedir(d);
        return n;
}

static int refresh(Fixture *f, char **ret_message, char **ret_error) {
        return checkpoint_refresh(&f->c, f->api, 0, ret_message, ret_error);
}

static void refresh_ok(Fixture *f, const char *want_in_message) {
        _cleanup_free_ char *msg = NULL, *err = NULL;
        int r = refresh(f, &msg, &err);
        if (r < 0)
                fail_msg("refresh: %d %s", r, strnull(err));
        if (!strstr(strempty(msg), want_in_message))
                fail_msg("refresh said '%s', wanted '%s'", strnull(msg), want_in_message);
}

static void refresh_fails(Fixture *f, const char *want_in_error) {
        _cleanup_free_ char *msg = NULL, *err = NULL;
        int r = refresh(f, &msg, &err);
        if (r >= 0)
                fail_msg("refresh succeeded: '%s'", strnull(msg));
        if (!strstr(strempty(err), want_in_error))
                fail_msg("refresh failed with '%s', wanted '%s'", strnull(err), want_in_error);
}

static void test_refresh(void **state) {
        Fixture *f = *state;
        refresh_ok(f, "checkpoint of 2 pods written");
        assert_true(exists(f->state, "checkpoint/manifests/kube-apiserver-checkpoint.json"));
        assert_true(exists(f->state, "checkpoint/manifests/kube-scheduler-checkpoint.json"));
        _cleanup_free_ char *key = path_of(f->state, "checkpoint/secrets/kube-apiserver/apiserver.key"),
                            *text = NULL;
        struct stat st;
        assert_int_equal(stat(key, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        assert_int_equal(read_full_file(key, 1024, &text, NULL), 0);
        assert_string_equal(text, "secret-key-material");
        assert_int_equal(generations(f), 1);
        refresh_ok(f, "checkpoint of 2 pods unchanged");
        assert_int_equal(generations(f), 1);
        /* the list asked for this node's pods of the components only */
        json_t *reqs = kube_fake_requests(&fake), *r;
        size_t i;
        bool listed = false;
        json_array_foreach(reqs, i, r) {
                if (!streq(json_string_value(json_object_get(r, "path")),
                           "/api/v1/namespaces/kube-system/pods"))
                        continue;
                const char *q = json_string_value(json_object_get(r, "query"));
                assert_non_null(strstr(q, "fieldSelector=spec.nodeName%3Dm1"));
                assert_non_null(strstr(q,
                                       "k8s-app%20in%20%28kube-apiserver%2Ckube-controller-manager%2Ckube-"
                                       "scheduler%29"));
                listed = true;
        }
        assert_true(listed);
        json_decref(reqs);
}

/* A pod whose controlling owner is a DaemonSet named "../../../manifests/evil" (the API accepts any
 * non-empty owner name): refused, and nothing is written anywhere, in the manifest directory least. The
 * checkpoint that was there stays. */
static void test_owner_name_that_climbs(void **state) {
        Fixture *f = *state;
        refresh_ok(f, "checkpoint of 2 pods written");
        size_t before = count_tree(f->base);
        delete_pod("kube-apiserver-x7k2p");
        put_pods(
            apiserver_pod("kube-apiserver-evil", API_UID, "DaemonSet", "../../../manifests/evil", DS_UID),
            NULL);
        refresh_fails(f, "DaemonSet '../../../manifests/evil' is not valid");
        assert_int_equal(count_tree(f->base), before);
        assert_int_equal(count_tree(f->manifests), 1);
        assert_true(exists(f->state, "checkpoint/manifests/kube-apiserver-checkpoint.json"));
}

/* Labelled as protokube's, but not protokube's workload by uid, or by name: refused, the message says
 * whose it is. */
static void test_owner_not_ours(void **state) {
        Fixture *f = *state;
        delete_pod("kube-apiserver-x7k2p");
        put_pods(apiserver_pod("kube-apiserver-a", API_UID, "DaemonSet", "kube-apiserver",
                               "11111111-2222-3333-4444-555555555555"),
                 NULL);
        refresh_fails(f, "its owner DaemonSet kube-apiserver has uid 11111111-2222-3333-4444-555555555555, "
                         "protokube's " DS_UID);
        delete_pod("kube-apiserver-a");
        put_pods(apiserver_pod("kube-apiserver-b", API_UID, "DaemonSet", "other", DS_UID), NULL);
        refresh_fails(f, "its k8s-app is 'kube-apiserver' but it is controlled by DaemonSet/other");
        /* protokube's name, but a DaemonSet someone else made in its place (not managed by protokube) */
        delete_pod("kube-apiserver-b");
        kube_fake_objects(&fake, "[{\"apiVersion\": \"apps/v1\", \"kind\": \"DaemonSet\", \"metadata\": "
                                 "{\"name\": \"kube-apiserver\", \"namespace\": \"kube-system\", \"uid\": "
                                 "\"" DS_UID "\"}}]");
        put_pods(apiserver_pod("kube-apiserver-c", API_UID, "DaemonSet", "kube-apiserver", DS_UID), NULL);
        refresh_fails(f, "protokube's workload of it (managed-by protokube, kube-system) does not exist");
        assert_false(exists(f->state, CHECKPOINT_LINK));
}

/* A ReplicaSet that protokube's Deployment does not control. */
static void test_replicaset_not_ours(void **state) {
        Fixture *f = *state;
        kube_fake_objects(
            &fake, "[{\"apiVersion\": \"apps/v1\", \"kind\": \"ReplicaSet\", \"metadata\": {\"name\": "
                   "\"" RS_NAME "\", \"namespace\": \"kube-system\", \"uid\": \"" RS_UID "\", \"labels\": "
                   "{" MANAGED "}, \"ownerReferences\": [{\"kind\": \"Deployment\", \"name\": "
                   "\"kube-scheduler\", \"uid\": \"99999999-2222-3333-4444-555555555555\", "
                   "\"controller\": true}]}}]");
        refresh_fails(f, "its ReplicaSet " RS_NAME
                         " is not controlled by protokube's Deployment kube-scheduler");
}

/* Two pods of one workload on the node would be one checkpoint file: an error, never the last one. */
static void test_two_pods_one_path(void **state) {
        Fixture *f = *state;
        put_pods(apiserver_pod("kube-apiserver-zzzzz", "22222222-2222-3333-4444-555555555555", "DaemonSet",
                               "kube-apiserver", DS_UID),
                 NULL);
        refresh_fails(f, "two pods of DaemonSet/kube-apiserver on node m1");
        assert_false(exists(f->state, CHECKPOINT_LINK));
}

/* A key of a Secret that kubelet would not make a file of ("..data" is its own). */
static void test_key_that_climbs(void **state) {
        Fixture *f = *state;
        kube_fake_objects(&fake, "[{\"apiVersion\": \"v1\", \"kind\": \"Secret\", \"metadata\": {\"name\": "
                                 "\"kube-apiserver\", \"namespace\": \"kube-system\"}, \"data\": "
                                 "{\"..data\": \"" SECRET_B64 "\"}}]");
        refresh_fails(f, "Secret kube-system/kube-apiserver: key '..data' is not valid");
}

/* A ConfigMap whose annotation names the checkpoint's own copy of a key (kube-scheduler 1.20 to 1.22: its
 * own ports): the checkpoint's file holds the copy; an annotation that names a key the data lacks, or is not
 * <key>=<other key>, fails the refresh and names the ConfigMap. */
#define CONFIG_MAP_WITH(annotation)                                                               \
        "[{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": "            \
        "\"kube-apiserver-config\", \"namespace\": \"kube-system\", \"annotations\": "            \
        "{\"" SELF_HOSTED_CHECKPOINT_DATA "\": \"" annotation "\"}}, \"data\": {\"audit.yaml\": " \
        "\"port: 10261\\n\", \"checkpoint.audit.yaml\": \"port: 10271\\n\"}}]"
static void test_checkpoint_data(void **state) {
        Fixture *f = *state;
        kube_fake_objects(&fake, CONFIG_MAP_WITH("audit.yaml=checkpoint.audit.yaml"));
        refresh_ok(f, "checkpoint of 2 pods written");
        _cleanup_free_ char *path =
                                path_of(f->state, "checkpoint/configmaps/kube-apiserver-config/audit.yaml"),
                            *text = NULL;
        assert_int_equal(read_full_file(path, 1024, &text, NULL), 0);
        assert_string_equal(text, "port: 10271\n");

        kube_fake_objects(&fake, CONFIG_MAP_WITH("audit.yaml=missing.yaml"));
        refresh_fails(f,
                      "ConfigMap kube-system/kube-apiserver-config: annotation " SELF_HOSTED_CHECKPOINT_DATA
                      ": 'audit.yaml=missing.yaml' is not <key>=<other key> of its data");
        kube_fake_objects(&fake, CONFIG_MAP_WITH("audit.yaml"));
        refresh_fails(f, "'audit.yaml' is not <key>=<other key> of its data");
}

/* The apiserver's pod failed and its replacement is not there yet: the DaemonSet still wants a pod on m1,
 * so the refresh keeps the checkpoint whole (it used to drop the apiserver from it). Once m1 is no longer
 * the DaemonSet's (its label gone), the apiserver drops out. */
static void test_failed_pod_keeps_its_component(void **state) {
        Fixture *f = *state;
        refresh_ok(f, "checkpoint of 2 pods written");
        json_t *failed =
            apiserver_pod("kube-apiserver-x7k2p", API_UID, "DaemonSet", "kube-apiserver", DS_UID);
        set_status(failed, "Failed", false, "2026-11-23T22:20:30Z");
        put_pods(failed, NULL);
        refresh_ok(
            f, "the checkpointed kube-apiserver has no pod on m1 now, and its DaemonSet wants a pod on m1");
        assert_true(exists(f->state, "checkpoint/manifests/kube-apiserver-checkpoint.json"));
        delete_pod("kube-apiserver-x7k2p"); /* the DaemonSet controller removes it */
        refresh_ok(f, "its DaemonSet wants a pod on m1");
        assert_true(exists(f->state, "checkpoint/manifests/kube-apiserver-checkpoint.json"));
        kube_fake_objects(&fake, "[{\"apiVersion\": \"v1\", \"kind\": \"Node\", \"metadata\": {\"name\": "
                                 "\"m1\", \"labels\": {\"node-role.kubernetes.io/master\": \"\"}}}]");
        refresh_ok(f, "checkpoint of 1 pods written");
        assert_false(exists(f->state, "checkpoint/manifests/kube-apiserver-checkpoint.json"));
        assert_true(exists(f->state, "checkpoint/manifests/kube-scheduler-checkpoint.json"));
}

/* The same for a Deployment: while it has not settled (its pod is being replaced) the scheduler stays;
 * settled with its pod on another master, it drops out. */
static void test_deployment_moved(void **state) {
        Fixture *f = *state;
        refresh_ok(f, "checkpoint of 2 pods written");
        delete_pod(RS_NAME "-x2x9q");
        kube_fake_objects(
            &fake, "[{\"apiVersion\": \"apps/v1\", \"kind\": \"Deployment\", \"metadata\": {\"name\": "
                   "\"kube-scheduler\", \"namespace\": \"kube-system\", \"uid\": \"" DEP_UID "\", "
                   "\"generation\": 1, \"labels\": {" MANAGED "}}, \"spec\": {\"replicas\": 1}, "
                   "\"status\": {\"observedGeneration\": 1, \"replicas\": 1, \"updatedReplicas\": 1, "
                   "\"readyReplicas\": 0, \"availableReplicas\": 0, \"unavailableReplicas\": 1}}]");
        refresh_ok(f, "its Deployment has not settled");
        assert_true(exists(f->state, "checkpoint/manifests/kube-scheduler-checkpoint.json"));
        kube_fake_objects(
            &fake, "[{\"apiVersion\": \"apps/v1\", \"kind\": \"Deployment\", \"metadata\": {\"name\": "
                   "\"kube-scheduler\", \"namespace\": \"kube-system\", \"uid\": \"" DEP_UID "\", "
                   "\"generation\": 1, \"labels\": {" MANAGED "}}, \"spec\": {\"replicas\": 1}, "
                   "\"status\": {\"observedGeneration\": 1, \"replicas\": 1, \"updatedReplicas\": 1, "
                   "\"readyReplicas\": 1, \"availableReplicas\": 1}}]");
        refresh_ok(f, "checkpoint of 1 pods written");
        assert_false(exists(f->state, "checkpoint/manifests/kube-scheduler-checkpoint.json"));
}

/* A current checkpoint that cannot be read (a manifest that is no JSON) keeps nothing: it does not hold
 * back the refresh that replaces it (the Secret changed). */
static void test_unreadable_checkpoint_replaced(void **state) {
        Fixture *f = *state;
        refresh_ok(f, "checkpoint of 2 pods written");
        _cleanup_free_ char *m = path_of(f->state, "checkpoint/manifests/kube-apiserver-checkpoint.json");
        assert_true(write_file_atomic(m, "{not json", 9, 0644, 0) >= 0);
        kube_fake_post(&fake, "/_fake/config", "{\"rotate\": \"kube-system/kube-apiserver\"}");
        refresh_ok(f, "checkpoint of 2 pods written");
        _cleanup_free_ char *text = NULL;
        assert_int_equal(read_full_file(m, 1 << 20, &text, NULL), 0);
        assert_non_null(strstr(text, "\"kube-apiserver-checkpoint\""));
}

/* A stamp left by an earlier activation (its deactivation stopped between the manifests and the stamp) is
 * not this activation's: the pods' status from before it (Ready, started after the old stamp) does not
 * count as back, and the checkpoint stays active. */
static void test_stale_activation_stamp(void **state) {
        Fixture *f = *state;
        refresh_ok(f, "checkpoint of 2 pods written");
        _cleanup_free_ char *at = path_of(f->state, CHECKPOINT_ACTIVATED_FILE), *stamp = NULL;
        assert_true(write_file_atomic(at, "2020-01-01T00:00:00Z", 20, 0644, 0) >= 0);
        kube_fake_post(&fake, "/_fake/config", "{\"down\": true}");
        CheckpointStep s;
        _cleanup_free_ char *msg = NULL, *msg2 = NULL, *err = NULL;
        assert_int_equal(checkpoint_step(&f->c, 0, &s, &msg, &err), 0);
        assert_int_equal(s, CHECKPOINT_STEP_ACTIVATE);
        assert_int_equal(read_full_file(at, 64, &stamp, NULL), 0);
        assert_true(strcmp(stamp, "2026-01-01T00:00:00Z") > 0); /* now, not 2020 */
        /* the API is back; the pods' status is still the one from before the reboot */
        kube_fake_post(&fake, "/_fake/config", "{\"down\": false}");
        assert_int_equal(checkpoint_step(&f->c, 0, &s, &msg2, &err), 0);
        if (s != CHECKPOINT_STEP_WAIT)
                fail_msg("step %s: %s", checkpoint_step_to_string(s), strnull(msg2));
        assert_int_equal(checkpoint_is_active(&f->c, NULL), 1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_refresh, setup, teardown),
                cmocka_unit_test_setup_teardown(test_owner_name_that_climbs, setup, teardown),
                cmocka_unit_test_setup_teardown(test_owner_not_ours, setup, teardown),
                cmocka_unit_test_setup_teardown(test_replicaset_not_ours, setup, teardown),
                cmocka_unit_test_setup_teardown(test_two_pods_one_path, setup, teardown),
                cmocka_unit_test_setup_teardown(test_checkpoint_data, setup, teardown),
                cmocka_unit_test_setup_teardown(test_key_that_climbs, setup, teardown),
                cmocka_unit_test_setup_teardown(test_failed_pod_keeps_its_component, setup, teardown),
                cmocka_unit_test_setup_teardown(test_deployment_moved, setup, teardown),
                cmocka_unit_test_setup_teardown(test_unreadable_checkpoint_replaced, setup, teardown),
                cmocka_unit_test_setup_teardown(test_stale_activation_stamp, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
