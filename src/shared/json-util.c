/* SPDX-License-Identifier: Apache-2.0 */
#include "shared/json-util.h"

#include <stdarg.h>

static const json_t *walk(const json_t *o, va_list ap) {
        for (const char *k; o && (k = va_arg(ap, const char *));)
                o = json_object_get(o, k);
        return o;
}

const json_t *json_get_impl(const json_t *o, ...) {
        va_list ap;
        va_start(ap, o);
        o = walk(o, ap);
        va_end(ap);
        return o;
}

const char *json_get_string_impl(const json_t *o, ...) {
        va_list ap;
        va_start(ap, o);
        o = walk(o, ap);
        va_end(ap);
        return json_string_value(o);
}
