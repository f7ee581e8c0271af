/* SPDX-License-Identifier: Apache-2.0 */
#include "dns/dns-hosts.h"

#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "dns/dns-provider.h"
#include "dns/dns-wire.h"
#include "spec/spec.h"

void hosts_file_done(HostsFile *h) {
        free(h->before);
        free(h->after);
        free(h->block);
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

int hosts_file_parse(const char *text, size_t len, HostsFile *ret, char **ret_error) {
        _cleanup_(hosts_file_done) HostsFile h = {};
        const char *end = text + len, *begin = NULL, *stop = NULL, *after = NULL;
        unsigned line = 0, begin_line = 0;
        int r;

        if (len > HOSTS_FILE_MAX)
                return PK_ETOOBIG;
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
                qsort(lines, strv_length(lines), sizeof(char *), strv_sort_compare);
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

/* Locks the file against other protokube processes, with a deadline. */
static int lock_with_deadline(int fd) {
        for (unsigned i = 0; i < 100; i++) {
                if (flock(fd, LOCK_EX | LOCK_NB) == 0)
                        return 0;
                if (errno != EWOULDBLOCK && errno != EINTR)
                        return -errno;
                nanosleep(&(struct timespec){ .tv_nsec = 20 * 1000 * 1000 }, NULL);
        }
        return PK_ETIMEOUT;
}

static int hosts_load(DnsProviderState *s, int fd, HostsFile *ret, char **ret_error) {
        _cleanup_free_ char *text = NULL, *msg = NULL;
        size_t len;
        int r;

        if (lseek(fd, 0, SEEK_SET) < 0)
                return -errno;
        r = read_full_fd(fd, HOSTS_FILE_MAX, &text, &len);
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
        dns_rrset_list_sort(&l);
        *ret = l;
        l = (DnsRRsetList){};
        return 0;
}

/* Why not write_file_atomic(): /etc/hosts is often a bind mount (containers, kubelet's pod hosts files),
 * and rename() over a mount point fails with EBUSY, or, where it works, leaves the mount showing the old
 * inode. So the file is rewritten in place (write, truncate, fsync), then read back and compared, under
 * flock() against a concurrent protokube. A reader may briefly see a partial file; a crash mid-write is
 * repaired by the next pass, which rewrites the block. */
static int write_in_place(int fd, const char *data, size_t len) {
        _cleanup_free_ char *check = NULL;
        size_t check_len;
        int r;

        if (lseek(fd, 0, SEEK_SET) < 0)
                return -errno;
        r = loop_write(fd, data, len);
        if (r < 0)
                return r;
        if (ftruncate(fd, (off_t)len) < 0 || fsync(fd) < 0)
                return -errno;
        if (lseek(fd, 0, SEEK_SET) < 0)
                return -errno;
        r = read_full_fd(fd, HOSTS_FILE_MAX, &check, &check_len);
        if (r < 0)
                return r;
        if (check_len != len || memcmp(check, data, len) != 0)
                return -EIO;
        return 0;
}

static int hosts_apply(DnsProviderState *s, const DnsRRsetList *changes, char **ret_error) {
        _cleanup_(hosts_file_done) HostsFile h = {};
        _cleanup_free_ char *block = NULL, *text = NULL;
        _cleanup_close_ int fd = -1;
        size_t block_len, len;
        int r;

        fd = open(s->path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY, 0644);
        if (fd < 0) {
                r = -errno;
                *ret_error =
                    strprintf("cannot open hosts file '%s' for writing: %s", s->path, pk_strerror(r));
                return r;
        }
        r = lock_with_deadline(fd);
        if (r < 0) {
                *ret_error = strprintf("cannot lock hosts file '%s': %s", s->path, pk_strerror(r));
                return r;
        }
        r = hosts_load(s, fd, &h, ret_error);
        if (r < 0)
                return r;
        for (size_t i = 0; i < changes->n; i++) {
                const DnsRRset *c = &changes->items[i];
                DnsRRset *e;
                r = dns_rrset_list_get(&h.entries, c->name, c->type, 0, &e);
                if (r < 0)
                        return r;
                e->addresses = strv_free(e->addresses);
                for (char **a = c->addresses; a && *a; a++) {
                        r = dns_rrset_add_address(e, *a);
                        if (r < 0)
                                return r;
                }
        }
        r = hosts_block_render(&h.entries, &block, &block_len);
        if (r < 0)
                return r;
        /* Rewritten only when the block changes. */
        if (block_len == h.block_len && memcmp(block, h.block, block_len) == 0)
                return 0;
        r = hosts_file_render(&h, block, block_len, &text, &len);
        if (r < 0)
                return r;
        r = write_in_place(fd, text, len);
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
};
