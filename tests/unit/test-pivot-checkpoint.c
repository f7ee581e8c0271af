/* SPDX-License-Identifier: Apache-2.0 */
/* The checkpoint of a self-hosted pod: from a DaemonSet's pod shaped as kube-apiserver 1.20 returns it
 * (tests/vectors/kube/pod-apiserver-daemonset.json), the static pod kubelet can run without the API. */
#include "unit-test.h"

#include <string.h>

#include "basic/errors.h"
#include "basic/macro.h"
#include "checkpoint-fixture.h"
#include "pivot/checkpoint.h"
#include "vectors.h"

static const json_t *volume(const json_t *spec, const char *name) {
        size_t i;
        const json_t *v;
        json_array_foreach(json_object_get(spec, "volumes"), i,
                           v) if (streq(json_string_value(json_object_get(v, "name")), name)) return v;
        return NULL;
}

static void test_daemonset_pod(void **state) {
        json_t *pod = checkpoint_fixture_apiserver_pod();
        /* as the API returns a hostNetwork pod's port: hostPort defaulted to containerPort */
        json_t *ports = json_pack("[{s:s, s:i, s:i, s:s}]", "name", "https", "containerPort", 443,
                                  "hostPort", 443, "protocol", "TCP");
        assert_non_null(ports);
        json_object_set_new(json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), 0),
                            "ports", ports);
        CheckpointPod p;
        assert_int_equal(checkpoint_pod_from_api(pod, "/var/lib/protokube/checkpoint", &p, NULL), 0);
        assert_string_equal(p.name, "kube-apiserver-checkpoint");
        const json_t *meta = json_object_get(p.manifest, "metadata"),
                     *spec = json_object_get(p.manifest, "spec");
        assert_string_equal(json_string_value(json_object_get(meta, "name")), "kube-apiserver-checkpoint");
        assert_string_equal(json_string_value(json_object_get(meta, "namespace")), "kube-system");
        assert_null(json_object_get(meta, "uid"));
        assert_null(json_object_get(meta, "ownerReferences"));
        const json_t *labels = json_object_get(meta, "labels");
        assert_string_equal(json_string_value(json_object_get(labels, CHECKPOINT_LABEL)), "true");
        /* only its own label: the mirror pod matches no selector and no anti-affinity of the workloads */
        assert_int_equal(json_object_size(labels), 1);
        assert_null(json_object_get(labels, "k8s-app"));
        assert_null(json_object_get(labels, "controller-revision-hash"));
        const json_t *ann = json_object_get(meta, "annotations");
        assert_string_equal(json_string_value(json_object_get(ann, CHECKPOINT_OF)),
                            "DaemonSet/kube-apiserver");
        assert_string_equal(json_string_value(json_object_get(ann, "protokube.io/certificates")),
                            "0123456789abcdef");
        assert_null(json_object_get(p.manifest, "status"));

        static const char *const gone[] = { "nodeName",     "serviceAccountName", "tolerations",  "affinity",
                                            "nodeSelector", "priority",           "schedulerName" };
        for (size_t i = 0; i < ELEMENTSOF(gone); i++)
                assert_null(json_object_get(spec, gone[i]));
        assert_true(json_is_false(json_object_get(spec, "automountServiceAccountToken")));
        assert_string_equal(json_string_value(json_object_get(spec, "priorityClassName")),
                            "system-node-critical");
        assert_true(json_is_true(json_object_get(spec, "hostNetwork")));

        /* the token volume and its mount are gone; Secret and ConfigMap volumes are host directories */
        assert_int_equal(json_array_size(json_object_get(spec, "volumes")), 3);
        assert_null(volume(spec, "default-token-q8z5m"));
        const json_t *pki = json_object_get(volume(spec, "pki"), "hostPath");
        assert_string_equal(json_string_value(json_object_get(pki, "path")),
                            "/var/lib/protokube/checkpoint/secrets/kube-apiserver");
        assert_string_equal(json_string_value(json_object_get(pki, "type")), "Directory");
        const json_t *cfg = json_object_get(volume(spec, "config"), "hostPath");
        assert_string_equal(json_string_value(json_object_get(cfg, "path")),
                            "/var/lib/protokube/checkpoint/configmaps/kube-apiserver-config");
        const json_t *c = json_array_get(json_object_get(spec, "containers"), 0);
        assert_int_equal(json_array_size(json_object_get(c, "volumeMounts")), 3);
        assert_null(json_object_get(c, "ports")); /* kubelet would refuse the self-hosted pod's host port */
        assert_string_equal(json_string_value(json_array_get(json_object_get(c, "args"), 0)),
                            "--permit-port-sharing=true");

        assert_int_equal(p.n_volumes, 2);
        assert_int_equal(p.volumes[0].source, CHECKPOINT_SECRET);
        assert_string_equal(p.volumes[0].name, "kube-apiserver");
        assert_int_equal(p.volumes[1].source, CHECKPOINT_CONFIG_MAP);
        checkpoint_pod_done(&p);
        json_decref(pod);
}

static void test_deployment_pod(void **state) {
        json_t *pod = checkpoint_fixture_apiserver_pod();
        json_t *meta = json_object_get(pod, "metadata");
        json_object_set_new(json_object_get(meta, "labels"), "pod-template-hash", json_string("5d9f7c8b6"));
        json_t *owner = json_array_get(json_object_get(meta, "ownerReferences"), 0);
        json_object_set_new(owner, "kind", json_string("ReplicaSet"));
        json_object_set_new(owner, "name", json_string("kube-scheduler-5d9f7c8b6"));
        CheckpointPod p;
        assert_int_equal(checkpoint_pod_from_api(pod, "/c", &p, NULL), 0);
        assert_string_equal(p.name, "kube-scheduler-checkpoint");
        const json_t *ann = json_object_get(json_object_get(p.manifest, "metadata"), "annotations");
        assert_string_equal(json_string_value(json_object_get(ann, CHECKPOINT_OF)),
                            "Deployment/kube-scheduler");
        assert_null(json_object_get(json_object_get(json_object_get(p.manifest, "metadata"), "labels"),
                                    "pod-template-hash"));
        checkpoint_pod_done(&p);
        json_decref(pod);
}

static void test_refused(void **state) {
        char *err = NULL;
        CheckpointPod p;
        json_t *pod = checkpoint_fixture_apiserver_pod();
        /* a pod of nobody's */
        json_object_del(json_object_get(pod, "metadata"), "ownerReferences");
        assert_int_equal(checkpoint_pod_from_api(pod, "/c", &p, &err), PK_EMALFORMED);
        assert_non_null(strstr(err, "kube-apiserver-x7k2p"));
        free(err), err = NULL;
        json_decref(pod);

        /* a volume of a kind a static pod cannot have */
        pod = checkpoint_fixture_apiserver_pod();
        json_array_append_new(
            json_object_get(json_object_get(pod, "spec"), "volumes"),
            json_pack("{s:s, s:{s:s}}", "name", "claim", "persistentVolumeClaim", "claimName", "x"));
        assert_int_equal(checkpoint_pod_from_api(pod, "/c", &p, &err), PK_EMALFORMED);
        assert_non_null(strstr(err, "volume claim"));
        free(err), err = NULL;
        json_decref(pod);

        /* a Secret volume with items */
        pod = checkpoint_fixture_apiserver_pod();
        json_t *pki = json_array_get(json_object_get(json_object_get(pod, "spec"), "volumes"), 1);
        json_object_set_new(json_object_get(pki, "secret"), "items", json_array());
        assert_int_equal(checkpoint_pod_from_api(pod, "/c", &p, &err), PK_EMALFORMED);
        assert_non_null(strstr(err, "no items"));
        free(err);
        json_decref(pod);

        json_t *empty = json_object();
        assert_int_equal(checkpoint_pod_from_api(empty, "/c", &p, NULL), PK_EMALFORMED);
        json_decref(empty);
}

static void set_owner(json_t *pod, const char *kind, const char *name) {
        json_t *owner =
            json_array_get(json_object_get(json_object_get(pod, "metadata"), "ownerReferences"), 0);
        json_object_set_new(owner, "kind", json_string(kind));
        json_object_set_new(owner, "name", json_string(name));
}

/* The owner's name becomes the checkpoint's file name and the API checks it only for being non-empty: a
 * name that is not a DaemonSet's or ReplicaSet's by Kubernetes' rule is refused, the message naming it. So
 * are a pod, Secret or ConfigMap whose name could not be the API's. */
static void test_names_that_climb(void **state) {
        static const struct {
                const char *kind, *name, *want;
        } owners[] = {
                { "DaemonSet", "../../../manifests/evil",
                  "DaemonSet '../../../manifests/evil' is not valid" },
                { "DaemonSet", "a/b", "DaemonSet 'a/b' is not valid" },
                { "DaemonSet", "..", "DaemonSet '..' is not valid" },
                { "DaemonSet", "", "DaemonSet '' is not valid" },
                { "DaemonSet", "Kube-APIServer", "DaemonSet 'Kube-APIServer' is not valid" },
                { "ReplicaSet", "../x-5d9f7c8b6", "ReplicaSet '../x-5d9f7c8b6' is not valid" },
                { "ReplicaSet", "kube-scheduler", "is not <deployment>-<pod-template-hash>" },
        };
        for (size_t i = 0; i < ELEMENTSOF(owners); i++) {
                json_t *pod = checkpoint_fixture_apiserver_pod();
                json_object_set_new(json_object_get(json_object_get(pod, "metadata"), "labels"),
                                    "pod-template-hash", json_string("5d9f7c8b6"));
                set_owner(pod, owners[i].kind, owners[i].name);
                CheckpointPod p = {};
                char *err = NULL;
                assert_int_equal(checkpoint_pod_from_api(pod, "/c", &p, &err), PK_EMALFORMED);
                if (!strstr(err, owners[i].want) || !strstr(err, "kube-apiserver-x7k2p"))
                        fail_msg("%s '%s': '%s'", owners[i].kind, owners[i].name, err);
                free(err);
                json_decref(pod);
        }

        json_t *pod = checkpoint_fixture_apiserver_pod();
        json_t *pki = json_array_get(json_object_get(json_object_get(pod, "spec"), "volumes"), 1);
        json_object_set_new(json_object_get(pki, "secret"), "secretName", json_string("../../etc"));
        CheckpointPod p = {};
        char *err = NULL;
        assert_int_equal(checkpoint_pod_from_api(pod, "/c", &p, &err), PK_EMALFORMED);
        assert_non_null(strstr(err, "Secret '../../etc' is not valid"));
        free(err);
        err = NULL;
        json_decref(pod);

        pod = checkpoint_fixture_apiserver_pod();
        json_object_set_new(json_object_get(pod, "metadata"), "name", json_string("x/../../y"));
        assert_int_equal(checkpoint_pod_from_api(pod, "/c", &p, &err), PK_EMALFORMED);
        assert_non_null(strstr(err, "pod 'x/../../y' is not valid"));
        free(err);
        json_decref(pod);
}

/* The owner as the pod names it, for the caller to check against protokube's own workloads. */
static void test_owner_recorded(void **state) {
        json_t *pod = checkpoint_fixture_apiserver_pod();
        CheckpointPod p;
        assert_int_equal(checkpoint_pod_from_api(pod, "/c", &p, NULL), 0);
        assert_string_equal(p.owner.kind, "DaemonSet");
        assert_string_equal(p.owner.name, "kube-apiserver");
        assert_string_equal(p.owner.uid, "0d6f2b7e-2a55-4c1b-8a3e-6c1f0b9d2e44");
        assert_string_equal(p.workload, "DaemonSet/kube-apiserver");
        checkpoint_pod_done(&p);
        json_decref(pod);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_daemonset_pod),  cmocka_unit_test(test_deployment_pod),
                cmocka_unit_test(test_refused),        cmocka_unit_test(test_names_that_climb),
                cmocka_unit_test(test_owner_recorded),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
