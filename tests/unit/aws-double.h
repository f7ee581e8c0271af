/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The AWS double (tests/fakes/aws/server.py) for the AWS unit tests: started per test on a loopback port (or
 * one already running at $AWS_DOUBLE_URL, which the integration test starts as root), configured and
 * inspected through its unsigned /_double/ control paths, stopped by pid. */

#include <fcntl.h>
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

#define AWS_DOUBLE_PYTHON  "/usr/bin/python3"
#define AWS_DOUBLE_SCRIPT  SRCDIR "/tests/fakes/aws/server.py"
#define AWS_DOUBLE_AKID    "AKIDEXAMPLE"
#define AWS_DOUBLE_SECRET  "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define AWS_DOUBLE_SELF_ID "i-0123456789abcdef0"

extern char **environ;

typedef struct AwsDouble {
        pid_t pid;
        char dir[64];
        char url[64];
} AwsDouble;

static AwsDouble aws_double;

/* The AWS_REGION the tests see; NULL leaves it unset, so the client must learn it from IMDS. */
static const char *aws_double_region = "us-east-1";

static inline void aws_double_msleep(unsigned ms) {
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
}

static inline void aws_double_post(const char *path, const char *json) {
        _cleanup_free_ char *url = strjoin(aws_double.url, path);
        const char *hdr[] = { "Content-Type: application/json" };
        HttpRequest req = { .method = "POST",
                            .url = url,
                            .headers = hdr,
                            .n_headers = 1,
                            .body = json,
                            .body_len = strlen(json),
                            .timeout = 30 * USEC_PER_SEC };
        HttpResponse resp;
        assert_int_equal(http_request(&req, &resp, NULL), 0);
        assert_int_equal(resp.status, 200);
        http_response_done(&resp);
}

/* GET /_double/<what> as JSON; caller json_decref()s. */
static inline json_t *aws_double_get(const char *what) {
        _cleanup_free_ char *url = strjoin(aws_double.url, "/_double/", what);
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

/* A counter of the double's /_double/state (requests by kind, throttles...). */
static inline json_int_t aws_double_counter(const char *name) {
        json_t *j = aws_double_get("state");
        json_int_t v = json_integer_value(json_object_get(json_object_get(j, "counters"), name));
        json_decref(j);
        return v;
}

static inline void aws_double_env(void) {
        char home[128];
        /* A clean environment: the double's endpoints, known keys, no files of the machine's user. */
        snprintf(home, sizeof(home), "%s/home", aws_double.dir);
        (void)mkdir(home, 0700);
        setenv("HOME", home, 1);
        setenv("AWS_ENDPOINT_URL", aws_double.url, 1);
        setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", aws_double.url, 1);
        setenv("AWS_ACCESS_KEY_ID", AWS_DOUBLE_AKID, 1);
        setenv("AWS_SECRET_ACCESS_KEY", AWS_DOUBLE_SECRET, 1);
        if (aws_double_region)
                setenv("AWS_REGION", aws_double_region, 1);
        else
                unsetenv("AWS_REGION");
        unsetenv("AWS_SESSION_TOKEN");
        unsetenv("AWS_DEFAULT_REGION");
        unsetenv("AWS_PROFILE");
        unsetenv("AWS_SHARED_CREDENTIALS_FILE");
        unsetenv("AWS_ENDPOINT_URL_EC2");
        unsetenv("AWS_ENDPOINT_URL_ROUTE_53");
        unsetenv("AWS_EC2_METADATA_DISABLED");
}

static inline int aws_double_start(void **state) {
        const char *ext = getenv("AWS_DOUBLE_URL");
        snprintf(aws_double.dir, sizeof(aws_double.dir), "/tmp/pk-awsprovt-XXXXXX");
        assert_non_null(mkdtemp(aws_double.dir));
        aws_double.pid = 0;
        if (ext)
                snprintf(aws_double.url, sizeof(aws_double.url), "%s", ext);
        else {
                _cleanup_free_ char *port_file = strjoin(aws_double.dir, "/port");
                char *argv[] = { (char *)AWS_DOUBLE_PYTHON, (char *)AWS_DOUBLE_SCRIPT, (char *)"--port-file",
                                 port_file, NULL };
                assert_int_equal(posix_spawn(&aws_double.pid, AWS_DOUBLE_PYTHON, NULL, NULL, argv, environ),
                                 0);
                _cleanup_free_ char *port = NULL;
                /* The double binds port 0 and writes the port once it listens: up to 15 s. */
                for (unsigned i = 0; i < 300 && read_full_file(port_file, 64, &port, NULL) < 0; i++)
                        aws_double_msleep(50);
                assert_non_null(port);
                snprintf(aws_double.url, sizeof(aws_double.url), "http://127.0.0.1:%s", port);
        }
        aws_double_env();
        return 0;
}

static inline int aws_double_stop(void **state) {
        if (aws_double.pid > 0) {
                int status;
                kill(aws_double.pid, SIGTERM);
                /* Bounded: 5 s for a clean exit, then SIGKILL. */
                for (unsigned i = 0; i < 100 && waitpid(aws_double.pid, &status, WNOHANG) == 0; i++)
                        aws_double_msleep(50);
                if (waitpid(aws_double.pid, &status, WNOHANG) == 0) {
                        kill(aws_double.pid, SIGKILL);
                        waitpid(aws_double.pid, &status, 0);
                }
        } else
                aws_double_post("/_double/cleanup", "{}"); /* a shared double: leave it as we found it */
        aws_double.pid = 0;
        _cleanup_free_ char *pf = strjoin(aws_double.dir, "/port"), *home = strjoin(aws_double.dir, "/home");
        (void)unlink(pf);
        (void)rmdir(home);
        (void)rmdir(aws_double.dir);
        return 0;
}
