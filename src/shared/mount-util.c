/* SPDX-License-Identifier: Apache-2.0 */
#include "shared/mount-util.h"

#include <errno.h>
#include <libmount.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#include "basic/macro.h"
#include "basic/path-util.h"
#include "basic/string-util.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct libmnt_table *, mnt_free_table)
DEFINE_TRIVIAL_CLEANUP_FUNC(struct libmnt_context *, mnt_free_context)

int mount_find_target(const char *target, dev_t *ret_devnum, char **ret_source) {
        _cleanup_(mnt_free_tablep) struct libmnt_table *tb = mnt_new_table();
        _cleanup_free_ char *canonical = NULL;
        if (!tb)
                return -ENOMEM;
        /* mountinfo names the mount point as the kernel resolved it: a path through a symlink would never
         * match, and a mounted volume would look unmounted. */
        int r = path_canonicalize(target, &canonical);
        if (r < 0)
                return r;
        r = mnt_table_parse_file(tb, "/proc/self/mountinfo");
        if (r < 0)
                return r;
        /* MNT_ITER_BACKWARD: the last mount on a path is the one visible there. */
        struct libmnt_fs *fs = mnt_table_find_target(tb, canonical, MNT_ITER_BACKWARD);
        if (!fs)
                return 0;
        if (ret_source) {
                const char *src = mnt_fs_get_source(fs);
                char *s = strdup(strempty(src));
                if (!s)
                        return -ENOMEM;
                *ret_source = s;
        }
        if (ret_devnum)
                *ret_devnum = mnt_fs_get_devno(fs);
        return 1;
}

int mount_block_device(const char *dev, const char *target, const char *fstype, const char *options,
                       char **ret_message) {
        _cleanup_(mnt_free_contextp) struct libmnt_context *cxt = mnt_new_context();
        int r;

        if (!cxt)
                return -ENOMEM;
        /* No /etc/fstab lookups and no mtab/utab writes: we say exactly what to mount. */
        if (mnt_context_disable_helpers(cxt, 1) < 0 || mnt_context_disable_mtab(cxt, 1) < 0 ||
            mnt_context_set_source(cxt, dev) < 0 || mnt_context_set_target(cxt, target) < 0 ||
            (fstype && mnt_context_set_fstype(cxt, fstype) < 0) ||
            (options && mnt_context_set_options(cxt, options) < 0))
                return -ENOMEM;
        r = mnt_context_mount(cxt);
        if (r == 0 && mnt_context_get_status(cxt) == 1)
                return 0;
        int err = mnt_context_get_syscall_errno(cxt);
        if (ret_message) {
                char buf[512] = "";
                (void)mnt_context_get_excode(cxt, r, buf, sizeof(buf));
                *ret_message = strdup(buf[0] ? buf : "mount failed");
        }
        if (err > 0)
                return -err;
        return r < 0 && r > -4096 ? r : -EINVAL;
}

int mount_umount(const char *target) {
        int r = mount_find_target(target, NULL, NULL);
        if (r <= 0)
                return r;
        if (umount2(target, UMOUNT_NOFOLLOW) < 0)
                return -errno;
        return 1;
}
