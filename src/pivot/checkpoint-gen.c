/* SPDX-License-Identifier: Apache-2.0 */
/* The checkpoint's generations on disk (docs/pivot.md, "The checkpoint"): a generation is written whole,
 * every file relative to its own directory, then <state>/checkpoint is pointed at it and what it replaced
 * is removed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/beneath.h"
#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "pivot/checkpoint-apply.h"
#include "pivot/checkpoint-internal.h"
#include "shared/crypto.h"

#define GEN_PREFIX   ".checkpoint."      /* a named generation: GEN_PREFIX<16 hex of the time>.<8 hex> */
#define GEN_NEW      ".checkpoint-new."  /* a generation its writer is still writing */
#define LINK_TMP     ".checkpoint-link." /* the link before it is renamed over CHECKPOINT_LINK */
#define NAME_TRIES   16
#define SWEEP_MAX    4096 /* entries of the state directory looked at: bounded */
#define GEN_NAME_MAX 64

DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir)

void gen_done(Gen *g) {
        for (size_t i = 0; i < g->n; i++) {
                if (g->files[i].secret)
                        erase_and_free(g->files[i].data, g->files[i].len);
                else
                        free(g->files[i].data);
                free(g->files[i].rel);
        }
        free(g->files);
        *g = (Gen){};
}

bool gen_has(const Gen *g, const char *rel) {
        for (size_t i = 0; i < g->n; i++)
                if (streq(g->files[i].rel, rel))
                        return true;
        return false;
}

int gen_add(Gen *g, char *rel, uint8_t *data, size_t len, mode_t mode, bool secret) {
        int r = !rel ? -ENOMEM : gen_has(g, rel) ? -EEXIST : g->n >= CHECKPOINT_FILES_MAX ? -E2BIG : 0;
        GenFile *f = r == 0 ? reallocarray(g->files, g->n + 1, sizeof(*f)) : NULL;
        if (!f) {
                if (secret && data)
                        erase_and_free(data, len);
                else
                        free(data);
                free(rel);
                return r ?: -ENOMEM;
        }
        g->files = f;
        g->files[g->n++] = (GenFile){ .rel = rel, .data = data, .len = len, .mode = mode, .secret = secret };
        return 0;
}

static int cmp_files(const void *a, const void *b) {
        return strcmp(((const GenFile *)a)->rel, ((const GenFile *)b)->rel);
}

int gen_digest(Gen *g, char ret[static 65]) {
        _cleanup_(crypto_sha256_freep) CryptoSha256 *s = NULL;
        uint8_t md[32];
        int r = crypto_sha256_new(&s);
        if (r < 0)
                return r;
        qsort_safe(g->files, g->n, sizeof(*g->files), cmp_files);
        for (size_t i = 0; i < g->n && r >= 0; i++) {
                char head[64];
                int n = snprintf(head, sizeof(head), "%c%o %zu\n", 0, (unsigned)g->files[i].mode,
                                 g->files[i].len);
                if ((r = crypto_sha256_update(s, g->files[i].rel, strlen(g->files[i].rel) + 1)) >= 0 &&
                    (r = crypto_sha256_update(s, head, (size_t)n)) >= 0 && g->files[i].len > 0)
                        r = crypto_sha256_update(s, g->files[i].data, g->files[i].len);
        }
        if (r >= 0)
                r = crypto_sha256_final(s, md);
        if (r < 0)
                return r;
        crypto_hex(md, sizeof(md), ret);
        return 0;
}

bool gen_unchanged(const char *state_dir, const char *digest) {
        _cleanup_free_ char *path = strprintf("%s/%s/digest", state_dir, CHECKPOINT_LINK), *text = NULL;
        return path && read_full_file(path, 128, &text, NULL) >= 0 && streq(text, digest);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

/* Removes a generation (ours: under the state directory, not followed through symlinks). */
static int rm_tree(const char *state_dir, const char *name) {
        _cleanup_free_ char *path = strprintf("%s/%s", state_dir, name);
        if (!path)
                return -ENOMEM;
        if (nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

static uint32_t random_u32(unsigned attempt) {
        uint32_t rnd = 0;
        if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) < 0)
                rnd = ((uint32_t)getpid() << 8) ^ attempt ^ (uint32_t)now(CLOCK_MONOTONIC);
        return rnd;
}

/* A new generation's directory, held (flock) before it has a name a sweep looks at: created under a
 * GEN_NEW name, locked, then renamed to GEN_PREFIX<time>.<random>. A sweep that took a GEN_NEW directory
 * between its creation and its lock (its writer died, as far as the sweep could tell) removed it: the
 * writer sees it unlinked and makes another. Returns the fd; *name gets the final name. */
static int gen_create(int state_fd, char name[static GEN_NAME_MAX]) {
        for (unsigned attempt = 0; attempt < NAME_TRIES; attempt++) {
                char tmp[GEN_NAME_MAX];
                struct stat st;
                snprintf(tmp, sizeof(tmp), GEN_NEW "%08x", random_u32(attempt));
                if (mkdirat(state_fd, tmp, 0700) < 0) {
                        if (errno == EEXIST)
                                continue;
                        return -errno;
                }
                _cleanup_close_ int fd =
                    openat(state_fd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0 || flock(fd, LOCK_EX) < 0 || fstat(fd, &st) < 0)
                        continue; /* removed meanwhile */
                if (st.st_nlink == 0)
                        continue;
                snprintf(name, GEN_NAME_MAX, GEN_PREFIX "%016llx.%08x",
                         (unsigned long long)now(CLOCK_REALTIME), random_u32(attempt));
                if (renameat2(state_fd, tmp, state_fd, name, RENAME_NOREPLACE) < 0) {
                        int r = -errno;
                        (void)unlinkat(state_fd, tmp, AT_REMOVEDIR);
                        if (r == -EEXIST)
                                continue;
                        return r;
                }
                return TAKE_FD(fd);
        }
        return -EEXIST;
}

/* One file or directory of the generation, opened below gen_fd one component at a time. */
static int write_one(int gen_fd, const GenFile *f) {
        if (!f->data) {
                int fd = beneath_open_dir(gen_fd, f->rel, true, f->mode);
                if (fd < 0)
                        return fd;
                safe_close(fd);
                return 0;
        }
        const char *slash = strrchr(f->rel, '/');
        if (!slash) {
                int r = beneath_write_file_atomic(gen_fd, f->rel, f->data, f->len, f->mode, false);
                return r < 0 ? r : 0;
        }
        _cleanup_free_ char *dir = strndup(f->rel, (size_t)(slash - f->rel));
        if (!dir)
                return -ENOMEM;
        _cleanup_close_ int dfd =
            beneath_open_dir(gen_fd, dir, true, f->secret || f->mode == 0700 ? 0700 : 0755);
        if (dfd < 0)
                return dfd;
        int r = beneath_write_file_atomic(dfd, slash + 1, f->data, f->len, f->mode, false);
        return r < 0 ? r : 0;
}

static int write_gen(const Gen *g, int gen_fd, const char *dir, const char *digest, char **ret_error) {
        for (size_t i = 0; i < g->n; i++) {
                int r = write_one(gen_fd, &g->files[i]);
                if (r < 0)
                        return error_setf(ret_error, r, "cannot write '%s/%s': %s", dir, g->files[i].rel,
                                          pk_strerror(r));
        }
        int r = beneath_write_file_atomic(gen_fd, "digest", digest, strlen(digest), 0644, false);
        return r < 0 ? error_setf(ret_error, r, "cannot write '%s/digest': %s", dir, pk_strerror(r)) : 0;
}

/* The link's target now ("" when there is none). */
static int link_target(int state_fd, char buf[static GEN_NAME_MAX + 1]) {
        ssize_t n = readlinkat(state_fd, CHECKPOINT_LINK, buf, GEN_NAME_MAX);
        if (n < 0) {
                buf[0] = 0;
                return errno == ENOENT ? 0 : -errno;
        }
        buf[n] = 0;
        return 0;
}

/* The generations the swap replaced: named no later than replaced (generation names sort by time), not
 * held by a writer (its lock), not the current one. A generation becomes current only through its writer,
 * which holds it until then: one found unheld and not current never becomes current again. */
static int sweep(int state_fd, const char *state_dir, const char *own, const char *replaced,
                 char **ret_error) {
        _cleanup_(closedirp) DIR *d = NULL;
        int fd = fcntl(state_fd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0 || !(d = fdopendir(fd))) {
                safe_close(fd);
                return error_setf(ret_error, -errno, "cannot read '%s': %m", state_dir);
        }
        unsigned seen = 0;
        for (struct dirent *de; (de = readdir(d)) && seen < SWEEP_MAX; seen++) {
                bool gen = startswith(de->d_name, GEN_PREFIX), fresh = startswith(de->d_name, GEN_NEW);
                if ((!gen && !fresh) || streq(de->d_name, own) ||
                    (gen && (!*replaced || strcmp(de->d_name, replaced) > 0)))
                        continue;
                _cleanup_close_ int g =
                    openat(state_fd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                char cur[GEN_NAME_MAX + 1];
                if (g < 0 || flock(g, LOCK_EX | LOCK_NB) < 0)
                        continue; /* gone, not ours, or a writer's */
                int r = link_target(state_fd, cur);
                if (r < 0)
                        return error_setf(ret_error, r, "cannot read '%s/%s': %s", state_dir,
                                          CHECKPOINT_LINK, pk_strerror(r));
                if (streq(cur, de->d_name))
                        continue;
                if ((r = rm_tree(state_dir, de->d_name)) < 0)
                        return error_setf(ret_error, r, "cannot remove the old generation '%s/%s': %s",
                                          state_dir, de->d_name, pk_strerror(r));
        }
        return 0;
}

/* Points <state>/checkpoint at the generation: a symlink under a temporary name of its own, renamed over
 * the old one; *replaced gets what it named before, *ret_linked whether the link names the generation now
 * (also when what follows the rename failed). */
static int swap_link(int state_fd, const char *state_dir, const char *gen_name,
                     char replaced[static GEN_NAME_MAX + 1], bool *ret_linked, char **ret_error) {
        struct stat st;
        if (fstatat(state_fd, CHECKPOINT_LINK, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISLNK(st.st_mode))
                return error_setf(ret_error, -EEXIST, "'%s/%s' is not a symlink to a generation: left alone",
                                  state_dir, CHECKPOINT_LINK);
        int r = link_target(state_fd, replaced);
        if (r < 0)
                return error_setf(ret_error, r, "cannot read '%s/%s': %s", state_dir, CHECKPOINT_LINK,
                                  pk_strerror(r));
        char tmp[GEN_NAME_MAX];
        r = -EEXIST;
        for (unsigned attempt = 0; attempt < NAME_TRIES && r == -EEXIST; attempt++) {
                snprintf(tmp, sizeof(tmp), LINK_TMP "%08x", random_u32(attempt));
                r = symlinkat(gen_name, state_fd, tmp) < 0 ? -errno : 0;
        }
        if (r >= 0 && renameat(state_fd, tmp, state_fd, CHECKPOINT_LINK) < 0) {
                r = -errno;
                (void)unlinkat(state_fd, tmp, 0);
        }
        *ret_linked = r >= 0;
        if (r >= 0 && fsync(state_fd) < 0)
                r = -errno;
        if (r < 0)
                return error_setf(ret_error, r, "cannot point '%s/%s' at '%s': %s", state_dir,
                                  CHECKPOINT_LINK, gen_name, pk_strerror(r));
        return 0;
}

int gen_commit(const Gen *g, const char *state_dir, const char *digest, char **ret_dir, char **ret_error) {
        _cleanup_close_ int state_fd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), gen_fd = -EBADF;
        char name[GEN_NAME_MAX], replaced[GEN_NAME_MAX + 1];
        if (state_fd < 0)
                return error_setf(ret_error, -errno, "cannot open '%s': %m", state_dir);
        gen_fd = gen_create(state_fd, name);
        if (gen_fd < 0)
                return error_setf(ret_error, gen_fd, "cannot create a generation in '%s': %s", state_dir,
                                  pk_strerror(gen_fd));
        _cleanup_free_ char *dir = strprintf("%s/%s", state_dir, name);
        if (!dir) {
                (void)rm_tree(state_dir, name);
                return -ENOMEM;
        }
        bool linked = false;
        int r = write_gen(g, gen_fd, dir, digest, ret_error);
        if (r >= 0)
                r = swap_link(state_fd, state_dir, name, replaced, &linked, ret_error);
        if (r < 0) {
                /* never a half checkpoint: the previous one stays current; one the link names stays */
                if (!linked)
                        (void)rm_tree(state_dir, name);
                return r;
        }
        /* the new generation is current: a failed sweep leaves garbage, which the next one removes */
        r = sweep(state_fd, state_dir, name, replaced, ret_error);
        if (r < 0)
                return r;
        if (ret_dir)
                *ret_dir = TAKE_PTR(dir);
        return 0;
}
