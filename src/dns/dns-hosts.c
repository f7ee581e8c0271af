/* SPDX-License-Identifier: Apache-2.0 */
#include "dns/dns-hosts.h"

#include <dirent.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/stop.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "dns/dns-provider.h"
#include "dns/dns-wire.h"
#include "spec/spec.h"

void hosts_file_done(HostsFile *h) {
        free(h->before);
        free(h->after);
        free(h->block);
        free(h->repair_data);
        dns_rrset_list_done(&h->entries);
        *h = (HostsFile){};
}

/* The line [p, eol) without trailing blanks and CR equals marker. */
static bool line_is(const char *p, const char *eol, const char *marker) {
        while (eol > p && (eol[-1] == ' ' || eol[-1] == '\t' || eol[-1] == '\r'))
                eol--;
        size_t n = strlen(marker);
        return (size_t)(eol - p) == n && memcmp(p, marker, n) == 0;
}

/* A host name as hosts files have them (RFC 1123 §2.1, plus '_'): anything else, including escapes and the
 * root, would not survive rendering and resolving. */
static bool hosts_name_valid(const char *s) {
        if (isempty(s) || streq(s, ".") || s[0] == '.')
                return false;
        for (const char *p = s; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                      *p == '-' || *p == '_' || *p == '.'))
                        return false;
        return true;
}

static int parse_block_line(HostsFile *h, const char *p, const char *eol) {
        _cleanup_free_ char *line = strndup(p, (size_t)(eol - p));
        _cleanup_strv_free_ char **fields = NULL;
        char *hash;
        int r;

        if (!line)
                return -ENOMEM;
        hash = strchr(line, '#');
        if (hash)
                *hash = 0;
        r = strv_split(line, " \t\r", &fields);
        if (r < 0)
                return r;
        size_t n = strv_length(fields);
        if (n == 0)
                return 0;
        uint8_t b[16];
        size_t len;
        if (n < 2 || dns_address_parse(fields[0], b, &len) < 0) {
                h->n_invalid++;
                return 0;
        }
        for (size_t i = 1; i < n; i++) {
                if (!hosts_name_valid(fields[i])) {
                        h->n_invalid++;
                        continue;
                }
                r = dns_rrset_list_add_address(&h->entries, fields[i], 0, fields[0]);
                if (r == PK_EMALFORMED)
                        h->n_invalid++;
                else if (r < 0)
                        return r;
        }
        return 0;
}

static int copy_range(const char *p, size_t n, char **ret, size_t *ret_len) {
        char *s = malloc(n + 1);
        if (!s)
                return -ENOMEM;
        memcpy(s, p, n);
        s[n] = 0;
        *ret = s;
        *ret_len = n;
        return 0;
}

/* Characters of a line of ours: addresses, names, blanks. */
static bool block_text_chars(const char *p, const char *eol) {
        for (; p < eol; p++) {
                bool letter = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z');
                if (!letter && (!*p || !strchr("0123456789:.-_ \t", *p)))
                        return false;
        }
        return true;
}

/* An old version rewrote the file in place and truncated it afterwards. Killed in between after a block
 * that shrank, it left the new text followed by the old text's tail: the rest of the old block, its End
 * marker (now an orphan), and again everything that follows the block. Recognised by exactly that shape:
 * the text after the orphan marker repeats the start of the text between the two End markers, and the
 * rest in between is lines of ours (the first possibly cut). Then the file ends after that repeated text. */
static bool is_stale_tail(const char *after, const char *orphan, const char *orphan_next, const char *end) {
        size_t m = (size_t)(orphan - after), n = (size_t)(end - orphan_next);
        if (n > m || memcmp(after, orphan_next, n) != 0)
                return false;
        for (const char *p = after + n; p < orphan;) {
                const char *eol = memchr(p, '\n', (size_t)(orphan - p));
                if (!eol || !block_text_chars(p, eol))
                        return false;
                if (p != after + n && p != eol) {
                        HostsFile probe = {};
                        int r = parse_block_line(&probe, p, eol);
                        bool ok = r >= 0 && probe.n_invalid == 0;
                        hosts_file_done(&probe);
                        if (!ok)
                                return false;
                }
                p = eol + 1;
        }
        return true;
}

/* The markers and the block of text; *ret_len: how much of text the file should be (less than len when it
 * ends in an old version's stale tail). */
static int parse_text(const char *text, size_t len, HostsFile *ret, size_t *ret_len, char **ret_error) {
        _cleanup_(hosts_file_done) HostsFile h = {};
        const char *end = text + len, *begin = NULL, *stop = NULL, *after = NULL;
        unsigned line = 0, begin_line = 0;
        int r;

        for (const char *p = text; p < end;) {
                const char *eol = memchr(p, '\n', (size_t)(end - p));
                const char *next = eol ? eol + 1 : end;
                if (!eol)
                        eol = end;
                line++;
                if (line_is(p, eol, HOSTS_BEGIN_MARKER)) {
                        if (begin) {
                                *ret_error = strprintf("line %u: a second '%s' (line %u was the first)",
                                                       line, HOSTS_BEGIN_MARKER, begin_line);
                                return PK_EMALFORMED;
                        }
                        begin = p;
                        begin_line = line;
                } else if (line_is(p, eol, HOSTS_END_MARKER)) {
                        if (stop && is_stale_tail(after, p, next, end)) {
                                end = after + (end - next);
                                break;
                        }
                        if (!begin || stop) {
                                *ret_error = strprintf("line %u: '%s' without a matching begin marker", line,
                                                       HOSTS_END_MARKER);
                                return PK_EMALFORMED;
                        }
                        stop = p;
                        after = next;
                } else if (begin && !stop) {
                        r = parse_block_line(&h, p, eol);
                        if (r < 0)
                                return r;
                }
                p = next;
        }
        if (begin && !stop) {
                *ret_error = strprintf("line %u: '%s' is never closed by '%s'", begin_line,
                                       HOSTS_BEGIN_MARKER, HOSTS_END_MARKER);
                return PK_EMALFORMED;
        }
        if (!begin)
                begin = after = end;
        r = copy_range(text, (size_t)(begin - text), &h.before, &h.before_len);
        if (r >= 0)
                r = copy_range(begin, (size_t)(after - begin), &h.block, &h.block_len);
        if (r >= 0)
                r = copy_range(after, (size_t)(end - after), &h.after, &h.after_len);
        if (r < 0)
                return r;
        dns_rrset_list_sort(&h.entries);
        *ret_len = (size_t)(end - text);
        *ret = h;
        h = (HostsFile){};
        return 0;
}

int hosts_file_parse(const char *text, size_t len, HostsFile *ret, char **ret_error) {
        _cleanup_(hosts_file_done) HostsFile h = {};
        _cleanup_free_ char *redo = NULL, *logical = NULL;
        size_t keep = len, redo_len = 0, logical_len, used;
        int r;

        if (len > HOSTS_DISK_MAX)
                return PK_ETOOBIG;
        r = hosts_journal_recover(text, len, &keep, &redo, &redo_len, ret_error);
        if (r < 0)
                return r;
        bool journal = r > 0;
        if (journal) {
                logical_len = keep + redo_len;
                logical = malloc(logical_len + 1);
                if (!logical)
                        return -ENOMEM;
                memcpy(logical, text, keep);
                if (redo_len > 0)
                        memcpy(logical + keep, redo, redo_len);
                logical[logical_len] = 0;
        } else
                logical_len = len;
        if (logical_len > HOSTS_FILE_MAX)
                return PK_ETOOBIG;
        r = parse_text(journal ? logical : text, logical_len, &h, &used, ret_error);
        if (r < 0)
                return r;
        if (journal || used < logical_len) {
                /* The repair: keep, then the part of the redo text that stays, then the end. */
                h.repair = true;
                h.repair_keep = MIN(keep, used);
                h.repair_len = used > keep ? used - keep : 0;
                if (h.repair_len > 0) {
                        h.repair_data = TAKE_PTR(redo);
                        h.repair_data[h.repair_len] = 0;
                }
        }
        *ret = h;
        h = (HostsFile){};
        return 0;
}

static int strv_sort_compare(const void *a, const void *b) {
        return strcmp(*(char *const *)a, *(char *const *)b);
}

int hosts_block_render(const DnsRRsetList *entries, char **ret, size_t *ret_len) {
        _cleanup_strv_free_ char **addresses = NULL, **lines = NULL;
        _cleanup_buf_ Buf b;
        int r;

        buf_init(&b, HOSTS_FILE_MAX);
        for (size_t i = 0; i < entries->n; i++)
                STRV_FOREACH (a, entries->items[i].addresses)
                        if (!strv_contains(addresses, *a) && strv_extend(&addresses, *a) < 0)
                                return -ENOMEM;
        STRV_FOREACH (a, addresses) {
                _cleanup_strv_free_ char **names = NULL;
                for (size_t i = 0; i < entries->n; i++) {
                        if (!strv_contains(entries->items[i].addresses, *a))
                                continue;
                        /* hosts files name hosts without the final dot. */
                        _cleanup_free_ char *n =
                            strndup(entries->items[i].name, strlen(entries->items[i].name) - 1);
                        if (!n || (!strv_contains(names, n) && strv_extend(&names, n) < 0))
                                return -ENOMEM;
                }
                strv_sort(names);
                _cleanup_free_ char *joined = strv_join(names, " ");
                _cleanup_free_ char *l = joined ? strjoin(*a, "\t", joined) : NULL;
                if (!l || strv_push(&lines, l) < 0)
                        return -ENOMEM;
                l = NULL;
        }
        if (lines)
                qsort_safe(lines, strv_length(lines), sizeof(char *), strv_sort_compare);
        r = buf_add_str(&b, HOSTS_BEGIN_MARKER "\n");
        STRV_FOREACH (l, lines)
                if (r >= 0)
                        r = buf_printf(&b, "%s\n", *l);
        if (r >= 0)
                r = buf_add_str(&b, HOSTS_END_MARKER "\n");
        if (r < 0)
                return r;
        *ret_len = b.len;
        *ret = buf_steal_str(&b);
        return *ret ? 0 : -ENOMEM;
}

int hosts_file_render(const HostsFile *h, const char *block, size_t block_len, char **ret, size_t *ret_len) {
        _cleanup_buf_ Buf b;
        int r;

        buf_init(&b, HOSTS_FILE_MAX);
        r = buf_add(&b, h->before, h->before_len);
        /* A block appended to a file whose last line has no newline starts on a line of its own. */
        if (r >= 0 && h->block_len == 0 && h->before_len > 0 && h->before[h->before_len - 1] != '\n')
                r = buf_add_str(&b, "\n");
        if (r >= 0)
                r = buf_add(&b, block, block_len);
        if (r >= 0)
                r = buf_add(&b, h->after, h->after_len);
        if (r < 0)
                return r;
        *ret_len = b.len;
        *ret = buf_steal_str(&b);
        return *ret ? 0 : -ENOMEM;
}

/* The provider. */

struct DnsProviderState {
        char *path;
        bool repair_pending; /* the last read found something only a write repairs */
};

static int hosts_open(const ClusterSpec *spec, DnsProviderState **ret, char **ret_error) {
        DnsProviderState *s = new0(DnsProviderState, 1);
        if (!s)
                return -ENOMEM;
        s->path = strdup(spec->dns.hosts.file ?: "/etc/hosts");
        if (!s->path) {
                free(s);
                return -ENOMEM;
        }
        *ret = s;
        return 0;
}

static void hosts_close(DnsProviderState *s) {
        if (!s)
                return;
        free(s->path);
        free(s);
}

static bool hosts_repair_pending(DnsProviderState *s) {
        return s->repair_pending;
}

/* Locks the file against other protokube processes, with a deadline. */
static int lock_with_deadline(int fd) {
        usec_t deadline = now(CLOCK_MONOTONIC) + 2 * USEC_PER_SEC;
        for (;;) {
                if (flock(fd, LOCK_EX | LOCK_NB) == 0)
                        return 0;
                if (errno != EWOULDBLOCK && errno != EINTR)
                        return -errno;
                int r = deadline_sleep(deadline, 20 * USEC_PER_MSEC);
                if (r < 0)
                        return r;
        }
}

/* Opens and locks path. The lock is on the inode, and another protokube may rename a new file over path
 * while we wait for it: then the lock we got is on a file nobody reads any more, so open again. */
static int open_locked(const char *path, int *ret_fd) {
        for (unsigned i = 0; i < 10; i++) {
                _cleanup_close_ int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY, 0644);
                struct stat a, b;
                int r;

                if (fd < 0)
                        return -errno;
                r = lock_with_deadline(fd);
                if (r < 0)
                        return r;
                if (fstat(fd, &a) < 0)
                        return -errno;
                if (stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
                        *ret_fd = TAKE_FD(fd);
                        return 0;
                }
        }
        return PK_ETIMEOUT;
}

/* The rename path's temporary files: ".NAME.protokube-XXXXXX" next to the file. */
static char *temp_prefix(const char *path) {
        _cleanup_free_ char *d = strdup(path), *b = strdup(path);
        if (!d || !b)
                return NULL;
        return strjoin(dirname(d), "/.", basename(b), ".protokube-");
}

/* A pass killed between creating its temporary file and the rename leaves the file behind. Counts them,
 * and removes them with remove (only under the lock: nobody else is writing one then). */
static int stale_temps(const char *path, bool remove) {
        _cleanup_free_ char *prefix = temp_prefix(path);
        if (!prefix)
                return -ENOMEM;
        char *slash = strrchr(prefix, '/');
        const char *name_prefix = slash + 1;
        *slash = 0;
        DIR *d = opendir(*prefix ? prefix : "/");
        unsigned n = 0;
        int r = 0;

        if (!d)
                return errno == ENOENT ? 0 : -errno;
        for (struct dirent *de; (de = readdir(d));) {
                const char *rest = startswith(de->d_name, name_prefix);
                if (!rest || strlen(rest) != 6)
                        continue;
                n++;
                if (remove && unlinkat(dirfd(d), de->d_name, 0) < 0 && errno != ENOENT) {
                        r = -errno;
                        break;
                }
        }
        closedir(d);
        return r < 0 ? r : (int)MIN(n, (unsigned)INT32_MAX);
}

static int hosts_load(DnsProviderState *s, int fd, HostsFile *ret, char **ret_error) {
        _cleanup_free_ char *text = NULL, *msg = NULL;
        size_t len;
        int r;

        if (lseek(fd, 0, SEEK_SET) < 0)
                return -errno;
        r = read_full_fd(fd, HOSTS_DISK_MAX, &text, &len);
        if (r < 0) {
                *ret_error = strprintf("cannot read hosts file '%s': %s", s->path, pk_strerror(r));
                return r;
        }
        r = hosts_file_parse(text, len, ret, &msg);
        if (r < 0)
                *ret_error = strprintf("hosts file '%s': %s", s->path, msg ? msg : pk_strerror(r));
        return r;
}

static int hosts_read(DnsProviderState *s, const DnsRRsetList *owned, DnsRRsetList *ret, char **ret_error) {
        _cleanup_(hosts_file_done) HostsFile h = {};
        _cleanup_rrset_list_ DnsRRsetList l = {};
        _cleanup_close_ int fd = -1;
        int r;

        fd = open(s->path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0 && errno != ENOENT) {
                r = -errno;
                *ret_error = strprintf("cannot open hosts file '%s': %s", s->path, pk_strerror(r));
                return r;
        }
        if (fd >= 0) {
                r = hosts_load(s, fd, &h, ret_error);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < owned->n; i++) {
                DnsRRset *cur = dns_rrset_list_find(&h.entries, owned->items[i].name, owned->items[i].type);
                DnsRRset empty = { .name = owned->items[i].name, .type = owned->items[i].type };
                r = dns_rrset_list_copy_entry(&l, cur ?: &empty);
                if (r < 0)
                        return r;
        }
        /* Temporary files are next to the file a symbolic link points to. A failed directory listing
         * only means no cleanup now. */
        _cleanup_free_ char *target = realpath(s->path, NULL);
        s->repair_pending = h.repair || stale_temps(target ?: s->path, false) > 0;
        dns_rrset_list_sort(&l);
        *ret = l;
        l = (DnsRRsetList){};
        return 0;
}

/* A bind mount of the file itself (statx() knows since Linux 5.8; older kernels: rename() says EBUSY). */
static bool is_mount_point(int fd) {
        struct statx sx;
        if (statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &sx) < 0)
                return false;
        return (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
               (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

/* The normal path: a temporary file next to it with the old file's owner and mode, fsync, rename over
 * it, fsync the directory. Readers see the old file or the new one, never a mix, whenever we are killed.
 * A file with hard links would keep the old text under its other names: -EMLINK, written in place. */
static int write_by_rename(const char *path, int fd_file, const struct stat *st, const char *text,
                           size_t len) {
        _cleanup_free_ char *prefix = temp_prefix(path), *tmp = NULL;
        _cleanup_close_ int fd = -1;
        int r;

        if (st->st_nlink > 1)
                return -EMLINK;
        if (is_mount_point(fd_file))
                return -EBUSY; /* what rename() would say, after a temporary file written for nothing */
        tmp = prefix ? strjoin(prefix, "XXXXXX") : NULL;
        if (!tmp)
                return -ENOMEM;
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = loop_write(fd, text, len);
        if (r >= 0 && fchown(fd, st->st_uid, st->st_gid) < 0)
                r = -errno;
        if (r >= 0 && fchmod(fd, st->st_mode & 07777) < 0)
                r = -errno;
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        if (r >= 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0) {
                (void)unlink(tmp);
                return r;
        }
        return fsync_parent_dir(path);
}

/* Where rename() cannot replace the file, it is rewritten in place. EBUSY: a bind mount (/etc/hosts in
 * containers, kubelet's pod hosts files); where rename over a mount point works, the mount would go on
 * showing the old inode. EXDEV: the same, seen across mounts. EACCES, EPERM, EROFS: the directory is not
 * ours to change (read-only /etc with a writable hosts file bind-mounted on it, a sticky directory) or the
 * owner cannot be kept (not root); EMLINK: hard links. */
static bool rename_refused(int r) {
        return r == -EBUSY || r == -EXDEV || r == -EACCES || r == -EPERM || r == -EROFS || r == -EMLINK;
}

/* In place, crash-safe through the journal steps of hosts_write_plan() (dns-hosts-journal.c), each made
 * durable before the next starts. */
static int write_in_place(int fd, const HostsFile *h, const char *text, size_t len) {
        _cleanup_(hosts_write_plan_done) HostsWritePlan plan = {};
        int r;

        r = hosts_write_plan(h, text, len, &plan);
        if (r < 0)
                return r;
        for (size_t i = 0; i < plan.n; i++) {
                const HostsWrite *w = &plan.steps[i];
                if (w->data)
                        r = loop_pwrite(fd, w->data, w->len, w->offset);
                else if (ftruncate(fd, (off_t)w->offset) < 0)
                        r = -errno;
                if (r >= 0 && fsync(fd) < 0)
                        r = -errno;
                if (r < 0)
                        return r;
        }
        return 0;
}

static int read_back(const char *path, const char *text, size_t len) {
        _cleanup_free_ char *check = NULL;
        size_t check_len;
        int r = read_full_file(path, HOSTS_DISK_MAX, &check, &check_len);
        if (r < 0)
                return r;
        return check_len == len && memcmp(check, text, len) == 0 ? 0 : -EIO;
}

static int hosts_apply_changes(HostsFile *h, const DnsRRsetList *changes) {
        for (size_t i = 0; i < changes->n; i++) {
                const DnsRRset *c = &changes->items[i];
                DnsRRset *e;
                int r = dns_rrset_list_get(&h->entries, c->name, c->type, 0, &e);
                if (r < 0)
                        return r;
                e->addresses = strv_free(e->addresses);
                for (char **a = c->addresses; a && *a; a++) {
                        r = dns_rrset_add_address(e, *a);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static int hosts_apply(DnsProviderState *s, const DnsRRsetList *changes, char **ret_error) {
        _cleanup_(hosts_file_done) HostsFile h = {};
        _cleanup_free_ char *block = NULL, *text = NULL, *target = NULL;
        _cleanup_close_ int fd = -1;
        size_t block_len, len;
        struct stat st;
        int r;

        /* A symbolic link stays one: the file it points to is replaced. */
        target = realpath(s->path, NULL);
        if (!target && errno != ENOENT) {
                r = -errno;
                *ret_error = strprintf("cannot resolve hosts file '%s': %s", s->path, pk_strerror(r));
                return r;
        }
        if (!target && !(target = strdup(s->path)))
                return -ENOMEM;
        r = open_locked(target, &fd);
        if (r < 0) {
                *ret_error = strprintf("cannot open and lock hosts file '%s': %s", s->path, pk_strerror(r));
                return r;
        }
        r = stale_temps(target, true);
        if (r < 0) {
                *ret_error = strprintf("cannot remove stale temporary files of hosts file '%s': %s", s->path,
                                       pk_strerror(r));
                return r;
        }
        r = hosts_load(s, fd, &h, ret_error);
        if (r < 0)
                return r;
        r = hosts_apply_changes(&h, changes);
        if (r >= 0)
                r = hosts_block_render(&h.entries, &block, &block_len);
        if (r < 0)
                return r;
        /* Rewritten only when the block changes, or to repair an interrupted rewrite. */
        if (!h.repair && block_len == h.block_len && memcmp(block, h.block, block_len) == 0)
                return 0;
        r = hosts_file_render(&h, block, block_len, &text, &len);
        if (r < 0)
                return r;
        if (fstat(fd, &st) < 0)
                return -errno;
        r = write_by_rename(target, fd, &st, text, len);
        if (rename_refused(r))
                r = write_in_place(fd, &h, text, len);
        if (r >= 0)
                r = read_back(target, text, len);
        if (r < 0) {
                *ret_error = strprintf("cannot write hosts file '%s': %s", s->path,
                                       r == -EIO ? "it did not read back as written" : pk_strerror(r));
                return r;
        }
        return 1;
}

const DnsProvider dns_provider_hosts = {
        .name = "hosts",
        .tracks_ttl = false,
        .open = hosts_open,
        .close = hosts_close,
        .read = hosts_read,
        .apply = hosts_apply,
        .repair_pending = hosts_repair_pending,
};
