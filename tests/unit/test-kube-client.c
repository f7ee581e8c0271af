/* SPDX-License-Identifier: Apache-2.0 */
/* The Kubernetes API client (kube/) against a loopback server forked by the test that replays responses
 * recorded from the real kube-apiserver 1.20.2 (tests/vectors/kube/, README there): Status errors (404,
 * 403, 409, 422), the request shape of server-side apply and of delete with preconditions, retries after a
 * 429 (its Retry-After honoured) and a 500, the deadline ending retries, a stop request ending a wait,
 * probes, the resource table, kubeconfigs and the document splitter. */
#include "unit-test.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/stop.h"
#include "basic/string-util.h"
#include "kube-fake.h"
#include "kube/kube-client.h"
#include "kube/kube-internal.h"
#include "kube/kube-resource.h"
#include "kube/kube-status.h"
#include "pki/pki-kubeconfig.h"
#include "shared/json-secret.h"
#include "vectors.h"

#define MAX_REPLIES 32

/* Serves one connection per reply, in order (the last one again when repeat_last), and appends each request
 * (head and body) to log_path, separated by "\n=====\n". The child dies by alarm after 20 s in any case. */
typedef struct Replay {
        pid_t pid;
        char server[64];
        char log_path[64];
} Replay;

static size_t content_length(const char *head) {
        const char *p = strcasestr(head, "\r\nContent-Length:");
        return p ? strtoul(p + 17, NULL, 10) : 0;
}

static void serve_one(int s, const char *reply, size_t reply_len, int log_fd) {
        int c = accept(s, NULL, NULL);
        char buf[65536];
        size_t got = 0, want = 0;
        if (c < 0)
                _exit(1);
        while (got < sizeof(buf) - 1) {
                ssize_t k = read(c, buf + got, sizeof(buf) - 1 - got);
                if (k <= 0)
                        break;
                got += (size_t)k;
                buf[got] = 0;
                char *end = strstr(buf, "\r\n\r\n");
                if (end && !want)
                        want = (size_t)(end + 4 - buf) + content_length(buf);
                if (want && got >= want)
                        break;
        }
        (void)loop_write(log_fd, buf, got);
        (void)loop_write(log_fd, "\n=====\n", 7);
        (void)loop_write(c, reply, reply_len);
        shutdown(c, SHUT_WR);
        close(c);
}

static void replay_start(Replay *o, char **replies, size_t *lens, size_t n, bool repeat_last) {
        unsigned port;
        int s = loopback_listen(8, &port);
        snprintf(o->server, sizeof(o->server), "http://127.0.0.1:%u", port);
        snprintf(o->log_path, sizeof(o->log_path), "/tmp/pk-kube-replay-XXXXXX");
        int log_fd = mkstemp(o->log_path);
        assert_true(log_fd >= 0);
        o->pid = fork();
        assert_true(o->pid >= 0);
        if (o->pid == 0) {
                alarm(20);
                for (size_t i = 0; i < (repeat_last ? MAX_REPLIES : n); i++)
                        serve_one(s, replies[MIN(i, n - 1)], lens[MIN(i, n - 1)], log_fd);
                _exit(0);
        }
        close(log_fd);
        close(s);
}

/* Stops the server; returns the requests it saw (caller frees) and their count. */
static char *replay_stop(Replay *o, size_t *ret_n) {
        int status;
        char *log = NULL;
        kill(o->pid, SIGKILL);
        waitpid(o->pid, &status, 0);
        assert_int_equal(read_full_file(o->log_path, 1 << 20, &log, NULL), 0);
        unlink(o->log_path);
        size_t n = 0;
        for (const char *p = log; (p = strstr(p, "\n=====\n")); p += 7)
                n++;
        if (ret_n)
                *ret_n = n;
        return log;
}

static KubeClient *client_for(const Replay *o) {
        KubeClient *c = NULL;
        KubeClientConfig cfg = { .server = o->server };
        assert_int_equal(kube_client_new(&cfg, &c, NULL), 0);
        /* fast backoff: a wait of a second or more can only be a Retry-After */
        kube_client_set_retry(c, &(KubeRetryPolicy){ .backoff_initial = 10 * USEC_PER_MSEC,
                                                     .backoff_max = 100 * USEC_PER_MSEC,
                                                     .call_timeout = 10 * USEC_PER_SEC });
        return c;
}

/* Replays names[] in order (the last repeated when repeat_last). */
static void start_vectors(Replay *o, const char *const *names, size_t n, bool repeat_last, char **v,
                          size_t *lens) {
        vectors_read(names, n, v, lens);
        replay_start(o, v, lens, n, repeat_last);
}

static void free_vectors(char **v, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(v[i]);
}

static const char CM[] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pk-rec\n  namespace: default\n"
                         "data:\n  greeting: hello\n";

static void test_404(void **state) {
        const char *names[] = { "kube/get-404.http" };
        char *v[1];
        size_t lens[1];
        Replay o;
        start_vectors(&o, names, 1, false, v, lens);
        KubeClient *c = client_for(&o);
        json_t *obj = NULL;
        char *err = NULL;
        assert_int_equal(kube_get(c, "v1", "ConfigMap", "default", "pk-missing", 0, &obj, &err), -ENOENT);
        assert_null(obj);
        assert_string_equal(
            err, "ConfigMap default/pk-missing: 404 NotFound: configmaps \"pk-missing\" not found");
        free(err);
        size_t n;
        char *log = replay_stop(&o, &n);
        assert_int_equal(n, 1); /* a 404 is an answer: no retry */
        assert_true(startswith(log, "GET /api/v1/namespaces/default/configmaps/pk-missing HTTP/1.1\r\n"));
        assert_non_null(strstr(log, "\r\nAccept: application/json\r\n"));
        free(log);
        kube_client_free(c);
        free_vectors(v, 1);
}

static void test_403_and_409(void **state) {
        const char *names[] = { "kube/get-403-node.http", "kube/delete-409-precondition.http" };
        char *v[2];
        size_t lens[2];
        Replay o;
        start_vectors(&o, names, 2, false, v, lens);
        KubeClient *c = client_for(&o);
        json_t *obj = NULL;
        char *err = NULL;
        assert_int_equal(kube_get(c, "v1", "ConfigMap", "default", "pk-rec", 0, &obj, &err), -EACCES);
        assert_non_null(
            strstr(err, "ConfigMap default/pk-rec: 403 Forbidden: configmaps \"pk-rec\" is forbidden: "
                        "User \"system:node:n1\" cannot get resource"));
        free(err);
        err = NULL;
        KubePreconditions pre = { .uid = "00000000-0000-0000-0000-000000000000", .resource_version = "7" };
        assert_int_equal(kube_delete(c, "v1", "ConfigMap", "default", "pk-rec", &pre, 0, &err),
                         PK_ECONFLICT);
        assert_non_null(strstr(err,
                               "ConfigMap default/pk-rec: 409 Conflict: Operation cannot be fulfilled on "
                               "ConfigMap \"pk-rec\": the UID in the precondition"));
        free(err);
        size_t n;
        char *log = replay_stop(&o, &n);
        assert_int_equal(n, 2);
        const char *del = strstr(log, "DELETE /api/v1/namespaces/default/configmaps/pk-rec HTTP/1.1\r\n");
        assert_non_null(del);
        assert_non_null(strstr(del, "\"preconditions\":{\"uid\":\"00000000-0000-0000-0000-000000000000\","
                                    "\"resourceVersion\":\"7\"}"));
        assert_non_null(strstr(del, "\"propagationPolicy\":\"Background\""));
        free(log);
        kube_client_free(c);
        free_vectors(v, 2);
}

/* The recorded 409 AlreadyExists (a POST) and the 422: codes and messages, causes included; for a Secret
 * the messages (which quote the invalid value) are withheld. */
static void test_status_parsing(void **state) {
        const char *names[] = { "kube/create-409-exists.http", "kube/apply-422.http" };
        char *v[2];
        size_t lens[2];
        vectors_read(names, 2, v, lens);
        const char *body0 = strstr(v[0], "\r\n\r\n") + 4, *body1 = strstr(v[1], "\r\n\r\n") + 4;
        KubeObjectRef cm = { .kind = "ConfigMap", .ns = "default", .name = "pk-rec" };
        char *err = NULL;
        assert_int_equal(kube_status_error(409, body0, strlen(body0), &cm, false, &err), -EEXIST);
        assert_string_equal(
            err, "ConfigMap default/pk-rec: 409 AlreadyExists: configmaps \"pk-rec\" already exists");
        free(err);
        err = NULL;
        assert_int_equal(kube_status_error(422, body1, strlen(body1), &cm, false, &err), -EINVAL);
        assert_true(startswith(err,
                               "ConfigMap default/pk-rec: 422 Invalid: ConfigMap \"pk-bad\" is invalid: "
                               "data[bad key!]: Invalid value: \"bad key!\": a valid config key"));
        assert_non_null(
            strstr(err, " (causes: data[bad key!]: Invalid value: \"bad key!\": a valid config"));
        free(err);
        err = NULL;
        KubeObjectRef secret = { .kind = "Secret", .ns = "default", .name = "s" };
        assert_int_equal(kube_status_error(422, body1, strlen(body1), &secret, true, &err), -EINVAL);
        assert_string_equal(err, "Secret default/s: 422 Invalid: (message withheld: it may quote a Secret's "
                                 "value) (causes: data[bad key!])");
        free(err);
        err = NULL;
        /* not a Status: the body is never quoted */
        assert_int_equal(kube_status_error(502, "secret-ish text", 15, &cm, false, &err), -EIO);
        assert_string_equal(err, "ConfigMap default/pk-rec: 502 (not a Status), 15 bytes of body");
        free(err);
        free_vectors(v, 2);
}

static void test_apply_shape_and_422(void **state) {
        const char *names[] = { "kube/apply-201.http", "kube/apply-200.http", "kube/apply-422.http" };
        char *v[3];
        size_t lens[3];
        Replay o;
        start_vectors(&o, names, 3, false, v, lens);
        KubeClient *c = client_for(&o);
        json_t *obj = NULL;
        char *err = NULL;
        assert_int_equal(kube_apply_text(c, CM, strlen(CM), 0, &obj, &err), 0);
        assert_int_equal(json_array_size(obj), 1);
        const json_t *meta = json_object_get(json_array_get(obj, 0), "metadata");
        assert_string_equal(json_string_value(json_object_get(meta, "name")), "pk-rec");
        assert_non_null(json_string_value(json_object_get(meta, "resourceVersion")));
        json_decref(obj);
        obj = NULL;
        /* the second document has no namespace: "default"; the server answers 422 */
        _cleanup_free_ char *two = strjoin(CM, "---\n# nothing\n---\napiVersion: v1\nkind: ConfigMap\n"
                                               "metadata:\n  name: pk-bad\ndata:\n  'bad key!': x\n");
        assert_int_equal(kube_apply_text(c, two, strlen(two), 0, &obj, &err), -EINVAL);
        assert_null(obj);
        assert_true(
            startswith(err, "document 3: ConfigMap default/pk-bad: 422 Invalid: ConfigMap \"pk-bad\" "));
        free(err);
        size_t n;
        char *log = replay_stop(&o, &n);
        assert_int_equal(n, 3); /* the comment-only document was not sent */
        assert_true(startswith(log, "PATCH /api/v1/namespaces/default/configmaps/pk-rec"
                                    "?fieldManager=protokube&force=true HTTP/1.1\r\n"));
        const char *body = strstr(log, "\r\n\r\n");
        assert_non_null(strstr(log, "\r\nContent-Type: application/apply-patch+yaml\r\n"));
        assert_true(body && body < strstr(log, "\n=====\n"));
        assert_true(startswith(body + 4, CM)); /* the document as written */
        free(log);
        kube_client_free(c);
        free_vectors(v, 3);
}

/* A merge patch names only what it changes: PATCH with application/merge-patch+json, fieldManager protokube
 * and no force (not an apply); a 404 is -ENOENT; a Secret is refused before any request (its body would hold
 * key material). */
static void test_merge_patch(void **state) {
        const char *names[] = { "kube/apply-200.http", "kube/get-404.http" };
        char *v[2];
        size_t lens[2];
        Replay o;
        start_vectors(&o, names, 2, false, v, lens);
        KubeClient *c = client_for(&o);
        char *err = NULL;
        _cleanup_(json_decrefp) json_t *patch =
            json_pack("{s:{s:{s:{s:{s:s}}}}}", "spec", "template", "metadata", "annotations",
                      "protokube.io/certificates", "0123456789abcdef");
        assert_non_null(patch);
        assert_int_equal(
            kube_merge_patch(c, "apps/v1", "DaemonSet", "kube-system", "kube-apiserver", patch, 0, &err), 0);
        assert_int_equal(kube_merge_patch(c, "v1", "ConfigMap", "default", "pk-missing", patch, 0, &err),
                         -ENOENT);
        assert_non_null(strstr(err, "404 NotFound"));
        free(err);
        err = NULL;
        assert_int_equal(kube_merge_patch(c, "v1", "Secret", "default", "s", patch, 0, &err), -EINVAL);
        assert_string_equal(err, "merge patch of Secret s: not supported");
        free(err);
        err = NULL;
        _cleanup_(json_decrefp) json_t *not_object = json_array();
        assert_int_equal(kube_merge_patch(c, "v1", "ConfigMap", "default", "x", not_object, 0, &err),
                         -EINVAL);
        free(err);
        size_t n;
        _cleanup_free_ char *log = replay_stop(&o, &n);
        assert_int_equal(n, 2);
        assert_true(startswith(log, "PATCH /apis/apps/v1/namespaces/kube-system/daemonsets/kube-apiserver"
                                    "?fieldManager=protokube HTTP/1.1\r\n"));
        assert_non_null(strstr(log, "\r\nContent-Type: application/merge-patch+json\r\n"));
        assert_non_null(strstr(log, "\r\n\r\n{\"spec\":{\"template\":{\"metadata\":{\"annotations\":{"
                                    "\"protokube.io/certificates\":\"0123456789abcdef\"}}}}}"));
        kube_client_free(c);
        free_vectors(v, 2);
}

/* create (POST to the collection) and replace (PUT at a resourceVersion, of a subresource): the requests'
 * shape, the recorded 409s as the API's create-if-absent (-EEXIST) and compare-and-set (PK_ECONFLICT),
 * and a replace without a resourceVersion refused before any request. */
static void test_create_and_replace(void **state) {
        const char *names[] = { "kube/apply-201.http", "kube/create-409-exists.http", "kube/apply-200.http",
                                "kube/replace-409-conflict.http" };
        char *v[4];
        size_t lens[4];
        Replay o;
        start_vectors(&o, names, 4, false, v, lens);
        KubeClient *c = client_for(&o);
        char *err = NULL;
        json_t *stored = NULL;
        _cleanup_(json_decrefp) json_t *cm =
            json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap", "metadata",
                      "name", "pk-rec", "namespace", "default", "data", "greeting", "hello");
        assert_int_equal(kube_create(c, cm, 0, &stored, &err), 0);
        assert_string_equal(json_string_value(json_object_get(json_object_get(stored, "metadata"), "name")),
                            "pk-rec");
        json_decref(stored);
        assert_int_equal(kube_create(c, cm, 0, NULL, &err), -EEXIST);
        assert_non_null(strstr(err, "409 AlreadyExists"));
        free(err);
        err = NULL;
        /* no resourceVersion: no request */
        assert_int_equal(kube_replace(c, cm, NULL, 0, NULL, &err), -EINVAL);
        assert_non_null(strstr(err, "no metadata.resourceVersion"));
        free(err);
        err = NULL;
        json_object_set_new(json_object_get(cm, "metadata"), "resourceVersion", json_string("41"));
        assert_int_equal(kube_replace(c, cm, "Status", 0, NULL, &err), -EINVAL);
        free(err);
        err = NULL;
        assert_int_equal(kube_replace(c, cm, NULL, 0, NULL, &err), 0);
        assert_int_equal(kube_replace(c, cm, "status", 0, NULL, &err), PK_ECONFLICT);
        assert_non_null(strstr(err,
                               "ConfigMap default/pk-rec: 409 Conflict: Operation cannot be fulfilled on "
                               "configmaps \"pk-rec\": the object has been modified"));
        free(err);
        size_t n;
        _cleanup_free_ char *log = replay_stop(&o, &n);
        assert_int_equal(n, 4);
        assert_true(startswith(
            log, "POST /api/v1/namespaces/default/configmaps?fieldManager=protokube HTTP/1.1\r\n"));
        assert_non_null(strstr(log, "\r\nContent-Type: application/json\r\n"));
        assert_non_null(strstr(log,
                               "PUT /api/v1/namespaces/default/configmaps/pk-rec?fieldManager=protokube "
                               "HTTP/1.1\r\n"));
        const char *put = strstr(log, "PUT /api/v1/namespaces/default/configmaps/pk-rec/status?fieldManager="
                                      "protokube HTTP/1.1\r\n");
        assert_non_null(put);
        assert_non_null(strstr(put, "\"resourceVersion\":\"41\""));
        kube_client_free(c);
        free_vectors(v, 4);
}

static usec_t elapsed_since(usec_t t0) {
        return now(CLOCK_MONOTONIC) - t0;
}

/* 429 with Retry-After: 1 (kube-apiserver's max-inflight filter), then the recorded 200: the wait is the
 * server's second, not the 10 ms backoff. */
static void test_429_retry_after_then_200(void **state) {
        const char *names[] = { "kube/synth-429-max-inflight.http", "kube/apply-200.http" };
        char *v[2];
        size_t lens[2];
        Replay o;
        start_vectors(&o, names, 2, false, v, lens);
        KubeClient *c = client_for(&o);
        json_t *obj = NULL;
        usec_t t0 = now(CLOCK_MONOTONIC);
        assert_int_equal(kube_apply_document(c, CM, strlen(CM), 0, &obj, NULL), 0);
        usec_t took = elapsed_since(t0);
        assert_true(took >= 950 * USEC_PER_MSEC && took < 5 * USEC_PER_SEC);
        assert_string_equal(json_string_value(json_object_get(obj, "kind")), "ConfigMap");
        json_decref(obj);
        size_t n;
        free(replay_stop(&o, &n));
        assert_int_equal(n, 2);
        kube_client_free(c);
        free_vectors(v, 2);
}

/* A Secret's applied object comes back without its data (the recorded answer carries data: it is dropped).
 */
static void test_secret_apply_drops_data(void **state) {
        const char *names[] = { "kube/apply-200.http" };
        char *v[1];
        size_t lens[1];
        Replay o;
        start_vectors(&o, names, 1, false, v, lens);
        KubeClient *c = client_for(&o);
        json_t *obj = NULL;
        const char secret[] =
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: pk-rec\ndata:\n  k: aGVsbG8=\n";
        assert_int_equal(kube_apply_document(c, secret, strlen(secret), 0, &obj, NULL), 0);
        assert_null(json_object_get(obj, "data"));
        assert_non_null(json_object_get(obj, "metadata"));
        json_decref(obj);
        _cleanup_free_ char *log = replay_stop(&o, NULL);
        assert_non_null(
            strstr(log, "PATCH /api/v1/namespaces/default/secrets/pk-rec?fieldManager=protokube"));
        kube_client_free(c);
        free_vectors(v, 1);
}

static void test_500_then_200(void **state) {
        const char *names[] = { "kube/synth-500-internal-error.http", "kube/synth-500-internal-error.http",
                                "kube/apply-200.http" };
        char *v[3];
        size_t lens[3];
        Replay o;
        start_vectors(&o, names, 3, false, v, lens);
        KubeClient *c = client_for(&o);
        json_t *obj = NULL;
        assert_int_equal(kube_get(c, "v1", "ConfigMap", "default", "pk-rec", 0, &obj, NULL), 0);
        assert_string_equal(json_string_value(json_object_get(json_object_get(obj, "metadata"), "name")),
                            "pk-rec");
        json_decref(obj);
        size_t n;
        free(replay_stop(&o, &n));
        assert_int_equal(n, 3);
        kube_client_free(c);
        free_vectors(v, 3);
}

/* A server that answers 500 forever: the deadline ends the retries, with the last error in the message;
 * a Retry-After past the deadline ends them at once; the count bound ends them too. */
static void test_deadline_ends_retries(void **state) {
        const char *names[] = { "kube/synth-500-internal-error.http" };
        char *v[1];
        size_t lens[1];
        Replay o;
        start_vectors(&o, names, 1, true, v, lens);
        KubeClient *c = client_for(&o);
        kube_client_set_retry(c, &(KubeRetryPolicy){ .max_tries = 1000 });
        char *err = NULL;
        usec_t t0 = now(CLOCK_MONOTONIC);
        assert_int_equal(
            kube_get(c, "v1", "ConfigMap", "default", "pk-rec", t0 + 500 * USEC_PER_MSEC, NULL, &err),
            PK_ETIMEOUT);
        usec_t took = elapsed_since(t0);
        assert_true(took < 1500 * USEC_PER_MSEC);
        assert_true(startswith(err, "ConfigMap default/pk-rec: gave up at the deadline after "));
        assert_non_null(
            strstr(err, "; last: ConfigMap default/pk-rec: 500 InternalError: Internal error occurred: "
                        "etcdserver: leader changed (causes: etcdserver: leader changed)"));
        free(err);
        err = NULL;
        assert_int_equal(
            kube_get(c, "v1", "ConfigMap", "default", "pk-rec", now(CLOCK_MONOTONIC) - 1, NULL, &err),
            PK_ETIMEOUT);
        assert_string_equal(err, "ConfigMap default/pk-rec: the deadline passed before the first try");
        free(err);
        err = NULL;
        kube_client_set_retry(c, &(KubeRetryPolicy){ .max_tries = 3 });
        assert_int_equal(kube_get(c, "v1", "ConfigMap", "default", "pk-rec", 0, NULL, &err), -EIO);
        assert_true(startswith(err, "ConfigMap default/pk-rec: 500 InternalError"));
        free(err);
        err = NULL;
        size_t n;
        free(replay_stop(&o, &n));
        assert_true(n >= 4 + 3 && n < MAX_REPLIES);
        kube_client_free(c);
        free_vectors(v, 1);

        /* Retry-After: 1 and half a second left: one try, then the deadline's error at once */
        const char *n429[] = { "kube/synth-429-max-inflight.http" };
        start_vectors(&o, n429, 1, true, v, lens);
        c = client_for(&o);
        t0 = now(CLOCK_MONOTONIC);
        assert_int_equal(kube_get(c, "v1", "Node", NULL, "a", t0 + 500 * USEC_PER_MSEC, NULL, &err),
                         PK_ETIMEOUT);
        assert_true(elapsed_since(t0) < 400 * USEC_PER_MSEC);
        assert_non_null(strstr(err, "after 1 tries; last: Node a: 429 (not a Status)"));
        free(err);
        free(replay_stop(&o, &n));
        assert_int_equal(n, 1);
        kube_client_free(c);
        free_vectors(v, 1);
}

static void test_stop_ends_wait(void **state) {
        const char *names[] = { "kube/synth-429-max-inflight.http" };
        char *v[1];
        size_t lens[1];
        Replay o;
        start_vectors(&o, names, 1, true, v, lens);
        KubeClient *c = client_for(&o);
        char *err = NULL;
        stop_request();
        usec_t t0 = now(CLOCK_MONOTONIC);
        assert_int_equal(kube_get(c, "v1", "ConfigMap", "default", "x", 0, NULL, &err), -ECANCELED);
        stop_reset();
        assert_true(elapsed_since(t0) < 500 * USEC_PER_MSEC);
        assert_true(startswith(err, "stopped while waiting to retry: ConfigMap default/x: 429"));
        free(err);
        free(replay_stop(&o, NULL));
        kube_client_free(c);
        free_vectors(v, 1);
}

/* 200; a failing check (500, text) named; a refusal (403, a Status: RBAC let the node not read /readyz)
 * -EACCES with the API's message. */
static void test_probe(void **state) {
        const char *names[] = { "kube/readyz-200.http", "kube/readyz-500.http",
                                "kube/readyz-403-node.http" };
        char *v[3];
        size_t lens[3];
        Replay o;
        start_vectors(&o, names, 3, false, v, lens);
        KubeClient *c = client_for(&o);
        char *err = NULL;
        assert_int_equal(kube_probe(c, "readyz", 0, &err), 0);
        assert_int_equal(kube_probe(c, "readyz", 0, &err), -EIO);
        assert_string_equal(err, "/readyz: 500: [-]etcd failed: reason withheld");
        assert_int_equal(kube_probe(c, "readyz", 0, &err), -EACCES);
        assert_string_equal(err,
                            "/readyz: 403 Forbidden: forbidden: User \"system:node:n1\" cannot get path "
                            "\"/readyz\"");
        free(err);
        err = NULL;
        size_t n;
        free(replay_stop(&o, &n));
        assert_int_equal(n, 3); /* a probe is not retried */
        assert_int_equal(kube_probe(c, "healthz", 0, &err), -EINVAL);
        free(err);
        kube_client_free(c);
        free_vectors(v, 3);
}

/* connect_to through kube_client_override: the server URL names one host, the connection goes to the
 * replay server and the request names the URL's host. A bad value is refused, and so is plain http to an
 * address that is not loopback. */
static void test_connect_to(void **state) {
        const char *names[] = { "kube/readyz-200.http" };
        char *v[1];
        size_t lens[1];
        Replay o;
        start_vectors(&o, names, 1, false, v, lens);
        KubeClient *c = NULL;
        char *err = NULL, to[256];
        KubeClientConfig cfg = { .server = "http://localhost:443" };
        assert_int_equal(kube_client_new(&cfg, &c, NULL), 0);
        snprintf(to, sizeof(to), "localhost:443:%s", o.server + strlen("http://"));
        assert_int_equal(kube_client_override(c, &(KubeClientConfig){ .connect_to = to }, &err), 0);
        assert_int_equal(kube_probe(c, "readyz", 0, &err), 0);
        size_t n;
        _cleanup_free_ char *log = replay_stop(&o, &n);
        assert_int_equal(n, 1);
        assert_non_null(strstr(log, "Host: localhost:443\r\n"));
        assert_int_equal(kube_client_override(c, &(KubeClientConfig){ .connect_to = "a b:1:c:2" }, &err),
                         -EINVAL);
        assert_string_equal(err, "invalid connect-to 'a b:1:c:2': want HOST:PORT:ADDRESS:PORT");
        free(err);
        err = NULL;
        assert_int_equal(
            kube_client_override(c, &(KubeClientConfig){ .connect_to = "localhost:443:10.0.0.1:443" }, &err),
            -EINVAL);
        assert_non_null(strstr(err, "plain http is allowed only to a loopback address"));
        free(err);
        kube_client_free(c);
        free_vectors(v, 1);
}

/* Plain http carries the API's answers (Secrets) readable: only to this machine, as the AWS client. */
static void test_plain_http_only_on_loopback(void **state) {
        static const struct {
                const char *server;
                bool ok;
        } cases[] = {
                { "http://127.0.0.1:8080", true },
                { "http://[::1]:8080", true },
                { "http://localhost", true },
                { "https://api.internal.example.com", true },
                { "https://10.0.0.1:443", true },
                { "http://10.0.0.1:8080", false },
                { "http://api.internal.example.com", false },
                { "http://127.0.0.1.example.com", false },
                { "ftp://127.0.0.1", false },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                KubeClient *c = NULL;
                char *err = NULL;
                int r = kube_client_new(&(KubeClientConfig){ .server = cases[i].server }, &c, &err);
                if ((r >= 0) != cases[i].ok)
                        fail_msg("'%s': %d %s", cases[i].server, r, strnull(err));
                if (!cases[i].ok && startswith(cases[i].server, "http://"))
                        assert_non_null(strstr(err, "plain http is allowed only for a loopback host"));
                free(err);
                kube_client_free(c);
        }
}

/* A bearer token travels in each request's Authorization header and in no message; it is refused with a
 * client certificate or with a line break, without being shown. */
static void test_bearer_token(void **state) {
        static const char token[] = "abcdef.0123456789abcdef";
        char *v[1];
        size_t lens[1];
        Replay o;
        start_vectors(&o, (const char *const[]){ "kube/get-404.http" }, 1, false, v, lens);
        KubeClient *c = NULL;
        char *err = NULL;
        assert_int_equal(
            kube_client_new(&(KubeClientConfig){ .server = o.server, .bearer_token = token }, &c, NULL), 0);
        json_t *obj = NULL;
        assert_int_equal(kube_get(c, "v1", "ConfigMap", "default", "pk-missing", 0, &obj, &err), -ENOENT);
        assert_null(strstr(err, token));
        free(err);
        kube_client_free(c);
        _cleanup_free_ char *log = replay_stop(&o, NULL);
        assert_non_null(strstr(log, "Authorization: Bearer abcdef.0123456789abcdef\r\n"));
        free_vectors(v, 1);

        static const KubeClientConfig bad[] = {
                { .server = "https://10.0.0.1", .bearer_token = token, .cert_file = "c", .key_file = "k" },
                { .server = "https://10.0.0.1", .bearer_token = "abcdef.01234\r\nX: y" },
                { .server = "https://10.0.0.1", .bearer_token = "" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                err = NULL;
                c = NULL;
                assert_int_equal(kube_client_new(&bad[i], &c, &err), -EINVAL);
                assert_null(c);
                assert_null(strstr(err, "abcdef"));
                free(err);
        }
}

static int pred_exists(const json_t *obj, void *userdata, char **why) {
        (*(unsigned *)userdata)++;
        if (!obj)
                *why = strdup("not created yet");
        return obj ? 1 : 0;
}

/* The poll: absent (404), then there; and a condition never met ends at the deadline with its reason. A
 * list's path and escaped selector. */
static void test_poll_and_list(void **state) {
        const char *names[] = { "kube/get-404.http", "kube/synth-500-internal-error.http",
                                "kube/apply-200.http" };
        char *v[3];
        size_t lens[3];
        Replay o;
        start_vectors(&o, names, 3, false, v, lens);
        KubeClient *c = client_for(&o);
        kube_client_set_retry(c, &(KubeRetryPolicy){ .max_tries = 1 });
        json_t *obj = NULL;
        unsigned calls = 0;
        usec_t deadline = now(CLOCK_MONOTONIC) + 5 * USEC_PER_SEC;
        assert_int_equal(kube_poll(c, "v1", "ConfigMap", "default", "pk-rec", pred_exists, &calls,
                                   50 * USEC_PER_MSEC, deadline, &obj, NULL),
                         0);
        assert_int_equal(calls, 2); /* the 500 in between is tried again, not judged */
        assert_non_null(obj);
        json_decref(obj);
        size_t n;
        free(replay_stop(&o, &n));
        assert_int_equal(n, 3);
        kube_client_free(c);
        free_vectors(v, 3);

        const char *n404[] = { "kube/get-404.http" };
        start_vectors(&o, n404, 1, true, v, lens);
        c = client_for(&o);
        char *err = NULL;
        calls = 0;
        usec_t t0 = now(CLOCK_MONOTONIC);
        assert_int_equal(kube_poll(c, "v1", "ConfigMap", "default", "pk-rec", pred_exists, &calls,
                                   100 * USEC_PER_MSEC, t0 + 400 * USEC_PER_MSEC, &obj, &err),
                         PK_ETIMEOUT);
        assert_true(elapsed_since(t0) < 1500 * USEC_PER_MSEC);
        assert_true(calls >= 3 && calls <= 6);
        assert_string_equal(err,
                            "ConfigMap default/pk-rec: condition not met by the deadline: not created yet");
        free(err);
        err = NULL;
        assert_int_equal(kube_list(c, "v1", "ConfigMap", NULL, "a=b", 0, &obj, &err), -ENOENT);
        free(err);
        _cleanup_free_ char *log = replay_stop(&o, &n);
        assert_non_null(strstr(log, "GET /api/v1/configmaps?limit=500&labelSelector=a%3Db HTTP/1.1\r\n"));
        kube_client_free(c);
        free_vectors(v, 1);
}

static unsigned list_requests(const KubeFake *f, const char *path, const char *must_have,
                              unsigned *ret_continued) {
        json_t *reqs = kube_fake_requests(f), *r;
        size_t i;
        unsigned n = 0, continued = 0;
        json_array_foreach(reqs, i, r) {
                const char *q = json_string_value(json_object_get(r, "query"));
                if (!streq(json_string_value(json_object_get(r, "path")), path))
                        continue;
                n++;
                if (must_have && !strstr(q, must_have))
                        fail_msg("a page's query '%s' lacks '%s'", q, must_have);
                continued += !!strstr(q, "continue=");
        }
        json_decref(reqs);
        *ret_continued = continued;
        return n;
}

/* 5,000 pods of ~4 KiB: one answer would pass the 16 MiB response cap. kube_list() reads them in pages
 * (limit and continue, as kube-apiserver serves them) and returns them all, each once. */
static void test_list_pages_past_the_response_cap(void **state) {
        KubeFake f;
        kube_fake_start(&f);
        kube_fake_pods(&f, 5000, "kube-proxy-{i}", "w{i}", 4000, "{\"k8s-app\": \"kube-proxy\"}");
        KubeClient *c = kube_fake_client(&f);
        char *err = NULL;
        json_t *list = NULL;
        int r = kube_list(c, "v1", "Pod", "kube-system", NULL, 0, &list, &err);
        if (r < 0)
                fail_msg("kube_list: %d %s", r, strnull(err));
        json_t *items = json_object_get(list, "items"), *pod;
        assert_int_equal(json_array_size(items), 5000);
        size_t i;
        /* each pod once: the names are distinct */
        json_t *seen = json_object();
        json_array_foreach(items, i, pod) json_object_set_new(
            seen, json_string_value(json_object_get(json_object_get(pod, "metadata"), "name")), json_true());
        assert_int_equal(json_object_size(seen), 5000);
        json_decref(seen);
        assert_null(json_object_get(json_object_get(list, "metadata"), "continue"));
        json_decref(list);
        unsigned continued,
            pages = list_requests(&f, "/api/v1/namespaces/kube-system/pods", "limit=500", &continued);
        assert_int_equal(pages, 10);
        assert_int_equal(continued, 9);
        kube_client_free(c);
        kube_fake_stop(&f);
}

/* The selectors go with every page (the double refuses a continue token of another query), a token the
 * server let expire (410) starts the list again once, and the pages are bounded. */
static void test_list_selectors_and_bounds(void **state) {
        KubeFake f;
        kube_fake_start(&f);
        kube_fake_pods(&f, 250, "cni-{i}", "w{i}", 0, "{\"k8s-app\": \"cni\"}");
        kube_fake_pods(&f, 3, "kube-apiserver-{i}", "m1", 0,
                       "{\"k8s-app\": \"kube-apiserver\", \"tier\": \"control-plane\"}");
        KubeClient *c = kube_fake_client(&f);
        char *err = NULL;
        json_t *list = NULL;
        KubeListOptions o = { .label_selector = "k8s-app in (cni,kube-apiserver),tier!=control-plane",
                              .field_selector = "spec.nodeName!=w7",
                              .page_size = 20 };
        int r = kube_list_with(c, "v1", "Pod", "kube-system", &o, 0, &list, &err);
        if (r < 0)
                fail_msg("kube_list_with: %d %s", r, strnull(err));
        assert_int_equal(json_array_size(json_object_get(list, "items")), 249);
        json_decref(list);
        unsigned continued;
        assert_int_equal(list_requests(&f, "/api/v1/namespaces/kube-system/pods",
                                       "fieldSelector=spec.nodeName%21%3Dw7", &continued),
                         13);
        assert_int_equal(continued, 12);

        /* an expired token: the list starts again, and still has each pod once */
        kube_fake_post(&f, "/_fake/config", "{\"expire_continue\": true}");
        o = (KubeListOptions){ .label_selector = "k8s-app=cni", .page_size = 100 };
        r = kube_list_with(c, "v1", "Pod", "kube-system", &o, 0, &list, &err);
        if (r < 0)
                fail_msg("kube_list_with after 410: %d %s", r, strnull(err));
        assert_int_equal(json_array_size(json_object_get(list, "items")), 250);
        json_decref(list);

        /* more pages than allowed: an error that says so, no partial list */
        o = (KubeListOptions){ .label_selector = "k8s-app=cni", .page_size = 10, .max_pages = 5 };
        list = NULL;
        assert_int_equal(kube_list_with(c, "v1", "Pod", "kube-system", &o, 0, &list, &err), PK_ETOOBIG);
        assert_null(list);
        assert_string_equal(err, "Pod list in kube-system: more than 5 pages of 10 objects");
        free(err);
        err = NULL;

        /* a selector the server cannot parse: its 400, not retried */
        o = (KubeListOptions){ .label_selector = "k8s-app in (cni" };
        assert_int_equal(kube_list_with(c, "v1", "Pod", "kube-system", &o, 0, &list, &err), -EINVAL);
        assert_non_null(strstr(err, "400 BadRequest"));
        free(err);
        kube_client_free(c);
        kube_fake_stop(&f);
}

/* A jansson allocator that looks at every block handed back: how many still hold the marker. */
#define SECRET_MARKER "c2VjcmV0LW1hcmtlci0" /* base64 of "secret-marker-" */
static unsigned freed_blocks, marked_blocks;

static void *hook_malloc(size_t n) {
        return malloc(n);
}

static void hook_free(void *p) {
        if (!p)
                return;
        freed_blocks++;
        if (memmem(p, malloc_usable_size(p), SECRET_MARKER, strlen(SECRET_MARKER)))
                marked_blocks++;
        free(p);
}

static void hook_begin(void) {
        freed_blocks = marked_blocks = 0;
        json_set_alloc_funcs(hook_malloc, hook_free);
}

static void hook_end(void) {
        json_set_alloc_funcs(malloc, free);
}

/* A Secret's value, long enough that jansson's lexer grows its buffer (copy and free) many times. */
static char *secret_value(void) {
        char *v = malloc(4096);
        assert_non_null(v);
        memcpy(v, SECRET_MARKER, strlen(SECRET_MARKER));
        for (size_t i = strlen(SECRET_MARKER); i < 4000; i++)
                v[i] = (char)('A' + i % 26);
        v[4000] = 0;
        return v;
}

/* A Secret got from the API (a checkpoint's, the pivot's certificates) leaves no copy of its data in the
 * memory jansson hands back: not while parsing, not when the caller erases and drops it. The same text
 * parsed as any JSON does leave copies (the hook sees them): what the test looks for is there to find. */
static void test_secret_parse_leaves_no_copies(void **state) {
        _cleanup_free_ char *value = secret_value(), *text = NULL;
        text = strprintf("[{\"apiVersion\": \"v1\", \"kind\": \"Secret\", \"metadata\": {\"name\": \"pki\", "
                         "\"namespace\": \"kube-system\"}, \"data\": {\"tls.key\": \"%s\"}}]",
                         value);
        assert_non_null(text);

        hook_begin();
        json_t *plain = json_loads(text, 0, NULL);
        json_erase_values(plain);
        json_decref(plain);
        hook_end();
        assert_true(marked_blocks > 0); /* jansson's own lexer leaves them */

        KubeFake f;
        kube_fake_start(&f);
        kube_fake_objects(&f, text);
        KubeClient *c = kube_fake_client(&f);
        char *err = NULL;
        json_t *obj = NULL;

        hook_begin();
        int r = kube_get(c, "v1", "Secret", "kube-system", "pki", 0, &obj, &err);
        assert_int_equal(r, 0);
        assert_string_equal(json_string_value(json_object_get(json_object_get(obj, "data"), "tls.key")),
                            value);
        json_erase_values(obj);
        json_decref(obj);
        r = kube_list(c, "v1", "Secret", "kube-system", NULL, 0, &obj, &err);
        assert_int_equal(r, 0);
        assert_int_equal(json_array_size(json_object_get(obj, "items")), 1);
        json_erase_values(obj);
        json_decref(obj);
        hook_end();
        assert_true(freed_blocks > 0);
        if (marked_blocks > 0)
                fail_msg("%u of %u blocks jansson freed still held the Secret's value", marked_blocks,
                         freed_blocks);

        /* the erasing free is jansson's only while a secret is parsed */
        json_malloc_t m;
        json_free_t fr;
        json_get_alloc_funcs(&m, &fr);
        assert_true(fr == free);
        kube_client_free(c);
        kube_fake_stop(&f);
}

/* Not ready (etcd down, recorded), then ready; and never ready: the deadline, with the failing check. */
static void test_wait_probe(void **state) {
        const char *names[] = { "kube/readyz-500.http", "kube/readyz-200.http" };
        char *v[2];
        size_t lens[2];
        Replay o;
        start_vectors(&o, names, 2, false, v, lens);
        KubeClient *c = client_for(&o);
        char *err = NULL;
        usec_t t0 = now(CLOCK_MONOTONIC);
        assert_int_equal(kube_wait_probe(c, "readyz", 50 * USEC_PER_MSEC, t0 + 5 * USEC_PER_SEC, NULL), 0);
        size_t n;
        free(replay_stop(&o, &n));
        assert_int_equal(n, 2);
        kube_client_free(c);
        free_vectors(v, 2);

        const char *n500[] = { "kube/readyz-500.http" };
        start_vectors(&o, n500, 1, true, v, lens);
        c = client_for(&o);
        t0 = now(CLOCK_MONOTONIC);
        assert_int_equal(kube_wait_probe(c, "readyz", 100 * USEC_PER_MSEC, t0 + 300 * USEC_PER_MSEC, &err),
                         PK_ETIMEOUT);
        assert_true(elapsed_since(t0) < 1500 * USEC_PER_MSEC);
        assert_string_equal(err, "not ready by the deadline: /readyz: 500: [-]etcd failed: reason withheld");
        free(err);
        free(replay_stop(&o, NULL));
        kube_client_free(c);
        free_vectors(v, 1);
}

static void test_resources(void **state) {
        const KubeResource *res;
        char *p = NULL, *err = NULL;
        assert_int_equal(kube_resource_find("rbac.authorization.k8s.io/v1", "ClusterRole", &res, NULL), 0);
        assert_int_equal(kube_resource_path(res, NULL, "system:protokube", &p, NULL), 0);
        assert_string_equal(p, "/apis/rbac.authorization.k8s.io/v1/clusterroles/system:protokube");
        free(p);
        assert_int_equal(kube_resource_find("apps/v1", "DaemonSet", &res, NULL), 0);
        assert_int_equal(kube_resource_path(res, "kube-system", NULL, &p, NULL), 0);
        assert_string_equal(p, "/apis/apps/v1/namespaces/kube-system/daemonsets");
        free(p);
        assert_int_equal(kube_resource_path(res, "kube-system", "../../x", &p, &err), -EINVAL);
        assert_non_null(strstr(err, "DaemonSet '../../x' is not valid: want a DNS-1123 subdomain"));
        free(err);
        err = NULL;
        assert_int_equal(kube_resource_path(res, NULL, "x", &p, &err), -EINVAL);
        free(err);
        err = NULL;
        assert_int_equal(kube_resource_find("v1", "Frobnicator", &res, &err), -EINVAL);
        assert_true(startswith(err, "unknown kind 'Frobnicator' (apiVersion 'v1')"));
        free(err);
        err = NULL;
        assert_int_equal(kube_resource_find("extensions/v1beta1", "DaemonSet", &res, &err), -EINVAL);
        assert_string_equal(err, "kind 'DaemonSet' is not served as apiVersion 'extensions/v1beta1' here");
        free(err);
        _cleanup_free_ char *q = kube_query_escape("tier=control-plane,k8s-app in (a b)");
        assert_string_equal(q, "tier%3Dcontrol-plane%2Ck8s-app%20in%20%28a%20b%29");
}

static void test_documents(void **state) {
        /* kubectl's separator: "---" and blanks only ("----" and "--- x" are content) */
        const char text[] = "---\na: 1\n---\n\n---  \r\nb: 2\n----\n--- x\nc: 3";
        const char *doc;
        size_t pos = 0, len;
        const char *want[] = { "", "a: 1\n", "\n", "b: 2\n----\n--- x\nc: 3" };
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                assert_true(kube_next_document(text, strlen(text), &pos, &doc, &len));
                assert_int_equal(len, strlen(want[i]));
                assert_memory_equal(doc, want[i], len);
        }
        assert_false(kube_next_document(text, strlen(text), &pos, &doc, &len));

        KubeDocIdentity id = {};
        char *err = NULL;
        const char js[] =
            "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"kube-system\"}}";
        assert_int_equal(kube_doc_identity(js, strlen(js), &id, NULL), 0);
        assert_string_equal(id.kind, "Namespace");
        assert_null(id.ns);
        kube_doc_identity_done(&id);
        const char nokind[] = "apiVersion: v1\nmetadata:\n  name: x\n";
        assert_int_equal(kube_doc_identity(nokind, strlen(nokind), &id, &err), -EINVAL);
        assert_string_equal(err, "missing 'kind'");
        free(err);
}

static void test_kubeconfig(void **state) {
        char dir[] = "/tmp/pk-kube-kc-XXXXXX", path[128];
        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/kubeconfig", dir);
        PkiKubeconfig kc = { .cluster = "demo",
                             .server = "https://127.0.0.1:443",
                             .user = "protokube",
                             .ca_file = "/srv/kubernetes/protokube/ca.crt",
                             .cert_file = "/srv/kubernetes/protokube/client.crt",
                             .key_file = "/srv/kubernetes/protokube/client.key" };
        assert_int_equal(pki_kubeconfig_write(path, &kc, NULL), 0);
        KubeClient *c = NULL;
        char *err = NULL;
        assert_int_equal(kube_client_new_from_kubeconfig(path, &c, NULL), 0);
        assert_string_equal(kube_client_server(c), "https://127.0.0.1:443");
        assert_string_equal(c->ca_file, "/srv/kubernetes/protokube/ca.crt");
        assert_string_equal(c->key_file, "/srv/kubernetes/protokube/client.key");
        kube_client_free(c);
        /* embedded credentials are refused, naming the field */
        PkiKubeconfig emb = { .cluster = "demo",
                              .server = "https://h",
                              .user = "u",
                              .ca_pem = "A",
                              .cert_pem = "B",
                              .key_pem = "C" };
        assert_int_equal(pki_kubeconfig_write(path, &emb, NULL), 0);
        assert_int_equal(kube_client_new_from_kubeconfig(path, &c, &err), -EINVAL);
        assert_non_null(strstr(err, "'certificate-authority-data' is not supported"));
        free(err);
        unlink(path);
        rmdir(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_404),
                cmocka_unit_test(test_403_and_409),
                cmocka_unit_test(test_status_parsing),
                cmocka_unit_test(test_apply_shape_and_422),
                cmocka_unit_test(test_429_retry_after_then_200),
                cmocka_unit_test(test_secret_apply_drops_data),
                cmocka_unit_test(test_merge_patch),
                cmocka_unit_test(test_create_and_replace),
                cmocka_unit_test(test_500_then_200),
                cmocka_unit_test(test_deadline_ends_retries),
                cmocka_unit_test(test_stop_ends_wait),
                cmocka_unit_test(test_probe),
                cmocka_unit_test(test_connect_to),
                cmocka_unit_test(test_plain_http_only_on_loopback),
                cmocka_unit_test(test_bearer_token),
                cmocka_unit_test(test_poll_and_list),
                cmocka_unit_test(test_list_pages_past_the_response_cap),
                cmocka_unit_test(test_list_selectors_and_bounds),
                cmocka_unit_test(test_secret_parse_leaves_no_copies),
                cmocka_unit_test(test_wait_probe),
                cmocka_unit_test(test_resources),
                cmocka_unit_test(test_documents),
                cmocka_unit_test(test_kubeconfig),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
