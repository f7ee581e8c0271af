/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* One call to a cloud's API, tried again on what may pass (throttling, 5xx, a broken connection) with
 * "full jitter" backoff (basic/backoff.h) until it succeeds, fails for good, runs out of attempts or reaches
 * its deadline: the loop the AWS and Google Cloud clients share. */

#include <stdbool.h>

#include "basic/time-util.h"

typedef enum RetryVerdict {
        RETRY_DONE,
        RETRY_AGAIN,     /* after a pause */
        RETRY_AGAIN_NOW, /* at once, once per call (a token the API refused: a new one is fetched) */
        RETRY_FAIL,
} RetryVerdict;

typedef struct RetryPolicy {
        unsigned max_attempts;
        usec_t backoff_base, backoff_max; /* before try n+1: a random delay in [0, min(max, base * 2^n)] */
        usec_t call_timeout;              /* the whole call, its pauses included */
} RetryPolicy;

/* One try: its result and message; *ret_verdict says what next. deadline: CLOCK_MONOTONIC. */
typedef int (*RetryAttempt)(void *userdata, usec_t deadline, RetryVerdict *ret_verdict, char **ret_error);

/* Tries until done or failed for good. Returns the last try's result with its message in *ret_error, to
 * which the reason for not trying again is added ("gave up after 8 attempts", "at the call's deadline":
 * PK_ETIMEOUT, "stop requested": -ECANCELED). *retries (may be NULL) counts the pauses taken. */
int retry_call(const RetryPolicy *p, RetryAttempt attempt, void *userdata, unsigned *retries,
               char **ret_error);

/* A connection that failed or broke may succeed on the next try; a bad URL or OOM will not. */
bool retry_transport_error(int r);
