/* SPDX-License-Identifier: Apache-2.0 */
#include "shared/retry.h"

#include <errno.h>
#include <stdlib.h>

#include "basic/backoff.h"
#include "basic/errors.h"
#include "basic/stop.h"
#include "basic/string-util.h"

bool retry_transport_error(int r) {
        return r == PK_ETIMEOUT || r == -ECONNREFUSED || r == -ECONNRESET || r == -EIO;
}

/* The last attempt's message with why no further attempt was made; r is returned. */
static int give_up(char **ret_error, int r, const char *err, const char *why, unsigned attempts) {
        return error_setf(ret_error, r, "%s (%s after %u attempts)", strnull(err), why, attempts);
}

int retry_call(const RetryPolicy *p, RetryAttempt attempt, void *userdata, unsigned *retries,
               char **ret_error) {
        usec_t deadline = now(CLOCK_MONOTONIC) + p->call_timeout;
        bool again_now_used = false;
        RetryVerdict v;
        int r;

        for (unsigned n = 0;; n++) {
                _cleanup_free_ char *err = NULL;
                r = attempt(userdata, deadline, &v, &err);
                if (v == RETRY_DONE)
                        return 0;
                if (v == RETRY_AGAIN_NOW && !again_now_used) {
                        again_now_used = true;
                        continue;
                }
                if (v != RETRY_AGAIN) {
                        if (ret_error)
                                free_and_replace(*ret_error, err);
                        return r;
                }
                if (n + 1 >= p->max_attempts)
                        return give_up(ret_error, r, err, "gave up", n + 1);
                usec_t cap = backoff_cap(p->backoff_base, p->backoff_max, n + 1);
                usec_t delay = (usec_t)((double)cap * backoff_random()), t = now(CLOCK_MONOTONIC);
                if (t + delay >= deadline)
                        return give_up(ret_error, PK_ETIMEOUT, err, "gave up at the call's deadline", n + 1);
                if (sleep_usec(delay) < 0)
                        return give_up(ret_error, -ECANCELED, err, "stop requested", n + 1);
                if (retries)
                        (*retries)++;
        }
}
