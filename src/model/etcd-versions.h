/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The etcd versions protokube runs (docs/etcd-versions.md): one row each, with what its manifest needs. The
 * spec refuses a version not in the table; components/ renders each version's flags and restore step from
 * its row; the upgrade's decision (etcdapi/upgrade-plan.h) is handed the table's versions.
 *
 * An etcd cluster's version is its image's tag ("registry.k8s.io/etcd:3.5.16-0": kops' images are tagged
 * VERSION-BUILD), or the cluster's version key for an image whose tag names none. */

#include <stdbool.h>
#include <stddef.h>

#include "basic/semver.h"

typedef struct EtcdVersionInfo {
        const char *version; /* "3.5.16" */
        Semver semver;
        /* The flags of this version alone, added to those of every version: "name=value" without "--",
         * sorted in with the rest by the builder. Only flags the version's binary knows. */
        const char *const *flags;
        /* The tool of the image that restores a snapshot into a data dir: "etcdctl" (3.4), "etcdutl" (3.5,
         * where `etcdctl snapshot restore` is deprecated); the same arguments either way. */
        const char *restore_tool;
} EtcdVersionInfo;

/* The table, in ascending order, and its size. */
extern const EtcdVersionInfo etcd_versions[];
extern const size_t etcd_versions_n;

/* The row of "3.5.16", or NULL. */
const EtcdVersionInfo *etcd_version_find(const char *version);

/* "3.4.13, 3.5.16": for messages. */
const char *etcd_versions_text(void);

/* The versions as a NULL-terminated array (static). */
const char *const *etcd_versions_list(void);

/* The version an image's tag names: "3.5.16" of "registry.k8s.io/etcd:3.5.16-0" (also "…:3.5.16" and
 * "…:v3.5.16"), into buf; -EINVAL when the reference has no tag or its tag is no VERSION[-BUILD]. The
 * version need not be in the table. */
#define ETCD_VERSION_MAX 24
int etcd_version_of_image(const char *image, char buf[static ETCD_VERSION_MAX]);
