/* SPDX-License-Identifier: Apache-2.0 */
/* Observe: what the provider lists, and for the volumes this node holds, their device, their mount and
 * their manifests. Read-only. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/beneath.h"
#include "basic/fileio.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "cloud/volume-tags.h"
#include "shared/mount-util.h"
#include "volumes/volumes.h"

char *volume_mount_path(const char *mount_root, const char *id) {
        return strjoin(mount_root, "/master-", id);
}

char *volume_etcd_manifest_name(const char *etcd_cluster) {
        return streq(etcd_cluster, "main") ? strdup("etcd.manifest")
                                           : strjoin("etcd-", etcd_cluster, ".manifest");
}

char *volume_manifest_path(const char *mount_path, const char *etcd_cluster) {
        _cleanup_free_ char *name = volume_etcd_manifest_name(etcd_cluster);
        return name ? strjoin(mount_path, "/" VOLUME_MANIFEST_SUBDIR "/", name) : NULL;
}

char *volume_manifest_link(const char *manifest_dir, const char *etcd_cluster) {
        _cleanup_free_ char *name = volume_etcd_manifest_name(etcd_cluster);
        return name ? strjoin(manifest_dir, "/", name) : NULL;
}

void volumes_observation_done(VolumesObservation *o) {
        node_identity_done(&o->node);
        volume_list_done(&o->volumes);
        free(o->observed);
        *o = (VolumesObservation){};
}

void volumes_pass_input(const VolumesPassConfig *cfg, const VolumesObservation *o, PassInput *ret) {
        *ret = (PassInput){
                .cluster = cfg->cluster,
                .etcd_clusters = cfg->etcd_clusters,
                .node = &o->node,
                .volumes = o->volumes.items,
                .n_volumes = o->volumes.n,
                .observed = o->observed,
                .manifests = cfg->render != NULL,
        };
}

int volume_manifest_dir_open(const char *mount_path, bool create) {
        /* the mount point itself is ours (a canonical path on the root filesystem); below it, nothing is
         * followed */
        _cleanup_close_ int mfd = open(mount_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (mfd < 0)
                return -errno;
        return beneath_open_dir(mfd, VOLUME_MANIFEST_SUBDIR, create, 0755);
}

/* 1 when the manifest on the volume holds exactly text; 0 when it is absent or differs. Anything but a
 * regular file there (a symlink, a FIFO) is an error: it is never followed or read. */
static int manifest_holds(const char *mount_path, const char *etcd_cluster, const char *text) {
        _cleanup_free_ char *cur = NULL, *name = volume_etcd_manifest_name(etcd_cluster);
        size_t len;
        if (!name)
                return -ENOMEM;
        _cleanup_close_ int dfd = volume_manifest_dir_open(mount_path, false);
        if (dfd == -ENOENT)
                return 0;
        if (dfd < 0)
                return dfd;
        int r = beneath_read_file(dfd, name, 1024 * 1024, &cur, &len);
        if (r < 0)
                return r == -ENOENT ? 0 : r;
        return len == strlen(text) && memcmp(cur, text, len) == 0;
}

static int link_points_at(const char *link, const char *target) {
        char cur[4096];
        ssize_t n = readlink(link, cur, sizeof(cur) - 1);
        if (n < 0)
                return errno == ENOENT || errno == EINVAL ? 0 : -errno;
        cur[n] = 0;
        return streq(cur, target);
}

/* Step 7's state: only meaningful once the volume is mounted (otherwise the path would be read on the
 * root filesystem under the mount point). */
static int observe_manifests(const VolumesPassConfig *cfg, const Volume *v, const char *mount_path,
                             VolumeObserved *obs) {
        VolumeEligibility e = {};
        _cleanup_free_ char *yaml = NULL, *file = NULL, *link = NULL;
        int r;

        r = volume_classify(v, cfg->cluster, NULL, cfg->etcd_clusters, &e);
        if (r < 0 || !e.eligible) {
                volume_eligibility_done(&e);
                return r;
        }
        r = cfg->render(cfg->render_userdata, e.etcd.cluster, e.etcd.member, e.etcd.members, mount_path,
                        &yaml);
        if (r >= 0) {
                file = volume_manifest_path(mount_path, e.etcd.cluster);
                link = volume_manifest_link(cfg->manifest_dir, e.etcd.cluster);
                r = file && link ? 0 : -ENOMEM;
        }
        if (r >= 0)
                r = manifest_holds(mount_path, e.etcd.cluster, yaml);
        if (r >= 0) {
                obs->manifest_current = r > 0;
                r = link_points_at(link, file);
        }
        if (r >= 0)
                obs->link_current = r > 0;
        volume_eligibility_done(&e);
        /* a render failure or something odd on the volume shows up as "not current"; the write action
         * reports it */
        return r == -ENOMEM ? r : 0;
}

static int observe_volume(VolumeProvider *p, const VolumesPassConfig *cfg, const Volume *v,
                          VolumeObserved *obs) {
        _cleanup_free_ char *dev = NULL, *mount_path = NULL;
        dev_t devnum = 0, mounted;
        int r;

        r = p->vtable->resolve_device(p->state, v->id, &dev, &devnum);
        /* -ENODEV: a device that cannot be proven the volume's counts as none here; waiting for the device
         * reports it and stops only this volume, not the whole pass */
        if (r < 0 && r != -ENOENT && r != -ENODEV)
                return r;
        obs->device_present = r > 0;
        mount_path = volume_mount_path(cfg->mount_root, v->id);
        if (!mount_path)
                return -ENOMEM;
        r = mount_find_target(mount_path, &mounted, NULL);
        if (r < 0)
                return r;
        if (r == 0)
                obs->mount = MOUNT_STATE_NONE;
        else
                obs->mount = obs->device_present && mounted == devnum ? MOUNT_STATE_OURS : MOUNT_STATE_OTHER;
        if (obs->mount == MOUNT_STATE_OURS && cfg->render)
                return observe_manifests(cfg, v, mount_path, obs);
        return 0;
}

int volumes_observe(VolumeProvider *p, const VolumesPassConfig *cfg, VolumesObservation *ret) {
        VolumesObservation o = {};
        int r;

        r = p->vtable->node_identity(p->state, &o.node);
        if (r >= 0)
                /* every zone: `protokube volumes` explains why another zone's volume is not eligible; the
                 * planner filters by zone */
                r = p->vtable->list_volumes(p->state, cfg->cluster, NULL, &o.volumes);
        if (r >= 0) {
                o.observed = new0(VolumeObserved, o.volumes.n);
                if (!o.observed)
                        r = -ENOMEM;
        }
        for (size_t i = 0; r >= 0 && i < o.volumes.n; i++) {
                const Volume *v = &o.volumes.items[i];
                /* a damaged record cannot be resolved to a device: it is listed, not used */
                if (!v->damaged && node_identity_holds(&o.node, &v->attachment))
                        r = observe_volume(p, cfg, v, &o.observed[i]);
        }
        if (r < 0) {
                volumes_observation_done(&o);
                return r;
        }
        *ret = o;
        return 0;
}

static bool view_has_member(const ClusterView *v, const char *cluster, const char *member) {
        for (size_t i = 0; i < v->n_members; i++)
                if (streq(v->members[i].cluster, cluster) && streq(v->members[i].member, member))
                        return true;
        return false;
}

/* Every member the tags name is in the view, held or not: an unheld member's name is published with a
 * placeholder address so it never answers NXDOMAIN (docs/etcd-dns.md). */
static int view_add_unheld_members(ClusterView *view, const EtcdTag *t) {
        STRV_FOREACH (m, t->members)
                if (!view_has_member(view, t->cluster, *m)) {
                        int r = cluster_view_add_member(view, t->cluster, *m, NULL);
                        if (r < 0)
                                return r;
                }
        return 0;
}

int volumes_observe_view(VolumeProvider *p, const char *cluster, ClusterView **ret) {
        _cleanup_(cluster_view_freep) ClusterView *view = new0(ClusterView, 1);
        VolumeList l = {};
        VolumeEligibility *e = NULL;
        int r;

        if (!view)
                return -ENOMEM;
        r = p->vtable->list_volumes(p->state, cluster, NULL, &l);
        if (r < 0)
                return r;
        e = new0(VolumeEligibility, l.n);
        if (!e)
                r = -ENOMEM;
        for (size_t i = 0; r >= 0 && i < l.n; i++)
                r = volume_classify(&l.items[i], cluster, NULL, NULL, &e[i]);
        /* a member has one holder, so its name never resolves to two masters */
        if (r >= 0)
                r = volume_resolve_members(l.items, l.n, cluster, NULL, e);
        for (size_t i = 0; r >= 0 && i < l.n; i++) {
                const Volume *v = &l.items[i];
                if (!e[i].eligible || !v->attachment.node)
                        continue;
                r = cluster_view_add_member(view, e[i].etcd.cluster, e[i].etcd.member, v->attachment.node);
                if (r >= 0 && streq(e[i].etcd.cluster, "main"))
                        r = cluster_view_add_master(view, v->attachment.node, v->attachment.internal_ips,
                                                    v->attachment.external_ips);
        }
        for (size_t i = 0; r >= 0 && i < l.n; i++)
                if (e[i].eligible || e[i].held_through)
                        r = view_add_unheld_members(view, &e[i].etcd);
        for (size_t i = 0; e && i < l.n; i++)
                volume_eligibility_done(&e[i]);
        free(e);
        volume_list_done(&l);
        if (r < 0)
                return r;
        cluster_view_sort(view);
        *ret = TAKE_PTR(view);
        return 0;
}
