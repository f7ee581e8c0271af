/* SPDX-License-Identifier: Apache-2.0 */
/* Bootstrap tokens (join/join-token.h): generation over the whole alphabet, the text both ways, the Secret
 * as kube-apiserver's authenticator reads it (name, type, data base64, expiration in RFC 3339, usages,
 * groups), a Secret written by kubeadm (expiration in local time), and every refusal of a Secret, none of
 * whose messages quotes the secret. */
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "join/join-token.h"
#include "shared/crypto.h"
#include "shared/json-secret.h"
#include "shared/json-util.h"
#include "unit-test.h"

#define T0 (1767225600ULL * USEC_PER_SEC) /* 2026-01-01T00:00:00Z */

static void test_generate(void **state) {
        const char *alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
        unsigned seen[36] = {};
        JoinToken first;
        assert_int_equal(join_token_generate(&first), 0);
        for (int i = 0; i < 400; i++) {
                JoinToken t;
                char text[JOIN_TOKEN_TEXT_MAX];
                assert_int_equal(join_token_generate(&t), 0);
                assert_int_equal(strlen(t.id), JOIN_TOKEN_ID_LEN);
                assert_int_equal(strlen(t.secret), JOIN_TOKEN_SECRET_LEN);
                assert_true(join_token_id_valid(t.id));
                join_token_format(&t, text);
                for (const char *p = text; *p; p++) {
                        if (*p == '.')
                                continue;
                        const char *at = strchr(alphabet, *p);
                        assert_non_null(at);
                        seen[at - alphabet]++;
                }
                assert_false(streq(t.secret, first.secret));
                JoinToken back;
                assert_int_equal(join_token_parse(text, &back, NULL), 0);
                assert_memory_equal(&back, &t, sizeof(t));
                join_token_erase(&t);
                for (size_t k = 0; k < sizeof(t); k++)
                        assert_int_equal(((const char *)&t)[k], 0);
        }
        /* 8,800 characters: each of the 36 appears (a generator stuck on part of the alphabet fails) */
        for (size_t i = 0; i < 36; i++)
                assert_true(seen[i] > 0);
}

static void expect_parse_error(const char *text, const char *why) {
        JoinToken t;
        char *err = NULL;
        assert_int_equal(join_token_parse(text, &t, &err), -EINVAL);
        assert_non_null(err);
        const char *dot = strchr(text, '.');
        if (!strstr(err, why) || (dot && strlen(dot + 1) >= 4 && strstr(err, dot + 1)))
                fail_msg("'%s': message '%s'", text, err);
        free(err);
}

static void test_parse(void **state) {
        JoinToken t;
        assert_int_equal(join_token_parse("abcdef.0123456789abcdef", &t, NULL), 0);
        assert_string_equal(t.id, "abcdef");
        assert_string_equal(t.secret, "0123456789abcdef");
        expect_parse_error("abcdef0123456789abcdef", "'<id>.<secret>'");
        expect_parse_error("abcde.0123456789abcdef", "'<id>.<secret>'");
        expect_parse_error("ABCDEF.0123456789abcdef", "the id must be");
        expect_parse_error("abcdef.0123456789abcdeX", "the secret must be");
        expect_parse_error("abcdef.0123456789abcde", "the secret must be");
        expect_parse_error("abcdef.0123456789abcdef0", "the secret must be");
        expect_parse_error("abcdef.", "the secret must be");
        expect_parse_error("", "'<id>.<secret>'");
}

static void test_groups(void **state) {
        assert_true(join_token_group_valid(JOIN_TOKEN_GROUP));
        assert_true(join_token_group_valid("system:bootstrappers:kubeadm:default-node-token"));
        assert_true(join_token_group_valid("system:bootstrappers:a"));
        assert_false(join_token_group_valid("system:bootstrappers"));
        assert_false(join_token_group_valid("system:bootstrappers:"));
        assert_false(join_token_group_valid("system:bootstrappers:a-"));
        assert_false(join_token_group_valid("system:bootstrappers:A"));
        assert_false(join_token_group_valid("system:masters"));
        assert_false(join_token_group_valid(NULL));
}

static const char *data_value(const json_t *s, const char *key, char buf[static 512]) {
        const char *b64 = json_get_string(s, "data", key);
        uint8_t *raw = NULL;
        size_t len = 0;
        if (!b64)
                return NULL;
        assert_int_equal(crypto_base64_decode(b64, strlen(b64), &raw, &len), 0);
        assert_true(len < 512);
        memcpy(buf, raw, len);
        buf[len] = 0;
        free(raw);
        return buf;
}

static json_t *secret_for(const JoinToken *t, const JoinTokenSpec *spec) {
        json_t *s = NULL;
        char *err = NULL;
        int r = join_token_secret_new(t, spec, &s, &err);
        if (r < 0)
                fail_msg("secret: %s", strnull(err));
        return s;
}

static void test_secret_shape(void **state) {
        JoinToken t;
        char b[512];
        assert_int_equal(join_token_parse("abcdef.0123456789abcdef", &t, NULL), 0);
        JoinTokenSpec spec = { .expiration = T0, .description = "for w1" };
        json_t *s = secret_for(&t, &spec);
        assert_string_equal(json_get_string(s, "metadata", "name"), "bootstrap-token-abcdef");
        assert_string_equal(json_get_string(s, "metadata", "namespace"), "kube-system");
        assert_string_equal(json_get_string(s, "type"), "bootstrap.kubernetes.io/token");
        assert_string_equal(data_value(s, "token-id", b), "abcdef");
        assert_string_equal(data_value(s, "token-secret", b), "0123456789abcdef");
        assert_string_equal(data_value(s, "expiration", b), "2026-01-01T00:00:00Z");
        assert_string_equal(data_value(s, "usage-bootstrap-authentication", b), "true");
        assert_null(data_value(s, "usage-bootstrap-signing", b));
        assert_string_equal(data_value(s, "auth-extra-groups", b), JOIN_TOKEN_GROUP);
        assert_string_equal(data_value(s, "description", b), "for w1");
        json_erase_values(s);
        json_decref(s);

        /* no expiration: never expires; signing and other groups as asked */
        char *groups[] = { (char *)"system:bootstrappers:a", (char *)"system:bootstrappers:b", NULL };
        spec = (JoinTokenSpec){ .signing = true, .extra_groups = groups };
        s = secret_for(&t, &spec);
        assert_null(data_value(s, "expiration", b));
        assert_string_equal(data_value(s, "usage-bootstrap-signing", b), "true");
        assert_string_equal(data_value(s, "auth-extra-groups", b),
                            "system:bootstrappers:a,system:bootstrappers:b");
        json_erase_values(s);
        json_decref(s);

        char *err = NULL;
        spec = (JoinTokenSpec){ .description = "a\nb" };
        assert_int_equal(join_token_secret_new(&t, &spec, &s, &err), -EINVAL);
        assert_non_null(strstr(err, "description"));
        free(err);
        err = NULL;
        char *bad_groups[] = { (char *)"system:masters", NULL };
        spec = (JoinTokenSpec){ .extra_groups = bad_groups };
        assert_int_equal(join_token_secret_new(&t, &spec, &s, &err), -EINVAL);
        assert_non_null(strstr(err, "system:masters"));
        free(err);
}

static void set_data(json_t *s, const char *key, const char *value);

static void test_secret_round_trip(void **state) {
        JoinToken t, back = {};
        JoinTokenInfo i = {};
        assert_int_equal(join_token_generate(&t), 0);
        JoinTokenSpec spec = { .expiration = T0 + 3600 * USEC_PER_SEC, .description = "w2" };
        json_t *s = secret_for(&t, &spec);
        /* another tool's description, with a control character */
        set_data(s, "description", "w2\tand w3");
        assert_int_equal(json_object_set_new(json_object_get(s, "metadata"), "uid", json_string("u-1")), 0);
        assert_int_equal(join_token_secret_parse(s, &i, &back, NULL), 0);
        assert_memory_equal(&back, &t, sizeof(t));
        assert_string_equal(i.id, t.id);
        assert_string_equal(i.uid, "u-1");
        assert_int_equal(i.expiration, T0 + 3600 * USEC_PER_SEC);
        assert_string_equal(i.description, "w2?and w3"); /* shown: no control characters */
        assert_true(i.authentication);
        assert_false(i.signing);
        assert_int_equal(strv_length(i.extra_groups), 1);
        assert_string_equal(i.extra_groups[0], JOIN_TOKEN_GROUP);
        assert_false(join_token_expired(&i, T0));
        assert_true(join_token_expired(&i, T0 + 3600 * USEC_PER_SEC));
        join_token_info_done(&i);
        json_erase_values(s);
        json_decref(s);
}

/* A Secret as kubeadm 1.20 writes it (bootstraptoken/v1: data base64, the expiration in the local time of
 * the machine that made it, groups with a blank after the comma), as the API returns it. */
static const char KUBEADM_SECRET[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"type\":\"bootstrap.kubernetes.io/token\","
    "\"metadata\":{\"name\":\"bootstrap-token-x7k2pq\",\"namespace\":\"kube-system\",\"uid\":\"u-2\"},"
    "\"data\":{\"token-id\":\"eDdrMnBx\",\"token-secret\":\"bW5vcHFyc3R1dnd4eXoyMg==\",\"expira"
    "tion\":\"MjAyNi0wMS0wMVQwMjowMDowMCswMjowMA==\",\"usage-bootstrap-authentication\":\"dHJ1Z"
    "Q==\",\"usage-bootstrap-signing\":\"dHJ1ZQ==\",\"auth-extra-groups\":\"c3lzdGVtOmJvb3RzdHJ"
    "hcHBlcnM6a3ViZWFkbTpkZWZhdWx0LW5vZGUtdG9rZW4sIHN5c3RlbTpib290c3RyYXBwZXJzOmV4dHJh\",\"desc"
    "ription\":\"VGhlIGRlZmF1bHQgYm9vdHN0cmFwIHRva2Vu\"}}";

static void test_kubeadm_secret(void **state) {
        json_t *s = json_loads(KUBEADM_SECRET, 0, NULL);
        JoinTokenInfo i = {};
        JoinToken t;
        char *err = NULL;
        assert_non_null(s);
        if (join_token_secret_parse(s, &i, &t, &err) < 0)
                fail_msg("%s", err);
        assert_string_equal(t.id, "x7k2pq");
        assert_string_equal(t.secret, "mnopqrstuvwxyz22");
        assert_int_equal(i.expiration, T0); /* 02:00+02:00 */
        assert_true(i.signing);
        assert_int_equal(strv_length(i.extra_groups), 2);
        assert_string_equal(i.extra_groups[1], "system:bootstrappers:extra");
        assert_string_equal(i.description, "The default bootstrap token");
        join_token_info_done(&i);
        json_decref(s);
}

/* Each way a Secret is refused: the message names the Secret and the key, and never the secret. */
static void expect_refused(json_t *s, const char *why) {
        JoinTokenInfo i = {};
        char *err = NULL;
        int r = join_token_secret_parse(s, &i, NULL, &err);
        if (r >= 0 || !err || !strstr(err, why) || strstr(err, "0123456789abcdef") ||
            strstr(err, "MDEyMzQ1Njc4OWFiY2RlZg"))
                fail_msg("wanted a refusal saying '%s', got %d '%s'", why, r, strnull(err));
        free(err);
        json_erase_values(s);
        json_decref(s);
}

static json_t *good_secret(void) {
        JoinToken t;
        assert_int_equal(join_token_parse("abcdef.0123456789abcdef", &t, NULL), 0);
        return secret_for(&t, &(JoinTokenSpec){ .expiration = T0 });
}

static void set_data(json_t *s, const char *key, const char *value) {
        json_t *data = json_object_get(s, "data");
        if (!value) {
                json_object_del(data, key);
                return;
        }
        char *b64 = NULL;
        assert_int_equal(crypto_base64_encode(value, strlen(value), &b64), 0);
        json_object_set_new(data, key, json_string(b64));
        free(b64);
}

static void test_secret_refused(void **state) {
        json_t *s = good_secret();
        json_object_set_new(json_object_get(s, "metadata"), "name", json_string("bootstrap-token-ABCDEF"));
        expect_refused(s, "not named bootstrap-token-<id>");

        s = good_secret();
        json_object_set_new(s, "type", json_string("Opaque"));
        expect_refused(s, "type: not bootstrap.kubernetes.io/token");

        s = good_secret();
        json_object_del(s, "data");
        expect_refused(s, "data: absent");

        s = good_secret();
        set_data(s, "token-id", "abcdeg");
        expect_refused(s, "token-id: absent or not the id of the name");

        s = good_secret();
        set_data(s, "token-secret", "0123456789abcdeF");
        expect_refused(s, "token-secret: absent or not 16 characters");

        s = good_secret();
        set_data(s, "token-secret", NULL);
        expect_refused(s, "token-secret: absent");

        s = good_secret();
        json_object_set_new(json_object_get(s, "data"), "token-secret", json_string("!!not base64"));
        expect_refused(s, "token-secret: not base64");

        s = good_secret();
        set_data(s, "usage-bootstrap-authentication", "false");
        expect_refused(s, "usage-bootstrap-authentication: not \"true\"");

        s = good_secret();
        set_data(s, "expiration", "tomorrow");
        expect_refused(s, "expiration: 'tomorrow' is not an RFC 3339 time");

        s = good_secret();
        set_data(s, "auth-extra-groups", "system:bootstrappers:ok,system:masters");
        expect_refused(s, "auth-extra-groups: 'system:masters'");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_generate),
                cmocka_unit_test(test_parse),
                cmocka_unit_test(test_groups),
                cmocka_unit_test(test_secret_shape),
                cmocka_unit_test(test_secret_round_trip),
                cmocka_unit_test(test_kubeadm_secret),
                cmocka_unit_test(test_secret_refused),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
