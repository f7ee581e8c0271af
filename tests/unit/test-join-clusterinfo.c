/* SPDX-License-Identifier: Apache-2.0 */
/* kube-public/cluster-info (join/join-clusterinfo.h): the kubeconfig text is kubeadm's byte for byte, the
 * objects (the ConfigMap, the Role and RoleBinding that let system:anonymous get it alone), the round trip
 * through the parser a worker uses, and every refusal of that parser (untrusted input). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "join/join-clusterinfo.h"
#include "pki/pki-cert.h"
#include "pki/pki-key.h"
#include "shared/crypto.h"
#include "shared/openssl-util.h"
#include "unit-test.h"
#include "vectors.h"

#define SERVER "https://api.internal.c1.example.com:443"
#define T0     (1767225600ULL * USEC_PER_SEC) /* 2026-01-01T00:00:00Z */

static X509 *vector_ca(char **ret_pem, size_t *ret_len) {
        const char *names[] = { "csr/ca.pem" };
        char *v[1];
        size_t len[1];
        X509 *ca = NULL;
        vectors_read(names, 1, v, len);
        assert_int_equal(pki_cert_from_pem(v[0], len[0], &ca), 0);
        if (ret_pem) {
                *ret_pem = v[0];
                *ret_len = len[0];
        } else
                free(v[0]);
        return ca;
}

static void test_kubeconfig_is_kubeadms(void **state) {
        size_t len = 0;
        char *pem = NULL, *b64 = NULL, *text = NULL, *want = NULL;
        X509 *ca = vector_ca(&pem, &len);
        assert_int_equal(crypto_base64_encode(pem, len, &b64), 0);
        assert_int_equal(join_cluster_info_kubeconfig(ca, SERVER, &text), 0);
        /* clientcmd.Write of kubeadm's cluster-info Config
         * (cmd/kubeadm/app/phases/bootstraptoken/clusterinfo) */
        want = strprintf("apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: %s\n"
                         "    server: " SERVER "\n  name: \"\"\ncontexts: null\ncurrent-context: \"\"\n"
                         "kind: Config\npreferences: {}\nusers: null\n",
                         b64);
        assert_string_equal(text, want);
        free(text);
        text = NULL;
        assert_int_equal(join_cluster_info_kubeconfig(ca, "", &text), -EINVAL);
        assert_int_equal(join_cluster_info_kubeconfig(ca, "https://a\nb", &text), -EINVAL);
        assert_int_equal(join_cluster_info_kubeconfig(NULL, SERVER, &text), -EINVAL);
        assert_null(text);
        free(want);
        free(b64);
        free(pem);
        X509_free(ca);
}

static void test_objects(void **state) {
        json_t *l = NULL;
        X509 *ca = vector_ca(NULL, NULL);
        assert_int_equal(join_cluster_info_objects(ca, SERVER, &l), 0);
        assert_int_equal(json_array_size(l), 3);
        char *cm = json_dumps(json_array_get(l, 0), JSON_SORT_KEYS | JSON_COMPACT);
        assert_non_null(strstr(cm, "\"kind\":\"ConfigMap\""));
        assert_non_null(strstr(cm, "\"name\":\"cluster-info\",\"namespace\":\"kube-public\""));
        char *role = json_dumps(json_array_get(l, 1), JSON_SORT_KEYS | JSON_COMPACT);
        assert_string_equal(role,
                            "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"Role\","
                            "\"metadata\":{\"labels\":{\"app.kubernetes.io/managed-by\":\"protokube\"},"
                            "\"name\":\"protokube:bootstrap-signer-clusterinfo\",\"namespace\":"
                            "\"kube-public\"},\"rules\":[{\"apiGroups\":[\"\"],\"resourceNames\":["
                            "\"cluster-info\"],\"resources\":[\"configmaps\"],\"verbs\":[\"get\"]}]}");
        char *binding = json_dumps(json_array_get(l, 2), JSON_SORT_KEYS | JSON_COMPACT);
        assert_string_equal(binding,
                            "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"RoleBinding\","
                            "\"metadata\":{\"labels\":{\"app.kubernetes.io/managed-by\":\"protokube\"},"
                            "\"name\":\"protokube:bootstrap-signer-clusterinfo\",\"namespace\":"
                            "\"kube-public\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\","
                            "\"kind\":\"Role\",\"name\":\"protokube:bootstrap-signer-clusterinfo\"},"
                            "\"subjects\":[{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"User\","
                            "\"name\":\"system:anonymous\"}]}");
        free(cm);
        free(role);
        free(binding);
        json_decref(l);
        X509_free(ca);
}

static void test_round_trip(void **state) {
        json_t *l = NULL;
        X509 *ca = vector_ca(NULL, NULL), *got = NULL;
        char *server = NULL, *err = NULL;
        assert_int_equal(join_cluster_info_objects(ca, SERVER, &l), 0);
        char *text = json_dumps(json_array_get(l, 0), 0);
        assert_int_equal(join_cluster_info_ca(text, strlen(text), &got, &server, &err), 0);
        assert_null(err);
        assert_int_equal(X509_cmp(got, ca), 0);
        assert_string_equal(server, SERVER);
        X509_free(got);
        got = NULL;
        /* the server is optional to the caller */
        assert_int_equal(join_cluster_info_ca(text, strlen(text), &got, NULL, NULL), 0);
        assert_int_equal(X509_cmp(got, ca), 0);
        X509_free(got);
        free(server);
        free(text);
        json_decref(l);
        X509_free(ca);
}

/* A ConfigMap as the API returns it, around kubeconfig (JSON-escaped by jansson). */
static char *config_map(const char *kind, const char *name, const char *key, const char *kubeconfig) {
        json_t *o = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s}}", "apiVersion", "v1", "kind", kind, "metadata",
                              "name", name, "namespace", "kube-public", "data", key, kubeconfig);
        assert_non_null(o);
        char *t = json_dumps(o, 0);
        json_decref(o);
        return t;
}

static char *kubeconfig_with(const char *ca_data, const char *server, unsigned n_clusters) {
        char *one =
            strprintf("- cluster:\n    certificate-authority-data: %s\n    server: %s\n  name: \"\"\n",
                      ca_data, server);
        char *t = strprintf("apiVersion: v1\nclusters:%s\n%s%scontexts: null\nkind: Config\n",
                            n_clusters ? "" : " []", n_clusters > 0 ? one : "", n_clusters > 1 ? one : "");
        free(one);
        return t;
}

static void refused(const char *json, const char *why) {
        X509 *ca = NULL;
        char *err = NULL;
        assert_int_equal(join_cluster_info_ca(json, strlen(json), &ca, NULL, &err), PK_EMALFORMED);
        assert_null(ca);
        assert_non_null(err);
        if (!strstr(err, why))
                fail_msg("'%s' does not say '%s'", err, why);
        free(err);
}

static void refused_kubeconfig(const char *kubeconfig, const char *why) {
        char *cm = config_map("ConfigMap", "cluster-info", "kubeconfig", kubeconfig);
        refused(cm, why);
        free(cm);
}

static char *b64_of(const char *s, size_t len) {
        char *b = NULL;
        assert_int_equal(crypto_base64_encode(s, len, &b), 0);
        return b;
}

static void test_refusals(void **state) {
        size_t len = 0;
        char *pem = NULL;
        X509 *ca = vector_ca(&pem, &len);
        char *good = b64_of(pem, len), *t;

        refused("", "not a JSON object");
        refused("[1]", "not a JSON object");
        refused("{\"kind\":\"ConfigMap\",\"kind\":\"ConfigMap\"}", "not a JSON object"); /* duplicates */
        t = config_map("Secret", "cluster-info", "kubeconfig", "x");
        refused(t, "not a ConfigMap");
        free(t);
        t = config_map("ConfigMap", "other", "kubeconfig", "x");
        refused(t, "not kube-public/cluster-info");
        free(t);
        t = config_map("ConfigMap", "cluster-info", "jws-kubeconfig-abcdef", "x");
        refused(t, "no data.kubeconfig");
        free(t);

        refused_kubeconfig("clusters: [a, b", "data.kubeconfig does not parse: ");
        refused_kubeconfig("- 1\n- 2\n", "not a kubeconfig");
        refused_kubeconfig("apiVersion: v1\nkind: Config\n", "names no cluster");
        t = kubeconfig_with(good, SERVER, 0);
        refused_kubeconfig(t, "names no cluster");
        free(t);
        t = kubeconfig_with(good, SERVER, 2);
        refused_kubeconfig(t, "more than one cluster");
        free(t);
        refused_kubeconfig("clusters:\n- name: \"\"\n", "cluster entry has no cluster");
        refused_kubeconfig("clusters:\n- cluster:\n    server: " SERVER "\n",
                           "no certificate-authority-data");
        t = kubeconfig_with("not*base64!", SERVER, 1);
        refused_kubeconfig(t, "not base64");
        free(t);
        char *junk = b64_of("hello, world", 12);
        t = kubeconfig_with(junk, SERVER, 1);
        refused_kubeconfig(t, "holds no PEM certificate");
        free(t);
        free(junk);

        /* two certificates, and a key before the certificate */
        char *two_pem = strprintf("%s%s", pem, pem), *two = b64_of(two_pem, strlen(two_pem));
        t = kubeconfig_with(two, SERVER, 1);
        refused_kubeconfig(t, "more than one PEM block");
        free(t);
        EVP_PKEY *key = NULL;
        char *key_pem = NULL;
        size_t key_len = 0;
        assert_int_equal(pki_key_generate(PKI_KEY_ECDSA_P256, &key), 0);
        assert_int_equal(pki_key_to_pem(key, &key_pem, &key_len), 0);
        char *with_key = strprintf("%s%s", key_pem, pem), *wk = b64_of(with_key, strlen(with_key));
        t = kubeconfig_with(wk, SERVER, 1);
        refused_kubeconfig(t, "more than one PEM block");
        free(t);

        /* a PEM certificate block that is not one */
        const char *broken = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        char *bb = b64_of(broken, strlen(broken));
        t = kubeconfig_with(bb, SERVER, 1);
        refused_kubeconfig(t, "does not parse");
        free(t);

        /* a certificate that is no CA: a leaf of the CA's key */
        X509 *self = NULL, *leaf = NULL;
        char *leaf_pem = NULL;
        size_t leaf_len = 0;
        assert_int_equal(pki_ca_create("kubernetes-ca", key, 0, T0, &self), 0);
        assert_int_equal(
            pki_cert_issue(&(PkiCertRequest){ .cn = "system:node:w1", .usage = PKI_USAGE_CLIENT }, key, self,
                           key, T0, &leaf, NULL),
            0);
        assert_int_equal(pki_cert_to_pem(leaf, &leaf_pem, &leaf_len), 0);
        char *lb = b64_of(leaf_pem, leaf_len);
        t = kubeconfig_with(lb, SERVER, 1);
        refused_kubeconfig(t, "is not a CA");
        free(t);

        /* the server */
        t = kubeconfig_with(good, "http://api.internal.c1:443", 1);
        refused_kubeconfig(t, "server is not an https:// URL");
        free(t);
        refused_kubeconfig("clusters:\n- cluster:\n    certificate-authority-data: x\n", "not base64");

        /* too big */
        size_t big = JOIN_CLUSTER_INFO_MAX + 1;
        char *huge = malloc(big + 1);
        memset(huge, ' ', big);
        huge[big] = 0;
        X509 *got = NULL;
        char *err = NULL;
        assert_int_equal(join_cluster_info_ca(huge, big, &got, NULL, &err), PK_EMALFORMED);
        assert_non_null(strstr(err, "at most"));
        free(err);
        free(huge);

        free(lb);
        free(leaf_pem);
        X509_free(leaf);
        X509_free(self);
        free(bb);
        free(wk);
        free(with_key);
        erase_and_free(key_pem, key_len);
        EVP_PKEY_free(key);
        free(two);
        free(two_pem);
        free(good);
        free(pem);
        X509_free(ca);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_kubeconfig_is_kubeadms),
                cmocka_unit_test(test_objects),
                cmocka_unit_test(test_round_trip),
                cmocka_unit_test(test_refusals),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
