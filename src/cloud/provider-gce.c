/* SPDX-License-Identifier: Apache-2.0 */
/* The `gce` volume provider: persistent disks found by kops' GCE labels (basic/gce-names.h), attached to
 * this instance with attachDisk (a compare-and-set at Compute: a disk attached read-write elsewhere ends the
 * operation in RESOURCE_IN_USE_BY_ANOTHER_RESOURCE), the device name being the disk's name, so its block
 * device is found by identity as /dev/disk/by-id/google-<disk>. */
#include "cloud/provider-gce.h"
#include "cloud/providers.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/errors.h"
#include "basic/gce-names.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "cloud/volume-tags.h"
#include "gce/client.h"
#include "gce/compute.h"
#include "gce/metadata.h"

#define GCE_ATTACH_TIMEOUT (120 * USEC_PER_SEC)
#define GCE_DETACH_TIMEOUT (120 * USEC_PER_SEC)
#define GCE_GIB            (UINT64_C(1) << 30)
#define GCE_SIZE_GB_MAX    (UINT64_C(1) << 20)

typedef struct GceProvider {
        GceClient *client;
        NodeIdentity node;
} GceProvider;

/* One metadata value; *ret NULL (and 0) when the server has none (404: no external address). */
static int metadata_value(GceProvider *p, const char *path, char **ret, char **ret_error) {
        _cleanup_free_ char *v = NULL, *err = NULL;
        GceMetadata *m;
        int r = gce_client_metadata(p->client, &m, &err);
        if (r >= 0)
                r = gce_metadata_get(m, path, &v, &err);
        if (r == -ENOENT) {
                *ret = NULL;
                return 0;
        }
        if (r < 0)
                return error_setf(ret_error, r, "metadata '%s': %s", path, err ?: pk_strerror(r));
        if (isempty(v) || strlen(v) > 255 || strchr(v, ' '))
                return error_setf(ret_error, PK_EMALFORMED, "metadata '%s' is malformed", path);
        *ret = TAKE_PTR(v);
        return 0;
}

/* "projects/123/zones/europe-west1-b" -> "europe-west1-b". */
static int zone_from_metadata(char *value, char **ret) {
        const char *slash = value ? strrchr(value, '/') : NULL;
        const char *z = slash ? slash + 1 : value;
        if (!gce_zone_valid(z))
                return PK_EMALFORMED;
        *ret = strdup(z);
        return *ret ? 0 : -ENOMEM;
}

typedef struct IdentityAsk {
        GceProvider *provider;
        const VolumeProviderConfig *cfg;
} IdentityAsk;

/* A field of the identity not configured, from the metadata server. */
static int identity_ask(void *userdata, IdentityField f, char **ret, char **ret_error) {
        static const char *const paths[_IDENTITY_FIELD_MAX] = {
                [IDENTITY_NAME] = "instance/name",
                [IDENTITY_ZONE] = "instance/zone",
                [IDENTITY_INTERNAL_IP] = "instance/network-interfaces/0/ip",
                [IDENTITY_EXTERNAL_IP] = "instance/network-interfaces/0/access-configs/0/external-ip",
        };
        IdentityAsk *a = userdata;
        _cleanup_free_ char *v = NULL;
        /* The external address is optional: asked for on GCE, not of a machine given its name, zone and
         * address (an operator's, with a key). */
        if (f == IDENTITY_EXTERNAL_IP && a->cfg->node_name && a->cfg->zone && a->cfg->internal_ip) {
                *ret = NULL;
                return 0;
        }
        int r = metadata_value(a->provider, paths[f], f == IDENTITY_ZONE ? &v : ret, ret_error);
        if (r < 0 || f != IDENTITY_ZONE)
                return r;
        if (zone_from_metadata(v, ret) < 0)
                return error_setf(ret_error, PK_EMALFORMED, "metadata 'instance/zone' is '%s', not a zone",
                                  strna(v));
        return 0;
}

static int identity_check(const char *name, const char *zone, char **ret_error) {
        if (!gce_name_valid(name))
                return error_setf(ret_error, -EINVAL, "the node name '%s' is not a GCE instance name",
                                  strna(name));
        if (!gce_zone_valid(zone))
                return error_setf(ret_error, -EINVAL, "the zone '%s' is not a GCE zone", strna(zone));
        return 0;
}

static void gce_close(void *state) {
        GceProvider *p = state;
        if (!p)
                return;
        gce_client_free(p->client);
        node_identity_done(&p->node);
        free(p);
}

static int gce_open(const VolumeProviderConfig *cfg, void **ret_state, char **ret_error) {
        GceProvider *p = new0(GceProvider, 1);
        _cleanup_free_ char *err = NULL;
        const char *project;
        int r;

        if (!p)
                return -ENOMEM;
        r = gce_client_new(&p->client, &err);
        if (r < 0)
                r = error_setf(ret_error, r, "cannot set up the Google Cloud client: %s",
                               err ?: pk_strerror(r));
        if (r >= 0)
                r = node_identity_gather(cfg, identity_ask, identity_check, &(IdentityAsk){ p, cfg },
                                         &p->node, ret_error);
        if (r >= 0)
                r = gce_client_project(p->client, &project, ret_error);
        if (r < 0) {
                gce_close(p);
                return r;
        }
        *ret_state = p;
        return 0;
}

static int gce_node_identity(void *state, NodeIdentity *ret, char **ret_error) {
        GceProvider *p = state;
        return node_identity_copy(&p->node, ret);
}

/* The filter of the cluster's resources: its SafeClusterName in the cluster label. */
static int cluster_filter(const char *cluster, char **ret, char **ret_error) {
        _cleanup_free_ char *safe = NULL;
        int r = gce_safe_cluster_name(cluster, &safe);
        if (r < 0)
                return r;
        if (!gce_label_value_valid(safe))
                return error_setf(
                    ret_error, -EINVAL,
                    "the cluster name '%s' cannot be a GCE label value ('%s': at most 63 of a-z, "
                    "0-9, '-', '_')",
                    cluster, safe);
        *ret = strprintf("labels." GCE_LABEL_CLUSTER " = \"%s\"", safe);
        return *ret ? 0 : -ENOMEM;
}

/* kops' labels as the tags volume-tags.h reads: the cluster's (as cluster, once its safe name matched), the
 * master role, each etcd cluster's member spec decoded. A label that does not decode makes the volume
 * damaged: listed, never used. */
static int labels_to_tags(const GceDisk *d, const char *cluster, Volume *v) {
        int r = 0;
        for (size_t i = 0; r >= 0 && d->labels && d->labels[i] && d->labels[i + 1]; i += 2) {
                const char *k = d->labels[i], *val = d->labels[i + 1], *etcd;
                _cleanup_free_ char *tag = NULL, *decoded = NULL;
                if (streq(k, GCE_LABEL_CLUSTER))
                        r = volume_set_tag(v, VOLUME_TAG_CLUSTER, cluster ?: val);
                else if (streq(k, GCE_LABEL_ROLE_PREFIX "master"))
                        r = volume_set_tag(v, VOLUME_TAG_ROLE_MASTER, "1");
                else if ((etcd = startswith(k, GCE_LABEL_ETCD_PREFIX))) {
                        if (gce_label_decode(val, &decoded) < 0) {
                                v->damaged = strprintf(
                                    "label %s='%s' does not decode (kops' label encoding)", k, val);
                                return v->damaged ? 0 : -ENOMEM;
                        }
                        tag = strjoin(VOLUME_TAG_ETCD_PREFIX, etcd);
                        r = tag ? volume_set_tag(v, tag, decoded) : -ENOMEM;
                } else
                        r = volume_set_tag(v, k, val);
        }
        return r;
}

/* The holders of one listing's disks, each asked once (a master holds two disks or more). */
typedef struct Holders {
        char **users;       /* "ZONE/NAME" */
        GceInstance *insts; /* zeroed: the instance is gone (404) */
        size_t n;
} Holders;

static void holders_done(Holders *h) {
        strv_free(h->users);
        gce_instances_free(h->insts, h->n);
        *h = (Holders){};
}

/* The instance behind user ("ZONE/NAME"); its record zeroed when it no longer exists. Any other error is the
 * listing's: a holder's addresses must not go missing from the records because a call failed. */
static int holder_get(GceProvider *p, Holders *h, const char *user, const GceInstance **ret,
                      char **ret_error) {
        for (size_t i = 0; i < h->n; i++)
                if (streq(h->users[i], user)) {
                        *ret = &h->insts[i];
                        return 0;
                }
        const char *slash = strchr(user, '/');
        _cleanup_free_ char *zone = slash ? strndup(user, (size_t)(slash - user)) : NULL;
        GceInstance inst = {};
        if (!slash)
                return PK_EMALFORMED;
        if (!zone)
                return -ENOMEM;
        int r = gce_compute_get_instance(p->client, zone, slash + 1, &inst, ret_error);
        if (r < 0 && r != -ENOENT)
                return r;
        GceInstance *m = reallocarray(h->insts, h->n + 1, sizeof(GceInstance));
        if (!m || strv_extend(&h->users, user) < 0) {
                if (m)
                        h->insts = m;
                gce_instance_done(&inst);
                return -ENOMEM;
        }
        h->insts = m;
        h->insts[h->n] = inst;
        *ret = &h->insts[h->n++];
        return 0;
}

/* The holder (users[0]) with its addresses. */
static int attachment_fill(GceProvider *p, Holders *h, const char *user, usec_t since, VolumeAttachment *ret,
                           char **ret_error) {
        const char *slash = strchr(user, '/');
        const GceInstance *inst;
        VolumeAttachment t = { .since = since };
        int r = slash ? holder_get(p, h, user, &inst, ret_error) : PK_EMALFORMED;
        if (r < 0)
                return r;
        t.node = strdup(slash + 1);
        r = t.node ? strv_new_or_enomem(inst->internal_ip, &t.internal_ips) : -ENOMEM;
        if (r >= 0)
                r = strv_new_or_enomem(inst->external_ip, &t.external_ips);
        if (r < 0) {
                free(t.node);
                strv_free(t.internal_ips);
                strv_free(t.external_ips);
                return r;
        }
        *ret = t;
        return 0;
}

static int volume_from_gce(GceProvider *p, Holders *h, const GceDisk *d, const char *cluster, Volume *ret,
                           char **ret_error) {
        Volume v = { .content = d->source_snapshot ? VOLUME_CONTENT_DATA : VOLUME_CONTENT_UNKNOWN };
        int r = 0;

        if (!(v.id = strdup(d->name)) || !(v.zone = strdup(d->zone)) ||
            !(v.tags = calloc(1, sizeof(char *))))
                r = -ENOMEM;
        v.size = MIN(d->size_gb, GCE_SIZE_GB_MAX) * GCE_GIB;
        if (r >= 0)
                r = labels_to_tags(d, cluster, &v);
        if (r >= 0 && strv_length(d->users) > 1 && !v.damaged)
                v.damaged = strprintf("attached to %zu instances at once (read-only?): not an etcd volume",
                                      strv_length(d->users));
        if (r >= 0 && d->users && d->users[0])
                r = attachment_fill(p, h, d->users[0], d->last_attach, &v.attachment, ret_error);
        if (r < 0) {
                volume_done(&v);
                return r;
        }
        *ret = v;
        return 0;
}

static int gce_list_volumes(void *state, const char *cluster, const char *zone, VolumeList *ret,
                            char **ret_error) {
        GceProvider *p = state;
        _cleanup_free_ char *filter = NULL;
        GceDisk *disks = NULL;
        Holders h = {};
        size_t n = 0;
        VolumeList l = {};
        int r = cluster ? cluster_filter(cluster, &filter, ret_error) : 0;

        if (r >= 0)
                r = gce_compute_list_disks(p->client, zone, filter, &disks, &n, ret_error);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                Volume v = {};
                r = volume_from_gce(p, &h, &disks[i], cluster, &v, ret_error);
                if (r >= 0)
                        r = volume_list_append(&l, &v);
                volume_done(&v);
        }
        gce_disks_free(disks, n);
        holders_done(&h);
        if (r < 0) {
                volume_list_done(&l);
                return r;
        }
        volume_list_sort(&l);
        *ret = l;
        return 0;
}

static bool held_by(const GceDisk *d, const GceProvider *p) {
        for (size_t i = 0; d->users && d->users[i]; i++) {
                const char *slash = strchr(d->users[i], '/');
                if (slash && streq(slash + 1, p->node.name) &&
                    strncmp(d->users[i], p->node.zone, (size_t)(slash - d->users[i])) == 0 &&
                    strlen(p->node.zone) == (size_t)(slash - d->users[i]))
                        return true;
        }
        return false;
}

static int get_disk(GceProvider *p, const char *id, GceDisk *ret, char **ret_error) {
        if (!gce_name_valid(id))
                return error_setf(ret_error, -EINVAL, "'%s' is not a GCE disk name", id);
        int r = gce_compute_get_disk(p->client, p->node.zone, id, ret, ret_error);
        if (r == -ENOENT)
                return error_setf(ret_error, -ENOENT, "no disk '%s' in zone '%s'", id, p->node.zone);
        return r;
}

static int gce_attach(void *state, const char *id, const NodeIdentity *node, char **ret_error) {
        GceProvider *p = state;
        GceDisk d = {};
        int r;

        if (!node || !streq_ptr(node->name, p->node.name))
                return error_setf(ret_error, -EINVAL,
                                  "the gce provider attaches disks only to this instance ('%s')",
                                  p->node.name);
        r = get_disk(p, id, &d, ret_error);
        if (r < 0)
                return r;
        if (held_by(&d, p))
                r = 0; /* attached here already: the device appears by its link */
        else if (d.users && d.users[0])
                r = error_setf(ret_error, PK_ECONFLICT, "disk '%s' is attached to '%s'", id, d.users[0]);
        else if (!streq(d.status, "READY"))
                r = error_setf(ret_error, PK_EWAITING, "disk '%s' is '%s', not READY", id, d.status);
        else
                r = gce_compute_attach_disk(p->client, p->node.zone, p->node.name, id, id,
                                            GCE_ATTACH_TIMEOUT, ret_error);
        gce_disk_done(&d);
        return r;
}

static const char *byid_dir(void) {
        const char *dir = getenv(GCE_BYID_DIR_ENV);
        return isempty(dir) ? GCE_BYID_DIR_DEFAULT : dir;
}

/* Another disk's google-* link (not a partition's) naming devnum: its name, or NULL. */
static int byid_other_disk(const char *dir, const char *own, dev_t devnum, char **ret) {
        _cleanup_(closedirp) DIR *d = opendir(dir);
        struct dirent *de;
        *ret = NULL;
        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                struct stat st;
                if (!startswith(de->d_name, GCE_BYID_PREFIX) || streq(de->d_name, own) ||
                    strstr(de->d_name, "-part"))
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, 0) < 0 || !S_ISBLK(st.st_mode) ||
                    st.st_rdev != devnum)
                        continue;
                *ret = strdup(de->d_name);
                return *ret ? 1 : -ENOMEM;
        }
        return 0;
}

static int gce_resolve_device(void *state, const char *id, char **ret_path, dev_t *ret_devnum,
                              char **ret_error) {
        _cleanup_free_ char *name = strjoin(GCE_BYID_PREFIX, id), *link = NULL, *other = NULL, *path = NULL;
        const char *dir = byid_dir();
        struct stat st;
        int r;

        if (!gce_name_valid(id))
                return error_setf(ret_error, -EINVAL, "'%s' is not a GCE disk name", id);
        if (!name || !(link = strjoin(dir, "/", name)))
                return -ENOMEM;
        if (stat(link, &st) < 0)
                return errno == ENOENT ? 0 : -errno; /* not there yet: the caller waits, bounded */
        if (!S_ISBLK(st.st_mode))
                return error_setf(ret_error, -ENODEV,
                                  "cannot identify disk %s's device: %s is not a block device", id, link);
        r = byid_other_disk(dir, name, st.st_rdev, &other);
        if (r < 0)
                return error_setf(ret_error, r, "cannot read %s: %s", dir, pk_strerror(r));
        if (r > 0)
                return error_setf(ret_error, -ENODEV,
                                  "cannot identify disk %s's device: %s/%s names the same device as %s", id,
                                  dir, other, link);
        path = realpath(link, NULL);
        if (!path)
                return -errno;
        *ret_path = TAKE_PTR(path);
        *ret_devnum = st.st_rdev;
        return 1;
}

/* The device name the holder ("ZONE/NAME") has for disk id. */
static int holder_device(GceProvider *p, const char *zone, const char *instance, const char *id, char **ret,
                         char **ret_error) {
        GceInstance inst = {};
        int r = gce_compute_get_instance(p->client, zone, instance, &inst, ret_error);
        if (r < 0)
                return r;
        *ret = NULL;
        for (size_t i = 0; i < inst.n_disks && !*ret; i++)
                if (streq(inst.disks[i].disk, id) && !(*ret = strdup(inst.disks[i].device_name)))
                        r = -ENOMEM;
        gce_instance_done(&inst);
        return r;
}

static int gce_detach(void *state, const char *id, const char *node, char **ret_error) {
        GceProvider *p = state;
        _cleanup_free_ char *zone = NULL, *instance = NULL, *device = NULL;
        GceDisk d = {};
        int r = get_disk(p, id, &d, ret_error);
        if (r < 0)
                return r;
        const char *holder = d.users ? d.users[0] : NULL, *slash = holder ? strchr(holder, '/') : NULL;
        if (slash &&
            (!(zone = strndup(holder, (size_t)(slash - holder))) || !(instance = strdup(slash + 1))))
                r = -ENOMEM;
        gce_disk_done(&d);
        if (r < 0 || !instance)
                return r;
        if (node && !streq(node, instance))
                return error_setf(ret_error, PK_ECONFLICT, "disk '%s' is attached to '%s', not '%s'", id,
                                  instance, node);
        r = holder_device(p, zone, instance, id, &device, ret_error);
        if (r == -ENOENT || (r >= 0 && !device))
                return 0; /* the holder is gone, or let go of it meanwhile */
        if (r < 0)
                return r;
        r = gce_compute_detach_disk(p->client, zone, instance, device, GCE_DETACH_TIMEOUT, ret_error);
        return r == -ENOENT ? 0 : r;
}

/* An attached disk's device appears as its google-<name> link. */
static int gce_watch_paths(void *state, char ***ret) {
        _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
        if (!l || strv_extend(&l, byid_dir()) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(l);
        return 0;
}

/* The instances of the cluster in every zone (kops labels them with the cluster's safe name), each named
 * as its node registers: the instance name. */
static int gce_list_machines(void *state, const char *cluster, CloudMachine **ret, size_t *ret_n,
                             char **ret_error) {
        GceProvider *p = state;
        _cleanup_free_ char *filter = NULL;
        GceInstance *insts = NULL;
        size_t n = 0, k = 0;
        int r = cluster_filter(cluster, &filter, ret_error);
        if (r >= 0)
                r = gce_compute_list_instances(p->client, NULL, filter, &insts, &n, ret_error);
        if (r < 0)
                return r;
        CloudMachine *l = new0(CloudMachine, n + 1);
        for (size_t i = 0; l && i < n; i++) {
                l[k].node_name = strdup(insts[i].name);
                l[k].id = TAKE_PTR(insts[i].name);
                if (!l[k++].node_name) {
                        cloud_machines_free(l, k);
                        l = NULL;
                }
        }
        gce_instances_free(insts, n);
        if (!l)
                return -ENOMEM;
        *ret = l;
        *ret_n = k;
        return 0;
}

const VolumeProviderVTable volume_provider_gce = {
        .name = "gce",
        .open = gce_open,
        .close = gce_close,
        .node_identity = gce_node_identity,
        .list_volumes = gce_list_volumes,
        .attach = gce_attach,
        .resolve_device = gce_resolve_device,
        .detach = gce_detach,
        .watch_paths = gce_watch_paths,
        .list_machines = gce_list_machines,
};
