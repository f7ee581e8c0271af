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
#include "model/conventions.h"
#include "shared/mount-util.h"
#include "volumes/volumes.h"

/* The names are kops' (model/conventions.h); these keep the NULL-on-failure shape the callers use. */
char *volume_mount_path(const char *mount_root, const char *id) {
        return master_mount_path(mount_root, id);
}

char *volume_etcd_manifest_name(const char *etcd_cluster) {
        char *name = NULL;
        return etcd_manifest_file_name(etcd_cluster, &name) < 0 ? NULL : name;
}

char *volume_manifest_path(const char *mount_path, const char *etcd_cluster) {
        return etcd_volume_manifest_path(mount_path, etcd_cluster);
}

char *volume_manifest_link(const char *manifest_dir, const char *etcd_cluster) {
        _cleanup_free_ char *name = volume_etcd_manifest_name(etcd_cluster);
        return name ? strjoin(manifest_dir, "/", name) : NULL;
}

void volumes_observation_done(VolumesObservation *o) {
        for (size_t i = 0; o->observed && i < o->volumes.n; i++)
                free(o->observed[i].manifest_text);
        free(o->observed);
        node_identity_done(&o->node);
        volume_list_done(&o->volumes);
        *o = (VolumesObservation){};
}

void volumes_input(const VolumesPassConfig *cfg, const VolumesObservation *o, VolumesInput *ret) {
        *ret = (VolumesInput){
                .cluster = cfg->cluster,
                .etcd_clusters = cfg->etcd_clusters,
                .node = &o->node,
                .volumes = o->volumes.items,
                .n_volumes = o->volumes.n,
                .observed = o->observed,
                .manifests = true,
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

/* The etcd manifest on the volume, or NULL when absent. Anything but a regular file there (a symlink, a
 * FIFO) reads as absent: it is never followed or read, and writing it reports why. */
int volume_manifest_read(const char *mount_path, const char *etcd_cluster, char **ret) {
        _cleanup_free_ char *name = volume_etcd_manifest_name(etcd_cluster);
        size_t len;
        *ret = NULL;
        if (!name)
                return -ENOMEM;
        _cleanup_close_ int dfd = volume_manifest_dir_open(mount_path, false);
        if (dfd < 0)
                return dfd == -ENOMEM ? dfd : 0;
        int r = beneath_read_file(dfd, name, 1024 * 1024, ret, &len);
        return r == -ENOMEM ? r : 0;
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
 * root filesystem under the mount point). Whether the text is the one to have is the pass's to say: it
 * renders; this only reads. */
static int observe_manifests(const VolumesPassConfig *cfg, const Volume *v, const char *mount_path,
                             VolumeObserved *obs) {
        VolumeEligibility e = {};
        _cleanup_free_ char *file = NULL, *link = NULL;
        int r;

        r = volume_classify(v, cfg->cluster, NULL, cfg->etcd_clusters, &e);
        if (r < 0 || !e.eligible) {
                volume_eligibility_done(&e);
                return r;
        }
        file = volume_manifest_path(mount_path, e.etcd.cluster);
        link = volume_manifest_link(cfg->manifest_dir, e.etcd.cluster);
        r = file && link ? 0 : -ENOMEM;
        if (r >= 0)
                r = volume_manifest_read(mount_path, e.etcd.cluster, &obs->manifest_text);
        if (r >= 0)
                r = link_points_at(link, file);
        if (r >= 0)
                obs->link_current = r > 0;
        volume_eligibility_done(&e);
        return r == -ENOMEM ? r : 0;
}

static int observe_volume(VolumeProvider *p, const VolumesPassConfig *cfg, const Volume *v,
                          VolumeObserved *obs, char **ret_error) {
        _cleanup_free_ char *dev = NULL, *mount_path = NULL, *err = NULL;
        dev_t devnum = 0, mounted;
        int r;

        r = p->vtable->resolve_device(p->state, v->id, &dev, &devnum, &err);
        /* -ENODEV: a device that cannot be proven the volume's counts as none here; waiting for the device
         * reports it and stops only this volume, not the whole pass */
        if (r < 0 && r != -ENOENT && r != -ENODEV) {
                if (ret_error)
                        free_and_replace(*ret_error, err);
                return r;
        }
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
        if (obs->mount == MOUNT_STATE_OURS)
                return observe_manifests(cfg, v, mount_path, obs);
        return 0;
}

int volumes_observe(VolumeProvider *p, const VolumesPassConfig *cfg, VolumesObservation *ret,
                    char **ret_error) {
        VolumesObservation o = {};
        int r;

        r = p->vtable->node_identity(p->state, &o.node, ret_error);
        if (r >= 0)
                /* every zone: `protokube volumes` explains why another zone's volume is not eligible; the
                 * planner filters by zone */
                r = p->vtable->list_volumes(p->state, cfg->cluster, NULL, &o.volumes, ret_error);
        if (r >= 0) {
                o.observed = new0(VolumeObserved, o.volumes.n);
                if (!o.observed)
                        r = -ENOMEM;
        }
        for (size_t i = 0; r >= 0 && i < o.volumes.n; i++) {
                const Volume *v = &o.volumes.items[i];
                /* a damaged record cannot be resolved to a device: it is listed, not used */
                if (!v->damaged && node_identity_holds(&o.node, &v->attachment))
                        r = observe_volume(p, cfg, v, &o.observed[i], ret_error);
        }
        if (r < 0) {
                volumes_observation_done(&o);
                return r;
        }
        *ret = o;
        return 0;
}

/* Every member the tags name is in the view, held or not: an unheld member's name is published with a
 * placeholder address so it never answers NXDOMAIN (docs/etcd-dns.md). Added unconditionally: the view's
 * cluster_view_sort_unique() drops the ones listed already. */
static int view_add_unheld_members(ClusterView *view, const EtcdTag *t) {
        STRV_FOREACH (m, t->members) {
                int r = cluster_view_add_member(view, t->cluster, *m, NULL);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Where this pass leaves a volume: attached as observed, or as its planned claim or release makes it. */
static const char *holder_after(const VolumesInput *in, const VolumesPlan *plan, size_t i,
                                const VolumeAttachment **ret_ips) {
        const Volume *v = &in->volumes[i];
        for (size_t k = 0; plan && k < plan->n_actions; k++) {
                if (plan->actions[k].volume != i)
                        continue;
                if (plan->actions[k].type == ACTION_CLAIM) {
                        *ret_ips = NULL;
                        return in->node->name;
                }
                if (plan->actions[k].type == ACTION_RELEASE)
                        return NULL;
        }
        *ret_ips = &v->attachment;
        return v->attachment.node;
}

int volumes_view(const VolumesInput *in, const VolumesPlan *plan, ClusterView **ret) {
        _cleanup_(cluster_view_freep) ClusterView *view = new0(ClusterView, 1);
        VolumeEligibility *e = NULL;
        size_t n = in->n_volumes;
        int r = 0;

        if (!view)
                return -ENOMEM;
        e = new0(VolumeEligibility, n);
        if (!e)
                return -ENOMEM;
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = volume_classify(&in->volumes[i], in->cluster, NULL, NULL, &e[i]);
        /* a member has one holder, so its name never resolves to two masters */
        if (r >= 0)
                r = volume_resolve_members(in->volumes, n, in->cluster, NULL, e);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                const VolumeAttachment *a = NULL;
                const char *holder = e[i].eligible ? holder_after(in, plan, i, &a) : NULL;
                if (!holder)
                        continue;
                r = cluster_view_add_member(view, e[i].etcd.cluster, e[i].etcd.member, holder);
                if (r >= 0 && streq(e[i].etcd.cluster, "main"))
                        r = cluster_view_add_master(view, holder,
                                                    a ? a->internal_ips : in->node->internal_ips,
                                                    a ? a->external_ips : in->node->external_ips);
        }
        for (size_t i = 0; r >= 0 && i < n; i++)
                if (e[i].eligible || e[i].held_through)
                        r = view_add_unheld_members(view, &e[i].etcd);
        for (size_t i = 0; i < n; i++)
                volume_eligibility_done(&e[i]);
        free(e);
        if (r < 0)
                return r;
        cluster_view_sort_unique(view);
        *ret = TAKE_PTR(view);
        return 0;
}

int volumes_list(VolumeProvider *p, const char *cluster, VolumeList *ret, char **ret_error) {
        return p->vtable->list_volumes(p->state, cluster, NULL, ret, ret_error);
}

int volumes_list_view(VolumeProvider *p, const char *cluster, ClusterView **ret, char **ret_error) {
        VolumeList l = {};
        int r = volumes_list(p, cluster, &l, ret_error);
        if (r < 0)
                return r;
        VolumesInput in = { .cluster = cluster, .volumes = l.items, .n_volumes = l.n };
        r = volumes_view(&in, NULL, ret);
        volume_list_done(&l);
        return r;
}
