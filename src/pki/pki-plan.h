/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Pure decisions about the certificates on a node: whether a leaf must be (re)issued, and why. No I/O, no
 * OpenSSL: the caller observes (pki_leaf_observe in pki-files.h) and this decides, so the table of cases
 * is unit-tested without certificates. */

#include <errno.h>
#include <stdbool.h>

#include "basic/time-util.h"

typedef enum PkiLeafStatus {
        PKI_LEAF_MISSING,    /* neither file, or one of the pair */
        PKI_LEAF_UNREADABLE, /* a file does not parse, or the key is not the certificate's */
        PKI_LEAF_PRESENT,
        _PKI_LEAF_STATUS_MAX,
        _PKI_LEAF_STATUS_INVALID = -EINVAL,
} PkiLeafStatus;

/* What is on the node for one leaf (cert+key pair). dns/ips: as pki_cert_sans() returns them. */
typedef struct PkiLeafState {
        PkiLeafStatus status;
        bool signed_by_ca; /* verifies against the current CA (pki_cert_verify) */
        usec_t not_before, not_after;
        char **dns, **ips;
        char *serial;                 /* as pki_cert_serial_text() prints it */
        char *subject_cn, *issuer_cn; /* for display; NULL if absent */
} PkiLeafState;

void pki_leaf_state_done(PkiLeafState *s);

typedef enum PkiRenewReason {
        PKI_RENEW_NONE, /* keep it */
        PKI_RENEW_MISSING,
        PKI_RENEW_UNREADABLE,
        PKI_RENEW_OTHER_CA, /* not signed by the current CA (a new CA, or a foreign file) */
        PKI_RENEW_EXPIRING, /* less than a third of its lifetime left (or expired, or not yet valid) */
        PKI_RENEW_SANS,     /* its SANs are not the wanted ones (a new IP, a new member) */
        PKI_RENEW_FORCED,   /* asked for (`protokube pki renew`); pki_plan_leaf() never says it */
        _PKI_RENEW_REASON_MAX,
        _PKI_RENEW_REASON_INVALID = -EINVAL,
} PkiRenewReason;

/* "missing", "unreadable", "other-ca", "expiring", "sans", "forced", and "none"; for plans and logs. */
const char *pki_renew_reason_to_string(PkiRenewReason r);

/* Whether the leaf in have must be reissued at time at, for the wanted SANs (NULL-terminated vectors,
 * either may be NULL). SANs compare as sets: order and duplicates do not matter, DNS names compare without
 * case, IP addresses in canonical form ("::0:1" is "::1"). The first reason in the enum's order wins. */
PkiRenewReason pki_plan_leaf(const PkiLeafState *have, char *const *want_dns, char *const *want_ips,
                             usec_t at);

/* True if the two SAN sets are equal in the sense above. */
bool pki_sans_equal(char *const *dns_a, char *const *ips_a, char *const *dns_b, char *const *ips_b);
