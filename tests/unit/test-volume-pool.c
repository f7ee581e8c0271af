/* SPDX-License-Identifier: Apache-2.0 */
/* The local pool without devices: metadata parse/format, create/list, compare-and-set claims on
 * device-backed volumes, the lock's deadline. (Image-backed attach needs loop devices: integration.) */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/stop.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "cloud/pool.h"
#include "unit-test.h"

static const char good[] =
    "{\"version\":1,\"id\":\"v1\",\"zone\":\"z1\",\"size\":16777216,\"image\":\"v1.img\","
    "\"tags\":{\"KubernetesCluster\":\"demo\",\"k8s.io/etcd/main\":\"a/a,b,c\"},"
    "\"attachment\":{\"node\":\"n1\",\"internalIPs\":[\"10.0.0.1\",\"fd00::1\"],\"externalIPs\":[],"
    "\"device\":\"/dev/loop3\"}}";

static void test_meta_roundtrip(void **state) {
        PoolVolume v = {}, w = {};
        char *err = NULL, *text = NULL, *text2 = NULL;
        assert_int_equal(pool_meta_parse(good, strlen(good), &v, &err), 0);
        assert_string_equal(v.volume.id, "v1");
        assert_string_equal(v.image, "v1.img");
        assert_null(v.device);
        assert_string_equal(volume_tag(&v.volume, "k8s.io/etcd/main"), "a/a,b,c");
        assert_string_equal(v.volume.attachment.node, "n1");
        assert_string_equal(v.volume.attachment.internal_ips[1], "fd00::1");
        assert_string_equal(v.volume.attachment.device, "/dev/loop3");
        assert_int_equal(pool_meta_format(&v, &text), 0);
        assert_int_equal(pool_meta_parse(text, strlen(text), &w, &err), 0);
        assert_int_equal(pool_meta_format(&w, &text2), 0);
        assert_string_equal(text, text2);
        free(text);
        free(text2);
        pool_volume_done(&v);
        pool_volume_done(&w);
}

static void test_meta_strict(void **state) {
        static const char *const bad[] = {
                "",
                "[]",
                "{}",
                "{\"version\":2,\"id\":\"v1\",\"zone\":\"z\",\"size\":1,\"image\":\"v1.img\"}",
                "{\"version\":1,\"id\":\"v1\",\"zone\":\"z\",\"size\":1,\"image\":\"v1.img\",\"extra\":1}",
                "{\"version\":1,\"id\":\"v1\",\"zone\":\"z\",\"size\":1,\"image\":\"../etc/passwd\"}",
                "{\"version\":1,\"id\":\"../v1\",\"zone\":\"z\",\"size\":1,\"image\":\"../v1.img\"}",
                "{\"version\":1,\"id\":\"v1\",\"zone\":\"z\",\"size\":1}",
                "{\"version\":1,\"id\":\"v1\",\"zone\":\"z\",\"size\":1,\"image\":\"v1.img\",\"device\":\"/"
                "dev/sda\"}",
                "{\"version\":1,\"id\":\"v1\",\"zone\":\"z\",\"size\":-1,\"image\":\"v1.img\"}",
                "{\"version\":1,\"id\":\"v1\",\"zone\":\"z\",\"size\":\"1\",\"image\":\"v1.img\"}",
                "{\"version\":1,\"id\":\"v1\",\"zone\":\"z\",\"size\":1,\"device\":\"sda\"}",
                "{\"version\":1,\"id\":\"v1\",\"zone\":\"z\",\"size\":1,\"image\":\"v1.img\",\"tags\":{"
                "\"k\":1}}",
                "{\"version\":1,\"id\":\"v1\",\"zone\":\"z\",\"size\":1,\"image\":\"v1.img\",\"tags\":{"
                "\"k\":\"a\\nb\"}}",
                "{\"version\":1,\"id\":\"v1\",\"zone\":\"z\",\"size\":1,\"image\":\"v1.img\",\"attachment\":"
                "{}}",
                "{\"version\":1,\"id\":\"v1\",\"zone\":\"z\",\"size\":1,\"image\":\"v1.img\",\"attachment\":"
                "{\"node\":\"n 1\"}}",
                "{\"version\":1,\"id\":\"v1\",\"zone\":\"z\",\"size\":1,\"image\":\"v1.img\",\"attachment\":"
                "{\"node\":\"n1\",\"internalIPs\":[\"10.0.0.300\"]}}",
                "{\"version\":1,\"id\":\"v1\",\"zone\":\"z\",\"size\":1,\"image\":\"v1.img\",\"attachment\":"
                "{\"node\":\"n1\",\"owner\":\"x\"}}",
                /* two attachments: readers must not disagree on the holder */
                "{\"version\":1,\"id\":\"v1\",\"zone\":\"z\",\"size\":1,\"image\":\"v1.img\",\"attachment\":"
                "{\"node\":\"n1\"},\"attachment\":{\"node\":\"n2\"}}",
                "{\"version\":1,\"id\":\"v\\u00001\",\"zone\":\"z\",\"size\":1,\"image\":\"v1.img\"}",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                PoolVolume v = {};
                char *err = NULL;
                int r = pool_meta_parse(bad[i], strlen(bad[i]), &v, &err);
                if (r != PK_EMALFORMED)
                        fail_msg("accepted (%d): %s", r, bad[i]);
                free(err);
        }
}

static char *make_pool_dir(void) {
        char tmpl[] = "/tmp/pk-pool-test-XXXXXX";
        assert_non_null(mkdtemp(tmpl));
        return strdup(tmpl);
}

static void remove_dir(const char *dir) {
        DIR *d = opendir(dir);
        assert_non_null(d);
        for (struct dirent *de; (de = readdir(d));) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                char *p = strjoin(dir, "/", de->d_name);
                unlink(p);
                free(p);
        }
        closedir(d);
        rmdir(dir);
}

static void write_device_volume(const char *dir, const char *id) {
        char *path = strjoin(dir, "/", id, ".json");
        char *text =
            strprintf("{\"version\":1,\"id\":\"%s\",\"zone\":\"z1\",\"size\":1048576,"
                      "\"device\":\"/dev/pk-test-missing\",\"tags\":{\"KubernetesCluster\":\"demo\"}}",
                      id);
        assert_int_equal(write_file_atomic(path, text, strlen(text), 0644, 0), 1);
        free(path);
        free(text);
}

static void test_pool_create_list(void **state) {
        char *dir = make_pool_dir();
        Pool *p = NULL;
        char *id = NULL, *tags[] = { (char *)"KubernetesCluster", (char *)"demo",
                                     (char *)"k8s.io/role/master", (char *)"1", NULL };
        assert_int_equal(pool_open(dir, 0, &p), 0);
        assert_int_equal(pool_create(p, "main-a", "z1", 4 << 20, tags, &id), 0);
        assert_string_equal(id, "main-a");
        free(id);
        assert_int_equal(pool_create(p, "main-a", "z1", 4 << 20, tags, NULL), -EEXIST);
        assert_int_equal(pool_create(p, "../x", "z1", 4 << 20, tags, NULL), -EINVAL);
        assert_int_equal(pool_create(p, NULL, "z1", 4 << 20, NULL, &id), 0);
        assert_non_null(startswith(id, "vol-"));
        free(id);
        /* a broken file is reported, not fatal */
        char *junk = strjoin(dir, "/junk.json");
        assert_int_equal(write_file_atomic(junk, "{", 1, 0644, 0), 1);
        free(junk);
        VolumeList l = {};
        assert_int_equal(pool_list(p, &l), 0);
        /* ...and listed as damaged: a record that does not parse never makes its volume vanish */
        assert_int_equal(l.n, 3);
        assert_string_equal(l.items[0].id, "junk");
        assert_non_null(l.items[0].damaged);
        assert_null(l.items[0].attachment.node);
        assert_string_equal(l.items[1].id, "main-a");
        assert_null(l.items[1].damaged);
        assert_int_equal(l.items[1].size, 4 << 20);
        assert_int_equal(strv_length(l.warnings), 1);
        assert_non_null(strstr(l.warnings[0], "junk.json"));
        volume_list_done(&l);
        struct stat st;
        char *img = strjoin(dir, "/main-a.img");
        assert_int_equal(stat(img, &st), 0);
        assert_int_equal(st.st_size, 4 << 20);
        free(img);
        pool_free(p);
        remove_dir(dir);
        free(dir);
}

static void test_pool_claim_cas(void **state) {
        char *dir = make_pool_dir();
        Pool *p = NULL;
        char *ips[] = { (char *)"10.0.0.1", NULL };
        NodeIdentity n1 = { .name = (char *)"n1", .zone = (char *)"z1", .internal_ips = ips };
        NodeIdentity n2 = { .name = (char *)"n2", .zone = (char *)"z1" };
        PoolVolume v = {};
        char *path = NULL;
        dev_t d;

        assert_int_equal(pool_open(dir, 0, &p), 0);
        write_device_volume(dir, "d1");
        assert_int_equal(pool_attach(p, "d1", &n1), 0);
        assert_int_equal(pool_attach(p, "d1", &n2), PK_ECONFLICT);
        assert_int_equal(pool_attach(p, "d1", &n1), 0); /* idempotent for the holder */
        assert_int_equal(pool_load(p, "d1", &v, NULL), 0);
        assert_string_equal(v.volume.attachment.node, "n1");
        assert_string_equal(v.volume.attachment.internal_ips[0], "10.0.0.1");
        pool_volume_done(&v);
        /* the device does not exist: resolved as "not there yet", never guessed */
        assert_int_equal(pool_resolve_device(p, "d1", &n1, &path, &d), 0);
        assert_int_equal(pool_resolve_device(p, "d1", &n2, &path, &d), 0);
        assert_int_equal(pool_detach(p, "d1", &n2), PK_ECONFLICT);
        assert_int_equal(pool_release_node(p, "n2", NULL), 0);
        assert_int_equal(pool_release_node(p, "n1", NULL), 1);
        assert_int_equal(pool_detach(p, "d1", NULL), 0);
        assert_int_equal(pool_attach(p, "d1", &n2), 0);
        assert_int_equal(pool_detach(p, "d1", NULL), 1);
        assert_int_equal(pool_attach(p, "nope", &n2), -ENOENT);
        pool_free(p);
        remove_dir(dir);
        free(dir);
}

static char *repeat(char c, size_t n) {
        char *s = malloc(n + 1);
        memset(s, c, n);
        s[n] = 0;
        return s;
}

/* Round trip through the real files: whatever pool_attach() accepts, every reader can read back; what
 * it cannot store faithfully it refuses before writing anything. */
static void test_pool_writer_reader_roundtrip(void **state) {
        char *dir = make_pool_dir(), *name_max = repeat('n', POOL_NODE_MAX),
             *id_max = repeat('i', POOL_ID_MAX);
        char *zone_max = repeat('z', 63), *key = repeat('k', POOL_TAG_KEY_MAX),
             *val = repeat('v', POOL_TAG_VALUE_MAX);
        char *ips16[POOL_IPS_MAX + 2] = {},
                                   *ext[] = { (char *)"ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255",
                                              (char *)"::", (char *)"0.0.0.0", NULL };
        char mid[] = "0123456789abcdef0123456789abcdef";
        char *tags[] = { key, val, (char *)"empty", (char *)"", (char *)"u", (char *)"\xc3\xa9t\xc3\xa9",
                         NULL };
        Pool *p = NULL;
        char *id = NULL;

        for (size_t i = 0; i < POOL_IPS_MAX + 1; i++)
                ips16[i] = strprintf(i % 2 ? "fd00::%zx" : "10.0.0.%zu", i + 1);
        assert_int_equal(pool_open(dir, 0, &p), 0);
        assert_int_equal(pool_create(p, id_max, zone_max, 1 << 20, tags, &id), 0);
        free(id);

        char *last = ips16[POOL_IPS_MAX];
        ips16[POOL_IPS_MAX] = NULL; /* exactly the bound */
        NodeIdentity n = { .name = name_max,
                           .machine_id = mid,
                           .zone = zone_max,
                           .internal_ips = ips16,
                           .external_ips = ext };
        assert_int_equal(pool_attach(p, id_max, &n), 0);
        PoolVolume v = {};
        char *err = NULL;
        assert_int_equal(pool_load(p, id_max, &v, &err), 0);
        assert_string_equal(v.volume.attachment.node, name_max);
        assert_string_equal(v.volume.attachment.machine_id, mid);
        assert_int_equal(strv_length(v.volume.attachment.internal_ips), POOL_IPS_MAX);
        assert_true(strv_equal(v.volume.attachment.external_ips, ext));
        assert_string_equal(volume_tag(&v.volume, key), val);
        assert_string_equal(volume_tag(&v.volume, "empty"), "");
        pool_volume_done(&v);
        assert_int_equal(pool_detach(p, id_max, NULL), POOL_DETACHED);

        /* refused before anything is written: one address over the bound, a non-literal, a bad id */
        ips16[POOL_IPS_MAX] = last;
        assert_int_equal(pool_attach(p, id_max, &n), -EINVAL);
        ips16[POOL_IPS_MAX] = NULL;
        char *spaced[] = { (char *)"192.0.2.11 ", NULL }, *two[] = { (char *)"10.0.0.1,10.0.0.2", NULL };
        NodeIdentity bad1 = { .name = (char *)"n1", .internal_ips = spaced };
        NodeIdentity bad2 = { .name = (char *)"n1", .external_ips = two };
        NodeIdentity bad3 = { .name = (char *)"n1",
                              .machine_id = (char *)"0123456789ABCDEF0123456789ABCDEF" };
        NodeIdentity bad4 = { .name = (char *)"n 1" };
        assert_int_equal(pool_attach(p, id_max, &bad1), -EINVAL);
        assert_int_equal(pool_attach(p, id_max, &bad2), -EINVAL);
        assert_int_equal(pool_attach(p, id_max, &bad3), -EINVAL);
        assert_int_equal(pool_attach(p, id_max, &bad4), -EINVAL);
        VolumeList l = {};
        assert_int_equal(pool_list(p, &l), 0);
        assert_int_equal(l.n, 1);
        assert_null(l.items[0].damaged);
        assert_null(l.items[0].attachment.node);
        assert_null(l.warnings);
        volume_list_done(&l);

        for (size_t i = 0; i < POOL_IPS_MAX + 1; i++)
                free(ips16[i]);
        free(last);
        free(name_max);
        free(id_max);
        free(zone_max);
        free(key);
        free(val);
        pool_free(p);
        remove_dir(dir);
        free(dir);
}

static void write_text(const char *dir, const char *name, const char *text) {
        char *path = strjoin(dir, "/", name);
        assert_int_equal(write_file_atomic(path, text, strlen(text), 0644, 0), 1);
        free(path);
}

/* What the old writer left behind: a claim whose address has a trailing space. */
static const char bad_ip_record[] =
    "{\"version\":1,\"id\":\"d2\",\"zone\":\"z1\",\"size\":1048576,\"device\":\"/dev/pk-test-missing\","
    "\"tags\":{\"KubernetesCluster\":\"demo\"},"
    "\"attachment\":{\"node\":\"n1\",\"internalIPs\":[\"192.0.2.11 \"],\"externalIPs\":[]}}";

static void test_pool_damaged_records(void **state) {
        char *dir = make_pool_dir(), **notes = NULL;
        Pool *p = NULL;
        NodeIdentity n1 = { .name = (char *)"n1" }, n2 = { .name = (char *)"n2" };
        VolumeList l = {};

        assert_int_equal(pool_open(dir, 0, &p), 0);
        write_text(dir, "d1.json", "garbage{");
        write_text(dir, "d2.json", bad_ip_record);
        write_device_volume(dir, "d3");

        assert_int_equal(pool_list(p, &l), 0);
        assert_int_equal(l.n, 3);
        assert_non_null(l.items[0].damaged); /* d1: nothing readable but its id */
        assert_null(l.items[0].attachment.node);
        assert_null(l.items[0].zone);
        assert_non_null(strstr(l.items[1].damaged, "not an IP address")); /* d2: the holder is readable */
        assert_string_equal(l.items[1].attachment.node, "n1");
        assert_string_equal(l.items[1].zone, "z1");
        assert_string_equal(volume_tag(&l.items[1], "KubernetesCluster"), "demo");
        assert_null(l.items[2].damaged);
        assert_int_equal(strv_length(l.warnings), 2);
        volume_list_done(&l);

        /* never claimed, never resolved */
        assert_int_equal(pool_attach(p, "d2", &n2), PK_EMALFORMED);
        /* a node releasing by name may only release what reads as its own */
        assert_int_equal(pool_detach(p, "d2", &n2), PK_EMALFORMED);
        assert_int_equal(pool_detach(p, "d1", &n1), PK_EMALFORMED);

        /* release-node n2: d2 is n1's (left alone), d1's holder is unreadable (reported, left alone) */
        assert_int_equal(pool_release_node(p, "n2", &notes), 0);
        assert_int_equal(strv_length(notes), 1);
        assert_non_null(strstr(notes[0], "d1: damaged record"));
        assert_non_null(strstr(notes[0], "cannot be read"));
        strv_free(notes);
        /* release-node n1: d2 released and rewritten whole, without the bad attachment */
        assert_int_equal(pool_release_node(p, "n1", &notes), 1);
        assert_int_equal(strv_length(notes), 2);
        strv_free(notes);
        PoolVolume v = {};
        assert_int_equal(pool_load(p, "d2", &v, NULL), 0);
        assert_null(v.volume.attachment.node);
        assert_string_equal(volume_tag(&v.volume, "KubernetesCluster"), "demo");
        assert_string_equal(v.device, "/dev/pk-test-missing");
        pool_volume_done(&v);
        assert_int_equal(pool_attach(p, "d2", &n2), 0); /* usable again */

        /* an admin's detach of the unreadable one: its device is released, the record left as it is */
        assert_int_equal(pool_detach(p, "d1", NULL), POOL_DETACHED_DAMAGED);
        assert_int_equal(pool_list(p, &l), 0);
        assert_int_equal(l.n, 3);
        assert_non_null(l.items[0].damaged);
        volume_list_done(&l);
        pool_free(p);
        remove_dir(dir);
        free(dir);
}

/* Two machines with one node name: the second is not the holder of the first's volume. */
static void test_pool_machine_id(void **state) {
        char *dir = make_pool_dir(), *path = NULL;
        char m1[] = "11111111111111111111111111111111", m2[] = "22222222222222222222222222222222";
        NodeIdentity a = { .name = (char *)"n1", .machine_id = m1 },
                     b = { .name = (char *)"n1", .machine_id = m2 };
        NodeIdentity bare = { .name = (char *)"n1" };
        Pool *p = NULL;
        PoolVolume v = {};
        dev_t d;

        assert_int_equal(pool_open(dir, 0, &p), 0);
        write_device_volume(dir, "d1");
        assert_int_equal(pool_attach(p, "d1", &a), 0);
        assert_int_equal(pool_attach(p, "d1", &b), PK_ECONFLICT);
        assert_int_equal(pool_attach(p, "d1", &bare), PK_ECONFLICT);
        assert_int_equal(pool_attach(p, "d1", &a), 0);
        assert_int_equal(pool_load(p, "d1", &v, NULL), 0);
        assert_string_equal(v.volume.attachment.machine_id, m1);
        pool_volume_done(&v);
        assert_int_equal(pool_detach(p, "d1", &b), PK_ECONFLICT);
        assert_int_equal(pool_resolve_device(p, "d1", &b, &path, &d), 0);
        assert_int_equal(pool_detach(p, "d1", &a), POOL_DETACHED);

        /* a record written before machine ids: matched by name (docs/volumes.md) */
        write_text(dir, "d2.json",
                   "{\"version\":1,\"id\":\"d2\",\"zone\":\"z1\",\"size\":1048576,\"device\":\"/dev/x\","
                   "\"attachment\":{\"node\":\"n1\",\"internalIPs\":[],\"externalIPs\":[]}}");
        assert_int_equal(pool_attach(p, "d2", &b), 0);
        assert_int_equal(pool_load(p, "d2", &v, NULL), 0);
        assert_null(v.volume.attachment.machine_id); /* not stamped by whoever came first */
        pool_volume_done(&v);
        pool_free(p);
        remove_dir(dir);
        free(dir);
}

static void test_pool_lock_deadline(void **state) {
        char *dir = make_pool_dir();
        Pool *p = NULL;
        NodeIdentity n1 = { .name = (char *)"n1", .zone = (char *)"z1" };
        assert_int_equal(pool_open(dir, 50 * USEC_PER_MSEC, &p), 0);
        write_device_volume(dir, "d1");
        int fd = pool_lock(p);
        assert_true(fd >= 0);
        usec_t t0 = now(CLOCK_MONOTONIC);
        assert_int_equal(pool_attach(p, "d1", &n1), PK_ETIMEOUT);
        assert_true(now(CLOCK_MONOTONIC) - t0 >= 50 * USEC_PER_MSEC);
        close(fd);
        assert_int_equal(pool_attach(p, "d1", &n1), 0);
        pool_free(p);
        remove_dir(dir);
        free(dir);
}

/* A stop request ends the wait for the pool lock at once: the daemon's SIGTERM must not wait out a lock
 * another node holds. */
static void test_pool_lock_stop(void **state) {
        char *dir = make_pool_dir();
        Pool *p = NULL;
        NodeIdentity n1 = { .name = (char *)"n1", .zone = (char *)"z1" };
        assert_int_equal(pool_open(dir, 10 * USEC_PER_SEC, &p), 0);
        write_device_volume(dir, "d1");
        int fd = pool_lock(p); /* another open file description: flock() makes the next one wait */
        assert_true(fd >= 0);
        stop_request();
        usec_t t0 = now(CLOCK_MONOTONIC);
        int r = pool_attach(p, "d1", &n1);
        usec_t took = now(CLOCK_MONOTONIC) - t0;
        stop_reset();
        assert_int_equal(r, -ECANCELED);
        assert_true(took < 2 * USEC_PER_SEC);
        close(fd);
        assert_int_equal(pool_attach(p, "d1", &n1), 0);
        pool_free(p);
        remove_dir(dir);
        free(dir);
}

static void write_member_volume(const char *dir, const char *id, const char *member) {
        char *path = strjoin(dir, "/", id, ".json");
        char *text =
            strprintf("{\"version\":1,\"id\":\"%s\",\"zone\":\"z1\",\"size\":1048576,"
                      "\"device\":\"/dev/pk-test-missing\",\"tags\":{\"KubernetesCluster\":\"demo\","
                      "\"k8s.io/etcd/main\":\"%s/a,b,c\",\"k8s.io/role/master\":\"1\"}}",
                      id, member);
        assert_int_equal(write_file_atomic(path, text, strlen(text), 0644, 0), 1);
        free(path);
        free(text);
}

/* Under the pool lock a member is held through one volume only, whoever asks. */
static void test_pool_one_member_one_holder(void **state) {
        char *dir = make_pool_dir();
        Pool *p = NULL;
        NodeIdentity n1 = { .name = (char *)"n1", .zone = (char *)"z1" };
        NodeIdentity n2 = { .name = (char *)"n2", .zone = (char *)"z1" };
        assert_int_equal(pool_open(dir, 0, &p), 0);
        write_member_volume(dir, "m-a1", "a");
        write_member_volume(dir, "m-a2", "a");
        write_member_volume(dir, "m-b", "b");
        assert_int_equal(pool_attach(p, "m-a1", &n1), 0);
        assert_int_equal(pool_attach(p, "m-a2", &n2), PK_ECONFLICT);
        assert_int_equal(pool_attach(p, "m-a2", &n1), PK_ECONFLICT);
        assert_int_equal(pool_attach(p, "m-b", &n2), 0);
        assert_int_equal(pool_attach(p, "m-a1", &n1), 0); /* the holder's own claim stays idempotent */
        assert_int_equal(pool_detach(p, "m-a1", NULL), 1);
        assert_int_equal(pool_attach(p, "m-a2", &n2), 0);
        pool_free(p);
        remove_dir(dir);
        free(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_meta_roundtrip),
                cmocka_unit_test(test_meta_strict),
                cmocka_unit_test(test_pool_create_list),
                cmocka_unit_test(test_pool_claim_cas),
                cmocka_unit_test(test_pool_lock_deadline),
                cmocka_unit_test(test_pool_lock_stop),
                cmocka_unit_test(test_pool_writer_reader_roundtrip),
                cmocka_unit_test(test_pool_damaged_records),
                cmocka_unit_test(test_pool_machine_id),
                cmocka_unit_test(test_pool_one_member_one_holder),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
