/* SPDX-License-Identifier: Apache-2.0 */
/* The etcd gateway client against the recorded answers of real etcd 3.4 (tests/vectors/etcd/README.md),
 * parsed directly and served by a one-shot loopback server: endpoints in turn, etcd's refusals named. */
#include "unit-test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/string-util.h"
#include "etcdapi/etcd-client.h"
#include "vectors.h"

typedef struct OneShot {
        pid_t pid;
        char url[64];
        char request[4096]; /* unused by the parent: the child checks the path */
} OneShot;

/* Serves one connection: reads the request (head and body), checks its method and path, answers status +
 * body. */
static void oneshot_start_method(OneShot *o, const char *method, const char *path, int status,
                                 const char *body) {
        unsigned port;
        int s = loopback_listen(1, &port);
        snprintf(o->url, sizeof(o->url), "http://127.0.0.1:%u", port);
        o->pid = fork();
        assert_true(o->pid >= 0);
        if (o->pid == 0) {
                alarm(10);
                int c = accept(s, NULL, NULL);
                char buf[4096], reply[70000];
                size_t got = 0;
                while (c >= 0 && got < sizeof(buf) - 1) {
                        ssize_t k = read(c, buf + got, sizeof(buf) - 1 - got);
                        if (k <= 0)
                                break;
                        got += (size_t)k;
                        buf[got] = 0;
                        char *end = strstr(buf, "\r\n\r\n");
                        char *cl = strcasestr(buf, "Content-Length: ");
                        if (end && cl && got >= (size_t)(end + 4 - buf) + strtoul(cl + 16, NULL, 10))
                                break;
                        if (end && !cl) /* a GET: no body */
                                break;
                }
                char want[128];
                snprintf(want, sizeof(want), "%s %s HTTP/1.1\r\n", method, path);
                if (!startswith(buf, want))
                        status = 599; /* the client sees a wrong path as a failed exchange */
                int n = snprintf(reply, sizeof(reply),
                                 "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                                 "Connection: close\r\n\r\n%s",
                                 status, strlen(body), body);
                (void)loop_write(c, reply, (size_t)n);
                _exit(0);
        }
        close(s);
}

static void oneshot_start(OneShot *o, const char *path, int status, const char *body) {
        oneshot_start_method(o, "POST", path, status, body);
}

static void oneshot_stop(OneShot *o) {
        int status;
        kill(o->pid, SIGKILL);
        waitpid(o->pid, &status, 0);
}

/* A loopback port nobody listens on: bound, then closed. */
static void refused_url(char *buf, size_t n) {
        int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t l = sizeof(a);
        assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
        assert_int_equal(getsockname(s, (struct sockaddr *)&a, &l), 0);
        snprintf(buf, n, "http://127.0.0.1:%u", ntohs(a.sin_port));
        close(s);
}

static char *vector(const char *name) {
        const char *names[] = { name };
        char *text[1];
        size_t len[1];
        vectors_read(names, 1, text, len);
        return text[0];
}

static void test_parse_vectors(void **state) {
        char *list = vector("etcd/member-list-learner.json"), *status = vector("etcd/status.json"),
             *range = vector("etcd/range.json"), *missing = vector("etcd/range-missing.json"),
             *add = vector("etcd/member-add-learner.json"), *grant = vector("etcd/lease-grant.json");
        EtcdMemberList l = {};
        assert_int_equal(etcd_parse_member_list(list, strlen(list), &l), 0);
        assert_int_equal(l.n, 2);
        assert_true(l.items[0].id == 4942125474645371596ULL);
        assert_string_equal(l.items[0].name, "etcd-a");
        assert_false(l.items[0].is_learner);
        assert_true(l.items[1].id == 12150845029274750831ULL); /* above INT64_MAX: a string in JSON */
        assert_string_equal(l.items[1].name, "");
        assert_true(l.items[1].is_learner);
        assert_ptr_equal(etcd_member_list_find_peer(&l, "http://127.0.0.1:23982"), &l.items[1]);
        etcd_member_list_done(&l);

        EtcdStatus st = {};
        assert_int_equal(etcd_parse_status(status, strlen(status), &st), 0);
        assert_string_equal(st.version, "3.4.23");
        assert_true(st.leader == 4942125474645371596ULL && st.leader == st.member_id);
        etcd_status_done(&st);

        EtcdKvList kv = {};
        assert_int_equal(etcd_parse_range(range, strlen(range), &kv), 0);
        assert_int_equal(kv.n, 1);
        assert_string_equal((char *)kv.items[0].key, "foo");
        assert_string_equal((char *)kv.items[0].value, "bar");
        assert_int_equal(kv.items[0].create_revision, 2);
        etcd_kv_list_done(&kv);
        assert_int_equal(etcd_parse_range(missing, strlen(missing), &kv), 0);
        assert_int_equal(kv.n, 0);
        etcd_kv_list_done(&kv);

        EtcdMember m = {};
        assert_int_equal(etcd_parse_member_add(add, strlen(add), &m, &l), 0);
        assert_true(m.id == 12150845029274750831ULL && m.is_learner);
        assert_int_equal(l.n, 2);
        etcd_member_done(&m);
        etcd_member_list_done(&l);

        uint64_t id;
        int64_t ttl;
        assert_int_equal(etcd_parse_lease_grant(grant, strlen(grant), &id, &ttl), 0);
        assert_true(id == 7695704028959989000ULL);
        assert_int_equal(ttl, 30);
        /* an error body is no status, and a status is no error body */
        assert_int_equal(etcd_parse_status("{\"error\":\"x\",\"code\":1}", 23, &st), PK_EMALFORMED);
        free(list);
        free(status);
        free(range);
        free(missing);
        free(add);
        free(grant);
}

static void test_parse_malformed(void **state) {
        static const char *const bad[] = {
                "",
                "[]",
                "{\"members\":{}}",
                "{\"members\":[{\"ID\":\"0\"}]}",
                "{\"members\":[{\"ID\":\"-1\"}]}",
                "{\"members\":[{\"ID\":\"18446744073709551616\"}]}",
                "{\"members\":[{\"ID\":\"1\"},{\"ID\":\"1\"}]}",
                "{\"members\":[{\"ID\":\"1\",\"name\":\"a\\nb\"}]}",
                "{\"members\":[{\"ID\":\"1\",\"isLearner\":\"yes\"}]}",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                EtcdMemberList l = {};
                assert_int_equal(etcd_parse_member_list(bad[i], strlen(bad[i]), &l), PK_EMALFORMED);
        }
        EtcdKvList kv = {};
        const char *b64 = "{\"kvs\":[{\"key\":\"!!\"}]}";
        assert_int_equal(etcd_parse_range(b64, strlen(b64), &kv), PK_EMALFORMED);
}

static EtcdClient *client(char *const *endpoints) {
        EtcdClient *c = NULL;
        EtcdClientConfig cfg = { .endpoints = endpoints, .timeout = 3 * USEC_PER_SEC };
        assert_int_equal(etcd_client_new(&cfg, &c), 0);
        return c;
}

static void test_member_list_in_turn(void **state) {
        char *body = vector("etcd/member-list.json");
        OneShot o;
        char refused[64];
        refused_url(refused, sizeof(refused));
        oneshot_start(&o, "/v3/cluster/member/list", 200, body);
        char *endpoints[] = { refused, o.url, NULL };
        EtcdClient *c = client(endpoints);
        EtcdMemberList l = {};
        char *err = NULL;
        assert_int_equal(etcd_member_list(c, &l, &err), 0); /* the first is refused: the second answers */
        assert_null(err);
        assert_int_equal(l.n, 1);
        assert_string_equal(l.items[0].name, "etcd-a");
        etcd_member_list_done(&l);
        oneshot_stop(&o);
        /* nobody answers: the error names every endpoint */
        assert_true(etcd_member_list(c, &l, &err) < 0);
        assert_non_null(strstr(err, refused));
        assert_non_null(strstr(err, o.url));
        free(err);
        etcd_client_free(c);
        free(body);
}

static void test_refusal_named(void **state) {
        char *body = vector("etcd/member-promote-not-ready.json");
        OneShot o;
        oneshot_start(&o, "/v3/cluster/member/promote", 412, body);
        char *endpoints[] = { o.url, NULL };
        EtcdClient *c = client(endpoints);
        char *err = NULL;
        assert_int_equal(etcd_member_promote(c, 12150845029274750831ULL, &err), PK_EETCD);
        assert_int_equal(etcd_client_last_code(c), 9);
        assert_non_null(strstr(err, o.url));
        assert_non_null(strstr(err, "can only promote a learner member which is in sync with leader"));
        free(err);
        oneshot_stop(&o);
        etcd_client_free(c);
        free(body);
}

static void test_txn_lost(void **state) {
        char *body = vector("etcd/txn-lost.json");
        OneShot o;
        oneshot_start(&o, "/v3/kv/txn", 200, body);
        char *endpoints[] = { o.url, NULL };
        EtcdClient *c = client(endpoints);
        EtcdCompare cmp = { .key = "lock", .key_len = 4, .target = ETCD_COMPARE_CREATE };
        EtcdOp put = {
                .type = ETCD_OP_PUT, .key = "lock", .key_len = 4, .value = "n2", .value_len = 2, .lease = 7
        };
        EtcdOp get = { .type = ETCD_OP_RANGE, .key = "lock", .key_len = 4 };
        EtcdTxn t = { .compares = &cmp,
                      .n_compares = 1,
                      .success = &put,
                      .n_success = 1,
                      .failure = &get,
                      .n_failure = 1 };
        bool won = true;
        EtcdKvList kv = {};
        assert_int_equal(etcd_kv_txn(c, &t, &won, &kv, NULL), 0);
        assert_false(won);
        assert_int_equal(kv.n, 1);
        assert_string_equal((char *)kv.items[0].value, "n1"); /* the holder */
        assert_true(kv.items[0].lease == 7695704028959989000ULL);
        etcd_kv_list_done(&kv);
        oneshot_stop(&o);
        etcd_client_free(c);
        free(body);
}

/* A member's running version and the cluster version as real etcd answered them
 * (tests/vectors/etcd/README.md: a three-member cluster upgraded from Debian's 3.4.23 to trixie's 3.5.16 one
 * member at a time), through the parsers and through GET /version. */
static void test_versions(void **state) {
        const char *names[] = { "etcd/version-3.4.json", "etcd/version-3.5-mixed.json",
                                "etcd/version-3.5.json", "etcd/status-3.5-mixed.json",
                                "etcd/status-3.5.json" };
        char *text[ELEMENTSOF(names)];
        size_t len[ELEMENTSOF(names)];
        vectors_read(names, ELEMENTSOF(names), text, len);
        static const struct {
                const char *server, *cluster;
        } want[] = { { "3.4.23", "3.4.0" }, { "3.5.16", "3.4.0" }, { "3.5.16", "3.5.0" } };
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                EtcdVersion v = {};
                assert_int_equal(etcd_parse_version(text[i], len[i], &v), 0);
                assert_string_equal(v.server, want[i].server);
                assert_string_equal(v.cluster, want[i].cluster);
                etcd_version_done(&v);
        }
        /* 3.5's gateway writes ", " between fields; its status has the running version and the leader */
        EtcdStatus st = {};
        assert_int_equal(etcd_parse_status(text[3], len[3], &st), 0);
        assert_string_equal(st.version, "3.5.16");
        assert_true(st.leader == 4809885609745340795ULL && st.member_id == 16354049087539890061ULL);
        assert_true(st.raft_index == 10);
        etcd_status_done(&st);
        assert_int_equal(etcd_parse_status(text[4], len[4], &st), 0);
        assert_true(st.leader == st.member_id && st.raft_index == 22);
        etcd_status_done(&st);

        EtcdVersion v = {};
        const char *undecided = "{\"etcdserver\":\"3.4.23\",\"etcdcluster\":\"not_decided\"}";
        assert_int_equal(etcd_parse_version(undecided, strlen(undecided), &v), 0);
        assert_string_equal(v.server, "3.4.23");
        assert_null(v.cluster);
        etcd_version_done(&v);
        static const char *const bad[] = {
                "{}",
                "{\"etcdserver\":\"3.5.16\"}",
                "{\"etcdcluster\":\"3.5.0\"}",
                "{\"etcdserver\":\"3.5\",\"etcdcluster\":\"3.5.0\"}",
                "{\"etcdserver\":\"3.5.16\",\"etcdcluster\":3.5}",
                "{\"etcdserver\":\"not_decided\",\"etcdcluster\":\"3.5.0\"}",
                "{\"etcdserver\":\"3.5.16\\n\",\"etcdcluster\":\"3.5.0\"}",
                "[\"3.5.16\"]",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (etcd_parse_version(bad[i], strlen(bad[i]), &v) != PK_EMALFORMED)
                        fail_msg("'%s' parsed", bad[i]);

        OneShot o;
        oneshot_start_method(&o, "GET", "/version", 200, text[1]);
        char *endpoints[] = { o.url, NULL };
        EtcdClient *c = client(endpoints);
        char *err = NULL;
        assert_int_equal(etcd_version(c, o.url, &v, &err), 0);
        assert_null(err);
        assert_string_equal(v.server, "3.5.16");
        assert_string_equal(v.cluster, "3.4.0");
        etcd_version_done(&v);
        oneshot_stop(&o);
        assert_int_equal(etcd_version(c, "ftp://x", &v, &err), -EINVAL);
        free(err);
        etcd_client_free(c);
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                free(text[i]);
}

static void test_bad_endpoints(void **state) {
        EtcdClient *c = NULL;
        char *none[] = { NULL }, *bad[] = { (char *)"ftp://x", NULL };
        EtcdClientConfig cfg = { .endpoints = none };
        assert_int_equal(etcd_client_new(&cfg, &c), -EINVAL);
        cfg.endpoints = bad;
        assert_int_equal(etcd_client_new(&cfg, &c), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_vectors),
                cmocka_unit_test(test_parse_malformed),
                cmocka_unit_test(test_member_list_in_turn),
                cmocka_unit_test(test_refusal_named),
                cmocka_unit_test(test_txn_lost),
                cmocka_unit_test(test_versions),
                cmocka_unit_test(test_bad_endpoints),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
