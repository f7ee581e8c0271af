/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/flock-holder.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/parse-util.h"
#include "basic/string-util.h"

/* Caps on the kernel's text: /proc/locks has a line (~60 bytes) per lock in the system; /proc/stat a line
 * per CPU and one with a count per interrupt. */
#define LOCKS_MAX      (16U * 1024 * 1024)
#define PROC_STAT_MAX  (4U * 1024 * 1024)
#define PID_FILE_MAX   (64U * 1024)
#define POD_UID_LEN    (POD_UID_MAX - 1)
#define STAT_STARTTIME 22 /* proc(5): the field of /proc/PID/stat with the start time */

/* Splits line in place at blanks into at most max words; returns how many. */
static size_t split_words(char *line, char **words, size_t max) {
        size_t n = 0;
        for (char *p = line; n < max;) {
                p += strspn(p, " \t");
                if (!*p)
                        break;
                words[n++] = p;
                p += strcspn(p, " \t");
                if (*p)
                        *p++ = 0;
        }
        return n;
}

/* Cuts *text at its next newline: the line, or NULL at the end. */
static char *next_line(char **text) {
        char *line = *text;
        if (!line || !*line)
                return NULL;
        char *nl = strchr(line, '\n');
        if (nl)
                *nl++ = 0;
        *text = nl;
        return line;
}

/* Hex digits (at most 8: the kernel's MAJOR and MINOR are 12 and 20 bits) then a ':', consumed from *p. */
static int parse_hex_colon(const char **p, unsigned *ret) {
        unsigned v = 0;
        size_t n = 0;
        for (; isxdigit((unsigned char)(*p)[n]); n++) {
                if (n >= 8)
                        return -ERANGE;
                char c = (char)tolower((unsigned char)(*p)[n]);
                v = v << 4 | (unsigned)(isdigit((unsigned char)c) ? c - '0' : c - 'a' + 10);
        }
        if (n == 0 || (*p)[n] != ':')
                return -EINVAL;
        *p += n + 1;
        *ret = v;
        return 0;
}

/* Whether a /proc/locks "MAJOR:MINOR:INODE" names st's file. fs/locks.c lock_get_status() prints
 * "%02x:%02x:%lu": the major and minor of the superblock's s_dev in hex, the inode number in decimal. That
 * s_dev is the st_dev stat() reports on most file systems (not for a btrfs subvolume, whose st_dev is its
 * own anonymous device). */
static bool lock_names_file(const char *s, const struct stat *st) {
        unsigned maj, min;
        uint64_t ino;
        if (parse_hex_colon(&s, &maj) < 0 || parse_hex_colon(&s, &min) < 0 || safe_atou64(s, &ino) < 0)
                return false;
        return maj == major(st->st_dev) && min == minor(st->st_dev) && ino == (uint64_t)st->st_ino;
}

/* The pid of a /proc/locks line "N: FLOCK  ADVISORY  WRITE 1234 fd:01:123456 0 EOF" holding a flock on st's
 * file; 0 for any other line. A blocked waiter's line has "->" after "N:" and so never matches. A remote
 * (NFS) lock shows a pid <= 0, which names no process here. */
static pid_t locks_line_holder(char *line, const struct stat *st) {
        char *w[6];
        int pid;
        if (split_words(line, w, ELEMENTSOF(w)) < ELEMENTSOF(w))
                return 0;
        if (!endswith(w[0], ":") || !streq(w[1], "FLOCK") || !streq(w[2], "ADVISORY") ||
            !(streq(w[3], "WRITE") || streq(w[3], "READ")))
                return 0;
        if (safe_atoi(w[4], &pid) < 0 || pid <= 0 || !lock_names_file(w[5], st))
                return 0;
        return (pid_t)pid;
}

int flock_holder_find(const char *proc_root, const char *path, pid_t *ret_pid) {
        _cleanup_free_ char *locks = strprintf("%s/locks", proc_root), *text = NULL;
        struct stat st;
        if (!locks)
                return -ENOMEM;
        if (stat(path, &st) < 0) /* never open(): kubelet exits on IN_OPEN */
                return -errno;
        int r = read_full_file(locks, LOCKS_MAX, &text, NULL);
        if (r == -ENOENT) /* no proc mounted, or a kernel without file locking: not "no lock file" */
                return -ENOSYS;
        if (r < 0)
                return r;
        char *rest = text;
        for (char *line; (line = next_line(&rest));) {
                pid_t pid = locks_line_holder(line, &st);
                if (pid > 0) {
                        *ret_pid = pid;
                        return 1;
                }
        }
        return 0;
}

static bool pod_uid_char(char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-';
}

/* The pod uid in one cgroup path component of n bytes, into uid; false when it names no pod. cgroupfs
 * driver: "pod<uid>"; systemd driver: "kubepods[-<qos>]-pod<uid with '_' for '-'>.slice" (systemd's unit
 * names keep '-' for nesting). */
static bool cgroup_component_pod_uid(const char *c, size_t n, char uid[static POD_UID_MAX]) {
        const size_t tail = STRLEN("-pod") + POD_UID_LEN + STRLEN(".slice");
        char u[POD_UID_MAX];
        const char *s;
        bool systemd = false;
        if (n == STRLEN("pod") + POD_UID_LEN && strneq(c, "pod", 3))
                s = c + 3;
        else if (n >= STRLEN("kubepods") + tail && strneq(c, "kubepods-", 9) &&
                 strneq(c + n - tail, "-pod", 4) && strneq(c + n - 6, ".slice", 6)) {
                s = c + n - tail + 4;
                systemd = true;
        } else
                return false;
        for (size_t i = 0; i < POD_UID_LEN; i++) {
                if (systemd && s[i] == '-')
                        return false;
                u[i] = systemd && s[i] == '_' ? '-' : s[i];
                if (!pod_uid_char(u[i]))
                        return false;
        }
        u[POD_UID_LEN] = 0;
        memcpy(uid, u, sizeof(u));
        return true;
}

/* The pod uid of the first line of /proc/PID/cgroup ("ID:CONTROLLERS:PATH") whose path names one; "" when
 * none does. */
static void cgroup_pod_uid(char *text, char uid[static POD_UID_MAX]) {
        uid[0] = 0;
        for (char *line; (line = next_line(&text));) {
                const char *p = strchr(line, ':');
                if (!p || !(p = strchr(p + 1, ':')))
                        continue;
                for (p++; *p; p += *p == '/') {
                        size_t n = strcspn(p, "/");
                        if (cgroup_component_pod_uid(p, n, uid))
                                return;
                        p += n;
                }
        }
}

/* starttime from /proc/PID/stat: "PID (COMM) STATE PPID ...". comm may hold blanks and ')', so the fields
 * are counted from the last ')'. */
static int stat_start_ticks(char *text, uint64_t *ret) {
        char *w[STAT_STARTTIME - 2];
        char *e = strrchr(text, ')');
        if (!e || split_words(e + 1, w, ELEMENTSOF(w)) < ELEMENTSOF(w))
                return PK_EMALFORMED;
        return safe_atou64(w[STAT_STARTTIME - 3], ret) < 0 ? PK_EMALFORMED : 0;
}

/* The "btime SECONDS" line of /proc/stat: when the system booted, CLOCK_REALTIME. */
static int proc_stat_btime(char *text, uint64_t *ret) {
        for (char *line; (line = next_line(&text));) {
                const char *v = startswith(line, "btime ");
                if (v)
                        return safe_atou64(v, ret) < 0 ? PK_EMALFORMED : 0;
        }
        return PK_EMALFORMED;
}

/* btime seconds plus ticks of the USER_HZ clock, in microseconds. */
static int boot_ticks_to_usec(uint64_t btime, uint64_t ticks, usec_t *ret) {
        long hz = sysconf(_SC_CLK_TCK);
        uint64_t boot, since, t;
        if (hz <= 0)
                return -EINVAL;
        if (__builtin_mul_overflow(btime, USEC_PER_SEC, &boot) ||
            __builtin_mul_overflow(ticks / (uint64_t)hz, USEC_PER_SEC, &since) ||
            __builtin_add_overflow(since, ticks % (uint64_t)hz * USEC_PER_SEC / (uint64_t)hz, &since) ||
            __builtin_add_overflow(boot, since, &t))
                return PK_EMALFORMED;
        *ret = t;
        return 0;
}

/* <proc_root>/<pid>/<name> (caller frees); -ESRCH when the process is gone. */
static int read_pid_file(const char *proc_root, pid_t pid, const char *name, char **ret) {
        _cleanup_free_ char *path = strprintf("%s/%d/%s", proc_root, (int)pid, name);
        if (!path)
                return -ENOMEM;
        int r = read_full_file(path, PID_FILE_MAX, ret, NULL);
        /* ESRCH: it ended between the open and the read */
        return r == -ENOENT || r == -ESRCH ? -ESRCH : r;
}

int process_facts_read(const char *proc_root, pid_t pid, ProcessFacts *ret) {
        _cleanup_free_ char *pid_stat = NULL, *cgroup = NULL, *proc_stat = NULL,
                            *proc_stat_path = strprintf("%s/stat", proc_root);
        ProcessFacts f = { .pid = pid };
        uint64_t ticks, btime;
        int r;
        if (!proc_stat_path)
                return -ENOMEM;
        if (pid <= 0)
                return -ESRCH;
        if ((r = read_pid_file(proc_root, pid, "stat", &pid_stat)) < 0 ||
            (r = read_pid_file(proc_root, pid, "cgroup", &cgroup)) < 0 ||
            (r = read_full_file(proc_stat_path, PROC_STAT_MAX, &proc_stat, NULL)) < 0)
                return r;
        if ((r = stat_start_ticks(pid_stat, &ticks)) < 0 || (r = proc_stat_btime(proc_stat, &btime)) < 0 ||
            (r = boot_ticks_to_usec(btime, ticks, &f.started)) < 0)
                return r;
        cgroup_pod_uid(cgroup, f.pod_uid);
        *ret = f;
        return 0;
}
