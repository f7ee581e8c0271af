/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/backoff.h"

#include <stdint.h>
#include <sys/random.h>

usec_t backoff_cap(usec_t base, usec_t max, unsigned failures) {
        usec_t d = base;
        for (unsigned i = 1; i < failures && d < max; i++)
                d *= 2;
        return d > max && max >= base ? max : d;
}

double backoff_random(void) {
        uint64_t v = 0;
        if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
                v = now(CLOCK_MONOTONIC) * 0x9E3779B97F4A7C15ULL;
        return (double)(v >> 11) / (double)(1ULL << 53);
}
