/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Which process holds a kubelet's lock file, found without opening the file. kubelet started with
 * --lock-file=F --exit-on-lock-contention takes an exclusive flock on F and watches F with inotify: any
 * open() of F by another process, even read-only, makes it exit. stat() raises no IN_OPEN, and the kernel
 * lists every flock in /proc/locks by the device and inode of its file, so the holder is found there. */

#include <stdbool.h>
#include <sys/types.h>

#include "basic/time-util.h"

#define POD_UID_MAX 37 /* a Kubernetes pod uid (36 characters) and its NUL */

/* What protokube can tell of a process without touching the files it holds: enough to say whether a kubelet
 * is the one the init system started or the one a pod runs. */
typedef struct ProcessFacts {
        pid_t pid;
        /* The Kubernetes pod whose cgroup it is in, "" when none: a component "pod<uid>" of its cgroup path
         * (cgroupfs driver: /kubepods/burstable/pod<uid>/<container id>) or "kubepods-...-pod<uid>.slice"
         * with '_' for '-' (systemd driver), on any line of /proc/PID/cgroup (a v1 hierarchy or the v2 one).
         * Only 36 characters of [0-9a-f-] count as a uid. */
        char pod_uid[POD_UID_MAX];
        /* CLOCK_REALTIME microseconds when it started: starttime (field 22 of /proc/PID/stat, clock ticks
         * since boot) after btime (/proc/stat, whole seconds), so to about a second. With pid, it tells a
         * process from a later one that reused its pid. */
        usec_t started;
} ProcessFacts;

/* The pid holding a flock (exclusive or shared) on the file at path, from <proc_root>/locks; proc_root is
 * "/proc", or a test's directory laid out like it. The file is stat()ed, never opened. Waiters blocked on
 * the lock ("N: -> FLOCK ...") do not hold it and are skipped, as are POSIX, OFD locks, leases and lines
 * that do not parse. The pid is the process that took the lock (it may have ended since, leaving the lock
 * with a child that inherited the file); holders in pid namespaces this process cannot see are not listed by
 * the kernel, so protokube must run in the host's. Of several shared holders, the first listed. Returns 1
 * with *ret_pid, 0 when no process holds one, -ENOENT when path does not exist (no lock file), other < 0
 * when path or /proc/locks cannot be read (-ENOSYS when there is no /proc/locks). */
int flock_holder_find(const char *proc_root, const char *path, pid_t *ret_pid);

/* The facts of pid from <proc_root>/<pid>/cgroup, <proc_root>/<pid>/stat and <proc_root>/stat, into *ret.
 * -ESRCH when the process is gone (its directory missing; also for a pid <= 0), PK_EMALFORMED when the
 * kernel's text does not parse, other < 0 when a file cannot be read. */
int process_facts_read(const char *proc_root, pid_t pid, ProcessFacts *ret);
