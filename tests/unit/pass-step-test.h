/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* For the unit tests of one step of the pass (test-step-*.c): what its print hook writes, and the words a
 * text must hold. */

#include <stdio.h>
#include <string.h>

#include "basic/string-util.h"
#include "daemon/pass-types.h"
#include "unit-test.h"

/* What step's print hook writes for (pass, observation, plan); its result in *ret_r, or asserted to be 0
 * when ret_r is NULL. Caller frees. */
static inline char *pass_test_print(const PassStep *step, const Pass *p, const PassObservation *o,
                                    const PassPlan *plan, int *ret_r) {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        assert_non_null(f);
        int r = step->print(p, o, plan, f);
        if (ret_r)
                *ret_r = r;
        else
                assert_int_equal(r, 0);
        assert_int_equal(fclose(f), 0);
        return text;
}

static inline void assert_contains(const char *text, const char *want) {
        if (!text || !strstr(text, want))
                fail_msg("expected '%s' in:\n%s", want, strna(text));
}
