/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Protocol and domain errors: -1000 and below, so they never collide with -errno (after Knot DNS). */
enum {
        PK_EMALFORMED = -1000, /* input does not parse (wire, XML, YAML, tag) */
        PK_ETSIG = -1001,      /* TSIG missing, bad MAC, bad key, bad time */
        PK_EDNS_RCODE = -1002, /* a DNS server answered with a failing rcode */
        PK_ECLOUD = -1003,     /* the cloud API answered with an error */
        PK_ETIMEOUT = -1004,   /* a bounded wait ran out */
        PK_ETOOBIG = -1005,    /* input exceeded its size cap */
        PK_ESPEC = -1006,      /* the cluster spec is invalid */
        PK_ENOTBLANK = -1007,  /* refused to format: the device holds a signature */
        PK_ECHILD = -1008,     /* a child process failed (fsck, mkfs) */
        PK_ECONFLICT = -1009,  /* compare-and-set lost: somebody else changed it first */
        PK_EWAITING = -1010,   /* not converged yet, waiting on something outside our control */
        PK_EETCD = -1011,      /* etcd answered with an error (its message travels in ret_error) */
        PK_EGRPC = -1012,      /* a gRPC call ended with a grpc-status other than OK */
        PK_ERROR_MIN = -1012,
};

/* Like strerror(), and for our own codes. r may be negative or positive. Never NULL. */
const char *pk_strerror(int r);
