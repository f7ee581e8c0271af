/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The flag builder: a field table walked over a typed struct gives the component's command-line flags,
 * following kops' pkg/flagbuilder so flags read the same as on kops clusters:
 *   - an unset optional (OptBool/OptInt/OptDuration/OptEnum with !set) or a NULL string/list/map emits
 *     nothing, and so does an empty string or empty list;
 *   - a value that renders to the field's empty_value emits nothing;
 *   - bools and ints are emitted explicitly when set ("--anonymous-auth=false");
 *   - durations in Go form ("--event-ttl=1h0m0s");
 *   - maps as one "--flag=k1=v1,k2=v2", sorted by key (FIELD_NO_FLAG_SORT keeps the given order);
 *   - string lists comma-joined, or one "--flag=v" per element with FIELD_FLAG_REPEAT;
 *   - nested FIELD_STRUCT fields are walked; FIELD_STRUCT_LIST has no flag form and is skipped;
 *   - the whole list is sorted as strings, so the order never depends on the table. */

#include "basic/macro.h"
#include "spec/field.h"

/* Appends "--flag=value" to *l; the printf form formats the value. */
int flags_push(char ***l, const char *flag, const char *value);
int flags_pushf(char ***l, const char *flag, const char *format, ...) _printf_(3, 4);

/* Appends the flags of obj (described by fields) to *l, unsorted. A field whose flag
 * Kubernetes 1.<k8s_minor> does not have (its k8s gate) is left out; k8s_minor 0 means no Kubernetes version
 * (etcd, tests): nothing is left out. The spec loader has already refused such a field when the user set it,
 * so what is left out here is a default. */
int flags_append(const Field *fields, const void *obj, unsigned k8s_minor, char ***l);

/* The sorted flags of obj for Kubernetes 1.<k8s_minor> (0: any); *ret is a NULL-terminated list (caller
 * frees with strv_free), possibly empty. */
int flags_build(const Field *fields, const void *obj, unsigned k8s_minor, char ***ret);

/* The flags of obj that stay flags beside the component's configuration file at Kubernetes 1.<k8s_minor>:
 * those of the rows the file has no field for there (field_in_file()), sorted like flags_build(). */
int flags_build_beside_file(const Field *fields, const void *obj, unsigned k8s_minor, char ***ret);

/* The row's setting goes into the configuration file at 1.<k8s_minor> (it has a file field, and the file of
 * that minor has it; k8s_minor 0: any). */
bool field_in_file(const Field *f, unsigned k8s_minor);

/* The value of one scalar, list or map field as its flag carries it ("true", "1m0s", "a,b", "k=v,x=y"):
 * *ret = NULL when the field emits nothing (unset, empty, or its empty_value). Caller frees. */
int flags_field_value(const Field *f, const void *obj, char **ret);

/* Applies the table's scalar defaults (string, bool, int, duration, enum; nested structs too) to the unset
 * fields of obj, which must be a scratch copy: strings are aliased from the table, never to be freed. The
 * loader already does this for loaded specs; builders do it again so specs made in code behave the same. */
int flags_fill_defaults(const Field *fields, void *obj);
