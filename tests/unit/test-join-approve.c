/* SPDX-License-Identifier: Apache-2.0 */
/* The approver's decision (join/join-approve.h) rule by rule, over CSR objects shaped as the API returns
 * them (certificates.k8s.io/v1, spec.request base64 PEM): the client signer's approvals (a bootstrap of a
 * new node, a retry from the same machine, a renewal, a released name) and every refusal (requester,
 * subject, SANs, usages, key, request, name bound to another machine, a Node without a binding, a binding
 * that does not read, a name that is no machine of the cloud); the serving signer's (the node itself, every
 * SAN one of its Node's addresses); what is not protokube's to decide; the bindings to adopt; and a
 * binding's ConfigMap both ways. Real kubelet requests (Go's encoder) are among them. */
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "join/join-approve.h"
#include "shared/crypto.h"
#include "shared/json-util.h"
#include "shared/openssl-util.h"
#include "unit-test.h"
#include "vectors.h"

#define T0         (1767225600ULL * USEC_PER_SEC) /* 2026-01-01T00:00:00Z */
#define TOKEN_USER "system:bootstrap:abcdef"
#define V(...)     ((char *const[]){ __VA_ARGS__, NULL })

static const char *const KUBELET_CLIENT_USAGES[] = { "digital signature", "key encipherment", "client auth",
                                                     NULL };
static const char *const KUBELET_SERVING_USAGES[] = { "digital signature", "key encipherment", "server auth",
                                                      NULL };
static const char *const TOKEN_GROUPS[] = { "system:bootstrappers",
                                            "system:bootstrappers:protokube:default-node-token",
                                            "system:authenticated", NULL };
static const char *const NODE_GROUPS[] = { "system:nodes", "system:authenticated", NULL };

typedef struct Req {
        const char *signer;         /* NULL: the client signer */
        const char *const *usages;  /* NULL: kubelet's for the signer */
        const char *username;       /* NULL: a bootstrap token */
        const char *const *groups;  /* NULL: a bootstrap token's, or a node's for system:node:* */
        const char *pem;            /* the request */
        const char *request_base64; /* instead of pem: spec.request as written */
        const char *condition;      /* "Approved", "Denied", "Failed" or NULL */
} Req;

static json_t *strings(const char *const *l) {
        json_t *a = json_array();
        for (; l && *l; l++)
                json_array_append_new(a, json_string(*l));
        return a;
}

static JoinCsr *csr_of(const Req *q) {
        const char *signer = q->signer ?: JOIN_SIGNER_CLIENT;
        const char *user = q->username ?: TOKEN_USER;
        const char *const *usages = q->usages
                                        ?: streq(signer, JOIN_SIGNER_SERVING) ? KUBELET_SERVING_USAGES
                                                                              : KUBELET_CLIENT_USAGES;
        const char *const *groups = q->groups
                                        ?: startswith(user, "system:node:") ? NODE_GROUPS
                                                                            : TOKEN_GROUPS;
        char *b64 = NULL;
        if (q->pem)
                assert_int_equal(crypto_base64_encode(q->pem, strlen(q->pem), &b64), 0);
        json_t *o = json_pack("{s:s,s:s,s:{s:s,s:s,s:s,s:s},s:{s:s,s:s?,s:o,s:o,s:s}}", "apiVersion",
                              "certificates.k8s.io/v1", "kind", "CertificateSigningRequest", "metadata",
                              "name", "csr-1", "uid", "uid-1", "resourceVersion", "100", "creationTimestamp",
                              "2026-01-01T00:00:00Z", "spec", "signerName", signer, "request",
                              q->request_base64 ?: b64, "usages", strings(usages), "groups", strings(groups),
                              "username", user);
        free(b64);
        assert_non_null(o);
        if (q->condition)
                json_object_set_new(
                    o, "status",
                    json_pack("{s:[{s:s,s:s}]}", "conditions", "type", q->condition, "status", "True"));
        JoinCsr *c = NULL;
        assert_int_equal(join_csr_from_json(o, &c, NULL), 0);
        json_decref(o);
        return c;
}

static EVP_PKEY *key(PkiKeyType t) {
        EVP_PKEY *k = NULL;
        assert_int_equal(pki_key_generate(t, &k), 0);
        return k;
}

/* A request of key for cn / org with SANs (NULL-terminated, may be NULL). Caller frees. */
static char *request(EVP_PKEY *k, const char *cn, const char *org, char *const *dns, char *const *ips,
                     char *const *emails) {
        char *pem = NULL;
        assert_int_equal(pki_csr_create(k, cn, org, dns, ips, emails, &pem), 0);
        return pem;
}

static char *node_request(EVP_PKEY *k, const char *node) {
        _cleanup_free_ char *cn = strjoin("system:node:", node);
        return request(k, cn, "system:nodes", NULL, NULL, NULL);
}

static JoinDecision decide(const JoinCsr *c, const JoinCluster *cl) {
        JoinDecision d = {};
        assert_int_equal(join_csr_decide(c, cl, &d), 0);
        assert_non_null(d.reason);
        return d;
}

/* The decision is v, its reason says why (contains each of the NULL-terminated words). */
static void expect(const Req *q, const JoinCluster *cl, JoinVerdict v, const char *why) {
        JoinCsr *c = csr_of(q);
        JoinDecision d = decide(c, cl);
        if (d.verdict != v || !strstr(d.reason, why)) {
                print_error("wanted %s '%s', got %s '%s'\n", join_verdict_to_string(v), why,
                            join_verdict_to_string(d.verdict), d.reason);
                join_decision_done(&d);
                join_csr_free(c);
                fail();
        }
        if (v != JOIN_VERDICT_APPROVE)
                assert_int_equal(d.bind, JOIN_BIND_NONE);
        join_decision_done(&d);
        join_csr_free(c);
}

static const JoinCluster EMPTY = {};

static char *key_machine(EVP_PKEY *k) {
        _cleanup_free_ char *pem = node_request(k, "w1");
        _cleanup_(pki_csr_freep) PkiCsr *q = NULL;
        char hex[65];
        assert_int_equal(pki_csr_parse(pem, strlen(pem), &q, NULL), 0);
        crypto_hex(q->spki_sha256, 32, hex);
        return strjoin("key:sha256:", hex);
}

static void test_bootstrap_new_node(void **state) {
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *k = key(PKI_KEY_ECDSA_P256);
        _cleanup_free_ char *pem = node_request(k, "w1"), *machine = key_machine(k);
        JoinCsr *c = csr_of(&(Req){ .pem = pem });
        JoinDecision d = decide(c, &EMPTY);
        assert_int_equal(d.verdict, JOIN_VERDICT_APPROVE);
        assert_int_equal(d.bind, JOIN_BIND_CREATE);
        assert_string_equal(d.node, "w1");
        assert_string_equal(d.machine, machine);
        assert_non_null(strstr(d.reason, "new node w1"));
        join_decision_done(&d);
        join_csr_free(c);
}

/* kubelet 1.20's own request bytes (Go's encoder), as it asks with a bootstrap token */
static void test_kubelet_request(void **state) {
        const char *names[] = { "csr/go-kubelet-client.pem", "csr/go-kubelet-serving.pem" };
        char *v[2];
        size_t len[2];
        vectors_read(names, 2, v, len);
        expect(&(Req){ .pem = v[0] }, &EMPTY, JOIN_VERDICT_APPROVE, "new node w1");
        JoinNode n = { .name = "w1", .uid = "n-1", .addresses = V("10.99.1.11", "fd00::11", "w1") };
        JoinCluster cl = { .nodes = &n, .n_nodes = 1 };
        expect(&(Req){ .signer = JOIN_SIGNER_SERVING, .username = "system:node:w1", .pem = v[1] }, &cl,
               JOIN_VERDICT_APPROVE, "serving certificate of node w1");
        free(v[0]);
        free(v[1]);
}

static void test_requester(void **state) {
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *k = key(PKI_KEY_ECDSA_P256);
        _cleanup_free_ char *pem = node_request(k, "w1");
        /* the node itself: a renewal, no binding needed */
        JoinCsr *c = csr_of(&(Req){ .pem = pem, .username = "system:node:w1" });
        JoinDecision d = decide(c, &EMPTY);
        assert_int_equal(d.verdict, JOIN_VERDICT_APPROVE);
        assert_int_equal(d.bind, JOIN_BIND_NONE);
        assert_null(d.machine);
        assert_non_null(strstr(d.reason, "renewal by node w1 itself"));
        join_decision_done(&d);
        join_csr_free(c);

        expect(
            &(Req){ .pem = pem, .username = "system:node:w2" }, &EMPTY, JOIN_VERDICT_REFUSE,
            "requester 'system:node:w2' (groups system:nodes,system:authenticated) is neither a bootstrap "
            "token nor node w1 itself");
        expect(&(Req){ .pem = pem,
                       .username = "kubernetes-admin",
                       .groups = (const char *const[]){ "system:masters", NULL } },
               &EMPTY, JOIN_VERDICT_REFUSE, "requester 'kubernetes-admin' (groups system:masters)");
        /* a node's name without the group, a token's without system:bootstrappers, a bad token id */
        expect(&(Req){ .pem = pem,
                       .username = "system:node:w1",
                       .groups = (const char *const[]){ "system:authenticated", NULL } },
               &EMPTY, JOIN_VERDICT_REFUSE, "neither a bootstrap token nor node w1 itself");
        expect(&(Req){ .pem = pem, .groups = (const char *const[]){ "system:authenticated", NULL } }, &EMPTY,
               JOIN_VERDICT_REFUSE, "neither a bootstrap token");
        expect(&(Req){ .pem = pem, .username = "system:bootstrap:ABCDEF" }, &EMPTY, JOIN_VERDICT_REFUSE,
               "neither a bootstrap token");
}

static void test_subject(void **state) {
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *k = key(PKI_KEY_ECDSA_P256);
        const struct {
                const char *cn, *org, *why;
        } cases[] = {
                { "w1", "system:nodes", "CN must be system:node:<name>, once (it is 'w1')" },
                { NULL, "system:nodes", "CN must be system:node:<name>, once (it is 'n/a')" },
                { "system:node:w1", NULL, "O must be exactly system:nodes" },
                { "system:node:w1", "system:masters", "O must be exactly system:nodes" },
                { "system:node:W1", "system:nodes", "'W1' is not a node name" },
                { "system:node:", "system:nodes", "'' is not a node name" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *pem = request(k, cases[i].cn, cases[i].org, NULL, NULL, NULL);
                expect(&(Req){ .pem = pem }, &EMPTY, JOIN_VERDICT_REFUSE, cases[i].why);
        }
        /* at most 52 characters: 64 with "system:node:" */
        _cleanup_free_ char *pem = node_request(k, "a-name-of-fifty-two-characters-is-the-longest-allowe");
        expect(&(Req){ .pem = pem }, &EMPTY, JOIN_VERDICT_APPROVE, "new node");

        const char *names[] = { "csr/openssl-ou.pem", "csr/openssl-two-cn.pem", "csr/go-long-name.pem" };
        char *v[3];
        size_t len[3];
        vectors_read(names, 3, v, len);
        expect(&(Req){ .pem = v[2] }, &EMPTY, JOIN_VERDICT_REFUSE,
               "is not a node name of at most 52 characters");
        free(v[2]);
        expect(&(Req){ .pem = v[0] }, &EMPTY, JOIN_VERDICT_REFUSE, "1 attributes besides CN and O");
        expect(&(Req){ .pem = v[1] }, &EMPTY, JOIN_VERDICT_REFUSE, "CN must be system:node:<name>, once");
        free(v[0]);
        free(v[1]);
}

static void test_client_sans(void **state) {
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *k = key(PKI_KEY_ECDSA_P256);
        _cleanup_free_ char *dns = request(k, "system:node:w1", "system:nodes", V("w1"), NULL, NULL),
                            *ip = request(k, "system:node:w1", "system:nodes", NULL, V("10.0.0.1"), NULL),
                            *email = request(k, "system:node:w1", "system:nodes", NULL, NULL, V("a@b.c"));
        expect(&(Req){ .pem = dns }, &EMPTY, JOIN_VERDICT_REFUSE, "a client certificate names no SAN");
        expect(&(Req){ .pem = ip }, &EMPTY, JOIN_VERDICT_REFUSE, "a client certificate names no SAN");
        expect(&(Req){ .pem = email }, &EMPTY, JOIN_VERDICT_REFUSE, "names no SAN (this request has 1)");
        /* a renewal is held to the same shape */
        expect(&(Req){ .pem = dns, .username = "system:node:w1" }, &EMPTY, JOIN_VERDICT_REFUSE, "no SAN");
}

static void test_usages(void **state) {
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *k = key(PKI_KEY_ECDSA_P256);
        _cleanup_free_ char *pem = node_request(k, "w1");
        expect(&(Req){ .pem = pem, .usages = (const char *const[]){ "client auth", NULL } }, &EMPTY,
               JOIN_VERDICT_APPROVE, "new node");
        expect(&(Req){ .pem = pem,
                       .usages = (const char *const[]){ "digital signature", "key encipherment", NULL } },
               &EMPTY, JOIN_VERDICT_REFUSE, "the usages lack 'client auth'");
        expect(&(Req){ .pem = pem, .usages = (const char *const[]){ "client auth", "server auth", NULL } },
               &EMPTY, JOIN_VERDICT_REFUSE, "usage 'server auth' is not one of 'client auth'");
        expect(&(Req){ .pem = pem, .usages = (const char *const[]){ "client auth", "cert sign", NULL } },
               &EMPTY, JOIN_VERDICT_REFUSE, "usage 'cert sign' is not one of");
        expect(&(Req){ .pem = pem, .usages = (const char *const[]){ "client auth", "client auth", NULL } },
               &EMPTY, JOIN_VERDICT_REFUSE, "usage 'client auth' is asked twice");
        expect(&(Req){ .pem = pem, .usages = (const char *const[]){ NULL } }, &EMPTY, JOIN_VERDICT_REFUSE,
               "lack 'client auth'");
}

static void test_key_and_request(void **state) {
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *rsa = key(PKI_KEY_RSA_2048);
        _cleanup_free_ char *pem = node_request(rsa, "w1");
        expect(&(Req){ .pem = pem }, &EMPTY, JOIN_VERDICT_APPROVE, "new node w1");

        const char *names[] = { "csr/openssl-p384.pem", "csr/openssl-ed25519.pem", "csr/bad-signature.pem" };
        char *v[3];
        size_t len[3];
        vectors_read(names, 3, v, len);
        expect(&(Req){ .pem = v[0] }, &EMPTY, JOIN_VERDICT_REFUSE,
               "its EC key is not one protokube signs (ECDSA P-256, RSA 2048)");
        expect(&(Req){ .pem = v[1] }, &EMPTY, JOIN_VERDICT_REFUSE,
               "its ED25519 key is not one protokube signs");
        expect(&(Req){ .pem = v[2] }, &EMPTY, JOIN_VERDICT_REFUSE,
               "its signature does not verify with its own public key");
        for (size_t i = 0; i < 3; i++)
                free(v[i]);
        expect(&(Req){ .request_base64 = "!!" }, &EMPTY, JOIN_VERDICT_REFUSE, "spec.request is not base64");
        expect(&(Req){ .request_base64 = "bm90IGEgcmVxdWVzdA==" }, &EMPTY, JOIN_VERDICT_REFUSE,
               "no PEM block 'CERTIFICATE REQUEST'");
        expect(&(Req){}, &EMPTY, JOIN_VERDICT_REFUSE, "spec.request is absent");
}

static void test_not_ours(void **state) {
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *k = key(PKI_KEY_ECDSA_P256);
        _cleanup_free_ char *pem = node_request(k, "w1");
        expect(&(Req){ .pem = pem, .signer = "kubernetes.io/kube-apiserver-client" }, &EMPTY,
               JOIN_VERDICT_IGNORE, "signer kubernetes.io/kube-apiserver-client is not protokube's");
        expect(&(Req){ .pem = pem, .signer = "example.com/mine" }, &EMPTY, JOIN_VERDICT_IGNORE,
               "not protokube's");
        expect(&(Req){ .pem = pem, .condition = "Approved" }, &EMPTY, JOIN_VERDICT_IGNORE,
               "approved already");
        expect(&(Req){ .pem = pem, .condition = "Denied" }, &EMPTY, JOIN_VERDICT_IGNORE, "denied already");
        expect(&(Req){ .pem = pem, .condition = "Failed" }, &EMPTY, JOIN_VERDICT_IGNORE, "failed already");
}

static JoinBinding binding(const char *node, const char *machine, const char *node_uid) {
        return (JoinBinding){ .node = (char *)node,
                              .machine = (char *)machine,
                              .csr = (char *)"csr-0",
                              .since = T0,
                              .node_uid = (char *)node_uid,
                              .resource_version = (char *)"7" };
}

static void test_binding_rules(void **state) {
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *k = key(PKI_KEY_ECDSA_P256);
        _cleanup_free_ char *pem = node_request(k, "w1"), *mine = key_machine(k);
        JoinNode n = { .name = "w1", .uid = "n-1" };

        /* the same machine again (a kubelet restarted before it had its certificate) */
        JoinBinding b = binding("w1", mine, NULL);
        JoinCluster cl = { .bindings = &b, .n_bindings = 1 };
        expect(&(Req){ .pem = pem }, &cl, JOIN_VERDICT_APPROVE, "node w1 asks again from its machine");
        cl.nodes = &n;
        cl.n_nodes = 1;
        expect(&(Req){ .pem = pem }, &cl, JOIN_VERDICT_APPROVE, "asks again from its machine");

        /* another machine while the Node exists */
        b = binding("w1", "key:sha256:00", "n-1");
        expect(&(Req){ .pem = pem }, &cl, JOIN_VERDICT_REFUSE,
               "node name w1 is bound to machine key:sha256:00 (since 2026-01-01T00:00:00Z), not to "
               "key:sha256:");
        expect(&(Req){ .pem = pem }, &cl, JOIN_VERDICT_REFUSE, "only once Node w1 is deleted");

        /* another machine, and the bound one never registered its Node */
        b = binding("w1", "key:sha256:00", NULL);
        cl.n_nodes = 0;
        expect(&(Req){ .pem = pem }, &cl, JOIN_VERDICT_REFUSE,
               "which has not registered its Node yet: if that machine is gone, delete ConfigMap "
               "kube-system/protokube-node-w1 to free the name");

        /* released: the Node registered (the binding's owner) and was deleted */
        b = binding("w1", "key:sha256:00", "n-1");
        JoinCsr *c = csr_of(&(Req){ .pem = pem });
        JoinDecision d = decide(c, &cl);
        assert_int_equal(d.verdict, JOIN_VERDICT_APPROVE);
        assert_int_equal(d.bind, JOIN_BIND_REPLACE);
        assert_ptr_equal(d.replaced, &b);
        assert_string_equal(d.machine, mine);
        assert_non_null(
            strstr(d.reason, "its Node was deleted, the name passes from machine key:sha256:00"));
        join_decision_done(&d);
        join_csr_free(c);

        /* a Node without a binding (bindings lost, or nodes from before them) is not taken over */
        cl = (JoinCluster){ .nodes = &n, .n_nodes = 1 };
        expect(&(Req){ .pem = pem }, &cl, JOIN_VERDICT_REFUSE,
               "Node w1 exists and no machine is bound to its name");
        /* ... but the node itself renews */
        expect(&(Req){ .pem = pem, .username = "system:node:w1" }, &cl, JOIN_VERDICT_APPROVE, "renewal");

        /* a binding that does not read blocks its name, for everyone */
        b = (JoinBinding){ .node = (char *)"w1", .invalid = (char *)"data.since is not an RFC 3339 time" };
        cl = (JoinCluster){ .bindings = &b, .n_bindings = 1 };
        expect(&(Req){ .pem = pem }, &cl, JOIN_VERDICT_REFUSE,
               "the binding of node name w1 does not read: data.since");
        expect(&(Req){ .pem = pem, .username = "system:node:w1" }, &cl, JOIN_VERDICT_REFUSE,
               "does not read");
        /* another name's binding is not this one's */
        b = binding("w2", "key:sha256:00", NULL);
        expect(&(Req){ .pem = pem }, &cl, JOIN_VERDICT_APPROVE, "new node w1");
}

static void test_machines(void **state) {
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *k = key(PKI_KEY_ECDSA_P256);
        _cleanup_free_ char *pem = node_request(k, "w1");
        JoinMachine m[] = { { "i-0aaa", "w0" }, { "i-0bbb", "w1" } };
        JoinCluster cl = { .machines_known = true, .machines = m, .n_machines = 2 };

        JoinCsr *c = csr_of(&(Req){ .pem = pem });
        JoinDecision d = decide(c, &cl);
        assert_int_equal(d.verdict, JOIN_VERDICT_APPROVE);
        assert_int_equal(d.bind, JOIN_BIND_CREATE);
        assert_string_equal(d.machine, "i-0bbb"); /* the instance, not the key */
        join_decision_done(&d);
        join_csr_free(c);

        /* no machine of that name: refused for a bootstrap and a renewal alike */
        m[1].node_name = "w9";
        expect(&(Req){ .pem = pem }, &cl, JOIN_VERDICT_REFUSE,
               "w1 is not the node name of a machine of this cluster");
        expect(&(Req){ .pem = pem, .username = "system:node:w1" }, &cl, JOIN_VERDICT_REFUSE,
               "not the node name of a machine");

        /* the name moved to a new instance (an address reused): the old binding holds while its Node does */
        m[1].node_name = "w1";
        JoinBinding b = binding("w1", "i-0old", "n-1");
        JoinNode n = { .name = "w1", .uid = "n-1" };
        cl.bindings = &b;
        cl.n_bindings = 1;
        cl.nodes = &n;
        cl.n_nodes = 1;
        expect(&(Req){ .pem = pem }, &cl, JOIN_VERDICT_REFUSE, "bound to machine i-0old");
        expect(&(Req){ .pem = pem, .username = "system:node:w1" }, &cl, JOIN_VERDICT_REFUSE,
               "bound to machine i-0old (since 2026-01-01T00:00:00Z), not to i-0bbb");
        /* ... and passes once the Node is deleted */
        cl.n_nodes = 0;
        expect(&(Req){ .pem = pem }, &cl, JOIN_VERDICT_APPROVE, "passes from machine i-0old to i-0bbb");
        /* the bound instance renews */
        b.machine = (char *)"i-0bbb";
        expect(&(Req){ .pem = pem, .username = "system:node:w1" }, &cl, JOIN_VERDICT_APPROVE, "renewal");
}

static char *serving_request(EVP_PKEY *k, char *const *dns, char *const *ips) {
        return request(k, "system:node:w1", "system:nodes", dns, ips, NULL);
}

static Req serving(const char *pem) {
        return (Req){ .signer = JOIN_SIGNER_SERVING, .username = "system:node:w1", .pem = pem };
}

static void test_serving(void **state) {
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *k = key(PKI_KEY_ECDSA_P256);
        JoinNode n = { .name = "w1", .uid = "n-1", .addresses = V("10.99.1.11", "W1", "fd00:0:0::11") };
        JoinCluster cl = { .nodes = &n, .n_nodes = 1 };
        _cleanup_free_ char *ok = serving_request(k, V("w1"), V("10.99.1.11", "fd00::11")),
                            *foreign_ip = serving_request(k, V("w1"), V("10.99.1.99")),
                            *foreign_dns = serving_request(k, V("w1", "api.example.com"), NULL),
                            *none = serving_request(k, NULL, NULL),
                            *upper = serving_request(k, V("W1"), NULL),
                            *email = request(k, "system:node:w1", "system:nodes", V("w1"), NULL, V("a@b.c"));
        Req q = serving(ok);
        /* canonical IPv6, DNS names without regard to case */
        expect(&q, &cl, JOIN_VERDICT_APPROVE, "serving certificate of node w1 for its own addresses");
        q = serving(foreign_ip);
        expect(&q, &cl, JOIN_VERDICT_REFUSE,
               "SAN 10.99.1.99 is not one of Node w1's addresses (10.99.1.11, W1, fd00:0:0::11)");
        q = serving(foreign_dns);
        expect(&q, &cl, JOIN_VERDICT_REFUSE, "SAN api.example.com is not one of Node w1's addresses");
        q = serving(none);
        expect(&q, &cl, JOIN_VERDICT_REFUSE, "names at least one DNS name or IP address");
        q = serving(upper);
        expect(&q, &cl, JOIN_VERDICT_REFUSE, "SAN 'W1' is not a lowercase RFC 1123 host name");
        q = serving(email);
        expect(&q, &cl, JOIN_VERDICT_REFUSE, "names only DNS names and IP addresses");
        q = serving(ok);
        q.usages = KUBELET_CLIENT_USAGES;
        expect(&q, &cl, JOIN_VERDICT_REFUSE, "usage 'client auth' is not one of 'server auth'");
        q.usages = (const char *const[]){ "digital signature", NULL };
        expect(&q, &cl, JOIN_VERDICT_REFUSE, "the usages lack 'server auth'");

        /* only the node itself */
        q = serving(ok);
        q.username = TOKEN_USER;
        expect(&q, &cl, JOIN_VERDICT_REFUSE,
               "approved only for the node itself: requester 'system:bootstrap:abcdef'");
        q.username = "system:node:w2";
        expect(&q, &cl, JOIN_VERDICT_REFUSE, "is not system:node:w1 in system:nodes");
        /* its addresses come from its Node */
        q = serving(ok);
        expect(&q, &EMPTY, JOIN_VERDICT_REFUSE, "Node w1 does not exist");
        n.addresses = NULL;
        expect(&q, &cl, JOIN_VERDICT_REFUSE, "is not one of Node w1's addresses (none)");
}

static void test_adopt(void **state) {
        JoinBinding b[] = { binding("w1", "m1", NULL),
                            binding("w2", "m2", "n-2"),
                            binding("w3", "m3", "old"),
                            binding("w4", "m4", NULL),
                            { .node = (char *)"w5", .invalid = (char *)"bad" } };
        JoinNode n[] = { { .name = "w5", .uid = "n-5" },
                         { .name = "w3", .uid = "n-3" },
                         { .name = "w2", .uid = "n-2" },
                         { .name = "w1", .uid = "n-1" } };
        JoinCluster cl = { .bindings = b, .n_bindings = 5, .nodes = n, .n_nodes = 4 };
        size_t *l = NULL, *nodes = NULL, count = 0;
        assert_int_equal(join_bindings_to_adopt(&cl, &l, &nodes, &count), 0);
        /* w1: its Node registered; w3: a Node registered again; not w2 (adopted), w4 (no Node), w5 (bad) */
        assert_int_equal(count, 2);
        assert_int_equal(l[0], 0);
        assert_int_equal(nodes[0], 3);
        assert_int_equal(l[1], 2);
        assert_int_equal(nodes[1], 1);
        free(l);
        free(nodes);
}

static void test_binding_json(void **state) {
        JoinBinding b = binding("w1", "key:sha256:ab", "n-1"), back = {};
        json_t *cm = NULL;
        char *err = NULL;
        assert_int_equal(join_binding_to_json(&b, &cm), 0);
        assert_string_equal(json_get_string(cm, "metadata", "name"), "protokube-node-w1");
        assert_string_equal(json_get_string(cm, "metadata", "namespace"), "kube-system");
        assert_string_equal(json_get_string(cm, "metadata", "labels", "protokube.io/node-binding"), "true");
        assert_string_equal(json_get_string(cm, "metadata", "resourceVersion"), "7");
        assert_string_equal(json_get_string(cm, "data", "since"), "2026-01-01T00:00:00Z");
        const json_t *owner = json_array_get(json_get(cm, "metadata", "ownerReferences"), 0);
        assert_string_equal(json_get_string(owner, "kind"), "Node");
        assert_string_equal(json_get_string(owner, "name"), "w1");
        assert_string_equal(json_get_string(owner, "uid"), "n-1");
        assert_int_equal(join_binding_from_json(cm, &back, NULL), 0);
        assert_string_equal(back.node, "w1");
        assert_string_equal(back.machine, "key:sha256:ab");
        assert_string_equal(back.csr, "csr-0");
        assert_string_equal(back.node_uid, "n-1");
        assert_int_equal(back.since, T0);
        join_binding_done(&back);

        /* refusals name the ConfigMap */
        json_object_set_new(json_object_get(cm, "data"), "node", json_string("w2"));
        assert_int_equal(join_binding_from_json(cm, &back, &err), -EINVAL);
        assert_non_null(strstr(err, "ConfigMap kube-system/protokube-node-w1: data.node"));
        free(err);
        err = NULL;
        json_object_set_new(json_object_get(cm, "data"), "node", json_string("w1"));
        json_object_del(json_object_get(cm, "data"), "machine");
        assert_int_equal(join_binding_from_json(cm, &back, &err), -EINVAL);
        assert_non_null(strstr(err, "data.machine"));
        free(err);
        err = NULL;
        json_object_set_new(json_object_get(cm, "data"), "machine", json_string("m"));
        json_object_set_new(json_object_get(cm, "data"), "since", json_string("yesterday"));
        assert_int_equal(join_binding_from_json(cm, &back, &err), -EINVAL);
        assert_non_null(strstr(err, "data.since"));
        free(err);
        json_decref(cm);
}

static void test_machine_of(void **state) {
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *k = key(PKI_KEY_ECDSA_P256);
        _cleanup_free_ char *pem = node_request(k, "w1"), *mine = key_machine(k);
        char *m = NULL;
        JoinCsr *c = csr_of(&(Req){ .pem = pem });
        assert_int_equal(join_csr_machine(c, &EMPTY, "w1", &m), 0);
        assert_string_equal(m, mine);
        free(m);
        join_csr_free(c);
        /* a node's own request off a listing cloud: its credentials say who it is, no machine id */
        c = csr_of(&(Req){ .pem = pem, .username = "system:node:w1" });
        assert_int_equal(join_csr_machine(c, &EMPTY, "w1", &m), 0);
        assert_null(m);
        join_csr_free(c);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_bootstrap_new_node),
                cmocka_unit_test(test_kubelet_request),
                cmocka_unit_test(test_requester),
                cmocka_unit_test(test_subject),
                cmocka_unit_test(test_client_sans),
                cmocka_unit_test(test_usages),
                cmocka_unit_test(test_key_and_request),
                cmocka_unit_test(test_not_ours),
                cmocka_unit_test(test_binding_rules),
                cmocka_unit_test(test_machines),
                cmocka_unit_test(test_serving),
                cmocka_unit_test(test_adopt),
                cmocka_unit_test(test_binding_json),
                cmocka_unit_test(test_machine_of),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
