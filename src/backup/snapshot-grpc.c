/* SPDX-License-Identifier: Apache-2.0 */
/* etcd's Maintenance.Snapshot stream decoded byte by byte (snapshot-grpc.h): a state machine over gRPC's
 * message prefixes and protobuf's fields, so that a piece of input may end anywhere, even inside a varint.
 */
#include "backup/snapshot-grpc.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/types.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/string-util.h"

enum {
        STATE_PREFIX, /* between messages: the next one's 5-byte prefix */
        STATE_TAG,    /* a field's key: field number << 3 | wire type */
        STATE_VARINT, /* a wire type 0 value */
        STATE_LENGTH, /* a wire type 2 value's length */
        STATE_SKIP,   /* a value not kept: fixed (wire types 1 and 5) or length-delimited */
        STATE_BLOB,   /* field 3's bytes: the snapshot */
};

/* protobuf's wire types (protobuf's encoding guide) */
enum { WIRE_VARINT = 0, WIRE_I64 = 1, WIRE_LEN = 2, WIRE_I32 = 5 };

/* SnapshotResponse's fields */
enum { FIELD_HEADER = 1, FIELD_REMAINING = 2, FIELD_BLOB = 3, FIELD_VERSION = 4 };

void snapshot_grpc_init(SnapshotGrpc *d, int fd) {
        *d = (SnapshotGrpc){ .fd = fd, .state = STATE_PREFIX };
}

static int malformed(SnapshotGrpc *d, int r, char **ret_error, const char *what) {
        d->error = error_setf(ret_error, r, "snapshot stream: message %" PRIu64 ": %s", d->messages, what);
        return d->error;
}

/* After a field's value: the next field, or the next message when this one is done. */
static void field_done(SnapshotGrpc *d) {
        d->state = d->message_left > 0 ? STATE_TAG : STATE_PREFIX;
}

static int prefix_done(SnapshotGrpc *d, char **ret_error) {
        uint32_t len = (uint32_t)d->prefix[1] << 24 | (uint32_t)d->prefix[2] << 16 |
                       (uint32_t)d->prefix[3] << 8 | d->prefix[4];
        d->messages++;
        d->prefix_len = 0;
        if (d->prefix[0] == 1)
                return malformed(d, PK_EMALFORMED, ret_error, "compressed, and no compression was offered");
        if (d->prefix[0] != 0)
                return malformed(d, PK_EMALFORMED, ret_error, "not a gRPC message (bad compressed flag)");
        if (len > SNAPSHOT_GRPC_MESSAGE_MAX) {
                d->error = error_setf(ret_error, PK_ETOOBIG,
                                      "snapshot stream: message %" PRIu64 " of %" PRIu32 " bytes exceeds %u",
                                      d->messages, len, SNAPSHOT_GRPC_MESSAGE_MAX);
                return d->error;
        }
        d->message_left = len;
        d->remaining = 0; /* proto3 leaves out a 0 */
        field_done(d);
        return 0;
}

/* The wire type a known field must have; -1 for a field SnapshotResponse does not have (yet). */
static int known_wire(uint32_t field) {
        switch (field) {
        case FIELD_HEADER:
        case FIELD_BLOB:
        case FIELD_VERSION:
                return WIRE_LEN;
        case FIELD_REMAINING:
                return WIRE_VARINT;
        default:
                return -1;
        }
}

static int tag_done(SnapshotGrpc *d, char **ret_error) {
        uint64_t tag = d->varint;
        unsigned wire = (unsigned)(tag & 7);
        if (tag >> 3 == 0 || tag >> 3 > 0x1fffffff) /* field numbers are 1 to 2^29 - 1 */
                return malformed(d, PK_EMALFORMED, ret_error, "bad field number");
        d->field = (uint32_t)(tag >> 3);
        int want = known_wire(d->field);
        if (want >= 0 && (unsigned)want != wire)
                return malformed(d, PK_EMALFORMED, ret_error,
                                 "a field of SnapshotResponse has the wrong type");
        switch (wire) {
        case WIRE_VARINT:
        case WIRE_LEN:
                if (d->message_left == 0)
                        return malformed(d, PK_EMALFORMED, ret_error, "a field without its value");
                d->state = wire == WIRE_VARINT ? STATE_VARINT : STATE_LENGTH;
                return 0;
        case WIRE_I64:
        case WIRE_I32:
                d->value_left = wire == WIRE_I64 ? 8 : 4;
                if (d->value_left > d->message_left)
                        return malformed(d, PK_EMALFORMED, ret_error, "truncated fixed-size field");
                d->state = STATE_SKIP;
                return 0;
        default: /* groups (3, 4) are not proto3; 6 and 7 do not exist */
                return malformed(d, PK_EMALFORMED, ret_error, "unknown wire type");
        }
}

/* A whole varint in d->varint: what it was for. */
static int varint_done(SnapshotGrpc *d, char **ret_error) {
        switch (d->state) {
        case STATE_TAG:
                return tag_done(d, ret_error);
        case STATE_VARINT:
                if (d->field == FIELD_REMAINING)
                        d->remaining = d->varint;
                field_done(d);
                return 0;
        default: /* STATE_LENGTH */
                if (d->varint > d->message_left)
                        return malformed(d, PK_EMALFORMED, ret_error,
                                         "a field runs past the end of its message");
                d->value_left = d->varint;
                d->state = d->field == FIELD_BLOB ? STATE_BLOB : STATE_SKIP;
                if (d->value_left == 0)
                        field_done(d);
                return 0;
        }
}

/* One byte of a varint (least significant group first); at most 10 bytes, the tenth holding bit 63 only. */
static int varint_byte(SnapshotGrpc *d, uint8_t b, char **ret_error) {
        if (d->shift > 63 || (d->shift == 63 && (b & 0x7f) > 1))
                return malformed(d, PK_EMALFORMED, ret_error, "a varint overflows 64 bits");
        d->varint |= (uint64_t)(b & 0x7f) << d->shift;
        d->shift += 7;
        d->message_left--;
        if (b & 0x80) {
                if (d->message_left == 0)
                        return malformed(d, PK_EMALFORMED, ret_error, "truncated varint");
                return 0;
        }
        d->shift = 0;
        int r = varint_done(d, ret_error);
        d->varint = 0;
        return r;
}

/* A piece of field 3: the snapshot's next bytes. */
static int blob(SnapshotGrpc *d, const uint8_t *p, size_t n, char **ret_error) {
        int r = loop_write(d->fd, p, n);
        if (r < 0) {
                d->error = error_setf(ret_error, r, "writing the snapshot: %s", pk_strerror(r));
                return r;
        }
        d->written += n;
        if (d->on_blob && (r = d->on_blob(p, n, d->userdata)) < 0) {
                d->error = error_setf(ret_error, r, "checking the snapshot: %s", pk_strerror(r));
                return r;
        }
        return 0;
}

/* Consumes from p[0..n) what the current state takes; returns how much, or < 0. */
static ssize_t step(SnapshotGrpc *d, const uint8_t *p, size_t n, char **ret_error) {
        size_t take;
        int r = 0;
        switch (d->state) {
        case STATE_PREFIX:
                take = MIN(n, sizeof(d->prefix) - d->prefix_len);
                memcpy(d->prefix + d->prefix_len, p, take);
                d->prefix_len += (unsigned)take;
                if (d->prefix_len == sizeof(d->prefix))
                        r = prefix_done(d, ret_error);
                return r < 0 ? r : (ssize_t)take;
        case STATE_TAG:
        case STATE_VARINT:
        case STATE_LENGTH:
                r = varint_byte(d, p[0], ret_error);
                return r < 0 ? r : 1;
        default: /* STATE_SKIP, STATE_BLOB: value_left <= message_left, checked when it was read */
                take = (size_t)MIN((uint64_t)n, d->value_left);
                if (d->state == STATE_BLOB && (r = blob(d, p, take, ret_error)) < 0)
                        return r;
                d->value_left -= take;
                d->message_left -= (uint32_t)take;
                if (d->value_left == 0)
                        field_done(d);
                return (ssize_t)take;
        }
}

int snapshot_grpc_feed(SnapshotGrpc *d, const void *data, size_t len, char **ret_error) {
        const uint8_t *p = data;
        if (d->error < 0)
                return error_setf(ret_error, d->error, "snapshot stream: fed after an error");
        while (len > 0) {
                ssize_t k = step(d, p, len, ret_error);
                if (k < 0)
                        return (int)k;
                p += k;
                len -= (size_t)k;
        }
        return 0;
}

int snapshot_grpc_finish(SnapshotGrpc *d, uint64_t *ret_written, char **ret_error) {
        if (d->error < 0)
                return error_setf(ret_error, d->error, "snapshot stream: finished after an error");
        if (d->state != STATE_PREFIX || d->prefix_len > 0)
                return malformed(d, PK_EMALFORMED, ret_error, "the stream ends inside it");
        if (d->messages == 0)
                return error_setf(ret_error, PK_EMALFORMED, "snapshot stream: empty");
        if (d->remaining != 0) {
                d->error =
                    error_setf(ret_error, PK_EMALFORMED,
                               "snapshot stream: ends with %" PRIu64 " bytes still to come", d->remaining);
                return d->error;
        }
        *ret_written = d->written;
        return 0;
}
