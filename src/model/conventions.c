/* SPDX-License-Identifier: Apache-2.0 */
#include "model/conventions.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/dns-name.h"
#include "basic/macro.h"
#include "basic/string-util.h"

static bool is_label(const char *s) {
        return s && dns_label_is_valid(s, strlen(s));
}

bool etcd_cluster_is_main(const char *cluster) {
        return cluster && streq(cluster, ETCD_MAIN_CLUSTER);
}

int etcd_default_ports(const char *cluster, int *ret_client, int *ret_peer) {
        static const struct {
                const char *cluster;
                int client, peer;
        } table[] = {
                { ETCD_MAIN_CLUSTER, ETCD_MAIN_CLIENT_PORT, ETCD_MAIN_PEER_PORT },
                { ETCD_EVENTS_CLUSTER, ETCD_EVENTS_CLIENT_PORT, ETCD_EVENTS_PEER_PORT },
        };
        for (size_t i = 0; cluster && i < ELEMENTSOF(table); i++)
                if (streq(cluster, table[i].cluster)) {
                        *ret_client = table[i].client;
                        *ret_peer = table[i].peer;
                        return 0;
                }
        return -ENOENT;
}

/* base for main, base + "-" + cluster + tail for the others (tail after base for main too). */
static int per_cluster(const char *cluster, const char *base, const char *tail, char **ret) {
        if (!is_label(cluster))
                return -EINVAL;
        char *s = etcd_cluster_is_main(cluster) ? strjoin(base, tail) : strjoin(base, "-", cluster, tail);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int etcd_kops_cluster_name(const char *cluster, char **ret) {
        return per_cluster(cluster, ETCD_KOPS_NAME, "", ret);
}

int etcd_member_name(const char *cluster, const char *member, char **ret) {
        _cleanup_free_ char *kops = NULL;
        if (!is_label(member))
                return -EINVAL;
        int r = etcd_kops_cluster_name(cluster, &kops);
        if (r < 0)
                return r;
        char *s = strjoin(kops, "-", member);
        if (!s)
                return -ENOMEM;
        /* It becomes one DNS label of the member's name. */
        if (!is_label(s)) {
                free(s);
                return -EINVAL;
        }
        *ret = s;
        return 0;
}

int etcd_member_dns_name(const char *cluster, const char *member, const char *internal_suffix, char **ret) {
        _cleanup_free_ char *name = NULL;
        int r = etcd_member_name(cluster, member, &name);
        if (r < 0)
                return r;
        return dns_name_join(name, internal_suffix, ret);
}

int etcd_manifest_file_name(const char *cluster, char **ret) {
        return per_cluster(cluster, ETCD_KOPS_NAME, MANIFEST_SUFFIX, ret);
}

int etcd_pod_name(const char *cluster, char **ret) {
        return per_cluster(cluster, ETCD_POD_NAME, "", ret);
}

int etcd_data_dir(const char *cluster, char **ret) {
        return per_cluster(cluster, ETCD_DATA_DIR, "", ret);
}

int etcd_restore_dir(const char *cluster, char **ret) {
        return per_cluster(cluster, ETCD_RESTORE_DIR, "", ret);
}

int etcd_cluster_token(const char *cluster, char **ret) {
        return per_cluster(cluster, ETCD_TOKEN_PREFIX ETCD_KOPS_NAME, "", ret);
}

int api_dns_name(const char *domain, char **ret) {
        return dns_name_join(API_LABEL, domain, ret);
}

char *api_server_url(const char *domain, int port) {
        if (port == APISERVER_PORT_DEFAULT) /* https's own: the URL leaves it out */
                return strprintf("https://%s.%s", API_LABEL, domain);
        return strprintf("https://%s.%s:%d", API_LABEL, domain, port);
}

char *master_mount_path(const char *mount_root, const char *volume_id) {
        return strjoin(mount_root, "/" MASTER_MOUNT_PREFIX, volume_id);
}

char *etcd_volume_manifest_path(const char *mount_path, const char *cluster) {
        _cleanup_free_ char *name = NULL;
        if (etcd_manifest_file_name(cluster, &name) < 0)
                return NULL;
        return strjoin(mount_path, "/" VOLUME_MANIFEST_SUBDIR "/", name);
}
