/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Paths as the kernel sees them. */

/* The absolute path with every symlink, "." and ".." resolved (realpath(3)); a tail that does not exist
 * yet is kept as written, below the canonical form of its longest existing prefix ("/link/new/x" ->
 * "/real/new/x"). Mountinfo names mount points canonically, so every path compared with it goes through
 * here once. Caller frees. -errno on error (a relative path is resolved against the working directory). */
int path_canonicalize(const char *path, char **ret);
