/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/path-util.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/string-util.h"

int path_canonicalize(const char *path, char **ret) {
        _cleanup_free_ char *head = NULL, *tail = NULL;

        if (isempty(path))
                return -EINVAL;
        char *full = realpath(path, NULL);
        if (full) {
                *ret = full;
                return 0;
        }
        if (errno != ENOENT)
                return -errno;
        /* Split off the last component and resolve what is above it. */
        const char *slash = strrchr(path, '/');
        if (!slash)
                head = strdup(".");
        else if (slash == path)
                head = strdup("/");
        else
                head = strndup(path, (size_t)(slash - path));
        tail = strdup(slash ? slash + 1 : path);
        if (!head || !tail)
                return -ENOMEM;
        if (isempty(tail) || streq(tail, ".") || streq(tail, ".."))
                /* "/missing/" or "/missing/..": resolving needs what does not exist */
                return isempty(tail) ? path_canonicalize(head, ret) : -ENOENT;
        _cleanup_free_ char *up = NULL;
        int r = path_canonicalize(head, &up);
        if (r < 0)
                return r;
        char *joined = streq(up, "/") ? strjoin("/", tail) : strjoin(up, "/", tail);
        if (!joined)
                return -ENOMEM;
        *ret = joined;
        return 0;
}
