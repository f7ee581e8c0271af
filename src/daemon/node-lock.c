/* SPDX-License-Identifier: Apache-2.0 */
#include "daemon/node-lock.h"

#include <errno.h>
#include <sys/stat.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/lock-file.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "pivot/pivot-record.h"

int node_lock_take(const char *state_dir, usec_t wait, int *ret_fd, char **ret_error) {
        const char *dir = state_dir ?: STATE_DIR_DEFAULT;
        _cleanup_free_ char *path = strjoin(dir, "/", NODE_LOCK_FILE);
        pid_t holder = 0;
        if (!path)
                return -ENOMEM;
        int r = mkdir_p(dir, 0700);
        if (r < 0)
                return error_setf(ret_error, r, "cannot create the state directory '%s': %s", dir,
                                  pk_strerror(r));
        r = lock_file_take(path, wait, ret_fd, &holder);
        if (r == -EBUSY && holder > 0)
                return error_setf(ret_error, r,
                                  "another protokube (pid %d) holds the node's state ('%s'); "
                                  "waited %.0f s",
                                  (int)holder, path, (double)wait / USEC_PER_SEC);
        if (r == -EBUSY)
                return error_setf(ret_error, r,
                                  "another protokube holds the node's state ('%s'); waited %.0f s", path,
                                  (double)wait / USEC_PER_SEC);
        if (r < 0)
                return error_setf(ret_error, r, "cannot lock '%s': %s", path, pk_strerror(r));
        return 0;
}
