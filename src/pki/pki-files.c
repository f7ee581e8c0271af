/* SPDX-License-Identifier: Apache-2.0 */
/* Why a symlink swap: a TLS server loads its certificate and key from two paths. Replacing the two files
 * one after the other leaves a moment where the new certificate sits next to the old key (or the reverse),
 * and a component that restarts or reloads in that moment fails every handshake until the next reload.
 * With both files in a generation directory and one symlink naming the current generation, rename(2) of
 * that symlink switches both paths at once: at every instant DIR/NAME.crt and DIR/NAME.key resolve into
 * the same generation (the layout Kubernetes' AtomicWriter uses for secret volumes). A reader that opens
 * the two paths across a swap can still get two generations; pki_pair_read() resolves the link once and
 * opens both files in that one generation, retrying if the generation is removed under it. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/errors.h"
#include "basic/fileio.h"
#include "basic/string-util.h"
#include "pki/pki-cert.h"
#include "pki/pki-files.h"
#include "pki/pki-key.h"
#include "shared/openssl-util.h"

#define PAIR_FILE_MAX     (64U * 1024U)
#define GEN_HEX           16 /* 64 random bits per generation name */
#define READ_ATTEMPTS     3  /* a generation can vanish under a reader only if a writer swaps meanwhile */
#define SWEEP_ENTRIES_MAX 4096

bool pki_pair_name_is_valid(const char *name) {
        if (isempty(name) || strlen(name) > PKI_PAIR_NAME_MAX || name[0] == '-')
                return false;
        for (const char *p = name; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-'))
                        return false;
        return true;
}

/* DIR is ours: it holds keys, so it is 0700 whatever it was created with. */
static int open_pair_dir(const char *dir, bool create) {
        if (create) {
                int r = mkdir_p(dir, 0700);
                if (r < 0)
                        return r;
        }
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (create && (st.st_mode & 07777) != 0700 && fchmod(fd, 0700) < 0)
                return -errno;
        return TAKE_FD(fd);
}

static int write_file_at(int dfd, const char *fname, const char *data, size_t len, mode_t mode) {
        _cleanup_close_ int fd =
            openat(dfd, fname, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd < 0)
                return -errno;
        if (fchmod(fd, mode) < 0) /* the umask may have taken bits from 0644 */
                return -errno;
        int r = loop_write(fd, data, len);
        if (r < 0)
                return r;
        return fsync(fd) < 0 ? -errno : 0;
}

static bool is_generation_of(const char *entry, const char *name) {
        size_t n = strlen(name);
        if (entry[0] != '.' || !strneq(entry + 1, name, n) || entry[n + 1] != '.')
                return false;
        const char *hex = entry + n + 2;
        if (strlen(hex) != GEN_HEX)
                return false;
        return strspn(hex, "0123456789abcdef") == GEN_HEX;
}

/* Removes a generation directory: the two files it may hold, then itself. */
static void remove_generation(int dfd, const char *gen, const char *name) {
        _cleanup_close_ int gfd = openat(dfd, gen, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (gfd >= 0)
                for (const char *ext = ".crt"; ext; ext = streq(ext, ".crt") ? ".key" : NULL) {
                        _cleanup_free_ char *f = strjoin(name, ext);
                        if (f)
                                (void)unlinkat(gfd, f, 0);
                }
        (void)unlinkat(dfd, gen, AT_REMOVEDIR);
}

/* Removes every generation of name but keep (NULL: all): the previous one, and any left by a crash. */
static void sweep_generations(int dfd, const char *name, const char *keep) {
        int fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return;
        DIR *d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return;
        }
        rewinddir(d);
        struct dirent *de;
        for (unsigned i = 0; i < SWEEP_ENTRIES_MAX && (de = readdir(d)); i++)
                if (is_generation_of(de->d_name, name) && !(keep && streq(de->d_name, keep)))
                        remove_generation(dfd, de->d_name, name);
        closedir(d);
}

/* Points link at target, atomically: a new symlink renamed over the old one. */
static int symlink_atomic_at(int dfd, const char *target, const char *link) {
        char buf[PATH_MAX];
        ssize_t n = readlinkat(dfd, link, buf, sizeof(buf) - 1);
        if (n >= 0 && (size_t)n == strlen(target) && memcmp(buf, target, (size_t)n) == 0)
                return 0;
        _cleanup_free_ char *tmp = strjoin(".", link, ".new");
        if (!tmp)
                return -ENOMEM;
        (void)unlinkat(dfd, tmp, 0); /* left by a crash */
        if (symlinkat(target, dfd, tmp) < 0)
                return -errno;
        if (renameat(dfd, tmp, dfd, link) < 0) {
                int r = -errno;
                (void)unlinkat(dfd, tmp, 0);
                return r;
        }
        return 0;
}

static int new_generation(int dfd, const char *name, char **ret_gen) {
        for (unsigned attempt = 0; attempt < 5; attempt++) {
                unsigned char rnd[GEN_HEX / 2];
                if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
                        return -EIO;
                char hex[GEN_HEX + 1];
                for (size_t i = 0; i < sizeof(rnd); i++)
                        snprintf(hex + 2 * i, 3, "%02x", rnd[i]);
                _cleanup_free_ char *gen = strjoin(".", name, ".", hex);
                if (!gen)
                        return -ENOMEM;
                if (mkdirat(dfd, gen, 0700) >= 0) {
                        *ret_gen = TAKE_PTR(gen);
                        return 0;
                }
                if (errno != EEXIST)
                        return -errno;
        }
        return -EEXIST;
}

static int fill_generation(int dfd, const char *gen, const char *name, const char *cert_pem, size_t cert_len,
                           const char *key_pem, size_t key_len) {
        _cleanup_free_ char *crt = strjoin(name, ".crt"), *key = strjoin(name, ".key");
        if (!crt || !key)
                return -ENOMEM;
        _cleanup_close_ int gfd = openat(dfd, gen, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (gfd < 0)
                return -errno;
        int r = write_file_at(gfd, key, key_pem, key_len, 0600);
        if (r >= 0)
                r = write_file_at(gfd, crt, cert_pem, cert_len, 0644);
        if (r >= 0 && fsync(gfd) < 0)
                r = -errno;
        return r;
}

/* DIR/NAME.crt and DIR/NAME.key: links into whatever generation is current. */
static int link_pair_paths(int dfd, const char *name, const char *current) {
        for (const char *ext = ".crt"; ext; ext = streq(ext, ".crt") ? ".key" : NULL) {
                _cleanup_free_ char *path = strjoin(name, ext), *target = strjoin(current, "/", name, ext);
                if (!path || !target)
                        return -ENOMEM;
                int r = symlink_atomic_at(dfd, target, path);
                if (r < 0)
                        return r;
        }
        return 0;
}

int pki_pair_write(const char *dir, const char *name, const char *cert_pem, size_t cert_len,
                   const char *key_pem, size_t key_len) {
        _cleanup_free_ char *gen = NULL, *current = NULL;
        if (!pki_pair_name_is_valid(name) || cert_len == 0 || key_len == 0)
                return -EINVAL;
        _cleanup_close_ int dfd = open_pair_dir(dir, true);
        if (dfd < 0)
                return dfd;
        current = strjoin(".", name, ".current");
        if (!current)
                return -ENOMEM;
        int r = new_generation(dfd, name, &gen);
        if (r < 0)
                return r;
        r = fill_generation(dfd, gen, name, cert_pem, cert_len, key_pem, key_len);
        if (r >= 0)
                r = symlink_atomic_at(dfd, gen, current); /* the switch: both files at once */
        if (r < 0) {
                remove_generation(dfd, gen, name);
                return r;
        }
        r = link_pair_paths(dfd, name, current);
        if (r < 0)
                return r;
        if (fsync(dfd) < 0)
                return -errno;
        sweep_generations(dfd, name, gen);
        return 0;
}

static int read_generation(int dfd, const char *gen, const char *name, char **ret_cert, size_t *ret_cert_len,
                           char **ret_key, size_t *ret_key_len) {
        _cleanup_free_ char *crt = strjoin(name, ".crt"), *key = strjoin(name, ".key");
        _cleanup_free_ char *cert_pem = NULL;
        char *key_pem = NULL;
        size_t cert_len = 0, key_len = 0;
        if (!crt || !key)
                return -ENOMEM;
        _cleanup_close_ int gfd = openat(dfd, gen, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (gfd < 0)
                return -errno;
        _cleanup_close_ int cfd = openat(gfd, crt, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (cfd < 0)
                return -errno;
        _cleanup_close_ int kfd = openat(gfd, key, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (kfd < 0)
                return -errno;
        int r = read_full_fd(cfd, PAIR_FILE_MAX, &cert_pem, &cert_len);
        if (r < 0)
                return r;
        if (ret_key) {
                r = read_full_fd_secret(kfd, PAIR_FILE_MAX, &key_pem, &key_len);
                if (r < 0)
                        return r;
                *ret_key = key_pem;
                if (ret_key_len)
                        *ret_key_len = key_len;
        }
        if (ret_cert) {
                *ret_cert = TAKE_PTR(cert_pem);
                if (ret_cert_len)
                        *ret_cert_len = cert_len;
        }
        return 0;
}

int pki_pair_read(const char *dir, const char *name, char **ret_cert_pem, size_t *ret_cert_len,
                  char **ret_key_pem, size_t *ret_key_len) {
        if (!pki_pair_name_is_valid(name))
                return -EINVAL;
        _cleanup_close_ int dfd = open_pair_dir(dir, false);
        if (dfd < 0)
                return dfd;
        _cleanup_free_ char *current = strjoin(".", name, ".current");
        if (!current)
                return -ENOMEM;
        int r = -ENOENT;
        for (unsigned attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
                char gen[PATH_MAX];
                ssize_t n = readlinkat(dfd, current, gen, sizeof(gen) - 1);
                if (n < 0)
                        return errno == EINVAL ? PK_EMALFORMED : -errno; /* EINVAL: not a symlink */
                gen[n] = 0;
                if (!is_generation_of(gen, name))
                        return PK_EMALFORMED;
                r = read_generation(dfd, gen, name, ret_cert_pem, ret_cert_len, ret_key_pem, ret_key_len);
                if (r != -ENOENT)
                        return r;
        }
        return r;
}

int pki_pair_save(const char *dir, const char *name, X509 *cert, EVP_PKEY *key) {
        _cleanup_free_ char *cert_pem = NULL;
        char *key_pem = NULL;
        size_t cert_len = 0, key_len = 0;
        int r = pki_cert_to_pem(cert, &cert_pem, &cert_len);
        if (r < 0)
                return r;
        r = pki_key_to_pem(key, &key_pem, &key_len);
        if (r < 0)
                return r;
        r = pki_pair_write(dir, name, cert_pem, cert_len, key_pem, key_len);
        erase_and_free(key_pem, key_len);
        return r;
}

int pki_pair_load(const char *dir, const char *name, X509 **ret_cert, EVP_PKEY **ret_key) {
        _cleanup_free_ char *cert_pem = NULL;
        char *key_pem = NULL;
        size_t cert_len = 0, key_len = 0;
        _cleanup_(X509_freep) X509 *cert = NULL;
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *key = NULL;
        int r = pki_pair_read(dir, name, &cert_pem, &cert_len, &key_pem, &key_len);
        if (r < 0)
                return r;
        r = pki_cert_from_pem(cert_pem, cert_len, &cert);
        if (r >= 0)
                r = pki_key_from_pem(key_pem, key_len, &key);
        erase_and_free(key_pem, key_len);
        if (r < 0)
                return r;
        if (!pki_cert_matches_key(cert, key))
                return -EKEYREJECTED;
        *ret_cert = TAKE_PTR(cert);
        if (ret_key)
                *ret_key = TAKE_PTR(key);
        return 0;
}

int pki_pair_remove(const char *dir, const char *name) {
        if (!pki_pair_name_is_valid(name))
                return -EINVAL;
        _cleanup_close_ int dfd = open_pair_dir(dir, false);
        if (dfd == -ENOENT)
                return 0;
        if (dfd < 0)
                return dfd;
        _cleanup_free_ char *crt = strjoin(name, ".crt"), *key = strjoin(name, ".key"),
                            *current = strjoin(".", name, ".current");
        if (!crt || !key || !current)
                return -ENOMEM;
        const char *links[] = { crt, key, current };
        for (size_t i = 0; i < ELEMENTSOF(links); i++)
                if (unlinkat(dfd, links[i], 0) < 0 && errno != ENOENT)
                        return -errno;
        sweep_generations(dfd, name, NULL);
        return fsync(dfd) < 0 ? -errno : 0;
}

int pki_leaf_observe(const char *dir, const char *name, X509 *ca, PkiLeafState *ret) {
        _cleanup_(X509_freep) X509 *cert = NULL;
        PkiLeafState s = { .status = PKI_LEAF_UNREADABLE };
        int r = pki_pair_load(dir, name, &cert, NULL);
        if (r == -ENOMEM || r == -EINVAL)
                return r;
        if (r == -ENOENT) {
                *ret = (PkiLeafState){ .status = PKI_LEAF_MISSING };
                return 0;
        }
        if (r >= 0 && pki_cert_validity(cert, &s.not_before, &s.not_after) >= 0 &&
            pki_cert_sans(cert, &s.dns, &s.ips) >= 0 && pki_cert_serial_text(cert, &s.serial) >= 0) {
                (void)pki_cert_subject_cn(cert, &s.subject_cn); /* display only: may be absent */
                (void)pki_cert_issuer_cn(cert, &s.issuer_cn);
                s.status = PKI_LEAF_PRESENT;
                /* the signature only: an expired leaf is "expiring", not "other CA" */
                s.signed_by_ca = ca && pki_cert_verify(cert, ca, 0, NULL) >= 0;
        }
        *ret = s;
        return 0;
}
