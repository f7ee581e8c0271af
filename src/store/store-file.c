/* SPDX-License-Identifier: Apache-2.0 */
/* The directory store (file:///DIR): each object is a file below DIR, named by its key. Every component
 * below DIR is opened without following symlinks (basic/beneath.h): the directory may be a shared mount that
 * other machines write, so a symlink planted there must not redirect a read or a write. Writes are a temp
 * file in the object's directory, fsynced, then renamed (put) or hard-linked (put-if-absent) into place, so
 * an object appears complete or not at all. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/beneath.h"
#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "store/store-internal.h"

#define STORE_DIR_MODE   0755
#define STORE_LIST_DEPTH 32

typedef struct FileStore {
        int fd; /* DIR */
        char *path;
} FileStore;

static mode_t object_mode(StoreFlags flags) {
        return flags & STORE_PRIVATE ? 0600 : 0644;
}

/* Why a path below the store did not open, for the message. */
static char *file_cause(int r, const char *what) {
        if (r == -ELOOP)
                return strprintf("%s: a symlink in the store (never followed)", what);
        if (r == -EBADFD)
                return strprintf("%s: not a regular file", what);
        return strprintf("%s: %s", what, pk_strerror(r));
}

static int file_open(Store *s, const char *location, char **ret_cause) {
        /* file:///abs/dir: location is "/abs/dir" */
        if (location[0] != '/' || strstr(location, "/../") || endswith(location, "/..") ||
            strstr(location, "//")) {
                *ret_cause = strdup("expected file:///ABSOLUTE/DIR (no '..', no empty segments)");
                return -EINVAL;
        }
        /* The store's own path is the operator's choice and may be a symlink; below it, nothing is followed.
         */
        _cleanup_close_ int fd = open(location, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int r = fd < 0 ? -errno : 0;
        if (r >= 0 && faccessat(fd, ".", R_OK | W_OK | X_OK, AT_EACCESS) < 0)
                r = -errno;
        if (r < 0) {
                *ret_cause =
                    strprintf("directory '%s': %s%s", location, pk_strerror(r),
                              r == -ENOENT ? " (a directory store is not created: make it first)" : "");
                return r;
        }
        FileStore *f = new0(FileStore, 1);
        if (!f)
                return -ENOMEM;
        f->path = strdup(location);
        if (!f->path) {
                free(f);
                return -ENOMEM;
        }
        f->fd = TAKE_FD(fd);
        s->data = f;
        return 0;
}

static void file_free(Store *s) {
        FileStore *f = s->data;
        if (!f)
                return;
        safe_close(f->fd);
        free(f->path);
        free(f);
}

/* The fd of the key's directory (created when create), and the key's last component. */
static int key_dir_open(FileStore *f, const char *key, bool create, const char **ret_name,
                        char **ret_cause) {
        _cleanup_free_ char *dir = NULL;
        int r = store_key_split(key, &dir, ret_name);
        if (r < 0)
                return r;
        if (isempty(dir)) {
                r = fcntl(f->fd, F_DUPFD_CLOEXEC, 3);
                if (r < 0)
                        r = -errno;
        } else
                r = beneath_open_dir(f->fd, dir, create, STORE_DIR_MODE);
        if (r < 0 && r != -ENOENT)
                *ret_cause = file_cause(r, isempty(dir) ? "the store's directory" : dir);
        return r;
}

static int file_get(Store *s, const char *key, char **ret_data, size_t *ret_len, char **ret_cause) {
        const char *name;
        _cleanup_close_ int dfd = key_dir_open(s->data, key, false, &name, ret_cause);
        if (dfd < 0)
                return dfd;
        /* any object may be a private key (the keystore's are): read it without leaving copies behind */
        int r = beneath_read_file_secret(dfd, name, STORE_OBJECT_MAX, ret_data, ret_len);
        if (r < 0 && r != -ENOENT)
                *ret_cause = file_cause(r, name);
        return r;
}

/* A dotfile beside name holding data, fsynced: what put-if-absent links into place. */
static int temp_write(int dfd, const char *name, const void *data, size_t len, mode_t mode,
                      char tmp[static 300]) {
        _cleanup_close_ int fd = -EBADF;
        if (strlen(name) > 200)
                return -ENAMETOOLONG;
        for (unsigned attempt = 0; attempt < 16 && fd < 0; attempt++) {
                uint64_t rnd = 0;
                if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) < 0)
                        rnd = ((uint64_t)getpid() << 16) ^ attempt;
                snprintf(tmp, 300, ".%s.%016llx", name, (unsigned long long)rnd);
                fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
                if (fd < 0 && errno != EEXIST)
                        return -errno;
        }
        if (fd < 0)
                return -EEXIST;
        int r = loop_write(fd, data, len);
        if (r >= 0 && fchmod(fd, mode) < 0) /* the umask is not ours to inherit */
                r = -errno;
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        if (r < 0)
                (void)unlinkat(dfd, tmp, 0);
        return r;
}

/* linkat() fails with EEXIST when name exists (whatever it is, a dangling symlink included), so exactly one
 * of several writers wins and the object it links is already complete. Filesystems without hard links get
 * renameat2(RENAME_NOREPLACE), which is as atomic. */
static int link_noreplace(int dfd, const char *tmp, const char *name) {
        if (linkat(dfd, tmp, dfd, name, 0) >= 0)
                return 0;
        if (errno != EPERM && errno != EOPNOTSUPP && errno != ENOSYS)
                return -errno;
        if (renameat2(dfd, tmp, dfd, name, RENAME_NOREPLACE) < 0)
                return -errno;
        return 0;
}

static int put_if_absent_at(int dfd, const char *name, const void *data, size_t len, mode_t mode) {
        char tmp[300];
        int r = temp_write(dfd, name, data, len, mode, tmp);
        if (r < 0)
                return r;
        r = link_noreplace(dfd, tmp, name);
        (void)unlinkat(dfd, tmp, 0); /* after a rename it is gone already */
        if (r < 0)
                return r;
        return fsync(dfd) < 0 ? -errno : 0;
}

static int file_put(Store *s, const char *key, const void *data, size_t len, StoreFlags flags,
                    bool if_absent, char **ret_cause) {
        const char *name;
        _cleanup_close_ int dfd = key_dir_open(s->data, key, true, &name, ret_cause);
        int r;
        if (dfd < 0)
                return dfd;
        if (if_absent)
                r = put_if_absent_at(dfd, name, data, len, object_mode(flags));
        else
                r = beneath_write_file_atomic(dfd, name, data, len, object_mode(flags), false);
        if (r < 0 && r != -EEXIST)
                *ret_cause = file_cause(r, name);
        return r < 0 ? r : 0;
}

static int file_delete(Store *s, const char *key, char **ret_cause) {
        const char *name;
        _cleanup_close_ int dfd = key_dir_open(s->data, key, false, &name, ret_cause);
        if (dfd == -ENOENT)
                return 0;
        if (dfd < 0)
                return dfd;
        if (unlinkat(dfd, name, 0) < 0) {
                if (errno == ENOENT)
                        return 0;
                int r = -errno;
                *ret_cause = file_cause(r, name);
                return r;
        }
        return fsync(dfd) < 0 ? -errno : 0;
}

typedef struct ListWalk {
        const char *prefix;
        bool versions;
        char **keys;
        size_t n;
} ListWalk;

/* Regular files below dfd (rel: their key prefix, "" at the top); symlinks, dotfiles (temporaries) and
 * anything else are skipped. Takes dfd. */
static int list_walk(ListWalk *w, int dfd, const char *rel, unsigned depth) {
        DIR *d = fdopendir(dfd);
        int r = 0;
        if (!d) {
                safe_close(dfd);
                return -errno;
        }
        for (struct dirent *de; r >= 0 && (errno = 0, de = readdir(d));) {
                if (de->d_name[0] == '.')
                        continue;
                struct stat st;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        /* gone meanwhile; any other error fails the listing rather than hide objects */
                        r = errno == ENOENT ? 0 : -errno;
                        continue;
                }
                _cleanup_free_ char *key = isempty(rel) ? strdup(de->d_name) : strjoin(rel, "/", de->d_name);
                if (!key) {
                        r = -ENOMEM;
                        break;
                }
                if (S_ISDIR(st.st_mode) && depth < STORE_LIST_DEPTH) {
                        int sub = beneath_open_dir(dirfd(d), de->d_name, false, 0);
                        r = sub >= 0 ? list_walk(w, sub, key, depth + 1) : sub == -ENOENT ? 0 : sub;
                } else if (S_ISREG(st.st_mode) && store_key_valid(key) && startswith(key, w->prefix)) {
                        if (w->n >= STORE_LIST_MAX)
                                r = -E2BIG;
                        else {
                                /* an object is replaced by renaming a new file over it: a new inode */
                                char *k =
                                    !w->versions
                                        ? TAKE_PTR(key)
                                        : strprintf("%s\t%llx:%llx:%lld:%lld.%09ld:%lld.%09ld", key,
                                                    (unsigned long long)st.st_dev,
                                                    (unsigned long long)st.st_ino, (long long)st.st_size,
                                                    (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
                                                    (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
                                if (!k) {
                                        r = -ENOMEM;
                                        break;
                                }
                                r = strv_push(&w->keys, k);
                                if (r < 0)
                                        free(k);
                                w->n += r >= 0;
                        }
                }
        }
        if (r >= 0 && errno != 0)
                r = -errno;
        closedir(d);
        return r;
}

/* The directory dir of the store ("": the store's own), for a listing: its fd, 0 when it is absent (an
 * empty listing), < 0 with *ret_cause naming it. */
static int open_list_dir(FileStore *f, const char *dir, int *ret_fd, char **ret_cause) {
        int dfd = isempty(dir) ? fcntl(f->fd, F_DUPFD_CLOEXEC, 3) : beneath_open_dir(f->fd, dir, false, 0);
        if (dfd < 0 && isempty(dir))
                dfd = -errno;
        if (dfd == -ENOENT)
                return 0;
        if (dfd < 0) {
                *ret_cause = file_cause(dfd, isempty(dir) ? "the store's directory" : dir);
                return dfd;
        }
        *ret_fd = dfd;
        return 1;
}

static int file_list(Store *s, const char *prefix, bool versions, char ***ret_keys, char **ret_cause) {
        ListWalk w = { .prefix = prefix, .versions = versions };
        const char *slash = strrchr(prefix, '/');
        _cleanup_free_ char *dir = slash ? strndup(prefix, (size_t)(slash - prefix)) : strdup("");
        int dfd = -1;
        if (!dir)
                return -ENOMEM;
        /* Only the directory the prefix names is walked, not the whole store. */
        int r = open_list_dir(s->data, dir, &dfd, ret_cause);
        if (r <= 0) {
                *ret_keys = NULL;
                return r;
        }
        r = list_walk(&w, dfd, dir, 0);
        if (r < 0) {
                strv_free(w.keys);
                *ret_cause = r == -E2BIG ? strprintf("more than %u objects", STORE_LIST_MAX)
                                         : file_cause(r, isempty(dir) ? "the store's directory" : dir);
                return r;
        }
        *ret_keys = w.keys;
        return 0;
}

/* Whether the directory (takes dfd) holds an object at any depth: a regular file that is no temporary. */
static int holds_object(int dfd, unsigned depth) {
        DIR *d = fdopendir(dfd);
        int r = 0;
        if (!d) {
                safe_close(dfd);
                return -errno;
        }
        for (struct dirent *de; r == 0 && (errno = 0, de = readdir(d));) {
                struct stat st;
                if (de->d_name[0] == '.')
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        r = errno == ENOENT ? 0 : -errno; /* gone meanwhile, or an error to say */
                else if (S_ISREG(st.st_mode) && store_key_valid(de->d_name))
                        r = 1;
                else if (S_ISDIR(st.st_mode) && depth < STORE_LIST_DEPTH) {
                        int sub = beneath_open_dir(dirfd(d), de->d_name, false, 0);
                        r = sub >= 0 ? holds_object(sub, depth + 1) : sub == -ENOENT ? 0 : sub;
                }
        }
        if (r == 0 && errno != 0)
                r = -errno;
        closedir(d);
        return r;
}

/* The subdirectories of dfd (takes it) that hold an object, by name. */
static int dirs_walk(int dfd, char ***names) {
        DIR *d = fdopendir(dfd);
        size_t n = 0;
        int r = 0;
        if (!d) {
                safe_close(dfd);
                return -errno;
        }
        /* only "gone meanwhile" is skipped: an entry that cannot be examined fails the listing, which
         * would otherwise say a directory (a backup) is not there */
        for (struct dirent *de; r >= 0 && (errno = 0, de = readdir(d));) {
                struct stat st;
                if (de->d_name[0] == '.' || !store_key_valid(de->d_name))
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        r = errno == ENOENT ? 0 : -errno;
                        continue;
                }
                if (!S_ISDIR(st.st_mode))
                        continue;
                int sub = beneath_open_dir(dirfd(d), de->d_name, false, 0);
                r = sub >= 0 ? holds_object(sub, 1) : sub == -ENOENT ? 0 : sub;
                if (r <= 0)
                        continue;
                r = n >= STORE_LIST_MAX ? -E2BIG : strv_extend(names, de->d_name);
                n++;
        }
        if (r >= 0 && errno != 0)
                r = -errno;
        closedir(d);
        return r < 0 ? r : 0;
}

static int file_list_dirs(Store *s, const char *prefix, char ***ret_names, char **ret_cause) {
        _cleanup_free_ char *dir = strndup(prefix, isempty(prefix) ? 0 : strlen(prefix) - 1);
        char **names = NULL;
        int dfd = -1;
        if (!dir)
                return -ENOMEM;
        int r = open_list_dir(s->data, dir, &dfd, ret_cause);
        if (r <= 0) {
                *ret_names = NULL;
                return r;
        }
        r = dirs_walk(dfd, &names);
        if (r < 0) {
                strv_free(names);
                *ret_cause = r == -E2BIG ? strprintf("more than %u directories", STORE_LIST_MAX)
                                         : file_cause(r, isempty(dir) ? "the store's directory" : dir);
                return r;
        }
        *ret_names = names;
        return 0;
}

const StoreOps store_file_ops = {
        .scheme = "file://",
        .open = file_open,
        .free = file_free,
        .get = file_get,
        .put = file_put,
        .list = file_list,
        .delete = file_delete,
        .list_dirs = file_list_dirs,
};
