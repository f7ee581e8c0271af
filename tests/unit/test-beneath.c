/* SPDX-License-Identifier: Apache-2.0 */
/* Files below an untrusted directory: symlinks never followed, FIFOs never read or blocked on. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/beneath.h"
#include "basic/fileio.h"
#include "basic/string-util.h"
#include "unit-test.h"

typedef struct Dirs {
        char root[64];    /* the untrusted tree */
        char outside[64]; /* where a planted symlink points */
        int rootfd;
} Dirs;

static int setup(void **state) {
        Dirs *d = calloc(1, sizeof(Dirs));
        snprintf(d->root, sizeof(d->root), "/tmp/pk-beneath-XXXXXX");
        snprintf(d->outside, sizeof(d->outside), "/tmp/pk-outside-XXXXXX");
        assert_non_null(mkdtemp(d->root));
        assert_non_null(mkdtemp(d->outside));
        d->rootfd = open(d->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(d->rootfd >= 0);
        *state = d;
        return 0;
}

static int teardown(void **state) {
        Dirs *d = *state;
        close(d->rootfd);
        char *cmd[] = { (char *)"rm", (char *)"-rf", d->root, d->outside, NULL };
        pid_t pid = fork();
        if (pid == 0) {
                execvp(cmd[0], cmd);
                _exit(127);
        }
        int st;
        waitpid(pid, &st, 0);
        free(d);
        return 0;
}

static void test_create_write_read(void **state) {
        Dirs *d = *state;
        int fd = beneath_open_dir(d->rootfd, "k8s.io/manifests", true, 0755);
        assert_true(fd >= 0);
        assert_int_equal(beneath_write_file_atomic(fd, "etcd.manifest", "abc", 3, 0644, true), 1);
        assert_int_equal(beneath_write_file_atomic(fd, "etcd.manifest", "abc", 3, 0644, true), 0);
        char *text = NULL;
        size_t len;
        assert_int_equal(beneath_read_file(fd, "etcd.manifest", 100, &text, &len), 0);
        assert_string_equal(text, "abc");
        free(text);
        assert_int_equal(beneath_read_file(fd, "missing", 100, &text, &len), -ENOENT);
        assert_int_equal(beneath_open_dir(d->rootfd, "../x", true, 0755), -EINVAL);
        assert_int_equal(beneath_open_dir(d->rootfd, "/etc", false, 0755), -EINVAL);
        assert_int_equal(beneath_write_file_atomic(fd, "../x", "a", 1, 0644, false), -EINVAL);
        close(fd);
}

static void test_symlinked_directory_not_followed(void **state) {
        Dirs *d = *state;
        char *link = strjoin(d->root, "/k8s.io");
        assert_int_equal(symlink(d->outside, link), 0);
        assert_int_equal(beneath_open_dir(d->rootfd, "k8s.io/manifests", true, 0755), -ELOOP);
        /* nothing was created outside */
        char *planted = strjoin(d->outside, "/manifests");
        assert_int_equal(access(planted, F_OK), -1);
        free(planted);
        free(link);
}

static void test_symlinked_file_replaced_not_followed(void **state) {
        Dirs *d = *state;
        char *victim = strjoin(d->outside, "/victim"), *link = strjoin(d->root, "/etcd.manifest");
        assert_int_equal(write_file_atomic(victim, "precious", 8, 0644, 0), 1);
        assert_int_equal(symlink(victim, link), 0);
        char *text = NULL;
        size_t len;
        assert_int_equal(beneath_read_file(d->rootfd, "etcd.manifest", 100, &text, &len), -ELOOP);
        assert_int_equal(beneath_write_file_atomic(d->rootfd, "etcd.manifest", "new", 3, 0644, true), 1);
        assert_int_equal(read_full_file(victim, 100, &text, &len), 0);
        assert_string_equal(text, "precious");
        free(text);
        struct stat st;
        assert_int_equal(lstat(link, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        free(victim);
        free(link);
}

static void test_fifo_never_blocks(void **state) {
        Dirs *d = *state;
        char *fifo = strjoin(d->root, "/etcd.manifest");
        assert_int_equal(mkfifo(fifo, 0600), 0);
        char *text = NULL;
        size_t len;
        /* a blocking open of a FIFO with no writer would hang here */
        assert_int_equal(beneath_read_file(d->rootfd, "etcd.manifest", 100, &text, &len), -EBADFD);
        assert_int_equal(beneath_write_file_atomic(d->rootfd, "etcd.manifest", "x", 1, 0644, true), 1);
        struct stat st;
        assert_int_equal(lstat(fifo, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        free(fifo);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_create_write_read, setup, teardown),
                cmocka_unit_test_setup_teardown(test_symlinked_directory_not_followed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_symlinked_file_replaced_not_followed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fifo_never_blocks, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
