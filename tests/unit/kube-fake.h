/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The Kubernetes API double (tests/fakes/kube/server.py) for the unit tests: started per test on a loopback
 * port, loaded and inspected through its /_fake/ control paths, stopped by pid. It answers lists as
 * kube-apiserver does (limit and continue, label and field selectors, a 400 for a query it cannot use). */

#include <jansson.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/string-util.h"
#include "shared/http.h"

#define KUBE_FAKE_PYTHON "/usr/bin/python3"
#define KUBE_FAKE_SCRIPT SRCDIR "/tests/fakes/kube/server.py"

extern char **environ;

typedef struct KubeFake {
        pid_t pid;
        char dir[64];
        char url[64];
} KubeFake;

static inline void kube_fake_msleep(unsigned ms) {
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
}

static inline void kube_fake_start(KubeFake *f) {
        snprintf(f->dir, sizeof(f->dir), "/tmp/pk-kubefake-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        _cleanup_free_ char *port_file = strjoin(f->dir, "/port"), *port = NULL;
        char *argv[] = { (char *)KUBE_FAKE_PYTHON, (char *)KUBE_FAKE_SCRIPT, (char *)"--port-file",
                         port_file, NULL };
        assert_int_equal(posix_spawn(&f->pid, KUBE_FAKE_PYTHON, NULL, NULL, argv, environ), 0);
        /* it binds port 0 and writes the port once it listens: up to 15 s */
        for (unsigned i = 0; i < 300 && read_full_file(port_file, 64, &port, NULL) < 0; i++)
                kube_fake_msleep(50);
        assert_non_null(port);
        snprintf(f->url, sizeof(f->url), "http://127.0.0.1:%s", port);
}

static inline void kube_fake_stop(KubeFake *f) {
        int status;
        if (f->pid > 0) {
                kill(f->pid, SIGTERM);
                /* bounded: 5 s for a clean exit, then SIGKILL */
                for (unsigned i = 0; i < 100 && waitpid(f->pid, &status, WNOHANG) == 0; i++)
                        kube_fake_msleep(50);
                if (waitpid(f->pid, &status, WNOHANG) == 0) {
                        kill(f->pid, SIGKILL);
                        waitpid(f->pid, &status, 0);
                }
        }
        f->pid = 0;
        _cleanup_free_ char *pf = strjoin(f->dir, "/port");
        (void)unlink(pf);
        (void)rmdir(f->dir);
}

static inline void kube_fake_post(const KubeFake *f, const char *path, const char *json) {
        _cleanup_free_ char *url = strjoin(f->url, path);
        const char *hdr[] = { "Content-Type: application/json" };
        HttpRequest req = { .method = "POST",
                            .url = url,
                            .headers = hdr,
                            .n_headers = 1,
                            .body = json,
                            .body_len = strlen(json),
                            .timeout = 60 * USEC_PER_SEC };
        HttpResponse resp;
        assert_int_equal(http_request(&req, &resp, NULL), 0);
        if (resp.status != 200)
                fail_msg("POST %s: %ld %s", path, resp.status, resp.body);
        http_response_done(&resp);
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

/* Every API request the double saw: an array of {method, path, query}; caller json_decref()s. */
static inline json_t *kube_fake_requests(const KubeFake *f) {
        _cleanup_free_ char *url = strjoin(f->url, "/_fake/requests");
        HttpRequest req = {
                .method = "GET", .url = url, .timeout = 10 * USEC_PER_SEC, .max_response = 64U * 1024 * 1024
        };
        HttpResponse resp;
        assert_int_equal(http_request(&req, &resp, NULL), 0);
        json_t *j = json_loads(resp.body, 0, NULL);
        assert_non_null(j);
        http_response_done(&resp);
        return j;
}
