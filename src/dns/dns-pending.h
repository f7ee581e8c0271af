/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* DNS changes a provider has accepted but not yet served everywhere (Route 53: a change PENDING until
 * INSYNC). A pass submits its change and goes on; whoever keeps the list across passes (the daemon's Pass)
 * asks about each change once per pass (dns_session_check_pending() in dns-provider.h). Pure bookkeeping:
 * nothing here waits or talks to a provider. */

#include <stdbool.h>
#include <stddef.h>

#include "basic/macro.h"
#include "basic/time-util.h"

/* A pass submits one change per zone; a list this long means changes stopped settling long ago: the
 * oldest is forgotten rather than the list growing without bound. */
#define DNS_PENDING_MAX 64
/* How often a one-shot command asks while it waits (Route 53's documentation polls GetChange; every
 * 500 ms is what protokube always did). */
#define DNS_PENDING_POLL (500 * USEC_PER_MSEC)
/* A change pending longer than this is worth a warning: the old in-pass wait gave up after it. */
#define DNS_PENDING_WARNING (120 * USEC_PER_SEC)
/* Route 53 change ids are 14 characters ("C2682N5HXP0BZ4"); anything longer is refused. */
#define DNS_CHANGE_ID_MAX 64

typedef struct DnsPendingChange {
        char *id;
        usec_t submitted; /* CLOCK_MONOTONIC */
} DnsPendingChange;

typedef struct DnsPending {
        DnsPendingChange *items; /* oldest first */
        size_t n;
} DnsPending;

void dns_pending_done(DnsPending *p);
static inline void dns_pending_donep(DnsPending *p) {
        dns_pending_done(p);
}
#define _cleanup_dns_pending_ _cleanup_(dns_pending_donep)

/* Adds a copy of id, submitted at submitted (CLOCK_MONOTONIC), in submission order. An id already listed is
 * not added again (0). Returns 1 when added; 2 when added and the list was full, so the oldest change was
 * forgotten. -EINVAL for an empty id, one longer than DNS_CHANGE_ID_MAX or with a control character. */
int dns_pending_add(DnsPending *p, const char *id, usec_t submitted);
/* Removes id: 1 when it was listed, 0 when not. */
int dns_pending_remove(DnsPending *p, const char *id);
/* Moves entry i to the end of to (which takes ownership of its id); -ENOMEM leaves both as they were. */
int dns_pending_move(DnsPending *p, size_t i, DnsPending *to);
/* The change submitted first, NULL when none is pending. */
const DnsPendingChange *dns_pending_oldest(const DnsPending *p) _pure_;
/* How long the oldest change has been pending at now (CLOCK_MONOTONIC); 0 when none. */
usec_t dns_pending_oldest_age(const DnsPending *p, usec_t now_monotonic) _pure_;
