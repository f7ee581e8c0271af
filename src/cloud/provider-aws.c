/* SPDX-License-Identifier: Apache-2.0 */
/* The `aws` volume provider: EBS volumes found by their kops tags, attached to this instance with
 * AttachVolume (a compare-and-set at EC2: a volume in use answers VolumeInUse), their block devices found by
 * identity (the NVMe serial's by-id link on Nitro; on Xen the xvd name EC2 recorded, only when size and the
 * instance's other devices confirm it). */
#include "cloud/provider-aws.h"
#include "cloud/providers.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "aws/client.h"
#include "aws/ec2.h"
#include "aws/imds.h"
#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/parse-util.h"
#include "basic/stop.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "cloud/volume-tags.h"
#include "shared/blockdev.h"

#define AWS_ATTACH_TIMEOUT      (120 * USEC_PER_SEC)
#define AWS_ATTACH_POLL         (300 * USEC_PER_MSEC)
#define AWS_DETACH_TIMEOUT      (120 * USEC_PER_SEC)
#define AWS_DETACH_POLL         (500 * USEC_PER_MSEC)
#define AWS_DEVICE_TRIES        3   /* another attach may take the device name we picked */
#define AWS_INSTANCE_BATCH      100 /* instance-id filter values per DescribeInstances */
#define AWS_IDENTITY_VALUE_MAX  256
#define AWS_GIB                 (UINT64_C(1) << 30)
#define AWS_VOLUME_SIZE_GIB_MAX (UINT64_C(1) << 20)

typedef struct AwsProvider {
        AwsClient *client;
        NodeIdentity node;
        char **devices; /* alternating volume id, device EC2 recorded for it here */
} AwsProvider;

static bool instance_id_valid(const char *s) {
        const char *h = startswith(s, "i-");
        return h && !isempty(h) && strlen(h) <= 32 &&
               strspn(h, "0123456789abcdefghijklmnopqrstuvwxyz") == strlen(h);
}

static bool value_ok(const char *s) {
        return !isempty(s) && strlen(s) < AWS_IDENTITY_VALUE_MAX && !string_has_cc(s) && !strchr(s, ' ');
}

/* One IMDS value; *ret NULL (and 0) when IMDS has none (404: no public address). */
static int imds_value(AwsProvider *p, const char *path, char **ret, char **ret_error) {
        _cleanup_free_ char *v = NULL, *err = NULL;
        AwsImds *m;
        int r = aws_client_imds(p->client, &m);
        if (r < 0)
                return error_setf(ret_error, r,
                                  "instance metadata is disabled (AWS_EC2_METADATA_DISABLED) and '%s' was "
                                  "not configured",
                                  path);
        r = aws_imds_get(m, path, &v, &err);
        if (r == -ENOENT) {
                *ret = NULL;
                return 0;
        }
        if (r < 0)
                return error_setf(ret_error, r, "instance metadata '%s': %s", path, err ?: pk_strerror(r));
        if (!value_ok(v))
                return error_setf(ret_error, PK_EMALFORMED, "instance metadata '%s' is malformed", path);
        *ret = TAKE_PTR(v);
        return 0;
}

/* A field of the identity not configured, from IMDS. */
static int identity_ask(void *userdata, IdentityField f, char **ret, char **ret_error) {
        static const char *const paths[_IDENTITY_FIELD_MAX] = {
                [IDENTITY_NAME] = "meta-data/instance-id",
                [IDENTITY_ZONE] = "meta-data/placement/availability-zone",
                [IDENTITY_INTERNAL_IP] = "meta-data/local-ipv4",
                [IDENTITY_EXTERNAL_IP] = "meta-data/public-ipv4",
        };
        return imds_value(userdata, paths[f], ret, ret_error);
}

static int identity_check(const char *name, const char *zone, char **ret_error) {
        if (!name || !instance_id_valid(name))
                return error_setf(ret_error, -EINVAL, "the node name '%s' is not an EC2 instance id (i-...)",
                                  strna(name));
        if (!zone)
                return error_setf(ret_error, PK_EMALFORMED, "instance metadata has no availability zone");
        return 0;
}

static void aws_close(void *state) {
        AwsProvider *p = state;
        if (!p)
                return;
        aws_client_free(p->client);
        node_identity_done(&p->node);
        strv_free(p->devices);
        free(p);
}

static int aws_open(const VolumeProviderConfig *cfg, void **ret_state, char **ret_error) {
        AwsProvider *p = new0(AwsProvider, 1);
        _cleanup_free_ char *err = NULL;
        int r;

        if (!p)
                return -ENOMEM;
        r = aws_client_new(&p->client, &err);
        if (r < 0)
                r = error_setf(ret_error, r, "cannot set up the AWS client: %s",
                               err ?: "check AWS_ENDPOINT_URL* and the region");
        if (r >= 0)
                r = node_identity_gather(cfg, identity_ask, identity_check, p, &p->node, ret_error);
        if (r < 0) {
                aws_close(p);
                return r;
        }
        *ret_state = p;
        return 0;
}

static int aws_node_identity(void *state, NodeIdentity *ret, char **ret_error) {
        AwsProvider *p = state;
        return node_identity_copy(&p->node, ret);
}

/* Remembers the device EC2 recorded for a volume attached here (for resolve_device's xvd fallback). */
static int remember_device(AwsProvider *p, const char *id, const char *device) {
        size_t n = strv_length(p->devices);
        for (size_t i = 0; i + 1 < n; i += 2) {
                if (!streq(p->devices[i], id))
                        continue;
                if (device)
                        return free_and_strdup(&p->devices[i + 1], device);
                /* forget it: move the last pair here */
                free(p->devices[i]);
                free(p->devices[i + 1]);
                p->devices[i] = p->devices[n - 2];
                p->devices[i + 1] = p->devices[n - 1];
                p->devices[n - 2] = p->devices[n - 1] = NULL;
                return 0;
        }
        if (!device)
                return 0;
        int r = strv_extend(&p->devices, id);
        if (r >= 0)
                r = strv_extend(&p->devices, device);
        return r;
}

static const char *device_remembered(const AwsProvider *p, const char *id) {
        for (size_t i = 0; p->devices && p->devices[i]; i += 2)
                if (streq(p->devices[i], id))
                        return p->devices[i + 1];
        return NULL;
}

/* The attachment that holds the volume: anything but "detached" (a volume still "detaching" cannot be
 * attached elsewhere yet, so its holder still holds it). */
static const AwsVolumeAttachment *active_attachment(const AwsVolume *v) {
        for (size_t i = 0; i < v->n_attachments; i++)
                if (v->attachments[i].instance_id && !streq_ptr(v->attachments[i].state, "detached"))
                        return &v->attachments[i];
        return NULL;
}

/* DescribeInstances for the holders, in batches, by filter: an id that no longer exists is simply absent
 * (with InstanceId.N, one terminated instance would fail the whole call). */
static int describe_holders(AwsProvider *p, char **ids, AwsInstance **ret, size_t *ret_n, char **ret_error) {
        AwsInstance *all = NULL;
        size_t n_all = 0, n_ids = strv_length(ids);
        int r = 0;

        for (size_t off = 0; off < n_ids && r >= 0; off += AWS_INSTANCE_BATCH) {
                const char *batch[AWS_INSTANCE_BATCH + 1] = {};
                for (size_t i = 0; i < AWS_INSTANCE_BATCH && off + i < n_ids; i++)
                        batch[i] = ids[off + i];
                AwsFilter f = { "instance-id", batch };
                AwsInstance *got = NULL;
                size_t n_got = 0;
                r = aws_ec2_describe_instances(p->client, &f, 1, NULL, &got, &n_got, ret_error);
                if (r < 0)
                        break;
                AwsInstance *m = reallocarray(all, n_all + n_got ?: 1, sizeof(AwsInstance));
                if (!m) {
                        aws_instances_free(got, n_got);
                        r = -ENOMEM;
                        break;
                }
                all = m;
                memcpy(all + n_all, got, n_got * sizeof(AwsInstance));
                n_all += n_got;
                free(got);
        }
        if (r < 0) {
                aws_instances_free(all, n_all);
                return r;
        }
        *ret = all;
        *ret_n = n_all;
        return 0;
}

static const AwsInstance *instance_find(const AwsInstance *l, size_t n, const char *id) {
        for (size_t i = 0; i < n; i++)
                if (streq_ptr(l[i].instance_id, id))
                        return &l[i];
        return NULL;
}

/* "/dev/sda1", "sda1", "/dev/xvda" -> "a" (+ partition digits): EC2 treats sdX and xvdX as one name. */
static const char *device_key(const char *name) {
        const char *n = startswith(name, "/dev/") ?: name, *s;
        if ((s = startswith(n, "xvd")) || (s = startswith(n, "sd")))
                return s;
        return n;
}

static bool is_root_device(const AwsInstance *inst, const char *device) {
        if (!inst || !inst->root_device_name || !device)
                return false;
        const char *a = device_key(inst->root_device_name), *b = device_key(device);
        /* the root device may be named by its partition ("/dev/sda1") */
        return a[0] == b[0] && (a[1] == 0 || (a[1] >= '0' && a[1] <= '9')) &&
               (b[1] == 0 || (b[1] >= '0' && b[1] <= '9'));
}

static int attachment_fill(const AwsVolumeAttachment *a, const AwsInstance *inst, VolumeAttachment *ret) {
        VolumeAttachment t = {};
        int r = 0;
        if (!(t.node = strdup(a->instance_id)) || (a->device && !(t.device = strdup(a->device))))
                r = -ENOMEM;
        if (r >= 0)
                r = strv_new_or_enomem(inst ? inst->private_ip : NULL, &t.internal_ips);
        if (r >= 0)
                r = strv_new_or_enomem(inst ? inst->public_ip : NULL, &t.external_ips);
        if (r < 0) {
                free(t.node);
                free(t.device);
                strv_free(t.internal_ips);
                strv_free(t.external_ips);
                return r;
        }
        *ret = t;
        return 0;
}

static int volume_from_aws(const AwsVolume *av, const AwsInstance *insts, size_t n_insts, Volume *ret) {
        Volume v = {};
        int r = 0;

        if (!av->volume_id || !av->availability_zone)
                return PK_EMALFORMED;
        if (!(v.id = strdup(av->volume_id)) || !(v.zone = strdup(av->availability_zone)) ||
            !(v.tags = calloc(1, sizeof(char *))))
                r = -ENOMEM;
        v.size = MIN(av->size_gib, AWS_VOLUME_SIZE_GIB_MAX) * AWS_GIB;
        for (size_t i = 0; r >= 0 && i < av->n_tags; i++)
                if (av->tags[i].key)
                        r = volume_set_tag(&v, av->tags[i].key, strempty(av->tags[i].value));
        const AwsVolumeAttachment *a = active_attachment(av);
        if (r >= 0 && a)
                r = attachment_fill(a, instance_find(insts, n_insts, a->instance_id), &v.attachment);
        if (r >= 0 && a)
                v.attachment.since = a->attach_time;
        /* made from a snapshot: it holds that snapshot's data; otherwise EC2 cannot tell */
        v.content = !isempty(av->snapshot_id) ? VOLUME_CONTENT_DATA : VOLUME_CONTENT_UNKNOWN;
        if (r < 0) {
                volume_done(&v);
                return r;
        }
        *ret = v;
        return 0;
}

static int holders_of(const AwsVolume *vols, size_t n, char ***ret) {
        _cleanup_strv_free_ char **ids = calloc(1, sizeof(char *));
        if (!ids)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const AwsVolumeAttachment *a = active_attachment(&vols[i]);
                if (a && !strv_contains(ids, a->instance_id) && strv_extend(&ids, a->instance_id) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(ids);
        return 0;
}

static int aws_list_volumes(void *state, const char *cluster, const char *zone, VolumeList *ret,
                            char **ret_error) {
        AwsProvider *p = state;
        const char *cv[] = { cluster, NULL }, *zv[] = { zone, NULL };
        AwsFilter filters[2];
        size_t nf = 0, n = 0, n_insts = 0;
        AwsVolume *vols = NULL;
        AwsInstance *insts = NULL;
        _cleanup_strv_free_ char **holders = NULL;
        VolumeList l = {};
        int r;

        /* Server-side filters: the cluster's tag, the zone (EC2 API Reference, DescribeVolumes). */
        if (cluster)
                filters[nf++] = (AwsFilter){ "tag:" VOLUME_TAG_CLUSTER, cv };
        if (zone)
                filters[nf++] = (AwsFilter){ "availability-zone", zv };
        r = aws_ec2_describe_volumes(p->client, filters, nf, NULL, &vols, &n, ret_error);
        if (r < 0)
                return r;
        r = holders_of(vols, n, &holders);
        if (r >= 0 && holders[0])
                r = describe_holders(p, holders, &insts, &n_insts, ret_error);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                const AwsVolumeAttachment *a = active_attachment(&vols[i]);
                const AwsInstance *inst = a ? instance_find(insts, n_insts, a->instance_id) : NULL;
                Volume v = {};
                /* an instance's root volume is never an etcd volume, whatever its tags say */
                if (a && is_root_device(inst, a->device))
                        continue;
                if (a && streq(a->instance_id, p->node.name) &&
                    remember_device(p, vols[i].volume_id, a->device) < 0) {
                        r = -ENOMEM;
                        break;
                }
                r = volume_from_aws(&vols[i], insts, n_insts, &v);
                if (r == PK_EMALFORMED) {
                        _cleanup_free_ char *w =
                            strprintf("%s: incomplete DescribeVolumes entry", strna(vols[i].volume_id));
                        r = w ? strv_extend(&l.warnings, w) : -ENOMEM;
                        continue;
                }
                if (r >= 0)
                        r = volume_list_append(&l, &v);
                volume_done(&v);
        }
        aws_volumes_free(vols, n);
        aws_instances_free(insts, n_insts);
        if (r < 0) {
                volume_list_done(&l);
                return r;
        }
        volume_list_sort(&l);
        *ret = l;
        return 0;
}

/* DescribeVolumes of one volume. */
static int describe_one(AwsProvider *p, const char *id, AwsVolume *ret, char **ret_error) {
        const char *ids[] = { id, NULL };
        AwsVolume *v = NULL;
        size_t n = 0;
        int r = aws_ec2_describe_volumes(p->client, NULL, 0, ids, &v, &n, ret_error);
        if (r < 0)
                return r;
        if (n != 1) {
                aws_volumes_free(v, n);
                return error_setf(ret_error, PK_ECLOUD,
                                  "ec2 DescribeVolumes: %zu volumes for '%s', expected 1", n, id);
        }
        *ret = v[0];
        free(v);
        return 0;
}

/* AttachVolume to this instance at a free /dev/xvd[f-z] name; another name when EC2 says ours is taken
 * (-EADDRINUSE). A lost compare-and-set (VolumeInUse, IncorrectState) is PK_ECONFLICT (aws/ec2.h). */
static int attach_call(AwsProvider *p, const char *id, char **ret_device, char **ret_error) {
        _cleanup_strv_free_ char **tried = calloc(1, sizeof(char *));
        AwsInstance self = {};
        const char *ids[] = { p->node.name, NULL };
        AwsInstance *l = NULL;
        size_t n = 0;
        int r;

        if (!tried)
                return -ENOMEM;
        r = aws_ec2_describe_instances(p->client, NULL, 0, ids, &l, &n, ret_error);
        if (r < 0)
                return r;
        if (n != 1) {
                aws_instances_free(l, n);
                return error_setf(ret_error, PK_ECLOUD,
                                  "ec2 DescribeInstances: %zu instances for '%s', expected 1", n,
                                  p->node.name);
        }
        self = l[0];
        free(l);
        for (unsigned t = 0; t < AWS_DEVICE_TRIES; t++) {
                _cleanup_free_ char *dev = NULL;
                r = aws_ec2_pick_device(&self, (const char *const *)tried, &dev);
                if (r == -ENOSPC) {
                        r = error_setf(ret_error, r, "no free device name in /dev/xvd[f-z] on '%s'",
                                       p->node.name);
                        break;
                }
                if (r < 0)
                        break;
                r = aws_ec2_attach_volume(p->client, id, p->node.name, dev, ret_error);
                if (r >= 0) {
                        *ret_device = TAKE_PTR(dev);
                        break;
                }
                if (r != -EADDRINUSE)
                        break;
                if (strv_extend(&tried, dev) < 0) {
                        r = -ENOMEM;
                        break;
                }
        }
        aws_instance_done(&self);
        /* every name we tried was taken: EC2's last answer says which */
        return r == -EADDRINUSE ? PK_ECLOUD : r;
}

static int wait_attached(AwsProvider *p, const char *id, char **ret_error) {
        _cleanup_free_ char *dev = NULL;
        int r = aws_ec2_wait_attached(p->client, id, p->node.name, AWS_ATTACH_TIMEOUT, AWS_ATTACH_POLL, &dev,
                                      ret_error);
        if (r < 0)
                return r;
        return remember_device(p, id, dev);
}

static int aws_attach(void *state, const char *id, const NodeIdentity *node, char **ret_error) {
        AwsProvider *p = state;
        _cleanup_free_ char *dev = NULL;
        AwsVolume v = {};
        int r;

        if (!node || !streq_ptr(node->name, p->node.name))
                return error_setf(ret_error, -EINVAL,
                                  "the aws provider attaches volumes only to this instance ('%s')",
                                  p->node.name);
        r = describe_one(p, id, &v, ret_error);
        if (r < 0)
                return r;
        const AwsVolumeAttachment *a = active_attachment(&v);
        if (a && !streq(a->instance_id, p->node.name))
                r = error_setf(ret_error, PK_ECONFLICT, "volume '%s' is attached to '%s'", id,
                               a->instance_id);
        else if (a && streq_ptr(a->state, "detaching"))
                r = error_setf(ret_error, PK_EWAITING, "volume '%s' is being detached from this instance",
                               id);
        else if (!a && !streq_ptr(v.state, "available"))
                r = error_setf(ret_error, PK_EWAITING, "volume '%s' is '%s', not available", id,
                               strna(v.state));
        else if (!a && !streq_ptr(v.availability_zone, p->node.zone))
                r = error_setf(ret_error, -EINVAL, "volume '%s' is in zone '%s', this instance in '%s'", id,
                               strna(v.availability_zone), p->node.zone);
        else if (!a)
                r = attach_call(p, id, &dev, ret_error);
        aws_volume_done(&v);
        if (r < 0)
                return r;
        return wait_attached(p, id, ret_error);
}

static int stat_block(const char *path, char **ret_path, dev_t *ret_devnum) {
        struct stat st;
        if (stat(path, &st) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISBLK(st.st_mode))
                return 0;
        char *real = realpath(path, NULL);
        if (!real)
                return -errno;
        *ret_path = real;
        *ret_devnum = st.st_rdev;
        return 1;
}

/* Another volume's NVMe identity (a by-id link other than id's own) naming devnum: its name, or NULL. */
static int byid_other_volume(const char *dir, const char *own, dev_t devnum, char **ret) {
        _cleanup_(closedirp) DIR *d = opendir(dir);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        for (struct dirent *de; (de = readdir(d));) {
                struct stat st;
                if (!startswith(de->d_name, "nvme-Amazon_Elastic_Block_Store_vol") ||
                    streq(de->d_name, own) || fstatat(dirfd(d), de->d_name, &st, 0) < 0 ||
                    !S_ISBLK(st.st_mode) || st.st_rdev != devnum)
                        continue;
                char *n = strdup(de->d_name);
                if (!n)
                        return -ENOMEM;
                *ret = n;
                return 1;
        }
        return 0;
}

/* A /dev/xvd* disk that no attachment of this instance explains (root included): the kernel's names are
 * not EC2's here (old kernels showed sdf as xvdj), so no name can be trusted. Returns its name or NULL. */
static int xvd_unexplained(const char *dev_dir, char **mapping, char **ret) {
        _cleanup_(closedirp) DIR *d = opendir(dev_dir);
        if (!d)
                return -errno;
        for (struct dirent *de; (de = readdir(d));) {
                const char *key = startswith(de->d_name, "xvd");
                bool known = false;
                if (!key || isempty(key) || strspn(key, "abcdefghijklmnopqrstuvwxyz") != strlen(key))
                        continue; /* partitions (xvda1) belong to their disk */
                STRV_FOREACH (m, mapping)
                        known = known || streq(device_key(*m), key) ||
                                (startswith(device_key(*m), key) &&
                                 strspn(device_key(*m) + strlen(key), "0123456789") ==
                                     strlen(device_key(*m) + strlen(key)));
                if (known)
                        continue;
                char *n = strdup(de->d_name);
                if (!n)
                        return -ENOMEM;
                *ret = n;
                return 1;
        }
        return 0;
}

/* What the disk itself can prove: a whole disk, exactly want bytes, not the root filesystem's. */
static int xen_check_disk(const char *id, const char *path, dev_t devnum, uint64_t want, char **ret_error) {
        uint64_t size = 0;
        dev_t disk;
        int r;

        r = blockdev_whole_disk(devnum, &disk);
        if (r > 0 && disk != devnum)
                return error_setf(ret_error, -ENODEV,
                                  "cannot identify volume %s's device: %s is a partition", id, path);
        r = blockdev_sysfs_size(devnum, &size);
        if (r < 0)
                return error_setf(ret_error, -ENODEV,
                                  "cannot identify volume %s's device: no size for %s in sysfs: %s", id,
                                  path, pk_strerror(r));
        if (size != want)
                return error_setf(ret_error, -ENODEV,
                                  "cannot identify volume %s's device: %s is %" PRIu64
                                  " bytes, the volume %" PRIu64 " bytes",
                                  id, path, size, want);
        if (blockdev_holds_root(devnum) > 0)
                return error_setf(ret_error, -ENODEV,
                                  "cannot identify volume %s's device: %s holds the root filesystem", id,
                                  path);
        return 0;
}

/* Xen: the device keeps the name EC2 attached it under ("sdf" shows as "xvdf"), but a name is no identity.
 * Accepted only when what can be checked agrees: EC2 says the volume is attached here under that name; the
 * device is a whole disk of exactly the volume's size; it is not the disk of the root filesystem; no other
 * volume's NVMe by-id link names it; and every xvd disk here is explained by an attachment of this instance
 * (so names map one to one). Anything else: -ENODEV, "cannot identify volume vol-x's device: ...". */
static int xen_verify(AwsProvider *p, const char *id, const char *path, dev_t devnum, const char *byid_dir,
                      const char *own_link, const char *dev_dir, char **ret_error) {
        _cleanup_free_ char *other = NULL;
        AwsVolume v = {};
        AwsInstance *self = NULL;
        const char *ids[] = { p->node.name, NULL };
        size_t n = 0;

        int r = describe_one(p, id, &v, ret_error);
        if (r < 0)
                return r;
        const AwsVolumeAttachment *a = active_attachment(&v);
        bool here = a && streq_ptr(a->instance_id, p->node.name) && a->device &&
                    streq(device_key(a->device), device_key(path + strlen(dev_dir) + 1));
        uint64_t want = MIN(v.size_gib, AWS_VOLUME_SIZE_GIB_MAX) * AWS_GIB;
        aws_volume_done(&v);
        if (!here)
                return error_setf(
                    ret_error, -ENODEV,
                    "cannot identify volume %s's device: EC2 no longer has it attached here as %s", id,
                    path);
        r = xen_check_disk(id, path, devnum, want, ret_error);
        if (r < 0)
                return r;
        r = byid_other_volume(byid_dir, own_link, devnum, &other);
        if (r < 0)
                return error_setf(ret_error, r, "cannot identify volume %s's device: reading '%s': %s", id,
                                  byid_dir, pk_strerror(r));
        if (r > 0)
                return error_setf(ret_error, -ENODEV,
                                  "cannot identify volume %s's device: %s is another volume's (%s/%s)", id,
                                  path, byid_dir, other);
        r = aws_ec2_describe_instances(p->client, NULL, 0, ids, &self, &n, ret_error);
        if (r < 0)
                return r;
        r = n == 1
                ? xvd_unexplained(dev_dir, self[0].block_devices, &other)
                : error_setf(ret_error, PK_ECLOUD,
                             "ec2 DescribeInstances: %zu instances for '%s', expected 1", n, p->node.name);
        aws_instances_free(self, n);
        if (r < 0)
                return r == PK_ECLOUD
                           ? r
                           : error_setf(ret_error, r, "cannot identify volume %s's device: reading '%s': %s",
                                        id, dev_dir, pk_strerror(r));
        if (r > 0)
                return error_setf(
                    ret_error, -ENODEV,
                    "cannot identify volume %s's device: %s/%s is attached under no name EC2 knows for "
                    "this instance, so device names do not map one to one here",
                    id, dev_dir, other);
        return 0;
}

static int aws_resolve_device(void *state, const char *id, char **ret_path, dev_t *ret_devnum,
                              char **ret_error) {
        AwsProvider *p = state;
        _cleanup_free_ char *name = NULL, *link = NULL, *xvd = NULL, *path = NULL;
        const char *dir = getenv(AWS_BYID_DIR_ENV), *dev_dir = getenv(AWS_DEV_DIR_ENV);
        dev_t devnum;
        int r = aws_ebs_by_id_name(id, &name);
        if (r < 0)
                return r;
        dir = isempty(dir) ? AWS_BYID_DIR_DEFAULT : dir;
        dev_dir = isempty(dev_dir) ? AWS_DEV_DIR_DEFAULT : dev_dir;
        link = strjoin(dir, "/", name);
        if (!link)
                return -ENOMEM;
        /* Nitro: the NVMe serial carries the volume id, so this link is the volume's identity. */
        r = stat_block(link, ret_path, ret_devnum);
        if (r != 0)
                return r;
        const char *dev = device_remembered(p, id);
        if (!dev)
                return 0;
        const char *key = device_key(dev);
        if (isempty(key) || strspn(key, "abcdefghijklmnopqrstuvwxyz") != strlen(key))
                return error_setf(ret_error, -ENODEV,
                                  "cannot identify volume %s's device: '%s' is not a whole-disk name", id,
                                  dev);
        xvd = strjoin(dev_dir, "/xvd", key);
        if (!xvd)
                return -ENOMEM;
        struct stat st;
        if (lstat(xvd, &st) < 0)
                return errno == ENOENT ? 0 : -errno; /* not there yet: the caller waits, bounded */
        if (stat(xvd, &st) < 0 || !S_ISBLK(st.st_mode))
                return error_setf(ret_error, -ENODEV,
                                  "cannot identify volume %s's device: %s is not a block device", id, xvd);
        devnum = st.st_rdev;
        r = xen_verify(p, id, xvd, devnum, dir, name, dev_dir, ret_error);
        if (r < 0)
                return r;
        path = realpath(xvd, NULL);
        if (!path)
                return -errno;
        *ret_path = TAKE_PTR(path);
        *ret_devnum = devnum;
        return 1;
}

static int wait_detached(AwsProvider *p, const char *id, char **ret_error) {
        usec_t deadline = now(CLOCK_MONOTONIC) + AWS_DETACH_TIMEOUT;
        for (;;) {
                AwsVolume v = {};
                int r = describe_one(p, id, &v, ret_error);
                if (r < 0)
                        return r;
                bool held = active_attachment(&v) != NULL;
                aws_volume_done(&v);
                if (!held)
                        return 0;
                if (now(CLOCK_MONOTONIC) + AWS_DETACH_POLL > deadline)
                        return error_setf(ret_error, PK_ETIMEOUT, "volume '%s' still attached after %us", id,
                                          (unsigned)(AWS_DETACH_TIMEOUT / USEC_PER_SEC));
                r = sleep_usec(AWS_DETACH_POLL);
                if (r < 0)
                        return error_setf(ret_error, r, "waiting for volume '%s' to detach: stop requested",
                                          id);
        }
}

static int aws_detach(void *state, const char *id, const char *node, char **ret_error) {
        AwsProvider *p = state;
        _cleanup_free_ char *holder = NULL;
        AwsVolume v = {};
        int r = describe_one(p, id, &v, ret_error);
        if (r < 0)
                return r;
        const AwsVolumeAttachment *a = active_attachment(&v);
        if (a && !(holder = strdup(a->instance_id)))
                r = -ENOMEM;
        aws_volume_done(&v);
        if (r < 0)
                return r;
        if (!holder)
                return 0;
        if (node && !streq(node, holder))
                return error_setf(ret_error, PK_ECONFLICT, "volume '%s' is attached to '%s', not '%s'", id,
                                  holder, node);
        r = aws_ec2_detach_volume(p->client, id, holder, ret_error);
        if (r < 0)
                return r;
        r = wait_detached(p, id, ret_error);
        if (r >= 0 && streq(holder, p->node.name))
                r = remember_device(p, id, NULL);
        return r;
}

/* An attached volume's device appears as its NVMe by-id link. */
static int aws_watch_paths(void *state, char ***ret) {
        const char *dir = getenv(AWS_BYID_DIR_ENV);
        _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
        if (!l || strv_extend(&l, isempty(dir) ? AWS_BYID_DIR_DEFAULT : dir) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(l);
        return 0;
}

/* The instances of the cluster that are not terminated (shutting-down ones neither: their names are being
 * given up), each with the node name it registers as, its private DNS name. An instance without one (not
 * in a VPC with DNS hostnames) is left out: no node name can be told for it. */
static int aws_list_machines(void *state, const char *cluster, CloudMachine **ret, size_t *ret_n,
                             char **ret_error) {
        AwsProvider *p = state;
        const char *cv[] = { cluster, NULL }, *sv[] = { "pending", "running", "stopping", "stopped", NULL };
        const AwsFilter filters[] = { { "tag:" VOLUME_TAG_CLUSTER, cv }, { "instance-state-name", sv } };
        AwsInstance *insts = NULL;
        size_t n = 0, k = 0;
        int r =
            aws_ec2_describe_instances(p->client, filters, ELEMENTSOF(filters), NULL, &insts, &n, ret_error);
        if (r < 0)
                return r;
        CloudMachine *l = new0(CloudMachine, n + 1);
        for (size_t i = 0; l && i < n; i++) {
                if (isempty(insts[i].private_dns_name))
                        continue;
                l[k].id = TAKE_PTR(insts[i].instance_id);
                l[k++].node_name = TAKE_PTR(insts[i].private_dns_name);
        }
        aws_instances_free(insts, n);
        if (!l)
                return -ENOMEM;
        *ret = l;
        *ret_n = k;
        return 0;
}

const VolumeProviderVTable volume_provider_aws = {
        .name = "aws",
        .open = aws_open,
        .close = aws_close,
        .node_identity = aws_node_identity,
        .list_volumes = aws_list_volumes,
        .attach = aws_attach,
        .resolve_device = aws_resolve_device,
        .detach = aws_detach,
        .watch_paths = aws_watch_paths,
        .list_machines = aws_list_machines,
};
