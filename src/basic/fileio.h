/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Reads the whole file into a NUL-terminated buffer (caller frees). -EFBIG past max bytes. */
int read_full_file(const char *path, size_t max, char **ret, size_t *ret_len);
int read_full_fd(int fd, size_t max, char **ret, size_t *ret_len);
/* The same for files that hold a secret: no partial copy is left in freed memory, on success or failure.
 * Erase *ret (erase_and_free) when done. */
int read_full_file_secret(const char *path, size_t max, char **ret, size_t *ret_len);
int read_full_fd_secret(int fd, size_t max, char **ret, size_t *ret_len);

/* Writes data to path atomically: a dotfile temp in the same directory (".<name>.XXXXXX", which kubelet
 * ignores), fsync, rename over path, fsync the directory. With only_if_changed, a file that already holds
 * exactly these bytes and mode is not touched (mtime kept). Returns 1 if written, 0 if unchanged. */
int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode, int only_if_changed);

/* Writes all of buf to fd, retrying on EINTR and short writes (at offset, for loop_pwrite). */
int loop_write(int fd, const void *buf, size_t len);
int loop_pwrite(int fd, const void *buf, size_t len, size_t offset);

/* Points the symlink link (one name in dfd) at target, atomically: a new symlink under a unique temporary
 * name (".<link>.tmp-<16 hex>", created exclusively, so two writers never share one) renamed over link.
 * Readers see the old target or the new one, never no link. With ret_old, the target link had before
 * (NULL when it was absent or not a symlink; caller frees). Returns 1 if link changed, 0 if it already
 * named target. The directory is not fsynced: the caller does, once for all its changes. */
int symlink_replace_at(int dfd, const char *target, const char *link, char **ret_old);
/* The same, replacing the link with a new entry even when it names target already: a watcher of the
 * directory (kubelet's file source) sees it change. Returns 1. */
int symlink_renew_at(int dfd, const char *target, const char *link);

/* Removes name in dfd and, if it is a directory, everything below it (rm -rf), never following a symlink
 * (a symlink is removed, not its target). Bounded: at most 32 levels and 65536 entries; past that -E2BIG
 * and what was removed stays removed. 0 when name was absent. */
int rm_rf_at(int dfd, const char *name);

/* Whether path is a directory: 1 yes, 0 absent (ENOENT only), -ENOTDIR when it is something else, -errno
 * when it cannot be looked at (EIO, ELOOP, EACCES...): an error is never taken for absence. */
int dir_present(const char *path);
/* The same for a regular file: 1, 0 when absent, -EBADFD when it is something else, -errno. */
int file_present(const char *path);

/* mkdir -p with mode for each created component. */
int mkdir_p(const char *path, mode_t mode);

/* fsync the directory containing path. */
int fsync_parent_dir(const char *path);
