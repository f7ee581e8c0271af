/* SPDX-License-Identifier: Apache-2.0 */
#include "model/etcd-versions.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/string-util.h"

/* 3.5's logger: zap is its only one (3.4's default capnslog is gone), and stderr skips the journald probe
 * that "default" makes under a PID 1 parent. The initial corruption check is etcd's own advice for 3.5 since
 * the 3.5.0-3.5.2 inconsistency: a member whose data differs from its peers' refuses to serve. 3.4 gets no
 * flag: its manifests stay as they were. */
static const char *const flags_3_5[] = {
        "experimental-initial-corrupt-check=true",
        "log-outputs=stderr",
        "logger=zap",
        NULL,
};

/* Each version is spelled once: the table, the list and the text are made from these. */
#define V3_4 "3.4.13"
#define V3_5 "3.5.16"

const EtcdVersionInfo etcd_versions[] = {
        { .version = V3_4, .semver = { 3, 4, 13 }, .restore_tool = "etcdctl" },
        { .version = V3_5, .semver = { 3, 5, 16 }, .flags = flags_3_5, .restore_tool = "etcdutl" },
};
const size_t etcd_versions_n = ELEMENTSOF(etcd_versions);

const EtcdVersionInfo *etcd_version_find(const char *version) {
        for (size_t i = 0; version && i < ELEMENTSOF(etcd_versions); i++)
                if (streq(etcd_versions[i].version, version))
                        return &etcd_versions[i];
        return NULL;
}

const char *etcd_versions_text(void) {
        return V3_4 ", " V3_5;
}

const char *const *etcd_versions_list(void) {
        static const char *const list[] = { V3_4, V3_5, NULL };
        return list;
}

int etcd_version_of_image(const char *image, char buf[static ETCD_VERSION_MAX]) {
        /* the tag follows the last ':' after the last '/' (a registry's host:port comes before a '/'); a
         * digest reference (@sha256:...) names no version */
        const char *slash = image ? strrchr(image, '/') : NULL, *colon;
        if (!image || strchr(image, '@'))
                return -EINVAL;
        colon = strrchr(slash ?: image, ':');
        if (!colon)
                return -EINVAL;
        const char *tag = colon + 1;
        if (*tag == 'v')
                tag++;
        size_t n = strcspn(tag, "-");
        /* kops' build suffix: "-0", "-1" */
        if (tag[n] == '-' && (!tag[n + 1] || strspn(tag + n + 1, "0123456789") != strlen(tag + n + 1)))
                return -EINVAL;
        if (n == 0 || n >= ETCD_VERSION_MAX)
                return -EINVAL;
        char v[ETCD_VERSION_MAX];
        memcpy(v, tag, n);
        v[n] = 0;
        Semver s;
        if (semver_parse(v, 0, &s) < 0)
                return -EINVAL;
        memcpy(buf, v, n + 1);
        return 0;
}
