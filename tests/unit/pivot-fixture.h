/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A master's pivot for the pivot's unit tests (test-pivot-*.c), over a base directory of the test:
 * base/kubeconfig (the test writes it), base/manifests (kubelet's), base/state (protokube's); the API named
 * as 127.0.0.1:1, where nothing listens (a test points the clients at its double, or means the API away);
 * one ConfigMap of the test's, kube-system/x, as the self-hosted assets. */

#include <string.h>

#include "basic/string-util.h"
#include "pivot/pivot.h"
#include "unit-test.h"

typedef struct PivotFixture {
        char *kubeconfig, *manifest_dir, *state_dir;
        SelfHostedObject obj;
        SelfHostedAssets assets;
        PivotSettings settings;
} PivotFixture;

/* A Pivot made from t->settings points into t and cm_text: keep both while it lives. */
static inline void pivot_fixture_init(PivotFixture *t, const char *base, const char *node_name,
                                      usec_t call_timeout, char *cm_text) {
        *t = (PivotFixture){ .kubeconfig = strjoin(base, "/kubeconfig"),
                             .manifest_dir = strjoin(base, "/manifests"),
                             .state_dir = strjoin(base, "/state") };
        assert_true(t->kubeconfig && t->manifest_dir && t->state_dir);
        t->obj = (SelfHostedObject){ .kind = SELF_HOSTED_CONFIG_MAP,
                                     .api_version = "v1",
                                     .kind_name = "ConfigMap",
                                     .namespace = (char *)"kube-system",
                                     .name = (char *)"x",
                                     .text = cm_text,
                                     .text_len = strlen(cm_text) };
        t->assets = (SelfHostedAssets){ .items = &t->obj, .n = 1 };
        t->settings = (PivotSettings){ .kubeconfig = t->kubeconfig,
                                       .api_host = "127.0.0.1",
                                       .api_port = 1,
                                       .node_name = node_name,
                                       .internal_ip = "127.0.0.1",
                                       .manifest_dir = t->manifest_dir,
                                       .state_dir = t->state_dir,
                                       .assets = &t->assets,
                                       .call_timeout = call_timeout };
}

static inline void pivot_fixture_done(PivotFixture *t) {
        free(t->kubeconfig);
        free(t->manifest_dir);
        free(t->state_dir);
}
