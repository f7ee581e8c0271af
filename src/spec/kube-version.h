/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* spec.kubernetesVersion, parsed, and the gates that say which flags and values each Kubernetes version's
 * binaries accept. protokube renders flags for Kubernetes 1.20 to 1.31 (docs/components.md, "Flags by
 * Kubernetes version", names the source of every gate). */

#include <stdbool.h>

/* The supported range: 1.KUBE_MINOR_MIN.x to 1.KUBE_MINOR_MAX.x. */
#define KUBE_MINOR_MIN 20U
#define KUBE_MINOR_MAX 31U

typedef struct KubeVersion {
        unsigned major, minor, patch;
} KubeVersion;

/* "1.31.2", "v1.20.2", "1.31.0-rc.1" (the pre-release counts as its release). Returns -EINVAL for anything
 * else, with no range check. */
int kube_version_parse(const char *s, KubeVersion *ret);

/* A version protokube renders flags for (1.20 to 1.31). */
static inline bool kube_version_supported(const KubeVersion *v) {
        return v->major == 1 && v->minor >= KUBE_MINOR_MIN && v->minor <= KUBE_MINOR_MAX;
}

/* The 1.x minors that accept a flag or value: since..until, 0 = no bound on that side. */
typedef struct KubeGate {
        unsigned since, until;
} KubeGate;

static inline bool kube_gate_allows(KubeGate g, unsigned minor) {
        return (g.since == 0 || minor >= g.since) && (g.until == 0 || minor <= g.until);
}

/* "since 1.27", "1.20 to 1.23", "until 1.24" for messages; buf of KUBE_GATE_TEXT_MAX. */
#define KUBE_GATE_TEXT_MAX 32
const char *kube_gate_text(char buf[static KUBE_GATE_TEXT_MAX], KubeGate g);

/* One value of a list element, map key or enum that only some versions accept. */
typedef struct KubeValueGate {
        const char *value; /* NULL ends a table */
        KubeGate gate;
} KubeValueGate;

typedef struct KubeValueGates {
        const char *what; /* "feature gate", "admission plugin", "proxy mode": for messages */
        const KubeValueGate *values;
        /* For minors up to this one the table lists every value the binaries accept (read from their
         * --help), so a value it does not list is refused too; above it, an unlisted value is let through.
         */
        unsigned complete_until;
} KubeValueGates;

typedef enum KubeValueVerdict {
        KUBE_VALUE_OK,
        KUBE_VALUE_OUT_OF_RANGE, /* listed, but not for this minor: *ret_gate says when it exists */
        KUBE_VALUE_UNKNOWN,      /* not listed, and the table is complete for this minor */
} KubeValueVerdict;

KubeValueVerdict kube_value_check(const KubeValueGates *gates, const char *value, unsigned minor,
                                  KubeGate *ret_gate);

/* The tables (kube-gates.c). */
extern const KubeValueGates kube_feature_gates;
extern const KubeValueGates kube_admission_plugins;
