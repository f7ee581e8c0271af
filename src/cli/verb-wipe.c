/* SPDX-License-Identifier: Apache-2.0 */
/* protokube wipe DEVICE --yes-destroy-data: the only way to make a device that holds something blank again
 * (docs/volumes.md, "Provably blank"). A pass never does this: it formats only devices proven blank, and a
 * device with data it does not recognise is the operator's to recover or to wipe, by name. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/errors.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "cli/cli.h"
#include "shared/blockdev.h"
#include "shared/spawn.h"

#define WIPEFS_TIMEOUT    (60 * USEC_PER_SEC)
#define WIPEFS_OUTPUT_MAX (16U * 1024U)
#define REOPEN_TIMEOUT    (2 * USEC_PER_SEC) /* wipefs has just closed it */

/* O_EXCL: refuses a device that is mounted (here or in another mount namespace) or held by md/dm/mkfs. */
static int open_unused(const char *dev, dev_t devnum, usec_t timeout) {
        int fd = blockdev_open_exclusive_flags(dev, O_RDWR, timeout);
        if (fd == -EBUSY) {
                _cleanup_free_ char *users = blockdev_describe_users(devnum);
                return log_error_errno(fd, "Not wiping '%s': the device is in use (%s)", dev,
                                       users ?: "by nothing visible from here");
        }
        if (fd < 0)
                return log_error_errno(fd, "Not wiping '%s': cannot open it exclusively: %m", dev);
        return fd;
}

/* wipefs -a erases every signature libblkid knows, wherever it lies (a GPT's backup header, md at the
 * end); what it erased goes to the log at warning level. */
static int run_wipefs(const char *dev) {
        char *argv[] = { (char *)"wipefs", (char *)"-a", (char *)dev, NULL };
        _cleanup_strv_free_ char **lines = NULL;
        SpawnResult res = {};
        int r = spawn_run(argv, WIPEFS_TIMEOUT, WIPEFS_OUTPUT_MAX, &res);
        if (r < 0 && r != PK_ETIMEOUT)
                return log_error_errno(r, "Failed to run wipefs -a '%s': %m", dev);
        if (res.output && strv_split(res.output, "\n", &lines) >= 0)
                STRV_FOREACH (l, lines)
                        log_warning("wipefs: %s", *l);
        int status = res.exit_status;
        spawn_result_done(&res);
        if (r < 0)
                return log_error_errno(r, "wipefs -a '%s' did not finish in time", dev);
        if (status != 0)
                return log_error_errno(PK_ECHILD, "wipefs -a '%s' exited %d", dev, status);
        return 0;
}

static int wipe(const char *dev) {
        _cleanup_free_ char *what = NULL;
        uint64_t first = 0, bytes = 0;
        dev_t devnum;
        int r = blockdev_get_devnum(dev, &devnum);
        if (r == -ENOTBLK)
                return log_error_errno(r, "Not wiping '%s': not a block device", dev);
        if (r < 0)
                return log_error_errno(r, "Not wiping '%s': %m", dev);
        _cleanup_close_ int fd = open_unused(dev, devnum, 0);
        if (fd < 0)
                return fd;
        /* what was there, for the log */
        r = blockdev_probe_signature_fd(fd, &what);
        int z = r >= 0 ? blockdev_prove_zero(fd, &first) : 0;
        if (r < 0 || z < 0)
                return log_error_errno(r < 0 ? r : z, "Failed to read '%s': %m", dev);
        fd = safe_close(fd); /* wipefs opens it O_EXCL itself */
        r = run_wipefs(dev);
        if (r < 0)
                return r;
        fd = open_unused(dev, devnum, REOPEN_TIMEOUT);
        if (fd < 0)
                return fd;
        r = blockdev_zero_fill(fd, &bytes);
        if (r < 0)
                return log_error_errno(r, "Failed to write zeros to '%s': %m", dev);
        r = blockdev_prove_zero(fd, &first);
        if (r != 0)
                return log_error_errno(r < 0 ? r : -EIO, "'%s' does not read as zeros after wiping it", dev);
        log_warning("Wiped '%s' (before: %s%s%s): wipefs -a, then zeroed %" PRIu64
                    " KiB: the first and last MiB, %u samples and the ext2/3/4 backup superblock locations",
                    dev, what ? "a '" : "", what ?: (z > 0 ? "data without a signature" : "only zeros"),
                    what ? "' signature" : "", bytes / 1024, BLOCKDEV_ZERO_SAMPLES);
        return 0;
}

static bool arg_yes_destroy_data;

static int parse_yes(const CliOption *o, CliContext *ctx, const char *value, const char *source) {
        arg_yes_destroy_data = true;
        return 0;
}

const CliOption verb_wipe_options[] = {
        { .name = "yes-destroy-data",
          .help = "confirm that everything on DEVICE is to be destroyed (required)",
          .parse = parse_yes },
        {},
};

int verb_wipe(CliContext *ctx, char **args) {
        const char *dev = args[0];
        if (!arg_yes_destroy_data)
                return cli_usage_error("wipe",
                                       "refusing to wipe '%s' without --yes-destroy-data: it destroys "
                                       "everything on the device",
                                       dev);
        return wipe(dev) < 0 ? EXIT_ERROR : EXIT_SUCCESS;
}
