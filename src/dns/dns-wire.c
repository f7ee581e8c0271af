/* SPDX-License-Identifier: Apache-2.0 */
#include "dns/dns-wire.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"

const char *dns_rcode_to_string(unsigned rcode, char buf[static 16]) {
        static const char *const table[] = {
                [DNS_RCODE_NOERROR] = "NOERROR",   [DNS_RCODE_FORMERR] = "FORMERR",
                [DNS_RCODE_SERVFAIL] = "SERVFAIL", [DNS_RCODE_NXDOMAIN] = "NXDOMAIN",
                [DNS_RCODE_NOTIMP] = "NOTIMP",     [DNS_RCODE_REFUSED] = "REFUSED",
                [DNS_RCODE_YXDOMAIN] = "YXDOMAIN", [DNS_RCODE_YXRRSET] = "YXRRSET",
                [DNS_RCODE_NXRRSET] = "NXRRSET",   [DNS_RCODE_NOTAUTH] = "NOTAUTH",
                [DNS_RCODE_NOTZONE] = "NOTZONE",   [DNS_RCODE_BADSIG] = "BADSIG",
                [DNS_RCODE_BADKEY] = "BADKEY",     [DNS_RCODE_BADTIME] = "BADTIME",
                [DNS_RCODE_BADTRUNC] = "BADTRUNC",
        };
        if (rcode < ELEMENTSOF(table) && table[rcode])
                return table[rcode];
        snprintf(buf, 16, "RCODE%u", rcode & 0xffffu);
        return buf;
}

const char *dns_type_to_string(uint16_t type, char buf[static 16]) {
        switch (type) {
        case DNS_TYPE_A:
                return "A";
        case DNS_TYPE_NS:
                return "NS";
        case DNS_TYPE_CNAME:
                return "CNAME";
        case DNS_TYPE_SOA:
                return "SOA";
        case DNS_TYPE_AAAA:
                return "AAAA";
        case DNS_TYPE_OPT:
                return "OPT";
        case DNS_TYPE_TSIG:
                return "TSIG";
        case DNS_TYPE_ANY:
                return "ANY";
        default:
                snprintf(buf, 16, "TYPE%u", type);
                return buf;
        }
}

void dns_writer_init(DnsWriter *w) {
        *w = (DnsWriter){};
        buf_init(&w->buf, DNS_MESSAGE_MAX);
}

void dns_writer_free(DnsWriter *w) {
        buf_free(&w->buf);
}

static void writer_add(DnsWriter *w, const void *p, size_t n) {
        if (w->error < 0)
                return;
        int r = buf_add(&w->buf, p, n);
        if (r < 0)
                w->error = r;
}

void dns_write_u8(DnsWriter *w, uint8_t v) {
        writer_add(w, &v, 1);
}

void dns_write_u16(DnsWriter *w, uint16_t v) {
        uint8_t b[2] = { (uint8_t)(v >> 8), (uint8_t)v };
        writer_add(w, b, sizeof(b));
}

void dns_write_u32(DnsWriter *w, uint32_t v) {
        uint8_t b[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v };
        writer_add(w, b, sizeof(b));
}

void dns_write_u48(DnsWriter *w, uint64_t v) {
        dns_write_u16(w, (uint16_t)(v >> 32));
        dns_write_u32(w, (uint32_t)v);
}

void dns_write_bytes(DnsWriter *w, const void *p, size_t n) {
        writer_add(w, p, n);
}

void dns_writer_patch_u16(DnsWriter *w, size_t offset, uint16_t v) {
        if (w->error < 0)
                return;
        if (offset + 2 > w->buf.len) {
                w->error = -EINVAL;
                return;
        }
        w->buf.data[offset] = (uint8_t)(v >> 8);
        w->buf.data[offset + 1] = (uint8_t)v;
}

/* Whether the (possibly compressed) name at offset o of our own output equals the wire name s, ignoring
 * ASCII case (RFC 1035 §2.3.3). Hops are bounded, though our own pointers always point backwards. */
static bool wire_name_at_equals(const uint8_t *buf, size_t len, size_t o, const uint8_t *s) {
        for (unsigned hops = 0; hops < 128;) {
                if (o >= len)
                        return false;
                uint8_t l = buf[o];
                if ((l & 0xc0) == 0xc0) {
                        if (o + 1 >= len)
                                return false;
                        o = (size_t)(l & 0x3f) << 8 | buf[o + 1];
                        hops++;
                        continue;
                }
                if (l != *s)
                        return false;
                if (l == 0)
                        return true;
                if (o + 1 + l > len)
                        return false;
                for (size_t k = 1; k <= l; k++)
                        if (dns_ascii_lower(buf[o + k]) != dns_ascii_lower(s[k]))
                                return false;
                o += 1 + l;
                s += 1 + l;
        }
        return false;
}

static void writer_remember(DnsWriter *w, size_t offset) {
        /* A pointer has 14 bits of offset (RFC 1035 §4.1.4). */
        if (offset < 0x4000 && w->n_names < ELEMENTSOF(w->names))
                w->names[w->n_names++] = (uint16_t)offset;
}

void dns_write_name(DnsWriter *w, const char *name, bool compress) {
        uint8_t wire[DNS_WIRE_NAME_MAX];
        size_t len;

        if (w->error < 0)
                return;
        if (dns_name_to_wire(name, wire, &len) < 0) {
                w->error = PK_EMALFORMED;
                return;
        }
        if (!compress) {
                dns_write_bytes(w, wire, len);
                return;
        }
        /* Longest suffix first, so the first match compresses most. */
        for (size_t i = 0; wire[i] != 0; i += 1 + wire[i])
                for (size_t k = 0; k < w->n_names; k++) {
                        if (!wire_name_at_equals(w->buf.data, w->buf.len, w->names[k], wire + i))
                                continue;
                        size_t start = w->buf.len;
                        dns_write_bytes(w, wire, i);
                        for (size_t j = 0; j < i; j += 1 + wire[j])
                                writer_remember(w, start + j);
                        dns_write_u16(w, (uint16_t)(0xc000 | w->names[k]));
                        return;
                }
        size_t start = w->buf.len;
        dns_write_bytes(w, wire, len);
        for (size_t j = 0; wire[j] != 0; j += 1 + wire[j])
                writer_remember(w, start + j);
}

static void reader_fail(DnsReader *r) {
        if (r->error == 0)
                r->error = PK_EMALFORMED;
}

const uint8_t *dns_read_bytes(DnsReader *r, size_t n) {
        if (r->error < 0)
                return NULL;
        if (n > r->len - r->pos) {
                reader_fail(r);
                return NULL;
        }
        const uint8_t *p = r->data + r->pos;
        r->pos += n;
        return p;
}

uint8_t dns_read_u8(DnsReader *r) {
        const uint8_t *p = dns_read_bytes(r, 1);
        return p ? p[0] : 0;
}

uint16_t dns_read_u16(DnsReader *r) {
        const uint8_t *p = dns_read_bytes(r, 2);
        return p ? (uint16_t)(p[0] << 8 | p[1]) : 0;
}

uint32_t dns_read_u32(DnsReader *r) {
        const uint8_t *p = dns_read_bytes(r, 4);
        return p ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3] : 0;
}

uint64_t dns_read_u48(DnsReader *r) {
        uint64_t hi = dns_read_u16(r);
        return hi << 32 | dns_read_u32(r);
}

void dns_read_name(DnsReader *r, char ret[static DNS_NAME_TEXT_MAX]) {
        uint8_t wire[DNS_WIRE_NAME_MAX];
        size_t w = 0, pos = r->pos, end = 0, limit = r->pos;

        ret[0] = 0;
        if (r->error < 0)
                return;
        for (;;) {
                if (pos >= r->len)
                        goto bad;
                uint8_t l = r->data[pos];
                if ((l & 0xc0) == 0xc0) {
                        if (pos + 1 >= r->len)
                                goto bad;
                        size_t target = (size_t)(l & 0x3f) << 8 | r->data[pos + 1];
                        if (end == 0)
                                end = pos + 2;
                        /* Each jump must land before the previous one: the chain cannot loop. */
                        if (target >= limit)
                                goto bad;
                        limit = pos = target;
                        continue;
                }
                if (l & 0xc0) /* 0x40 and 0x80: extended label types (RFC 6891 §5), unsupported */
                        goto bad;
                if (w + 1 + l > DNS_WIRE_NAME_MAX || pos + 1 + l > r->len)
                        goto bad;
                memcpy(wire + w, r->data + pos, 1 + (size_t)l);
                w += 1 + (size_t)l;
                pos += 1 + (size_t)l;
                if (l == 0)
                        break;
        }
        r->pos = end ? end : pos;
        dns_name_wire_to_text(wire, false, ret);
        return;
bad:
        reader_fail(r);
}

DnsMessage *dns_message_free(DnsMessage *m) {
        if (!m)
                return NULL;
        for (size_t i = 0; i < m->n_rrs; i++)
                free(m->rrs[i].name);
        free(m->rrs);
        free(m->wire);
        free(m);
        return NULL;
}

static int parse_rr(DnsReader *r, DnsSection section, DnsRR *rr) {
        char name[DNS_NAME_TEXT_MAX];

        rr->offset = r->pos;
        rr->section = section;
        dns_read_name(r, name);
        rr->type = dns_read_u16(r);
        rr->class = dns_read_u16(r);
        if (section != DNS_SECTION_QUESTION) {
                rr->ttl = dns_read_u32(r);
                rr->rdata_len = dns_read_u16(r);
                rr->rdata_offset = r->pos;
                (void)dns_read_bytes(r, rr->rdata_len);
        }
        if (dns_reader_error(r) < 0)
                return dns_reader_error(r);
        rr->name = strdup(name);
        return rr->name ? 0 : -ENOMEM;
}

int dns_message_parse(const uint8_t *data, size_t len, DnsMessage **ret) {
        _cleanup_(dns_message_freep) DnsMessage *m = NULL;
        DnsReader r;
        size_t total = 0;

        if (len < DNS_HEADER_SIZE || len > DNS_MESSAGE_MAX)
                return PK_EMALFORMED;
        m = new0(DnsMessage, 1);
        if (!m)
                return -ENOMEM;
        m->wire = malloc(len);
        if (!m->wire)
                return -ENOMEM;
        memcpy(m->wire, data, len);
        m->len = len;

        dns_reader_init(&r, m->wire, len);
        m->id = dns_read_u16(&r);
        m->flags = dns_read_u16(&r);
        for (size_t s = 0; s < _DNS_SECTION_MAX; s++) {
                m->counts[s] = dns_read_u16(&r);
                total += m->counts[s];
        }
        /* Every entry takes at least 5 octets (root name, type, class): reject absurd counts before
         * allocating for them. */
        if (total > (len - DNS_HEADER_SIZE) / 5)
                return PK_EMALFORMED;
        m->rrs = new0(DnsRR, total);
        if (!m->rrs)
                return -ENOMEM;
        for (size_t s = 0; s < _DNS_SECTION_MAX; s++)
                for (size_t i = 0; i < m->counts[s]; i++) {
                        int k = parse_rr(&r, (DnsSection)s, &m->rrs[m->n_rrs]);
                        if (k < 0)
                                return k;
                        m->n_rrs++;
                }
        if (r.pos != len)
                return PK_EMALFORMED;
        *ret = TAKE_PTR(m);
        return 0;
}

int dns_rr_address(const DnsMessage *m, const DnsRR *rr, char ret[static 46]) {
        int family;
        if (rr->type == DNS_TYPE_A && rr->rdata_len == 4)
                family = AF_INET;
        else if (rr->type == DNS_TYPE_AAAA && rr->rdata_len == 16)
                family = AF_INET6;
        else
                return PK_EMALFORMED;
        if (rr->rdata_offset + rr->rdata_len > m->len)
                return PK_EMALFORMED;
        if (!inet_ntop(family, m->wire + rr->rdata_offset, ret, 46))
                return PK_EMALFORMED;
        return 0;
}

int dns_address_parse(const char *s, uint8_t ret[static 16], size_t *ret_len) {
        if (inet_pton(AF_INET, s, ret) == 1) {
                *ret_len = 4;
                return DNS_TYPE_A;
        }
        if (inet_pton(AF_INET6, s, ret) == 1) {
                *ret_len = 16;
                return DNS_TYPE_AAAA;
        }
        return PK_EMALFORMED;
}

int dns_address_normalize(const char *s, char ret[static 46], uint16_t *ret_type) {
        uint8_t a[16];
        size_t len;
        int type = dns_address_parse(s, a, &len);
        if (type < 0)
                return type;
        if (!inet_ntop(type == DNS_TYPE_A ? AF_INET : AF_INET6, a, ret, 46))
                return PK_EMALFORMED;
        if (ret_type)
                *ret_type = (uint16_t)type;
        return 0;
}

int dns_query_build(uint16_t id, const char *name, uint16_t type, DnsWriter *w) {
        dns_write_u16(w, id);
        dns_write_u16(w, DNS_FLAGS_MAKE(DNS_OPCODE_QUERY));
        dns_write_u16(w, 1);
        dns_write_u16(w, 0);
        dns_write_u16(w, 0);
        dns_write_u16(w, 0);
        dns_write_name(w, name, true);
        dns_write_u16(w, type);
        dns_write_u16(w, DNS_CLASS_IN);
        return dns_writer_error(w);
}
