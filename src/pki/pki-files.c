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
#include "basic/generation.h"
#include "basic/string-util.h"
#include "pki/pki-cert.h"
#include "pki/pki-files.h"
#include "pki/pki-key.h"
#include "shared/crypto.h"
#include "shared/openssl-util.h"

#define PAIR_FILE_MAX (64U * 1024U)
#define READ_ATTEMPTS 3 /* a generation can vanish under a reader only if a writer swaps meanwhile */

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

/* ".NAME." and ".NAME.new-": the prefixes of the pair's generations (basic/generation.h) and of one being
 * named (no pair name has a dot, so no pair's names are another's). */
static int pair_prefixes(const char *name, char prefix[static PKI_PAIR_NAME_MAX + 3],
                         char fresh[static PKI_PAIR_NAME_MAX + 7]) {
        snprintf(prefix, PKI_PAIR_NAME_MAX + 3, ".%s.", name);
        snprintf(fresh, PKI_PAIR_NAME_MAX + 7, ".%s.new-", name);
        return 0;
}

static bool is_generation_of(const char *entry, const char *name) {
        char prefix[PKI_PAIR_NAME_MAX + 3], fresh[PKI_PAIR_NAME_MAX + 7];
        pair_prefixes(name, prefix, fresh);
        return generation_name_is_valid(entry, prefix);
}

/* Removes what replaced was current before: it and the older generations no writer holds. replaced NULL
 * (pki_pair_remove, after the links): every generation. */
static int sweep_generations(int dfd, const char *name, const char *replaced, const char *own) {
        char prefix[PKI_PAIR_NAME_MAX + 3], fresh[PKI_PAIR_NAME_MAX + 7], all[GENERATION_NAME_MAX];
        _cleanup_free_ char *current = strjoin(".", name, ".current");
        if (!current)
                return -ENOMEM;
        pair_prefixes(name, prefix, fresh);
        snprintf(all, sizeof(all), "%sffffffffffffffff", prefix);
        return generation_sweep(dfd, current, prefix, fresh, own, replaced ?: all);
}

static int fill_generation(int gfd, const char *name, const char *cert_pem, size_t cert_len,
                           const char *key_pem, size_t key_len) {
        _cleanup_free_ char *crt = strjoin(name, ".crt"), *key = strjoin(name, ".key");
        if (!crt || !key)
                return -ENOMEM;
        int r = write_file_at(gfd, key, key_pem, key_len, 0600);
        if (r >= 0)
                r = write_file_at(gfd, crt, cert_pem, cert_len, 0644);
        if (r >= 0 && fsync(gfd) < 0)
                r = -errno;
        return r;
}

/* Whether DIR/NAME.crt and DIR/NAME.key, what the components read, are the links into the current
 * generation: -ENOENT when one is missing or points elsewhere. The pair is then missing as far as its
 * consumers go, and the pass issues it again (which writes the links), instead of observing the generation
 * alone and keeping a pair nobody can read (the three-master demo found it). */
static int public_links_ok(int dfd, const char *name) {
        for (const char *ext = ".crt"; ext; ext = streq(ext, ".crt") ? ".key" : NULL) {
                char path[PKI_PAIR_NAME_MAX + 8], want[2 * PKI_PAIR_NAME_MAX + 32], buf[sizeof(want)];
                snprintf(path, sizeof(path), "%s%s", name, ext);
                snprintf(want, sizeof(want), ".%s.current/%s%s", name, name, ext);
                ssize_t n = readlinkat(dfd, path, buf, sizeof(buf) - 1);
                if (n < 0)
                        return errno == EINVAL ? PK_EMALFORMED : -errno; /* EINVAL: not a symlink */
                if ((size_t)n != strlen(want) || memcmp(buf, want, (size_t)n) != 0)
                        return -ENOENT;
        }
        return 0;
}

/* DIR/NAME.crt and DIR/NAME.key: links into whatever generation is current. */
static int link_pair_paths(int dfd, const char *name, const char *current) {
        for (const char *ext = ".crt"; ext; ext = streq(ext, ".crt") ? ".key" : NULL) {
                _cleanup_free_ char *path = strjoin(name, ext), *target = strjoin(current, "/", name, ext);
                if (!path || !target)
                        return -ENOMEM;
                int r = symlink_replace_at(dfd, target, path, NULL);
                if (r < 0)
                        return r;
        }
        return 0;
}

int pki_pair_write(const char *dir, const char *name, const char *cert_pem, size_t cert_len,
                   const char *key_pem, size_t key_len) {
        _cleanup_free_ char *current = NULL, *replaced = NULL;
        char gen[GENERATION_NAME_MAX], prefix[PKI_PAIR_NAME_MAX + 3], fresh[PKI_PAIR_NAME_MAX + 7];
        if (!pki_pair_name_is_valid(name) || cert_len == 0 || key_len == 0)
                return -EINVAL;
        _cleanup_close_ int dfd = open_pair_dir(dir, true);
        if (dfd < 0)
                return dfd;
        current = strjoin(".", name, ".current");
        if (!current)
                return -ENOMEM;
        pair_prefixes(name, prefix, fresh);
        /* held (flock) by this writer until .NAME.current names it: no sweep removes it meanwhile */
        _cleanup_close_ int gfd = generation_create(dfd, prefix, fresh, 0700, gen);
        if (gfd < 0)
                return gfd;
        int r = fill_generation(gfd, name, cert_pem, cert_len, key_pem, key_len);
        if (r >= 0)
                r = symlink_replace_at(dfd, gen, current, &replaced); /* the switch: both files at once */
        if (r < 0) {
                (void)rm_rf_at(dfd, gen);
                return r;
        }
        gfd = safe_close(gfd);
        r = link_pair_paths(dfd, name, current);
        if (r < 0)
                return r;
        if (fsync(dfd) < 0)
                return -errno;
        /* the new pair is current: a failed sweep leaves garbage, which the next write's removes */
        if (replaced && is_generation_of(replaced, name))
                (void)sweep_generations(dfd, name, replaced, gen);
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
        int r = public_links_ok(dfd, name);
        if (r < 0)
                return r;
        r = -ENOENT;
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

/* Decodes a pair read by pki_pair_read(): the certificate, the key, and the check that they match. */
static int pair_decode(const char *cert_pem, size_t cert_len, const char *key_pem, size_t key_len,
                       X509 **ret_cert, EVP_PKEY **ret_key) {
        _cleanup_(X509_freep) X509 *cert = NULL;
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *key = NULL;
        int r = pki_cert_from_pem(cert_pem, cert_len, &cert);
        if (r >= 0)
                r = pki_key_from_pem(key_pem, key_len, &key);
        if (r < 0)
                return r;
        if (!pki_cert_matches_key(cert, key))
                return -EKEYREJECTED;
        *ret_cert = TAKE_PTR(cert);
        if (ret_key)
                *ret_key = TAKE_PTR(key);
        return 0;
}

int pki_pair_load(const char *dir, const char *name, X509 **ret_cert, EVP_PKEY **ret_key) {
        _cleanup_free_ char *cert_pem = NULL;
        char *key_pem = NULL;
        size_t cert_len = 0, key_len = 0;
        int r = pki_pair_read(dir, name, &cert_pem, &cert_len, &key_pem, &key_len);
        if (r < 0)
                return r;
        r = pair_decode(cert_pem, cert_len, key_pem, key_len, ret_cert, ret_key);
        erase_and_free(key_pem, key_len);
        return r;
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
        int r = sweep_generations(dfd, name, NULL, NULL);
        if (r < 0)
                return r;
        return fsync(dfd) < 0 ? -errno : 0;
}

/* ---- the pair cache: decoded pairs by identity (pki-files.h) ---- */

typedef struct FileIdentity {
        dev_t dev;
        ino_t ino;
        off_t size;
        struct timespec mtim, ctim;
} FileIdentity;

#define PAIR_DIGEST_LEN 32

typedef struct PairIdentity {
        char gen[GENERATION_NAME_MAX]; /* ".NAME.<hex>.<hex>" */
        FileIdentity crt, key;
} PairIdentity;

typedef struct PairCacheEntry {
        char *dir;
        char name[PKI_PAIR_NAME_MAX + 1];
        PairIdentity id;
        bool id_settled; /* id was taken from files older than PAIR_SETTLE_USEC: it alone identifies them */
        uint8_t digest[PAIR_DIGEST_LEN]; /* SHA-256 of the certificate's bytes, then the key's */
        int load_r; /* pair_decode()'s result: 0 (cert set), PK_EMALFORMED, -EKEYREJECTED */
        X509 *cert;
} PairCacheEntry;

struct PkiPairCache {
        PairCacheEntry *entries;
        size_t n;
        unsigned hits, misses;
};

#define PAIR_CACHE_MAX 256 /* more pairs than a master has; past it, pairs are decoded every time */

int pki_pair_cache_new(PkiPairCache **ret) {
        PkiPairCache *c = new0(PkiPairCache, 1);
        if (!c)
                return -ENOMEM;
        *ret = c;
        return 0;
}

PkiPairCache *pki_pair_cache_free(PkiPairCache *c) {
        if (!c)
                return NULL;
        for (size_t i = 0; i < c->n; i++) {
                free(c->entries[i].dir);
                X509_free(c->entries[i].cert);
        }
        free(c->entries);
        free(c);
        return NULL;
}

void pki_pair_cache_stats(const PkiPairCache *c, unsigned *ret_hits, unsigned *ret_misses) {
        *ret_hits = c ? c->hits : 0;
        *ret_misses = c ? c->misses : 0;
}

static int file_identity_at(int gfd, const char *fname, FileIdentity *ret) {
        struct stat st;
        if (fstatat(gfd, fname, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return PK_EMALFORMED;
        *ret = (FileIdentity){ .dev = st.st_dev,
                               .ino = st.st_ino,
                               .size = st.st_size,
                               .mtim = st.st_mtim,
                               .ctim = st.st_ctim };
        return 0;
}

/* The current generation and its two files' identities; < 0 when any is not there (not cached then). */
static int pair_identity(const char *dir, const char *name, PairIdentity *ret) {
        _cleanup_close_ int dfd = open_pair_dir(dir, false);
        if (dfd < 0)
                return dfd;
        char current[PKI_PAIR_NAME_MAX + 16], crt[PKI_PAIR_NAME_MAX + 8], key[PKI_PAIR_NAME_MAX + 8];
        snprintf(current, sizeof(current), ".%s.current", name);
        snprintf(crt, sizeof(crt), "%s.crt", name);
        snprintf(key, sizeof(key), "%s.key", name);
        PairIdentity id = {};
        ssize_t n = readlinkat(dfd, current, id.gen, sizeof(id.gen) - 1);
        if (n < 0)
                return -errno;
        if ((size_t)n >= sizeof(id.gen) - 1)
                return PK_EMALFORMED;
        id.gen[n] = 0;
        if (!is_generation_of(id.gen, name))
                return PK_EMALFORMED;
        _cleanup_close_ int gfd = openat(dfd, id.gen, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (gfd < 0)
                return -errno;
        int r = file_identity_at(gfd, crt, &id.crt);
        if (r >= 0)
                r = file_identity_at(gfd, key, &id.key);
        if (r >= 0)
                r = public_links_ok(dfd, name);
        if (r < 0)
                return r;
        *ret = id;
        return 0;
}

static bool file_identity_eq(const FileIdentity *a, const FileIdentity *b) {
        return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
               a->mtim.tv_sec == b->mtim.tv_sec && a->mtim.tv_nsec == b->mtim.tv_nsec &&
               a->ctim.tv_sec == b->ctim.tv_sec && a->ctim.tv_nsec == b->ctim.tv_nsec;
}

static bool pair_identity_eq(const PairIdentity *a, const PairIdentity *b) {
        return streq(a->gen, b->gen) && file_identity_eq(&a->crt, &b->crt) &&
               file_identity_eq(&a->key, &b->key);
}

static PairCacheEntry *pair_cache_find(PkiPairCache *c, const char *dir, const char *name) {
        for (size_t i = 0; c && i < c->n; i++)
                if (streq(c->entries[i].dir, dir) && streq(c->entries[i].name, name))
                        return &c->entries[i];
        return NULL;
}

/* Keeps what was decoded from the pair's bytes (their digest) at identity id; nothing when the cache is full
 * (not an error). */
static int pair_cache_put(PkiPairCache *c, const char *dir, const char *name, const PairIdentity *id,
                          bool id_settled, const uint8_t digest[PAIR_DIGEST_LEN], int load_r, X509 *cert) {
        PairCacheEntry *e = pair_cache_find(c, dir, name);
        if (!e) {
                if (c->n >= PAIR_CACHE_MAX)
                        return 0;
                _cleanup_free_ char *d = strdup(dir);
                if (!d)
                        return -ENOMEM;
                PairCacheEntry *n = realloc(c->entries, (c->n + 1) * sizeof(*n));
                if (!n)
                        return -ENOMEM;
                c->entries = n;
                e = &c->entries[c->n++];
                *e = (PairCacheEntry){ .dir = TAKE_PTR(d) };
                snprintf(e->name, sizeof(e->name), "%s", name);
        }
        if (cert && X509_up_ref(cert) != 1)
                return -ENOMEM;
        X509_free(e->cert);
        e->cert = cert;
        e->id = *id;
        e->id_settled = id_settled;
        memcpy(e->digest, digest, PAIR_DIGEST_LEN);
        e->load_r = load_r;
        return 0;
}

/* File times come from a coarse clock (a few ms): a same-size rewrite in place within one tick keeps
 * every field of the identity. So the identity alone stands for the bytes only when the files are older
 * than PAIR_SETTLE_USEC (git's "racily clean" index entries, the same cure). A pair changed more recently
 * is read and compared by the digest of its bytes: still no decoding, and never a stale certificate. */
#define PAIR_SETTLE_USEC (2 * USEC_PER_SEC)

static usec_t timespec_usec(const struct timespec *ts) {
        return ts->tv_sec < 0 ? 0 : (usec_t)ts->tv_sec * USEC_PER_SEC + (usec_t)ts->tv_nsec / NSEC_PER_USEC;
}

static bool identity_settled(const PairIdentity *id) {
        usec_t now_rt = now(CLOCK_REALTIME),
               settled = now_rt > PAIR_SETTLE_USEC ? now_rt - PAIR_SETTLE_USEC : 0;
        return timespec_usec(&id->crt.ctim) < settled && timespec_usec(&id->key.ctim) < settled &&
               timespec_usec(&id->crt.mtim) < settled && timespec_usec(&id->key.mtim) < settled;
}

static int pair_digest(const char *cert_pem, size_t cert_len, const char *key_pem, size_t key_len,
                       uint8_t ret[PAIR_DIGEST_LEN]) {
        _cleanup_(crypto_sha256_freep) CryptoSha256 *h = NULL;
        int r = crypto_sha256_new(&h);
        if (r >= 0)
                r = crypto_sha256_update(h, cert_pem, cert_len);
        if (r >= 0)
                r = crypto_sha256_update(h, key_pem, key_len);
        if (r >= 0)
                r = crypto_sha256_final(h, ret);
        return r;
}

/* The cached result for bytes of this digest, else the bytes decoded (and kept). */
static int pair_load_bytes(PkiPairCache *c, const char *dir, const char *name, const PairIdentity *before,
                           X509 **ret_cert) {
        _cleanup_free_ char *cert_pem = NULL;
        char *key_pem = NULL;
        size_t cert_len = 0, key_len = 0;
        uint8_t digest[PAIR_DIGEST_LEN];
        _cleanup_(X509_freep) X509 *cert = NULL;
        int r = pki_pair_read(dir, name, &cert_pem, &cert_len, &key_pem, &key_len);
        if (r < 0)
                return r;
        r = pair_digest(cert_pem, cert_len, key_pem, key_len, digest);
        PairCacheEntry *e = r >= 0 ? pair_cache_find(c, dir, name) : NULL;
        bool hit = e && memcmp(e->digest, digest, PAIR_DIGEST_LEN) == 0;
        if (r >= 0 && !hit) {
                c->misses++;
                r = pair_decode(cert_pem, cert_len, key_pem, key_len, &cert, NULL);
        }
        erase_and_free(key_pem, key_len);
        if (hit) {
                c->hits++;
                r = e->load_r;
                if (r >= 0 && X509_up_ref(e->cert) != 1)
                        return -ENOMEM;
                cert = r >= 0 ? e->cert : NULL;
        }
        /* the identity stands for these bytes only if it did not change while they were read */
        PairIdentity after;
        bool settled = identity_settled(before) && pair_identity(dir, name, &after) >= 0 &&
                       pair_identity_eq(before, &after);
        if (r >= 0 || r == PK_EMALFORMED ||
            r == -EKEYREJECTED) { /* decoded now, or found: kept at this id */
                int k = pair_cache_put(c, dir, name, before, settled, digest, r >= 0 ? 0 : r, cert);
                if (k < 0)
                        return k;
        }
        if (r >= 0)
                *ret_cert = TAKE_PTR(cert);
        return r;
}

/* pki_pair_load() of the certificate, through the cache: what was decoded at this identity (when it is a
 * settled one), else at these bytes, else decoded now. */
static int pair_load_cert(PkiPairCache *c, const char *dir, const char *name, X509 **ret_cert) {
        PairIdentity before;
        if (!c || pair_identity(dir, name, &before) < 0)
                return pki_pair_load(dir, name, ret_cert, NULL);
        PairCacheEntry *e = pair_cache_find(c, dir, name);
        if (e && e->id_settled && pair_identity_eq(&e->id, &before)) {
                c->hits++;
                if (e->load_r < 0)
                        return e->load_r;
                if (X509_up_ref(e->cert) != 1)
                        return -ENOMEM;
                *ret_cert = e->cert;
                return 0;
        }
        return pair_load_bytes(c, dir, name, &before, ret_cert);
}

int pki_leaf_observe(const char *dir, const char *name, X509 *ca, PkiLeafState *ret) {
        return pki_leaf_observe_cached(NULL, dir, name, ca, ret);
}

int pki_leaf_observe_cached(PkiPairCache *c, const char *dir, const char *name, X509 *ca,
                            PkiLeafState *ret) {
        _cleanup_(X509_freep) X509 *cert = NULL;
        PkiLeafState s = { .status = PKI_LEAF_UNREADABLE };
        if (!pki_pair_name_is_valid(name))
                return -EINVAL;
        int r = pair_load_cert(c, dir, name, &cert);
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
