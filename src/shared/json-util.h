/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Reading a JSON document by path (jansson): the one home of the accessors every room that reads API
 * objects needs. A missing member anywhere on the way, or a value of another type, is NULL: callers decide
 * what absence means. */

#include <jansson.h>

const json_t *json_get_impl(const json_t *o, ...);
const char *json_get_string_impl(const json_t *o, ...);

/* The value at the object members named (one or more keys) below o: json_get(pod, "status", "phase"). */
#define json_get(o, ...) json_get_impl((o), __VA_ARGS__, (const char *)NULL)
/* The string there, NULL when absent or not a string. */
#define json_get_string(o, ...) json_get_string_impl((o), __VA_ARGS__, (const char *)NULL)
