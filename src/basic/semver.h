/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* MAJOR.MINOR.PATCH version numbers, as Kubernetes and etcd number their releases: the one parser of them
 * (spec/kube-version.h and model/etcd-versions.h are built on it, and so is etcd's /version answer). */

#include <stdbool.h>

typedef struct Semver {
        unsigned major, minor, patch;
} Semver;

typedef enum SemverFlags {
        SEMVER_ALLOW_V = 1 << 0,          /* a leading 'v' ("v1.20.2", as Kubernetes tags releases) */
        SEMVER_ALLOW_PRERELEASE = 1 << 1, /* "-rc.1", "-beta.0": counted as their release */
} SemverFlags;

/* Three decimal components of 1 to 6 digits, no sign, no leading zero (Go's semver rejects "01"). -EINVAL
 * for anything else. */
int semver_parse(const char *s, SemverFlags flags, Semver *ret);

/* <0, 0, >0 as a is older than, the same as, or newer than b. */
int semver_compare(const Semver *a, const Semver *b);

static inline bool semver_same_minor(const Semver *a, const Semver *b) {
        return a->major == b->major && a->minor == b->minor;
}
