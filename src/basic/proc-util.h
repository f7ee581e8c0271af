/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/* Whether any process has a file open on the file system whose st_dev is dev: every /proc/<pid>/fd/<n>
 * stat()ed (the target, so a file opened through another mount namespace counts: kubelet's containers and
 * the test's pod runner see the volume under other paths, the device is the same). 1 with the first such
 * PID in *ret_pid (may be NULL), 0 when none, < 0 when /proc cannot be read. Processes that end while it
 * looks are skipped. */
int proc_files_open_on(dev_t dev, pid_t *ret_pid);
