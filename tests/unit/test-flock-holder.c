/* SPDX-License-Identifier: Apache-2.0 */
/* flock_holder_find() and process_facts_read(): a kubelet's lock holder is found through /proc/locks by the
 * file's device and inode (never opening the file, which a kubelet run with --exit-on-lock-contention takes
 * as a request to exit), and what its cgroup and start time say of it. A fake proc root checks the parsing;
 * the test's own lock and process check it against the kernel's text. */
#include "unit-test.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/flock-holder.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "basic/time-util.h"

#define UID     "3f1c2a4b-5d6e-4f70-8a9b-0c1d2e3f4a5b"
#define UID_SD  "3f1c2a4b_5d6e_4f70_8a9b_0c1d2e3f4a5b"
#define CTR     "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define BTIME   1700000000ULL
#define STARTED 123456ULL /* clock ticks after boot: 1234.56 s at USER_HZ 100 */

static char root[] = "/tmp/pk-flock-holder-XXXXXX";

/* Writes text to <root>/<name> (a plain write: the parsing tests write many). */
static void write_text(const char *name, const char *text) {
        _cleanup_free_ char *path = strprintf("%s/%s", root, name);
        assert_non_null(path);
        _cleanup_fclose_ FILE *f = fopen(path, "we");
        assert_non_null(f);
        assert_int_equal(fputs(text, f) >= 0, 1);
}

/* "MAJOR:MINOR:INODE" as fs/locks.c prints a file's, and the file's path. */
static char *make_file(const char *name, char dev[static 64]) {
        char *path = strprintf("%s/%s", root, name);
        struct stat st;
        assert_non_null(path);
        write_text(name, "");
        assert_int_equal(stat(path, &st), 0);
        snprintf(dev, 64, "%02x:%02x:%ju", major(st.st_dev), minor(st.st_dev), (uintmax_t)st.st_ino);
        return path;
}

static void test_holder_in_locks(void **state) {
        char dev[64], other_dev[64];
        _cleanup_free_ char *path = make_file("kubelet.lock", dev), *other = make_file("other", other_dev);
        _cleanup_free_ char *locks = strprintf("1: POSIX  ADVISORY  WRITE 111 %s 0 EOF\n"
                                               "2: OFDLCK ADVISORY  READ  -1 %s 0 EOF\n"
                                               "3: FLOCK  ADVISORY  WRITE\n"
                                               "garbage\n"
                                               "\n"
                                               "4: FLOCK  ADVISORY  WRITE 333 zz:01:5 0 EOF\n"
                                               "5: FLOCK  ADVISORY  WRITE 12x %s 0 EOF\n"
                                               "6: FLOCK  ADVISORY  WRITE 444 123456789:01:5 0 EOF\n"
                                               "7: LEASE  ACTIVE    READ  555 %s 0 EOF\n"
                                               "8: FLOCK  ADVISORY  WRITE 666 %s 0 EOF\n"
                                               "8: -> FLOCK  ADVISORY  WRITE 999 %s 0 EOF\n",
                                               dev, dev, dev, dev, other_dev, dev);
        pid_t pid = 0;
        assert_non_null(locks);
        write_text("locks", locks);
        /* every line names another file, is no flock, a waiter or does not parse */
        assert_int_equal(flock_holder_find(root, path, &pid), 0);
        assert_int_equal(flock_holder_find(root, other, &pid), 1);
        assert_int_equal(pid, 666);

        _cleanup_free_ char *held = strprintf("%s9: FLOCK  ADVISORY  WRITE 4242 %s 0 EOF\n", locks, dev);
        assert_non_null(held);
        write_text("locks", held);
        assert_int_equal(flock_holder_find(root, path, &pid), 1);
        assert_int_equal(pid, 4242);

        _cleanup_free_ char *missing = strprintf("%s/absent.lock", root);
        assert_non_null(missing);
        assert_int_equal(flock_holder_find(root, missing, &pid), -ENOENT);
}

/* Any prefix of the kernel's text (a line cut anywhere, no final newline) parses without harm. */
static void test_locks_cut_anywhere(void **state) {
        char dev[64];
        _cleanup_free_ char *path = make_file("cut.lock", dev);
        _cleanup_free_ char *text = strprintf("1: -> FLOCK  ADVISORY  WRITE 9 %s 0 EOF\n"
                                              "2: FLOCK  ADVISORY  READ  4242 %s 0 EOF\n",
                                              dev, dev);
        assert_non_null(text);
        for (size_t n = 0; n <= strlen(text); n++) {
                _cleanup_free_ char *cut = strndup(text, n);
                pid_t pid = 0;
                assert_non_null(cut);
                write_text("locks", cut);
                int r = flock_holder_find(root, path, &pid);
                assert_true(r == 0 || (r == 1 && pid > 0));
        }
}

static void test_no_proc_locks(void **state) {
        char dev[64];
        _cleanup_free_ char *path = make_file("x.lock", dev), *none = strprintf("%s/none", root);
        pid_t pid;
        assert_non_null(none);
        /* not "no lock file": the caller must not take a missing /proc/locks for one */
        assert_int_equal(flock_holder_find(none, path, &pid), -ENOSYS);
}

static void write_process(int pid, const char *cgroup) {
        char dir[32], f[64];
        _cleanup_free_ char *path = strprintf("%s/%d", root, pid), *text = NULL;
        snprintf(dir, sizeof(dir), "%d", pid);
        assert_non_null(path);
        assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
        text = strprintf("%d (kube let) x) S 1 %d %d 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 12 0 %llu 1000000 "
                         "500 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
                         pid, pid, pid, STARTED);
        assert_non_null(text);
        snprintf(f, sizeof(f), "%s/stat", dir);
        write_text(f, text);
        snprintf(f, sizeof(f), "%s/cgroup", dir);
        write_text(f, cgroup);
}

static void test_facts(void **state) {
        long hz = sysconf(_SC_CLK_TCK);
        usec_t started = BTIME * USEC_PER_SEC + STARTED * USEC_PER_SEC / (usec_t)hz;
        ProcessFacts f;
        assert_true(hz > 0);
        write_text("stat",
                   "cpu  1 2 3 4\ncpu0 1 2 3 4\nintr 5 0 1\nctxt 9\nbtime 1700000000\nprocesses 7\n");
        write_process(4242, "12:memory:/kubepods/burstable/pod" UID "/" CTR "\n"
                            "0::/kubepods/burstable/pod" UID "/" CTR "\n");
        write_process(4243, "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_SD
                            ".slice/cri-containerd-" CTR ".scope\n");
        write_process(4244, "1:name=systemd:/system.slice/kubelet.service\n"
                            "2:cpu:/pod3F1C2A4B-5D6E-4F70-8A9B-0C1D2E3F4A5B/x\n"
                            "3:pids:/kubepods-pod" UID ".slice\n"
                            "4:blkio:/podman/pod" UID "0/x\n"
                            "0::/system.slice/kubelet.service\n");
        write_process(4245, "0::/kubepods.slice/kubepods-pod" UID_SD ".slice/" CTR "\n");

        assert_int_equal(process_facts_read(root, 4242, &f), 0);
        assert_int_equal(f.pid, 4242);
        assert_string_equal(f.pod_uid, UID);
        assert_true(f.started == started);
        assert_int_equal(process_facts_read(root, 4243, &f), 0);
        assert_string_equal(f.pod_uid, UID);
        /* a bootstrap kubelet: uppercase, '-' in a systemd name and 37 characters are no uid */
        assert_int_equal(process_facts_read(root, 4244, &f), 0);
        assert_string_equal(f.pod_uid, "");
        assert_true(f.started == started);
        assert_int_equal(process_facts_read(root, 4245, &f), 0);
        assert_string_equal(f.pod_uid, UID);

        assert_int_equal(process_facts_read(root, 4246, &f), -ESRCH);
        write_text("4245/stat", "4245 (kubelet) S 1 2 3\n");
        assert_int_equal(process_facts_read(root, 4245, &f), PK_EMALFORMED);
        write_text("4245/stat", "4245 kubelet S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22\n");
        assert_int_equal(process_facts_read(root, 4245, &f), PK_EMALFORMED);
        write_text("stat", "cpu  1 2 3 4\n");
        assert_int_equal(process_facts_read(root, 4242, &f), PK_EMALFORMED);
}

/* The kernel's own text: this process's flock is found, the file is never opened (no IN_OPEN), and this
 * process's facts read. */
static void test_live(void **state) {
        char path[] = "/tmp/pk-flock-live-XXXXXX", buf[4096];
        _cleanup_close_ int fd = mkstemp(path);
        pid_t pid = 0;
        ProcessFacts f;
        assert_true(fd >= 0);
        _cleanup_close_ int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        assert_true(in >= 0);
        assert_true(inotify_add_watch(in, path, IN_OPEN | IN_ACCESS | IN_CLOSE) >= 0);

        assert_int_equal(flock_holder_find("/proc", path, &pid), 0);
        assert_int_equal(flock(fd, LOCK_EX), 0);
        assert_int_equal(flock_holder_find("/proc", path, &pid), 1);
        assert_int_equal(pid, getpid());
        assert_int_equal(flock(fd, LOCK_SH), 0);
        pid = 0;
        assert_int_equal(flock_holder_find("/proc", path, &pid), 1);
        assert_int_equal(pid, getpid());
        assert_int_equal(read(in, buf, sizeof(buf)), -1);
        assert_int_equal(errno, EAGAIN);
        assert_int_equal(flock(fd, LOCK_UN), 0);
        assert_int_equal(flock_holder_find("/proc", path, &pid), 0);

        assert_int_equal(process_facts_read("/proc", getpid(), &f), 0);
        assert_int_equal(f.pid, getpid());
        assert_string_equal(f.pod_uid, "");
        usec_t t = now(CLOCK_REALTIME);
        assert_true(f.started <= t + 2 * USEC_PER_SEC && f.started + 3600 * USEC_PER_SEC >= t);
        unlink(path);
}

static int setup(void **state) {
        return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state) {
        return rm_rf_at(AT_FDCWD, root) < 0 ? -1 : 0;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_holder_in_locks),
                cmocka_unit_test(test_locks_cut_anywhere),
                cmocka_unit_test(test_no_proc_locks),
                cmocka_unit_test(test_facts),
                cmocka_unit_test(test_live),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
