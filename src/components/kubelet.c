/* SPDX-License-Identifier: Apache-2.0 */
#include "components/kubelet.h"

#include <string.h>

#include "basic/string-util.h"
#include "basic/strv.h"
#include "components/flags.h"

/* v1beta1 is the KubeletConfiguration of every release from 1.10 to 1.31 (v1 is not out in 1.31). */
const ComponentFileDef kubelet_file = {
        .kind = "KubeletConfiguration",
        .versions =
            (const ComponentFileVersion[]){
                { {}, "kubelet.config.k8s.io/v1beta1" },
                {},
            },
        .dir = "kubelet",
        .out_name = "kubelet.yaml",
};

/* The effective config: a scratch copy with the table's defaults, and the cluster's DNS domain. Its strings
 * alias the spec and the table. */
static int kubelet_prepare(const ClusterSpec *spec, KubeletConfig *c, unsigned *ret_minor) {
        KubeVersion v;
        int r = kube_version_parse(spec->kubernetes_version, &v);
        if (r < 0)
                return r;
        if (!kube_version_supported(&v))
                return -EOPNOTSUPP;
        *c = spec->kubelet;
        r = flags_fill_defaults(kubelet_config_fields, c);
        if (r < 0)
                return r;
        if (!c->cluster_domain)
                c->cluster_domain = spec->cluster_dns_domain;
        *ret_minor = v.minor;
        return 0;
}

int kubelet_config_render(const ClusterSpec *spec, char **ret) {
        KubeletConfig c;
        unsigned minor;
        if (!spec || !ret)
                return -EINVAL;
        int r = kubelet_prepare(spec, &c, &minor);
        if (r < 0)
                return r;
        return component_file_render(&kubelet_file, kubelet_config_fields, &c, minor, ret);
}

int kubelet_env_render(const ClusterSpec *spec, const char *config_path, char *const *node_flags,
                       char **ret) {
        _cleanup_strv_free_ char **flags = NULL;
        int r = kubelet_flags(spec, config_path, &flags);
        if (r < 0)
                return r;
        STRV_FOREACH (f, (char **)node_flags)
                if (strv_extend(&flags, *f) < 0)
                        return -ENOMEM;
        strv_sort(flags);
        STRV_FOREACH (f, flags)
                if (strpbrk(*f, " \t\"'\\$`") || string_has_cc(*f))
                        return -EINVAL;
        _cleanup_free_ char *joined = strv_join(flags, " ");
        if (!joined)
                return -ENOMEM;
        *ret = strprintf("# The kubelet's flags beside %s, written by protokube (docs/workers.md).\n"
                         "KUBELET_ARGS=\"%s\"\n",
                         config_path ?: KUBELET_CONFIG_PATH, joined);
        return *ret ? 0 : -ENOMEM;
}

int kubelet_flags(const ClusterSpec *spec, const char *config_path, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        KubeletConfig c;
        unsigned minor;
        if (!spec || !ret)
                return -EINVAL;
        int r = kubelet_prepare(spec, &c, &minor);
        if (r < 0)
                return r;
        r = flags_build_beside_file(kubelet_config_fields, &c, minor, &l);
        if (r < 0)
                return r;
        r = flags_push(&l, "config", config_path ?: KUBELET_CONFIG_PATH);
        if (r < 0)
                return r;
        strv_sort(l);
        *ret = TAKE_PTR(l);
        return 0;
}

int kubelet_handoff_flags(const ClusterSpec *node_spec, const char *lock_path, char ***flags) {
        KubeletConfig c;
        unsigned minor;
        if (!node_spec || !lock_path || !flags)
                return -EINVAL;
        if (!node_spec->kubelet.self_hosted.set || !node_spec->kubelet.self_hosted.value)
                return 0;
        int r = kubelet_prepare(node_spec, &c, &minor);
        if (r >= 0)
                r = flags_push(flags, "lock-file", lock_path);
        if (r >= 0)
                r = flags_push(flags, "exit-on-lock-contention", "true");
        if (r >= 0)
                r = flags_push(flags, "pod-manifest-path", c.static_pod_path);
        if (r >= 0)
                r = flags_push(flags, "client-ca-file", c.client_ca_file);
        return r;
}
