/* SPDX-License-Identifier: Apache-2.0 */
/* The PKI primitives (src/pki/): keys of both kinds, a CA and leaves issued from it and checked with
 * OpenSSL's own parsers, chain verification (and its failure for a foreign CA or an expired leaf), the
 * renewal table, cert+key pairs on a real directory (modes, generations, a reader racing a writer) and the
 * kubeconfig text. */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/x509v3.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "pki/pki-cert.h"
#include "pki/pki-files.h"
#include "pki/pki-key.h"
#include "pki/pki-kubeconfig.h"
#include "pki/pki-plan.h"
#include "shared/crypto.h"
#include "shared/openssl-util.h"
#include "unit-test.h"

#define T0   (1767225600ULL * USEC_PER_SEC) /* 2026-01-01T00:00:00Z */
#define DAY  PKI_USEC_PER_DAY
#define YEAR (365ULL * DAY)

static EVP_PKEY *gen(PkiKeyType t) {
        EVP_PKEY *k = NULL;
        assert_int_equal(pki_key_generate(t, &k), 0);
        return k;
}

static X509 *make_ca(const char *cn, EVP_PKEY *key) {
        X509 *ca = NULL;
        assert_int_equal(pki_ca_create(cn, key, 0, T0, &ca), 0);
        return ca;
}

static X509 *issue(const PkiCertRequest *req, EVP_PKEY *key, X509 *ca, EVP_PKEY *ca_key) {
        X509 *x = NULL;
        _cleanup_free_ char *err = NULL;
        int r = pki_cert_issue(req, key, ca, ca_key, T0, &x, &err);
        if (r < 0)
                fail_msg("issue: %d %s", r, strnull(err));
        return x;
}

static void test_keys(void **state) {
        for (PkiKeyType t = 0; t < _PKI_KEY_TYPE_MAX; t++) {
                _cleanup_(EVP_PKEY_freep) EVP_PKEY *k = gen(t), *back = NULL, *other = gen(t);
                assert_int_equal(pki_key_type(k), t);
                assert_int_equal(pki_key_type_from_string(pki_key_type_to_string(t)), t);
                char *pem = NULL;
                size_t len = 0;
                assert_int_equal(pki_key_to_pem(k, &pem, &len), 0);
                assert_int_equal(strlen(pem), len);
                assert_non_null(startswith(pem, "-----BEGIN PRIVATE KEY-----\n")); /* PKCS#8, clear */
                assert_int_equal(pki_key_from_pem(pem, len, &back), 0);
                erase_and_free(pem, len);
                assert_true(pki_key_public_equal(k, back));
                assert_false(pki_key_public_equal(k, other));
        }
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *rsa = gen(PKI_KEY_RSA_2048);
        assert_int_equal(EVP_PKEY_get_bits(rsa), 2048);
        EVP_PKEY *bad = NULL;
        assert_int_equal(pki_key_from_pem("not a key", 9, &bad), PK_EMALFORMED);
        assert_null(bad);
        assert_int_equal(pki_key_type_from_string("dsa"), _PKI_KEY_TYPE_INVALID);
}

static void test_ca(void **state) {
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *key = gen(PKI_KEY_ECDSA_P256);
        _cleanup_(X509_freep) X509 *ca = make_ca("kubernetes-ca", key);
        _cleanup_free_ char *cn = NULL, *issuer = NULL;
        assert_int_equal(pki_cert_subject_cn(ca, &cn), 0);
        assert_int_equal(pki_cert_issuer_cn(ca, &issuer), 0);
        assert_string_equal(cn, "kubernetes-ca");
        assert_string_equal(issuer, "kubernetes-ca");
        usec_t nb, na;
        assert_int_equal(pki_cert_validity(ca, &nb, &na), 0);
        assert_int_equal(nb, T0 - PKI_CLOCK_SKEW);
        assert_int_equal(na, T0 + 3650 * DAY);
        assert_int_equal(X509_check_ca(ca), 1);
        assert_int_equal(X509_get_key_usage(ca), KU_KEY_CERT_SIGN | KU_CRL_SIGN);
        assert_non_null(X509_get0_subject_key_id(ca));
        int crit = 0;
        BASIC_CONSTRAINTS *bc = X509_get_ext_d2i(ca, NID_basic_constraints, &crit, NULL);
        assert_non_null(bc);
        assert_true(bc->ca);
        assert_int_equal(crit, 1);
        BASIC_CONSTRAINTS_free(bc);
        assert_int_equal(X509_get_ext_by_critical(ca, 1, -1) >= 0, 1);
        assert_int_equal(pki_cert_verify(ca, ca, T0, NULL), 0); /* self-signed: its own anchor */
        X509 *x = NULL;
        assert_int_equal(pki_ca_create("", key, 0, T0, &x), -EINVAL);
        assert_null(x);
}

static void test_leaf(void **state) {
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *ca_key = gen(PKI_KEY_ECDSA_P256), *ec = gen(PKI_KEY_ECDSA_P256),
                                           *rsa = gen(PKI_KEY_RSA_2048);
        _cleanup_(X509_freep) X509 *ca = make_ca("etcd-peer-ca", ca_key);
        char *dns[] = { (char *)"etcd-a.internal.k8s.test", (char *)"localhost", NULL };
        char *ips[] = { (char *)"10.0.0.1", (char *)"fd00:0:0::1", (char *)"127.0.0.1", NULL };
        PkiCertRequest req = {
                .cn = "etcd-a", .dns = dns, .ips = ips, .usage = PKI_USAGE_SERVER | PKI_USAGE_CLIENT
        };
        _cleanup_(X509_freep) X509 *leaf = issue(&req, ec, ca, ca_key), *leaf2 = issue(&req, ec, ca, ca_key);

        _cleanup_strv_free_ char **got_dns = NULL, **got_ips = NULL;
        assert_int_equal(pki_cert_sans(leaf, &got_dns, &got_ips), 0);
        assert_int_equal(strv_length(got_dns), 2);
        assert_string_equal(got_dns[0], "etcd-a.internal.k8s.test");
        assert_string_equal(got_dns[1], "localhost");
        assert_int_equal(strv_length(got_ips), 3);
        assert_string_equal(got_ips[0], "10.0.0.1");
        assert_string_equal(got_ips[1], "fd00::1"); /* parsed, stored as 16 octets */
        assert_string_equal(got_ips[2], "127.0.0.1");
        assert_int_equal(X509_check_host(leaf, "etcd-a.internal.k8s.test", 0, 0, NULL), 1);
        assert_int_equal(X509_check_ip_asc(leaf, "fd00::1", 0), 1);
        assert_int_equal(X509_check_host(leaf, "etcd-b.internal.k8s.test", 0, 0, NULL), 0);

        _cleanup_free_ char *issuer = NULL;
        assert_int_equal(pki_cert_issuer_cn(leaf, &issuer), 0);
        assert_string_equal(issuer, "etcd-peer-ca");
        usec_t nb, na;
        assert_int_equal(pki_cert_validity(leaf, &nb, &na), 0);
        assert_int_equal(nb, T0 - PKI_CLOCK_SKEW);
        assert_int_equal(na, T0 + YEAR);
        assert_int_equal(X509_check_ca(leaf), 0);
        assert_int_equal(X509_get_key_usage(leaf), KU_DIGITAL_SIGNATURE);
        assert_int_equal(X509_get_extended_key_usage(leaf), XKU_SSL_SERVER | XKU_SSL_CLIENT);
        assert_int_equal(
            ASN1_OCTET_STRING_cmp(X509_get0_authority_key_id(leaf), X509_get0_subject_key_id(ca)), 0);
        const ASN1_INTEGER *s1 = X509_get0_serialNumber(leaf), *s2 = X509_get0_serialNumber(leaf2);
        assert_int_equal(ASN1_STRING_length(s1), 16);
        assert_int_not_equal(ASN1_INTEGER_cmp(s1, s2), 0);
        assert_true(pki_cert_matches_key(leaf, ec));
        assert_false(pki_cert_matches_key(leaf, rsa));

        assert_int_equal(pki_cert_verify(leaf, ca, T0, NULL), 0);
        _cleanup_free_ char *why = NULL;
        assert_int_equal(pki_cert_verify(leaf, ca, T0 + 2 * YEAR, &why), -EKEYREJECTED);
        assert_non_null(strstr(why, "expired"));

        /* RSA, client only, with O (the admin) */
        PkiCertRequest admin = { .cn = "kubernetes-admin",
                                 .org = "system:masters",
                                 .usage = PKI_USAGE_CLIENT,
                                 .lifetime = 30 * DAY };
        _cleanup_(X509_freep) X509 *a = issue(&admin, rsa, ca, ca_key);
        assert_int_equal(X509_get_key_usage(a), KU_DIGITAL_SIGNATURE | KU_KEY_ENCIPHERMENT);
        assert_int_equal(X509_get_extended_key_usage(a), XKU_SSL_CLIENT);
        assert_int_equal(pki_cert_validity(a, &nb, &na), 0);
        assert_int_equal(na, T0 + 30 * DAY);
        char o[64];
        assert_int_equal(
            X509_NAME_get_text_by_NID(X509_get_subject_name(a), NID_organizationName, o, sizeof(o)), 14);
        assert_string_equal(o, "system:masters");
        _cleanup_strv_free_ char **no_dns = NULL, **no_ips = NULL;
        assert_int_equal(pki_cert_sans(a, &no_dns, &no_ips), 0);
        assert_int_equal(strv_length(no_dns) + strv_length(no_ips), 0);

        /* PEM round trip */
        _cleanup_free_ char *pem = NULL;
        size_t len;
        _cleanup_(X509_freep) X509 *back = NULL;
        assert_int_equal(pki_cert_to_pem(leaf, &pem, &len), 0);
        assert_int_equal(pki_cert_from_pem(pem, len, &back), 0);
        assert_int_equal(X509_cmp(leaf, back), 0);
        X509 *none = NULL;
        assert_int_equal(pki_cert_from_pem("-----BEGIN CERTIFICATE-----\nAAAA\n", 33, &none), PK_EMALFORMED);
}

static void test_other_ca(void **state) {
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *k1 = gen(PKI_KEY_ECDSA_P256), *k2 = gen(PKI_KEY_ECDSA_P256),
                                           *leaf_key = gen(PKI_KEY_ECDSA_P256);
        /* same CN: only the signature tells them apart */
        _cleanup_(X509_freep) X509 *ca1 = make_ca("kubernetes-ca", k1), *ca2 = make_ca("kubernetes-ca", k2);
        PkiCertRequest req = { .cn = "kube-apiserver", .usage = PKI_USAGE_SERVER };
        _cleanup_(X509_freep) X509 *leaf = issue(&req, leaf_key, ca2, k2);
        _cleanup_free_ char *why = NULL;
        assert_int_equal(pki_cert_verify(leaf, ca2, T0, NULL), 0);
        assert_int_equal(pki_cert_verify(leaf, ca1, T0, &why), -EKEYREJECTED);
        assert_non_null(why);
        assert_int_equal(pki_cert_verify(leaf, ca1, 0, NULL), -EKEYREJECTED);
        /* a CA key that is not the CA's */
        X509 *x = NULL;
        _cleanup_free_ char *err = NULL;
        assert_int_equal(pki_cert_issue(&req, leaf_key, ca1, k2, T0, &x, &err), -EINVAL);
        assert_null(x);
        assert_non_null(strstr(err, "not the key of the CA"));
}

static void test_request_errors(void **state) {
        static const struct {
                const char *cn, *dns, *ip;
                PkiUsage usage;
                const char *message;
        } cases[] = {
                { "", NULL, NULL, PKI_USAGE_SERVER, "invalid cn ''" },
                { "0123456789012345678901234567890123456789012345678901234567890123x", NULL, NULL,
                  PKI_USAGE_SERVER, "longer than 64" },
                { "a\nb", NULL, NULL, PKI_USAGE_SERVER, "control characters" },
                { "ok", "Bad_Name.test", NULL, PKI_USAGE_SERVER, "invalid dns 'Bad_Name.test'" },
                { "ok", "a,IP:1.2.3.4", NULL, PKI_USAGE_SERVER, "invalid dns 'a,IP:1.2.3.4'" },
                { "ok", NULL, "10.0.0.256", PKI_USAGE_SERVER, "invalid ip '10.0.0.256'" },
                { "ok", NULL, "fe80::1%eth0", PKI_USAGE_SERVER, "invalid ip 'fe80::1%eth0'" },
                { "ok", NULL, NULL, 0, "invalid usage" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char *dns[] = { (char *)cases[i].dns, NULL }, *ips[] = { (char *)cases[i].ip, NULL };
                PkiCertRequest req = { .cn = cases[i].cn, .dns = dns, .ips = ips, .usage = cases[i].usage };
                _cleanup_free_ char *err = NULL;
                assert_int_equal(pki_cert_request_check(&req, &err), -EINVAL);
                if (!strstr(err, cases[i].message))
                        fail_msg("case %zu: '%s' lacks '%s'", i, err, cases[i].message);
        }
}

static void test_plan_table(void **state) {
        char *dns[] = { (char *)"a.test", (char *)"localhost", NULL };
        char *dns_upper_reordered[] = { (char *)"LOCALHOST", (char *)"a.test", (char *)"a.test", NULL };
        char *ips[] = { (char *)"10.0.0.1", (char *)"::1", NULL };
        char *ips_other_form[] = { (char *)"0:0::1", (char *)"10.0.0.1", NULL };
        char *ips_new[] = { (char *)"10.0.0.2", (char *)"::1", NULL };
        char *dns_more[] = { (char *)"a.test", (char *)"localhost", (char *)"b.test", NULL };
        const usec_t nb = T0, na = T0 + 300 * DAY; /* lifetime 300 days: renew with < 100 days left */
        static const struct {
                PkiLeafStatus status;
                bool signed_by_ca;
                usec_t at_offset;
                int want; /* 0: dns/ips as have, 1: reordered/other forms, 2: new IP, 3: one more name */
                PkiRenewReason expect;
        } cases[] = {
                { PKI_LEAF_MISSING, false, 0, 0, PKI_RENEW_MISSING },
                { PKI_LEAF_UNREADABLE, true, 0, 0, PKI_RENEW_UNREADABLE },
                { PKI_LEAF_PRESENT, false, 10 * DAY, 0, PKI_RENEW_OTHER_CA },
                { PKI_LEAF_PRESENT, true, 10 * DAY, 0, PKI_RENEW_NONE },
                { PKI_LEAF_PRESENT, true, 10 * DAY, 1, PKI_RENEW_NONE },
                { PKI_LEAF_PRESENT, true, 200 * DAY, 0, PKI_RENEW_NONE }, /* exactly a third left */
                { PKI_LEAF_PRESENT, true, 200 * DAY + 1, 0, PKI_RENEW_EXPIRING },
                { PKI_LEAF_PRESENT, true, 400 * DAY, 0, PKI_RENEW_EXPIRING }, /* expired */
                { PKI_LEAF_PRESENT, true, 0, 0, PKI_RENEW_NONE },
                { PKI_LEAF_PRESENT, true, 10 * DAY, 2, PKI_RENEW_SANS },
                { PKI_LEAF_PRESENT, true, 10 * DAY, 3, PKI_RENEW_SANS },
                { PKI_LEAF_PRESENT, false, 400 * DAY, 2, PKI_RENEW_OTHER_CA }, /* the first reason wins */
                { PKI_LEAF_PRESENT, true, 400 * DAY, 2, PKI_RENEW_EXPIRING },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                PkiLeafState have = { .status = cases[i].status,
                                      .signed_by_ca = cases[i].signed_by_ca,
                                      .not_before = nb,
                                      .not_after = na,
                                      .dns = dns,
                                      .ips = ips };
                char **wd = cases[i].want == 1 ? dns_upper_reordered : cases[i].want == 3 ? dns_more : dns;
                char **wi = cases[i].want == 1 ? ips_other_form : cases[i].want == 2 ? ips_new : ips;
                PkiRenewReason got = pki_plan_leaf(&have, wd, wi, T0 + cases[i].at_offset);
                if (got != cases[i].expect)
                        fail_msg("case %zu: got %s, expected %s", i, pki_renew_reason_to_string(got),
                                 pki_renew_reason_to_string(cases[i].expect));
        }
        PkiLeafState before = { .status = PKI_LEAF_PRESENT,
                                .signed_by_ca = true,
                                .not_before = nb,
                                .not_after = nb,
                                .dns = dns,
                                .ips = ips };
        assert_int_equal(pki_plan_leaf(&before, dns, ips, nb), PKI_RENEW_EXPIRING); /* no lifetime at all */
        before.not_after = na;
        assert_int_equal(pki_plan_leaf(&before, dns, ips, nb - 1), PKI_RENEW_EXPIRING); /* not yet valid */
        assert_true(pki_sans_equal(NULL, NULL, (char *[]){ NULL }, NULL));
}

typedef struct TmpDir {
        char path[64];
} TmpDir;

static void tmpdir_cleanup(TmpDir *t) {
        if (!t->path[0])
                return;
        char *argv[] = { (char *)"rm", (char *)"-rf", t->path, NULL };
        pid_t pid = fork();
        if (pid == 0) {
                execvp("rm", argv);
                _exit(127);
        }
        int status;
        (void)waitpid(pid, &status, 0);
}

static mode_t mode_of(const char *dir, const char *name, bool follow) {
        _cleanup_free_ char *p = strjoin(dir, "/", name);
        struct stat st;
        assert_int_equal((follow ? stat : lstat)(p, &st), 0);
        return st.st_mode;
}

static unsigned count_generations(const char *dir, const char *prefix) {
        DIR *d = opendir(dir);
        assert_non_null(d);
        unsigned n = 0;
        struct dirent *de;
        while ((de = readdir(d)))
                if (startswith(de->d_name, prefix) && !endswith(de->d_name, ".current"))
                        n++;
        closedir(d);
        return n;
}

static void test_pair_files(void **state) {
        _cleanup_(tmpdir_cleanup) TmpDir t = { "/tmp/pk-pki-XXXXXX" };
        assert_non_null(mkdtemp(t.path));
        _cleanup_free_ char *dir = strjoin(t.path, "/node/pki");
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *ca_key = gen(PKI_KEY_ECDSA_P256), *k1 = gen(PKI_KEY_ECDSA_P256),
                                           *k2 = gen(PKI_KEY_ECDSA_P256);
        _cleanup_(X509_freep) X509 *ca = make_ca("ca", ca_key);
        char *dns1[] = { (char *)"a.test", NULL }, *dns2[] = { (char *)"b.test", NULL };
        PkiCertRequest r1 = { .cn = "one", .dns = dns1, .usage = PKI_USAGE_SERVER };
        PkiCertRequest r2 = { .cn = "two", .dns = dns2, .usage = PKI_USAGE_SERVER };
        _cleanup_(X509_freep) X509 *c1 = issue(&r1, k1, ca, ca_key), *c2 = issue(&r2, k2, ca, ca_key);

        PkiLeafState s = {};
        assert_int_equal(pki_leaf_observe(dir, "server", ca, &s), 0);
        assert_int_equal(pki_plan_leaf(&s, dns1, NULL, T0), PKI_RENEW_MISSING);

        assert_int_equal(pki_pair_save(dir, "server", c1, k1), 0);
        assert_int_equal(mode_of(t.path, "node/pki", false) & 07777, 0700);
        assert_true(S_ISLNK(mode_of(dir, "server.crt", false)));
        assert_int_equal(mode_of(dir, "server.key", true) & 07777, 0600);
        assert_int_equal(mode_of(dir, "server.crt", true) & 07777, 0644);
        assert_int_equal(pki_leaf_observe(dir, "server", ca, &s), 0);
        assert_int_equal(s.status, PKI_LEAF_PRESENT);
        assert_int_equal(pki_plan_leaf(&s, dns1, NULL, T0), PKI_RENEW_NONE);
        assert_int_equal(pki_plan_leaf(&s, dns2, NULL, T0), PKI_RENEW_SANS);
        assert_int_equal(pki_plan_leaf(&s, dns1, NULL, T0 + 2 * YEAR),
                         PKI_RENEW_EXPIRING); /* not "other CA" */
        pki_leaf_state_done(&s);
        _cleanup_(X509_freep) X509 *other_ca = make_ca("ca", k2); /* same CN, another key */
        assert_int_equal(pki_leaf_observe(dir, "server", other_ca, &s), 0);
        assert_int_equal(pki_plan_leaf(&s, dns1, NULL, T0), PKI_RENEW_OTHER_CA);
        pki_leaf_state_done(&s);

        /* replaced as a pair; the old generation is gone; the paths components use follow */
        assert_int_equal(pki_pair_save(dir, "server", c2, k2), 0);
        _cleanup_(X509_freep) X509 *back = NULL;
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *back_key = NULL;
        assert_int_equal(pki_pair_load(dir, "server", &back, &back_key), 0);
        assert_int_equal(X509_cmp(back, c2), 0);
        assert_true(pki_key_public_equal(back_key, k2));
        assert_int_equal(count_generations(dir, ".server."), 1);
        _cleanup_free_ char *crt_path = strjoin(dir, "/server.crt"), *via_link = NULL, *pem2 = NULL;
        assert_int_equal(read_full_file(crt_path, 65536, &via_link, NULL), 0);
        assert_int_equal(pki_cert_to_pem(c2, &pem2, NULL), 0);
        assert_string_equal(via_link, pem2);

        /* a key that is not the certificate's is unreadable, not "fine" */
        _cleanup_free_ char *pem1 = NULL;
        char *key1 = NULL;
        size_t key1_len = 0;
        assert_int_equal(pki_cert_to_pem(c1, &pem1, NULL), 0);
        assert_int_equal(pki_key_to_pem(k2, &key1, &key1_len), 0);
        assert_int_equal(pki_pair_write(dir, "mixed", pem1, strlen(pem1), key1, key1_len), 0);
        erase_and_free(key1, key1_len);
        X509 *none = NULL;
        assert_int_equal(pki_pair_load(dir, "mixed", &none, NULL), -EKEYREJECTED);
        assert_int_equal(pki_leaf_observe(dir, "mixed", ca, &s), 0);
        assert_int_equal(pki_plan_leaf(&s, dns1, NULL, T0), PKI_RENEW_UNREADABLE);

        /* an existing directory is tightened */
        _cleanup_free_ char *loose = strjoin(t.path, "/loose");
        assert_int_equal(mkdir(loose, 0755), 0);
        assert_int_equal(pki_pair_save(loose, "x", c1, k1), 0);
        assert_int_equal(mode_of(t.path, "loose", false) & 07777, 0700);

        assert_int_equal(pki_pair_remove(dir, "server"), 0);
        assert_int_equal(pki_pair_read(dir, "server", NULL, NULL, NULL, NULL), -ENOENT);
        assert_int_equal(count_generations(dir, ".server."), 0);
        assert_int_equal(pki_pair_remove(dir, "server"), 0);
        assert_int_equal(pki_pair_write(dir, "../x", "a", 1, "b", 1), -EINVAL);
        assert_int_equal(pki_pair_write(dir, "a.b", "a", 1, "b", 1), -EINVAL);
}

/* A writer replaces the pair 200 times while the parent reads it: every read is one generation (the
 * cert's and the key's numbers agree). Bounded in count; the child is waited for by its PID. */
static void test_pair_race(void **state) {
        _cleanup_(tmpdir_cleanup) TmpDir t = { "/tmp/pk-pki-XXXXXX" };
        assert_non_null(mkdtemp(t.path));
        assert_int_equal(pki_pair_write(t.path, "p", "c0", 2, "k0", 2), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                for (int i = 1; i <= 200; i++) {
                        char c[16], k[16];
                        snprintf(c, sizeof(c), "c%d", i);
                        snprintf(k, sizeof(k), "k%d", i);
                        if (pki_pair_write(t.path, "p", c, strlen(c), k, strlen(k)) < 0)
                                _exit(1);
                }
                _exit(0);
        }
        unsigned reads = 0;
        for (int i = 0; i < 2000; i++) {
                _cleanup_free_ char *c = NULL;
                char *k = NULL;
                size_t kl = 0;
                int r = pki_pair_read(t.path, "p", &c, NULL, &k, &kl);
                if (r == -ENOENT)
                        continue; /* the generation vanished three times in a row: a retry, not a mix */
                assert_int_equal(r, 0);
                assert_string_equal(c + 1, k + 1);
                erase_and_free(k, kl);
                reads++;
        }
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        assert_true(reads > 1000);
}

/* Two writers of one pair without the node's lock (which the processes take: this is the files' own
 * safety): after both are done the current generation exists and holds both files; a generation newer than
 * the one a write replaced (another writer's, not yet current) is never swept; a leftover older than it is,
 * and so is a temporary link a writer died before renaming. */
static void test_pair_two_writers(void **state) {
        _cleanup_(tmpdir_cleanup) TmpDir t = { "/tmp/pk-pki-XXXXXX" };
        assert_non_null(mkdtemp(t.path));
        assert_int_equal(pki_pair_write(t.path, "p", "c0", 2, "k0", 2), 0);
        pid_t pids[2];
        for (int w = 0; w < 2; w++) {
                pids[w] = fork();
                assert_true(pids[w] >= 0);
                if (pids[w] == 0) {
                        for (int i = 1; i <= 150; i++) {
                                char c[16], k[16];
                                snprintf(c, sizeof(c), "c%d-%d", w, i);
                                snprintf(k, sizeof(k), "k%d-%d", w, i);
                                int wr = pki_pair_write(t.path, "p", c, strlen(c), k, strlen(k));
                                if (wr < 0) {
                                        fprintf(stderr, "writer %d, write %d: %s\n", w, i, strerror(-wr));
                                        _exit(1);
                                }
                        }
                        _exit(0);
                }
        }
        for (int w = 0; w < 2; w++) {
                int status = 0;
                assert_int_equal(waitpid(pids[w], &status, 0), pids[w]);
                assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        }
        _cleanup_free_ char *c = NULL;
        char *k = NULL;
        size_t kl = 0;
        assert_int_equal(pki_pair_read(t.path, "p", &c, NULL, &k, &kl), 0);
        assert_string_equal(c + 1, k + 1);
        erase_and_free(k, kl);

        /* an older leftover goes, also one a dead writer left unnamed; a newer generation stays, and so
         * does an older one a writer still holds */
        _cleanup_free_ char *old_gen = strjoin(t.path, "/.p.0000000000000001.000000aa"),
                            *held_gen = strjoin(t.path, "/.p.0000000000000002.000000aa"),
                            *fresh = strjoin(t.path, "/.p.new-000000aa"),
                            *new_gen = strjoin(t.path, "/.p.ffffffffffffff00.000000bb");
        assert_int_equal(mkdir(old_gen, 0700), 0);
        assert_int_equal(mkdir(held_gen, 0700), 0);
        assert_int_equal(mkdir(fresh, 0700), 0);
        int held = open(held_gen, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(held >= 0);
        assert_int_equal(flock(held, LOCK_EX), 0);
        assert_int_equal(pki_pair_write(t.path, "p", "c-a", 3, "k-a", 3), 0);
        assert_int_equal(mkdir(new_gen, 0700), 0); /* named after the current one: another writer's */
        assert_int_equal(pki_pair_write(t.path, "p", "c-b", 3, "k-b", 3), 0);
        assert_int_equal(access(old_gen, F_OK), -1);
        assert_int_equal(access(fresh, F_OK), -1);
        assert_int_equal(access(held_gen, F_OK), 0);
        assert_int_equal(access(new_gen, F_OK), 0);
        close(held);
        assert_int_equal(pki_pair_write(t.path, "p", "c-c", 3, "k-c", 3), 0);
        assert_int_equal(access(held_gen, F_OK), -1);          /* released: swept by the next write */
        assert_int_equal(count_generations(t.path, ".p."), 2); /* the current one and the newer one */
}

static usec_t clock_ahead(clockid_t clock, void *userdata) {
        struct timespec ts;
        assert_int_equal(clock_gettime(clock, &ts), 0);
        return (usec_t)ts.tv_sec * USEC_PER_SEC + (usec_t)ts.tv_nsec / 1000 + *(usec_t *)userdata;
}

static PkiRenewReason observe_cached(PkiPairCache *c, const char *dir, X509 *ca, char **dns, char **serial) {
        _cleanup_(pki_leaf_state_done) PkiLeafState s = {};
        assert_int_equal(pki_leaf_observe_cached(c, dir, "server", ca, &s), 0);
        if (serial)
                *serial = s.serial ? strdup(s.serial) : NULL;
        return pki_plan_leaf(&s, dns, NULL, T0);
}

/* The daemon's pair cache: a second observation of an unchanged pair decodes nothing, also just after it was
 * written (then by the digest of its bytes, not its file times); a renewal (a new generation), an edit in
 * place, even one that restores the file's mtime and size, and the removal of the public names are seen
 * anew: never a stale certificate. */
static void test_pair_cache(void **state) {
        _cleanup_(tmpdir_cleanup) TmpDir t = { "/tmp/pk-pki-XXXXXX" };
        assert_non_null(mkdtemp(t.path));
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *ca_key = gen(PKI_KEY_ECDSA_P256), *k1 = gen(PKI_KEY_ECDSA_P256),
                                           *k2 = gen(PKI_KEY_ECDSA_P256);
        _cleanup_(X509_freep) X509 *ca = make_ca("ca", ca_key);
        char *dns[] = { (char *)"a.test", NULL };
        PkiCertRequest req = { .cn = "one", .dns = dns, .usage = PKI_USAGE_SERVER };
        _cleanup_(X509_freep) X509 *c1 = issue(&req, k1, ca, ca_key), *c2 = issue(&req, k2, ca, ca_key);
        _cleanup_(pki_pair_cache_freep) PkiPairCache *c = NULL;
        unsigned hits, misses;
        assert_int_equal(pki_pair_cache_new(&c), 0);
        assert_int_equal(pki_pair_save(t.path, "server", c1, k1), 0);

        /* just written (file times are coarse): decoded once, then found by the digest of its bytes */
        assert_int_equal(observe_cached(c, t.path, ca, dns, NULL), PKI_RENEW_NONE);
        assert_int_equal(observe_cached(c, t.path, ca, dns, NULL), PKI_RENEW_NONE);
        pki_pair_cache_stats(c, &hits, &misses);
        assert_int_equal(hits, 1);
        assert_int_equal(misses, 1);

        usec_t ahead = 10 * USEC_PER_SEC; /* the files are 10 s old: settled, found by their identity */
        clock_override(clock_ahead, &ahead);
        _cleanup_free_ char *s1 = NULL, *s1b = NULL, *s2 = NULL;
        assert_int_equal(observe_cached(c, t.path, ca, dns, &s1), PKI_RENEW_NONE);
        assert_int_equal(observe_cached(c, t.path, ca, dns, &s1b), PKI_RENEW_NONE);
        pki_pair_cache_stats(c, &hits, &misses);
        assert_int_equal(hits, 3);
        assert_int_equal(misses, 1);
        assert_string_equal(s1, s1b);

        /* renewed: a new generation, decoded, the new serial */
        assert_int_equal(pki_pair_save(t.path, "server", c2, k2), 0);
        assert_int_equal(observe_cached(c, t.path, ca, dns, &s2), PKI_RENEW_NONE);
        assert_string_not_equal(s1, s2);
        pki_pair_cache_stats(c, &hits, &misses);
        assert_int_equal(misses, 2);
        assert_int_equal(observe_cached(c, t.path, ca, dns, NULL), PKI_RENEW_NONE);
        pki_pair_cache_stats(c, &hits, &misses);
        assert_int_equal(hits, 4);

        /* edited in place: one base64 character of the certificate changed, size and mtime put back; only
         * the ctime tells. Whatever the edit broke (parse, key match, signature), it is not "fine". */
        char gen[128];
        _cleanup_free_ char *cur = strjoin(t.path, "/.server.current");
        ssize_t n = readlink(cur, gen, sizeof(gen) - 1);
        assert_true(n > 0);
        gen[n] = 0;
        _cleanup_free_ char *crt = strjoin(t.path, "/", gen, "/server.crt"), *pem = NULL;
        size_t len = 0;
        assert_int_equal(read_full_file(crt, 65536, &pem, &len), 0);
        struct stat st;
        assert_int_equal(stat(crt, &st), 0);
        size_t at = len / 2;
        while (at < len && !isalnum((unsigned char)pem[at]))
                at++;
        assert_true(at < len);
        pem[at] = pem[at] == 'A' ? 'B' : 'A';
        int fd = open(crt, O_WRONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(pwrite(fd, pem, len, 0), (ssize_t)len);
        struct timespec times[2] = { st.st_atim, st.st_mtim };
        assert_int_equal(futimens(fd, times), 0);
        close(fd);
        struct stat st2;
        assert_int_equal(stat(crt, &st2), 0);
        assert_int_equal(st2.st_size, st.st_size);
        assert_int_equal(st2.st_mtim.tv_nsec, st.st_mtim.tv_nsec);
        assert_int_not_equal(observe_cached(c, t.path, ca, dns, NULL), PKI_RENEW_NONE);
        pki_pair_cache_stats(c, &hits, &misses);
        assert_int_equal(misses, 3);

        /* the public names removed (what the components read), the generation left: missing, not cached
         * (the three-master demo's daemon kept serving the cached pair and never issued it again) */
        assert_int_equal(pki_pair_save(t.path, "server", c1, k1), 0);
        assert_int_equal(observe_cached(c, t.path, ca, dns, NULL), PKI_RENEW_NONE);
        assert_int_equal(observe_cached(c, t.path, ca, dns, NULL), PKI_RENEW_NONE);
        pki_pair_cache_stats(c, &hits, &misses);
        assert_int_equal(hits, 5);
        _cleanup_free_ char *pub_crt = strjoin(t.path, "/server.crt"),
                            *pub_key = strjoin(t.path, "/server.key");
        assert_int_equal(unlink(pub_crt), 0);
        assert_int_equal(unlink(pub_key), 0);
        assert_int_equal(observe_cached(c, t.path, ca, dns, NULL), PKI_RENEW_MISSING);
        pki_pair_cache_stats(c, &hits, &misses);
        assert_int_equal(hits, 5);
        clock_override(NULL, NULL);
}

static void test_kubeconfig(void **state) {
        _cleanup_(tmpdir_cleanup) TmpDir t = { "/tmp/pk-pki-XXXXXX" };
        assert_non_null(mkdtemp(t.path));
        PkiKubeconfig kc = { .cluster = "k8s.test",
                             .server = "https://api.internal.k8s.test:443",
                             .user = "admin",
                             .ca_pem = "CA PEM\n",
                             .cert_pem = "CERT PEM\n",
                             .key_pem = "KEY PEM\n" };
        char *text = NULL;
        size_t len = 0;
        assert_int_equal(pki_kubeconfig_render(&kc, &text, &len, NULL), 0);
        _cleanup_free_ char *ca64 = NULL, *cert64 = NULL, *key64 = NULL;
        assert_int_equal(crypto_base64_encode("CA PEM\n", 7, &ca64), 0);
        assert_int_equal(crypto_base64_encode("CERT PEM\n", 9, &cert64), 0);
        assert_int_equal(crypto_base64_encode("KEY PEM\n", 8, &key64), 0);
        _cleanup_free_ char *expect = strprintf(
            "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    certificate-authority-data: %s\n"
            "    server: https://api.internal.k8s.test:443\n  name: k8s.test\ncontexts:\n- context:\n"
            "    cluster: k8s.test\n    user: admin\n  name: admin@k8s.test\ncurrent-context: "
            "admin@k8s.test\n"
            "preferences: {}\nusers:\n- name: admin\n  user:\n    client-certificate-data: %s\n"
            "    client-key-data: %s\n",
            ca64, cert64, key64);
        assert_string_equal(text, expect);
        assert_int_equal(strlen(text), len);
        erase_and_free(text, len);

        _cleanup_free_ char *path = strjoin(t.path, "/admin.kubeconfig");
        assert_int_equal(umask(022), 022);
        assert_int_equal(pki_kubeconfig_write(path, &kc, NULL), 0);
        assert_int_equal(mode_of(t.path, "admin.kubeconfig", false) & 07777, 0600);

        _cleanup_free_ char *err = NULL;
        kc.server = "http://api.k8s.test";
        assert_int_equal(pki_kubeconfig_render(&kc, &text, &len, &err), -EINVAL);
        assert_non_null(strstr(err, "server 'http://api.k8s.test'"));
}

/* A bootstrap kubeconfig: the CA by path and a bearer token; a token beside a certificate, a token without
 * a CA, a token of other characters are refused, and no message quotes the token. */
static void test_kubeconfig_token(void **state) {
        PkiKubeconfig kc = { .cluster = "k8s.test",
                             .server = "https://api.internal.k8s.test",
                             .user = "kubelet-bootstrap",
                             .ca_file = "/var/lib/kubelet/ca.crt",
                             .token = "abcdef.0123456789abcdef" };
        char *text = NULL;
        size_t len = 0;
        assert_int_equal(pki_kubeconfig_render(&kc, &text, &len, NULL), 0);
        assert_string_equal(
            text, "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n"
                  "    certificate-authority: /var/lib/kubelet/ca.crt\n"
                  "    server: https://api.internal.k8s.test\n  name: k8s.test\ncontexts:\n- context:\n"
                  "    cluster: k8s.test\n    user: kubelet-bootstrap\n  name: kubelet-bootstrap@k8s.test\n"
                  "current-context: kubelet-bootstrap@k8s.test\npreferences: {}\nusers:\n"
                  "- name: kubelet-bootstrap\n  user:\n    token: abcdef.0123456789abcdef\n");
        erase_and_free(text, len);

        const PkiKubeconfig bad[] = {
                { .cluster = "c",
                  .server = "https://a",
                  .user = "u",
                  .ca_file = "/ca",
                  .cert_file = "/c",
                  .key_file = "/k",
                  .token = "abcdef.0123456789abcdef" },
                { .cluster = "c", .server = "https://a", .user = "u", .token = "abcdef.0123456789abcdef" },
                { .cluster = "c",
                  .server = "https://a",
                  .user = "u",
                  .ca_file = "/ca",
                  .token = "abcdef.0123456789abcdef\nx: y" },
                { .cluster = "c",
                  .server = "https://a",
                  .user = "u",
                  .ca_file = "ca",
                  .token = "abcdef.0123456789abcdef" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_free_ char *err = NULL;
                assert_int_equal(pki_kubeconfig_render(&bad[i], &text, &len, &err), -EINVAL);
                assert_non_null(err);
                assert_null(strstr(err, "0123456789abcdef"));
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_keys),
                cmocka_unit_test(test_ca),
                cmocka_unit_test(test_leaf),
                cmocka_unit_test(test_other_ca),
                cmocka_unit_test(test_request_errors),
                cmocka_unit_test(test_plan_table),
                cmocka_unit_test(test_pair_files),
                cmocka_unit_test(test_pair_race),
                cmocka_unit_test(test_pair_two_writers),
                cmocka_unit_test(test_kubeconfig),
                cmocka_unit_test(test_kubeconfig_token),
                cmocka_unit_test(test_pair_cache),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
