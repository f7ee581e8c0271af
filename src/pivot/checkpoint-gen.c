/* SPDX-License-Identifier: Apache-2.0 */
/* The checkpoint's generations on disk (docs/pivot.md, "The checkpoint"): a generation is written whole,
 * every file relative to its own directory, then <state>/checkpoint is pointed at it and what it replaced
 * is removed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/beneath.h"
#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/generation.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "pivot/checkpoint-apply.h"
#include "pivot/checkpoint-internal.h"
#include "shared/crypto.h"

#define GEN_PREFIX ".checkpoint."     /* a named generation: GEN_PREFIX<16 hex of the time>.<8 hex> */
#define GEN_NEW    ".checkpoint-new." /* a generation its writer is still writing */

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

/* Points <state>/checkpoint at the generation (basic/fileio.h's symlink_replace_at: a temporary link of its
 * own renamed over the old one); *replaced gets what it named before ("" when nothing), *ret_linked whether
 * the link names the generation now (also when the fsync after it failed). */
static int swap_link(int state_fd, const char *state_dir, const char *gen_name,
                     char replaced[static GENERATION_NAME_MAX], bool *ret_linked, char **ret_error) {
        _cleanup_free_ char *old = NULL;
        struct stat st;
        if (fstatat(state_fd, CHECKPOINT_LINK, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISLNK(st.st_mode))
                return error_setf(ret_error, -EEXIST, "'%s/%s' is not a symlink to a generation: left alone",
                                  state_dir, CHECKPOINT_LINK);
        int r = symlink_replace_at(state_fd, gen_name, CHECKPOINT_LINK, &old);
        *ret_linked = r >= 0;
        if (r >= 0 && fsync(state_fd) < 0)
                r = -errno;
        if (r < 0)
                return error_setf(ret_error, r, "cannot point '%s/%s' at '%s': %s", state_dir,
                                  CHECKPOINT_LINK, gen_name, pk_strerror(r));
        snprintf(replaced, GENERATION_NAME_MAX, "%s", strempty(old));
        return 0;
}

int gen_commit(const Gen *g, const char *state_dir, const char *digest, char **ret_dir, char **ret_error) {
        _cleanup_close_ int state_fd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), gen_fd = -EBADF;
        char name[GENERATION_NAME_MAX], replaced[GENERATION_NAME_MAX];
        if (state_fd < 0)
                return error_setf(ret_error, -errno, "cannot open '%s': %m", state_dir);
        gen_fd = generation_create(state_fd, GEN_PREFIX, GEN_NEW, 0700, name);
        if (gen_fd < 0)
                return error_setf(ret_error, gen_fd, "cannot create a generation in '%s': %s", state_dir,
                                  pk_strerror(gen_fd));
        _cleanup_free_ char *dir = strprintf("%s/%s", state_dir, name);
        if (!dir) {
                (void)rm_rf_at(state_fd, name);
                return -ENOMEM;
        }
        bool linked = false;
        int r = write_gen(g, gen_fd, dir, digest, ret_error);
        if (r >= 0)
                r = swap_link(state_fd, state_dir, name, replaced, &linked, ret_error);
        if (r < 0) {
                /* never a half checkpoint: the previous one stays current; one the link names stays */
                if (!linked)
                        (void)rm_rf_at(state_fd, name);
                return r;
        }
        gen_fd = safe_close(gen_fd);
        /* the new generation is current: a failed sweep leaves garbage, which the next one removes */
        r = generation_sweep(state_fd, CHECKPOINT_LINK, GEN_PREFIX, GEN_NEW, name, replaced);
        if (r < 0)
                return error_setf(ret_error, r, "cannot remove the old generations in '%s': %s", state_dir,
                                  pk_strerror(r));
        if (ret_dir)
                *ret_dir = TAKE_PTR(dir);
        return 0;
}
