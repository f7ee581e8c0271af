/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Parsing JSON that holds a secret (a Secret's data, instance credentials) without leaving copies in freed
 * memory. jansson's lexer copies a token's text into a buffer it grows by allocate-copy-free, and the
 * number and string parsers free their scratch copies as they are; only the result is the caller's. While
 * json_loadb_secret() runs, every block jansson frees is erased first (its whole usable size: jansson's
 * free hook gets no size). Several threads may parse at once: the erasing free stays installed while any
 * of them does. jansson's allocator must be malloc's (the default), or one that hands out malloc's blocks.
 *
 * The values of the returned object are the caller's to erase before json_decref(): json_erase_values(). */

#include <jansson.h>
#include <stddef.h>

json_t *json_loadb_secret(const char *buffer, size_t len, size_t flags, json_error_t *error);

/* Overwrites every string value in j (recursively; keys stay) before the caller drops it, whose data
 * jansson would otherwise free as it is. NULL is fine. */
void json_erase_values(json_t *j);
