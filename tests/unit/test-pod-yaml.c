/* SPDX-License-Identifier: Apache-2.0 */
/* The manifest emitter: exact layout of a small pod, and strings that YAML would read as something else. */
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "basic/strv.h"
#include "manifest/pod-yaml.h"
#include "model/pod.h"
#include "unit-test.h"

static void test_ambiguous(void **state) {
        static const char *const quoted[] = {
                "",    "yes",  "no",         "Yes",   "NO",    "on",    "off",   "On",        "y",
                "n",   "Y",    "true",       "True",  "FALSE", "null",  "Null",  "~",         "0755",
                "1e3", "0x1F", ".inf",       "-.Inf", ".NaN",  "1_000", "12:30", "1.5",       "-1",
                "+1",  "0",    "2001-12-14", "=",     "<<",    "0o17",  "0b101", "127.0.0.1",
        };
        static const char *const plain[] = {
                "/usr/local/bin/etcd",
                "--v=2",
                "kube-system",
                "150m",
                "100Mi",
                "etcd-a",
                "v1",
                "Pod",
                "registry.k8s.io/etcd:3.5.16-0",
                "100.64.0.0/13",
                "yesno",
                "nullable",
                "TCP",
                "x1",
        };
        for (size_t i = 0; i < ELEMENTSOF(quoted); i++)
                if (!yaml_plain_is_ambiguous(quoted[i]))
                        fail_msg("'%s' should be quoted", quoted[i]);
        for (size_t i = 0; i < ELEMENTSOF(plain); i++)
                if (yaml_plain_is_ambiguous(plain[i]))
                        fail_msg("'%s' need not be quoted", plain[i]);
}

static Pod *small_pod(void) {
        Pod *pod = NULL;
        PodContainer *c;
        assert_int_equal(pod_new("p", "kube-system", &pod), 0);
        pod->host_network = true;
        assert_int_equal(pod_kv_set(&pod->labels, "k8s-app", "p"), 0);
        assert_int_equal(pod_add_container(pod, "c", "img:1", &c), 0);
        assert_int_equal(strv_extend(&c->command, "/bin/c"), 0);
        assert_int_equal(strv_extend(&c->command, "--x=yes"), 0);
        assert_int_equal(pod_kv_set(&c->env, "A", "yes"), 0);
        assert_int_equal(pod_kv_set(&c->requests, "cpu", "100m"), 0);
        assert_int_equal(pod_container_add_port(c, "http", 8080, 0), 0);
        assert_int_equal(pod_probe_http(&c->liveness_probe, "HTTP", "127.0.0.1", "/healthz", 8080, 5, 3), 0);
        assert_int_equal(pod_add_host_mount(pod, c, "data", "/var/data", "DirectoryOrCreate", true), 0);
        return pod;
}

static void test_layout(void **state) {
        _cleanup_(pod_freep) Pod *pod = small_pod();
        _cleanup_free_ char *y = NULL;
        assert_int_equal(pod_to_yaml(pod, &y), 0);
        assert_string_equal(y, "apiVersion: v1\n"
                               "kind: Pod\n"
                               "metadata:\n"
                               "  labels:\n"
                               "    k8s-app: p\n"
                               "  name: p\n"
                               "  namespace: kube-system\n"
                               "spec:\n"
                               "  containers:\n"
                               "  - command:\n"
                               "    - /bin/c\n"
                               "    - --x=yes\n"
                               "    env:\n"
                               "    - name: A\n"
                               "      value: \"yes\"\n"
                               "    image: img:1\n"
                               "    livenessProbe:\n"
                               "      httpGet:\n"
                               "        host: \"127.0.0.1\"\n"
                               "        path: /healthz\n"
                               "        port: 8080\n"
                               "        scheme: HTTP\n"
                               "      initialDelaySeconds: 5\n"
                               "      timeoutSeconds: 3\n"
                               "    name: c\n"
                               "    ports:\n"
                               "    - containerPort: 8080\n"
                               "      name: http\n"
                               "      protocol: TCP\n"
                               "    resources:\n"
                               "      requests:\n"
                               "        cpu: 100m\n"
                               "    volumeMounts:\n"
                               "    - mountPath: /var/data\n"
                               "      name: data\n"
                               "      readOnly: true\n"
                               "  hostNetwork: true\n"
                               "  volumes:\n"
                               "  - hostPath:\n"
                               "      path: /var/data\n"
                               "      type: DirectoryOrCreate\n"
                               "    name: data\n");
}

/* Every env value must read back, with libyaml's parser, as exactly the string that went in, and never as a
 * plain scalar when plain would change its type. */
static void test_roundtrip(void **state) {
        static const char *const values[] = {
                "yes",    "0755",        "",          "1e3",      "null",     "~",       "12:30",
                ".inf",   "0x1F",        "1_000",     "on",       "y",        "- x",     "a: b",
                "#c",     "multi\nline", "tab\there", "quote\"s", "'single'", "ünïcode", " lead",
                "trail ", "[x]",         "{y}",       "*ref",     "&anchor",  "!tag",    "%dir",
                "@at",    "`tick",       "|",         ">",        "?",        "plain",
        };
        _cleanup_(pod_freep) Pod *pod = small_pod();
        PodContainer *c = &pod->containers[0];
        char name[16];
        for (size_t i = 0; i < ELEMENTSOF(values); i++) {
                snprintf(name, sizeof(name), "V%zu", i);
                assert_int_equal(pod_kv_set(&c->env, name, values[i]), 0);
        }
        _cleanup_free_ char *y = NULL;
        assert_int_equal(pod_to_yaml(pod, &y), 0);

        yaml_parser_t p;
        yaml_event_t ev;
        assert_true(yaml_parser_initialize(&p));
        yaml_parser_set_input_string(&p, (const unsigned char *)y, strlen(y));
        size_t found = 0;
        bool after_value_key = false;
        for (unsigned guard = 0; guard < 100000; guard++) {
                assert_true(yaml_parser_parse(&p, &ev));
                if (ev.type == YAML_STREAM_END_EVENT) {
                        yaml_event_delete(&ev);
                        break;
                }
                if (ev.type == YAML_SCALAR_EVENT) {
                        const char *v = (const char *)ev.data.scalar.value;
                        if (after_value_key) {
                                bool known = false;
                                for (size_t i = 0; i < ELEMENTSOF(values) && !known; i++)
                                        known = strcmp(values[i], v) == 0 &&
                                                strlen(values[i]) == ev.data.scalar.length;
                                if (known) {
                                        found++;
                                        if (ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
                                                assert_false(yaml_plain_is_ambiguous(v));
                                }
                        }
                        after_value_key = strcmp(v, "value") == 0;
                } else
                        after_value_key = false;
                yaml_event_delete(&ev);
        }
        yaml_parser_delete(&p);
        /* "yes" from small_pod plus every value */
        assert_int_equal(found, ELEMENTSOF(values) + 1);
}

static void test_deterministic_and_sorted(void **state) {
        _cleanup_(pod_freep) Pod *a = small_pod(), *b = small_pod();
        assert_int_equal(pod_kv_set(&a->annotations, "z", "1"), 0);
        assert_int_equal(pod_kv_set(&a->annotations, "a", "2"), 0);
        assert_int_equal(pod_kv_set(&b->annotations, "a", "2"), 0);
        assert_int_equal(pod_kv_set(&b->annotations, "z", "1"), 0);
        _cleanup_free_ char *ya = NULL, *yb = NULL;
        assert_int_equal(pod_to_yaml(a, &ya), 0);
        assert_int_equal(pod_to_yaml(b, &yb), 0);
        assert_string_equal(ya, yb);
        assert_non_null(strstr(ya, "  annotations:\n    a: \"2\"\n    z: \"1\"\n"));
}

static void test_invalid(void **state) {
        _cleanup_(pod_freep) Pod *empty = NULL;
        char *y = NULL;
        assert_int_equal(pod_new("p", "ns", &empty), 0);
        assert_int_equal(pod_to_yaml(empty, &y), -EINVAL); /* a pod needs a container */
        _cleanup_(pod_freep) Pod *bad = small_pod();
        assert_int_equal(pod_kv_set(&bad->containers[0].env, "B", "\xff\xfe"), 0);
        assert_int_equal(pod_to_yaml(bad, &y), -EINVAL); /* not UTF-8 */
        assert_null(y);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ambiguous), cmocka_unit_test(test_layout),
                cmocka_unit_test(test_roundtrip), cmocka_unit_test(test_deterministic_and_sorted),
                cmocka_unit_test(test_invalid),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
