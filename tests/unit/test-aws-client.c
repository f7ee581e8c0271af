/* SPDX-License-Identifier: Apache-2.0 */
/* The AWS client against the loopback double (tests/fakes/aws/server.py), which checks every signature with
 * botocore. Each test starts a fresh double unless AWS_DOUBLE_URL names one (tests/integration/
 * test_aws_client.py starts it with a by-id directory, as root, for the loop-device attach test). */
#include "unit-test.h"

#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>

#include "aws-double.h"
#include "aws/client.h"
#include "aws/ec2.h"
#include "aws/route53.h"
#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/stop.h"
#include "basic/string-util.h"
#include "shared/http-wire.h"
#include "shared/http.h"

/* The client learns the region from IMDS here: no AWS_REGION in the environment. */
static int double_start(void **state) {
        aws_double_region = NULL;
        return aws_double_start(state);
}

static AwsClient *client_new(void) {
        AwsClient *c = NULL;
        _cleanup_free_ char *err = NULL;
        int r = aws_client_new(&c, &err);
        if (r < 0)
                fail_msg("aws_client_new: %s", strna(err));
        /* Fast backoff so storms pass quickly; still full jitter. */
        aws_client_set_retry(c, 8, 2 * USEC_PER_MSEC, 40 * USEC_PER_MSEC);
        return c;
}

static void test_describe_self_region_from_imds(void **state) {
        _cleanup_free_ char *err = NULL;
        _cleanup_(aws_client_freep) AwsClient *c = client_new();
        AwsInstance self;
        const char *region;
        int r = aws_ec2_describe_self(c, &self, &err);
        if (r < 0)
                fail_msg("describe self: %s", strna(err));
        assert_string_equal(self.instance_id, AWS_DOUBLE_SELF_ID);
        assert_string_equal(self.availability_zone, "us-east-1a");
        assert_string_equal(self.private_ip, "10.0.0.5");
        assert_string_equal(self.public_ip, "54.0.0.5");
        assert_string_equal(self.root_device_name, "/dev/xvda");
        assert_string_equal(aws_tags_get(self.tags, self.n_tags, "KubernetesCluster"), "test.example.com");
        assert_non_null(self.block_devices);
        assert_string_equal(self.block_devices[0], "/dev/xvda");
        assert_int_equal(aws_client_region(c, &region, &err), 0);
        assert_string_equal(region, "us-east-1");
        aws_instance_done(&self);
}

static void test_region_and_endpoint_env(void **state) {
        setenv("AWS_REGION", "eu-west-2", 1);
        setenv("AWS_ENDPOINT_URL_EC2", "http://127.0.0.1:1/ec2/", 1);
        unsetenv("AWS_ENDPOINT_URL");
        _cleanup_(aws_client_freep) AwsClient *c = client_new();
        const char *region, *ep;
        _cleanup_free_ char *err = NULL;
        assert_int_equal(aws_client_region(c, &region, &err), 0);
        assert_string_equal(region, "eu-west-2");
        assert_int_equal(aws_client_endpoint(c, AWS_SERVICE_EC2, &ep, &err), 0);
        assert_string_equal(ep, "http://127.0.0.1:1/ec2");
        assert_int_equal(aws_client_endpoint(c, AWS_SERVICE_ROUTE53, &ep, &err), 0);
        assert_string_equal(ep, "https://route53.amazonaws.com");
        setenv("AWS_REGION", "bad/region", 1);
        AwsClient *bad = NULL;
        assert_int_equal(aws_client_new(&bad, &err), -EINVAL);
        assert_null(bad);
        assert_string_equal(err, "AWS_REGION='bad/region' is not a region name");
        /* a region becomes part of host names: "ec2.x#.amazonaws.com" would be host ec2.x */
        const char *bad_names[] = { "x#", "eu-west-1?", "US-EAST-1", "a.b" };
        for (size_t i = 0; i < ELEMENTSOF(bad_names); i++) {
                setenv("AWS_REGION", bad_names[i], 1);
                free(err);
                err = NULL;
                assert_int_equal(aws_client_new(&bad, &err), -EINVAL);
                assert_null(bad);
        }
        unsetenv("AWS_REGION");
        unsetenv("AWS_ENDPOINT_URL_EC2");
        unsetenv("AWS_ENDPOINT_URL_ROUTE_53");
        setenv("AWS_ENDPOINT_URL", aws_double.url, 1);
}

/* The signature and the session token ride in the headers: plain http only to loopback. */
static void test_endpoint_scheme(void **state) {
        static const struct {
                const char *url;
                bool ok;
        } cases[] = {
                { "http://example.com", false },
                { "http://127.0.0.1:8080", true },
                { "https://example.com", true },
                { "http://127.0.0.1.example.com", false },
                { "http://[::1]:80", true },
                { "http://localhost:4566/aws/", true },
                { "http://127.255.0.9", true },
                { "http://[0:0:0:0:0:0:0:1]/", true },
                { "http://128.0.0.1", false },
                { "http://10.0.0.1:80", false },
                { "http://[::2]:80", false },
                { "http://127.0.0.1@example.com/", false },
                { "http://user@127.0.0.1/", false },
                { "http://127.0.0.1:80:81/", false },
                { "http://127.0.0.1:http/", false },
                { "http://[::1]x/", false },
                { "http://", false },
                { "ftp://127.0.0.1", false },
                { "https://ec2.example.com:8443/base", true },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *err = NULL;
                int r = http_endpoint_check("AWS_ENDPOINT_URL_EC2", cases[i].url, &err);
                print_message("%s -> %s\n", cases[i].url, err ?: "ok");
                if (cases[i].ok) {
                        assert_int_equal(r, 0);
                        assert_null(err);
                } else {
                        assert_int_equal(r, -EINVAL);
                        _cleanup_free_ char *want = strprintf("AWS_ENDPOINT_URL_EC2='%s': ", cases[i].url);
                        assert_true(startswith(err, want));
                }
        }

        /* Through the client: the variable that held the URL is the one named. */
        _cleanup_free_ char *saved = strdup(getenv("AWS_ENDPOINT_URL"));
        AwsClient *c = NULL;
        _cleanup_free_ char *err = NULL;
        setenv("AWS_ENDPOINT_URL_ROUTE_53", "http://example.com", 1);
        assert_int_equal(aws_client_new(&c, &err), -EINVAL);
        assert_null(c);
        assert_string_equal(err,
                            "AWS_ENDPOINT_URL_ROUTE_53='http://example.com': plain http is allowed only for "
                            "a loopback host (127.0.0.0/8, ::1, localhost): use https");
        unsetenv("AWS_ENDPOINT_URL_ROUTE_53");
        free(err);
        err = NULL;
        setenv("AWS_ENDPOINT_URL", "http://127.0.0.1.example.com", 1);
        assert_int_equal(aws_client_new(&c, &err), -EINVAL);
        assert_non_null(strstr(err, "AWS_ENDPOINT_URL='http://127.0.0.1.example.com': plain http"));
        free(err);
        err = NULL;
        setenv("AWS_ENDPOINT_URL", "http://[::1]:80", 1);
        assert_int_equal(aws_client_new(&c, &err), 0);
        assert_null(err);
        c = aws_client_free(c);
        setenv("AWS_ENDPOINT_URL", saved, 1);
}

/* The instance's region from IMDS goes into host names too: one that is not a region name is refused. */
static void test_imds_region_checked(void **state) {
        aws_double_post("/_double/config", "{\"region\": \"evil.example#\"}");
        _cleanup_(aws_client_freep) AwsClient *c = client_new();
        const char *region;
        _cleanup_free_ char *err = NULL;
        assert_int_equal(aws_client_region(c, &region, &err), PK_EMALFORMED);
        assert_non_null(strstr(err, "IMDS"));
        aws_double_post("/_double/config", "{\"region\": \"us-east-1\"}"); /* a shared double goes on */
}

/* The wrong secret must give AWS's SignatureDoesNotMatch, name the request, never echo the secret, and never
 * be retried (a client error). */
static void test_wrong_secret(void **state) {
        _cleanup_free_ char *err = NULL;
        setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret-0123456789", 1);
        _cleanup_(aws_client_freep) AwsClient *c = client_new();
        AwsVolume *v = NULL;
        size_t n = 0;
        json_int_t before = aws_double_counter("requests");
        assert_int_equal(aws_ec2_describe_volumes(c, NULL, 0, NULL, &v, &n, &err), PK_ECLOUD);
        const char *msg = strna(err);
        print_message("error: %s\n", msg);
        assert_non_null(msg);
        assert_non_null(strstr(msg, "ec2 DescribeVolumes: SignatureDoesNotMatch: The request signature"));
        assert_non_null(strstr(msg, "HTTP 403, request id "));
        assert_null(strstr(msg, "wrong-secret"));
        assert_non_null(strstr(strna(err), "SignatureDoesNotMatch"));
        assert_int_equal(aws_client_retries(c), 0);
        assert_int_equal(aws_double_counter("requests"), before + 1);
        setenv("AWS_SECRET_ACCESS_KEY", AWS_DOUBLE_SECRET, 1);
}

static void test_unknown_key(void **state) {
        _cleanup_free_ char *err = NULL;
        setenv("AWS_ACCESS_KEY_ID", "AKIDUNKNOWN", 1);
        _cleanup_(aws_client_freep) AwsClient *c = client_new();
        AwsHostedZone *z = NULL;
        size_t n = 0;
        assert_int_equal(aws_route53_find_zones(c, "k8s.test.", &z, &n, &err), PK_ECLOUD);
        print_message("error: %s\n", strna(err));
        assert_non_null(strstr(strna(err), "InvalidClientTokenId"));
        assert_non_null(strstr(strna(err), "route53 ListHostedZonesByName: InvalidClientTokenId"));
        setenv("AWS_ACCESS_KEY_ID", AWS_DOUBLE_AKID, 1);
}

static void test_shared_credentials_file(void **state) {
        _cleanup_free_ char *err = NULL;
        char path[128];
        snprintf(path, sizeof(path), "%s/creds", aws_double.dir[0] ? aws_double.dir : "/tmp");
        const char *ini =
            "# comment\n[default]\naws_access_key_id = AKIDWRONG\naws_secret_access_key = x\n\n"
            "[pk]\naws_access_key_id=AKIDFILE\r\naws_secret_access_key = file/secret+key=\n"
            "aws_session_token = FILETOKEN\n";
        assert_true(write_file_atomic(path, ini, strlen(ini), 0600, 0) >= 0);
        aws_double_post(
            "/_double/config",
            "{\"keys\": {\"AKIDFILE\": {\"secret\": \"file/secret+key=\", \"token\": \"FILETOKEN\"}}}");
        unsetenv("AWS_ACCESS_KEY_ID");
        unsetenv("AWS_SECRET_ACCESS_KEY");
        setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
        setenv("AWS_PROFILE", "pk", 1);

        _cleanup_(aws_client_freep) AwsClient *c = client_new();
        const AwsCredentials *creds;
        assert_int_equal(aws_client_credentials(c, &creds, &err), 0);
        assert_string_equal(creds->source, "shared-credentials-file");
        assert_string_equal(creds->access_key_id, "AKIDFILE");
        AwsInstance *inst = NULL;
        size_t n = 0;
        int r = aws_ec2_describe_instances(c, NULL, 0, NULL, &inst, &n, &err);
        if (r < 0)
                fail_msg("%s", strna(err));
        assert_int_equal(n, 1);
        aws_instances_free(inst, n);

        /* A profile that is not in the file: the chain goes on to the instance role. */
        setenv("AWS_PROFILE", "absent", 1);
        _cleanup_(aws_client_freep) AwsClient *c2 = client_new();
        assert_int_equal(aws_client_credentials(c2, &creds, &err), 0);
        assert_string_equal(creds->source, "imds");
        unlink(path);
        unsetenv("AWS_PROFILE");
        unsetenv("AWS_SHARED_CREDENTIALS_FILE");
        setenv("AWS_ACCESS_KEY_ID", AWS_DOUBLE_AKID, 1);
        setenv("AWS_SECRET_ACCESS_KEY", AWS_DOUBLE_SECRET, 1);
}

/* Instance role credentials through IMDSv2, renewed before they expire, and a token renewed after a 401. */
static void test_imds_role_credentials(void **state) {
        _cleanup_free_ char *err = NULL;
        unsetenv("AWS_ACCESS_KEY_ID");
        unsetenv("AWS_SECRET_ACCESS_KEY");
        setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials", 1);
        /* 200 s is inside the 5-minute renewal margin: every call fetches fresh credentials. */
        aws_double_post("/_double/config", "{\"role\": {\"ttl\": 200}}");
        json_int_t fetches = aws_double_counter("role_fetches"),
                   puts = aws_double_counter("imds_token_puts");

        _cleanup_(aws_client_freep) AwsClient *c = client_new();
        AwsInstance self;
        int r = aws_ec2_describe_self(c, &self, &err);
        if (r < 0)
                fail_msg("%s", strna(err));
        aws_instance_done(&self);
        const AwsCredentials *creds;
        assert_int_equal(aws_client_credentials(c, &creds, &err), 0);
        assert_string_equal(creds->source, "imds");
        assert_non_null(creds->session_token);
        assert_true(aws_double_counter("role_fetches") >= fetches + 2);
        assert_int_equal(aws_double_counter("imds_token_puts"), puts + 1);

        /* Long-lived role credentials are kept. */
        aws_double_post("/_double/config", "{\"role\": {\"ttl\": 21600}}");
        _cleanup_(aws_client_freep) AwsClient *c2 = client_new();
        assert_int_equal(aws_client_credentials(c2, &creds, &err), 0);
        fetches = aws_double_counter("role_fetches");
        for (unsigned i = 0; i < 3; i++)
                assert_int_equal(aws_client_credentials(c2, &creds, &err), 0);
        assert_int_equal(aws_double_counter("role_fetches"), fetches);

        /* Tokens the service forgets after 1 s: the next GET gets 401, and the client asks for a new token.
         */
        aws_double_post("/_double/config", "{\"imds_token_ttl_override\": 1}");
        _cleanup_(aws_imds_freep) AwsImds *m = NULL;
        char *id = NULL;
        assert_int_equal(aws_imds_new(NULL, &m), 0);
        assert_int_equal(aws_imds_get(m, "meta-data/instance-id", &id, NULL), 0);
        free(id);
        fake_server_msleep(1200);
        puts = aws_double_counter("imds_token_puts");
        assert_int_equal(aws_imds_get(m, "meta-data/instance-id", &id, NULL), 0);
        assert_string_equal(id, AWS_DOUBLE_SELF_ID);
        free(id);
        assert_int_equal(aws_double_counter("imds_token_puts"), puts + 1);
        assert_int_equal(aws_imds_get(m, "meta-data/no-such-thing", &id, NULL), -ENOENT);
        aws_double_post("/_double/config", "{\"imds_token_ttl_override\": null}");

        unsetenv("AWS_SHARED_CREDENTIALS_FILE");
        setenv("AWS_ACCESS_KEY_ID", AWS_DOUBLE_AKID, 1);
        setenv("AWS_SECRET_ACCESS_KEY", AWS_DOUBLE_SECRET, 1);
}

static void test_no_credentials_anywhere(void **state) {
        _cleanup_free_ char *err = NULL;
        unsetenv("AWS_ACCESS_KEY_ID");
        setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials", 1);
        setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
        _cleanup_(aws_client_freep) AwsClient *c = client_new();
        const AwsCredentials *creds;
        assert_int_equal(aws_client_credentials(c, &creds, &err), -ENOKEY);
        assert_non_null(strstr(strna(err), "no AWS credentials"));
        unsetenv("AWS_EC2_METADATA_DISABLED");
        unsetenv("AWS_SHARED_CREDENTIALS_FILE");
        setenv("AWS_ACCESS_KEY_ID", AWS_DOUBLE_AKID, 1);
}

static void test_pagination_10000(void **state) {
        _cleanup_free_ char *err = NULL;
        aws_double_post(
            "/_double/config",
            "{\"generate_volumes\": {\"count\": 10000, \"tags\": {\"KubernetesCluster\": \"big.k8s.test\", "
            "\"k8s.io/etcd/main\": \"{i}/a,b,c\"}}, \"volumes\": [{\"id\": \"vol-other\", \"tags\": "
            "{\"KubernetesCluster\": \"other\"}}]}");
        _cleanup_(aws_client_freep) AwsClient *c = client_new();
        const char *cluster[] = { "big.k8s.test", NULL }, *keys[] = { "k8s.io/etcd/main", NULL };
        AwsFilter f[] = { { "tag:KubernetesCluster", cluster }, { "tag-key", keys } };
        AwsVolume *v = NULL;
        size_t n = 0;
        json_int_t before = aws_double_counter("requests");
        int r = aws_ec2_describe_volumes(c, f, ELEMENTSOF(f), NULL, &v, &n, &err);
        if (r < 0)
                fail_msg("%s", strna(err));
        assert_int_equal(n, 10000);
        /* 500 per page: 20 pages, each a signed request. */
        assert_int_equal(aws_double_counter("requests"), before + 20);
        for (size_t i = 1; i < n; i++)
                assert_true(strcmp(v[i - 1].volume_id, v[i].volume_id) < 0);
        assert_string_equal(aws_tags_get(v[1234].tags, v[1234].n_tags, "k8s.io/etcd/main"), "1234/a,b,c");
        assert_string_equal(v[0].state, "available");
        aws_volumes_free(v, n);
}

static void test_filter_encoding(void **state) {
        _cleanup_free_ char *err = NULL;
        aws_double_post(
            "/_double/config",
            "{\"volumes\": [{\"id\": \"vol-enc1\", \"az\": \"us-east-1b\", \"tags\": {\"k8s.io/role/ma "
            "ster\": "
            "\"a b+c=d/é ሴ\"}}, {\"id\": \"vol-enc2\", \"az\": \"us-east-1b\", \"tags\": {\"k8s.io/role/ma "
            "ster\": \"a b c\"}}]}");
        _cleanup_(aws_client_freep) AwsClient *c = client_new();
        const char *vals[] = { "a b+c=d/é ሴ", NULL }, *az[] = { "us-east-1b", NULL };
        AwsFilter f[] = { { "tag:k8s.io/role/ma ster", vals }, { "availability-zone", az } };
        AwsVolume *v = NULL;
        size_t n = 0;
        int r = aws_ec2_describe_volumes(c, f, ELEMENTSOF(f), NULL, &v, &n, &err);
        if (r < 0)
                fail_msg("%s", strna(err));
        assert_int_equal(n, 1);
        assert_string_equal(v[0].volume_id, "vol-enc1");
        aws_volumes_free(v, n);

        /* By id, without MaxResults (EC2 refuses the combination). */
        const char *ids[] = { "vol-enc2", "vol-enc1", NULL };
        assert_int_equal(aws_ec2_describe_volumes(c, NULL, 0, ids, &v, &n, &err), 0);
        assert_int_equal(n, 2);
        aws_volumes_free(v, n);
}

static void test_throttling_storm(void **state) {
        _cleanup_free_ char *err = NULL;
        aws_double_post(
            "/_double/config",
            "{\"generate_volumes\": {\"count\": 2000, \"tags\": {\"KubernetesCluster\": \"storm\"}}, "
            "\"faults\": {\"throttle_pattern\": [3, 4], \"error500\": 2}}");
        _cleanup_(aws_client_freep) AwsClient *c = client_new();
        const char *cluster[] = { "storm", NULL };
        /* Three of every four requests throttled, and two 500s that may land on the fourth: up to 12 tries.
         */
        aws_client_set_retry(c, 12, 2 * USEC_PER_MSEC, 40 * USEC_PER_MSEC);
        AwsFilter f[] = { { "tag:KubernetesCluster", cluster } };
        AwsVolume *v = NULL;
        size_t n = 0;
        json_int_t throttled = aws_double_counter("throttled");
        int r = aws_ec2_describe_volumes(c, f, 1, NULL, &v, &n, &err);
        if (r < 0)
                fail_msg("%s", strna(err));
        assert_int_equal(n, 2000);
        aws_volumes_free(v, n);
        print_message("retries: %u\n", aws_client_retries(c));
        assert_true(aws_double_counter("throttled") - throttled >= 9);
        assert_true(aws_client_retries(c) >= 9);

        /* Route 53 throttles with HTTP 400 "Throttling": retried as well. */
        aws_double_post("/_double/config", "{\"zones\": [{\"id\": \"ZSTORM\", \"name\": \"storm.test\"}]}");
        AwsHostedZone *z = NULL;
        assert_int_equal(aws_route53_find_zones(c, "storm.test", &z, &n, &err), 0);
        assert_int_equal(n, 1);
        aws_hosted_zones_free(z, n);

        /* A storm that outlasts the attempts: the last error, and how often we tried. */
        aws_double_post("/_double/config", "{\"faults\": {\"throttle_pattern\": null, \"throttle\": 100}}");
        aws_client_set_retry(c, 3, USEC_PER_MSEC, 2 * USEC_PER_MSEC);
        assert_int_equal(aws_ec2_describe_volumes(c, f, 1, NULL, &v, &n, &err), PK_ECLOUD);
        print_message("error: %s\n", strna(err));
        assert_non_null(strstr(strna(err), "RequestLimitExceeded"));
        assert_non_null(strstr(strna(err), "gave up after 3 attempts"));
        aws_double_post("/_double/config", "{\"faults\": {\"throttle\": 0}}");
}

/* A stop request ends the retry backoff: the call returns -ECANCELED with the last answer's words instead of
 * sleeping out its attempts. */
static void test_backoff_ends_on_stop(void **state) {
        _cleanup_(aws_client_freep) AwsClient *c = client_new();
        _cleanup_free_ char *err = NULL;
        AwsVolume *v = NULL;
        size_t n = 0;
        aws_double_post("/_double/config", "{\"faults\": {\"throttle_pattern\": null, \"throttle\": 100}}");
        aws_client_set_retry(c, 4, 5 * USEC_PER_SEC, 5 * USEC_PER_SEC);
        stop_request();
        usec_t t0 = now(CLOCK_MONOTONIC);
        int r = aws_ec2_describe_volumes(c, NULL, 0, NULL, &v, &n, &err);
        usec_t took = now(CLOCK_MONOTONIC) - t0;
        stop_reset();
        aws_double_post("/_double/config", "{\"faults\": {\"throttle\": 0}}");
        print_message("error: %s\n", strna(err));
        assert_int_equal(r, -ECANCELED);
        assert_true(took < 2 * USEC_PER_SEC);
        assert_non_null(strstr(strna(err), "RequestLimitExceeded"));
        assert_non_null(strstr(strna(err), "stop requested after 1 attempts"));
        assert_int_equal(aws_client_retries(c), 0);
}

static void test_client_errors_not_retried(void **state) {
        _cleanup_free_ char *err = NULL;
        _cleanup_(aws_client_freep) AwsClient *c = client_new();
        json_int_t before = aws_double_counter("requests");
        assert_int_equal(aws_ec2_attach_volume(c, "vol-nope", AWS_DOUBLE_SELF_ID, "/dev/xvdf", &err),
                         PK_ECLOUD);
        print_message("error: %s\n", strna(err));
        assert_non_null(strstr(strna(err), "InvalidVolume.NotFound"));
        assert_non_null(strstr(strna(err), "ec2 AttachVolume: InvalidVolume.NotFound: The volume"));
        assert_int_equal(aws_client_retries(c), 0);
        assert_int_equal(aws_double_counter("requests"), before + 1);
}

static void test_malformed_and_slow(void **state) {
        _cleanup_free_ char *err = NULL;
        _cleanup_(aws_client_freep) AwsClient *c = client_new();
        AwsVolume *v = NULL;
        size_t n = 0;
        const char *ids[] = { "vol-x", NULL };
        aws_double_post("/_double/config", "{\"faults\": {\"garbage\": 1}}");
        assert_int_equal(aws_ec2_describe_volumes(c, NULL, 0, ids, &v, &n, &err), PK_EMALFORMED);
        print_message("error: %s\n", strna(err));
        assert_non_null(strstr(strna(err), "unparsable response"));

        /* A slow answer past the exchange timeout is retried. */
        aws_double_post("/_double/config",
                        "{\"volumes\": [{\"id\": \"vol-slow\"}], \"faults\": {\"slow_seconds\": 2, "
                        "\"slow_count\": 1}}");
        aws_client_set_timeouts(c, 20 * USEC_PER_SEC, 500 * USEC_PER_MSEC);
        const char *slow[] = { "vol-slow", NULL };
        unsigned retries = aws_client_retries(c);
        int r = aws_ec2_describe_volumes(c, NULL, 0, slow, &v, &n, &err);
        if (r < 0)
                fail_msg("%s", strna(err));
        assert_int_equal(n, 1);
        aws_volumes_free(v, n);
        assert_int_equal(aws_client_retries(c), retries + 1);
}

static void test_attach_and_wait(void **state) {
        _cleanup_free_ char *err = NULL;
        aws_double_post(
            "/_double/config",
            "{\"volumes\": [{\"id\": \"vol-att1\"}, {\"id\": \"vol-att2\"}, {\"id\": \"vol-far\", \"az\": "
            "\"us-east-1c\"}], \"instances\": {\"i-other\": {\"az\": \"us-east-1a\", \"private_ip\": "
            "\"10.0.0.6\"}}, \"faults\": {\"attach_stuck_polls\": 3}}");
        _cleanup_(aws_client_freep) AwsClient *c = client_new();
        char *dev = NULL;
        int r = aws_ec2_attach_volume(c, "vol-att1", AWS_DOUBLE_SELF_ID, "/dev/xvdf", &err);
        if (r < 0)
                fail_msg("%s", strna(err));
        json_int_t before = aws_double_counter("requests");
        r = aws_ec2_wait_attached(c, "vol-att1", AWS_DOUBLE_SELF_ID, 10 * USEC_PER_SEC, 10 * USEC_PER_MSEC,
                                  &dev, &err);
        if (r < 0)
                fail_msg("%s", strna(err));
        assert_string_equal(dev, "/dev/xvdf");
        free(dev);
        /* attaching for 3 polls, attached on the 4th */
        assert_int_equal(aws_double_counter("requests"), before + 4);

        /* The same device name twice on one instance, a volume in use, another zone: client errors. */
        /* ...each as its own code: a taken device name, a lost compare-and-set, and EC2's words kept */
        assert_int_equal(aws_ec2_attach_volume(c, "vol-att2", AWS_DOUBLE_SELF_ID, "/dev/xvdf", &err),
                         -EADDRINUSE);
        assert_non_null(strstr(strna(err), "ec2 AttachVolume: InvalidParameterValue"));
        assert_non_null(strstr(strna(err), "already in use"));
        assert_int_equal(aws_ec2_attach_volume(c, "vol-att1", "i-other", "/dev/xvdg", &err), PK_ECONFLICT);
        assert_non_null(strstr(strna(err), "VolumeInUse"));
        assert_int_equal(aws_ec2_attach_volume(c, "vol-far", AWS_DOUBLE_SELF_ID, "/dev/xvdh", &err),
                         PK_ECLOUD);
        assert_non_null(strstr(strna(err), "InvalidVolume.ZoneMismatch"));

        /* Held by another instance: a conflict, at once. */
        assert_int_equal(
            aws_ec2_wait_attached(c, "vol-att1", "i-other", USEC_PER_SEC, 10 * USEC_PER_MSEC, NULL, &err),
            PK_ECONFLICT);

        /* Stuck in "attaching": the deadline ends the wait. */
        aws_double_post("/_double/config", "{\"faults\": {\"attach_stuck_polls\": 100000}}");
        assert_int_equal(aws_ec2_attach_volume(c, "vol-att2", "i-other", "/dev/xvdf", &err), 0);
        usec_t t0 = now(CLOCK_MONOTONIC);
        assert_int_equal(aws_ec2_wait_attached(c, "vol-att2", "i-other", 300 * USEC_PER_MSEC,
                                               20 * USEC_PER_MSEC, NULL, &err),
                         PK_ETIMEOUT);
        assert_true(now(CLOCK_MONOTONIC) - t0 < 2 * USEC_PER_SEC);
        print_message("error: %s\n", strna(err));
        aws_double_post("/_double/config", "{\"faults\": {\"attach_stuck_polls\": 0}}");
}

/* Run by tests/integration/test_aws_client.py as root: the double backs the volume with an image file and
 * links it in a by-id directory, as a Nitro instance would. */
static void test_attach_loop_device(void **state) {
        _cleanup_free_ char *err = NULL;
        const char *byid = getenv("AWS_DOUBLE_BYID_DIR"), *image = getenv("AWS_DOUBLE_IMAGE");
        if (!byid || !image) {
                print_message("not run here: tests/integration/test_aws_client.py runs it as root\n");
                skip();
        }
        _cleanup_free_ char *cfg =
            strprintf("{\"byid_dir\": \"%s\", \"volumes\": [{\"id\": \"vol-0abc123loop\", "
                      "\"image\": \"%s\"}]}",
                      byid, image);
        aws_double_post("/_double/config", cfg);
        _cleanup_(aws_client_freep) AwsClient *c = client_new();
        char *dev = NULL;
        int r = aws_ec2_attach_volume(c, "vol-0abc123loop", AWS_DOUBLE_SELF_ID, "/dev/xvdk", &err);
        if (r < 0)
                fail_msg("%s", strna(err));
        assert_int_equal(aws_ec2_wait_attached(c, "vol-0abc123loop", AWS_DOUBLE_SELF_ID, 10 * USEC_PER_SEC,
                                               10 * USEC_PER_MSEC, &dev, &err),
                         0);
        free(dev);
        _cleanup_free_ char *link = strjoin(byid, "/nvme-Amazon_Elastic_Block_Store_vol0abc123loop");
        struct stat st;
        assert_int_equal(stat(link, &st), 0);
        assert_true(S_ISBLK(st.st_mode));
        print_message("by-id link -> block device %u:%u\n", major(st.st_rdev), minor(st.st_rdev));
}

static void test_route53(void **state) {
        _cleanup_free_ char *err = NULL;
        aws_double_post(
            "/_double/config",
            "{\"zones\": [{\"id\": \"ZPRIV\", \"name\": \"k8s.test\", \"private\": true}, {\"id\": "
            "\"ZPUB1\", \"name\": \"k8s.test.\"}, {\"id\": \"ZSUB\", \"name\": \"a.k8s.test\"}, {\"id\": "
            "\"ZZZ\", \"name\": \"zzz.test\"}], \"faults\": {\"insync_after_polls\": 2}}");
        _cleanup_(aws_client_freep) AwsClient *c = client_new();
        AwsHostedZone *z = NULL;
        size_t n = 0;
        int r = aws_route53_find_zones(c, "K8S.test", &z, &n, &err);
        if (r < 0)
                fail_msg("%s", strna(err));
        assert_int_equal(n, 2);
        assert_string_equal(z[0].name, "k8s.test.");
        assert_true(z[0].private_zone != z[1].private_zone);
        aws_hosted_zones_free(z, n);

        const char *api[] = { "10.0.0.5", "10.0.0.6", NULL },
                   *txt[] = { "\"owner=<protokube> & co\"", NULL };
        AwsRecordChange ch[] = {
                { AWS_RECORD_UPSERT, "api.internal.k8s.test.", "A", 60, api },
                { AWS_RECORD_UPSERT, "owner.k8s.test.", "TXT", 60, txt },
        };
        char *cid = NULL;
        r = aws_route53_change(c, "ZPUB1", ch, ELEMENTSOF(ch), &cid, &err);
        if (r < 0)
                fail_msg("%s", strna(err));
        assert_non_null(cid);
        r = aws_route53_wait_insync(c, cid, 10 * USEC_PER_SEC, 10 * USEC_PER_MSEC, &err);
        if (r < 0)
                fail_msg("%s", strna(err));
        free(cid);

        AwsRecordSet *s = NULL;
        assert_int_equal(aws_route53_list_record_sets(c, "ZPUB1", NULL, &s, &n, &err), 0);
        bool found_api = false, found_txt = false;
        for (size_t i = 0; i < n; i++) {
                if (streq(s[i].name, "api.internal.k8s.test.") && streq(s[i].type, "A")) {
                        found_api = true;
                        assert_int_equal(s[i].ttl, 60);
                        assert_string_equal(s[i].values[0], "10.0.0.5");
                        assert_string_equal(s[i].values[1], "10.0.0.6");
                        assert_null(s[i].values[2]);
                }
                if (streq(s[i].name, "owner.k8s.test.") && streq(s[i].type, "TXT")) {
                        found_txt = true;
                        assert_string_equal(s[i].values[0], "\"owner=<protokube> & co\"");
                }
        }
        assert_true(found_api && found_txt);
        aws_record_sets_free(s, n);

        /* DELETE must match what is there: the whole batch fails, atomically. */
        const char *wrong[] = { "10.0.0.5", NULL };
        AwsRecordChange del[] = {
                { AWS_RECORD_DELETE, "owner.k8s.test.", "TXT", 60, txt },
                { AWS_RECORD_DELETE, "api.internal.k8s.test.", "A", 60, wrong },
        };
        assert_int_equal(aws_route53_change(c, "ZPUB1", del, 2, NULL, &err), PK_ECLOUD);
        print_message("error: %s\n", strna(err));
        assert_non_null(strstr(strna(err), "InvalidChangeBatch"));
        del[1].values = api;
        assert_int_equal(aws_route53_change(c, "ZPUB1", del, 2, NULL, &err), 0);
        assert_int_equal(aws_route53_list_record_sets(c, "ZPUB1", NULL, &s, &n, &err), 0);
        assert_int_equal(n, 2); /* SOA and NS */
        aws_record_sets_free(s, n);

        assert_int_equal(aws_route53_change(c, "ZNOPE", ch, 1, NULL, &err), PK_ECLOUD);
        assert_non_null(strstr(strna(err), "NoSuchHostedZone"));

        /* A change that never gets INSYNC within the deadline. */
        aws_double_post("/_double/config", "{\"faults\": {\"insync_after_polls\": 100000}}");
        assert_int_equal(aws_route53_change(c, "ZPUB1", ch, 1, &cid, &err), 0);
        assert_int_equal(aws_route53_wait_insync(c, cid, 200 * USEC_PER_MSEC, 20 * USEC_PER_MSEC, &err),
                         PK_ETIMEOUT);
        free(cid);
        aws_double_post("/_double/config", "{\"faults\": {\"insync_after_polls\": 1}}");
}

static void test_route53_pagination(void **state) {
        _cleanup_free_ char *err = NULL;
        _cleanup_free_ char *cfg =
            strdup("{\"zones\": [{\"id\": \"ZBIG\", \"name\": \"big.test\", \"records\": [");
        for (unsigned i = 0; i < 700; i++)
                assert_int_equal(
                    strextend_printf(&cfg,
                                     "%s{\"name\": \"h%u.big.test\", \"type\": \"A\", \"ttl\": 60, "
                                     "\"values\": [\"10.1.%u.%u\"]}",
                                     i ? "," : "", i, i / 256, i % 256),
                    0);
        assert_int_equal(strextend_printf(&cfg, "]}]}"), 0);
        aws_double_post("/_double/config", cfg);
        _cleanup_(aws_client_freep) AwsClient *c = client_new();
        AwsRecordSet *s = NULL;
        size_t n = 0;
        json_int_t before = aws_double_counter("requests");
        int r = aws_route53_list_record_sets(c, "ZBIG", NULL, &s, &n, &err);
        if (r < 0)
                fail_msg("%s", strna(err));
        assert_int_equal(n, 702);
        assert_int_equal(aws_double_counter("requests"), before + 3); /* 300 per page */
        aws_record_sets_free(s, n);
}

/* The base URL of an S3 bucket: virtual-hosted, except for a dotted name (the wildcard certificate of
 * s3.REGION.amazonaws.com covers one label) and below an endpoint from the environment: path-style. */
static void test_s3_base_url(void **state) {
        static const struct {
                const char *endpoint, *bucket, *region, *want;
        } cases[] = {
                { NULL, "pk-state", "eu-west-1", "https://pk-state.s3.eu-west-1.amazonaws.com" },
                { NULL, "my.bucket.example", "eu-west-1",
                  "https://s3.eu-west-1.amazonaws.com/my.bucket.example" },
                { NULL, "a.b", "ap-south-1", "https://s3.ap-south-1.amazonaws.com/a.b" },
                { "http://127.0.0.1:9000", "pk-state", "eu-west-1", "http://127.0.0.1:9000/pk-state" },
                { "https://gw.example:9000/s3", "my.bucket", "us-east-1",
                  "https://gw.example:9000/s3/my.bucket" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *url =
                    aws_s3_base_url(cases[i].endpoint, cases[i].bucket, cases[i].region);
                assert_string_equal(url, cases[i].want);
        }
        const char *good[] = { "eu-west-1", "us-gov-west-1", "cn-north-1", "x" };
        const char *bad[] = {
                "", "EU-WEST-1", "eu_west_1", "-eu", "eu-", "eu.west", "eu/west", "a b", NULL
        };
        for (size_t i = 0; i < ELEMENTSOF(good); i++)
                assert_true(aws_region_name_valid(good[i]));
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (aws_region_name_valid(bad[i]))
                        fail_msg("region '%s' accepted", strnull(bad[i]));
        char long_region[70];
        memset(long_region, 'a', 65);
        long_region[65] = 0;
        assert_false(aws_region_name_valid(long_region));
        long_region[64] = 0;
        assert_true(aws_region_name_valid(long_region));
}

static int s3_head_bucket(AwsClient *c, const char *bucket, char **ret_region, char **ret_error) {
        AwsCall call = { .service = AWS_SERVICE_S3,
                         .operation = "HeadBucket",
                         .method = "HEAD",
                         .path = "/",
                         .bucket = bucket };
        return aws_client_call_header(c, &call, "x-amz-bucket-region", ret_region, ret_error);
}

/* A bucket in another region than the client's: a call signed for the client's is refused and names the
 * bucket's region (x-amz-bucket-region, read off a refused HEAD with no body); once the client is set to it,
 * calls are signed for it (the double checks) and the public endpoints follow it. */
static void test_s3_bucket_elsewhere(void **state) {
        aws_double_post("/_double/config",
                        "{\"buckets\": [\"pk-far\", \"pk.far.example\"], \"bucket_regions\": "
                        "{\"pk-far\": \"eu-west-1\", \"pk.far.example\": \"ap-south-1\"}}");
        _cleanup_(aws_client_freep) AwsClient *c = client_new();
        const char *buckets[] = { "pk-far", "pk.far.example" }, *regions[] = { "eu-west-1", "ap-south-1" };
        for (size_t i = 0; i < ELEMENTSOF(buckets); i++) {
                _cleanup_free_ char *found = NULL, *again = NULL, *err = NULL;
                const char *region;
                assert_int_equal(aws_client_set_region(c, "us-east-1"), 0);
                assert_int_equal(s3_head_bucket(c, buckets[i], &found, &err), PK_ECLOUD);
                assert_non_null(strstr(err, "HTTP 400"));
                assert_string_equal(found, regions[i]);
                assert_int_equal(aws_client_set_region(c, "EU-WEST-1"), -EINVAL);
                assert_int_equal(aws_client_region(c, &region, NULL), 0);
                assert_string_equal(region, "us-east-1");
                assert_int_equal(aws_client_set_region(c, found), 0);
                assert_int_equal(aws_client_region(c, &region, NULL), 0);
                assert_string_equal(region, regions[i]);
                free(err);
                err = NULL;
                if (s3_head_bucket(c, buckets[i], &again, &err) < 0)
                        fail_msg("%s", strna(err));
                assert_string_equal(again, regions[i]);
                XmlNode *doc = NULL;
                AwsCall list = { .service = AWS_SERVICE_S3,
                                 .operation = "ListObjectsV2",
                                 .method = "GET",
                                 .path = "/",
                                 .query = "list-type=2",
                                 .bucket = buckets[i] };
                if (aws_client_call(c, &list, &doc, &err) < 0)
                        fail_msg("%s", strna(err));
                xml_node_free(doc);
        }
        /* the public endpoints follow the region; one from the environment stays */
        unsetenv("AWS_ENDPOINT_URL");
        setenv("AWS_ENDPOINT_URL_S3", aws_double.url, 1);
        _cleanup_(aws_client_freep) AwsClient *pub = client_new();
        const char *ep;
        assert_int_equal(aws_client_endpoint(pub, AWS_SERVICE_EC2, &ep, NULL), 0);
        assert_string_equal(ep, "https://ec2.us-east-1.amazonaws.com");
        assert_int_equal(aws_client_set_region(pub, "eu-west-1"), 0);
        assert_int_equal(aws_client_endpoint(pub, AWS_SERVICE_EC2, &ep, NULL), 0);
        assert_string_equal(ep, "https://ec2.eu-west-1.amazonaws.com");
        assert_int_equal(aws_client_endpoint(pub, AWS_SERVICE_S3, &ep, NULL), 0);
        assert_string_equal(ep, aws_double.url);
        unsetenv("AWS_ENDPOINT_URL_S3");
        setenv("AWS_ENDPOINT_URL", aws_double.url, 1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_describe_self_region_from_imds, double_start,
                                                aws_double_stop),
                cmocka_unit_test_setup_teardown(test_region_and_endpoint_env, double_start, aws_double_stop),
                cmocka_unit_test_setup_teardown(test_endpoint_scheme, double_start, aws_double_stop),
                cmocka_unit_test_setup_teardown(test_wrong_secret, double_start, aws_double_stop),
                cmocka_unit_test_setup_teardown(test_backoff_ends_on_stop, double_start, aws_double_stop),
                cmocka_unit_test_setup_teardown(test_unknown_key, double_start, aws_double_stop),
                cmocka_unit_test_setup_teardown(test_shared_credentials_file, double_start, aws_double_stop),
                cmocka_unit_test_setup_teardown(test_imds_role_credentials, double_start, aws_double_stop),
                cmocka_unit_test_setup_teardown(test_no_credentials_anywhere, double_start, aws_double_stop),
                cmocka_unit_test_setup_teardown(test_pagination_10000, double_start, aws_double_stop),
                cmocka_unit_test_setup_teardown(test_filter_encoding, double_start, aws_double_stop),
                cmocka_unit_test_setup_teardown(test_throttling_storm, double_start, aws_double_stop),
                cmocka_unit_test_setup_teardown(test_client_errors_not_retried, double_start,
                                                aws_double_stop),
                cmocka_unit_test_setup_teardown(test_malformed_and_slow, double_start, aws_double_stop),
                cmocka_unit_test_setup_teardown(test_attach_and_wait, double_start, aws_double_stop),
                cmocka_unit_test_setup_teardown(test_attach_loop_device, double_start, aws_double_stop),
                cmocka_unit_test_setup_teardown(test_route53, double_start, aws_double_stop),
                cmocka_unit_test_setup_teardown(test_route53_pagination, double_start, aws_double_stop),
                cmocka_unit_test_setup_teardown(test_imds_region_checked, double_start, aws_double_stop),
                cmocka_unit_test(test_s3_base_url),
                cmocka_unit_test_setup_teardown(test_s3_bucket_elsewhere, double_start, aws_double_stop),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
