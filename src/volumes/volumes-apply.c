/* SPDX-License-Identifier: Apache-2.0 */
/* Apply: run the planned actions. Each is idempotent and safe to repeat after a crash at any point:
 * claims are compare-and-set, mounts are checked against mountinfo first, files are written atomically,
 * and nothing is ever formatted unless it is proven blank (no signature, zeros where data would be). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/beneath.h"
#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/stop.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "cloud/volume-tags.h"
#include "manifest/manifest-dir.h"
#include "shared/blockdev.h"
#include "shared/mount-util.h"
#include "shared/spawn.h"
#include "volumes/volumes.h"

#define DEVICE_TIMEOUT       (30 * USEC_PER_SEC)
#define CHILD_TIMEOUT        (10 * 60 * USEC_PER_SEC)
#define CHILD_OUTPUT_MAX     (16U * 1024U)
#define DEVICE_POLL_INTERVAL (50 * USEC_PER_MSEC)
/* A volume's contents are data, never programs or devices of this machine: a set-uid binary or a device
 * node on a restored or foreign volume gives nothing. */
#define VOLUME_MOUNT_OPTIONS "nosuid,nodev"

typedef struct ApplyContext {
        VolumeProvider *provider;
        const VolumesPassConfig *cfg;
        const VolumesInput *in;
        const VolumesPlan *plan;
        /* per volume, filled as the actions run */
        char **devices;
        dev_t *devnums;
        char **fstypes; /* what the fsck step's probe found (NULL: nothing, or not probed) */
        bool *probed;   /* the fsck step probed this pass: fstypes[i] is its finding */
        int *held;      /* an fd on the device from its first probe until its mount step ends (or -1) */
        bool *failed;
        VolumesPassResult *result;
        VolumesPassResult own_result;
        char *const *etcd_texts; /* per selection, the etcd manifest to write (MANIFESTS phase) */
        bool format_failed;      /* the last mount action failed in its format */
} ApplyContext;

struct VolumesApply {
        ApplyContext c;
};

/* The report callback carries what the pass does (claimed, checked, mounted, a tool's output) for the daemon
 * to log. An action's error never travels through it alone: it comes back to apply_plan() as a code and a
 * message (char **ret_error), which reports it once, with the volume and the action. */
_printf_(4, 5) static void report(const VolumesPassConfig *cfg, int level, int error, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        va_list ap;
        if (!cfg->report)
                return;
        va_start(ap, fmt);
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);
        cfg->report(cfg->report_userdata, level, error, msg ?: "(out of memory)");
}

/* Child output goes to the report line by line, so a multi-line mkfs message stays readable. */
static void report_output(const VolumesPassConfig *cfg, const char *tool, const SpawnResult *res) {
        _cleanup_strv_free_ char **lines = NULL;
        if (!res->output || strv_split(res->output, "\n", &lines) < 0)
                return;
        STRV_FOREACH (l, lines)
                report(cfg, LOG_LEVEL_INFO, 0, "%s: %s", tool, *l);
        if (res->truncated)
                report(cfg, LOG_LEVEL_INFO, 0, "%s: (output truncated)", tool);
}

/* Runs a tool on a device; *ret_status is its exit status when it exited by itself. A tool that a signal
 * ended (a crash, the OOM killer) or that hit its deadline said nothing about the device: an error,
 * reported with the signal, never an exit status to interpret. */
static void progress(const VolumesPassConfig *cfg, const char *what, const char *id);

static int run_tool(const ApplyContext *c, char *const argv[], const char *dev, int *ret_status,
                    char **ret_error) {
        SpawnResult res = {};
        usec_t timeout = c->cfg->child_timeout ?: CHILD_TIMEOUT;
        char how[128];
        int r = spawn_run(argv, timeout, CHILD_OUTPUT_MAX, &res);
        if (r < 0 && r != PK_ETIMEOUT && r != PK_ECHILD)
                return r;
        report_output(c->cfg, argv[0], &res);
        if (r == PK_ECHILD)
                error_setf(ret_error, r, "%s '%s' %s", argv[0], dev,
                           spawn_result_describe(&res, how, sizeof(how)));
        else if (r == PK_ETIMEOUT)
                error_setf(ret_error, r, "%s '%s' did not finish in time and was killed", argv[0], dev);
        int status = res.exit_status;
        spawn_result_done(&res);
        if (r < 0)
                return r;
        *ret_status = status;
        return 0;
}

static int action_wait_device(ApplyContext *c, size_t i, char **ret_error) {
        const Volume *v = &c->in->volumes[i];
        usec_t deadline = now(CLOCK_MONOTONIC) + (c->cfg->device_timeout ?: DEVICE_TIMEOUT);

        for (;;) {
                _cleanup_free_ char *path = NULL;
                dev_t devnum;
                _cleanup_free_ char *err = NULL;
                int r = c->provider->vtable->resolve_device(c->provider->state, v->id, &path, &devnum, &err);
                if (r == -ENODEV) /* a device that may be the volume's but cannot be proven to be */
                        return error_setf(ret_error, r, "%s", err ?: "cannot identify its device");
                if (r < 0) {
                        if (ret_error)
                                free_and_replace(*ret_error, err);
                        return r;
                }
                if (r > 0) {
                        free(c->devices[i]);
                        c->devices[i] = TAKE_PTR(path);
                        c->devnums[i] = devnum;
                        return 0;
                }
                r = deadline_sleep(deadline, DEVICE_POLL_INTERVAL);
                if (r < 0)
                        return r;
        }
}

static int ensure_device(ApplyContext *c, size_t i, char **ret_error) {
        return c->devices[i] ? 0 : action_wait_device(c, i, ret_error);
}

/* The device held open from its first probe until its mount step ends: the closes of the blank proof's
 * exclusive fd, of e2fsck and of mkfs are then never the device's last, which would drop the kernel's cache
 * of it. So the proof's probe reads what the first probe read from the cache, not from the disk again (a
 * blank volume's second probe on a loop device: 3.3 -> 1.5 ms). Read-only and not exclusive: it keeps out
 * nothing that the exclusive opens (O_EXCL, mke2fs, e2fsck, mount) do not; the proof's zero reads are
 * O_DIRECT whatever is cached. */
static int device_hold(ApplyContext *c, size_t i) {
        if (c->held[i] < 0)
                c->held[i] = blockdev_open_read(c->devices[i]);
        return c->held[i];
}

static void device_unhold(ApplyContext *c, size_t i) {
        c->held[i] = safe_close(c->held[i]);
}

static bool is_ext(const char *fstype) {
        return fstype && (streq(fstype, "ext2") || streq(fstype, "ext3") || streq(fstype, "ext4"));
}

/* `fsck -a` semantics with e2fsck -p: 0 clean, 1 errors corrected, 2 corrected (reboot advised for a
 * root fs, irrelevant here); 4 and above: left uncorrected or worse, this volume stops (e2fsck(8)). */
static int action_fsck(ApplyContext *c, size_t i, char **ret_error) {
        _cleanup_free_ char *fstype = NULL;
        int r = ensure_device(c, i, ret_error), status;
        if (r < 0)
                return r;
        r = device_hold(c, i);
        if (r >= 0)
                r = blockdev_probe_fstype_fd(r, &fstype);
        if (r < 0)
                return r;
        /* the mount need not probe again: neither for the type to mount nor for "no filesystem at all" */
        free(c->fstypes[i]);
        c->fstypes[i] = TAKE_PTR(fstype);
        c->probed[i] = true;
        if (!is_ext(c->fstypes[i]))
                return 0; /* blank (formatted below) or a filesystem without an fsck -p equivalent */
        /* Never fsck a device something holds (mounted elsewhere, in another namespace); right after an
         * unmount the kernel may hold it a moment longer, so wait for that, bounded. */
        _cleanup_close_ int excl = blockdev_open_exclusive(c->devices[i], BLOCKDEV_RELEASE_TIMEOUT);
        if (excl < 0) {
                _cleanup_free_ char *users = excl == -EBUSY ? blockdev_describe_users(c->devnums[i]) : NULL;
                return error_setf(ret_error, excl, "not checking '%s': the device is in use (%s)",
                                  c->devices[i], users ?: "by nothing visible from here");
        }
        excl = safe_close(excl); /* e2fsck opens it exclusively itself */
        char *argv[] = { (char *)"e2fsck", (char *)"-p", c->devices[i], NULL };
        r = run_tool(c, argv, c->devices[i], &status, ret_error);
        if (r < 0)
                return r;
        if (status >= 4)
                return error_setf(ret_error, PK_ECHILD, "e2fsck -p '%s' exited %d", c->devices[i], status);
        if (status != 0)
                report(c->cfg, LOG_LEVEL_WARNING, 0, "e2fsck -p corrected errors on '%s' (volume '%s')",
                       c->devices[i], c->in->volumes[i].id);
        else
                report(c->cfg, LOG_LEVEL_INFO, 0, "Checked '%s' (volume '%s'): clean", c->devices[i],
                       c->in->volumes[i].id);
        return 0;
}

/* 1 if the device is mounted on path, 0 if nothing is, -EBUSY if something else is. */
static int mount_state(const char *path, dev_t devnum) {
        dev_t mounted;
        int r = mount_find_target(path, &mounted, NULL);
        if (r <= 0)
                return r;
        return mounted == devnum ? 1 : -EBUSY;
}

/* A format this node began and did not finish (a crash, kill -9) leaves mke2fs's first writes (group
 * descriptors, bitmaps) without the superblock it writes last: data, no signature, which the proof refuses
 * like any other. So the format's intent is recorded first, node-local, next to the mount point
 * (<mount-root>/master-<id>.formatting, with the device size), and removed when mkfs succeeds and whenever
 * the volume mounts. Data found while a fresh intent is there is that format's own. The intent is honoured
 * for FORMAT_INTENT_MAX_AGE only: the volume cannot otherwise have passed through another node and an
 * operator's wipe and come back with data while an old intent lies here. */
#define FORMAT_INTENT_MAX_AGE (60 * 60 * USEC_PER_SEC)

static char *format_intent_path(const ApplyContext *c, size_t i) {
        _cleanup_free_ char *m = volume_mount_path(c->cfg->mount_root, c->in->volumes[i].id);
        return m ? strjoin(m, ".formatting") : NULL;
}

static int format_intent_write(const ApplyContext *c, size_t i, uint64_t size) {
        _cleanup_free_ char *path = format_intent_path(c, i), *text = NULL;
        if (!path || !(text = strprintf("device-size=%" PRIu64 "\n", size)))
                return -ENOMEM;
        int r = mkdir_p(c->cfg->mount_root, 0755);
        return r < 0 ? r : write_file_atomic(path, text, strlen(text), 0600, false);
}

static void format_intent_remove(const ApplyContext *c, size_t i) {
        _cleanup_free_ char *path = format_intent_path(c, i);
        if (path)
                (void)unlink(path);
}

/* 1 when this node's fresh intent for a device of this size is there. */
static int format_intent_present(const ApplyContext *c, size_t i, uint64_t size) {
        _cleanup_free_ char *path = format_intent_path(c, i), *text = NULL, *want = NULL;
        struct stat st;
        if (!path || !(want = strprintf("device-size=%" PRIu64 "\n", size)))
                return -ENOMEM;
        if (stat(path, &st) < 0)
                return errno == ENOENT ? 0 : -errno;
        usec_t mtime = (usec_t)st.st_mtim.tv_sec * USEC_PER_SEC + (usec_t)st.st_mtim.tv_nsec / 1000;
        if (mtime + FORMAT_INTENT_MAX_AGE < now(CLOCK_REALTIME))
                return 0;
        int r = read_full_file(path, 64, &text, NULL);
        if (r < 0)
                return r == -ENOENT ? 0 : r;
        return streq(text, want);
}

/* The proof that a device is blank, through fd (held O_EXCL): no signature libblkid knows, and zeros
 * wherever a filesystem it cannot recognise (a damaged primary superblock) would still have data. */
static int prove_blank(ApplyContext *c, size_t i, int fd, char **ret_error) {
        _cleanup_free_ char *what = NULL;
        const char *dev = c->devices[i], *id = c->in->volumes[i].id;
        uint64_t off;
        int r = blockdev_probe_signature_fd(fd, &what);
        if (r < 0)
                return r;
        if (r > 0)
                return error_setf(
                    ret_error, PK_ENOTBLANK,
                    "'%s' does not mount and holds a '%s' signature: not formatting it, leaving it "
                    "alone",
                    dev, what);
        r = blockdev_prove_zero(fd, &off);
        if (r < 0)
                return r;
        uint64_t size;
        int k = r > 0 ? blockdev_get_size(fd, &size) : 0;
        if (k >= 0 && r > 0)
                k = format_intent_present(c, i, size);
        if (k < 0)
                return k;
        if (k > 0) {
                report(c->cfg, LOG_LEVEL_WARNING, 0,
                       "Volume '%s' (%s) holds data from 0x%" PRIx64
                       " on but no filesystem: the format this node began did not finish; formatting again",
                       id, dev, off);
                return 0;
        }
        if (r > 0)
                return error_setf(
                    ret_error, PK_ENOTBLANK,
                    "'%s' does not mount and is not blank: has data but no recognised filesystem "
                    "(first non-zero byte at offset %" PRIu64
                    "): not formatting it, leaving it alone (a damaged ext4 may still be "
                    "recovered from a backup superblock, e2fsck -b; 'protokube wipe' destroys it)",
                    dev, off);
        return 0;
}

static int format_blank(ApplyContext *c, size_t i, const PlanSelection *s, char **ret_error) {
        const char *dev = c->devices[i];
        int status;
        if (s->format_blocked_by)
                /* One member's data must never be replaced by an empty filesystem on a second volume
                 * naming the same member: which of the two is right is the operator's call. */
                return error_setf(
                    ret_error, PK_ENOTBLANK,
                    "'%s' does not mount, but volume '%s' names the same etcd member and may hold "
                    "its data: not formatting '%s'; remove the tags of the one that is wrong",
                    dev, s->format_blocked_by, c->in->volumes[i].id);
        /* The proof runs under O_EXCL (nothing mounts it or claims it for md/dm meanwhile) and immediately
         * before mkfs. The fd cannot be held through mkfs: mke2fs opens the device O_EXCL itself, and so
         * would a reopen through /proc/self/fd (a new open, another holder): it would fail with EBUSY. So
         * it is closed just before the spawn; what guards the microseconds in between is the claim this
         * node holds (no other node's protokube touches the volume), and mke2fs's own O_EXCL fails if
         * anything mounted it since. O_EXCL never kept out plain writers anyway. */
        progress(c->cfg, "blank proof", c->in->volumes[i].id);
        _cleanup_close_ int excl = blockdev_open_exclusive(dev, BLOCKDEV_RELEASE_TIMEOUT);
        if (excl < 0) {
                _cleanup_free_ char *users = excl == -EBUSY ? blockdev_describe_users(c->devnums[i]) : NULL;
                return error_setf(ret_error, excl, "not formatting '%s': the device is in use (%s)", dev,
                                  users ?: "by nothing visible from here");
        }
        int r = prove_blank(c, i, excl, ret_error);
        if (r < 0)
                return r;
        report(c->cfg, LOG_LEVEL_INFO, 0, "Volume '%s' (%s) is blank: creating an ext4 filesystem",
               c->in->volumes[i].id, dev);
        /* No -F. But mkfs.ext4 asks "Proceed anyway?" about an existing signature only on a terminal; with
         * stdin /dev/null it goes ahead: the proof above is the only guard against destroying data. */
        char *argv[] = {
                (char *)"mkfs.ext4", (char *)"-q", (char *)"-L", (char *)"etcd", (char *)dev, NULL
        };
        uint64_t size;
        r = blockdev_get_size(excl, &size);
        if (r >= 0)
                r = format_intent_write(c, i, size);
        if (r < 0)
                return r;
        excl = safe_close(excl);
        progress(c->cfg, "mkfs.ext4", c->in->volumes[i].id);
        r = run_tool(c, argv, dev, &status, ret_error);
        if (r < 0)
                return r;
        if (status != 0)
                return error_setf(ret_error, PK_ECHILD, "mkfs.ext4 '%s' exited %d", dev, status);
        format_intent_remove(c, i);
        c->result->n_changes++;
        return 0;
}

/* Where libblkid finds no filesystem, "mount first" cannot mount by type, and libmount would try every type
 * of /proc/filesystems in turn (~10 ms on a blank volume, the largest part of a cold pass after mkfs): there
 * the blank proof goes first. 1: proved blank and formatted; 0: mount first, as always (a filesystem was
 * found, or the device is not provably blank: *ret_not_blank then says why, for when that mount fails too);
 * < 0: another error of format_blank(), in *ret_error. */
static int format_unknown_first(ApplyContext *c, size_t i, const PlanSelection *s, char **ret_not_blank,
                                char **ret_error) {
        _cleanup_free_ char *fstype = NULL;
        /* Only a shortcut past a mount that would fail: the proof under O_EXCL in format_blank() is what
         * guards the data, so the fsck step's probe of this pass (same claim, same device) serves here. */
        if (c->probed[i] && c->fstypes[i])
                return 0;
        if (!c->probed[i]) {
                int fd = device_hold(c, i);
                if (fd < 0 || blockdev_probe_fstype_fd(fd, &fstype) < 0 || fstype)
                        return 0;
        }
        report(c->cfg, LOG_LEVEL_INFO, 0,
               "'%s' holds no filesystem libblkid knows: checking whether it is blank", c->devices[i]);
        char *why = NULL;
        int r = format_blank(c, i, s, &why);
        if (r == PK_ENOTBLANK) {
                *ret_not_blank = why; /* a filesystem libblkid does not know may still mount */
                return 0;
        }
        c->format_failed = r < 0;
        if (r < 0) {
                *ret_error = why;
                return r;
        }
        free(why);
        return 1;
}

/* Mount first; only a failed mount AND a provably blank device lead to mkfs (ARCHITECTURE.md). */
static int mount_volume(ApplyContext *c, size_t i, const PlanSelection *s, char **ret_error) {
        _cleanup_free_ char *path = volume_mount_path(c->cfg->mount_root, c->in->volumes[i].id), *msg = NULL,
                            *not_blank = NULL;
        int r = ensure_device(c, i, ret_error);
        if (r < 0)
                return r;
        if (!path)
                return -ENOMEM;
        r = mount_state(path, c->devnums[i]);
        if (r == -EBUSY)
                return error_setf(ret_error, r, "Another device is mounted on '%s'", path);
        if (r != 0)
                return r;
        r = mkdir_p(path, 0755);
        if (r < 0)
                return r;
        r = format_unknown_first(c, i, s, &not_blank, ret_error);
        if (r < 0)
                return r;
        bool formatted = r > 0;
        /* An ext4 the fsck step just checked is mounted as ext4: libmount's own probe for the type reads the
         * device again (~10 ms of a failover). Anything else, or not probed: libmount finds the type. A
         * failure takes the same path either way: the blank proof, which formats nothing that holds data. */
        const char *checked = c->fstypes[i] && streq(c->fstypes[i], "ext4") ? "ext4" : NULL;
        if (!formatted)
                r = mount_block_device(c->devices[i], path, checked, VOLUME_MOUNT_OPTIONS, &msg);
        if (!formatted && r < 0) {
                if (not_blank) { /* the proof already ran and said no */
                        c->format_failed = true;
                        *ret_error = TAKE_PTR(not_blank);
                        return PK_ENOTBLANK;
                }
                report(c->cfg, LOG_LEVEL_INFO, r,
                       "Mounting '%s' on '%s' failed (%s): checking whether it is blank", c->devices[i],
                       path, strna(msg));
                r = format_blank(c, i, s, ret_error);
                c->format_failed = r < 0;
                if (r < 0)
                        return r;
                formatted = true;
        }
        if (formatted) {
                free(msg);
                msg = NULL;
                r = mount_block_device(c->devices[i], path, "ext4", VOLUME_MOUNT_OPTIONS, &msg);
                if (r < 0)
                        return error_setf(ret_error, r, "Mounting '%s' on '%s' failed: %s", c->devices[i],
                                          path, strna(msg));
        }
        format_intent_remove(c, i); /* a format that finished but was not recorded as finished */
        report(c->cfg, LOG_LEVEL_INFO, 0, "Mounted volume '%s' (%s) on '%s'", c->in->volumes[i].id,
               c->devices[i], path);
        return 0;
}

static int action_mount(ApplyContext *c, size_t i, const PlanSelection *s, char **ret_error) {
        int r = mount_volume(c, i, s, ret_error);
        device_unhold(c, i); /* mounted (the filesystem holds it now), or failed: the cache may go */
        return r;
}

/* The volume's contents are not ours to trust: a symlink or FIFO placed there is an error, never
 * followed (basic/beneath.h). */
static int write_volume_manifest(ApplyContext *c, size_t i, const char *mount_path, const char *yaml,
                                 char **ret_error) {
        const VolumeEligibility *e = &c->plan->eligibility[i];
        _cleanup_free_ char *name = volume_etcd_manifest_name(e->etcd.cluster);
        if (!name)
                return -ENOMEM;
        _cleanup_close_ int dfd = volume_manifest_dir_open(mount_path, true);
        int r = dfd;
        if (dfd >= 0)
                r = beneath_write_file_atomic(dfd, name, yaml, strlen(yaml), 0644, true);
        if (r < 0 && r != -ENOMEM)
                return error_setf(
                    ret_error, r,
                    "cannot write '%s/%s/%s' (%s): a symlink, FIFO or other non-regular file on the "
                    "volume is never followed",
                    mount_path, VOLUME_MANIFEST_SUBDIR, name, pk_strerror(r));
        return r;
}

/* The manifest file changed on the volume: when kubelet's directory already links to it, the link is
 * replaced with an identical one, so that kubelet's inotify watch on the directory sees the change now
 * rather than at its next full read (every 20 s by default). Returns 1 (the manifest was written). */
static int renew_link(ApplyContext *c, const char *etcd_cluster, const char *file, char **ret_error) {
        _cleanup_free_ char *lpath = volume_manifest_link(c->cfg->manifest_dir, etcd_cluster);
        if (!lpath)
                return -ENOMEM;
        int r = manifest_symlink_renew(lpath, file);
        if (r < 0)
                return error_setf(ret_error, r, "cannot renew the link '%s': %s", lpath, pk_strerror(r));
        return 1;
}

static int action_manifest(ApplyContext *c, size_t i, size_t selection, bool link, char **ret_error) {
        const VolumeEligibility *e = &c->plan->eligibility[i];
        _cleanup_free_ char *mount_path = volume_mount_path(c->cfg->mount_root, c->in->volumes[i].id);
        _cleanup_free_ char *file = NULL, *lpath = NULL;
        int r = ensure_device(c, i, ret_error);
        if (r < 0)
                return r;
        if (!mount_path)
                return -ENOMEM;
        /* Never write under an unmounted mount point: the file would land on the root filesystem and a
         * link to it could start an etcd with an empty data dir. */
        r = mount_state(mount_path, c->devnums[i]);
        if (r == 0)
                r = -ENOTCONN;
        if (r < 0)
                return r;
        file = volume_manifest_path(mount_path, e->etcd.cluster);
        if (!file)
                return -ENOMEM;
        if (link) {
                lpath = volume_manifest_link(c->cfg->manifest_dir, e->etcd.cluster);
                if (!lpath)
                        return -ENOMEM;
                r = mkdir_p(c->cfg->manifest_dir, 0755);
                if (r >= 0)
                        r = manifest_symlink(lpath, file);
        } else {
                const char *yaml = c->etcd_texts ? c->etcd_texts[selection] : NULL;
                if (!yaml) /* the pass held it back and said why (its certificates, its etcd member) */
                        return error_setf(ret_error, PK_EWAITING,
                                          "the etcd manifest is held back (see above)");
                r = write_volume_manifest(c, i, mount_path, yaml, ret_error);
                if (r > 0) /* kubelet sees a change behind an existing link only through the link */
                        r = renew_link(c, e->etcd.cluster, file, ret_error);
        }
        if (r > 0)
                report(c->cfg, LOG_LEVEL_INFO, 0, "%s '%s'", link ? "Linked" : "Wrote", link ? lpath : file);
        return r < 0 ? r : 0;
}

static int run_action(ApplyContext *c, const PlanAction *a, char **ret_error) {
        const Volume *v = &c->in->volumes[a->volume];
        int r;

        switch (a->type) {
        case ACTION_CLAIM:
        case ACTION_ATTACH:
                r = c->provider->vtable->attach(c->provider->state, v->id, c->in->node, ret_error);
                if (r >= 0 && a->type == ACTION_CLAIM)
                        report(c->cfg, LOG_LEVEL_INFO, 0, "Claimed volume '%s' (etcd %s member %s)", v->id,
                               c->plan->eligibility[a->volume].etcd.cluster,
                               c->plan->eligibility[a->volume].etcd.member);
                return r;
        case ACTION_WAIT_DEVICE:
                return action_wait_device(c, a->volume, ret_error);
        case ACTION_FSCK:
                return action_fsck(c, a->volume, ret_error);
        case ACTION_MOUNT:
                return action_mount(c, a->volume, &c->plan->selections[a->selection], ret_error);
        case ACTION_WRITE_MANIFEST:
                return action_manifest(c, a->volume, a->selection, false, ret_error);
        case ACTION_LINK_MANIFEST:
                return action_manifest(c, a->volume, a->selection, true, ret_error);
        case ACTION_RELEASE:
                r = c->provider->vtable->detach(c->provider->state, v->id, c->in->node->name, ret_error);
                if (r >= 0)
                        report(c->cfg, LOG_LEVEL_WARNING, 0, "Released volume '%s': %s", v->id,
                               c->plan->eligibility[a->volume].reason);
                return r;
        default:
                return -EINVAL;
        }
}

/* A claim is compare-and-set on one volume, but a member is one per cluster: two nodes can claim two
 * volumes naming the same member at once (a provider without a transaction over both, such as EC2). So
 * right after a claim, before anything touches the device, look again: if another claim of the same
 * member came first, give ours back. Returns 1 when the claim stands, 0 when it was given back. */
static int verify_claim(ApplyContext *c, size_t i, char **ret_error) {
        const Volume *ours = &c->in->volumes[i];
        VolumeList l = {};
        int r = c->provider->vtable->list_volumes(c->provider->state, c->cfg->cluster, NULL, &l, ret_error);
        if (r < 0)
                return r;
        const Volume *mine = NULL, *first = NULL;
        for (size_t k = 0; k < l.n; k++)
                if (streq(l.items[k].id, ours->id))
                        mine = &l.items[k];
        for (size_t k = 0; mine && k < l.n; k++) {
                const Volume *o = &l.items[k];
                if (o->attachment.node && volume_same_member(mine, o) && volume_claimed_before(o, mine) &&
                    (!first || volume_claimed_before(o, first)))
                        first = o;
        }
        if (!mine || !node_identity_holds(c->in->node, &mine->attachment))
                r = PK_ECONFLICT;
        else if (first) {
                report(c->cfg, LOG_LEVEL_WARNING, 0,
                       "Volume '%s' names the member that node '%s' claimed first through volume '%s': "
                       "giving it back",
                       ours->id, first->attachment.node, first->id);
                r = c->provider->vtable->detach(c->provider->state, ours->id, c->in->node->name, ret_error);
                r = r < 0 ? r : 0;
        } else
                r = 1;
        volume_list_done(&l);
        return r;
}

/* Runs the plan's actions; a volume whose action fails is skipped for the rest of the pass. Returns 1
 * when a claim was lost (the caller re-reads and plans again), 0 otherwise. */
static void progress(const VolumesPassConfig *cfg, const char *what, const char *id) {
        char step[160];
        if (!cfg->progress)
                return;
        snprintf(step, sizeof(step), "%s %s", what, id);
        cfg->progress(cfg->report_userdata, step);
}

static VolumesErrorKind error_kind(ActionType t, bool format_failed) {
        switch (t) {
        case ACTION_WAIT_DEVICE:
                return VOLUMES_ERROR_DEVICE;
        case ACTION_FSCK:
                return VOLUMES_ERROR_FSCK;
        case ACTION_MOUNT:
                return format_failed ? VOLUMES_ERROR_FORMAT : VOLUMES_ERROR_MOUNT;
        case ACTION_WRITE_MANIFEST:
        case ACTION_LINK_MANIFEST:
                return VOLUMES_ERROR_MANIFEST;
        default:
                return VOLUMES_ERROR_CLAIM;
        }
}

static VolumesPhase action_phase(ActionType t) {
        switch (t) {
        case ACTION_CLAIM:
        case ACTION_ATTACH:
        case ACTION_RELEASE:
                return VOLUMES_PHASE_CLAIMS;
        case ACTION_WRITE_MANIFEST:
        case ACTION_LINK_MANIFEST:
                return VOLUMES_PHASE_MANIFESTS;
        default:
                return VOLUMES_PHASE_DEVICES;
        }
}

static bool action_selected(const PlanAction *a, VolumesPhase phase, const bool *only) {
        if (action_phase(a->type) != phase)
                return false;
        return !only || (a->selection != SIZE_MAX && only[a->selection]);
}

bool volumes_apply_has(const VolumesApply *va, VolumesPhase phase, size_t k) {
        const VolumesPlan *plan = va->c.plan;
        for (size_t j = 0; j < plan->n_actions; j++)
                if (plan->actions[j].selection == k && action_phase(plan->actions[j].type) == phase)
                        return true;
        return false;
}

static int apply_plan(ApplyContext *c, VolumesPhase phase, const bool *only) {
        for (size_t k = 0; k < c->plan->n_actions; k++) {
                const PlanAction *a = &c->plan->actions[k];
                const Volume *v = &c->in->volumes[a->volume];
                if (c->failed[a->volume] || !action_selected(a, phase, only))
                        continue;
                /* every action leaves the volume consistent: a stop lands between two of them */
                if (stop_requested())
                        return -ECANCELED;
                progress(c->cfg, a->type == ACTION_FSCK ? "e2fsck" : action_type_to_string(a->type), v->id);
                c->format_failed = false;
                _cleanup_free_ char *err = NULL;
                int r = run_action(c, a, &err);
                if (r >= 0 && a->type == ACTION_CLAIM) {
                        r = verify_claim(c, a->volume, &err);
                        if (r == 0)
                                return 1;
                }
                if (r == PK_ECONFLICT && a->type == ACTION_CLAIM) {
                        report(c->cfg, LOG_LEVEL_INFO, 0,
                               "Volume '%s' was claimed by another node first; choosing again", v->id);
                        return 1;
                }
                if (r == -ENOMEM || r == -ECANCELED)
                        return r;
                if (r < 0) {
                        c->failed[a->volume] = true;
                        c->result->n_errors++;
                        c->result->errors[error_kind(a->type, c->format_failed)]++;
                        report(c->cfg, LOG_LEVEL_ERROR, r, "Volume '%s': %s failed: %s", v->id,
                               action_type_to_string(a->type), err ?: pk_strerror(r));
                        continue;
                }
                c->result->n_changes++;
        }
        return 0;
}

static void report_plan_notes(const VolumesPassConfig *cfg, const VolumesInput *in, const VolumesPlan *plan,
                              VolumesPassResult *res) {
        res->n_member_conflicts = 0;
        for (size_t i = 0; i < plan->n_volumes; i++) {
                const VolumeEligibility *e = &plan->eligibility[i];
                if (e->held_through)
                        res->n_member_conflicts++;
                if (e->malformed || e->held_through)
                        report(cfg, LOG_LEVEL_WARNING, e->malformed ? PK_EMALFORMED : PK_ECONFLICT,
                               "Volume '%s' is not eligible: %s", in->volumes[i].id, e->reason);
        }
        for (size_t k = 0; k < plan->n_selections; k++) {
                const PlanSelection *s = &plan->selections[k];
                if (s->state == SELECTION_ERROR)
                        report(cfg, LOG_LEVEL_ERROR, -EBUSY, "etcd cluster '%s': %s", s->etcd_cluster,
                               s->note);
                else if (s->note)
                        report(cfg, s->state == SELECTION_WAITING ? LOG_LEVEL_INFO : LOG_LEVEL_WARNING, 0,
                               "etcd cluster '%s': %s", s->etcd_cluster, s->note);
        }
}

/* interrupted: the plan's actions did not all run (claims kept being lost), so planned work counts as
 * waiting, not ready. */
static void tally(const VolumesPlan *plan, const bool *failed, bool interrupted, VolumesPassResult *res) {
        res->n_ready = res->n_waiting = 0;
        for (size_t k = 0; k < plan->n_selections; k++) {
                const PlanSelection *s = &plan->selections[k];
                if (s->state == SELECTION_WAITING ||
                    (interrupted && s->state == SELECTION_ACTIONS && !failed[s->volume]))
                        res->n_waiting++;
                else if (s->state == SELECTION_ERROR)
                        res->n_errors++;
                else if (!failed[s->volume])
                        res->n_ready++;
        }
}

int volumes_apply_new(VolumeProvider *p, const VolumesPassConfig *cfg, const VolumesInput *in,
                      const VolumesPlan *plan, VolumesApply **ret) {
        VolumesApply *a = new0(VolumesApply, 1);
        if (!a)
                return -ENOMEM;
        a->c = (ApplyContext){
                .provider = p,
                .cfg = cfg,
                .in = in,
                .plan = plan,
                .devices = new0(char *, in->n_volumes),
                .devnums = new0(dev_t, in->n_volumes),
                .fstypes = new0(char *, in->n_volumes),
                .probed = new0(bool, in->n_volumes),
                .held = new0(int, in->n_volumes),
                .failed = new0(bool, in->n_volumes),
        };
        a->c.result = &a->c.own_result;
        if (!a->c.devices || !a->c.devnums || !a->c.fstypes || !a->c.probed || !a->c.failed || !a->c.held) {
                volumes_apply_free(a);
                return -ENOMEM;
        }
        for (size_t i = 0; i < in->n_volumes; i++)
                a->c.held[i] = -1;
        *ret = a;
        return 0;
}

VolumesApply *volumes_apply_free(VolumesApply *a) {
        if (!a)
                return NULL;
        for (size_t i = 0; i < a->c.in->n_volumes; i++) {
                free(a->c.devices ? a->c.devices[i] : NULL);
                free(a->c.fstypes ? a->c.fstypes[i] : NULL);
                if (a->c.held)
                        device_unhold(&a->c, i);
        }
        free(a->c.held);
        free(a->c.devices);
        free(a->c.fstypes);
        free(a->c.probed);
        free(a->c.devnums);
        free(a->c.failed);
        free(a);
        return NULL;
}

int volumes_apply_run(VolumesApply *a, VolumesPhase phase, const bool *only, char *const *etcd_texts) {
        a->c.etcd_texts = etcd_texts;
        return apply_plan(&a->c, phase, only);
}

void volumes_apply_finish(VolumesApply *a, bool interrupted, VolumesPassResult *ret) {
        VolumesPassResult *res = a->c.result;
        report_plan_notes(a->c.cfg, a->c.in, a->c.plan, res);
        tally(a->c.plan, a->c.failed, interrupted, res);
        *ret = *res;
}
