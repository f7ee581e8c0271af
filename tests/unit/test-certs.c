/* SPDX-License-Identifier: Apache-2.0 */
/* A pass's certificates over a directory store and a node directory in a temp dir: the first pass creates
 * the keystore and issues every leaf with the issue's SANs; the next keeps everything (no action, the same
 * digest); a new address, a member taken over or given up, time passing and a forced renewal each do
 * exactly what they should; a pass's two parts (the first member's and the node's, then the other member's)
 * do what one call does; an unreadable store plans nothing and holds back a member without pairs. */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/x509v3.h>

#include "basic/fileio.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "certs/certs.h"
#include "pki/pki-files.h"
#include "shared/openssl-util.h"
#include "unit-test.h"

#define T0 (1767225600ULL * USEC_PER_SEC) /* 2026-01-01 */

typedef struct Fixture {
        char root[64];
        char url[96];
        char pki[96];
        CertsSettings s;
        Store *store; /* the state store, opened by the first observation (a session of the caller's) */
} Fixture;

static char *clusters[] = { (char *)"main", (char *)"events", NULL };

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
        return remove(p);
}

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(Fixture));
        snprintf(f->root, sizeof(f->root), "/tmp/pk-certs-XXXXXX");
        assert_non_null(mkdtemp(f->root));
        snprintf(f->url, sizeof(f->url), "file://%s/store", f->root);
        snprintf(f->pki, sizeof(f->pki), "%s/node", f->root);
        char store_dir[128];
        snprintf(store_dir, sizeof(store_dir), "%s/store", f->root);
        assert_int_equal(mkdir(store_dir, 0700), 0);
        f->s = (CertsSettings){
                .store_url = f->url,
                .pki_dir = f->pki,
                .key_type = PKI_KEY_ECDSA_P256,
                .sa_key_type =
                    PKI_KEY_ECDSA_P256, /* RSA generation is slow under ASan; RSA: test-keystore */
                .cluster_name = "demo.k8s.test",
                .internal_suffix = "internal.demo.k8s.test",
                .cluster_domain = "cluster.local",
                .service_range = "100.64.0.0/13",
                .apiserver_port = 443,
                .etcd_clusters = clusters,
                .kube_proxy = true,
        };
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;
        assert_int_equal(nftw(f->root, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
        store_free(f->store);
        free(f);
        return 0;
}

/* Observe and plan for a node with ips holding main's member and events' (NULL: none). */
static void observe_plan_held(Fixture *f, char **ips, const char *main_member, const char *events_member,
                              usec_t at, CertsObservation *o, CertsPlan *p) {
        const char *held[] = { main_member, events_member, NULL };
        CertsNode node = { .name = "n1", .ips = ips, .held_members = held, .held_known = true };
        assert_int_equal(certs_observe(&f->s, &f->store, o), 0);
        assert_int_equal(o->error, 0);
        assert_int_equal(certs_plan(&f->s, o, &node, at, p), 0);
        assert_int_equal(p->status, 0);
}

/* ... holding main's member (NULL: none) and no events member. */
static void observe_plan(Fixture *f, char **ips, const char *main_member, usec_t at, CertsObservation *o,
                         CertsPlan *p) {
        observe_plan_held(f, ips, main_member, NULL, at, o, p);
}

static void apply(Fixture *f, CertsObservation *o, CertsPlan *p, usec_t at) {
        CertsResult res = {};
        assert_int_equal(certs_apply(&f->s, f->store, o, p, at, NULL, &res), 0);
        if (strv_length(res.errors) > 0)
                fail_msg("apply: %s", res.errors[0]);
        certs_result_done(&res);
}

static ssize_t find_leaf(const CertsObservation *o, CertsLeafKind kind, const char *cluster) {
        for (size_t i = 0; i < o->layout.n_leaves; i++)
                if (o->layout.leaves[i].kind == kind &&
                    (!cluster ||
                     (o->layout.leaves[i].etcd_cluster && streq(o->layout.leaves[i].etcd_cluster, cluster))))
                        return (ssize_t)i;
        fail_msg("no leaf %s", certs_leaf_kind_to_string(kind));
        return -1;
}

static size_t count_action(const CertsPlan *p, CertsLeafAction a) {
        size_t n = 0;
        for (size_t i = 0; i < p->n_leaves; i++)
                n += p->leaves[i].action == a;
        return n;
}

static size_t count_writes(const CertsPlan *p) {
        size_t n = 0;
        for (size_t i = 0; i < p->n_files; i++)
                n += p->files[i].write || p->files[i].remove;
        return n;
}

/* The pair verifies against the keystore entry, names host and ip, and its key file is 0600. */
static void check_leaf(Fixture *f, const CertsObservation *o, ssize_t i, const char *host, const char *ip) {
        const CertsLeafSlot *slot = &o->layout.leaves[i];
        _cleanup_(X509_freep) X509 *cert = NULL;
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *key = NULL;
        assert_int_equal(pki_pair_load(slot->dir, slot->name, &cert, &key), 0);
        const KeystoreEntry *ca = keystore_find(o->keystore, slot->signer);
        assert_non_null(ca);
        assert_int_equal(pki_cert_verify(cert, ca->cert, T0, NULL), 0);
        if (host)
                assert_int_equal(X509_check_host(cert, host, 0, 0, NULL), 1);
        if (ip)
                assert_int_equal(X509_check_ip_asc(cert, ip, 0), 1);
        char path[256];
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s.key", slot->dir, slot->name);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
}

/* protokube's own client (kube/): CN protokube in system:masters, and a kubeconfig (0600) naming its pair
 * and the same local server as the other master kubeconfigs. */
static void check_protokube_identity(Fixture *f, const CertsObservation *o) {
        const CertsLeafSlot *slot = &o->layout.leaves[find_leaf(o, CERTS_PROTOKUBE, NULL)];
        _cleanup_(X509_freep) X509 *cert = NULL;
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *key = NULL;
        char cn[64] = "", org[64] = "", path[256];
        assert_int_equal(pki_pair_load(slot->dir, slot->name, &cert, &key), 0);
        X509_NAME *subj = X509_get_subject_name(cert);
        X509_NAME_get_text_by_NID(subj, NID_commonName, cn, sizeof(cn));
        X509_NAME_get_text_by_NID(subj, NID_organizationName, org, sizeof(org));
        assert_string_equal(cn, "protokube");
        assert_string_equal(org, "system:masters");
        _cleanup_free_ char *kc = NULL, *sched = NULL;
        struct stat st;
        snprintf(path, sizeof(path), "%s/protokube/kubeconfig", f->pki);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        assert_int_equal(read_full_file(path, 65536, &kc, NULL), 0);
        snprintf(path, sizeof(path), "client-certificate: %s/protokube/client.crt", f->pki);
        assert_non_null(strstr(kc, path));
        assert_non_null(strstr(kc, "server: https://127.0.0.1:443\n"));
        snprintf(path, sizeof(path), "%s/kube-scheduler/kubeconfig", f->pki);
        assert_int_equal(read_full_file(path, 65536, &sched, NULL), 0);
        assert_non_null(strstr(sched, "server: https://127.0.0.1:443\n"));
        _cleanup_free_ char *kubelet = NULL;
        snprintf(path, sizeof(path), "%s/kubelet/kubeconfig", f->pki);
        assert_int_equal(read_full_file(path, 65536, &kubelet, NULL), 0);
        assert_non_null(strstr(kubelet, "server: https://127.0.0.1:443\n")); /* static pods: its own */
}

/* Self-hosted, kubelet's kubeconfig names api.internal (docs/pki.md): its own apiserver is one pod of a
 * DaemonSet the cluster rolls. The components' stay local. */
static void test_self_hosted_kubelet_server(void **state) {
        Fixture *f = *state;
        char *ips[] = { (char *)"10.0.0.1", NULL };
        CertsObservation o = {};
        CertsPlan p = {};
        f->s.self_hosted = true;
        observe_plan(f, ips, "a", T0, &o, &p);
        apply(f, &o, &p, T0);
        certs_plan_done(&p);
        certs_observation_done(&o);
        char path[256];
        _cleanup_free_ char *kubelet = NULL, *sched = NULL;
        snprintf(path, sizeof(path), "%s/kubelet/kubeconfig", f->pki);
        assert_int_equal(read_full_file(path, 65536, &kubelet, NULL), 0);
        assert_non_null(strstr(kubelet, "server: https://api.internal.demo.k8s.test\n"));
        snprintf(path, sizeof(path), "%s/kube-scheduler/kubeconfig", f->pki);
        assert_int_equal(read_full_file(path, 65536, &sched, NULL), 0);
        assert_non_null(strstr(sched, "server: https://127.0.0.1:443\n"));
}

static void test_first_pass_then_quiet(void **state) {
        Fixture *f = *state;
        char *ips[] = { (char *)"10.0.0.1", (char *)"203.0.113.1", NULL };
        CertsObservation o = {};
        CertsPlan p = {};

        observe_plan(f, ips, "a", T0, &o, &p);
        assert_int_equal(strv_length(p.create), 7); /* kubernetes, 2x2 etcd, front-proxy, service-account */
        /* every leaf but events' two (no member held there): issued */
        assert_int_equal(count_action(&p, CERTS_ISSUE), o.layout.n_leaves - 2);
        assert_int_equal(count_action(&p, CERTS_ABSENT), 2);
        assert_true(p.etcd_ready[0]);
        apply(f, &o, &p, T0);
        char digest[CERTS_DIGEST_LEN + 1];
        snprintf(digest, sizeof(digest), "%s", p.digest);
        certs_plan_done(&p);
        certs_observation_done(&o);

        observe_plan(f, ips, "a", T0 + 60 * USEC_PER_SEC, &o, &p);
        assert_int_equal(certs_plan_n_actions(&o, &p), 0);
        assert_string_equal(p.digest, digest); /* planned serials were the issued ones */
        check_leaf(f, &o, find_leaf(&o, CERTS_ETCD_SERVER, "main"), "etcd-a.internal.demo.k8s.test",
                   "10.0.0.1");
        check_leaf(f, &o, find_leaf(&o, CERTS_ETCD_PEER, "main"), "etcd-a.internal.demo.k8s.test",
                   "203.0.113.1");
        check_leaf(f, &o, find_leaf(&o, CERTS_ETCD_SERVER, "main"), "localhost", "127.0.0.1");
        ssize_t api = find_leaf(&o, CERTS_APISERVER, NULL);
        check_leaf(f, &o, api, "api.demo.k8s.test", "100.64.0.1");
        check_leaf(f, &o, api, "api.internal.demo.k8s.test", "10.0.0.1");
        check_leaf(f, &o, api, "kubernetes.default.svc.cluster.local", "127.0.0.1");
        check_leaf(f, &o, find_leaf(&o, CERTS_ADMIN, NULL), NULL, NULL);
        check_leaf(f, &o, find_leaf(&o, CERTS_KUBELET, NULL), NULL, NULL);
        check_leaf(f, &o, find_leaf(&o, CERTS_APISERVER_ETCD_CLIENT, NULL), NULL, NULL);
        check_leaf(f, &o, find_leaf(&o, CERTS_PROTOKUBE, NULL), NULL, NULL);
        check_protokube_identity(f, &o);

        /* files: the kubeconfig names the pair; the service-account key is 0600 */
        char path[256];
        struct stat st;
        snprintf(path, sizeof(path), "%s/kube-apiserver/service-account.key", f->pki);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        snprintf(path, sizeof(path), "%s/etcd-events/ca.crt", f->pki);
        assert_int_equal(access(path, F_OK), -1); /* no events member: nothing of its dir */
        certs_plan_done(&p);
        certs_observation_done(&o);
}

static void test_changes(void **state) {
        Fixture *f = *state;
        char *ips[] = { (char *)"10.0.0.1", NULL }, *ips2[] = { (char *)"10.0.0.2", NULL };
        CertsObservation o = {};
        CertsPlan p = {};

        observe_plan(f, ips, "a", T0, &o, &p);
        apply(f, &o, &p, T0);
        char digest[CERTS_DIGEST_LEN + 1];
        snprintf(digest, sizeof(digest), "%s", p.digest);
        certs_plan_done(&p);
        certs_observation_done(&o);

        /* a new address: etcd's two pairs and the apiserver's, for their SANs; the digest follows */
        observe_plan(f, ips2, "a", T0, &o, &p);
        assert_int_equal(count_action(&p, CERTS_ISSUE), 3);
        assert_int_equal(p.leaves[find_leaf(&o, CERTS_APISERVER, NULL)].reason, PKI_RENEW_SANS);
        assert_string_not_equal(p.digest, digest);
        apply(f, &o, &p, T0);
        certs_plan_done(&p);
        certs_observation_done(&o);

        /* the member given up: its pairs and its dir's files go */
        observe_plan(f, ips2, NULL, T0, &o, &p);
        assert_int_equal(count_action(&p, CERTS_REMOVE), 2);
        assert_int_equal(count_writes(&p), 2);
        apply(f, &o, &p, T0);
        certs_plan_done(&p);
        certs_observation_done(&o);
        char path[256];
        snprintf(path, sizeof(path), "%s/etcd-main/server.crt", f->pki);
        assert_int_equal(access(path, F_OK), -1);

        /* another member taken over (etcd-b's names) */
        observe_plan(f, ips2, "b", T0, &o, &p);
        assert_int_equal(count_action(&p, CERTS_ISSUE), 2);
        apply(f, &o, &p, T0);
        certs_plan_done(&p);
        certs_observation_done(&o);
        observe_plan(f, ips2, "b", T0, &o, &p);
        check_leaf(f, &o, find_leaf(&o, CERTS_ETCD_PEER, "main"), "etcd-b.internal.demo.k8s.test",
                   "10.0.0.2");
        certs_plan_done(&p);
        certs_observation_done(&o);

        /* 9 months on: every leaf has less than a third of its year left */
        observe_plan(f, ips2, "b", T0 + 270 * PKI_USEC_PER_DAY, &o, &p);
        assert_int_equal(count_action(&p, CERTS_ISSUE), o.layout.n_leaves - 2);
        assert_int_equal(p.leaves[find_leaf(&o, CERTS_SCHEDULER, NULL)].reason, PKI_RENEW_EXPIRING);
        certs_plan_done(&p);
        certs_observation_done(&o);

        /* forced: everything held */
        observe_plan(f, ips2, "b", T0, &o, &p);
        snprintf(digest, sizeof(digest), "%s", p.digest);
        assert_int_equal(certs_plan_force_renewal(&o, &p), 0);
        assert_int_equal(count_action(&p, CERTS_ISSUE), o.layout.n_leaves - 2);
        assert_string_not_equal(p.digest, digest);
        certs_plan_done(&p);
        certs_observation_done(&o);
}

static bool pair_present(const CertsObservation *o, ssize_t i) {
        char path[256];
        snprintf(path, sizeof(path), "%s/%s.crt", o->layout.leaves[i].dir, o->layout.leaves[i].name);
        return access(path, F_OK) == 0;
}

/* A pass that brings up main's member first: the node's own and main's pairs in one call, events' in the
 * next; together they are what one call would have done. */
static void test_parts(void **state) {
        Fixture *f = *state;
        char *ips[] = { (char *)"10.0.0.1", NULL };
        bool events_later[] = { false, true };
        CertsPart first = { .first = true, .later = events_later }, rest = { .later = events_later };
        CertsObservation o = {};
        CertsPlan p = {};
        CertsResult res = {};

        observe_plan_held(f, ips, "a", "c", T0, &o, &p);
        assert_int_equal(count_action(&p, CERTS_ISSUE), o.layout.n_leaves);
        assert_int_equal(certs_apply_part(&f->s, f->store, &o, &p, &first, T0, NULL, &res), 0);
        assert_int_equal(strv_length(res.errors), 0);
        assert_true(pair_present(&o, find_leaf(&o, CERTS_ETCD_PEER, "main")));
        assert_true(pair_present(&o, find_leaf(&o, CERTS_APISERVER, NULL)));
        assert_false(pair_present(&o, find_leaf(&o, CERTS_ETCD_SERVER, "events")));
        assert_false(pair_present(&o, find_leaf(&o, CERTS_ETCD_PEER, "events")));
        char path[256];
        snprintf(path, sizeof(path), "%s/etcd-events/ca.crt", f->pki);
        assert_int_equal(access(path, F_OK), -1);
        unsigned first_changes = res.changes;
        certs_result_done(&res);

        assert_int_equal(certs_apply_part(&f->s, f->store, &o, &p, &rest, T0, NULL, &res), 0);
        assert_int_equal(strv_length(res.errors), 0);
        assert_false(res.etcd_failed[0] || res.etcd_failed[1]);
        assert_true(pair_present(&o, find_leaf(&o, CERTS_ETCD_SERVER, "events")));
        assert_int_equal(access(path, F_OK), 0);
        assert_int_equal(first_changes + res.changes, certs_plan_n_actions(&o, &p));
        certs_result_done(&res);
        certs_plan_done(&p);
        certs_observation_done(&o);

        observe_plan_held(f, ips, "a", "c", T0, &o, &p);
        assert_int_equal(certs_plan_n_actions(&o, &p), 0);
        check_leaf(f, &o, find_leaf(&o, CERTS_ETCD_PEER, "events"), "etcd-events-c.internal.demo.k8s.test",
                   "10.0.0.1");
        certs_plan_done(&p);
        certs_observation_done(&o);
}

/* The keystore's entries cannot be created (a file where its CAs' directory goes): the first call says why
 * and holds back main's member; the second holds back events' without saying it again. */
static void test_parts_without_entries(void **state) {
        Fixture *f = *state;
        char *ips[] = { (char *)"10.0.0.1", NULL };
        bool events_later[] = { false, true };
        CertsPart first = { .first = true, .later = events_later }, rest = { .later = events_later };
        CertsObservation o = {};
        CertsPlan p = {};
        CertsResult res = {};
        char blocker[160];

        observe_plan_held(f, ips, "a", "c", T0, &o, &p);
        snprintf(blocker, sizeof(blocker), "%s/store/pki", f->root);
        assert_true(write_file_atomic(blocker, "x", 1, 0600, false) >= 0);
        assert_int_equal(certs_apply_part(&f->s, f->store, &o, &p, &first, T0, NULL, &res), 0);
        assert_int_equal(strv_length(res.errors), 1);
        assert_true(res.etcd_failed[0]);
        assert_false(res.etcd_failed[1]);
        certs_result_done(&res);
        assert_int_equal(certs_apply_part(&f->s, f->store, &o, &p, &rest, T0, NULL, &res), 0);
        assert_int_equal(strv_length(res.errors), 0);
        assert_true(res.etcd_failed[1]);
        assert_false(pair_present(&o, find_leaf(&o, CERTS_ETCD_SERVER, "events")));
        certs_result_done(&res);
        certs_plan_done(&p);
        certs_observation_done(&o);
}

static void test_unreadable_store(void **state) {
        Fixture *f = *state;
        char *ips[] = { (char *)"10.0.0.1", NULL };
        char url[128];
        const char *held[] = { "a", NULL, NULL };
        CertsNode node = { .ips = ips, .held_members = held, .held_known = true };
        CertsObservation o = {};
        CertsPlan p = {};

        snprintf(url, sizeof(url), "file://%s/missing", f->root);
        f->s.store_url = url;
        assert_int_equal(certs_observe(&f->s, &f->store, &o), 0);
        assert_true(o.error < 0);
        assert_non_null(strstr(o.message, "missing"));
        assert_int_equal(certs_plan(&f->s, &o, &node, T0, &p), 0);
        assert_true(p.status < 0);
        assert_int_equal(certs_plan_n_actions(&o, &p), 0);
        assert_false(p.etcd_ready[0]); /* no pairs there: the member waits */
        assert_true(p.etcd_ready[1]);  /* nothing held, nothing to wait for */
        certs_plan_done(&p);
        certs_observation_done(&o);
}

static void test_unmanaged(void **state) {
        Fixture *f = *state;
        CertsObservation o = {};
        CertsPlan p = {};
        CertsNode node = { .held_known = true };
        f->s.store_url = NULL;
        assert_int_equal(certs_observe(&f->s, &f->store, &o), 0);
        assert_int_equal(certs_plan(&f->s, &o, &node, T0, &p), 0);
        assert_false(p.managed);
        assert_true(p.etcd_ready[0] && p.etcd_ready[1]);
        assert_string_equal(p.digest, "");
        certs_plan_done(&p);
        certs_observation_done(&o);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_first_pass_then_quiet, setup, teardown),
                cmocka_unit_test_setup_teardown(test_self_hosted_kubelet_server, setup, teardown),
                cmocka_unit_test_setup_teardown(test_changes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_parts, setup, teardown),
                cmocka_unit_test_setup_teardown(test_parts_without_entries, setup, teardown),
                cmocka_unit_test_setup_teardown(test_unreadable_store, setup, teardown),
                cmocka_unit_test_setup_teardown(test_unmanaged, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
