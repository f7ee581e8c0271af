/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The generic loader: walks a field table (field.h) over a YAML mapping, fills the typed struct, applies
 * defaults and collects every error with its position, so one run reports all of them. The tables are data:
 * nothing here knows a field by name. */

#include <stdbool.h>
#include <stddef.h>

#include "basic/macro.h"
#include "shared/yaml-tree.h"
#include "spec/field.h"

#define SPEC_ERRORS_MAX 100U

typedef struct SpecError {
        unsigned line, column;
        size_t seq; /* insertion order, to keep the sort stable */
        char *message;
} SpecError;

typedef struct SpecErrors {
        SpecError *items;
        size_t n;
        bool truncated; /* more than SPEC_ERRORS_MAX: the rest were dropped */
        bool oom;
} SpecErrors;

/* Records an error at line:col (both 1-based; 0:0 means the document start). */
void spec_errors_add(SpecErrors *e, unsigned line, unsigned column, const char *format, ...) _printf_(4, 5);
/* Same, at node's position (1:1 when node is NULL). */
void spec_errors_add_at(SpecErrors *e, const YamlNode *node, const char *format, ...) _printf_(3, 4);
static inline bool spec_errors_full(const SpecErrors *e) {
        return e->n >= SPEC_ERRORS_MAX;
}
/* Sorts by position (stable) and formats every error as "FILE:LINE:COL: message" into *ret (caller frees
 * with strv_free). Returns -ENOMEM if an error could not be recorded. Empties e. */
int spec_errors_finish(SpecErrors *e, const char *file, char ***ret);
void spec_errors_clear(SpecErrors *e);

/* Loads map into obj as described by table. map NULL means the object is absent: only defaults are applied
 * and missing required fields are not reported (the parent reports the missing object). path is the dotted
 * name of map ("" at the top), used in messages. Returns -ENOMEM, else 0 (errors go to errs). */
int field_table_load(const Field *table, void *obj, const YamlNode *map, const char *path, SpecErrors *errs);

/* Frees everything field_table_load() allocated in obj (strings, lists, maps, nested objects) and resets
 * those members. */
void field_table_free(const Field *table, void *obj);

/* "'value'" for messages: at most 64 characters, control characters shown as '?'. */
#define SPEC_ECHO_MAX 80
const char *spec_echo(char buf[static SPEC_ECHO_MAX], const char *s);
