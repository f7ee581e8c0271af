/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* DNS wire format (RFC 1035 §4): a writer and a reader whose error "sticks" (after Knot DNS's libknot
 * wire.h): callers write or read a whole message and check the error once at the end. Every read is
 * bounds-checked; a malformed message is PK_EMALFORMED, never a crash. Library code: no logging. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/buf.h"
#include "basic/dns-name.h" /* the names: text, wire form, comparisons */
#include "basic/macro.h"

#define DNS_HEADER_SIZE     12
#define DNS_MESSAGE_MAX     65535
#define DNS_UDP_PAYLOAD_MAX 512 /* RFC 1035 §4.2.1: without EDNS a UDP message is at most 512 octets */

enum {
        DNS_TYPE_A = 1,
        DNS_TYPE_NS = 2,
        DNS_TYPE_CNAME = 5,
        DNS_TYPE_SOA = 6,
        DNS_TYPE_AAAA = 28,
        DNS_TYPE_DNAME = 39,
        DNS_TYPE_OPT = 41,
        DNS_TYPE_TSIG = 250,
        DNS_TYPE_AXFR = 252,
        DNS_TYPE_ANY = 255,
};

enum {
        DNS_CLASS_IN = 1,
        DNS_CLASS_NONE = 254,
        DNS_CLASS_ANY = 255,
};

enum {
        DNS_OPCODE_QUERY = 0,
        DNS_OPCODE_UPDATE = 5,
};

/* Header flag bits (RFC 1035 §4.1.1). */
#define DNS_FLAG_QR            0x8000
#define DNS_FLAG_AA            0x0400
#define DNS_FLAG_TC            0x0200
#define DNS_FLAG_RD            0x0100
#define DNS_FLAGS_OPCODE(f)    (((f) >> 11) & 0xf)
#define DNS_FLAGS_RCODE(f)     ((f)&0xf)
#define DNS_FLAGS_MAKE(opcode) ((uint16_t)((opcode) << 11))

/* RCODEs (RFC 1035, RFC 2136 §2.2, RFC 8945 §3 for the TSIG errors, which only appear in the TSIG RR). */
enum {
        DNS_RCODE_NOERROR = 0,
        DNS_RCODE_FORMERR = 1,
        DNS_RCODE_SERVFAIL = 2,
        DNS_RCODE_NXDOMAIN = 3,
        DNS_RCODE_NOTIMP = 4,
        DNS_RCODE_REFUSED = 5,
        DNS_RCODE_YXDOMAIN = 6,
        DNS_RCODE_YXRRSET = 7,
        DNS_RCODE_NXRRSET = 8,
        DNS_RCODE_NOTAUTH = 9,
        DNS_RCODE_NOTZONE = 10,
        DNS_RCODE_BADSIG = 16,
        DNS_RCODE_BADKEY = 17,
        DNS_RCODE_BADTIME = 18,
        DNS_RCODE_BADTRUNC = 22,
};

/* "REFUSED", "BADSIG", ... or "RCODE<n>" in buf. */
const char *dns_rcode_to_string(unsigned rcode, char buf[static 16]);
/* "A", "AAAA", ... or "TYPE<n>" in buf (RFC 3597 §5). */
const char *dns_type_to_string(uint16_t type, char buf[static 16]);

typedef struct DnsWriter {
        Buf buf;
        int error;
        /* Offsets of the names written so far, candidates for compression (RFC 1035 §4.1.4). */
        uint16_t names[64];
        size_t n_names;
} DnsWriter;

void dns_writer_init(DnsWriter *w);
void dns_writer_free(DnsWriter *w);
static inline void dns_writer_freep(DnsWriter *w) {
        dns_writer_free(w);
}
void dns_write_u8(DnsWriter *w, uint8_t v);
void dns_write_u16(DnsWriter *w, uint16_t v);
void dns_write_u32(DnsWriter *w, uint32_t v);
void dns_write_u48(DnsWriter *w, uint64_t v);
void dns_write_bytes(DnsWriter *w, const void *p, size_t n);
/* Writes name, compressed against earlier names when compress is set. */
void dns_write_name(DnsWriter *w, const char *name, bool compress);
/* Overwrites a 16-bit field already written (header counts, RDLENGTH). */
void dns_writer_patch_u16(DnsWriter *w, size_t offset, uint16_t v);
static inline size_t dns_writer_len(const DnsWriter *w) {
        return w->buf.len;
}
/* 0 or the first error (PK_EMALFORMED for a bad name, PK_ETOOBIG past 64 KiB, -ENOMEM). */
static inline int dns_writer_error(const DnsWriter *w) {
        return w->error;
}

typedef struct DnsReader {
        const uint8_t *data;
        size_t len;
        size_t pos;
        int error;
} DnsReader;

static inline void dns_reader_init(DnsReader *r, const uint8_t *data, size_t len) {
        *r = (DnsReader){ .data = data, .len = len };
}
uint8_t dns_read_u8(DnsReader *r);
uint16_t dns_read_u16(DnsReader *r);
uint32_t dns_read_u32(DnsReader *r);
uint64_t dns_read_u48(DnsReader *r);
/* Pointer into the message, or NULL (and the error set) if fewer than n bytes remain. */
const uint8_t *dns_read_bytes(DnsReader *r, size_t n);
/* Reads a possibly compressed name as text (escaped, with the final dot). Pointers must point strictly
 * backwards, which rules out loops; the expanded name must fit 255 octets. */
void dns_read_name(DnsReader *r, char ret[static DNS_NAME_TEXT_MAX]);
static inline int dns_reader_error(const DnsReader *r) {
        return r->error;
}

/* A parsed message. RDATA stays in the wire (rdata_offset into wire) because names in it may be compressed
 * against the message. */
typedef enum DnsSection {
        DNS_SECTION_QUESTION, /* the zone section of an UPDATE */
        DNS_SECTION_ANSWER,   /* prerequisites */
        DNS_SECTION_AUTHORITY,
        DNS_SECTION_ADDITIONAL,
        _DNS_SECTION_MAX,
} DnsSection;

typedef struct DnsRR {
        DnsSection section;
        char *name;
        uint16_t type;
        uint16_t class;
        uint32_t ttl;        /* 0 for questions */
        size_t offset;       /* where the RR starts in the wire */
        size_t rdata_offset; /* questions: 0 */
        uint16_t rdata_len;
} DnsRR;

typedef struct DnsMessage {
        uint8_t *wire; /* a copy of the message */
        size_t len;
        uint16_t id;
        uint16_t flags;
        uint16_t counts[_DNS_SECTION_MAX];
        DnsRR *rrs; /* all sections in order: counts[0] questions first */
        size_t n_rrs;
} DnsMessage;

/* Parses a whole message; trailing bytes are PK_EMALFORMED. Caller frees. */
int dns_message_parse(const uint8_t *data, size_t len, DnsMessage **ret);
DnsMessage *dns_message_free(DnsMessage *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(DnsMessage *, dns_message_free)

static inline unsigned dns_message_rcode(const DnsMessage *m) {
        return DNS_FLAGS_RCODE(m->flags);
}
/* The address of an A or AAAA RR as text (inet_ntop form). PK_EMALFORMED on a bad RDLENGTH. */
int dns_rr_address(const DnsMessage *m, const DnsRR *rr, char ret[static 46]);

/* Writes an address literal as A or AAAA RDATA; returns the type, or PK_EMALFORMED if s is no address. */
int dns_address_parse(const char *s, uint8_t ret[static 16], size_t *ret_len);
/* Canonical text of an address literal ("2001:DB8::0001" -> "2001:db8::1"); type A or AAAA via ret_type. */
int dns_address_normalize(const char *s, char ret[static 46], uint16_t *ret_type);

/* A query for (name, type, IN): RD clear, since the servers we ask are authoritative. */
int dns_query_build(uint16_t id, const char *name, uint16_t type, DnsWriter *w);
