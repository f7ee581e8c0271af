/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* For the unit tests of one step of the pass (test-step-*.c): what its print hook writes, and the words a
 * text must hold. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/string-util.h"
#include "basic/strv.h"
#include "daemon/pass-types.h"
#include "unit-test.h"

/* A cluster's spec at its smallest, and a worker w1 of it (manifests in /m, the kubelet's files in /k). */
#define PASS_TEST_WORKER_SPEC                                                                      \
        "apiVersion: protokube/v1alpha1\nkind: Cluster\nmetadata:\n  name: demo.k8s.test\nspec:\n" \
        "  etcdClusters:\n    - name: main\n      image: registry.k8s.io/etcd:3.4.13-0\n"          \
        "  kubernetesVersion: 1.20.2\n"
#define PASS_TEST_WORKER                                                                                \
        {                                                                                               \
                .role = NODE_ROLE_WORKER, .node_name = "w1", .manifest_dir = "/m", .kubelet_dir = "/k", \
                .config_dir = "/c"                                                                      \
        }

/* A Pass of spec (a spec file's text) for node: the spec's etcd clusters, its certificates' settings; no
 * provider, no caches. Free with pass_free(). */
static inline Pass *pass_test_new(const char *spec, const NodeSettings *node) {
        _cleanup_strv_free_ char **errors = NULL;
        Pass *p = calloc(1, sizeof(Pass));
        assert_non_null(p);
        assert_int_equal(cluster_spec_load_string("cluster.yaml", spec, strlen(spec), &p->spec, &errors), 0);
        assert_null(errors);
        assert_non_null(p->etcd_clusters = strv_new(NULL));
        for (size_t i = 0; i < p->spec->etcd_clusters.n; i++)
                assert_int_equal(strv_extend(&p->etcd_clusters, cluster_spec_etcd(p->spec, i)->name), 0);
        p->node = *node;
        p->certs = pass_certs_settings(p->spec, p->etcd_clusters);
        return p;
}

/* What step's print hook writes for (pass, observation, plan); its result in *ret_r, or asserted to be 0
 * when ret_r is NULL. Caller frees. */
static inline char *pass_test_print(const PassStep *step, const Pass *p, const PassObservation *o,
                                    const PassPlan *plan, int *ret_r) {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        assert_non_null(f);
        int r = step->print(p, o, plan, f);
        if (ret_r)
                *ret_r = r;
        else
                assert_int_equal(r, 0);
        assert_int_equal(fclose(f), 0);
        return text;
}

static inline void assert_contains(const char *text, const char *want) {
        if (!text || !strstr(text, want))
                fail_msg("expected '%s' in:\n%s", want, strna(text));
}
