/* SPDX-License-Identifier: Apache-2.0 */
/* proc_files_open_on(): a file held open on a file system is found by its device, through /proc, and a
 * closed one is not (the restore's "etcd has stopped" test, docs/etcd-restore.md). */
#include "unit-test.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "basic/proc-util.h"

static void test_open_file_found(void **state) {
        (void)state;
        char path[] = "/tmp/pk-proc-util-XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        struct stat st;
        assert_int_equal(fstat(fd, &st), 0);
        pid_t pid = 0;
        assert_int_equal(proc_files_open_on(st.st_dev, &pid), 1);
        assert_true(pid > 0);
        close(fd);
        unlink(path);
}

static void test_no_file_on_device(void **state) {
        (void)state;
        /* no process has a file open on a device number that names no file system */
        assert_int_equal(proc_files_open_on(makedev(4095, 1048575), NULL), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_open_file_found),
                cmocka_unit_test(test_no_file_on_device),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
