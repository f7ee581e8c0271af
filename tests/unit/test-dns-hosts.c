/* SPDX-License-Identifier: Apache-2.0 */
/* The hosts file after a crash: every state an in-place rewrite can be cut short in (each step of the
 * write plan torn after every byte) parses as the file before or after the rewrite, with exactly one block
 * and the foreign text byte for byte; the repair the next pass writes, torn anywhere too, converges on it.
 */
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/string-util.h"
#include "dns/dns-hosts.h"
#include "unit-test.h"

#define BEGIN HOSTS_BEGIN_MARKER "\n"
#define END   HOSTS_END_MARKER "\n"

static const char BLOCK_SMALL[] = BEGIN "10.0.0.1\tapi.internal.c\n" END;
static const char BLOCK_BIG[] = BEGIN "10.0.0.1\tapi.internal.c etcd-a.internal.c etcd-events-a.internal.c\n"
                                      "10.0.0.2\tapi.internal.c etcd-b.internal.c etcd-events-b.internal.c\n"
                                      "10.0.0.3\tapi.internal.c etcd-c.internal.c etcd-events-c.internal.c\n"
                                      "fd00::2\tapi.internal.c etcd-b.internal.c\n" END;
static const char BLOCK_OTHER[] = BEGIN "10.0.0.9\tapi.internal.c\n" END; /* same size as BLOCK_SMALL */
static const char BLOCK_EMPTY[] = BEGIN END;

typedef struct Text {
        char *data;
        size_t len;
} Text;

static void text_done(Text *t) {
        free(t->data);
        *t = (Text){};
}

static Text text_cat(const char *a, const char *b, const char *c) {
        Text t = { .len = strlen(a) + strlen(b) + strlen(c) };
        t.data = strjoin(a, b, c);
        assert_non_null(t.data);
        return t;
}

/* What the disk holds after w ran for k bytes (a truncation: done when k > 0). */
static void apply_cut(Text *t, const HostsWrite *w, size_t k) {
        size_t end = w->data ? w->offset + k : w->offset;
        if (!w->data && k == 0)
                return;
        if (w->data && k == 0) /* a write of nothing does not extend the file */
                return;
        if (end > t->len) {
                t->data = realloc(t->data, end + 1);
                assert_non_null(t->data);
                memset(t->data + t->len, 0, end - t->len); /* a hole reads as zeros */
        }
        if (w->data)
                memcpy(t->data + w->offset, w->data, k);
        if (w->data)
                t->len = MAX(t->len, end);
        else
                t->len = end;
        t->data[t->len] = 0;
}

static size_t step_size(const HostsWrite *w) {
        return w->data ? w->len : 1;
}

/* The disk after steps [0, i) and step i cut after k bytes. */
static Text disk_after(const Text *start, const HostsWritePlan *p, size_t i, size_t k) {
        Text t = { .data = malloc(start->len + 1), .len = start->len };
        assert_non_null(t.data);
        memcpy(t.data, start->data, start->len + 1);
        for (size_t j = 0; j < i; j++)
                apply_cut(&t, &p->steps[j], step_size(&p->steps[j]));
        if (i < p->n)
                apply_cut(&t, &p->steps[i], k);
        return t;
}

static unsigned count(const char *s, size_t len, const char *marker) {
        unsigned n = 0;
        size_t m = strlen(marker);
        for (size_t i = 0; i + m <= len; i++)
                if (memcmp(s + i, marker, m) == 0 && (i == 0 || s[i - 1] == '\n'))
                        n++;
        return n;
}

/* disk parses as want (= head + one block + tail), and is not the same file only with repair set. */
static void assert_reads_as(const Text *disk, const Text *want, const char *head, const char *tail,
                            HostsFile *ret) {
        _cleanup_free_ char *error = NULL;
        HostsFile h = {};
        int r = hosts_file_parse(disk->data, disk->len, &h, &error);
        if (r < 0)
                fail_msg("does not parse (%s): '%s'", strnull(error), disk->data);
        assert_int_equal(h.before_len, strlen(head));
        assert_memory_equal(h.before, head, h.before_len);
        assert_int_equal(h.after_len, strlen(tail));
        assert_memory_equal(h.after, tail, h.after_len);
        assert_int_equal(h.before_len + h.block_len + h.after_len, want->len);
        assert_memory_equal(h.block, want->data + h.before_len, h.block_len);
        assert_int_equal(count(h.block, h.block_len, HOSTS_BEGIN_MARKER), 1);
        assert_int_equal(count(h.block, h.block_len, HOSTS_END_MARKER), 1);
        assert_int_equal(h.repair, disk->len != want->len || memcmp(disk->data, want->data, want->len) != 0);
        *ret = h;
}

/* The repair the next pass writes (the plan to the same text), torn, reads as want again; complete, it
 * is exactly want. Its redo write is step 2 of a rewrite again (already cut at every byte by the caller,
 * with the journal in place), so here it is cut at its ends and middle only, to keep the run short. */
static void assert_repairs(const Text *disk, const HostsFile *h, const Text *want, const char *head,
                           const char *tail) {
        _cleanup_(hosts_write_plan_done) HostsWritePlan p = {};
        assert_int_equal(hosts_write_plan(h, want->data, want->len, &p), 0);
        assert_true(p.n <= 2); /* only the repair: nothing else changes */
        for (size_t i = 0; i <= p.n; i++) {
                size_t n = i < p.n ? step_size(&p.steps[i]) : 0;
                size_t cuts[] = { 0, 1, n / 2, n > 0 ? n - 1 : 0, n };
                for (size_t c = 0; c < ELEMENTSOF(cuts); c++) {
                        size_t k = MIN(cuts[c], n);
                        _cleanup_(text_done) Text t = disk_after(disk, &p, i, k);
                        _cleanup_(hosts_file_done) HostsFile again = {};
                        assert_reads_as(&t, want, head, tail, &again);
                        if (i == p.n)
                                assert_false(again.repair);
                }
        }
}

static unsigned rewrite_torn_everywhere(const char *head, const char *old_block, const char *new_block,
                                        const char *tail) {
        _cleanup_(text_done) Text old = text_cat(head, old_block, tail),
                                  new = text_cat(head, new_block, tail);
        _cleanup_(hosts_file_done) HostsFile h = {};
        _cleanup_(hosts_write_plan_done) HostsWritePlan p = {};
        unsigned states = 0;

        assert_reads_as(&old, &old, head, tail, &h);
        assert_int_equal(hosts_write_plan(&h, new.data, new.len, &p), 0);
        assert_int_equal(p.n, 3); /* journal, text, truncate */
        for (size_t i = 0; i <= p.n; i++)
                for (size_t k = 0; k <= (i < p.n ? step_size(&p.steps[i]) : 0); k++) {
                        _cleanup_(text_done) Text t = disk_after(&old, &p, i, k);
                        _cleanup_(hosts_file_done) HostsFile torn = {};
                        /* Until the journal is complete the old file stands, from then on the new one. */
                        bool is_new = i > 0 || k == step_size(&p.steps[0]);
                        const Text *want = is_new ? &new : &old;
                        assert_reads_as(&t, want, head, tail, &torn);
                        if (torn.repair)
                                assert_repairs(&t, &torn, want, head, tail);
                        states++;
                }
        /* All done: exactly the new file. */
        _cleanup_(text_done) Text done = disk_after(&old, &p, p.n, 0);
        assert_int_equal(done.len, new.len);
        assert_memory_equal(done.data, new.data, new.len);
        return states;
}

static void test_torn_in_place_rewrites(void **state) {
        static const char *const heads[] = { "127.0.0.1\tlocalhost\n# keep   this\n", "" };
        static const char *const tails[] = { "192.0.2.7 tail.example\n# a comment\n::1 ip6-localhost\n",
                                             "192.0.2.8 no-newline-at-the-end", "" };
        static const char *const blocks[] = { BLOCK_SMALL, BLOCK_BIG, BLOCK_OTHER, BLOCK_EMPTY };
        unsigned states = 0, pairs = 0;

        for (size_t a = 0; a < ELEMENTSOF(heads); a++)
                for (size_t b = 0; b < ELEMENTSOF(tails); b++)
                        for (size_t o = 0; o < ELEMENTSOF(blocks); o++)
                                for (size_t n = 0; n < ELEMENTSOF(blocks); n++) {
                                        if (o == n)
                                                continue;
                                        states += rewrite_torn_everywhere(heads[a], blocks[o], blocks[n],
                                                                          tails[b]);
                                        pairs++;
                                }
        /* The first block, appended to a file without one (whose last line has no newline). */
        {
                _cleanup_(text_done) Text old = text_cat("127.0.0.1 localhost", "", "");
                _cleanup_(text_done) Text new = text_cat("127.0.0.1 localhost\n", BLOCK_BIG, "");
                _cleanup_(hosts_file_done) HostsFile h = {};
                _cleanup_(hosts_write_plan_done) HostsWritePlan p = {};
                assert_int_equal(hosts_file_parse(old.data, old.len, &h, &(char *){ NULL }), 0);
                assert_int_equal(hosts_write_plan(&h, new.data, new.len, &p), 0);
                for (size_t i = 0; i <= p.n; i++)
                        for (size_t k = 0; k <= (i < p.n ? step_size(&p.steps[i]) : 0); k++) {
                                _cleanup_(text_done) Text t = disk_after(&old, &p, i, k);
                                _cleanup_(hosts_file_done) HostsFile torn = {};
                                _cleanup_free_ char *error = NULL;
                                assert_int_equal(hosts_file_parse(t.data, t.len, &torn, &error), 0);
                                bool is_new = i > 0 || k == step_size(&p.steps[0]);
                                if (is_new) {
                                        _cleanup_(hosts_file_done) HostsFile again = {};
                                        assert_reads_as(&t, &new, "127.0.0.1 localhost\n", "", &again);
                                } else
                                        assert_int_equal(torn.block_len, 0);
                                states++;
                        }
        }
        print_message("%u rewrites, %u torn states, each repaired\n", pairs, states);
        assert_true(states > 10000);
}

/* What an old version left when killed between its in-place write and the truncate: the new text, then
 * the old text's tail with a second End marker. Read as the new text; the repair truncates. */
static void test_stale_tail_of_old_versions(void **state) {
        static const char head[] = "127.0.0.1\tlocalhost\n";
        static const char *const tails[] = { "192.0.2.7 tail.example\n# a comment\n", "" };
        unsigned n = 0;

        for (size_t b = 0; b < ELEMENTSOF(tails); b++) {
                _cleanup_(text_done) Text old = text_cat(head, BLOCK_BIG, tails[b]);
                _cleanup_(text_done) Text new = text_cat(head, BLOCK_SMALL, tails[b]);
                /* Every size of stale tail that still holds the whole old End marker line. */
                for (size_t cut = new.len; cut + strlen(END) + strlen(tails[b]) <= old.len; cut++) {
                        _cleanup_free_ char *disk = strjoin(new.data, old.data + cut);
                        Text t = { .data = disk, .len = strlen(disk) };
                        _cleanup_(hosts_file_done) HostsFile h = {};
                        assert_reads_as(&t, &new, head, tails[b], &h);
                        assert_true(h.repair);
                        assert_repairs(&t, &h, &new, head, tails[b]);
                        n++;
                }
        }
        assert_true(n > 50);

        /* The shape has to be exact: foreign text between two End markers that the text after the second
         * does not repeat is not ours to drop, and stays an error. */
        static const char *const bad[] = {
                BEGIN END "192.0.2.1 foreign\n" END "192.0.2.2 other\n",
                BEGIN END "# a comment\n" END,
                BEGIN END "192.0.2.1 foreign\n" END "192.0.2.1 foreign\nmore\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_(hosts_file_done) HostsFile h = {};
                _cleanup_free_ char *error = NULL;
                assert_int_equal(hosts_file_parse(bad[i], strlen(bad[i]), &h, &error), PK_EMALFORMED);
                assert_non_null(strstr(error, "without a matching begin marker"));
        }
}

/* A NUL byte that is not our journal: not a hosts file, left alone, with the offset in the error. */
static void test_foreign_nul_is_refused(void **state) {
        static const char text[] = "127.0.0.1 localhost\n\0garbage\n";
        _cleanup_(hosts_file_done) HostsFile h = {};
        _cleanup_free_ char *error = NULL;
        assert_int_equal(hosts_file_parse(text, sizeof(text) - 1, &h, &error), PK_EMALFORMED);
        assert_non_null(strstr(error, "NUL byte at offset 20"));

        /* A journal whose CRC does not match is treated as torn (the old text stands), never replayed. */
        _cleanup_free_ char *j = NULL;
        size_t j_len;
        assert_int_equal(hosts_journal_render(0, "10.9.9.9 evil\n", 14, &j, &j_len), 0);
        _cleanup_free_ char *disk = malloc(20 + j_len);
        memcpy(disk, "127.0.0.1 localhost\n", 20);
        memcpy(disk + 20, j, j_len);
        disk[20 + 1 + strlen("#protokube-hosts-journal v1 off=0 len=14\n")] ^= 1;
        _cleanup_(hosts_file_done) HostsFile h2 = {};
        _cleanup_free_ char *error2 = NULL;
        assert_non_null(disk);
        assert_int_equal(hosts_file_parse(disk, 20 + j_len, &h2, &error2), 0);
        assert_true(h2.repair);
        assert_int_equal(h2.repair_keep, 20);
        assert_null(h2.repair_data);
        assert_int_equal(h2.before_len, 20);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_torn_in_place_rewrites),
                cmocka_unit_test(test_stale_tail_of_old_versions),
                cmocka_unit_test(test_foreign_nul_is_refused),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
