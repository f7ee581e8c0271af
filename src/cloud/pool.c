/* SPDX-License-Identifier: Apache-2.0 */
#include "cloud/pool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/in-addr-util.h"
#include "basic/machine-id.h"
#include "basic/stop.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "cloud/loopdev.h"
#include "cloud/volume-tags.h"
#include "shared/blockdev.h"

static void pool_volume_donep(PoolVolume *v) {
        pool_volume_done(v);
}
#define _cleanup_pool_volume_ _cleanup_(pool_volume_donep)

int pool_open(const char *dir, usec_t lock_timeout, Pool **ret) {
        struct stat st;
        if (stat(dir, &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode))
                return -ENOTDIR;
        Pool *p = new0(Pool, 1);
        if (!p)
                return -ENOMEM;
        p->dir = strdup(dir);
        if (!p->dir) {
                free(p);
                return -ENOMEM;
        }
        p->lock_timeout = lock_timeout ?: POOL_LOCK_TIMEOUT_DEFAULT;
        *ret = p;
        return 0;
}

Pool *pool_free(Pool *p) {
        if (p) {
                free(p->dir);
                free(p);
        }
        return NULL;
}

int pool_lock(Pool *p) {
        _cleanup_free_ char *path = strjoin(p->dir, "/.lock");
        if (!path)
                return -ENOMEM;
        _cleanup_close_ int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        usec_t deadline = now(CLOCK_MONOTONIC) + p->lock_timeout;
        /* flock() has no timeout: poll with LOCK_NB. The lock dies with the process, so a holder killed
         * with -9 never wedges the pool. */
        for (;;) {
                if (flock(fd, LOCK_EX | LOCK_NB) >= 0)
                        return TAKE_FD(fd);
                if (errno != EWOULDBLOCK && errno != EINTR)
                        return -errno;
                int r = deadline_sleep(deadline, 2 * USEC_PER_MSEC);
                if (r < 0)
                        return r;
        }
}

static char *meta_path(Pool *p, const char *id) {
        return strjoin(p->dir, "/", id, ".json");
}

int pool_load(Pool *p, const char *id, PoolVolume *ret, char **ret_error) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        size_t len;
        int r;

        if (!pool_id_valid(id))
                return -EINVAL;
        path = meta_path(p, id);
        if (!path)
                return -ENOMEM;
        r = read_full_file(path, POOL_META_MAX, &text, &len);
        if (r == -EFBIG)
                r = PK_ETOOBIG;
        if (r < 0)
                return r;
        PoolVolume v = {};
        r = pool_meta_parse(text, len, &v, ret_error);
        if (r < 0)
                return r;
        if (!streq(v.volume.id, id)) {
                pool_volume_done(&v);
                if (ret_error)
                        *ret_error = strdup("'id' does not match the file name");
                return PK_EMALFORMED;
        }
        *ret = v;
        return 0;
}

int pool_load_any(Pool *p, const char *id, PoolVolume *ret) {
        _cleanup_free_ char *path = NULL, *text = NULL, *err = NULL;
        size_t len = 0;
        int r;

        if (!pool_id_valid(id))
                return -EINVAL;
        r = pool_load(p, id, ret, &err);
        if (r >= 0 || r == -ENOENT || r == -ENOMEM || r == -EINVAL)
                return r;
        if (!err && !(err = strdup(pk_strerror(r))))
                return -ENOMEM;
        path = meta_path(p, id);
        if (!path)
                return -ENOMEM;
        r = read_full_file(path, POOL_META_MAX, &text, &len);
        if (r == -ENOENT || r == -ENOMEM)
                return r;
        return pool_meta_salvage(r >= 0 ? text : NULL, len, id, err, ret);
}

/* Every record written must be one every reader accepts: a record the parser rejects makes the volume
 * unusable for every node (the claim would stand, unreadable). So the text is parsed back before it
 * replaces the old one, whatever the caller validated before. */
static int pool_store(Pool *p, const PoolVolume *v) {
        _cleanup_free_ char *path = meta_path(p, v->volume.id), *text = NULL;
        PoolVolume check = {};
        if (!path)
                return -ENOMEM;
        int r = pool_meta_format(v, &text);
        if (r < 0)
                return r;
        r = pool_meta_parse(text, strlen(text), &check, NULL);
        if (r < 0)
                return r == -ENOMEM ? r : -EINVAL;
        pool_volume_done(&check);
        r = write_file_atomic(path, text, strlen(text), 0644, 1);
        return r < 0 ? r : 0;
}

/* What the pool can tell without attaching: an image with no block allocated was never written. */
static VolumeContent image_content(Pool *p, const PoolVolume *v) {
        struct stat st;
        if (!v->image)
                return VOLUME_CONTENT_UNKNOWN;
        _cleanup_free_ char *img = strjoin(p->dir, "/", v->image);
        if (!img || stat(img, &st) < 0)
                return VOLUME_CONTENT_UNKNOWN;
        return st.st_blocks == 0 ? VOLUME_CONTENT_BLANK : VOLUME_CONTENT_UNKNOWN;
}

int pool_list(Pool *p, VolumeList *ret) {
        _cleanup_(closedirp) DIR *d = opendir(p->dir);
        VolumeList l = {};

        if (!d)
                return -errno;
        for (struct dirent *de; (de = readdir(d));) {
                /* dotfiles are write_file_atomic()'s temps and the lock */
                if (de->d_name[0] == '.' || !endswith(de->d_name, ".json"))
                        continue;
                _cleanup_free_ char *id = strndup(de->d_name, strlen(de->d_name) - STRLEN(".json")),
                                    *err = NULL;
                _cleanup_pool_volume_ PoolVolume v = {};
                if (!id)
                        goto oom;
                /* a damaged record is listed (never silently dropped) and also warned about */
                int r = pool_id_valid(id) ? pool_load_any(p, id, &v) : PK_EMALFORMED;
                if (r == -ENOENT)
                        continue; /* removed meanwhile */
                if (r >= 0)
                        v.volume.content = image_content(p, &v);
                if (r == -ENOMEM || (r >= 0 && volume_list_append(&l, &v.volume) < 0))
                        goto oom;
                if (r < 0 || v.volume.damaged) {
                        _cleanup_free_ char *w = strprintf("%.64s: %s", de->d_name,
                                                           v.volume.damaged ?: err ?: pk_strerror(r));
                        if (!w || strv_push(&l.warnings, w) < 0)
                                goto oom;
                        w = NULL;
                }
        }
        volume_list_sort(&l);
        *ret = l;
        return 0;
oom:
        volume_list_done(&l);
        return -ENOMEM;
}

static int random_id(const char *prefix, char **ret) {
        uint8_t b[8];
        if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
                return -EIO;
        char *s = strprintf("%s%02x%02x%02x%02x%02x%02x%02x%02x", prefix, b[0], b[1], b[2], b[3], b[4], b[5],
                            b[6], b[7]);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static int fill_new(PoolVolume *v, const char *id, const char *zone, uint64_t size, char *const *tags) {
        if (strlen(zone) == 0 || strlen(zone) > 63 || string_has_cc(zone))
                return -EINVAL;
        v->volume.id = strdup(id);
        v->volume.zone = strdup(zone);
        v->volume.size = size;
        if (!v->volume.id || !v->volume.zone)
                return -ENOMEM;
        size_t n = 0;
        for (char *const *t = tags; t && t[0] && t[1]; t += 2, n++) {
                if (!pool_tag_valid(t[0], t[1]) || n >= POOL_TAGS_MAX)
                        return -EINVAL;
                if (volume_set_tag(&v->volume, t[0], t[1]) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* Stores v unless <id>.json exists; the caller holds the lock. */
static int store_new(Pool *p, const PoolVolume *v) {
        _cleanup_free_ char *path = meta_path(p, v->volume.id);
        if (!path)
                return -ENOMEM;
        if (access(path, F_OK) >= 0)
                return -EEXIST;
        return pool_store(p, v);
}

static int create_image(Pool *p, const char *image, uint64_t size) {
        _cleanup_free_ char *path = strjoin(p->dir, "/", image);
        if (!path)
                return -ENOMEM;
        /* An image without its .json is the leftover of a create that crashed: never a volume, so it
         * is safe to truncate. */
        _cleanup_close_ int fd =
            open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        if (ftruncate(fd, (off_t)size) < 0 || fsync(fd) < 0)
                return -errno;
        return 0;
}

int pool_create(Pool *p, const char *id, const char *zone, uint64_t size, char *const *tags, char **ret_id) {
        _cleanup_pool_volume_ PoolVolume v = {};
        _cleanup_free_ char *gen = NULL, *meta = NULL;
        int r;

        if (!id) {
                r = random_id("vol-", &gen);
                if (r < 0)
                        return r;
                id = gen;
        }
        if (!pool_id_valid(id) || size < 1024 * 1024 || size > (UINT64_C(1) << 44))
                return -EINVAL;
        r = fill_new(&v, id, zone, size, tags);
        if (r < 0)
                return r;
        v.image = strjoin(id, ".img");
        meta = meta_path(p, id);
        if (!v.image || !meta)
                return -ENOMEM;
        _cleanup_close_ int lock = pool_lock(p);
        if (lock < 0)
                return lock;
        if (access(meta, F_OK) >= 0)
                return -EEXIST;
        r = create_image(p, v.image, size);
        if (r >= 0)
                r = store_new(p, &v);
        if (r < 0)
                return r;
        if (ret_id && !(*ret_id = strdup(id)))
                return -ENOMEM;
        return 0;
}

static int device_size(const char *device, uint64_t *ret) {
        _cleanup_close_ int fd = open(device, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        if (ioctl(fd, BLKGETSIZE64, ret) < 0)
                return -errno;
        return 0;
}

int pool_add_device(Pool *p, const char *id, const char *device, const char *zone, char *const *tags,
                    char **ret_id) {
        _cleanup_pool_volume_ PoolVolume v = {};
        _cleanup_free_ char *gen = NULL;
        uint64_t size;
        dev_t devnum;
        int r;

        if (device[0] != '/' || strlen(device) >= 4096 || string_has_cc(device))
                return -EINVAL;
        r = blockdev_get_devnum(device, &devnum);
        if (r < 0)
                return r;
        r = device_size(device, &size);
        if (r < 0)
                return r;
        if (!id) {
                const char *base = strrchr(device, '/') + 1;
                gen = strjoin("dev-", base);
                if (!gen)
                        return -ENOMEM;
                id = gen;
        }
        if (!pool_id_valid(id))
                return -EINVAL;
        r = fill_new(&v, id, zone, size, tags);
        if (r < 0)
                return r;
        v.device = strdup(device);
        if (!v.device)
                return -ENOMEM;
        _cleanup_close_ int lock = pool_lock(p);
        if (lock < 0)
                return lock;
        r = store_new(p, &v);
        if (r < 0)
                return r;
        if (ret_id && !(*ret_id = strdup(id)))
                return -ENOMEM;
        return 0;
}

static bool ips_valid(char *const *l) {
        size_t n = 0;
        STRV_FOREACH (ip, (char **)l)
                if (++n > POOL_IPS_MAX || !in_addr_literal_valid(*ip))
                        return false;
        return true;
}

/* What pool_meta_parse() will demand of the attachment, checked before anything is written. */
static bool node_identity_storable(const NodeIdentity *node) {
        return node->name && pool_node_name_valid(node->name) &&
               (!node->machine_id || machine_id_valid(node->machine_id)) && ips_valid(node->internal_ips) &&
               ips_valid(node->external_ips);
}

static int set_attachment(PoolVolume *v, const NodeIdentity *node) {
        VolumeAttachment *a = &v->volume.attachment;
        if (free_and_strdup(&a->node, node->name) < 0)
                return -ENOMEM;
        free(a->machine_id);
        a->machine_id = NULL;
        if (node->machine_id && !(a->machine_id = strdup(node->machine_id)))
                return -ENOMEM;
        strv_free(a->internal_ips);
        strv_free(a->external_ips);
        a->internal_ips = node->internal_ips ? strv_copy(node->internal_ips) : calloc(1, sizeof(char *));
        a->external_ips = node->external_ips ? strv_copy(node->external_ips) : calloc(1, sizeof(char *));
        return a->internal_ips && a->external_ips ? 0 : -ENOMEM;
}

static void clear_attachment(PoolVolume *v) {
        VolumeAttachment *a = &v->volume.attachment;
        free(a->node);
        free(a->machine_id);
        strv_free(a->internal_ips);
        strv_free(a->external_ips);
        free(a->device);
        *a = (VolumeAttachment){};
}

static char *image_path(Pool *p, const PoolVolume *v) {
        return strjoin(p->dir, "/", v->image);
}

/* Caller holds the lock: 1 when another volume naming the same etcd member is attached (to any node).
 * Under the pool lock this makes "one member, one holder" exact, not only a rule the planner follows. */
static int member_held_elsewhere(Pool *p, const Volume *v) {
        VolumeList l = {};
        int r = pool_list(p, &l);
        if (r < 0)
                return r;
        for (size_t i = 0; i < l.n && r == 0; i++)
                if (l.items[i].attachment.node && volume_same_member(v, &l.items[i]))
                        r = 1;
        volume_list_done(&l);
        return r;
}

/* The claim is stored before the loop device is set up: a crash in between leaves a volume held by
 * node without a device, and the holder's next attach (the pass plans one whenever the device is
 * missing) sets it up. The other order could leave a bound loop device nobody owns. */
int pool_attach(Pool *p, const char *id, const NodeIdentity *node) {
        _cleanup_pool_volume_ PoolVolume v = {};
        _cleanup_free_ char *img = NULL, *dev = NULL;
        int r;

        if (!node_identity_storable(node))
                return -EINVAL;
        _cleanup_close_ int lock = pool_lock(p);
        if (lock < 0)
                return lock;
        r = pool_load(p, id, &v, NULL);
        if (r < 0)
                return r;
        const char *holder = v.volume.attachment.node;
        /* same name, other machine: not ours either (a second machine with the same host name) */
        if (holder && !node_identity_holds(node, &v.volume.attachment))
                return PK_ECONFLICT;
        if (!holder) {
                r = member_held_elsewhere(p, &v.volume);
                if (r != 0)
                        return r < 0 ? r : PK_ECONFLICT;
                r = set_attachment(&v, node);
                if (r < 0)
                        return r;
                r = pool_store(p, &v);
                if (r < 0)
                        return r;
        }
        if (!v.image)
                return 0; /* a plain block device is there as long as the machine has it */
        img = image_path(p, &v);
        if (!img)
                return -ENOMEM;
        r = loopdev_find_by_backing(img, &dev, NULL);
        if (r == 0)
                r = loopdev_attach(img, &dev, NULL);
        if (r < 0)
                return r;
        if (v.volume.attachment.device && streq(v.volume.attachment.device, dev))
                return 0;
        r = free_and_strdup(&v.volume.attachment.device, dev);
        if (r < 0)
                return r;
        return pool_store(p, &v);
}

int pool_resolve_device(Pool *p, const char *id, const NodeIdentity *node, char **ret_path,
                        dev_t *ret_devnum) {
        _cleanup_pool_volume_ PoolVolume v = {};
        _cleanup_free_ char *img = NULL;
        int r;

        r = pool_load(p, id, &v, NULL);
        if (r < 0)
                return r;
        if (!node_identity_holds(node, &v.volume.attachment))
                return 0;
        if (v.image) {
                img = image_path(p, &v);
                if (!img)
                        return -ENOMEM;
                return loopdev_find_by_backing(img, ret_path, ret_devnum);
        }
        dev_t d;
        r = blockdev_get_devnum(v.device, &d);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        char *s = strdup(v.device);
        if (!s)
                return -ENOMEM;
        *ret_path = s;
        if (ret_devnum)
                *ret_devnum = d;
        return 1;
}

/* Caller holds the lock. The loop device goes first: a crash before the metadata update leaves the
 * volume held without a device, which its holder's next pass repairs; the other order could hand a
 * still-bound device to another node. */
static int detach_locked(Pool *p, PoolVolume *v) {
        if (v->image) {
                _cleanup_free_ char *img = image_path(p, v);
                if (!img)
                        return -ENOMEM;
                int r = loopdev_detach_image(img);
                if (r < 0)
                        return r;
        }
        clear_attachment(v);
        return pool_store(p, v);
}

/* A damaged record: release its loop device (the image is "<id>.img" by construction, even when the
 * record does not say so), then rewrite the record without its attachment if everything else of it was
 * readable. Otherwise the record stays as it is, listed as damaged, for a human to mend: rewriting it
 * from guesses would lose its tags, and with them the volume's etcd membership. */
static int detach_damaged_locked(Pool *p, PoolVolume *v) {
        _cleanup_free_ char *img = strjoin(p->dir, "/", v->volume.id, ".img");
        int r;

        if (!img)
                return -ENOMEM;
        if (!v->device && access(img, F_OK) >= 0) {
                r = loopdev_detach_image(img);
                if (r < 0)
                        return r;
        }
        if (!v->core_valid)
                return POOL_DETACHED_DAMAGED;
        clear_attachment(v);
        free(v->volume.damaged);
        v->volume.damaged = NULL;
        r = pool_store(p, v);
        return r < 0 ? r : POOL_DETACHED;
}

int pool_detach(Pool *p, const char *id, const NodeIdentity *node) {
        _cleanup_pool_volume_ PoolVolume v = {};
        _cleanup_close_ int lock = pool_lock(p);
        if (lock < 0)
                return lock;
        int r = pool_load_any(p, id, &v);
        if (r < 0)
                return r;
        if (v.volume.damaged) {
                /* a node releasing its own volume must be able to read that it is its own */
                if (node && !node_identity_holds(node, &v.volume.attachment))
                        return PK_EMALFORMED;
                return detach_damaged_locked(p, &v);
        }
        if (!v.volume.attachment.node)
                return 0;
        if (node && !node_identity_holds(node, &v.volume.attachment))
                return PK_ECONFLICT;
        r = detach_locked(p, &v);
        return r < 0 ? r : POOL_DETACHED;
}

static int push_note(char ***notes, char *n) {
        if (!n || strv_push(notes, n) < 0) {
                free(n);
                return -ENOMEM;
        }
        return 0;
}

/* 1 if released, 0 if not node's (or not readable as node's). */
static int release_one(Pool *p, const char *id, const char *node, char ***notes) {
        _cleanup_pool_volume_ PoolVolume v = {};
        int r = pool_load_any(p, id, &v);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        const char *holder = v.volume.attachment.node;
        if (!v.volume.damaged) {
                if (!holder || !streq(holder, node))
                        return 0;
                r = detach_locked(p, &v);
                return r < 0 ? r : 1;
        }
        if (!holder)
                /* it may be node's, or a live node's: a human decides ('pool detach ID') */
                return push_note(notes, strprintf("%s: damaged record (%s), its holder cannot be read: "
                                                  "not released",
                                                  id, v.volume.damaged));
        if (!streq(holder, node))
                return 0;
        _cleanup_free_ char *reason = strdup(v.volume.damaged);
        if (!reason)
                return -ENOMEM;
        r = detach_damaged_locked(p, &v);
        if (r < 0)
                return r;
        r = push_note(notes, strprintf("%s: damaged record (%s): released%s", id, reason,
                                       r == POOL_DETACHED_DAMAGED ? ", the record is left as it is"
                                                                  : " and rewritten"));
        return r < 0 ? r : 1;
}

int pool_release_node(Pool *p, const char *node, char ***ret_notes) {
        _cleanup_strv_free_ char **notes = calloc(1, sizeof(char *));
        VolumeList l = {};
        int n = 0, r;

        if (!notes)
                return -ENOMEM;
        _cleanup_close_ int lock = pool_lock(p);
        if (lock < 0)
                return lock;
        r = pool_list(p, &l);
        if (r < 0)
                return r;
        for (size_t i = 0; i < l.n && r >= 0; i++) {
                const Volume *v = &l.items[i];
                if (!v->damaged && (!v->attachment.node || !streq(v->attachment.node, node)))
                        continue;
                r = release_one(p, v->id, node, &notes);
                if (r > 0)
                        n++;
        }
        volume_list_done(&l);
        if (r < 0)
                return r;
        if (ret_notes)
                *ret_notes = TAKE_PTR(notes);
        return n;
}
