/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The response stream of etcd's gRPC Maintenance.Snapshot, decoded as it arrives: gRPC's length-prefixed
 * messages (PROTOCOL-HTTP2.md: a compressed flag, which must be 0 since we offer no grpc-accept-encoding,
 * then 4 bytes of length, big-endian), each a SnapshotResponse (etcd's rpc.proto):
 *
 *     message SnapshotResponse { ResponseHeader header = 1; uint64 remaining_bytes = 2; bytes blob = 3;
 *                                string version = 4; }   // version: etcd 3.5 and later
 *
 * decoded by hand (protobuf's wire format: varints, wire types 0/1/2/5 of unknown fields skipped). Each
 * blob's bytes are written to fd straight from the input, never buffered: the decoder's whole state is this
 * struct, so a snapshot of any size streams in bounded memory, however the input is split. The blobs
 * concatenated are the snapshot; the last 32 bytes are etcd's SHA-256 of the rest (backup_snapshot_check()).
 */

#include <stddef.h>
#include <stdint.h>

/* gRPC's default maximum receive size: etcd sends blobs of 32 KiB */
#define SNAPSHOT_GRPC_MESSAGE_MAX (4U * 1024U * 1024U)

typedef struct SnapshotGrpc {
        int fd;
        int state;
        int error;         /* the first failure: every later call returns it again */
        uint8_t prefix[5]; /* the message's gRPC prefix, as far as it came */
        unsigned prefix_len;
        uint32_t message_left; /* bytes of the current message still to come */
        uint64_t varint;       /* the varint being read, as far as it came */
        unsigned shift;        /* its next 7 bits' place */
        uint32_t field;        /* the field being read */
        uint64_t value_left;   /* bytes of its value still to come (fixed, skipped, blob) */
        uint64_t remaining;    /* remaining_bytes of the current message (0 when absent: proto3) */
        uint64_t messages;
        uint64_t written; /* bytes of snapshot written to fd */
        /* Optional, set after init: each piece of snapshot once written to fd, in order (to check it as it
         * passes, backup_snapshot_sum_update()). A negative return fails the feed with it. */
        int (*on_blob)(const void *data, size_t len, void *userdata);
        void *userdata;
} SnapshotGrpc;

/* A decoder writing the blobs to fd at its current offset (the caller keeps fd). */
void snapshot_grpc_init(SnapshotGrpc *d, int fd);
/* Feeds the next bytes of the response's DATA. PK_EMALFORMED for what is not a SnapshotResponse stream
 * (a compressed message, a truncated or overlong varint, a known field of the wrong wire type, a field past
 * its message's end), PK_ETOOBIG for a message over SNAPSHOT_GRPC_MESSAGE_MAX, a write's -errno, on_blob's
 * error; with
 * *ret_error (caller frees). */
int snapshot_grpc_feed(SnapshotGrpc *d, const void *data, size_t len, char **ret_error);
/* The end of the stream: it must end between messages, after at least one, the last saying no bytes
 * remain. The bytes written in *ret_written. */
int snapshot_grpc_finish(SnapshotGrpc *d, uint64_t *ret_written, char **ret_error);
