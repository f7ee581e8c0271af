/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Writing into kubelet's manifest directory: atomic (dotfile temp + fsync + rename: kubelet ignores
 * dotfiles), change-only (an unchanged file keeps its mtime), and only files we name (we never
 * list-and-delete). */

/* Writes text to path (mode 0644). Returns 1 if written, 0 if it already held exactly these bytes. */
int manifest_write(const char *path, const char *text);
/* The same for a file a manifest names (a component's configuration file), with its directory made first
 * (0755). */
int manifest_write_file(const char *path, const char *text);

/* Makes link_path a symlink to target, replacing an existing symlink atomically (symlink to a dotfile temp,
 * then rename). Refuses (-EEXIST) to replace anything that is not a symlink. Returns 1 if changed, 0 if the
 * link already pointed at target. */
int manifest_symlink(const char *link_path, const char *target);

/* After the file a link points at was rewritten in place (on the volume, outside the manifest directory):
 * replaces the link with an identical one, so that kubelet, which watches the directory with inotify and
 * otherwise reads it again only every --file-check-frequency (20 s), sees the change at once. Returns 1
 * when renewed, 0 when link_path is not a link to target (nothing done), -EEXIST for a non-symlink. */
int manifest_symlink_renew(const char *link_path, const char *target);
