/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What the checkpoint's unit tests (test-pivot-checkpoint*.c) share: a node's directories under a base
 * directory of the test (state: protokube's, manifests: kubelet's, proc: a procfs the test lays out) with a
 * CheckpointConfig over them, removed whole at the end; and the apiserver's pod as kube-apiserver 1.20
 * returns it. */

#include <ftw.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/string-util.h"
#include "kube/kube-client.h"
#include "pivot/checkpoint-apply.h"
#include "unit-test.h"
#include "vectors.h"

typedef struct CheckpointFixture {
        char base[64];
        char *state, *manifests, *proc;
        KubeClient *api;
        CheckpointConfig c;
} CheckpointFixture;

static inline char *path_of(const char *a, const char *b) {
        char *p = strprintf("%s/%s", a, b);
        assert_non_null(p);
        return p;
}

static inline bool exists(const char *dir, const char *name) {
        _cleanup_free_ char *p = path_of(dir, name);
        return access(p, F_OK) == 0;
}

/* A new base directory from template (mkdtemp's): base/manifests and base/proc made, base/state left for
 * protokube to make. The config comes with checkpoint_fixture_config(). */
static inline CheckpointFixture *checkpoint_fixture_new(const char *template) {
        CheckpointFixture *f = calloc(1, sizeof(*f));
        assert_non_null(f);
        snprintf(f->base, sizeof(f->base), "%s", template);
        assert_non_null(mkdtemp(f->base));
        f->state = path_of(f->base, "state");
        f->manifests = path_of(f->base, "manifests");
        f->proc = path_of(f->base, "proc");
        assert_int_equal(mkdir(f->manifests, 0755), 0);
        assert_int_equal(mkdir(f->proc, 0755), 0);
        return f;
}

/* The checkpoint of node_name over f's directories, asking api (which f takes: freed with it). */
static inline void checkpoint_fixture_config(CheckpointFixture *f, const char *node_name, KubeClient *api) {
        f->api = api;
        f->c = (CheckpointConfig){ .state_dir = f->state,
                                   .manifest_dir = f->manifests,
                                   .node_name = node_name,
                                   .local = f->api,
                                   .proc_dir = f->proc };
}

static inline int checkpoint_fixture_rm_entry(const char *path, const struct stat *st, int flag,
                                              struct FTW *ftw) {
        return remove(path);
}

static inline void checkpoint_fixture_free(CheckpointFixture *f) {
        assert_int_equal(nftw(f->base, checkpoint_fixture_rm_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
        kube_client_free(f->api);
        free(f->state);
        free(f->manifests);
        free(f->proc);
        free(f);
}

/* A DaemonSet's pod as kube-apiserver 1.20 returns it (tests/vectors/kube/pod-apiserver-daemonset.json);
 * caller json_decref()s. */
static inline json_t *checkpoint_fixture_apiserver_pod(void) {
        const char *names[] = { "kube/pod-apiserver-daemonset.json" };
        char *text;
        size_t len;
        vectors_read(names, 1, &text, &len);
        json_t *pod = json_loadb(text, len, 0, NULL);
        free(text);
        assert_non_null(pod);
        return pod;
}
