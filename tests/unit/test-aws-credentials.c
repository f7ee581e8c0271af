/* SPDX-License-Identifier: Apache-2.0 */
#include "unit-test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aws/credentials.h"
#include "aws/imds.h"
#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/string-util.h"

static char dir[] = "/tmp/pk-awscreds-XXXXXX";

static const char *write_ini(const char *name, const char *text) {
        static char path[128];
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        assert_true(write_file_atomic(path, text, strlen(text), 0600, 0) >= 0);
        return path;
}

static void test_env(void **state) {
        AwsCredentials *c = NULL;
        unsetenv("AWS_ACCESS_KEY_ID");
        setenv("AWS_SECRET_ACCESS_KEY", "s", 1);
        assert_int_equal(aws_credentials_from_env(&c), -ENOENT);
        setenv("AWS_ACCESS_KEY_ID", "AKID", 1);
        setenv("AWS_SESSION_TOKEN", "", 1);
        assert_int_equal(aws_credentials_from_env(&c), 0);
        assert_string_equal(c->access_key_id, "AKID");
        assert_null(c->session_token); /* empty means none */
        assert_false(aws_credentials_expiring(c, USEC_INFINITY - 1));
        c = aws_credentials_free(c);
        setenv("AWS_SECRET_ACCESS_KEY", "bad\nsecret", 1);
        assert_int_equal(aws_credentials_from_env(&c), -EINVAL);
        unsetenv("AWS_ACCESS_KEY_ID");
        unsetenv("AWS_SECRET_ACCESS_KEY");
        unsetenv("AWS_SESSION_TOKEN");
}

static void test_file(void **state) {
        AwsCredentials *c = NULL;
        const char *p =
            write_ini("c1", "[default]\n aws_access_key_id = AKID1 \naws_secret_access_key=S1\n"
                            "; comment\n[ other ]\naws_access_key_id=AKID2\naws_secret_access_key = "
                            "S2/+=\naws_session_token = T2\nregion = x\n");
        assert_int_equal(aws_credentials_from_file(p, NULL, &c), 0);
        assert_string_equal(c->access_key_id, "AKID1");
        assert_string_equal(c->secret_access_key, "S1");
        c = aws_credentials_free(c);
        assert_int_equal(aws_credentials_from_file(p, "other", &c), 0);
        assert_string_equal(c->secret_access_key, "S2/+=");
        assert_string_equal(c->session_token, "T2");
        assert_string_equal(c->source, "shared-credentials-file");
        c = aws_credentials_free(c);
        setenv("AWS_PROFILE", "other", 1);
        setenv("AWS_SHARED_CREDENTIALS_FILE", p, 1);
        assert_int_equal(aws_credentials_from_file(NULL, NULL, &c), 0);
        assert_string_equal(c->access_key_id, "AKID2");
        c = aws_credentials_free(c);
        unsetenv("AWS_PROFILE");
        unsetenv("AWS_SHARED_CREDENTIALS_FILE");

        assert_int_equal(aws_credentials_from_file(p, "missing", &c), -ENOENT);
        assert_int_equal(aws_credentials_from_file("/nonexistent/x", NULL, &c), -ENOENT);
        p = write_ini("c2", "[default]\naws_access_key_id=AKID\n");
        assert_int_equal(aws_credentials_from_file(p, NULL, &c), PK_EMALFORMED);
        p = write_ini("c3", "[default\naws_access_key_id=AKID\n");
        assert_int_equal(aws_credentials_from_file(p, NULL, &c), PK_EMALFORMED);
        p = write_ini("c4", "[default]\njunk line\n");
        assert_int_equal(aws_credentials_from_file(p, NULL, &c), PK_EMALFORMED);
}

static usec_t fixed_clock(clockid_t clock, void *userdata) {
        return *(usec_t *)userdata;
}

static void test_expiry(void **state) {
        AwsCredentials *c = NULL;
        usec_t t = 1000 * USEC_PER_SEC;
        assert_int_equal(aws_credentials_new("A", "S", "T", &c), 0);
        c->expiration = t + 400 * USEC_PER_SEC;
        clock_override(fixed_clock, &t);
        assert_false(aws_credentials_expiring(c, 300 * USEC_PER_SEC));
        t += 150 * USEC_PER_SEC;
        assert_true(aws_credentials_expiring(c, 300 * USEC_PER_SEC));
        t += 300 * USEC_PER_SEC;
        assert_true(aws_credentials_expiring(c, 0));
        clock_override(NULL, NULL);
        aws_credentials_free(c);

        usec_t u;
        assert_int_equal(aws_parse_iso8601("2015-08-30T12:36:00Z", &u), 0);
        assert_int_equal(u, 1440938160ULL * USEC_PER_SEC);
        assert_int_equal(aws_parse_iso8601("2015-08-30T12:36:00.123Z", &u), 0);
        assert_int_equal(aws_parse_iso8601("2015-08-30T12:36:00+02:00", &u), -EINVAL);
        assert_int_equal(aws_parse_iso8601("yesterday", &u), -EINVAL);
}

static int setup(void **state) {
        return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
        const char *names[] = { "c1", "c2", "c3", "c4" };
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                _cleanup_free_ char *p = strjoin(dir, "/", names[i]);
                unlink(p);
        }
        return rmdir(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_env),
                cmocka_unit_test(test_file),
                cmocka_unit_test(test_expiry),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
