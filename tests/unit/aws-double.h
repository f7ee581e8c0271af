/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The AWS double (tests/fakes/aws/server.py) for the AWS unit tests: started per test on a loopback port (or
 * one already running at $AWS_DOUBLE_URL, which the integration test starts as root), configured and
 * inspected through its unsigned /_double/ control paths, stopped by pid. */

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fake-server.h"

#define AWS_DOUBLE_SCRIPT  SRCDIR "/tests/fakes/aws/server.py"
#define AWS_DOUBLE_AKID    "AKIDEXAMPLE"
#define AWS_DOUBLE_SECRET  "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define AWS_DOUBLE_SELF_ID "i-0123456789abcdef0"

typedef FakeServer AwsDouble;

static AwsDouble aws_double;

/* The AWS_REGION the tests see; NULL leaves it unset, so the client must learn it from IMDS. */
static const char *aws_double_region = "us-east-1";

static inline void aws_double_post(const char *path, const char *json) {
        fake_server_post(&aws_double, path, json, 30 * USEC_PER_SEC);
}

/* GET /_double/<what> as JSON; caller json_decref()s. */
static inline json_t *aws_double_get(const char *what) {
        _cleanup_free_ char *path = strjoin("/_double/", what);
        return fake_server_get_json(&aws_double, path);
}

static inline json_int_t aws_double_counter(const char *name) {
        return fake_server_counter(&aws_double, name);
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
        else
                fake_server_spawn(&aws_double, AWS_DOUBLE_SCRIPT);
        aws_double_env();
        return 0;
}

static inline int aws_double_stop(void **state) {
        if (aws_double.pid <= 0)
                aws_double_post("/_double/cleanup", "{}"); /* a shared double: leave it as we found it */
        fake_server_stop(&aws_double);
        _cleanup_free_ char *home = strjoin(aws_double.dir, "/home");
        (void)rmdir(home);
        (void)rmdir(aws_double.dir);
        return 0;
}
