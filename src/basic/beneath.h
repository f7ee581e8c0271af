/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Files below a directory whose contents we do not trust (an etcd volume: a restored snapshot, a disk
 * moved from another machine). Every component is opened relative to its parent with O_NOFOLLOW, so a
 * symlink placed on the volume can never redirect a read or a write outside it; only regular files are
 * read, opened non-blocking, so a FIFO or a device node there cannot block the daemon or be read from. */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Opens the directory rel ("k8s.io/manifests", relative, no "..") below dirfd, one component at a time,
 * never following a symlink; with create, missing components are made with mode. Returns the fd (caller
 * closes); -ELOOP/-ENOTDIR when a component is a symlink or not a directory, -EINVAL for a bad rel. */
int beneath_open_dir(int dirfd, const char *rel, bool create, mode_t mode);

/* Reads the regular file name (one component) in dirfd, at most max bytes. -ENOENT when absent,
 * -ELOOP for a symlink, -EBADFD for anything but a regular file (FIFO, device, socket, directory). */
int beneath_read_file(int dirfd, const char *name, size_t max, char **ret, size_t *ret_len);
/* The same for a file that may hold a secret: no partial copy is left in freed memory. */
int beneath_read_file_secret(int dirfd, const char *name, size_t max, char **ret, size_t *ret_len);

/* Writes data to name in dirfd atomically (a dotfile temp created O_EXCL|O_NOFOLLOW, fsync, renameat over
 * name, fsync dirfd). Whatever name was (a symlink, a FIFO) is replaced, never followed; a directory there
 * is an error. With only_if_changed, a regular file already holding exactly these bytes and mode is left
 * alone. Returns 1 if written, 0 if unchanged. */
int beneath_write_file_atomic(int dirfd, const char *name, const void *data, size_t len, mode_t mode,
                              bool only_if_changed);
