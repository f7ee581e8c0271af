/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The Kubernetes API double (tests/fakes/kube/server.py) for the unit tests: started per test on a loopback
 * port, loaded and inspected through its /_fake/ control paths, stopped by pid. It answers lists as
 * kube-apiserver does (limit and continue, label and field selectors, a 400 for a query it cannot use). */

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fake-server.h"
#include "kube/kube-client.h"

#define KUBE_FAKE_SCRIPT SRCDIR "/tests/fakes/kube/server.py"

typedef FakeServer KubeFake;

static inline void kube_fake_start(KubeFake *f) {
        snprintf(f->dir, sizeof(f->dir), "/tmp/pk-kubefake-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        fake_server_spawn(f, KUBE_FAKE_SCRIPT);
}

static inline void kube_fake_stop(KubeFake *f) {
        fake_server_stop(f);
        (void)rmdir(f->dir);
}

static inline void kube_fake_post(const KubeFake *f, const char *path, const char *json) {
        fake_server_post(f, path, json, 60 * USEC_PER_SEC);
}

/* A client of the double (plain http on loopback); caller kube_client_free()s. */
static inline KubeClient *kube_fake_client(const KubeFake *f) {
        KubeClient *c = NULL;
        assert_int_equal(kube_client_new(&(KubeClientConfig){ .server = f->url }, &c, NULL), 0);
        return c;
}

/* Objects given as JSON text: an array of API objects. */
static inline void kube_fake_objects(const KubeFake *f, const char *json_array) {
        kube_fake_post(f, "/_fake/objects", json_array);
}

/* The same, taking an array built by the test. */
static inline void kube_fake_objects_json(const KubeFake *f, json_t *array) {
        char *text = json_dumps(array, JSON_COMPACT);
        assert_non_null(text);
        kube_fake_objects(f, text);
        free(text);
        json_decref(array);
}

/* count pods in kube-system, made by the double: name and node may hold "{i}" (the pod's index), labels is a
 * JSON object, pad the bytes of an annotation each carries (0: none). */
static inline void kube_fake_pods(const KubeFake *f, unsigned count, const char *name, const char *node,
                                  unsigned pad, const char *labels) {
        _cleanup_free_ char *spec =
            strprintf("{\"count\": %u, \"name\": \"%s\", \"node\": \"%s\", \"pad\": %u, \"labels\": %s}",
                      count, name, node, pad, labels);
        assert_non_null(spec);
        kube_fake_post(f, "/_fake/pods", spec);
}

/* Every API request the double saw: an array of {method, path, query}; caller json_decref()s. */
static inline json_t *kube_fake_requests(const KubeFake *f) {
        return fake_server_get_json(f, "/_fake/requests");
}
