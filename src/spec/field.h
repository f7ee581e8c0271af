/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The field table: one row per typed field of the cluster spec. The loader (spec/) reads name, type, offset,
 * default, range, enum and validation; the flag builder (components/) reads the flag name, the empty value
 * and the list style; the configuration-file renderer (components/component-file.h) reads the field's name
 * in the component's file and the versions whose file has it. This is kops' struct tags (`json:"x"
 * flag:"y" flag-empty:"z"`) done as data, one row saying both where a setting goes as a flag and where it
 * goes in the file. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/time-util.h"
#include "spec/kube-version.h"

typedef enum FieldType {
        FIELD_STRING,      /* char *, NULL = unset */
        FIELD_BOOL,        /* OptBool */
        FIELD_INT,         /* OptInt; range in min/max when min < max */
        FIELD_DURATION,    /* OptDuration; YAML takes Go form ("1m0s", "10s", "250ms") */
        FIELD_STRV,        /* char **, NULL-terminated; NULL = unset */
        FIELD_MAP,         /* char ** of alternating key, value; sorted by key; NULL = unset */
        FIELD_ENUM,        /* OptEnum: index into enum_values */
        FIELD_STRUCT,      /* nested object described by sub */
        FIELD_STRUCT_LIST, /* StructList of elements described by sub, each elem_size bytes */
        _FIELD_TYPE_MAX,
} FieldType;

typedef struct OptBool {
        bool set;
        bool value;
} OptBool;

typedef struct OptInt {
        bool set;
        int64_t value;
} OptInt;

typedef struct OptDuration {
        bool set;
        usec_t value;
} OptDuration;

typedef struct OptEnum {
        bool set;
        int value;
} OptEnum;

typedef struct StructList {
        void *items; /* n elements of the field's elem_size */
        size_t n;
} StructList;

enum {
        FIELD_REQUIRED = 1 << 0,    /* missing is an error */
        FIELD_FLAG_REPEAT = 1 << 1, /* STRV: one --flag=v per element instead of one comma-joined flag */
        FIELD_NO_FLAG_SORT = 1 << 2,
        FIELD_FILE_BOOL_VALUES =
            1 << 3, /* MAP: the file's values are bools (featureGates: "true" -> true) */
        /* STRING: names the component's own configuration file, given by the operator
         * (kubeScheduler.config): set, it replaces the one protokube renders, and the component ignores the
         * flags of the settings that file has (spec-gates.c refuses them) */
        FIELD_OPERATOR_FILE = 1 << 4,
        /* STRING host:port: a server address two instances of the component on one host cannot share
         * (no SO_REUSEPORT): instance i of FIELD_INSTANCES (the static pod, the self-hosted pod, its
         * checkpoint) takes the port + i * FIELD_INSTANCE_PORT_STEP (component_config_file_instance()) */
        FIELD_INSTANCE_PORT = 1 << 5,
};

#define FIELD_INSTANCES          3
#define FIELD_INSTANCE_PORT_STEP 10
/* The highest port a FIELD_INSTANCE_PORT setting may name: its last instance's must still be one. */
#define FIELD_INSTANCE_PORT_MAX (65535 - FIELD_INSTANCE_PORT_STEP * (FIELD_INSTANCES - 1))

typedef struct Field Field;
struct Field {
        const char *name; /* YAML key (camelCase); NULL ends the table */
        FieldType type;
        size_t offset;
        unsigned flags;
        const char *flag;               /* command-line flag without "--"; NULL = not emitted as a flag */
        const char *default_value;      /* applied when absent, parsed as if it were the YAML scalar */
        const char *empty_value;        /* the flag builder emits nothing when the value renders to this */
        int64_t min, max;               /* FIELD_INT range, checked when min < max */
        const char *const *enum_values; /* FIELD_ENUM, NULL-terminated */
        const Field *sub;               /* FIELD_STRUCT, FIELD_STRUCT_LIST */
        size_t elem_size;               /* FIELD_STRUCT_LIST */
        /* Extra validation of a set value; on failure returns < 0 and a message (caller frees). */
        int (*validate)(const void *value, char **ret_message);
        const char *help; /* one line for docs and did-you-mean context */
        /* The Kubernetes versions whose binary accepts the flag (zero: all of 1.20 to 1.31). Set in the spec
         * outside them is an error naming the key and the version; a default outside them is not rendered.
         */
        KubeGate k8s;
        /* List elements, map keys or enum names that only some versions accept; NULL: any value. */
        const KubeValueGates *k8s_values;
        /* The setting's field in the component's configuration file, as a dotted path
         * ("clientConnection.kubeconfig"), and the minors whose file has it (zero: all of 1.20 to 1.31).
         * NULL: the setting is a flag only. Where the component reads a file protokube renders, a setting
         * whose file has the field at the chosen version goes into the file and its flag is left out. */
        const char *file_field;
        KubeGate file_k8s;
        /* A flag the component ignores beside --config, whose setting its file holds under another key,
         * and the minors where that is so (kube-scheduler 1.20 to 1.22: --port, the file's
         * healthzBindAddress). There the flag is left out beside the file, and the setting in the spec is
         * refused, naming that key (spec-gates.c). */
        const char *file_instead;
        KubeGate file_instead_k8s;
};

#define FIELD_PTR(obj, f) ((void *)((char *)(obj) + (f)->offset))
