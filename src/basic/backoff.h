/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Exponential backoff, one home for every retry of protokube: the cloud clients (full jitter over the cap,
 * shared/retry.h), the Kubernetes API client (the cap, unless the server says Retry-After), the reconcile
 * loop after a failed pass (80-100 % of the cap, so that masters that failed together do not retry
 * together). */

#include "basic/time-util.h"

/* The wait before the try after failures failed ones (failures >= 1): base * 2^(failures - 1), at most max
 * (never below base). */
usec_t backoff_cap(usec_t base, usec_t max, unsigned failures);

/* A uniform number in [0, 1) for jitter: getrandom(), the monotonic clock when the kernel's pool is not
 * ready (jitter needs no secrecy). */
double backoff_random(void);
