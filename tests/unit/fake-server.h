/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A fake server of tests/fakes/ for the unit tests (the API double of kube-fake.h, the AWS double of
 * aws-double.h): a Python program that binds a loopback port 0 and writes the port to its --port-file once
 * it listens. Started in a directory of the test's own, talked to through its unsigned control paths,
 * stopped by pid. */

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
#include "unit-test.h"

#define FAKE_SERVER_PYTHON "/usr/bin/python3"

extern char **environ;

typedef struct FakeServer {
        pid_t pid;
        char dir[64]; /* the test's directory: the port file, and what the test puts there */
        char url[64];
} FakeServer;

static inline void fake_server_msleep(unsigned ms) {
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
}

/* Starts script in f->dir (made by the caller) and waits for its port: f->url is then its loopback URL. */
static inline void fake_server_spawn(FakeServer *f, const char *script) {
        _cleanup_free_ char *port_file = strjoin(f->dir, "/port"), *port = NULL;
        char *argv[] = { (char *)FAKE_SERVER_PYTHON, (char *)script, (char *)"--port-file", port_file,
                         NULL };
        assert_int_equal(posix_spawn(&f->pid, FAKE_SERVER_PYTHON, NULL, NULL, argv, environ), 0);
        /* it binds port 0 and writes the port once it listens: up to 15 s */
        for (unsigned i = 0; i < 300 && read_full_file(port_file, 64, &port, NULL) < 0; i++)
                fake_server_msleep(50);
        assert_non_null(port);
        snprintf(f->url, sizeof(f->url), "http://127.0.0.1:%s", port);
}

/* Stops the server started by fake_server_spawn() (none if f->pid is 0) and removes its port file; the
 * directory stays, for the caller to remove with what it put there. */
static inline void fake_server_stop(FakeServer *f) {
        int status;
        if (f->pid > 0) {
                kill(f->pid, SIGTERM);
                /* bounded: 5 s for a clean exit, then SIGKILL */
                for (unsigned i = 0; i < 100 && waitpid(f->pid, &status, WNOHANG) == 0; i++)
                        fake_server_msleep(50);
                if (waitpid(f->pid, &status, WNOHANG) == 0) {
                        kill(f->pid, SIGKILL);
                        waitpid(f->pid, &status, 0);
                }
        }
        f->pid = 0;
        _cleanup_free_ char *pf = strjoin(f->dir, "/port");
        (void)unlink(pf);
}

/* POSTs json to one of its control paths; anything but a 200 fails the test. */
static inline void fake_server_post(const FakeServer *f, const char *path, const char *json,
                                    usec_t timeout) {
        _cleanup_free_ char *url = strjoin(f->url, path);
        const char *hdr[] = { "Content-Type: application/json" };
        HttpRequest req = { .method = "POST",
                            .url = url,
                            .headers = hdr,
                            .n_headers = 1,
                            .body = json,
                            .body_len = strlen(json),
                            .timeout = timeout };
        HttpResponse resp;
        assert_int_equal(http_request(&req, &resp, NULL), 0);
        if (resp.status != 200)
                fail_msg("POST %s: %ld %s", path, resp.status, resp.body);
        http_response_done(&resp);
}

/* GETs one of its control paths as JSON; caller json_decref()s. */
static inline json_t *fake_server_get_json(const FakeServer *f, const char *path) {
        _cleanup_free_ char *url = strjoin(f->url, path);
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

/* A counter of a double's /_double/state ("counters": requests by kind, throttles...). */
static inline json_int_t fake_server_counter(const FakeServer *f, const char *name) {
        json_t *j = fake_server_get_json(f, "/_double/state");
        json_int_t v = json_integer_value(json_object_get(json_object_get(j, "counters"), name));
        json_decref(j);
        return v;
}
