/* SPDX-License-Identifier: Apache-2.0 */
/* The Google Cloud client's pure parts: kops' label encoding (the values kops writes), the names that become
 * paths, the service account key and its RS256 assertion (verified here with the key's public half, as
 * Google's token endpoint does), token answers, error documents, and Compute's answers as recorded from the
 * API's documented shapes (tests/vectors/gce/). */
#include "unit-test.h"

#include <jansson.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/gce-names.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "gce/auth.h"
#include "gce/client.h"
#include "gce/clouddns.h"
#include "gce/compute.h"
#include "gce/storage.h"
#include "shared/crypto.h"
#include "shared/openssl-util.h"

static char *vector(const char *name, size_t *ret_len) {
        _cleanup_free_ char *path = strjoin(VECTORS_DIR "/gce/", name);
        char *data = NULL;
        assert_non_null(path);
        assert_int_equal(read_full_file(path, 1 << 20, &data, ret_len), 0);
        return data;
}

static void test_labels(void **state) {
        /* kops' own examples: an etcd member spec, a cluster name's characters */
        static const struct {
                const char *plain, *encoded;
        } cases[] = {
                { "a/a,b,c", "a-2fa-2cb-2cc" },
                { "master-europe-west1-b/master-europe-west1-b",
                  "master-2deurope-2dwest1-2db-2fmaster-2deurope-2dwest1-2db" },
                { "", "" },
                { "Z_.~", "-5a-5f-2e-7e" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *e = NULL, *d = NULL;
                assert_int_equal(gce_label_encode(cases[i].plain, &e), 0);
                assert_string_equal(e, cases[i].encoded);
                assert_int_equal(gce_label_decode(e, &d), 0);
                assert_string_equal(d, cases[i].plain);
        }
        _cleanup_free_ char *d = NULL, *safe = NULL;
        assert_int_equal(gce_label_decode("a-2Fb", &d), 0); /* Go's unescape takes upper-case hex too */
        assert_string_equal(d, "a/b");
        const char *bad[] = { "a-", "a-2", "a-zz", "a-00", "a+b" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                char *x = NULL;
                assert_int_equal(gce_label_decode(bad[i], &x), PK_EMALFORMED);
                assert_null(x);
        }
        assert_int_equal(gce_safe_cluster_name("test.example.com", &safe), 0);
        assert_string_equal(safe, "test-example-com");
}

static void test_names(void **state) {
        assert_true(gce_name_valid("a-etcd-main-test-example-com"));
        assert_false(gce_name_valid("A"));
        assert_false(gce_name_valid("1abc"));
        assert_false(gce_name_valid("abc-"));
        assert_false(gce_name_valid("../x"));
        assert_false(gce_name_valid(""));
        assert_false(gce_name_valid(NULL));
        assert_true(gce_project_valid("protokube-test"));
        assert_false(gce_project_valid("short"));
        assert_true(gce_zone_valid("europe-west1-b"));
        assert_false(gce_zone_valid("europe"));
        assert_false(gce_zone_valid("europe-west1-bb"));
        assert_true(gce_label_key_valid("k8s-io-etcd-main"));
        assert_false(gce_label_key_valid("8k"));
        assert_true(gce_label_value_valid(""));
        assert_false(gce_label_value_valid("Test"));
        assert_true(gce_bucket_name_valid("protokube-state", 15));
        assert_true(gce_bucket_name_valid("state.example.com", 17));
        assert_false(gce_bucket_name_valid("goog-state", 10));
        assert_false(gce_bucket_name_valid("192.168.0.1", 11));
        assert_false(gce_bucket_name_valid("ab", 2));
        assert_false(gce_bucket_name_valid("Upper", 5));
}

/* A fresh key as a service account key document (no private key lives in the repository). */
static char *key_document(EVP_PKEY **ret_pkey, const char *token_uri) {
        EVP_PKEY *pkey = EVP_RSA_gen(2048);
        _cleanup_(BIO_free_allp) BIO *bio = BIO_new(BIO_s_mem());
        char *pem = NULL;
        assert_non_null(pkey);
        assert_non_null(bio);
        assert_int_equal(PEM_write_bio_PrivateKey(bio, pkey, NULL, NULL, 0, NULL, NULL), 1);
        long n = BIO_get_mem_data(bio, &pem);
        json_t *j = json_pack("{s:s, s:s, s:s, s:s%, s:s, s:s}", "type", "service_account", "project_id",
                              "protokube-test", "private_key_id", "0123456789abcdef0123456789abcdef01234567",
                              "private_key", pem, (size_t)n, "client_email",
                              "protokube@protokube-test.iam.gserviceaccount.com", "token_uri", token_uri);
        assert_non_null(j);
        char *s = json_dumps(j, 0);
        json_decref(j);
        *ret_pkey = pkey;
        return s;
}

static json_t *b64url_json(const char *s, size_t len) {
        _cleanup_free_ char *b = malloc(len + 4);
        size_t n = 0;
        for (size_t i = 0; i < len; i++)
                b[n++] = s[i] == '-' ? '+' : s[i] == '_' ? '/' : s[i];
        while (n % 4)
                b[n++] = '=';
        uint8_t *raw = NULL;
        size_t raw_len = 0;
        assert_int_equal(crypto_base64_decode(b, n, &raw, &raw_len), 0);
        json_t *j = json_loadb((const char *)raw, raw_len, 0, NULL);
        free(raw);
        assert_non_null(j);
        return j;
}

static void test_jwt(void **state) {
        EVP_PKEY *pkey = NULL;
        _cleanup_free_ char *doc = key_document(&pkey, "https://oauth2.googleapis.com/token");
        _cleanup_free_ char *jwt = NULL, *err = NULL;
        GceServiceAccountKey k = {};
        usec_t t = 1764411062 * USEC_PER_SEC;

        assert_int_equal(gce_service_account_key_parse("key.json", doc, strlen(doc), &k, &err), 0);
        assert_string_equal(k.project_id, "protokube-test");
        assert_int_equal(gce_jwt_assertion(&k, GCE_SCOPE_CLOUD_PLATFORM, t, &jwt), 0);

        char *dot1 = strchr(jwt, '.'), *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
        assert_non_null(dot2);
        assert_null(strpbrk(jwt, "=+/"));
        json_t *h = b64url_json(jwt, (size_t)(dot1 - jwt)),
               *c = b64url_json(dot1 + 1, (size_t)(dot2 - dot1 - 1));
        assert_string_equal(json_string_value(json_object_get(h, "alg")), "RS256");
        assert_string_equal(json_string_value(json_object_get(h, "kid")), k.private_key_id);
        assert_string_equal(json_string_value(json_object_get(c, "iss")), k.client_email);
        assert_string_equal(json_string_value(json_object_get(c, "aud")),
                            "https://oauth2.googleapis.com/token");
        assert_string_equal(json_string_value(json_object_get(c, "scope")), GCE_SCOPE_CLOUD_PLATFORM);
        assert_int_equal(json_integer_value(json_object_get(c, "iat")), 1764411062);
        assert_int_equal(json_integer_value(json_object_get(c, "exp")), 1764411062 + 3600);
        json_decref(h);
        json_decref(c);

        /* the signature verifies with the public half over "header.claims" */
        _cleanup_free_ char *sig64 = strdup(dot2 + 1);
        size_t sl = strlen(sig64);
        _cleanup_free_ char *std = malloc(sl + 4);
        size_t n = 0;
        for (size_t i = 0; i < sl; i++)
                std[n++] = sig64[i] == '-' ? '+' : sig64[i] == '_' ? '/' : sig64[i];
        while (n % 4)
                std[n++] = '=';
        uint8_t *sig = NULL;
        size_t sig_len = 0;
        assert_int_equal(crypto_base64_decode(std, n, &sig, &sig_len), 0);
        _cleanup_(EVP_MD_CTX_freep) EVP_MD_CTX *md = EVP_MD_CTX_new();
        assert_int_equal(EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, pkey), 1);
        assert_int_equal(
            EVP_DigestVerify(md, sig, sig_len, (const unsigned char *)jwt, (size_t)(dot2 - jwt)), 1);
        sig[0] ^= 1;
        assert_int_not_equal(
            EVP_DigestVerify(md, sig, sig_len, (const unsigned char *)jwt, (size_t)(dot2 - jwt)), 1);
        free(sig);
        EVP_PKEY_free(pkey);
        gce_service_account_key_done(&k);
}

static void test_key_errors(void **state) {
        EVP_PKEY *pkey = NULL;
        _cleanup_free_ char *plain = key_document(&pkey, "http://oauth.example.com/token");
        _cleanup_free_ char *err = NULL;
        GceServiceAccountKey k = {};
        EVP_PKEY_free(pkey);
        /* the assertion would travel in the clear to a host that is not this machine */
        assert_int_equal(gce_service_account_key_parse("key.json", plain, strlen(plain), &k, &err),
                         PK_EMALFORMED);
        assert_non_null(strstr(err, "key.json: token_uri='http://oauth.example.com/token'"));
        const char *user = "{\"type\": \"authorized_user\", \"client_id\": \"x\"}";
        assert_int_equal(gce_service_account_key_parse("u.json", user, strlen(user), &k, &err),
                         PK_EMALFORMED);
        assert_non_null(strstr(err, "u.json: field 'type' is 'authorized_user'"));
        const char *missing = "{\"type\": \"service_account\", \"client_email\": \"a@b\"}";
        assert_int_equal(gce_service_account_key_parse("m.json", missing, strlen(missing), &k, &err),
                         PK_EMALFORMED);
        assert_non_null(strstr(err, "m.json: field 'private_key_id'"));
        assert_int_equal(gce_service_account_key_parse("n.json", "nope", 4, &k, &err), PK_EMALFORMED);
        assert_non_null(strstr(err, "n.json: not a JSON object"));
}

static void test_token(void **state) {
        size_t len;
        _cleanup_free_ char *data = vector("token.json", &len), *err = NULL, *e = NULL;
        GceToken t = {};
        assert_int_equal(gce_token_parse(data, len, 1000 * USEC_PER_SEC, &t, &err), 0);
        assert_string_equal(t.access_token, "ya29.c.b0AXv0zTOexample-token_value");
        assert_true(t.expires_at == (1000 + 3599) * USEC_PER_SEC);
        assert_true(t.renew_at == (1000 + 3599 - 225) * USEC_PER_SEC);
        gce_token_done(&t);
        /* a short-lived token is renewed after three quarters of its life */
        const char *short_tok = "{\"access_token\":\"x\",\"expires_in\":120,\"token_type\":\"Bearer\"}";
        assert_int_equal(gce_token_parse(short_tok, strlen(short_tok), 0, &t, &err), 0);
        assert_true(t.renew_at == 90 * USEC_PER_SEC);
        gce_token_done(&t);
        const char *bad[] = { "{\"access_token\":\"a b\",\"expires_in\":10,\"token_type\":\"Bearer\"}",
                              "{\"access_token\":\"ab\",\"expires_in\":10,\"token_type\":\"MAC\"}",
                              "{\"access_token\":\"ab\",\"expires_in\":\"10\",\"token_type\":\"Bearer\"}",
                              "[]" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                assert_int_equal(gce_token_parse(bad[i], strlen(bad[i]), 0, &t, &err), PK_EMALFORMED);
                assert_null(strstr(err, "a b")); /* never the token's text */
        }
        _cleanup_free_ char *te = vector("token-error.json", &len);
        e = gce_token_error_parse(te, len);
        assert_string_equal(e, "invalid_grant: Invalid JWT Signature.");
}

static void test_error_document(void **state) {
        size_t len;
        _cleanup_free_ char *data = vector("error-403.json", &len), *msg = NULL, *status = NULL,
                            *reason = NULL;
        gce_error_document_parse(data, len, &msg, &status, &reason);
        assert_string_equal(msg, "Required 'compute.disks.list' permission for 'projects/protokube-test'");
        assert_string_equal(status, "PERMISSION_DENIED");
        assert_string_equal(reason, "forbidden");
        free(msg), free(status), free(reason);
        gce_error_document_parse("<html>", 6, &msg, &status, &reason);
        assert_null(msg);
        assert_null(status);
        assert_null(reason);
}

static void test_disk_page(void **state) {
        size_t len, n;
        _cleanup_free_ char *data = vector("disks-page1.json", &len), *next = NULL;
        GceDisk *d = NULL;
        assert_int_equal(gce_compute_parse_disk_page(data, len, &d, &n, &next), 0);
        assert_int_equal(n, 2);
        assert_string_equal(next, "Cg5hLWV0Y2QtZXZlbnRz");
        assert_string_equal(d[0].name, "a-etcd-main-test-example-com");
        assert_string_equal(d[0].zone, "europe-west1-b");
        assert_int_equal(d[0].size_gb, 20);
        assert_string_equal(gce_labels_get(d[0].labels, "k8s-io-etcd-main"), "a-2fa-2cb-2cc");
        assert_string_equal(d[0].users[0], "europe-west1-b/master-a");
        assert_null(d[0].users[1]);
        /* 02:11:02.500-08:00 is 10:11:02.500 UTC */
        assert_true(d[0].last_attach == 1795947062 * USEC_PER_SEC + 500 * USEC_PER_MSEC);
        assert_null(d[0].source_snapshot);
        assert_non_null(d[1].source_snapshot);
        assert_null(d[1].users);
        assert_int_equal(d[1].last_attach, 0);
        gce_disks_free(d, n);
        free(next);

        /* a label outside GCE's alphabet, a user that is no instance URL, a negative size: malformed */
        const char *bad[] = {
                "{\"items\":[{\"name\":\"d\",\"zone\":\"z/zones/"
                "europe-west1-b\",\"status\":\"READY\",\"sizeGb\":\"1\","
                "\"labels\":{\"K\":\"v\"}}]}",
                "{\"items\":[{\"name\":\"d\",\"zone\":\"z/zones/"
                "europe-west1-b\",\"status\":\"READY\",\"sizeGb\":\"1\","
                "\"users\":[\"https://x/instances/../etc\"]}]}",
                "{\"items\":[{\"name\":\"d\",\"zone\":\"z/zones/"
                "europe-west1-b\",\"status\":\"READY\",\"sizeGb\":\"-1\"}]}",
                "{\"items\":[{\"name\":\"../d\",\"zone\":\"z/zones/"
                "europe-west1-b\",\"status\":\"READY\",\"sizeGb\":\"1\"}]}",
                "{\"items\":{}}",
                "{\"nextPageToken\":\"\"}",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                assert_int_equal(gce_compute_parse_disk_page(bad[i], strlen(bad[i]), &d, &n, &next),
                                 PK_EMALFORMED);
                assert_null(d);
                assert_null(next);
        }
}

static void test_instance_page(void **state) {
        size_t len, n;
        _cleanup_free_ char *data = vector("instances-page.json", &len), *next = NULL;
        GceInstance *i = NULL;
        assert_int_equal(gce_compute_parse_instance_page(data, len, &i, &n, &next), 0);
        assert_int_equal(n, 2);
        assert_null(next);
        assert_string_equal(i[0].name, "master-a");
        assert_string_equal(i[0].internal_ip, "10.132.0.5");
        assert_string_equal(i[0].external_ip, "35.195.1.2");
        assert_int_equal(i[0].n_disks, 2);
        assert_true(i[0].disks[0].boot);
        assert_string_equal(i[0].disks[1].disk, "a-etcd-main-test-example-com");
        assert_string_equal(i[0].disks[1].device_name, "a-etcd-main-test-example-com");
        assert_string_equal(i[1].status, "TERMINATED");
        assert_null(i[1].external_ip);
        gce_instances_free(i, n);
}

static void test_operation(void **state) {
        size_t len;
        _cleanup_free_ char *data = vector("operation-in-use.json", &len);
        GceOperation op = {};
        assert_int_equal(gce_compute_parse_operation(data, len, &op), 0);
        assert_string_equal(op.status, "DONE");
        assert_string_equal(op.error_code, "RESOURCE_IN_USE_BY_ANOTHER_RESOURCE");
        assert_non_null(strstr(op.error_message, "is already being used by"));
        gce_operation_done(&op);
        const char *bad = "{\"name\":\"operation-1\",\"status\":\"LOST\"}";
        assert_int_equal(gce_compute_parse_operation(bad, strlen(bad), &op), PK_EMALFORMED);
}

static void test_clouddns(void **state) {
        size_t len, n;
        _cleanup_free_ char *rr = vector("rrsets-page.json", &len), *next = NULL;
        GceRecordSet *s = NULL;
        assert_int_equal(gce_dns_parse_record_set_page(rr, len, &s, &n, &next), 0);
        assert_int_equal(n, 2);
        assert_string_equal(next, "CiRhcGkuZGVtby5rOHMudGVzdC4gVFhU");
        assert_string_equal(s[0].type, "A");
        assert_int_equal(s[0].ttl, 30);
        assert_string_equal(s[0].rrdatas[1], "10.132.0.11");
        assert_null(s[0].rrdatas[2]);
        gce_record_sets_free(s, n);

        _cleanup_free_ char *zp = vector("zones-page.json", &len), *next2 = NULL;
        GceManagedZone *z = NULL;
        assert_int_equal(gce_dns_parse_zone_page(zp, len, &z, &n, &next2), 0);
        assert_int_equal(n, 2);
        assert_string_equal(z[0].name, "k8s-test");
        assert_false(z[0].private_zone);
        assert_true(z[1].private_zone);
        gce_managed_zones_free(z, n);

        _cleanup_free_ char *ch = vector("change-pending.json", &len), *id = NULL;
        bool done = true;
        assert_int_equal(gce_dns_parse_change(ch, len, &id, &done), 0);
        assert_string_equal(id, "17");
        assert_false(done);
        const char *bad[] = { "{\"id\":\"../1\",\"status\":\"done\"}", "{\"id\":\"1\",\"status\":\"lost\"}",
                              "{\"rrsets\":[{\"name\":\"a.\",\"type\":\"A\",\"ttl\":-1}]}" };
        char *x = NULL;
        assert_int_equal(gce_dns_parse_change(bad[0], strlen(bad[0]), &x, &done), PK_EMALFORMED);
        assert_int_equal(gce_dns_parse_change(bad[1], strlen(bad[1]), &x, &done), PK_EMALFORMED);
        assert_int_equal(gce_dns_parse_record_set_page(bad[2], strlen(bad[2]), &s, &n, &next2),
                         PK_EMALFORMED);
        assert_null(s);
}

static void test_storage_list(void **state) {
        size_t len, n;
        _cleanup_free_ char *data = vector("objects-page.json", &len), *next = NULL, *next2 = NULL;
        GceObject *o = NULL;
        assert_int_equal(gce_storage_parse_list_page(data, len, false, &o, &n, &next), 0);
        assert_int_equal(n, 1);
        assert_string_equal(o[0].name, "demo/pki/ca.crt");
        assert_string_equal(o[0].generation, "1764411062500123");
        gce_objects_free(o, n);
        assert_int_equal(gce_storage_parse_list_page(data, len, true, &o, &n, &next2), 0);
        assert_int_equal(n, 1);
        assert_string_equal(o[0].name, "demo/backups/");
        assert_null(o[0].generation);
        gce_objects_free(o, n);
        const char *bad = "{\"items\":[{\"name\":\"x\",\"generation\":\"12a\"}]}";
        char *none = NULL;
        assert_int_equal(gce_storage_parse_list_page(bad, strlen(bad), false, &o, &n, &none), PK_EMALFORMED);
        assert_null(none);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_labels),       cmocka_unit_test(test_names),
                cmocka_unit_test(test_jwt),          cmocka_unit_test(test_key_errors),
                cmocka_unit_test(test_token),        cmocka_unit_test(test_error_document),
                cmocka_unit_test(test_disk_page),    cmocka_unit_test(test_instance_page),
                cmocka_unit_test(test_operation),    cmocka_unit_test(test_clouddns),
                cmocka_unit_test(test_storage_list),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
