/* SPDX-License-Identifier: Apache-2.0 */
/* Crash safety of the in-place rewrite of a hosts file (one that cannot be renamed over: a bind mount).
 *
 * Rewriting in place moves the text after our block whenever the block changes size, so a write cut short
 * (kill -9, power loss) can leave foreign text half moved, and nothing in the file would say where the cut
 * was. So the rewrite is a redo journal inside the file itself, with fsync between the steps:
 *
 *   1. append at max(old size, new size) the journal: NUL, header (offset, length), the new text from the
 *      first byte that changes, NUL, footer (journal size, CRC-32 of everything before the footer);
 *   2. write the new text from that offset;
 *   3. truncate to the new size, which drops the journal.
 *
 * A hosts file never holds a NUL byte, so the first NUL marks protokube's journal area. Reading it back:
 * a complete journal (the footer ends the file, sizes and CRC agree) means step 2 may be torn anywhere:
 * keep the file up to the offset and put the journal's text after it (redo). An incomplete one means step 1
 * was cut short and the text before the first NUL is still the old file untouched: cut there. Either way
 * the foreign text comes back byte for byte. The repair is itself idempotent (a redo from the same journal,
 * or a truncate), so a crash during the repair is repaired the same way. */
#include <string.h>

#include "basic/buf.h"
#include "basic/errors.h"
#include "basic/string-util.h"
#include "dns/dns-hosts.h"

#define JOURNAL_MAGIC "#protokube-hosts-journal"
/* NUL, magic, "-end size=" 10 digits, " crc32=" 8 hex digits, newline. */
#define JOURNAL_FOOTER_LEN \
        (1 + STRLEN(JOURNAL_MAGIC) + STRLEN("-end size=") + 10 + STRLEN(" crc32=") + 8 + 1)

/* CRC-32 (IEEE 802.3, as zlib): to tell a complete journal from a torn one, not against an adversary. */
static uint32_t crc32_ieee(const void *data, size_t n) {
        static uint32_t table[256];
        const uint8_t *p = data;
        uint32_t c = 0xffffffffu;

        if (table[1] == 0)
                for (uint32_t i = 0; i < 256; i++) {
                        uint32_t v = i;
                        for (int k = 0; k < 8; k++)
                                v = v & 1 ? 0xedb88320u ^ (v >> 1) : v >> 1;
                        table[i] = v;
                }
        for (size_t i = 0; i < n; i++)
                c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
        return c ^ 0xffffffffu;
}

static int journal_footer(size_t size, uint32_t crc, char ret[static JOURNAL_FOOTER_LEN + 1]) {
        int n =
            snprintf(ret + 1, JOURNAL_FOOTER_LEN, JOURNAL_MAGIC "-end size=%010zu crc32=%08x\n", size, crc);
        if (n != (int)JOURNAL_FOOTER_LEN - 1)
                return -ERANGE;
        ret[0] = 0;
        return 0;
}

int hosts_journal_render(size_t offset, const char *text, size_t len, char **ret, size_t *ret_len) {
        _cleanup_buf_ Buf b;
        char footer[JOURNAL_FOOTER_LEN + 1];
        int r;

        buf_init(&b, HOSTS_FILE_MAX + 256);
        r = buf_add(&b, "", 1);
        if (r >= 0)
                r = buf_printf(&b, JOURNAL_MAGIC " v1 off=%zu len=%zu\n", offset, len);
        if (r >= 0)
                r = buf_add(&b, text, len);
        if (r >= 0)
                r = journal_footer(b.len + JOURNAL_FOOTER_LEN, crc32_ieee(b.data, b.len), footer);
        if (r >= 0)
                r = buf_add(&b, footer, JOURNAL_FOOTER_LEN);
        if (r < 0)
                return r;
        *ret_len = b.len;
        *ret = buf_steal_str(&b);
        return *ret ? 0 : -ENOMEM;
}

/* Up to 10 decimal digits at *p, at least one. */
static bool take_number(const char **p, const char *end, size_t *ret) {
        size_t v = 0, n = 0;
        for (; *p < end && n < 10 && **p >= '0' && **p <= '9'; (*p)++, n++)
                v = v * 10 + (size_t)(**p - '0');
        *ret = v;
        return n > 0;
}

static bool take_hex32(const char **p, const char *end, uint32_t *ret) {
        uint32_t v = 0;
        for (int i = 0; i < 8; i++, (*p)++) {
                if (*p >= end)
                        return false;
                char c = **p;
                if (c >= '0' && c <= '9')
                        v = v << 4 | (uint32_t)(c - '0');
                else if (c >= 'a' && c <= 'f')
                        v = v << 4 | (uint32_t)(c - 'a' + 10);
                else
                        return false;
        }
        *ret = v;
        return true;
}

/* A complete journal ends text: its redo offset and text. Every field is checked, then the footer is
 * rendered again and compared, so only exactly what hosts_journal_render() wrote is accepted. */
static bool journal_find(const char *text, size_t len, size_t *ret_offset, const char **ret_redo,
                         size_t *ret_redo_len) {
        const char *f, *p, *end = text + len;
        size_t size, offset, redo_len;
        uint32_t crc;
        char footer[JOURNAL_FOOTER_LEN + 1];

        if (len < JOURNAL_FOOTER_LEN)
                return false;
        f = end - JOURNAL_FOOTER_LEN;
        p = f + 1 + STRLEN(JOURNAL_MAGIC "-end size=");
        if (!take_number(&p, end, &size) || !startswith(p, " crc32=")) /* footer is NUL-free after f[0] */
                return false;
        p += STRLEN(" crc32=");
        if (!take_hex32(&p, end, &crc) || journal_footer(size, crc, footer) < 0 ||
            memcmp(f, footer, JOURNAL_FOOTER_LEN) != 0 || size > len)
                return false;
        const char *j = end - size;
        static const char head[] = JOURNAL_MAGIC " v1 off=";
        if (j >= f || j[0] != 0 || (size_t)(f - j) < 1 + STRLEN(head) || memcmp(j + 1, head, STRLEN(head)))
                return false;
        p = j + 1 + STRLEN(head);
        if (!take_number(&p, f, &offset) || f - p < 5 || memcmp(p, " len=", 5) != 0)
                return false;
        p += 5;
        if (!take_number(&p, f, &redo_len) || p >= f || *p != '\n')
                return false;
        p++;
        if ((size_t)(f - p) != redo_len || (size_t)(j - text) < redo_len ||
            offset > (size_t)(j - text) - redo_len || memchr(p, 0, redo_len) ||
            crc32_ieee(j, (size_t)(f - j)) != crc)
                return false;
        *ret_offset = offset;
        *ret_redo = p;
        *ret_redo_len = redo_len;
        return true;
}

int hosts_journal_recover(const char *text, size_t len, size_t *ret_keep, char **ret_redo,
                          size_t *ret_redo_len, char **ret_error) {
        const char *end = text + len, *z = memchr(text, 0, len), *redo;
        size_t offset, redo_len;

        if (!z)
                return 0;
        if (journal_find(text, len, &offset, &redo, &redo_len) && offset <= (size_t)(z - text)) {
                char *copy = malloc(redo_len + 1);
                if (!copy)
                        return -ENOMEM;
                memcpy(copy, redo, redo_len);
                copy[redo_len] = 0;
                *ret_keep = offset;
                *ret_redo = copy;
                *ret_redo_len = redo_len;
                return 1;
        }
        /* Torn in step 1: NULs (the gap up to where the journal starts, and its own first byte), then
         * nothing or the start of the journal. */
        const char *p = z;
        while (p < end && *p == 0)
                p++;
        size_t rest = MIN((size_t)(end - p), STRLEN(JOURNAL_MAGIC));
        if (memcmp(p, JOURNAL_MAGIC, rest) == 0) {
                *ret_keep = (size_t)(z - text);
                *ret_redo = NULL;
                *ret_redo_len = 0;
                return 1;
        }
        *ret_error = strprintf("a NUL byte at offset %zu, and not protokube's journal of an interrupted "
                               "rewrite: this is not a hosts file",
                               (size_t)(z - text));
        return PK_EMALFORMED;
}

void hosts_write_plan_done(HostsWritePlan *p) {
        for (size_t i = 0; i < p->n; i++)
                free(p->steps[i].data);
        *p = (HostsWritePlan){};
}

static int plan_add(HostsWritePlan *p, size_t offset, const char *data, size_t len) {
        char *copy = NULL;
        if (data) {
                copy = malloc(len + 1);
                if (!copy)
                        return -ENOMEM;
                memcpy(copy, data, len);
        }
        p->steps[p->n++] = (HostsWrite){ .offset = offset, .data = copy, .len = len };
        return 0;
}

int hosts_write_plan(const HostsFile *h, const char *text, size_t len, HostsWritePlan *ret) {
        _cleanup_(hosts_write_plan_done) HostsWritePlan p = {};
        _cleanup_free_ char *old = NULL, *journal = NULL;
        size_t old_len = h->before_len + h->block_len + h->after_len, off = 0, journal_len;
        int r = 0;

        /* First bring the file to what it says (finish or drop an interrupted rewrite): a second journal
         * must not be appended after a first one. */
        if (h->repair) {
                if (h->repair_len > 0)
                        r = plan_add(&p, h->repair_keep, h->repair_data, h->repair_len);
                if (r >= 0)
                        r = plan_add(&p, h->repair_keep + h->repair_len, NULL, 0);
                if (r < 0)
                        return r;
        }
        old = malloc(old_len + 1);
        if (!old)
                return -ENOMEM;
        memcpy(old, h->before, h->before_len);
        memcpy(old + h->before_len, h->block, h->block_len);
        memcpy(old + h->before_len + h->block_len, h->after, h->after_len);
        if (old_len != len || memcmp(old, text, len) != 0) {
                while (off < len && off < old_len && old[off] == text[off])
                        off++;
                r = hosts_journal_render(off, text + off, len - off, &journal, &journal_len);
                if (r >= 0)
                        r = plan_add(&p, MAX(old_len, len), journal, journal_len);
                if (r >= 0)
                        r = plan_add(&p, off, text + off, len - off);
                if (r >= 0)
                        r = plan_add(&p, len, NULL, 0);
                if (r < 0)
                        return r;
        }
        *ret = p;
        p = (HostsWritePlan){};
        return 0;
}
