/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The Google Cloud double (tests/fakes/gce/server.py) for the unit tests: started per test on a loopback
 * port with one instance, whose metadata server gives the tests their project and token (as on a GCE
 * master); configured and inspected through its unsigned /_double/ control paths, stopped by pid. */

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "fake-server.h"

#define GCE_DOUBLE_SCRIPT   SRCDIR "/tests/fakes/gce/server.py"
#define GCE_DOUBLE_PROJECT  "protokube-unit"
#define GCE_DOUBLE_INSTANCE "master-a"

static FakeServer gce_double;

static inline void gce_double_post(const char *path, const char *json) {
        fake_server_post(&gce_double, path, json, 30 * USEC_PER_SEC);
}

/* GET /_double/<what> as JSON; caller json_decref()s. */
static inline json_t *gce_double_get(const char *what) {
        _cleanup_free_ char *path = strjoin("/_double/", what);
        return fake_server_get_json(&gce_double, path);
}

static inline json_int_t gce_double_counter(const char *name) {
        return fake_server_counter(&gce_double, name);
}

static inline int gce_double_start(void **state) {
        char cfg[256], host[64];
        snprintf(gce_double.dir, sizeof(gce_double.dir), "/tmp/pk-gceunit-XXXXXX");
        assert_non_null(mkdtemp(gce_double.dir));
        fake_server_spawn(&gce_double, GCE_DOUBLE_SCRIPT);
        snprintf(cfg, sizeof(cfg),
                 "{\"project\": \"%s\", \"instances\": {\"%s\": {\"zone\": \"europe-west1-b\"}}}",
                 GCE_DOUBLE_PROJECT, GCE_DOUBLE_INSTANCE);
        gce_double_post("/_double/config", cfg);
        json_t *st = gce_double_get("state");
        json_int_t port =
            json_integer_value(json_object_get(json_object_get(st, "metadata_ports"), GCE_DOUBLE_INSTANCE));
        json_decref(st);
        assert_true(port > 0);
        snprintf(host, sizeof(host), "127.0.0.1:%lld", (long long)port);
        setenv("GCE_METADATA_HOST", host, 1);
        setenv("PROTOKUBE_GCE_ENDPOINT", gce_double.url, 1);
        unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
        unsetenv("GOOGLE_CLOUD_PROJECT");
        unsetenv("PROTOKUBE_GCE_CA_BUNDLE");
        return 0;
}

static inline int gce_double_stop(void **state) {
        fake_server_stop(&gce_double);
        (void)rmdir(gce_double.dir);
        return 0;
}
